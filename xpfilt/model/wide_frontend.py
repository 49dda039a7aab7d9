"""Cycle-accurate model of :class:`xpfilt.hdl.wide_frontend.WideFrontEnd`: the front end that
takes a beat of W bytes per cycle (issue 18).

``WideFrontEndModel.step(valid, data, last)`` is one clock cycle: ``data`` holds the beat's
bytes (W of them, fewer only in the last beat of a document), and the result is the value of
the RTL's ``events`` port in the next cycle. Before calling it, :meth:`room` says whether the
frame may accept a beat this cycle.

Its registers, in the order a beat meets them (see :mod:`xpfilt.hdl.wide_frontend`):

* D1, D2: the beat and then its byte classes, registered (as in the one-byte front end);
* the parser stages (:func:`xpfilt.hwspec.contract.wide_parser_stages`: the parallel-prefix up-sweep,
  S, the down-sweep, O, N, N2, L, L2, L3, L4, M, M2, P2; the condition stages C and T run
  beside L3): in the model the parser walks the
  beat's bytes in lane order as the beat leaves D2, one parser step per byte, and every byte
  whose parser step makes an event (push, pop, or the document end of the beat with ``last``)
  gives it, in byte order, to a delay line that stands for these stages; the last of them (P2)
  writes the events into the event queue in the next cycle;
* the queue (:func:`xpfilt.hwspec.contract.queue_depth_for` entries) hands its oldest event to stage E
  every cycle, except in the cycle right after it handed over a document end (so that the
  frame's capture, the cycle after the end reaches the clusters, never meets a push);
* E, F: the global stack row read and the end-tag check (in the model, delay registers: the
  parser step already computed the whole event), then the ``events`` register.

So a beat accepted in cycle N shows its first event in cycle N + :func:`wide_latency` at the
earliest. The frame accepts a beat only when the queue has room for W events of it and of every
beat still before the queue, judged from the cycle before (:meth:`room`), so the queue never
overflows and back-pressure arises only when events come faster than one per cycle for long.

The parser step is :class:`xpfilt.model.frontend.FrontEndModel`'s, byte for byte, so the events
of a document (and its error flags) are exactly the one-byte front end's, only timed
differently, and so are the condition bits (``conds``: a push's attribute conditions, a pop's
``text()`` conditions) and the ``value_undecided`` flag; ``report_names`` is not widened.
"""

from __future__ import annotations

from collections import deque
from typing import Sequence

from xpfilt.hwspec.contract import (
    check_bytes_per_cycle,
    queue_depth_for,
    wide_latency,
    wide_parser_stages,
)
from xpfilt.model.frontend import NO_EVENT, FrontEndModel

__all__ = ["WideFrontEndModel", "wide_latency"]


class WideFrontEndModel:
    """Cycle-accurate model of ``WideFrontEnd(tags, width=W, max_depth=..., max_name=...)``."""

    def __init__(
        self,
        tags: Sequence[str],
        *,
        width: int,
        max_depth: int = 16,
        max_name: int = 32,
        conditions: Sequence = (),
    ):
        check_bytes_per_cycle(width)
        self.conditions = tuple(conditions)
        self.width = width
        self.queue_depth = queue_depth_for(width)
        self.tags = tuple(tags)
        self.max_depth = max_depth
        self.max_name = max_name
        self._parser = FrontEndModel(
            tags, max_depth=max_depth, max_name=max_name, conditions=self.conditions
        )
        self.reset()

    def reset(self) -> None:
        """Power-on state: no beat in flight, the queue empty, ``events`` all zero."""
        self._parser.reset()
        self._parse = self._parser._send
        self.d1 = self.d2 = None  # (data, last) of the beat in stage D1 / D2, or None
        # the parser stages, P2 last: the events of the beat in each, or None
        self.stages: list = [None] * wide_parser_stages(self.width)
        self.queue: deque = deque()
        self.e = self.f = NO_EVENT  # stages E and F
        self.after_end = False  # stage E took a document end last cycle
        self.load = 0  # see room()

    def room(self, incoming: bool) -> bool:
        """The frame may accept a beat this cycle; ``incoming``: a beat is on ``bytes_in`` now
        (the frame's input copy). Room for W events of that beat and of one more beside the
        load of the cycle before (:attr:`load`: the queued events and W for each beat then in
        D1, D2, the parser stages or on ``bytes_in``), an upper bound on the load now."""
        return self.load + self.width * (bool(incoming) + 1) <= self.queue_depth

    def step(self, valid: bool, data: bytes = b"", last: bool = False):
        """One clock cycle with these ``bytes_in`` inputs; the ``events`` port of the next
        cycle."""
        self.load = len(self.queue) + self.width * (
            bool(valid)
            + (self.d1 is not None)
            + (self.d2 is not None)
            + sum(beat is not None for beat in self.stages)
        )
        out = self.f
        self.f = self.e
        queue = self.queue
        if queue and not self.after_end:
            self.e = queue.popleft()
            self.after_end = bool(self.e.doc_end)
        else:
            self.e = NO_EVENT
            self.after_end = False
        stages = self.stages
        if stages[-1] is not None:
            queue.extend(stages[-1])
        beat = self.d2
        events = None
        if beat is not None:
            events = []
            parse = self._parse
            data2, last2 = beat
            final = len(data2) - 1
            for i, c in enumerate(data2):
                ev = parse((1, c, last2 and i == final))
                if ev is not NO_EVENT:
                    events.append(ev)
        stages[1:] = stages[:-1]
        stages[0] = events
        self.d2 = self.d1
        if valid:
            if not 1 <= len(data) <= self.width or (len(data) != self.width and not last):
                raise ValueError(
                    f"beat must have {self.width} bytes (1 to {self.width} with "
                    f"last), not {len(data)}"
                )
            self.d1 = (bytes(data), bool(last))
        else:
            self.d1 = None
        return out
