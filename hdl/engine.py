"""The custom filtering engine: a plan's clusters behind one byte stream and one serial readout.

Data path (§5.4): the input byte is registered once per cluster (each cluster gets its own copy,
so the broadcast fans out through registers, and every cluster sees the byte on the same cycle);
each cluster has its own front end (parser, tag decoder, global stack) and its stack bank. At the
end of a document every cluster's match flags are captured into the readout's shadow register
in plan order (cluster 0's queries first) and shifted out while the next document streams in.

Flow control: ``bytes_in.ready`` drops only while a document end is in flight (accepted, not yet
captured) *and* the readout is still busy with the previous document; so the input runs at one
byte per cycle whenever documents are longer than the readout.
"""


from amaranth.hdl import Cat, ClockSignal, Instance, Module, Mux, ResetSignal, Signal
from amaranth.lib import stream, wiring
from amaranth.lib.wiring import In, Out

from xpfilt.compiler import Plan

from .cluster import ClusterCore, cluster_signature
from .frontend import ByteLayout, ErrorFlags
from .readout import Readout, ReadoutLayout

__all__ = ["CustomEngine", "EngineFrame", "cluster_module_name"]


def cluster_module_name(index: int) -> str:
    return f"xpfilt_cluster_{index}"


class CustomEngine(wiring.Component):
    """Ports: ``bytes_in`` (document bytes, ``last`` on a document's final byte) and ``readout``
    (one beat per query per document, see :class:`hdl.readout.ReadoutLayout`)."""

    bytes_in: In(stream.Signature(ByteLayout))
    readout: Out(stream.Signature(ReadoutLayout))

    def __init__(self, plan: Plan, *, max_name: int = 32, instances: bool = False):
        """``instances``: instantiate each cluster as the Verilog module
        ``cluster_module_name(i)`` (converted separately, see :meth:`cluster_core`) instead of
        elaborating it inline."""
        if not plan.clusters:
            raise ValueError("plan must have at least one query, not none")
        self.plan = plan
        self.max_name = max_name
        self.instances = instances
        super().__init__()

    def cluster_core(self, index: int) -> ClusterCore:
        """The component of cluster ``index`` (what ``cluster_module_name(index)`` contains)."""
        return ClusterCore(self.plan.clusters[index], max_depth=self.plan.options.max_depth,
                           max_name=self.max_name)

    def elaborate(self, platform):
        m = Module()
        plan = self.plan
        frame = EngineFrame(m, self.bytes_in, self.readout,
                            width=sum(len(c.queries) for c in plan.clusters))
        cores = []
        for i, cluster in enumerate(plan.clusters):
            if self.instances:   # only the ports: the module comes from its own file
                core = cluster_signature(len(cluster.queries)).flip().create(
                    path=(f"cluster_{i}",))
                m.submodules[f"cluster_{i}"] = Instance(
                    cluster_module_name(i), i_clk=ClockSignal(), i_rst=ResetSignal(),
                    i_valid=core.valid, i_data=core.data, i_last=core.last, i_clear=core.clear,
                    o_matches=core.matches, o_doc_end=core.doc_end, o_errors=core.errors)
            else:
                core = m.submodules[f"cluster_{i}"] = self.cluster_core(i)
            cores.append(core)
        frame.connect(cores)
        return m


class EngineFrame:
    """What every engine shares around its clusters: the byte stream's flow control, the
    broadcast of each accepted byte to the clusters, the capture of all clusters' match flags
    at a document end (in cluster order) and the serial readout.

    ``bytes_in.ready`` drops only while a document end is in flight (accepted, not yet
    captured) *and* the readout is still busy with the previous document.
    """

    def __init__(self, m: Module, bytes_in, readout_port, *, width: int):
        self.m = m
        self.bytes_in = bytes_in
        m.submodules.readout = self.readout = Readout(width)
        wiring.connect(m, wiring.flipped(readout_port), self.readout.out)
        self.pending = Signal(range(4))    # document ends accepted but not yet captured
        self.accepted = Signal()           # a byte enters the engine this cycle
        m.d.comb += [
            bytes_in.ready.eq(~((self.pending != 0) & self.readout.busy)),
            self.accepted.eq(bytes_in.valid & bytes_in.ready),
        ]

    def connect(self, cores) -> None:
        """Wire the clusters: each has ``valid``/``data``/``last`` inputs, ``clear`` (flags
        captured), and ``matches``/``doc_end``/``errors`` outputs."""
        m, readout = self.m, self.readout
        for core in cores:
            m.d.comb += [core.valid.eq(self.accepted),
                         core.data.eq(self.bytes_in.payload.data),
                         core.last.eq(self.bytes_in.payload.last)]
        waiting = Signal()               # a document ended while the readout was busy
        held_errors = Signal(ErrorFlags)
        doc_end = cores[0].doc_end       # every cluster sees the same bytes on the same cycles
        errors = Signal(ErrorFlags)
        capture = Signal()
        m.d.comb += [
            errors.eq(_or_all([core.errors for core in cores])),
            capture.eq((doc_end | waiting) & ~readout.busy),
            readout.capture.eq(capture),
            readout.flags.eq(Cat(*(core.matches for core in cores))),
            readout.errors.eq(Mux(doc_end, errors, held_errors)),
        ]
        for core in cores:
            m.d.comb += core.clear.eq(capture)
        m.d.sync += waiting.eq((doc_end | waiting) & readout.busy)
        with m.If(doc_end):
            m.d.sync += held_errors.eq(errors)
        m.d.sync += self.pending.eq(
            self.pending + (self.accepted & self.bytes_in.payload.last) - capture)


def _or_all(values):
    result = values[0]
    for value in values[1:]:
        result = result | value
    return result
