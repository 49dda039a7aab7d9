"""Double-buffered match readouts: the paper's serial bitmap (§5.1) and a sparse list of ids.

At the end of a document the engine's match flags are captured into a shadow register and read
out while the next document streams in; the formats are described in :mod:`xpfilt.hwspec.readout`.

* :class:`Readout` shifts the flags out one bit per transfer (LSB = readout bit 0), through a
  2-entry queue (the first bit shows two cycles after the capture). Each beat says which
  document it belongs to (a wrapping sequence number from 0), whether it is the first or last
  bit, and carries the document's error flags.
* :class:`SparseReadout` sends a header beat, then the position of every set flag: a tree of
  registered 8-way priority encoders over the shadow register that skips empty subtrees, one
  level per pipeline stage (see the class), a non-empty leaf of 8 flags per cycle into a
  block-RAM queue that sends one id per cycle however dense the matches.
"""

from functools import reduce
from operator import or_
from types import SimpleNamespace

from amaranth.hdl import Array, Cat, Const, Module, Mux, Signal, Value, unsigned
from amaranth.lib import data, stream, wiring
from amaranth.lib.fifo import SyncFIFO
from amaranth.lib.memory import Memory
from amaranth.lib.wiring import In, Out

from xpfilt.hdl.cluster import copy_register, distribute
from xpfilt.hdl.frontend import ErrorFlags
from xpfilt.hwspec.contract import EVENT_FANOUT, index_width
from xpfilt.hwspec.readout import (
    DOC_WIDTH,
    SPARSE_FANIN,
    SPARSE_GROUPS_PER_COPY,
    SPARSE_QUEUE_BANK_WORDS,
    SPARSE_QUEUE_LUT_RAM_WORDS,
    ReadoutKind,
    sparse_levels,
    sparse_queue_depth,
    sparse_spread,
)

__all__ = [
    "ReadoutLayout",
    "Readout",
    "SparseReadout",
    "sparse_layout",
    "readout_layout",
    "make_readout",
    "DOC_WIDTH",
]

_CHUNK = 64


class ReadoutLayout(data.Struct):
    """One readout beat."""

    bit: 1
    first: 1
    last: 1
    doc: DOC_WIDTH
    errors: ErrorFlags


def _ports(width: int, segments, payload) -> dict:
    """The ports both readouts share (see :class:`Readout`)."""
    if width < 1:
        raise ValueError(f"readout width must be at least 1, not {width!r}")
    if segments is not None and sum(segments) != width:
        raise ValueError(
            f"readout segments must add up to the width {width}, not {sum(segments)!r}"
        )
    ports = {
        "capture": In(1),
        "flags": In(width),
        "errors": In(ErrorFlags),
        "busy": Out(1),
        "out": Out(stream.Signature(payload)),
    }
    if segments is not None:
        ports["load"] = In(len(segments))
    return ports


def _load_shadow(m: Module, readout, shadow, lo: int) -> None:
    """``shadow`` (readout bits ``lo`` on) loads the flags: all of it on ``capture``, or with
    segments, the bits of segment ``i`` on ``load[i]``. Placed after the shadow's other
    assignments, so that a load wins."""
    spans = [(readout.capture, 0, readout.width)]
    if readout.segments is not None:
        starts = [sum(readout.segments[:i]) for i in range(len(readout.segments))]
        spans = [
            (readout.load[i], a, a + n) for i, (a, n) in enumerate(zip(starts, readout.segments))
        ]
    hi = min(lo + len(shadow), readout.width)
    for enable, a, b in spans:
        a, b = max(a, lo), min(b, hi)
        if a < b:
            with m.If(enable):
                m.d.sync += shadow[a - lo : b - lo].eq(readout.flags[a:b])


