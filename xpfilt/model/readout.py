"""Register-level models of the two readouts (:class:`xpfilt.hdl.readout.Readout`,
:class:`xpfilt.hdl.readout.SparseReadout`). Each cycle the frame asks for :meth:`beat` (what ``out``
shows, from the registers) and ``busy``, then calls :meth:`step` with that cycle's ``capture``,
the captured flags and errors, and ``out.ready``."""

from __future__ import annotations

from typing import Optional, Union

from ..readout import (DOC_WIDTH, SPARSE_QUEUE, Beat, ReadoutKind, SparseBeat,
                       sparse_chunk)

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


class SparseReadoutModel:
    def __init__(self, width: int):
        self.width = width
        self.size = sparse_chunk(width)
        self.mask = (1 << self.size) - 1
        self.shadow = 0
        self.nonempty = 0
        self.header = self.header_last = 0
        self.doc = self.started = self.errors = self.count = 0
        self.sel_valid = 0
        self.sel = 0                       # the selected chunk's index
        self.queue: list[tuple[int, int]] = []   # (chunk bits, chunk index)
        self.cur = self.cur_index = 0

    @property
    def busy(self) -> bool:
        return bool(self.header or self.nonempty or self.sel_valid or self.queue or self.cur)

    def beat(self) -> Optional[SparseBeat]:
        if self.header:
            return SparseBeat(1, self.header_last, self.doc, self.errors, 0, 0)
        if not self.cur:
            return None
        low = self.cur & -self.cur
        more = self.nonempty or self.sel_valid or self.queue
        return SparseBeat(0, int(self.cur == low and not more), self.doc, self.errors,
                          self.cur_index * self.size + low.bit_length() - 1, self.count + 1)

    def step(self, capture: bool, flags: int, errors: int, out_ready: bool) -> None:
        transfer = out_ready and (self.header or self.cur)
        take_id = transfer and not self.header
        issue = self.nonempty and self.sel_valid + len(self.queue) < SPARSE_QUEUE
        low = self.cur & -self.cur
        fetched = None
        if self.sel_valid:
            fetched = (self.shadow >> (self.sel * self.size) & self.mask, self.sel)
        if transfer and self.header:
            self.header = 0
        if take_id:
            self.count += 1
        if not self.cur or (take_id and self.cur == low):
            self.cur, self.cur_index = self.queue.pop(0) if self.queue else (0, self.cur_index)
        elif take_id:
            self.cur ^= low
        if fetched is not None:
            self.queue.append(fetched)
        self.sel_valid = int(bool(issue))
        if issue:
            chunk = self.nonempty & -self.nonempty
            self.sel = chunk.bit_length() - 1
            self.nonempty ^= chunk
        if capture:
            self.shadow = flags
            self.nonempty = 0
            for k in range(0, -(-self.width // self.size)):
                if flags >> (k * self.size) & self.mask:
                    self.nonempty |= 1 << k
            self.header, self.header_last = 1, int(flags == 0)
            self.errors = errors
            self.doc = (self.doc + self.started) & _DOC_MASK
            self.started = 1
            self.count = 0


def make_readout_model(kind: ReadoutKind, width: int
                       ) -> Union[SerialReadoutModel, SparseReadoutModel]:
    return SerialReadoutModel(width) if kind is ReadoutKind.SERIAL else SparseReadoutModel(width)
