"""The path-specific stacks of one cluster, generated from the plan (see :mod:`xpfilt.compiler`).

All columns of the cluster share the top-of-stack pointer (the front end's ``level``), so they are
packed into one memory row: the row of the current level lives in the ``top`` register, the rows
below it in a LUT-RAM (one write port, one asynchronous read port) addressed by ``level - 1``.

* push to level ``L``: ``mem[L-1] <= top``; ``top <= new`` (the node equations of the plan).
* pop from level ``L``: ``top <= mem[L-1]``.
* ``doc_end``: ``top <= 0`` (the next document starts at level 0).
* ``matches`` shows the per-query match flags including this cycle's push; ``clear`` (the
  readout's capture) resets them.
"""


from amaranth.hdl import Cat, Const, Module, Mux, Signal
from amaranth.lib import wiring
from amaranth.lib.memory import Memory
from amaranth.lib.wiring import In, Out

from xpfilt.compiler import Cluster

from .frontend import EventLayout, tag_width_for

__all__ = ["StackBank", "packed_stack"]


class StackBank(wiring.Component):
    """The stacks and match flags of one cluster.

    Ports: ``events`` (the front end's events), ``clear`` (reset the match flags this cycle),
    ``matches`` (one flag per query of the cluster, in the plan's order, including this cycle).
    """

    def __init__(self, cluster: Cluster, *, n_tags: int, max_depth: int):
        if not cluster.queries:
            raise ValueError(f"cluster must have at least one query, not {len(cluster.queries)}")
        self.cluster = cluster
        self.max_depth = max_depth
        tag_width = tag_width_for(n_tags)
        super().__init__({
            "events": In(EventLayout(tag_width=tag_width, max_depth=max_depth)),
            "clear": In(1),
            "matches": Out(len(cluster.queries)),
        })

    def elaborate(self, platform):
        m = Module()
        cluster, ev = self.cluster, self.events
        n_columns = len(cluster.columns)
        width = max(1, n_columns)

        top = Signal(width)
        new = Signal(width)
        flags = Signal(len(cluster.queries))
        packed_stack(m, ev, top, new, self.max_depth)

        # decoded tag of the new element and of its parent, one wire per tag the cluster uses
        used = {n.tag for n in cluster.nodes} | {n.source.tag for n in cluster.nodes}
        is_tag = {t: Signal(name=f"is_tag_{t}") for t in sorted(used) if t}
        is_parent = {t: Signal(name=f"is_parent_{t}") for t in sorted(used) if t}
        for t, s in is_tag.items():
            m.d.comb += s.eq(ev.tag == t)
        for t, s in is_parent.items():
            m.d.comb += s.eq(ev.parent == t)
        level_is_1 = ev.level == 1
        level_is_2 = ev.level == 2
        has_parent = ev.level >= 2

        def source(src):
            if src.kind == "level1":
                return level_is_1
            if src.kind == "any":
                return Const(1)
            if src.kind == "column":
                bit = top[src.column]
                return bit & is_parent[src.tag] if src.tag else bit
            cond = is_parent[src.tag] if src.tag else has_parent
            return cond & level_is_2 if src.level2 else cond

        needed = {q.node for q in cluster.queries} | {
            k for k, n in enumerate(cluster.nodes) if n.column >= 0}
        fires = {}
        for k in sorted(needed):
            node = cluster.nodes[k]
            fire = Signal(name=f"fires_{k}")
            accept = is_tag[node.tag] if node.tag else Const(1)
            m.d.comb += fire.eq(accept & source(node.source))
            fires[k] = fire

        for c, column in enumerate(cluster.columns):
            terms = [fires[k] for k in column.members]
            if column.self_loop:
                terms.append(top[c])
            m.d.comb += new[c].eq(Cat(*terms).any())

        hits = Cat(*(fires[q.node] for q in cluster.queries))
        m.d.comb += self.matches.eq(flags | Mux(ev.push, hits, 0))

        with m.If(self.clear):
            m.d.sync += flags.eq(0)
        with m.Elif(ev.push):
            m.d.sync += flags.eq(self.matches)
        return m



def packed_stack(m: Module, ev, top: Signal, new: Signal, max_depth: int) -> None:
    """The shared stack memory of a cluster: ``top`` holds the row of the current level, a
    LUT-RAM the rows below it. On ``ev.push`` the row ``new`` becomes the top (the old top is
    saved at ``level - 1``), on ``ev.pop`` the saved row comes back, on ``ev.doc_end`` the top
    is cleared."""
    mem = Memory(shape=len(top), depth=max_depth, init=[])
    m.submodules.stack = mem
    write = mem.write_port()
    read = mem.read_port(domain="comb")
    m.d.comb += [
        write.addr.eq(ev.level - 1),
        write.data.eq(top),
        write.en.eq(ev.push),
        read.addr.eq(ev.level - 1),
    ]
    with m.If(ev.doc_end):
        m.d.sync += top.eq(0)
    with m.Elif(ev.push):
        m.d.sync += top.eq(new)
    with m.Elif(ev.pop):
        m.d.sync += top.eq(read.data)
