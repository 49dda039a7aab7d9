"""Register-level models of the two readouts (:class:`xpfilt.hdl.readout.Readout`,
:class:`xpfilt.hdl.readout.SparseReadout`). Each cycle the frame asks for :meth:`beat` (what ``out``
shows, from the registers) and ``busy``, then calls :meth:`step` with that cycle's ``capture``,
the captured flags and errors, and ``out.ready``."""

from __future__ import annotations

from typing import Optional, Union

from xpfilt.hwspec.readout import (
    DOC_WIDTH,
    SPARSE_FANIN,
    Beat,
    ReadoutKind,
    SparseBeat,
    sparse_levels,
    sparse_queue_depth,
    sparse_spread,
)

__all__ = ["SerialReadoutModel", "SparseReadoutModel", "make_readout_model"]

_DOC_MASK = (1 << DOC_WIDTH) - 1


class SerialReadoutModel:
    def __init__(self, width: int):
        self.width = width
        self.shadow = self.count = self.doc = self.started = self.errors = 0
        self.queue: list[tuple[int, int, int]] = []  # (bit, first, last), at most 2

    @property
    def busy(self) -> bool:
        return bool(self.count or self.queue)

    @property
    def queue_full(self) -> bool:
        return len(self.queue) == 2

    @property
    def holds_beats(self) -> bool:
        return bool(self.queue)

    def beat(self) -> Optional[Beat]:
        if not self.queue:
            return None
        return Beat(*self.queue[0], self.doc, self.errors)

    def step(self, capture: bool, flags: int, errors: int, out_ready: bool) -> None:
        queue = self.queue
        push = self.count and len(queue) < 2
        if queue and out_ready:
            queue.pop(0)
        if push:
            queue.append((self.shadow & 1, int(self.count == self.width), int(self.count == 1)))
            self.shadow >>= 1
            self.count -= 1
        if capture:
            self.shadow, self.count, self.errors = flags, self.width, errors
            self.doc = (self.doc + self.started) & _DOC_MASK
            self.started = 1


def _single(mask: int) -> bool:
    return mask != 0 and mask & (mask - 1) == 0


class _Iterator:
    """One level's iterator (:class:`xpfilt.hdl.readout.SparseReadout`): the node it walks
    (``cur``, the bits not yet emitted; ``low`` and ``last`` in the RTL are functions of it),
    the node's index ``pre`` and ``fin`` (the last node of its level in this document)."""

    __slots__ = ("cv", "cur", "pre", "fin")

    def __init__(self):
        self.cv = self.cur = self.pre = self.fin = 0


