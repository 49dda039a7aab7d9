"""Register-level models of the two readouts (:class:`xpfilt.hdl.readout.Readout`,
:class:`xpfilt.hdl.readout.SparseReadout`). Each cycle the frame asks for :meth:`beat` (what ``out``
shows, from the registers) and ``busy``, then calls :meth:`step` with that cycle's ``capture``,
the captured flags and errors, and ``out.ready``."""

from __future__ import annotations

from typing import Optional, Union

from ..readout import (DOC_WIDTH, SPARSE_FANIN, Beat, ReadoutKind, SparseBeat,
                       sparse_levels, sparse_spread)

__all__ = ["SerialReadoutModel", "SparseReadoutModel", "make_readout_model"]

_DOC_MASK = (1 << DOC_WIDTH) - 1


class SerialReadoutModel:
    def __init__(self, width: int):
        self.width = width
        self.shadow = self.count = self.doc = self.started = self.errors = 0
        self.queue: list[tuple[int, int, int]] = []   # (bit, first, last), at most 2

    @property
    def busy(self) -> bool:
        return bool(self.count or self.queue)

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
    it; the leaf iterator feeds a 2-entry output queue. The root loads ``R`` cycles after a capture, together with the header."""

    def __init__(self, width: int):
        self.width = width
        self.fanin = SPARSE_FANIN
        self.shift = SPARSE_FANIN.bit_length() - 1
        self.sizes = sparse_levels(width)
        self.R = R = len(self.sizes)
        self.masks: list[list[int]] = [[0] * n for n in self.sizes]   # per level, per node
        self.its = [_Iterator() for _ in range(R)]
        self.queues: list[list[tuple[int, int, int]]] = [[] for _ in range(R - 1)]
        spread = sparse_spread(width)
        self.pipes: list[list] = [[None] * (R - 1 - i + spread[i]) for i in range(R - 1)]
        self.credits = [0] + [R + 2 - i + spread[i - 1] for i in range(1, R)]  # queue i - 1 + pipe
        self.p = [0] * R                  # the capture, 1..R cycles ago
        self.outq: list[SparseBeat] = []  # at most 2 (doc and errors from the registers)
        self.active = self.doc = self.started = self.errors = self.count = 0

    @property
    def busy(self) -> bool:
        return bool(self.active)

    def beat(self) -> Optional[SparseBeat]:
        if not self.outq:
            return None
        return self.outq[0]._replace(doc=self.doc, errors=self.errors)

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
        if self.active:                   # (a capture comes only when not busy)
            self._advance(out_ready)
            self.p.pop()
            self.p.insert(0, 0)
        elif capture:                     # p is all 0 while not busy
            self._load_masks(flags)
            self.errors = errors
            self.doc = (self.doc + self.started) & _DOC_MASK
            self.started = self.active = 1
            self.count = 0
            self.p[0] = 1

    def _advance(self, out_ready: bool) -> None:
        R, shift, its, queues = self.R, self.shift, self.its, self.queues
        outq = self.outq
        room = len(outq) != 2
        load = self.p[R - 1]
        adv = [it.cv and (room if i == 0 else self.credits[i] != 0) for i, it in enumerate(its)]
        # what each level emits (before any register changes)
        emits = []
        for i, it in enumerate(its):
            if adv[i]:
                low = it.cur & -it.cur
                emits.append(((it.pre << shift) | (low.bit_length() - 1),
                              it.fin and it.cur == low))
            else:
                emits.append(None)
        r_en = [False] * R
        for i in range(R - 1):
            it = its[i]
            reload = not it.cv or (adv[i] and it.cur & (it.cur - 1) == 0)
            r_en[i] = reload and bool(queues[i])
        # the output queue
        if outq and out_ready:
            if outq.pop(0).last:
                self.active = 0
        if load:
            root = self.masks[R - 1][0]
            outq.append(SparseBeat(1, int(root == 0), 0, 0, 0, 0))
        if emits[0] is not None:
            ident, last = emits[0]
            self.count += 1
            outq.append(SparseBeat(0, int(last), 0, 0, ident, self.count))
        # the iterators
        for i, it in enumerate(its):
            single = it.cur & (it.cur - 1) == 0
            if i == R - 1:
                if load:
                    root = self.masks[R - 1][0]
                    it.cv, it.cur, it.pre, it.fin = int(root != 0), root, 0, 1
                elif adv[i]:
                    if single:
                        it.cv = 0
                    else:
                        it.cur &= it.cur - 1
            elif not it.cv or (adv[i] and single):
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


def make_readout_model(kind: ReadoutKind, width: int
                       ) -> Union[SerialReadoutModel, SparseReadoutModel]:
    return SerialReadoutModel(width) if kind is ReadoutKind.SERIAL else SparseReadoutModel(width)
