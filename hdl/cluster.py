"""One cluster of the custom engine: its registered copy of the front end's events and its stack
bank (§5.4).

The paper replicates the parser and tag decoder per cluster to cut fan-out. Here one front end
serves every cluster and each cluster registers its own copy of the (narrow) event bus: the
fan-out is cut the same way, and the parser and decoder are paid for once instead of once per
cluster, which is most of a cluster's logic.

A cluster is self-contained, so the engine's Verilog can be written one cluster per module:
each converts on its own, in parallel, and an unchanged cluster is not converted again.
"""

from amaranth.hdl import Cat, Module, Signal, Value
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from xpfilt.compiler.custom import Cluster
from xpfilt.hdl.frontend import ErrorFlags
from xpfilt.hdl.stacks import StackBank, TreeEventLayout, boolean, widen_events
from xpfilt.hwspec.contract import EVENT_FANOUT, distribution_depth

__all__ = ["ClusterCore", "cluster_signature", "copy_register", "distribute", "ERROR_WIDTH"]

ERROR_WIDTH = ErrorFlags.as_shape().size


#: A form k > 0 copy's bits per enable chain (:func:`copy_register`): a wider copy takes a
#: chain per slice, so no one enable net spans a cluster's whole copy of the events (measured:
#: 1,024 queries with 2 predicates each, router2, clk on a clock pin: ``cluster_1.copy_on_1``,
#: the enable of ~1,000 condition and event bits, 13.6 ns of routing, 70.8 MHz).
COPY_ENABLE_FANOUT = 64


def copy_register(m: Module, value: Value, variant: int, *, name: str) -> Value:
    """``value`` registered, in one of four forms told apart by ``variant`` (0-3): form 0 is a
    plain register, form k > 0 loads only while ``on_k`` is 1, a flip-flop of a chain of ``m``
    (``on_k`` <= ``on_(k-1)``, all 0 at power-up and in reset) that is 1 from the k-th cycle
    after reset on. Synthesis merges flip-flops with the same input, type and enable, which
    would fold the copies of a distribution tree back into one register driving every load;
    copies of one parent in different forms stay apart (no event reaches a copy in the first
    cycles after reset, so the forms behave alike).

    Each chain is its own: ``on_1`` <= ``on_1 | ~on_2`` (1 in every state the chain reaches,
    as ``on_1`` <= 1 would be) feeds back into itself, so two chains never have the same
    inputs and Yosys (``opt_merge``) cannot fold the chains of all the clusters into one
    flip-flop per form with thousands of clock enables across the die. A module's copies share
    a chain per :data:`COPY_ENABLE_FANOUT` bits (slice ``j`` of every copy takes chain ``j``).
    The chain needs its reset: the ECP5 flow drops initial values, and a reset-less chain would
    be a constant 1."""
    reg = Signal(len(value), name=name)
    if variant == 0:
        m.d.sync += reg.eq(value)
        return reg
    chains = getattr(m, "_copy_enables", None)
    if chains is None:
        chains = m._copy_enables = []
    for j, lo in enumerate(range(0, len(value), COPY_ENABLE_FANOUT)):
        if j == len(chains):
            suffix = f"_{j}" if j else ""
            first, second = (Signal(name=f"copy_on_{k}{suffix}") for k in (1, 2))
            m.d.sync += [first.eq(first | ~second), second.eq(first)]
            chains.append([first, second])
        chain = chains[j]
        while len(chain) < variant:
            on = Signal(name=f"copy_on_{len(chain) + 1}{f'_{j}' if j else ''}")
            m.d.sync += on.eq(chain[-1])
            chain.append(on)
        hi = min(lo + COPY_ENABLE_FANOUT, len(value))
        with m.If(chain[variant - 1]):
            m.d.sync += reg[lo:hi].eq(value[lo:hi])
    return reg


