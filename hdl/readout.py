"""Double-buffered serial match readout (§5.1).

At the end of a document the engine's match flags are captured into a shadow register and shifted
out one bit per transfer (LSB = readout bit 0) while the next document streams in. Each beat says
which document it belongs to (a wrapping sequence number from 0), whether it is the first or last
bit, and carries the document's error flags.
"""


from amaranth.hdl import Cat, Module, Signal
from amaranth.lib import data, stream, wiring
from amaranth.lib.wiring import In, Out

from .frontend import ErrorFlags

__all__ = ["ReadoutLayout", "Readout", "DOC_WIDTH"]

DOC_WIDTH = 16
_CHUNK = 64


class ReadoutLayout(data.Struct):
    """One readout beat."""
    bit: 1
    first: 1
    last: 1
    doc: DOC_WIDTH
    errors: ErrorFlags


class Readout(wiring.Component):
    """Ports: ``capture`` + ``flags`` + ``errors`` (load the shadow; only when not ``busy``),
    ``busy`` (the shadow still holds bits), ``out`` (a stream of :class:`ReadoutLayout`)."""

    def __init__(self, width: int):
        if width < 1:
            raise ValueError(f"readout width must be at least 1, not {width!r}")
        self.width = width
        super().__init__({
            "capture": In(1),
            "flags": In(width),
            "errors": In(ErrorFlags),
            "busy": Out(1),
            "out": Out(stream.Signature(ReadoutLayout)),
        })

    def elaborate(self, platform):
        m = Module()
        shadow = Signal(self.width)
        count = Signal(range(self.width + 1))
        doc = Signal(DOC_WIDTH)
        errors = Signal(ErrorFlags)
        started = Signal()   # a document has been captured (doc numbers start at 0)

        m.d.comb += [
            self.busy.eq(count != 0),
            self.out.valid.eq(count != 0),
            self.out.payload.bit.eq(shadow[0]),
            self.out.payload.first.eq(count == self.width),
            self.out.payload.last.eq(count == 1),
            self.out.payload.doc.eq(doc),
            self.out.payload.errors.eq(errors),
        ]
        shift = self.out.valid & self.out.ready
        with m.If(self.capture):
            m.d.sync += [
                count.eq(self.width),
                errors.eq(self.errors),
                doc.eq(doc + started),
                started.eq(1),
            ]
        with m.Elif(shift):
            m.d.sync += count.eq(count - 1)
        # The shadow register in chunks: one wide multiplexer would make Amaranth's netlist
        # checks quadratic in the width (32,000 queries: minutes).
        for lo in range(0, self.width, _CHUNK):
            hi = min(lo + _CHUNK, self.width)
            chunk = shadow[lo:hi]
            shifted = shadow[lo + 1:hi + 1] if hi < self.width else Cat(shadow[lo + 1:hi], 0)
            with m.If(self.capture):
                m.d.sync += chunk.eq(self.flags[lo:hi])
            with m.Elif(shift):
                m.d.sync += chunk.eq(shifted)
        return m
