"""The path-specific stacks of one cluster, generated from the plan (see :mod:`xpfilt.compiler.custom`).

All columns of the cluster share the top-of-stack pointer (the front end's ``level``), so they are
packed into one memory row. The custom engine's rows live in a LUT-RAM addressed by level
(:func:`level_stack`: one write port, one asynchronous read port, nothing else per column):

* push to level ``L``: the node equations read the parent's row ``mem[L-1]`` and write the new
  row to ``mem[L]`` (a push to the deepest level, ``max_depth``, stores nothing: no push reads it);
* pop: nothing (the level moves; the rows below it are unchanged);
* row 0 (level 0, outside the root element) is all zeros and never written, so a document starts
  empty whatever the previous one left, and ``doc_end`` needs no clearing.
* ``matches`` shows the per-query match flags of the pushes before this cycle (a register);
  ``clear`` (the readout's capture) resets them.

Twigs (text() predicates, nested paths: ``QueryPlan.chain``, see :mod:`xpfilt.compiler.custom`). A
text() predicate is known when its element closes (the pop carries the element's text condition
bits, ``events.conds``), a nested path when what it selects has closed below the element. So a
query whose step ``j`` (the anchor) is the first with such a predicate is checked on pops,
bottom up, with *pending* bits:

* a cluster with twigs keeps ``max_depth + 1`` rows and, on a pop at level ``L``, reads row
  ``L`` (the closing element's; a push still reads ``L - 1``);
* per twig entry ``e`` other than the anchor a pending bit ``N_e`` per open element: "below this
  element, entry ``e`` held" (a child of it, or any descendant when ``e`` is reached by ``//``);
  equal entries of different queries share one (:class:`xpfilt.compiler.custom.TwigChecks`).
  The current element's bits are a register, its ancestors' are saved by level in a small
  LUT-RAM on each push (like :func:`packed_stack`); a push starts the new element with none;
* on the pop of element ``Y``: entry ``e`` *holds* at ``Y`` when ``Y``'s row has ``e``'s column
  (the anchor: ``Y`` fired step ``j`` through the ordinary columns; the others: ``Y`` passes the
  step's name test and attribute guard; column -1: any element) and its condition holds on the
  pop's text bits, ``Y``'s row and ``Y``'s pending bits. The anchor holding is a match (the
  query's flag is set on the pop); another entry holding sets the parent's ``N_e``; and if ``e``
  is reached by ``//``, ``N_e(Y)`` passes to the parent too (an ancestor of ``Y`` is an ancestor
  of what ``Y`` contains). The parent's bits = its saved bits OR these.

Each distinct twig node below an anchor costs one pending bit (a flip-flop and a LUT-RAM bit) and
its condition's few LUTs; its column is shared with every entry of the cluster of the same name.
The bottom-up check anchors every entry at exactly one element, so nested candidates
(``//b[text()=15]/c`` in ``<b>15<b>7<c/></b></b>``; ``//a[b]/c`` in ``<a><a><c/></a><b/></a>``)
are told apart; a document end that shares its cycle with the root's pop still checks the root.

Boolean combinations of paths: a cluster's flags are its queries' then its internal paths'
(``Cluster.matchers``); a combination's entry of ``matches`` is its expression over its paths'
flags (a few LUTs between the flag registers and the readout's capture), so ``not`` sees the
whole document's flags.

The programmable engine uses :func:`level_stack` too; :func:`packed_stack` (the current row in a
register, the rows below it in the LUT-RAM) is kept for reference.
"""

from amaranth.hdl import Cat, Const, Module, Mux, Signal
from amaranth.lib import data, wiring
from amaranth.lib.memory import Memory
from amaranth.lib.wiring import In, Out

from xpfilt.compiler.custom import Cluster, SourceKind, TwigChecks
from xpfilt.hdl.frontend import ErrorFlags
from xpfilt.hwspec.conditions import Condition, Pending, Row

