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


from amaranth.hdl import Cat, Module, Mux, Signal
from amaranth.lib import stream, wiring
from amaranth.lib.wiring import In, Out

from xpfilt.compiler import Plan

from .frontend import ByteLayout, ErrorFlags, FrontEnd
from .readout import Readout, ReadoutLayout
from .stacks import StackBank

__all__ = ["CustomEngine"]


class CustomEngine(wiring.Component):
    """Ports: ``bytes_in`` (document bytes, ``last`` on a document's final byte) and ``readout``
    (one beat per query per document, see :class:`hdl.readout.ReadoutLayout`)."""

    bytes_in: In(stream.Signature(ByteLayout))
    readout: Out(stream.Signature(ReadoutLayout))

    def __init__(self, plan: Plan, *, max_name: int = 32):
        if not plan.clusters:
            raise ValueError("plan must have at least one query, not none")
        self.plan = plan
        self.max_name = max_name
        super().__init__()

    def elaborate(self, platform):
        m = Module()
        plan = self.plan
        max_depth = plan.options.max_depth
        width = sum(len(c.queries) for c in plan.clusters)
        m.submodules.readout = readout = Readout(width)
        wiring.connect(m, wiring.flipped(self.readout), readout.out)

        pending = Signal(range(4))     # document ends accepted but not yet captured
        waiting = Signal()             # a document ended while the readout was busy
        held_errors = Signal(ErrorFlags)
        accepted = Signal()
        m.d.comb += [
            self.bytes_in.ready.eq(~((pending != 0) & readout.busy)),
            accepted.eq(self.bytes_in.valid & self.bytes_in.ready),
        ]

        banks, front_ends = [], []
        for i, cluster in enumerate(plan.clusters):
            front_end = FrontEnd(cluster.tags, max_depth=max_depth, max_name=self.max_name)
            bank = StackBank(cluster, max_depth=max_depth)
            m.submodules[f"front_end_{i}"] = front_end
            m.submodules[f"stacks_{i}"] = bank
            copy_valid = Signal(name=f"byte_valid_{i}")
            copy = Signal(ByteLayout, name=f"byte_{i}")
            m.d.sync += [copy_valid.eq(accepted), copy.eq(self.bytes_in.payload)]
            m.d.comb += [
                front_end.bytes_in.valid.eq(copy_valid),
                front_end.bytes_in.payload.eq(copy),
                bank.events.eq(front_end.events),
            ]
            banks.append(bank)
            front_ends.append(front_end)

        events = front_ends[0].events   # every cluster sees the same bytes on the same cycles
        errors = Signal(ErrorFlags)
        m.d.comb += errors.eq(_or_all([fe.events.errors.as_value() for fe in front_ends]))
        capture = Signal()
        m.d.comb += [
            capture.eq((events.doc_end | waiting) & ~readout.busy),
            readout.capture.eq(capture),
            readout.flags.eq(Cat(*(bank.matches for bank in banks))),
            readout.errors.eq(Mux(events.doc_end, errors, held_errors)),
        ]
        for bank in banks:
            m.d.comb += bank.clear.eq(capture)
        m.d.sync += waiting.eq((events.doc_end | waiting) & readout.busy)
        with m.If(events.doc_end):
            m.d.sync += held_errors.eq(errors)
        m.d.sync += pending.eq(pending + (accepted & self.bytes_in.payload.last) - capture)
        return m


def _or_all(values):
    result = values[0]
    for value in values[1:]:
        result = result | value
    return result