class Readout(wiring.Component):
    """Ports: ``capture`` + ``flags`` + ``errors`` (load the shadow; only when not ``busy``),
    ``busy`` (the shadow still holds bits), ``out`` (a stream of :class:`ReadoutLayout`).

    ``segments`` (readout bits per segment, e.g. per cluster): the shadow bits of segment ``i``
    load on ``load[i]`` instead of ``capture`` (the engine raises every ``load`` bit with
    ``capture``, each from its own register, so that no one net enables the whole shadow)."""

    def __init__(self, width: int, segments=None):
        self.width = width
        self.segments = None if segments is None else tuple(segments)
        super().__init__(_ports(width, self.segments, ReadoutLayout))

    def elaborate(self, platform):
        m = Module()
        count = Signal(range(self.width + 1))  # bits still in the shadow
        nonzero = Signal()  # count != 0, as a register
        one_left = Signal()  # count == 1, as a register
        doc = Signal(DOC_WIDTH)
        errors = Signal(ErrorFlags)
        started = Signal()  # a document has been captured (doc numbers start at 0)
        # A 2-entry queue of (bit, first, last) between the shadow and ``out``: the shadow
        # shifts whenever the queue has room (registers only), so ``out.ready`` never reaches
        # the whole shadow's shift enable.
        entry = data.StructLayout({"bit": 1, "first": 1, "last": 1})
        head = Signal(entry)
        second = Signal(entry)
        level = Signal(range(3))
        room = Signal(init=1)  # level != 2, a register (as the sparse readout's)
        push = Signal()  # nonzero & room, as a register of its own (below)
        pop = Signal()
        new = Signal(entry)
        # ``push`` and the shadow's ``turn`` come from registers set a cycle ahead from the
        # next values of their terms (the same signals): the shadow's first chunk loads on
        # them, and as LUTs (nonzero & room & at_end) they were the routed critical path of
        # 1 x 128 with 8 slots (106.1 MHz router2, RTL 92fbdf750e77, 8.17 of 9.43 ns routing).
        # ``one_left`` (count == 1) likewise: as a compare of ``count``, count -> push was the
        # routed critical path of 1,024 queries with 2 predicates each (8.02 ns, seed 2,
        # router1, clk on G2, RTL af9a0464f50f).
        room_next, nonzero_next, push_next = Signal(), Signal(), Signal()
        m.d.comb += [
            room_next.eq(level + push - pop != 2),
            nonzero_next.eq(Mux(self.capture, 1, Mux(push, ~one_left, nonzero))),
            push_next.eq(room_next & nonzero_next),
        ]
        m.d.sync += [room.eq(room_next), nonzero.eq(nonzero_next), push.eq(push_next)]

        m.d.comb += [
            self.busy.eq(nonzero | (level != 0)),
            self.out.valid.eq(level != 0),
            self.out.payload.bit.eq(head.bit),
            self.out.payload.first.eq(head.first),
            self.out.payload.last.eq(head.last),
            self.out.payload.doc.eq(doc),
            self.out.payload.errors.eq(errors),
            pop.eq(self.out.valid & self.out.ready),
            new.first.eq(count == self.width),
            new.last.eq(one_left),
        ]
        _two_entry_queue(m, level, head, second, new, push, pop)

        with m.If(self.capture):
            m.d.sync += [
                count.eq(self.width),
                one_left.eq(self.width == 1),
                errors.eq(self.errors),
                doc.eq(doc + started),
                started.eq(1),
            ]
        with m.Elif(push):
            m.d.sync += [count.eq(count - 1), one_left.eq(count == 2)]
        # The shadow register in chunks of _CHUNK bits, each loaded from the flags only (its
        # flip-flops' enable: no LUT per bit). Only ``cur`` (chunk 0) shifts a bit per push; as
        # its last bit goes, it loads ``following``: chunk ``c`` (the next one to read), fetched
        # through a registered multiplexer tree (:func:`_fetch_chunk`) in the _CHUNK pushes
        # before. A tree costs ~1/3 LUT per shadow bit; a chain that moved every chunk down one
        # (before) took a LUT per bit: 1,026 of the 1,121 LUT6-eq of a 1,024-bit readout.
        n = -(-self.width // _CHUNK)
        chunks = [
            Signal(min(_CHUNK, self.width - k * _CHUNK), name=f"shadow_{k}") for k in range(n)
        ]
        cur = chunks[0]
        m.d.comb += new.bit.eq(cur[0])
        with m.If(push):  # never while a capture loads (not busy)
            m.d.sync += cur.eq(cur[1:])
        if n > 1:
            pos = Signal(range(_CHUNK))  # bits of ``cur``'s chunk pushed so far
            at_end = Signal()  # pos == _CHUNK - 1, a register
            turn = Signal()  # push & at_end, a register
            at_end_next = Signal()
            m.d.comb += at_end_next.eq(~self.capture & Mux(push, pos == _CHUNK - 2, at_end))
            m.d.sync += [at_end.eq(at_end_next), turn.eq(push_next & at_end_next)]
            c = Signal(range(1, n + 1), init=1)  # the chunk ``cur`` loads at the next turn
            following = _fetch_chunk(m, chunks[1:], c - 1)
            with m.If(self.capture):
                m.d.sync += [pos.eq(0), c.eq(1)]
            with m.Else():
                with m.If(push):
                    m.d.sync += pos.eq(pos + 1)
                with m.If(turn):
                    m.d.sync += [cur.eq(following), c.eq(c + 1)]
        for k, chunk in enumerate(chunks):
            _load_shadow(m, self, chunk, k * _CHUNK)
        return m


#: Inputs per multiplexer of :func:`_fetch_chunk`'s tree (4:1 with its 2 select bits: one LUT6
#: per bit on Xilinx, where an 8:1 took three).
_FETCH_FANIN = 4


def _fetch_chunk(m: Module, chunks, index):
    """Chunk ``index`` of ``chunks`` (zero-extended to :data:`_CHUNK` bits) in a register, valid
    a cycle per level of a tree of registered :data:`_FETCH_FANIN`:1 multiplexers (and one)
    after ``index`` and the chunks last changed; each multiplexer selects with a registered
    copy of its digit of ``index``, delayed to its level. (The serial readout reads it at least
    _CHUNK cycles after either changes.)"""
    bits = (_FETCH_FANIN - 1).bit_length()
    level, delayed, depth = list(chunks), index, 0
    while len(level) > 1 or depth == 0:
        later = Signal(len(index), name=f"fetch_index_{depth}")
        m.d.sync += later.eq(delayed)
        delayed = later
        groups = [level[g : g + _FETCH_FANIN] for g in range(0, len(level), _FETCH_FANIN)]
        picked = []
        for g, group in enumerate(groups):
            select = Signal(bits, name=f"fetch_select_{depth}_{g}")  # a copy per multiplexer
            m.d.sync += select.eq(delayed[bits * depth : bits * depth + bits])
            out = Signal(_CHUNK, name=f"fetch_{depth}_{g}")
            m.d.sync += out.eq(Array(group)[select] if len(group) > 1 else group[0])
            picked.append(out)
        level, depth = picked, depth + 1
    return level[0]


def _queue_memory(m: Module, word, depth: int, *, push, wp, data, reading, rp) -> Value:
    """The sparse readout's output queue memory: ``data`` written at ``wp`` on ``push``, the
    word at ``rp`` read on ``reading`` into a register (the value returned, as a read port's
    ``data``). Block RAM above :data:`SPARSE_QUEUE_LUT_RAM_WORDS` words; LUT RAM up to it, in
    banks of :data:`SPARSE_QUEUE_BANK_WORDS` words, each read into its own register, the
    word chosen among those registers by the read's bank, registered with them (the same
    value, with a bank's multiplexer before the registers instead of the whole memory's)."""
    style = "distributed" if depth <= SPARSE_QUEUE_LUT_RAM_WORDS else "block"
    banks = max(1, depth // SPARSE_QUEUE_BANK_WORDS) if style == "distributed" else 1
    words = depth // banks
    low = (words - 1).bit_length()
    outs = []
    for b in range(banks):
        mem = Memory(shape=word, depth=words, init=[], attrs={"ram_style": style})
        m.submodules[f"out_queue_{b}" if banks > 1 else "out_queue"] = mem
        write, read = mem.write_port(), mem.read_port()
        here = wp[low:] == b if banks > 1 else 1
        m.d.comb += [
            write.en.eq(push & here),
            write.addr.eq(wp[:low]),
            write.data.eq(data),
            read.en.eq(reading),
            read.addr.eq(rp[:low]),
        ]
        outs.append(read.data.as_value())
    if banks == 1:
        return outs[0]
    bank = Signal(range(banks))  # the bank of the word read last
    with m.If(reading):
        m.d.sync += bank.eq(rp[low:])
    return Array(outs)[bank]


def _two_entry_queue(m: Module, level, head, second, new, push, pop) -> None:
    """The output queue both readouts end in: ``level`` (0-2) entries, ``head`` shown first;
    ``push`` adds ``new`` and ``pop`` removes ``head`` in the same cycle if both are set (never
    ``push`` at ``level`` 2). Only ``level`` depends on ``push``: ``head`` loads whenever it is
    free or leaving (from ``second`` if that holds an entry, else ``new``) and ``second`` loads
    ``new`` whenever it is free; an entry loaded without a push lies beyond ``level`` and is
    never shown. So the registers' enables do not wait for the logic that decides a push."""
    m.d.sync += level.eq(level + push - pop)
    with m.If((level == 0) | pop):
        m.d.sync += head.eq(Mux(level == 2, second, new))
    with m.If(level != 2):
        m.d.sync += second.eq(new)


def sparse_layout(width: int) -> data.StructLayout:
    """One sparse readout beat for ``width`` readout bits (see :class:`xpfilt.hwspec.readout.SparseBeat`)."""
    return data.StructLayout(
        {
            "header": 1,
            "last": 1,
            "doc": DOC_WIDTH,
            "errors": ErrorFlags,
            "id": unsigned(index_width(width)),
            "count": unsigned(width.bit_length()),
        }
    )


def readout_layout(kind: ReadoutKind, width: int):
    """The readout port's payload for ``kind``."""
    return ReadoutLayout if kind is ReadoutKind.SERIAL else sparse_layout(width)


def make_readout(kind: ReadoutKind, width: int, segments=None):
    """The readout component for ``kind`` (same ports but the payload of ``out``)."""
    return (Readout if kind is ReadoutKind.SERIAL else SparseReadout)(width, segments)


def _seen(value):
    """Per bit of ``value``: is any lower bit set (a prefix OR, no carry chain)."""
    bits = [value[k] for k in range(len(value))]
    seen, out = Const(0, 1), []
    for bit in bits:
        out.append(seen)
        seen = seen | bit
    return Cat(*out)


def _lowest(value):
    """The lowest set bit of ``value`` (one-hot, or 0)."""
    return value & ~_seen(value)


def _single(value):
    """``value`` has exactly one bit set."""
    return value.any() & ~(value & _seen(value)).any()


def _encode(onehot, width: int):
    """The index of the set bit of a one-hot value (``width`` bits; 0 when none)."""
    n = len(onehot)
    return Cat(*(_any([onehot[k] for k in range(n) if k >> b & 1]) for b in range(width)))


def _any(values):
    values = list(values)
    return Cat(*values).any() if values else Const(0, 1)


def _select(onehot, entries):
    """OR over ``entries`` (equal widths) of those whose ``onehot`` bit is set."""
    return reduce(or_, (entry & onehot[j].replicate(len(entry)) for j, entry in enumerate(entries)))


class SparseReadout(wiring.Component):
    """Ports as :class:`Readout`, but ``out`` carries :func:`sparse_layout` beats: a header,
    then the position of every set flag in increasing order, ``last`` on the final beat.

    The captured flags are the leaves of a tree of :data:`SPARSE_FANIN`-way nodes
    (:func:`xpfilt.hwspec.readout.sparse_levels`; level 0 = leaves of ``F`` flags, ``R - 1`` = the
    root); a node's mask says which of its children are non-empty (summary registers, level
    ``n`` from level ``n - 1`` one cycle later, settled ``R`` cycles after the capture). Each
    level has an *iterator* holding one node's mask: per transfer it emits its lowest set bit
    (registered one-hot ``low``, ``last`` = one bit left) and clears it. Below the root, the
    emitted child's mask is fetched by a pipeline of ``R - 1 - i`` registered ``F``-way AND-OR
    stages (the child's position in its parent, then the parent's in its parent, ...) into a
    small FIFO the level's iterator loads from; the parent issues only while it has a credit
    (FIFO entries + fetches in flight <= ``R + 1 - i + S``, enough for one child per cycle).
    Where the first stage has many groups (wide readouts), the parent's one-hot select reaches
    them through ``S`` = :func:`xpfilt.hwspec.readout.sparse_spread` registers (a distribution tree to
    one registered copy per :data:`xpfilt.hwspec.readout.SPARSE_GROUPS_PER_COPY` groups), the fetch's
    other fields through ``S`` plain registers. The
    leaves' iterator writes a whole leaf (its ``F`` flags and index) a cycle into the output
    queue of :func:`xpfilt.hwspec.readout.sparse_queue_depth` words (LUT RAM up to
    :data:`xpfilt.hwspec.readout.SPARSE_QUEUE_LUT_RAM_WORDS`, block RAM above; the root's load
    writes the header word, with the errors); its read side reads words ahead into the read
    port's register and a register behind it, and sends a word's ids one per transfer, numbering the documents itself.
    Every cycle's logic looks at one node's ``F`` bits, a few registers and one ``F``-way
    AND-OR, whatever the width. ``busy`` from the capture until the document's last word is
    written (the flags are then free for the next capture, while the queue still sends), and
    while the queue is full (its room, ``level < depth - 2`` a cycle ago, is a register).
    ``segments``: as :class:`Readout`'s."""

    def __init__(self, width: int, segments=None):
        self.width = width
        self.segments = None if segments is None else tuple(segments)
        self.fanin = SPARSE_FANIN
        self.sizes = sparse_levels(width)
        self.spread = sparse_spread(width)
        super().__init__(_ports(width, self.segments, sparse_layout(width)))

    def _pre_width(self, i: int) -> int:
        """The width of iterator ``i``'s ``pre`` (its node's position among its level's)."""
        return max(1, (self.fanin.bit_length() - 1) * (len(self.sizes) - 1 - i))

    def elaborate(self, platform):
        m = Module()
        errors = Signal(ErrorFlags)
        active = Signal()
        masks = self._masks(m)
        control = self._control(m, masks)
        queue = self._output_queue(m)
        its, queues = self._iterators(m, control, queue.room)
        for i in range(len(self.sizes) - 1):
            self._fetch(m, i, its[i + 1], masks[i], queues)
        self._write_side(m, its[0], control, queue, errors, active)
        beat = self._read_side(m, queue)
        self._port(m, beat)
        return m

    def _masks(self, m) -> list:
        """The nodes' masks, level by level (``masks[n][k]``: node k of level n, ``F`` bits):
        level 0, the shadow (captured flags, zero-padded), in chunks; levels above: summary
        registers (level ``n`` from level ``n - 1`` one cycle later)."""
        f, sizes = self.fanin, self.sizes
        shadow = Signal(sizes[0] * f)  # bits beyond ``width`` stay 0
        _load_shadow(m, self, shadow, 0)
        masks = [[shadow[k * f : (k + 1) * f] for k in range(sizes[0])]]
        for n in range(1, len(sizes)):
            summary = Signal(sizes[n] * f, name=f"summary_{n}")
            m.d.sync += summary.eq(Cat(*(mask.any() for mask in masks[-1])))
            masks.append([summary[k * f : (k + 1) * f] for k in range(sizes[n])])
        return masks

    def _control(self, m, masks) -> SimpleNamespace:
        """The control (``active``, ``doc``, ``count``, the root's load) takes the capture from
        a register of its own, ``captured`` (the capture was a cycle ago), so that the engine's
        capture decision drives one load here; ``busy`` covers that cycle. ``load``: the root
        loads, R cycles after the capture; ``root``: its mask."""
        R = len(self.sizes)
        captured = Signal()
        m.d.sync += captured.eq(self.capture)
        # p[k]: the capture was k + 2 cycles ago; the root loads R cycles after it
        p = Signal(max(1, R - 1))
        m.d.sync += p.eq(Cat(captured, p[:-1]))
        load = p[R - 2] if R > 1 else captured
        root = masks[R - 1][0]
        return SimpleNamespace(captured=captured, load=load, root=root)

    def _output_queue(self, m) -> SimpleNamespace:
        """The output queue (LUT RAM up to SPARSE_QUEUE_LUT_RAM_WORDS words, block RAM above):
        words of a header or a whole leaf (``word``), written (``push``, ``new``) by the root's
        load and the leaves' iterator, read (``reading``) a word ahead into the read port's
        register (``read_data``; a leaf's lowest flag and whether it is single travel with
        it, from the iterator's registers, so that the read side takes a word without logic
        after the memory). ``room``: level < depth - 2 a cycle ago (a register of registers:
        a word may have been written since), so the leaves' iterator's enables wait neither
        for a decode of ``level`` nor for this cycle's push; ``filled``: level != 0, a
        register."""
        f = self.fanin
        word = data.StructLayout(
            {
                "header": 1,
                "fin": 1,
                "mask": f,
                "low": f,
                "cl": 1,
                "index": self._pre_width(0),
                "errors": ErrorFlags,
            }
        )
        depth = sparse_queue_depth(self.width)
        push = Signal()
        new = Signal(word)
        wp = Signal(range(depth))
        rp = Signal(range(depth))
        level = Signal(range(depth + 1))  # words written and not yet read
        room = Signal(init=1)
        filled = Signal()  # level != 0, a register
        reading = Signal()
        read_data = _queue_memory(
            m, word, depth, push=push, wp=wp, data=new, reading=reading, rp=rp
        )
        # ``filled`` next without the level's adder (off the read side's decision): the level
        # ends at 0 only without a push, from 0, or from 1 with a read (a read needs a word)
        m.d.sync += [
            wp.eq(wp + push),
            rp.eq(rp + reading),
            level.eq(level + push - reading),
            room.eq(level < depth - 2),
            filled.eq(push | (filled & ~(reading & (level == 1)))),
        ]
        return SimpleNamespace(
            word=word,
            push=push,
            new=new,
            room=room,
            filled=filled,
            reading=reading,
            read_data=read_data,
        )

    def _iterators(self, m, control, room):
        """The iterators, root first in the text, leaves first in the list: per level one
        node's mask (``cur``, its lowest bit ``low`` one-hot, ``cl``: one bit left, ``cv``:
        it holds a node, ``pre``: the node's position, ``fin``: the document's last node on
        its level, ``adv``: it emits this cycle); below the root each loads from its FIFO
        (``queues[i]``, with ``layout`` and ``credits``, those of the parent). Returns (the
        iterators, SimpleNamespace(fifo, layout, credits))."""
        f, spread = self.fanin, self.spread
        R = len(self.sizes)
        its = []
        for i in range(R):
            it = {
                "cur": Signal(f, name=f"cur_{i}"),
                "low": Signal(f, name=f"low_{i}"),
                "cv": Signal(name=f"cv_{i}"),
                "cl": Signal(name=f"cl_{i}"),
                "pre": Signal(self._pre_width(i), name=f"pre_{i}"),
                "fin": Signal(name=f"fin_{i}"),
                "adv": Signal(name=f"adv_{i}"),
            }
            its.append(it)
        queue_layout = [None] * R
        queues = [None] * R
        credits = [None] * R
        for i in range(R - 1):
            depth = R + 1 - i + spread[i]
            queue_layout[i] = data.StructLayout(
                {"cur": f, "low": f, "cl": 1, "pre": self._pre_width(i), "fin": 1}
            )
            queues[i] = SyncFIFO(width=queue_layout[i].size, depth=depth)
            m.submodules[f"queue_{i}"] = queues[i]
        for i in range(1, R):
            credits[i] = Signal(
                range(R + 3 - i + spread[i - 1]),
                init=R + 2 - i + spread[i - 1],
                name=f"credits_{i}",
            )

        for i, it in enumerate(its):
            ok = room if i == 0 else (credits[i] != 0)
            m.d.comb += it["adv"].eq(it["cv"] & ok)
            # the leaves' iterator emits its whole node, the others their lowest child
            done = it["adv"] if i == 0 else it["adv"] & it["cl"]
            rest = it["cur"] & ~it["low"]
            with m.If(it["adv"]):
                m.d.sync += [
                    it["cur"].eq(rest),
                    it["low"].eq(_lowest(rest)),
                    it["cl"].eq(_single(rest)),
                ]
            if i == R - 1:
                root = control.root
                with m.If(control.load):
                    m.d.sync += [
                        it["cur"].eq(root),
                        it["low"].eq(_lowest(root)),
                        it["cl"].eq(_single(root)),
                        it["cv"].eq(root.any()),
                        it["pre"].eq(0),
                        it["fin"].eq(1),
                    ]
                with m.Elif(done):
                    m.d.sync += it["cv"].eq(0)
            else:
                queue = queues[i]
                head_entry = Signal(queue_layout[i], name=f"head_{i}")
                m.d.comb += head_entry.eq(queue.r_data)
                with m.If(~it["cv"] | done):
                    m.d.comb += queue.r_en.eq(1)
                    m.d.sync += it["cv"].eq(queue.r_rdy)
                    m.d.sync += [
                        it[k].eq(head_entry[k]) for k in ("cur", "low", "cl", "pre", "fin")
                    ]
        return its, SimpleNamespace(fifo=queues, layout=queue_layout, credits=credits)

    def _fetch(self, m, i, parent, level_masks, queues) -> None:
        """The fetch pipeline of level ``i``: iterator i + 1 (``parent``) emits a child of its
        node; R - 1 - i stages select the child's mask among level i's nodes
        (``level_masks``), then it enters queue i."""
        f, sizes, spread = self.fanin, self.sizes, self.spread
        R = len(sizes)
        dbits = f.bit_length() - 1
        queue_layout, credits = queues.layout, queues.credits
        queues = queues.fifo
        stages = R - 1 - i
        array = level_masks + [Const(0, f)] * (sizes[i + 1] * f - sizes[i])
        valid = parent["adv"]
        node = Cat(_encode(parent["low"], dbits), parent["pre"])[: dbits * stages]
        fin = parent["fin"] & parent["cl"]
        selects = [parent["low"]]
        if spread[i]:
            # The copies of ``copy_register``'s forms 1-3 load from the 1st-3rd cycle after
            # reset on; a fetch comes R >= 4 cycles after a capture at the earliest.
            copies = -(-sizes[i + 1] // SPARSE_GROUPS_PER_COPY)
            tree = distribute(m, parent["low"], copies, name=f"select_{i}")
            selects = [
                copy_register(m, tree[c], c % EVENT_FANOUT, name=f"select_{i}_{c}")
                for c in range(copies)
            ]
            for k in range(spread[i]):
                regs = (
                    Signal(name=f"spread_{i}_{k}_valid"),
                    Signal(len(node), name=f"spread_{i}_{k}_node"),
                    Signal(name=f"spread_{i}_{k}_fin"),
                )
                m.d.sync += [r.eq(v) for r, v in zip(regs, (valid, node, fin))]
                valid, node, fin = regs
        for s in range(stages):
            n = -(-len(array) // f)  # groups, each spread evenly over the selects
            groups = [
                _select(selects[g * len(selects) // n], array[g * f : (g + 1) * f])
                for g in range(n)
            ]
            reg_array = [Signal(f, name=f"fetch_{i}_{s}_{g}") for g in range(len(groups))]
            reg_valid = Signal(name=f"fetch_{i}_{s}_valid")
            reg_node = Signal(len(node), name=f"fetch_{i}_{s}_node")
            reg_fin = Signal(name=f"fetch_{i}_{s}_fin")
            m.d.sync += [r.eq(g) for r, g in zip(reg_array, groups)]
            m.d.sync += [reg_valid.eq(valid), reg_node.eq(node), reg_fin.eq(fin)]
            if s + 1 < stages:
                # the next stage's select, decoded here and registered: one copy per
                # SPARSE_GROUPS_PER_COPY of its groups (at most EVENT_FANOUT, in
                # copy_register's forms so that synthesis keeps them apart)
                digit = node[dbits * (s + 1) : dbits * (s + 2)]
                onehot = Cat(*(digit == j for j in range(f)))
                groups_next = -(-len(reg_array) // f)
                copies = min(EVENT_FANOUT, -(-groups_next // SPARSE_GROUPS_PER_COPY))
                selects = [
                    copy_register(m, onehot, c, name=f"fetch_{i}_{s}_select_{c}")
                    for c in range(copies)
                ]
            array, valid, node, fin = reg_array, reg_valid, reg_node, reg_fin
            if s + 1 < stages:
                array = array + [Const(0, f)] * (-(-len(array) // f) * f - len(array))
        mask = array[0]
        written = Signal(queue_layout[i], name=f"write_{i}")
        m.d.comb += [
            written.cur.eq(mask),
            written.low.eq(_lowest(mask)),
            written.cl.eq(_single(mask)),
            written.pre.eq(node),
            written.fin.eq(fin),
            queues[i].w_en.eq(valid),
            queues[i].w_data.eq(written),
        ]
        m.d.sync += credits[i + 1].eq(
            credits[i + 1] - parent["adv"] + (queues[i].r_en & queues[i].r_rdy)
        )

    def _write_side(self, m, leaf, control, queue, errors, active) -> None:
        """The root's load writes the header, the leaves' iterator (``leaf``) a whole leaf;
        ``busy`` ends with the document's last word (the flags are free for the next capture),
        and lasts while the queue has no room (the next document's header must fit)."""
        push, new, load, captured = queue.push, queue.new, control.load, control.captured
        m.d.comb += [push.eq(load | leaf["adv"]), new.errors.eq(errors)]
        with m.If(load):
            m.d.comb += [new.header.eq(1), new.fin.eq(~control.root.any())]
        with m.Else():
            m.d.comb += [
                new.fin.eq(leaf["fin"]),
                new.mask.eq(leaf["cur"]),
                new.low.eq(leaf["low"]),
                new.cl.eq(leaf["cl"]),
                new.index.eq(leaf["pre"]),
            ]
        with m.If(self.capture):  # ``errors`` is valid with the capture only
            m.d.sync += errors.eq(self.errors)
        with m.If(captured):  # only when not busy: nothing above is active then
            m.d.sync += active.eq(1)
        with m.If(push & new.fin):  # (with one level, the load comes with ``captured``)
            m.d.sync += active.eq(0)
        m.d.comb += self.busy.eq(active | captured | ~queue.room)

    def _read_side(self, m, queue) -> SimpleNamespace:
        """The read side: ``ahead`` (the read port's register holds a word) feeds ``nxt``, a
        register loaded from the block RAM without logic (its output, unregistered in the ECP5
        flow, takes ~5.8 ns), which feeds an iterator over the word's flags, one beat per cycle
        into the port's 2-entry queue while it has room (``room2``); it numbers the documents
        and keeps their errors and id count. Returns the beat (``beat``, its ``pop`` into the
        port's queue, ``room2``)."""
        f = self.fanin
        dbits = f.bit_length() - 1
        reading, read_data = queue.reading, queue.read_data
        ahead = Signal()
        nxt = Signal(queue.word)
        held = Signal()  # ``nxt`` holds a word
        move = Signal()  # the read port's word goes to ``nxt``
        shown = Signal()
        o = {
            "header": Signal(name="out_header"),
            "fin": Signal(name="out_fin"),
            "mask": Signal(f, name="out_mask"),
            "low": Signal(f, name="out_low"),
            "cl": Signal(name="out_cl"),
            "index": Signal(self._pre_width(0), name="out_index"),
        }
        doc = Signal(DOC_WIDTH)
        started = Signal()
        out_errors = Signal(ErrorFlags)
        count = Signal(self.width.bit_length())
        pop = Signal()
        take = Signal()
        ends = o["header"] | o["cl"]  # the word's last beat
        room2 = Signal(init=1)  # the port's 2-entry queue has room, a register
        port_pop = Signal()
        m.d.comb += [
            pop.eq(shown & room2),
            take.eq(held & (~shown | (pop & ends))),
            move.eq(ahead & (~held | take)),
            reading.eq(queue.filled & (~ahead | move)),
        ]
        m.d.sync += [ahead.eq(reading | (ahead & ~move)), held.eq(move | (held & ~take))]
        with m.If(move):
            m.d.sync += nxt.eq(read_data)
        rest = o["mask"] & ~o["low"]
        with m.If(take):
            m.d.sync += [
                shown.eq(1),
                o["header"].eq(nxt.header),
                o["fin"].eq(nxt.fin),
                o["mask"].eq(nxt.mask),
                o["low"].eq(nxt.low),
                o["cl"].eq(nxt.cl),
                o["index"].eq(nxt.index),
            ]
            with m.If(nxt.header):
                m.d.sync += [
                    doc.eq(doc + started),
                    started.eq(1),
                    out_errors.eq(nxt.errors),
                    count.eq(0),
                ]
            with m.Else():
                m.d.sync += count.eq(count + 1)
        with m.Elif(pop):
            with m.If(ends):
                m.d.sync += shown.eq(0)
            with m.Else():
                m.d.sync += [
                    o["mask"].eq(rest),
                    o["low"].eq(_lowest(rest)),
                    o["cl"].eq(_single(rest)),
                    count.eq(count + 1),
                ]
        beat = Signal(self.out.payload.shape())
        m.d.comb += [
            beat.header.eq(o["header"]),
            beat.last.eq(o["fin"] & ends),
            beat.doc.eq(doc),
            beat.errors.eq(out_errors),
            beat.id.eq(Cat(_encode(o["low"], dbits), o["index"])[: index_width(self.width)]),
            beat.count.eq(count),
        ]
        return SimpleNamespace(beat=beat, pop=pop, port_pop=port_pop, room2=room2)

    def _port(self, m, read) -> None:
        """The read side's beat goes into a 2-entry queue before the port (as the serial
        readout's), so ``out.ready`` reaches only the queue's level, not the read side."""
        beat, pop, port_pop = read.beat, read.pop, read.port_pop
        head = Signal(beat.shape())
        second = Signal(beat.shape())
        level2 = Signal(range(3))
        m.d.sync += read.room2.eq(level2 + pop - port_pop != 2)
        m.d.comb += [
            port_pop.eq((level2 != 0) & self.out.ready),
            self.out.valid.eq(level2 != 0),
            self.out.payload.eq(head),
        ]
        _two_entry_queue(m, level2, head, second, beat, pop, port_pop)