__all__ = [
    "StackBank",
    "DecodedEventLayout",
    "TreeEventLayout",
    "tag_digit_base",
    "widen_events",
    "decode_events",
    "packed_stack",
    "level_stack",
    "pending_stack",
    "match_flags",
    "boolean",
    "tag_pairs",
    "RowAheadLayout",
    "row_ahead",
]


class DecodedEventLayout(data.StructLayout):
    """The front end's events with the tag and parent ids decoded one-hot (bit ``t - 1`` for
    tag id ``t``; nothing set for an unknown name). Decoded once for all clusters, so a cluster
    only registers the bits it uses and compares nothing."""

    def __init__(self, *, n_tags: int, max_depth: int, n_conds: int = 0):
        fields = {
            "push": 1,
            "pop": 1,
            "tag": max(1, n_tags),
            "parent": max(1, n_tags),
            "level": range(max_depth + 1),
            "doc_end": 1,
            "errors": ErrorFlags,
            # decoded from ``level``: the stack memory's row (level - 1), level 1, level 2, >= 2
            "addr": range(max(2, max_depth)),
            # the row a twig cluster reads: the closing element's on a pop, else the parent's
            "read_addr": range(max_depth + 1),
            "level1": 1,
            "level2": 1,
            "nested": 1,
        }
        if n_conds:  # the push's attribute condition bits (see xpfilt.hdl.frontend)
            fields["conds"] = n_conds
        super().__init__(fields)


def tag_digit_base(n_tags: int) -> int:
    """The base ``B`` of the two one-hot digits that carry a tag id ``t`` (0 to ``n_tags``)
    down the event distribution tree: ``t = hi * B + lo``, the smallest power of two with
    ``B * B > n_tags`` (both digits at most ~2 sqrt(n_tags) bits wide), so that each digit bit
    compares a bit field of the id: one LUT4 up to 255 tags. (With the smallest ``B``, an
    ORed range compare and a residue, events.tag / parent -> the tree's first registers were
    on the routed critical paths of 1,024 queries with 2 predicates each, 6.8-7.1 ns, router1,
    clk on G2, RTL af9a0464f50f.)"""
    base = 1
    while base * base < n_tags + 1:
        base *= 2
    return base


class TreeEventLayout(data.StructLayout):
    """:class:`DecodedEventLayout` as the event distribution tree carries it: the tag and the
    parent id each as two one-hot digits (``tag_hi`` bit ``t // B``, ``tag_lo`` bit ``t % B``,
    ``B`` = :func:`tag_digit_base`; an unknown name, id 0, sets bit 0 of both, which no tag
    decodes to). 123 tags: 24 bits per id instead of 123. A cluster decodes the tags it uses
    (:func:`widen_events`: one 2-input AND each, before its own event register)."""

    def __init__(self, *, n_tags: int, max_depth: int, n_conds: int = 0):
        base = tag_digit_base(n_tags)
        high = n_tags // base + 1
        fields = {}
        for name, field in DecodedEventLayout(n_tags=n_tags, max_depth=max_depth, n_conds=n_conds):
            if name in ("tag", "parent"):
                fields[f"{name}_hi"], fields[f"{name}_lo"] = high, base
            else:
                fields[name] = field.shape
        super().__init__(fields)


def _decode_level(m: Module, out, events, n_conds: int) -> None:
    """The fields of ``out`` (a :class:`DecodedEventLayout` or :class:`TreeEventLayout`) other
    than the tag and parent ids, from ``events`` (an ``EventLayout``)."""
    if n_conds:
        m.d.comb += out.conds.eq(events.conds)
    m.d.comb += [
        out.addr.eq(events.level - 1),
        out.level1.eq(events.level == 1),
        out.read_addr.eq(Mux(events.pop, events.level, events.level - 1)),
        out.level2.eq(events.level == 2),
        out.nested.eq(events.level >= 2),
        out.push.eq(events.push),
        out.pop.eq(events.pop),
        out.level.eq(events.level),
        out.doc_end.eq(events.doc_end),
        out.errors.eq(events.errors),
    ]


