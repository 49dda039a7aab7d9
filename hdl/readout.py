"""Double-buffered match readouts: the paper's serial bitmap (§5.1) and a sparse list of ids.

At the end of a document the engine's match flags are captured into a shadow register and read
out while the next document streams in; the formats are described in :mod:`xpfilt.readout`.

* :class:`Readout` shifts the flags out one bit per transfer (LSB = readout bit 0), through a
  2-entry queue (the first bit shows two cycles after the capture). Each beat says which
  document it belongs to (a wrapping sequence number from 0), whether it is the first or last
  bit, and carries the document's error flags.
* :class:`SparseReadout` sends a header beat, then the position of every set flag: a pipelined
  scan over chunks of the shadow register that skips empty chunks (lowest non-empty chunk ->
  one-hot select -> AND-OR fetch into a short queue -> lowest set bit of the current chunk).
"""

from functools import reduce
from operator import or_

from amaranth.hdl import Cat, Const, Module, Mux, Signal, unsigned
from amaranth.lib import data, stream, wiring
from amaranth.lib.fifo import SyncFIFO
from amaranth.lib.wiring import In, Out

from xpfilt.readout import DOC_WIDTH, SPARSE_QUEUE, ReadoutKind, sparse_chunk

from .frontend import ErrorFlags

__all__ = ["ReadoutLayout", "Readout", "SparseReadout", "sparse_layout", "readout_layout",
           "make_readout", "DOC_WIDTH"]

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
        count = Signal(range(self.width + 1))   # bits still in the shadow
        nonzero = Signal()                       # count != 0, as a register
        doc = Signal(DOC_WIDTH)
        errors = Signal(ErrorFlags)
        started = Signal()   # a document has been captured (doc numbers start at 0)
        # A 2-entry queue of (bit, first, last) between the shadow and ``out``: the shadow
        # shifts whenever the queue has room (registers only), so ``out.ready`` never reaches
        # the whole shadow's shift enable.
        entry = data.StructLayout({"bit": 1, "first": 1, "last": 1})
        head = Signal(entry)
        second = Signal(entry)
        level = Signal(range(3))
        push = Signal()
        pop = Signal()
        new = Signal(entry)

        m.d.comb += [
            self.busy.eq(nonzero | (level != 0)),
            self.out.valid.eq(level != 0),
            self.out.payload.bit.eq(head.bit),
            self.out.payload.first.eq(head.first),
            self.out.payload.last.eq(head.last),
            self.out.payload.doc.eq(doc),
            self.out.payload.errors.eq(errors),
            push.eq(nonzero & (level != 2)),
            pop.eq(self.out.valid & self.out.ready),
            new.bit.eq(shadow[0]),
            new.first.eq(count == self.width),
            new.last.eq(count == 1),
        ]
        m.d.sync += level.eq(level + push - pop)
        with m.Switch(level):
            with m.Case(0):
                with m.If(push):
                    m.d.sync += head.eq(new)
            with m.Case(1):
                with m.If(pop & push):
                    m.d.sync += head.eq(new)
                with m.Elif(push):
                    m.d.sync += second.eq(new)
            with m.Case(2):
                with m.If(pop):
                    m.d.sync += head.eq(second)

        with m.If(self.capture):
            m.d.sync += [
                count.eq(self.width),
                nonzero.eq(1),
                errors.eq(self.errors),
                doc.eq(doc + started),
                started.eq(1),
            ]
        with m.Elif(push):
            m.d.sync += [count.eq(count - 1), nonzero.eq(count != 1)]
        # The shadow register in chunks: one wide multiplexer would make Amaranth's netlist
        # checks quadratic in the width (32,000 queries: minutes).
        for lo in range(0, self.width, _CHUNK):
            hi = min(lo + _CHUNK, self.width)
            chunk = shadow[lo:hi]
            shifted = shadow[lo + 1:hi + 1] if hi < self.width else Cat(shadow[lo + 1:hi], 0)
            with m.If(self.capture):
                m.d.sync += chunk.eq(self.flags[lo:hi])
            with m.Elif(push):
                m.d.sync += chunk.eq(shifted)
        return m


def _id_width(width: int) -> int:
    return max(1, (width - 1).bit_length())


def sparse_layout(width: int) -> data.StructLayout:
    """One sparse readout beat for ``width`` readout bits (see :class:`xpfilt.readout.SparseBeat`)."""
    return data.StructLayout({"header": 1, "last": 1, "doc": DOC_WIDTH, "errors": ErrorFlags,
                              "id": unsigned(_id_width(width)),
                              "count": unsigned(width.bit_length())})


def readout_layout(kind: ReadoutKind, width: int):
    """The readout port's payload for ``kind``."""
    return ReadoutLayout if kind is ReadoutKind.SERIAL else sparse_layout(width)


def make_readout(kind: ReadoutKind, width: int):
    """The readout component for ``kind`` (same ports but the payload of ``out``)."""
    return Readout(width) if kind is ReadoutKind.SERIAL else SparseReadout(width)


def _tree_or(values):
    """OR of ``values`` as a balanced tree."""
    values = list(values)
    while len(values) > 1:
        values = [reduce(or_, values[i:i + 4]) for i in range(0, len(values), 4)]
    return values[0]


def _lowest(value: Signal) -> Signal:
    """The lowest set bit of ``value`` (one-hot, or 0)."""
    return (value & (~value + 1))[:len(value)]


