"""The custom filtering engine: a plan's clusters behind one byte stream and one serial readout.

Data path: the accepted byte is registered once and parsed by one front end (parser, tag
decoder, global stack); its events are decoded once (the level's flags; tag and parent ids as
two one-hot digits each, :class:`xpfilt.hdl.stacks.TreeEventLayout`, which each cluster decodes
to the one-hot bits it uses) and reach the clusters through a registered distribution tree (:func:`distribute`: ``distribution_depth``
levels, each register driving at most :data:`EVENT_FANOUT` others, every cluster on the same
cycle); every cluster registers its own copy of the bits it uses and updates its stack bank. At the end of a document every
cluster's match flags are captured into the readout's shadow register in plan order (cluster 0's
queries first) and shifted out while the next document streams in.

Flow control: at most one document end may wait for the readout. ``bytes_in.ready`` drops while
a document end is in flight (accepted, not yet captured) and either the readout is busy or a
second document end is in flight too; so the input runs at one byte per cycle whenever documents
are longer than the readout plus the pipeline (``2 + LATENCY + distribution_depth(clusters)``
cycles from a byte to the clusters, then one to capture), and every document, however short,
gets exactly one readout.
"""

from amaranth.hdl import Cat, ClockSignal, Instance, Module, Mux, ResetSignal, Signal, Value
from amaranth.lib import stream, wiring
from amaranth.lib.wiring import In, Out

from xpfilt.compiler.custom import Plan
from xpfilt.hdl.cluster import ClusterCore, cluster_signature, copy_register, distribute
from xpfilt.hdl.frontend import ByteLayout, ErrorFlags, FrontEnd
from xpfilt.hdl.readout import make_readout, readout_layout
from xpfilt.hdl.stacks import decode_events
from xpfilt.hdl.wide_frontend import WideByteLayout, WideFrontEnd
from xpfilt.hwspec.contract import EVENT_FANOUT, check_bytes_per_cycle, distribution_depth
from xpfilt.hwspec.readout import ReadoutKind

__all__ = [
    "CustomEngine",
    "EngineFrame",
    "cluster_module_name",
    "control_copy",
    "EVENT_FANOUT",
    "distribution_depth",
    "distribute",
    "copy_register",
]


def cluster_module_name(index: int) -> str:
    return f"xpfilt_cluster_{index}"


class CustomEngine(wiring.Component):
    """Ports: ``bytes_in`` (document bytes, ``last`` on a document's final byte) and ``readout``
    (beats of the plan's readout kind, see :func:`xpfilt.hdl.readout.readout_layout`)."""

    def __init__(
        self, plan: Plan, *, max_name: int = 32, instances: bool = False, bytes_per_cycle: int = 1
    ):
        """``instances``: instantiate each cluster as the Verilog module
        ``cluster_module_name(i)`` (converted separately, see :meth:`cluster_core`) instead of
        elaborating it inline. ``bytes_per_cycle``: W, the bytes of a ``bytes_in`` beat (1: a
        ``ByteLayout`` stream; 2, 4, 8: a :class:`xpfilt.hdl.wide_frontend.WideByteLayout`
        stream and the W-byte front end)."""
        if not plan.clusters:
            raise ValueError("plan must have at least one query, not none")
        self.plan = plan
        self.max_name = max_name
        self.instances = instances
        self.bytes_per_cycle = check_bytes_per_cycle(bytes_per_cycle)
        width = sum(len(c.queries) for c in plan.clusters)
        super().__init__(
            {
                "bytes_in": In(
                    stream.Signature(
                        ByteLayout if bytes_per_cycle == 1 else WideByteLayout(bytes_per_cycle)
                    )
                ),
                "readout": Out(
                    stream.Signature(readout_layout(ReadoutKind(plan.options.readout), width))
                ),
            }
        )

    def cluster_core(self, index: int) -> ClusterCore:
        """The component of cluster ``index`` (what ``cluster_module_name(index)`` contains)."""
        return ClusterCore(
            self.plan.clusters[index],
            n_tags=len(self.plan.tags),
            max_depth=self.plan.options.max_depth,
            variant=index % EVENT_FANOUT,
            n_conds=len(self.plan.conditions),
            bytes_per_cycle=self.bytes_per_cycle,
        )

    def elaborate(self, platform):
        m = Module()
        plan = self.plan
        frame = EngineFrame(
            m,
            self.bytes_in,
            self.readout,
            width=sum(len(c.queries) for c in plan.clusters),
            tags=plan.tags,
            segments=[len(c.queries) for c in plan.clusters],
            max_depth=plan.options.max_depth,
            max_name=self.max_name,
            readout=ReadoutKind(plan.options.readout),
            conditions=plan.conditions,
            bytes_per_cycle=self.bytes_per_cycle,
        )
        n_conds = len(plan.conditions)
        decoded = decode_events(
            m, frame.events, len(plan.tags), plan.options.max_depth, n_conds, tree=True
        )
        cores = []
        for i, cluster in enumerate(plan.clusters):
            if self.instances:  # only the ports: the module comes from its own file
                core = (
                    cluster_signature(
                        len(cluster.queries),
                        n_tags=len(plan.tags),
                        max_depth=plan.options.max_depth,
                        n_conds=n_conds,
                    )
                    .flip()
                    .create(path=(f"cluster_{i}",))
                )
                m.submodules[f"cluster_{i}"] = Instance(
                    cluster_module_name(i),
                    i_clk=ClockSignal(),
                    i_rst=ResetSignal(),
                    i_events=core.events,
                    i_clear=core.clear,
                    o_matches=core.matches,
                    o_doc_end=core.doc_end,
                    o_errors=core.errors,
                )
            else:
                core = m.submodules[f"cluster_{i}"] = self.cluster_core(i)
            cores.append(core)
        for core, copy in zip(cores, distribute(m, decoded, len(cores), name="events")):
            m.d.comb += core.events.eq(copy)
        frame.connect(cores, control=control_copy(m, decoded, distribution_depth(len(cores)) + 1))
        return m