def distribute(m: Module, value, leaves: int, *, name: str) -> list:
    """``leaves`` copies of ``value``, each :func:`distribution_depth` registers later: a tree
    whose registers each drive at most :data:`EVENT_FANOUT` registers of the level below (each
    leaf registers its copy itself, leaf ``index`` in form ``index % EVENT_FANOUT`` of
    :func:`copy_register`), so every leaf sees the value on the same cycle and no net's load
    grows with the number of leaves. Leaves: the engine's clusters (its events), the sparse
    readout's select copies (:func:`xpfilt.hwspec.readout.sparse_spread`)."""
    value = Value.cast(value)
    depth = distribution_depth(leaves)
    level = [value]
    for d in range(depth, 0, -1):  # d: levels left above the clusters
        level = [
            copy_register(
                m, level[k // EVENT_FANOUT], k % EVENT_FANOUT, name=f"{name}_tree{depth - d}_{k}"
            )
            for k in range(-(-leaves // EVENT_FANOUT**d))
        ]
    return [level[i // EVENT_FANOUT] for i in range(leaves)] if depth else [value] * leaves


def cluster_signature(
    n_queries: int, *, n_tags: int, max_depth: int, n_conds: int = 0
) -> wiring.Signature:
    """The ports of a cluster (see :class:`ClusterCore`)."""
    return wiring.Signature(
        {
            "events": In(TreeEventLayout(n_tags=n_tags, max_depth=max_depth, n_conds=n_conds)),
            "clear": In(1),
            "matches": Out(n_queries),
            "doc_end": Out(1),
            "errors": Out(ERROR_WIDTH),
        }
    )


class ClusterCore(wiring.Component):
    """Ports: ``events`` (the front end's, tag and parent ids as two one-hot digits each,
    :class:`xpfilt.hdl.stacks.TreeEventLayout`; the cluster decodes the tags it uses and
    registers them, one-hot, with the rest), ``clear`` (the readout captured
    the flags), ``matches`` (one flag per query of the cluster, a register),
    ``doc_end`` and ``errors`` (from the registered events)."""

    def __init__(
        self,
        cluster: Cluster,
        *,
        n_tags: int,
        max_depth: int,
        variant: int = 0,
        n_conds: int = 0,
        bytes_per_cycle: int = 1,
    ):
        """``variant``: the form of the events register (see :func:`copy_register`;
        the engine gives clusters fed by one tree register different forms). ``n_conds``:
        the plan's attribute conditions (their bits come with the events).
        ``bytes_per_cycle``: the engine's W. With the one-byte front end (W = 1) pushes are at
        least three cycles apart, so the stack row is read a cycle early, from the events'
        input (``StackBank``'s ``early``); the W-byte front end may push on consecutive
        cycles, and its clusters read the row in the event's cycle."""
        self.cluster, self.n_tags, self.max_depth = cluster, n_tags, max_depth
        self.variant = variant
        self.n_conds = n_conds
        self.early = bytes_per_cycle == 1
        super().__init__(
            cluster_signature(
                len(cluster.queries), n_tags=n_tags, max_depth=max_depth, n_conds=n_conds
            )
        )

    def elaborate(self, platform):
        m = Module()
        m.submodules.stacks = bank = StackBank(
            self.cluster,
            n_tags=self.n_tags,
            max_depth=self.max_depth,
            n_conds=self.n_conds,
            paired=True,
            early=self.early,
        )
        wide = widen_events(m, self.events, self.n_tags, self.max_depth, self.n_conds)
        events = Signal.like(wide)
        m.d.comb += events.eq(copy_register(m, wide.as_value(), self.variant, name="events_copy"))
        if self.early:
            m.d.comb += bank.next_events.eq(wide)
        if bank.tag_pairs:  # each (tag, parent, guard) AND registered with the events
            pairs = Cat(
                *(
                    wide.tag[t - 1]
                    & (wide.parent[p - 1] if p else 1)
                    & boolean(g, lambda i: wide.conds[i])
                    for t, p, g in bank.tag_pairs
                )
            )
            m.d.comb += bank.pairs.eq(copy_register(m, pairs, self.variant, name="pairs_copy"))
        m.d.comb += [
            bank.events.eq(events),
            bank.clear.eq(self.clear),
            self.matches.eq(bank.matches),
            self.doc_end.eq(events.doc_end),
            self.errors.eq(events.errors),
        ]
        return m