def _encode(onehot, width: int):
    """The index of the set bit of a one-hot value (``width`` bits; 0 when none)."""
    n = len(onehot)
    return Cat(*(_tree_or([onehot[k] for k in range(n) if k >> b & 1] or [Const(0, 1)])
                 for b in range(width)))


class SparseReadout(wiring.Component):
    """Ports as :class:`Readout`, but ``out`` carries :func:`sparse_layout` beats: a header,
    then the position of every set flag in increasing order, ``last`` on the final beat.

    Registers: the shadow in chunks of ``C`` bits with a ``nonempty`` bit per chunk; stage 1
    selects the lowest non-empty chunk (one-hot ``sel``, issued only while the queue has room);
    stage 2 ORs the selected chunk out of the shadow into a :data:`SPARSE_QUEUE`-entry FIFO;
    the bit stage emits the lowest set bit of its current chunk per transfer and takes the next
    chunk from the FIFO as it sends its last bit. ``busy`` until every id has been sent."""

    def __init__(self, width: int):
        if width < 1:
            raise ValueError(f"readout width must be at least 1, not {width!r}")
        self.width = width
        self.chunk = sparse_chunk(width)
        self.chunks = -(-width // self.chunk)
        super().__init__({
            "capture": In(1),
            "flags": In(width),
            "errors": In(ErrorFlags),
            "busy": Out(1),
            "out": Out(stream.Signature(sparse_layout(width))),
        })

    def elaborate(self, platform):
        m = Module()
        width, size, n = self.width, self.chunk, self.chunks
        index_bits = max(1, (n - 1).bit_length())
        bit_bits = size.bit_length() - 1
        flags = Cat(self.flags, Const(0, size * n - width))
        incoming = [flags[k * size:(k + 1) * size] for k in range(n)]

        shadow = [Signal(size, name=f"shadow_{k}") for k in range(n)]
        nonempty = Signal(n)
        header = Signal()          # the header beat waits
        doc = Signal(DOC_WIDTH)
        started = Signal()
        errors = Signal(ErrorFlags)
        count = Signal(width.bit_length())
        sel_valid = Signal()
        sel = Signal(n)
        m.submodules.queue = queue = SyncFIFO(width=size + index_bits, depth=SPARSE_QUEUE)
        cur = Signal(size)
        cur_index = Signal(index_bits)

        # stage 1: the lowest non-empty chunk, while the queue has room for what is in flight
        low_chunk = Signal(n)
        issue = Signal()
        m.d.comb += [low_chunk.eq(_lowest(nonempty)),
                     issue.eq((nonempty != 0) & (sel_valid + queue.level < SPARSE_QUEUE))]
        m.d.sync += sel_valid.eq(issue)
        with m.If(issue):
            m.d.sync += [sel.eq(low_chunk), nonempty.eq(nonempty & ~low_chunk)]
        # stage 2: fetch it into the queue
        picked = Signal(size)
        m.d.comb += [
            picked.eq(_tree_or([shadow[k] & sel[k].replicate(size) for k in range(n)])),
            queue.w_en.eq(sel_valid),
            queue.w_data.eq(Cat(picked, _encode(sel, index_bits))),
        ]
        # the bit stage
        low_bit = Signal(size)
        rest = Signal(size)
        m.d.comb += [low_bit.eq(_lowest(cur)), rest.eq(cur & ~low_bit)]
        more = Signal()            # chunks with set flags not yet in the bit stage
        m.d.comb += more.eq((nonempty != 0) | sel_valid | queue.r_rdy)
        # While the header waits no id has been sent, so every set flag is still in a chunk
        # somewhere in the scan: the header is the document's only beat when none is.
        header_last = ~more & (cur == 0)
        position = Cat(_encode(low_bit, bit_bits), cur_index) if bit_bits else cur_index
        payload = self.out.payload
        m.d.comb += [
            self.out.valid.eq(header | (cur != 0)),
            payload.header.eq(header),
            payload.last.eq(Mux(header, header_last, (rest == 0) & ~more)),
            payload.doc.eq(doc),
            payload.errors.eq(errors),
            payload.id.eq(Mux(header, 0, position)),
            payload.count.eq(Mux(header, 0, count + 1)),
            self.busy.eq(header | (nonempty != 0) | sel_valid | queue.r_rdy | (cur != 0)),
        ]
        transfer = self.out.valid & self.out.ready
        take_id = transfer & ~header
        with m.If(transfer & header):
            m.d.sync += header.eq(0)
        with m.If(take_id):
            m.d.sync += count.eq(count + 1)
        with m.If((cur == 0) | (take_id & (rest == 0))):
            m.d.comb += queue.r_en.eq(1)
            m.d.sync += [cur.eq(Mux(queue.r_rdy, queue.r_data[:size], 0)),
                         cur_index.eq(queue.r_data[size:])]
        with m.Elif(take_id):
            m.d.sync += cur.eq(rest)

        with m.If(self.capture):     # only when not busy: nothing above is active then
            m.d.sync += [
                nonempty.eq(Cat(*(chunk.any() for chunk in incoming))),
                header.eq(1),
                errors.eq(self.errors),
                doc.eq(doc + started),
                started.eq(1),
                count.eq(0),
            ]
            m.d.sync += [s.eq(chunk) for s, chunk in zip(shadow, incoming)]
        return m