def decode_events(
    m: Module, events, n_tags: int, max_depth: int, n_conds: int = 0, *, tree: bool = False
):
    """A signal carrying ``events`` (an ``EventLayout``) with one-hot tag and parent and the
    level decoded (so that the clusters take registers straight into their logic); with
    ``tree``, a :class:`TreeEventLayout` (the ids as two one-hot digits each)."""
    if tree:
        out = Signal(TreeEventLayout(n_tags=n_tags, max_depth=max_depth, n_conds=n_conds))
        bits = tag_digit_base(n_tags).bit_length() - 1
        for name in ("tag", "parent"):
            value = getattr(events, name)
            hi, lo = getattr(out, f"{name}_hi"), getattr(out, f"{name}_lo")
            m.d.comb += [
                hi.eq(Cat(*(value[bits:] == h for h in range(len(hi))))),
                lo.eq(Cat(*(value[:bits] == d for d in range(len(lo))))),
            ]
    else:
        out = Signal(DecodedEventLayout(n_tags=n_tags, max_depth=max_depth, n_conds=n_conds))
        m.d.comb += [
            out.tag.eq(Cat(*(events.tag == t for t in range(1, n_tags + 1)))),
            out.parent.eq(Cat(*(events.parent == t for t in range(1, n_tags + 1)))),
        ]
    _decode_level(m, out, events, n_conds)
    return out