def control_copy(m: Module, events, cycles: int) -> tuple[Value, Value]:
    """``events.doc_end`` and ``events.errors``, ``cycles`` registers later: the flow control's
    own copy of what a cluster's event register shows (see :meth:`EngineFrame.connect`). The
    first register has no reset (it loads the front end's reset events during a reset), so that
    synthesis does not merge the chain with the distribution tree's path to cluster 0."""
    value = Cat(events.doc_end, events.errors)
    for k in range(cycles):
        reg = Signal(len(value), name=f"control_{k}", reset_less=k == 0)
        m.d.sync += reg.eq(value)
        value = reg
    return value[0], value[1:]


class EngineFrame:
    """What every engine shares around its clusters: the byte stream's flow control, the
    registered input byte, the one front end (``events``, ``name_tap``), the capture of all
    clusters' match flags at a document end (in cluster order) and the serial readout.

    ``bytes_in.ready`` is 1 when no document end is in flight (accepted, not yet captured), or
    exactly one is and the readout is free (``busy`` is 0: so that end will be captured when it
    reaches the clusters), and ``hold`` is 0. ``busy`` is a register: the readout's busy one
    cycle late, or a load of the readout this cycle or the last; it is never 0 while the
    readout is busy. Hence at most two document ends are in flight and at most one
    waits (``waiting``) for a busy readout: none can merge with another.
    ``drained``: every accepted document end has reached the clusters (a configuration may
    change between documents).
    """

    def __init__(
        self,
        m: Module,
        bytes_in,
        readout_port,
        *,
        width: int,
        segments,
        tags,
        max_depth: int,
        max_name: int,
        readout: ReadoutKind = ReadoutKind.SERIAL,
        conditions=(),
        bytes_per_cycle: int = 1,
        slots: int = 0,
        slot_name_len: int = 16,
    ):
        """``segments``: the readout bits of each cluster, in order (see :meth:`connect`).
        ``bytes_per_cycle`` W > 1: the W-byte front end, whose ``room`` also gates ``ready``.
        ``slots``: the front end's comparator slots (``slot_load``, the programmable engine's)."""
        self.m = m
        self.bytes_in = bytes_in
        m.submodules.readout = self.readout = make_readout(readout, width, segments)
        wiring.connect(m, wiring.flipped(readout_port), self.readout.out)
        self.pending = Signal(range(3))  # document ends accepted but not yet captured
        self.waiting = Signal()  # ... of which one reached the clusters, readout busy
        self.accepted = Signal()  # a byte enters the engine this cycle
        self.hold = Signal()  # input: stop accepting bytes
        self.drained = Signal()
        self.capturing = Signal()  # the readout loads the clusters' flags this cycle
        # The readout is (or may be) busy or about to be: a register (see :meth:`connect`), so
        # that neither the readout's logic nor the capture decision is in the input's paths or
        # in the clusters' own capture decisions.
        self.busy = Signal()
        room = Signal() if bytes_per_cycle > 1 else None  # W > 1: room for another beat
        m.d.comb += [
            bytes_in.ready.eq(
                ~self.hold & ((self.pending == 0) | ((self.pending == 1) & ~self.busy)) & room
            )
            if bytes_per_cycle > 1
            else bytes_in.ready.eq(
                ~self.hold & ((self.pending == 0) | ((self.pending == 1) & ~self.busy))
            ),
            self.accepted.eq(bytes_in.valid & bytes_in.ready),
            self.drained.eq(self.pending == self.waiting),
        ]
        if bytes_per_cycle == 1:
            m.submodules.front_end = front_end = FrontEnd(
                tags,
                max_depth=max_depth,
                max_name=max_name,
                conditions=conditions,
                slots=slots,
                slot_name_len=slot_name_len,
            )
            self.slot_load = front_end.slot_load if slots else None
            copy = Signal(ByteLayout)
            self.name_tap = front_end.name_tap
        else:
            m.submodules.front_end = front_end = WideFrontEnd(
                tags,
                width=bytes_per_cycle,
                max_depth=max_depth,
                max_name=max_name,
                conditions=conditions,
            )
            copy = Signal(WideByteLayout(bytes_per_cycle))
        copy_valid = Signal()
        m.d.sync += [copy_valid.eq(self.accepted), copy.eq(bytes_in.payload)]
        m.d.comb += [front_end.bytes_in.valid.eq(copy_valid), front_end.bytes_in.payload.eq(copy)]
        self.events = front_end.events
        if bytes_per_cycle > 1:
            m.d.comb += room.eq(front_end.room)

    def connect(self, cores, control=None, *, readout_registers: bool = False) -> None:
        """Wire the clusters' ``clear`` (flags captured) and read their ``matches``,
        ``doc_end`` and ``errors`` (every cluster sees the same events on the same cycles).
        ``control``: (``doc_end``, ``errors``) on the cycles the clusters see them, from
        registers of the flow control's own (:func:`control_copy`); else cluster 0's.

        The capture is decided in the cycle a document end reaches the clusters (or, if the
        readout was busy then, the cycle it frees up) and performed in the next one
        (``capturing``): the readout loads the clusters' flag registers and they clear, so
        that no logic sits between the decision and its many loads. The next cycle has no push
        to lose: a document's first byte never pushes, and no byte enters while an end waits.
        Each cluster decides from its own ``doc_end`` into its own register (``capturing_i``),
        which clears its flags and loads its segment of the readout's shadow: no net reaches
        more than one cluster's flags (one ``capturing`` for all was a net of ~16,000 loads at
        8,000 queries). ``capturing`` (the decision from ``control``, or cluster 0's) drives the readout's control.

        ``readout_registers``: the readout's ``capture`` and ``load`` bits from registers of their
        own (form 1 of :func:`copy_register`, the same values on the same cycles), not from the
        clusters' ``capturing_i`` (which synthesis merges with ``capturing`` without
        ``control``): placed beside the readout, not beside the cluster's flags they clear."""
        m, readout, waiting, busy = self.m, self.readout, self.waiting, self.busy
        held_errors = Signal(ErrorFlags)
        doc_end, errors = control if control is not None else (cores[0].doc_end, cores[0].errors)
        capture = Signal()
        captured_errors = Signal(ErrorFlags)
        m.d.comb += [
            capture.eq((doc_end | waiting) & ~busy),
            readout.capture.eq(
                copy_register(m, capture, 1, name="readout_capture")
                if readout_registers
                else self.capturing
            ),
            readout.flags.eq(Cat(*(core.matches for core in cores))),
            readout.errors.eq(captured_errors),
        ]
        loads = []
        for i, core in enumerate(cores):
            decision = (core.doc_end | waiting) & ~busy
            own = Signal(name=f"capturing_{i}")
            m.d.sync += own.eq(decision)
            m.d.comb += core.clear.eq(own)
            loads.append(
                copy_register(m, decision, 1, name=f"readout_load_{i}")
                if readout_registers
                else own
            )
        m.d.comb += readout.load.eq(Cat(*loads))
        # busy = the readout's busy a cycle ago, or a load this cycle or the last one (a
        # readout busy now was busy a cycle ago or has just been loaded): ``capture`` is this
        # cycle's decision, the next cycle's load
        m.d.sync += [
            self.capturing.eq(capture),
            busy.eq(readout.busy | self.capturing | capture),
            waiting.eq((doc_end | waiting) & busy),
        ]
        with m.If(capture):
            m.d.sync += captured_errors.eq(Mux(doc_end, errors, held_errors))
        with m.If(doc_end):
            m.d.sync += held_errors.eq(errors)
        m.d.sync += self.pending.eq(
            self.pending + (self.accepted & self.bytes_in.payload.last) - capture
        )