class SparseReadoutModel:
    """Level ``i`` of the tree (0 = leaves, ``R - 1`` = root) has an iterator; below the root,
    a fetch pipeline of ``R - 1 - i + S`` stages (``S``: the level's :func:`sparse_spread`)
    from the parent's iterator into a queue of ``R + 1 - i + S`` entries (credits) that feeds
    it. The root loads ``R`` cycles after a capture and writes the header into the output
    queue (:func:`sparse_queue_depth` words); the leaves' iterator writes a whole leaf a
    cycle. The read side (the read port's register, a register ``nxt``, then an iterator over
    the leaf's flags) sends one beat per transfer and keeps the document number and errors."""

    def __init__(self, width: int):
        self.width = width
        self.fanin = SPARSE_FANIN
        self.shift = SPARSE_FANIN.bit_length() - 1
        self.sizes = sparse_levels(width)
        self.R = R = len(self.sizes)
        self.masks: list[list[int]] = [[0] * n for n in self.sizes]  # per level, per node
        self.its = [_Iterator() for _ in range(R)]
        self.queues: list[list[tuple[int, int, int]]] = [[] for _ in range(R - 1)]
        spread = sparse_spread(width)
        self.pipes: list[list] = [[None] * (R - 1 - i + spread[i]) for i in range(R - 1)]
        self.credits = [0] + [R + 2 - i + spread[i - 1] for i in range(1, R)]  # queue i - 1 + pipe
        self.p = [0] * R  # the capture, 1..R cycles ago
        self.active = self.errors = 0
        # the output queue: words (header, fin, mask, index, errors) written, not yet read
        self.depth = sparse_queue_depth(width)
        self.mem: list[tuple[int, int, int, int, int]] = []
        self.room = True  # len(mem) < depth - 2 a cycle ago
        self.ahead: Optional[tuple[int, int, int, int, int]] = None  # the read port's register
        self.nxt: Optional[tuple[int, int, int, int, int]] = None  # the register after it
        # the read side's iterator: the word it sends (flags not yet sent), doc, count
        self.out: Optional[list[int]] = None  # [header, fin, mask, index]
        self.doc = self.started = self.out_errors = self.count = 0
        self.outq: list[SparseBeat] = []  # the port's 2-entry queue

    @property
    def busy(self) -> bool:
        return bool(self.active) or self.queue_full

    @property
    def queue_full(self) -> bool:
        return not self.room

    @property
    def holds_beats(self) -> bool:
        return (
            bool(self.mem)
            or self.ahead is not None
            or self.nxt is not None
            or self.out is not None
            or bool(self.outq)
        )

    def beat(self) -> Optional[SparseBeat]:
        return self.outq[0] if self.outq else None

    def _beat(self) -> SparseBeat:
        """The beat of the read side's iterator (``out`` holds a word)."""
        header, fin, mask, index = self.out
        if header:
            return SparseBeat(1, fin, self.doc, self.out_errors, 0, 0)
        low = mask & -mask
        return SparseBeat(
            0,
            int(fin and mask == low),
            self.doc,
            self.out_errors,
            (index << self.shift) | (low.bit_length() - 1),
            self.count,
        )

    def _load_masks(self, flags: int) -> None:
        f, shift = self.fanin, self.shift
        mask = (1 << f) - 1
        level = [flags >> (k << shift) & mask for k in range(self.sizes[0])]
        self.masks[0] = level
        for n in range(1, self.R):
            below = level
            level = [0] * self.sizes[n]
            for k, m in enumerate(below):
                if m:
                    level[k >> shift] |= 1 << (k & (f - 1))
            self.masks[n] = level

    def step(self, capture: bool, flags: int, errors: int, out_ready: bool) -> None:
        room = self.room  # a register: the queue's level a cycle ago
        self.room = len(self.mem) < self.depth - 2
        self._send(out_ready)  # reads the words written before this cycle
        if self.active:  # (a capture comes only when not busy)
            self._advance(room)
            self.p.pop()
            self.p.insert(0, 0)
        elif capture:  # p is all 0 while not busy
            self._load_masks(flags)
            self.errors = errors
            self.active = 1
            self.p[0] = 1

    def _send(self, out_ready: bool) -> None:
        """The read side: the port's 2-entry queue shows a beat, which moves on ``out_ready``;
        the iterator sends a beat into it while it has room, and takes ``nxt``'s
        word when it is free or sends its word's last beat; ``nxt`` takes the read port's word
        when it is free or taken; the queue is read when the read port's word is gone or
        moves."""
        out, nxt, ahead = self.out, self.nxt, self.ahead
        pop = out is not None and len(self.outq) != 2  # (room: a register)
        sent = self._beat() if pop else None
        if self.outq and out_ready:
            self.outq.pop(0)
        if sent is not None:
            self.outq.append(sent)
        done = out is not None and (out[0] or _single(out[2]))
        take = nxt is not None and (out is None or (pop and done))
        move = ahead is not None and (nxt is None or take)
        read = bool(self.mem) and (ahead is None or move)
        if take:
            header, fin, mask, index, errors = nxt
            self.out = [header, fin, mask, index]
            if header:
                self.doc = (self.doc + self.started) & _DOC_MASK
                self.started = 1
                self.out_errors = errors
                self.count = 0
            else:
                self.count += 1
        elif pop:
            if done:
                self.out = None
            else:
                out[2] &= out[2] - 1
                self.count += 1
        if move:
            self.nxt = ahead
        elif take:
            self.nxt = None
        if read:
            self.ahead = self.mem.pop(0)
        elif move:
            self.ahead = None

    def _advance(self, room: bool) -> None:
        R, shift, its, queues = self.R, self.shift, self.its, self.queues
        load = self.p[R - 1]
        adv = [it.cv and (room if i == 0 else self.credits[i] != 0) for i, it in enumerate(its)]
        # the leaves' iterator emits its whole node, the others one child per cycle
        whole = [i == 0 or it.cur & (it.cur - 1) == 0 for i, it in enumerate(its)]
        emits = []
        for i, it in enumerate(its):
            if adv[i]:
                low = it.cur & -it.cur
                emits.append(((it.pre << shift) | (low.bit_length() - 1), it.fin and it.cur == low))
            else:
                emits.append(None)
        r_en = [False] * R
        for i in range(R - 1):
            it = its[i]
            reload = not it.cv or (adv[i] and whole[i])
            r_en[i] = reload and bool(queues[i])
        # the output queue
        if load:
            root = self.masks[R - 1][0]
            self.mem.append((1, int(root == 0), 0, 0, self.errors))
            if not root:
                self.active = 0
        if adv[0]:
            leaf = its[0]
            self.mem.append((0, leaf.fin, leaf.cur, leaf.pre, self.errors))
            if leaf.fin:
                self.active = 0
        # the iterators
        for i, it in enumerate(its):
            if i == R - 1:
                if load:
                    root = self.masks[R - 1][0]
                    it.cv, it.cur, it.pre, it.fin = int(root != 0), root, 0, 1
                elif adv[i]:
                    if whole[i]:
                        it.cv = 0
                    else:
                        it.cur &= it.cur - 1
            elif not it.cv or (adv[i] and whole[i]):
                if r_en[i]:
                    it.cur, it.pre, it.fin = queues[i].pop(0)
                    it.cv = 1
                else:
                    it.cv = 0
            elif adv[i]:
                it.cur &= it.cur - 1
        # the fetch pipelines and credits
        for i in range(R - 1):
            pipe = self.pipes[i]
            out = pipe[-1]
            pipe[1:] = pipe[:-1]
            pipe[0] = emits[i + 1]
            if out is not None:
                node, fin = out
                queues[i].append((self.masks[i][node], node, fin))
            self.credits[i + 1] += int(r_en[i]) - int(adv[i + 1])


def make_readout_model(
    kind: ReadoutKind, width: int
) -> Union[SerialReadoutModel, SparseReadoutModel]:
    return SerialReadoutModel(width) if kind is ReadoutKind.SERIAL else SparseReadoutModel(width)