def widen_events(m: Module, narrow, n_tags: int, max_depth: int, n_conds: int = 0):
    """``narrow`` (a :class:`TreeEventLayout`) as a :class:`DecodedEventLayout` (combinational:
    tag ``t``'s bit is ``hi[t // B] & lo[t % B]``)."""
    out = Signal(DecodedEventLayout(n_tags=n_tags, max_depth=max_depth, n_conds=n_conds))
    base = tag_digit_base(n_tags)
    for name, field in out.shape():
        if name in ("tag", "parent"):
            hi, lo = getattr(narrow, f"{name}_hi"), getattr(narrow, f"{name}_lo")
            m.d.comb += getattr(out, name).eq(
                Cat(*(hi[t // base] & lo[t % base] for t in range(1, n_tags + 1)))
            )
        else:
            m.d.comb += getattr(out, name).eq(getattr(narrow, name))
    return out


def _needed_nodes(cluster: Cluster) -> set[int]:
    """The nodes whose firing a cluster computes: its queries' last nodes and column nodes."""
    return {q.node for q in cluster.matchers if not q.chain and q.combine is None} | {
        k for k, n in enumerate(cluster.nodes) if n.column >= 0
    }


def tag_pairs(cluster: Cluster) -> list[tuple[int, int, tuple]]:
    """The (tag, parent tag or 0, guard) of the cluster's named nodes that fire from a column
    under a named parent or have a guard (:func:`_pair_key`). A cluster registers each one's
    AND (tag, parent, the guard over the condition bits; see ``ClusterCore``), so such a
    node's term is 2 inputs (column bit or source, pair) instead of 3 or more: a column shared
    by 8 nodes is an OR of 16 inputs, not 24 (at 1,024 queries its 5 LUTs were the ECP5
    critical path); with the guard in the AND, a cluster's events -> a stack's write data was
    on the routed critical paths of 1,024 queries with 2 predicates each (7.02-7.10 ns,
    router1, clk on G2, RTL af9a0464f50f)."""
    return sorted(
        {_pair_key(cluster.nodes[k]) for k in _needed_nodes(cluster)} - {None},
        key=lambda p: (p[0], p[1], repr(p[2].to_tuple())),
    )


def _pair_key(node):
    """The :func:`tag_pairs` entry whose register a node's term reads, or None: (tag, parent
    tag, guard) for a named node from a column under a named parent, (tag, 0, guard) for
    another guarded named node (its term: that register AND its source)."""
    column = node.source.kind is SourceKind.COLUMN
    if node.tag and (column and node.source.tag or not node.guard.always):
        return node.tag, node.source.tag if column and node.source.tag else 0, node.guard
    return None


class StackBank(wiring.Component):
    """The stacks and match flags of one cluster.

    Ports: ``events`` (the front end's events with one-hot tags, see
    :class:`DecodedEventLayout`), ``clear`` (reset the match flags this cycle),
    ``matches`` (one flag per query of the cluster, in the plan's order: a register, or for a
    combination of paths its expression over registers). With ``paired``: ``pairs``, bit ``i``
    = tag AND parent AND guard of :func:`tag_pairs` entry ``i`` on the cycle of ``events``
    (registered by the caller alongside the events). With ``early``: ``next_events``, the
    events of the next cycle (the input of the caller's ``events`` register): the stack row
    is read from their address a cycle early, into the memory's output register, so that the
    row the node equations read comes from a register, not through the LUT-RAM's read (see
    :func:`level_stack`).
    """

    def __init__(
        self,
        cluster: Cluster,
        *,
        n_tags: int,
        max_depth: int,
        n_conds: int = 0,
        paired: bool = False,
        early: bool = False,
    ):
        if not cluster.queries:
            raise ValueError(f"cluster must have at least one query, not {len(cluster.queries)}")
        self.cluster = cluster
        self.max_depth = max_depth
        self.tag_pairs = tag_pairs(cluster) if paired else []
        ports = {
            "events": In(DecodedEventLayout(n_tags=n_tags, max_depth=max_depth, n_conds=n_conds)),
            "clear": In(1),
            "matches": Out(len(cluster.queries)),
        }
        if self.tag_pairs:
            ports["pairs"] = In(len(self.tag_pairs))
        self.early = early
        if early:
            ports["next_events"] = ports["events"]
        super().__init__(ports)

    def elaborate(self, platform):
        m = Module()
        cluster, ev = self.cluster, self.events
        n_columns = len(cluster.columns)
        width = max(1, n_columns)

        matchers = cluster.matchers  # the queries, then the combinations' paths
        chains = any(q.chain for q in matchers)
        top = Signal(width)  # the parent's row on a push; with twigs, the closing
        new = Signal(width)  # element's row on a pop
        early = self.next_events if self.early else None
        if chains:
            level_stack(
                m,
                ev,
                top,
                new,
                self.max_depth,
                rows=self.max_depth + 1,
                read_addr=ev.read_addr,
                early_addr=early.read_addr if self.early else None,
                transparent=self.early,
            )
        else:
            level_stack(
                m, ev, top, new, self.max_depth, early_addr=early.addr if self.early else None
            )

        # the tag of the new element and of its parent arrive one-hot: tag id t is bit t - 1
        is_tag = {t: ev.tag[t - 1] for t in {n.tag for n in cluster.nodes} if t}
        is_parent = {t: ev.parent[t - 1] for t in {n.source.tag for n in cluster.nodes} if t}
        level_is_1 = ev.level1
        level_is_2 = ev.level2
        has_parent = ev.nested

        def source(src):
            match src.kind:
                case SourceKind.LEVEL1:
                    return level_is_1
                case SourceKind.ANY:
                    return Const(1)
                case SourceKind.COLUMN:
                    bit = top[src.column]
                    return bit & is_parent[src.tag] if src.tag else bit
                case SourceKind.PARENT:
                    cond = is_parent[src.tag] if src.tag else has_parent
                    return cond & level_is_2 if src.level2 else cond
            raise AssertionError(f"source kind must be a SourceKind, not {src.kind!r}")

        def guard(g):
            """A node's guard over the push's condition bits (Const(1) for none)."""
            return boolean(g, lambda i: ev.conds[i])

        pair = {p: self.pairs[i] for i, p in enumerate(self.tag_pairs)}
        fires = {}
        for k in sorted(_needed_nodes(cluster)):
            node = cluster.nodes[k]
            fire = Signal(name=f"fires_{k}")
            src = node.source
            key = _pair_key(node) if self.tag_pairs else None
            if key is None:
                term = (is_tag[node.tag] if node.tag else Const(1)) & source(src)
                m.d.comb += fire.eq(term & guard(node.guard))
            elif key[1]:  # the parent's tag and the guard are in the pair
                m.d.comb += fire.eq(top[src.column] & pair[key])
            else:  # the tag and the guard are
                m.d.comb += fire.eq(
                    pair[key] & (top[src.column] if src.kind is SourceKind.COLUMN else source(src))
                )
            fires[k] = fire

        for c, column in enumerate(cluster.columns):
            terms = [fires[k] for k in column.members]
            if column.self_loop:
                terms.append(top[c])
            m.d.comb += new[c].eq(Cat(*terms).any())

        # a node with a tag fires only on a push (the event's tag is 0 on every other cycle):
        # only '*' nodes need the push term, the other flags save a LUT input
        hits = [
            Const(0, 1)
            if q.chain or q.combine is not None
            else fires[q.node]
            if cluster.nodes[q.node].tag
            else fires[q.node] & ev.push
            for q in matchers
        ]
        if chains:
            self._twigs(m, ev, top, hits)
        flags = Signal(len(matchers))
        match_flags(m, ev, self.clear, Cat(*hits), flags, gated=False)
        # a combination's flag: its expression over its paths' flags (after the queries')
        paths = len(cluster.queries)
        m.d.comb += self.matches.eq(
            Cat(
                *(
                    boolean(q.combine, lambda p: flags[paths + p])
                    if q.combine is not None
                    else flags[i]
                    for i, q in enumerate(cluster.queries)
                )
            )
        )
        return m

    def _twigs(self, m, ev, row, hits) -> None:
        """The twig checks (:class:`xpfilt.compiler.custom.TwigChecks`), on pops (see the module
        docstring): ``row`` is the closing element's row, ``pending`` its pending bits (a
        register; the ancestors' in a LUT-RAM by level, saved on a push like
        :func:`packed_stack`). Sets ``hits`` of the twig queries."""
        checks = TwigChecks.of(self.cluster)
        n_pending = len(checks.pending)
        pending = Signal(max(1, n_pending))

        def holds(cond):
            """A condition on the pop (leaves: text bits, row columns, pending bits)."""
            return boolean(cond, lambda i: ev.conds[i], row=row, pending=lambda p: pending[p])

        def done(column, cond):
            return holds(cond) if column < 0 else row[column] & holds(cond)

        for i, column, cond in checks.anchors:
            hits[i] = ev.pop & done(column, cond)
        up = [
            done(column, cond) | pending[p] if descendant else done(column, cond)
            for p, (column, cond, descendant) in enumerate(checks.pending)
        ]
        if n_pending:
            pending_stack(m, ev, pending, Cat(*up), self.max_depth)


def pending_stack(m: Module, ev, pending: Signal, up, max_depth: int, clear=None) -> None:
    """Pending bits per open element: ``pending`` (a register) holds the current element's,
    a LUT-RAM by level its ancestors' (saved on each push, which starts the new element with
    none, like :func:`packed_stack`); a pop gives the parent its saved bits OR ``up``; a
    document end clears them. ``clear``: ``ev.push | ev.doc_end`` from a register, if the
    caller has one (every pending bit's reset)."""
    mem = Memory(shape=len(pending), depth=max_depth, init=[])
    m.submodules.pending = mem
    write = mem.write_port()
    read = mem.read_port(domain="comb")
    m.d.comb += [
        read.addr.eq(ev.addr),
        write.addr.eq(ev.addr),
        write.data.eq(pending),
        write.en.eq(ev.push),
    ]
    with m.If((ev.doc_end | ev.push) if clear is None else clear):
        m.d.sync += pending.eq(0)
    with m.Elif(ev.pop):
        m.d.sync += pending.eq(read.data | up)


def boolean(expr: Condition, leaf, *, row=None, pending=None):
    """A guard, twig condition or combination (a :class:`xpfilt.hwspec.conditions.Condition`,
    see :mod:`xpfilt.compiler.custom`) as logic, by the IR's one evaluator
    (:meth:`~xpfilt.hwspec.conditions.Condition.fold`): :class:`Bit` ``i`` is ``leaf(i)``,
    :class:`Row` ``c`` ``row[c]``, :class:`Pending` ``e`` ``pending(e)``; Const(1) for
    :data:`ALWAYS`."""

    def bit(node):
        if isinstance(node, Row):
            return row[node.index]
        if isinstance(node, Pending):
            return pending(node.index)
        return leaf(node.index)

    return expr.fold(
        bit,
        all_=lambda terms: Cat(*terms).all(),
        any_=lambda terms: Cat(*terms).any(),
        not_=lambda term: ~term,
        true=lambda: Const(1),
    )


def match_flags(m: Module, ev, clear, hits, matches, *, gated: bool = True) -> None:
    """Sticky match flags, a register: ``matches`` shows the flags of the pushes before this
    cycle; ``clear`` (the readout's capture) empties them, this cycle's ``hits`` (on a push)
    then belong to the next readout. ``gated``: ``hits`` count on a push only (False: the
    caller's hits are 0 on other cycles already)."""
    flags = Signal(len(matches))
    m.d.comb += matches.eq(flags)
    m.d.sync += flags.eq(Mux(clear, 0, flags) | (Mux(ev.push, hits, 0) if gated else hits))


def level_stack(
    m: Module,
    ev,
    parent: Signal,
    new: Signal,
    max_depth: int,
    *,
    rows: int = None,
    read_addr=None,
    early_addr=None,
    transparent: bool = False,
    ahead=None,
) -> None:
    """The stack memory of a custom cluster, one row per level: ``parent`` shows row
    ``ev.level - 1`` (asynchronous read; on a push, the row of the new element's parent), and
    a push to level ``L`` writes ``new`` to row ``L`` unless ``L`` is ``max_depth`` (no push
    reads that row). Row 0 is zeros from configuration on and never written. No register per
    column: on the ECP5 the row register and its push/pop multiplexer were ~1 flip-flop and
    ~2 LUTs per column, more than the LUT-RAM itself. ``rows`` = ``max_depth + 1`` keeps the
    deepest level's row too (read on its pop), ``read_addr`` replaces ``ev.addr``.
    ``early_addr``: the next event's read address (a cycle ahead of ``ev``): the row is read
    synchronously, so ``parent`` comes from a register (the memory's output register, the
    address's fan-out in the cycle before). Exact because no push writes in the cycle before
    another push (the front end's pushes are at least three bytes apart). ``transparent``:
    the synchronous read returns a row written in the same cycle (a pop reading its own row
    right after the push of ``<a/>``). ``ahead`` (instead of ``early_addr``, with ``rows`` =
    ``max_depth + 1``): registers of the next event's row (:class:`RowAheadLayout`), one per
    group of columns: the same rows every cycle as a transparent read a cycle ahead, see
    :func:`_row_register`."""
    rows = max_depth if rows is None else rows
    if ahead is not None:
        assert rows == max_depth + 1
        _row_register(m, ev, parent, new, max_depth, ahead)
        return
    mem = Memory(shape=len(new), depth=rows, init=[])
    m.submodules.stack = mem
    write = mem.write_port()
    m.d.comb += [
        write.addr.eq(ev.level),
        write.data.eq(new),
        write.en.eq(ev.push & (ev.level != max_depth) if rows == max_depth else ev.push),
    ]
    read = mem.read_port(
        domain="comb" if early_addr is None else "sync",
        transparent_for=(write,) if transparent else (),
    )
    m.d.comb += [
        read.addr.eq(
            early_addr if early_addr is not None else ev.addr if read_addr is None else read_addr
        ),
        parent.eq(read.data),
    ]


class RowAheadLayout(data.StructLayout):
    """What a stack read a cycle ahead needs of the next event, computed a cycle before the
    event registers that hold it (:func:`row_ahead`): ``addr``, the row it reads; ``written``,
    the current event's push writes that row; ``root``, the row is level 0's."""

    def __init__(self, max_depth: int):
        super().__init__({"addr": range(max_depth + 1), "written": 1, "root": 1})


def row_ahead(m: Module, events, following, max_depth: int):
    """A :class:`RowAheadLayout` signal from ``events`` and ``following`` (the events a cycle
    later: ``events``' register input), both :class:`DecodedEventLayout`, for the register
    stage that takes ``events``: its ``written`` and ``root`` are the compares of the stack's
    read address, made here from registers a cycle before."""
    out = Signal(RowAheadLayout(max_depth))
    m.d.comb += [
        out.addr.eq(following.read_addr),
        out.written.eq(events.push & (events.level == following.read_addr)),
        out.root.eq(following.read_addr == 0),
    ]
    return out


def _row_register(m: Module, ev, parent: Signal, new: Signal, max_depth: int, ahead) -> None:
    """The stack of ``max_depth + 1`` rows (level ``L`` in row ``L``) read transparently and
    synchronously at the next event's row into ``parent``, built as an asynchronous read into
    a register: ``parent`` takes ``new`` when this cycle's push writes that row, else the row
    read. ``ahead``: registers of the next event's row (:class:`RowAheadLayout`, the compares
    made a cycle before), one per group of consecutive columns (as even as they divide), each
    with a LUT-RAM of its own
    (the address's fan-out from one register to every column's RAM was the critical path).
    Yosys maps a transparent synchronous read on LUT-RAM to an address register instead (a
    read-after-write from the registered address), which puts the address's fan-out to every
    RAM cell, the read and the new row's logic back into the RAM's write data in one cycle
    (the programmable engine with slots: 82.8 MHz); here that cycle ends at ``parent``'s
    register. When ``max_depth`` is a power of two the memory has ``max_depth`` rows, the
    deepest level's in row 0: level 0's row is never written and reads as zeros (the other row
    count needs a second bank of 16-row LUT-RAMs and a multiplexer after them; 1 x 128 with 8
    slots: 89.6 MHz, critical path ``next_addr`` -> the 17-row stack -> ``parent``)."""
    folded = max_depth & (max_depth - 1) == 0 and max_depth > 1
    bits = (max_depth - 1).bit_length() if folded else len(ahead[0].addr)
    assert len(ahead) <= len(new)
    bounds = [g * len(new) // len(ahead) for g in range(len(ahead) + 1)]
    for g, row in enumerate(ahead):
        part = slice(bounds[g], bounds[g + 1])
        mem = Memory(
            shape=bounds[g + 1] - bounds[g], depth=max_depth if folded else max_depth + 1, init=[]
        )
        m.submodules[f"stack_{g}"] = mem
        write = mem.write_port()
        read = mem.read_port(domain="comb")
        m.d.comb += [
            write.addr.eq(ev.level[:bits]),
            write.data.eq(new[part]),
            write.en.eq(ev.push),
            read.addr.eq(row.addr[:bits]),
        ]
        stored = Mux(row.root, 0, read.data) if folded else read.data
        m.d.sync += parent[part].eq(Mux(row.written, new[part], stored))


def packed_stack(m: Module, ev, top: Signal, new: Signal, max_depth: int, *, addr=None) -> None:
    """The shared stack memory of a cluster: ``top`` holds the row of the current level, a
    LUT-RAM the rows below it. On ``ev.push`` the row ``new`` becomes the top (the old top is
    saved at ``level - 1``), on ``ev.pop`` the saved row comes back, on ``ev.doc_end`` the top
    is cleared. ``addr``: ``ev.level - 1`` if the events carry it already."""
    mem = Memory(shape=len(top), depth=max_depth, init=[])
    m.submodules.stack = mem
    write = mem.write_port()
    read = mem.read_port(domain="comb")
    row = ev.level - 1 if addr is None else addr
    m.d.comb += [
        write.addr.eq(row),
        write.data.eq(top),
        write.en.eq(ev.push),
        read.addr.eq(row),
    ]
    with m.If(ev.doc_end):
        m.d.sync += top.eq(0)
    with m.Elif(ev.push):
        m.d.sync += top.eq(new)
    with m.Elif(ev.pop):
        m.d.sync += top.eq(read.data)
