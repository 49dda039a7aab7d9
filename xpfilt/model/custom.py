"""Cycle-accurate model of :class:`xpfilt.hdl.custom.CustomEngine`, driven by the same plan.

:meth:`EngineModel.step` is one clock cycle: it takes the input stream's ``valid``/``data``/
``last`` and the readout's ``ready`` for that cycle and returns ``bytes_in.ready`` and the
readout beat shown in that cycle (or None). Register by register it follows the RTL: the
input copy, the front end (:class:`xpfilt.model.frontend.FrontEndModel`), the event distribution
tree (a delay line), the clusters' copies of the events, the stack banks
(:class:`xpfilt.model.stacks.ClusterStacks`), the capture (decided in one cycle, performed in
the next) and flow-control logic and the readout (:mod:`xpfilt.model.readout`).


:class:`ModelEngine` wraps it as a filter engine (``filter(document)``), like the reference.
"""

from __future__ import annotations

from collections import deque
from typing import Iterable, Optional, Sequence, Union

from xpfilt.compiler.custom import CompileOptions, Plan, compile_queries
from xpfilt.hwspec.contract import Errors, check_bytes_per_cycle, distribution_depth
from xpfilt.hwspec.readout import Beat, DocumentReadout, ReadoutKind, SparseBeat, collect_readout
from xpfilt.lang.xpath import Query
from xpfilt.model.frontend import NO_EVENT, FrontEndModel
from xpfilt.model.readout import make_readout_model
from xpfilt.model.stacks import ClusterStacks
from xpfilt.model.wide_frontend import WideFrontEndModel
from xpfilt.software.events import Document, DocumentError, utf8_document

__all__ = [
    "Beat",
    "FrameModel",
    "EngineModel",
    "ModelEngine",
    "EngineError",
    "DocumentReadout",
    "collect_readout",
    "run_documents",
    "readout_positions",
    "answer_holds",
    "answers_in",
    "answer_positions",
    "document_beats",
]


class FrameModel:
    """Register-level model of :class:`xpfilt.hdl.custom.EngineFrame` around a set of clusters: the
    input copy, the front end, the clusters' registered copies of its events, flow control,
    capture and the serial readout.

    Subclasses model the clusters through four hooks: :meth:`_push` / :meth:`_pop` /
    :meth:`_restart` (a front-end event), :meth:`_take_flags` (capture: return the flags of all
    clusters as one readout-ordered integer and clear them); :meth:`_stage` sees each event as
    the clusters register it."""

    width: int

    #: Bytes per beat of the input stream (issue 18): 1, or W with a
    #: :class:`xpfilt.model.wide_frontend.WideFrontEndModel` as ``front_end``.
    bytes_per_cycle = 1

    #: Register levels between the front end's events and the clusters' copies (the RTL's
    #: event distribution tree, :func:`xpfilt.hdl.custom.distribution_depth`).
    tree_depth = 0

    def reset(self) -> None:
        self.front_end.reset()
        self.event = NO_EVENT  # the clusters' copy of the events
        self.fe_event = NO_EVENT  # the front end's events register
        self.tree = deque([NO_EVENT] * self.tree_depth)  # the distribution tree's levels
        self.copy = (0, 0, 0)
        self.pending = 0
        self.waiting = 0
        self.held_errors = 0
        self.capturing = 0  # the readout loads the clusters' flags this cycle
        self.captured_errors = 0
        self.busy_late = 0  # the readout's busy and ``capturing``, one cycle late
        self.capturing_late = 0
        self.readout = make_readout_model(self.readout_kind, self.width)
        self.cycle = 0

    def step(
        self, valid: bool = True, data: int = 0, last: bool = False, out_ready: bool = True
    ) -> tuple[bool, Optional[Union[Beat, SparseBeat]]]:
        """Advance one cycle. Returns (``bytes_in.ready``, the readout beat shown or None);
        the byte was accepted when ``valid`` and ``ready``; the beat moved when ``out_ready``.
        With :attr:`bytes_per_cycle` W > 1, ``data`` is a beat: W bytes, 1 to W with ``last``."""
        ev = self.event
        readout = self.readout
        busy = self.busy_late or self.capturing_late or self.capturing
        self.busy_late = readout.busy
        self.capturing_late = self.capturing
        ready = not self._hold() and (self.pending == 0 or (self.pending == 1 and not busy))
        if ready and self.bytes_per_cycle > 1:
            ready = self.front_end.room(self.copy[0])
        accepted = bool(valid) and ready
        beat = readout.beat()

        if self.capturing:  # the flags of the pushes before this cycle, then cleared
            readout.step(True, self._take_flags(), self.captured_errors, out_ready)
        else:
            readout.step(False, 0, 0, out_ready)
        if ev.push:  # the stacks' registers update at the edge
            self._push(ev)
        capture = (ev.doc_end or self.waiting) and not busy
        if capture:
            self.captured_errors = ev.errors if ev.doc_end else self.held_errors
        self.capturing = int(capture)
        if ev.pop:
            self._close(ev)
        if ev.doc_end:
            self._restart()
            self.held_errors = ev.errors
        elif ev.pop:
            self._pop()
        self.waiting = int((ev.doc_end or self.waiting) and busy)
        self.pending += int(accepted and bool(last)) - int(capture)
        self.tree.append(self.fe_event)  # a delay line of tree_depth levels (maybe none)
        self.event = self._stage(self.tree.popleft())
        self.fe_event = self.front_end.step(*self.copy)
        self.copy = (1, data, last) if accepted else (0, 0, 0)
        self.cycle += 1
        return ready, beat

    @property
    def drained(self) -> bool:
        """Every accepted document end has reached the clusters."""
        return self.pending == self.waiting

    def _close(self, ev) -> None:
        """An element closes (``ev.pop``, before :meth:`_pop` or :meth:`_restart`): nothing
        unless the clusters check something on pops."""

    def _hold(self) -> bool:
        """The frame's ``hold`` input in this cycle (from registered state)."""
        return False

    def _stage(self, ev):
        return ev


class EngineModel(FrameModel):
    """Register-level model of ``CustomEngine(plan, max_name=...)``."""

    def __init__(self, plan: Plan, *, max_name: int = 32, bytes_per_cycle: int = 1):
        """``bytes_per_cycle``: W, the input's bytes per beat (see
        :mod:`xpfilt.model.wide_frontend`)."""
        self.plan = plan
        self.bytes_per_cycle = check_bytes_per_cycle(bytes_per_cycle)
        if bytes_per_cycle == 1:
            self.front_end = FrontEndModel(
                plan.tags,
                max_depth=plan.options.max_depth,
                max_name=max_name,
                conditions=plan.conditions,
            )
        else:
            self.front_end = WideFrontEndModel(
                plan.tags,
                width=bytes_per_cycle,
                max_depth=plan.options.max_depth,
                max_name=max_name,
                conditions=plan.conditions,
            )
        self.width = sum(len(c.queries) for c in plan.clusters)
        self.readout_kind = ReadoutKind(plan.options.readout)
        self.tree_depth = distribution_depth(len(plan.clusters))
        self._shifts = []
        offset = 0
        for cluster in plan.clusters:
            self._shifts.append(offset)
            offset += len(cluster.queries)
        self.reset()

    def reset(self) -> None:
        super().reset()
        self.stacks = [ClusterStacks(c, len(self.plan.tags)) for c in self.plan.clusters]

    def _push(self, ev) -> None:
        for stacks in self.stacks:
            stacks.push(ev.tag, ev.parent, ev.level, ev.conds)

    def _close(self, ev) -> None:
        for stacks in self.stacks:
            stacks.close(ev.conds)

    def _pop(self) -> None:
        for stacks in self.stacks:
            stacks.pop()

    def _restart(self) -> None:
        for stacks in self.stacks:
            stacks.stack = [0]
            stacks.pending = [0]

    def _take_flags(self) -> int:
        flags = 0
        for stacks, shift in zip(self.stacks, self._shifts):
            flags |= stacks.flags() << shift
            stacks.matches = 0
        return flags


def document_beats(data: bytes, bytes_per_cycle: int):
    """The beats of one document for a ``bytes_per_cycle`` input: (data, last) pairs, ``data``
    a byte value at 1 byte per cycle, else up to that many bytes (fewer only with last)."""
    n = len(data)
    if bytes_per_cycle == 1:
        return [(b, i == n - 1) for i, b in enumerate(data)]
    return [
        (data[i : i + bytes_per_cycle], i + bytes_per_cycle >= n)
        for i in range(0, n, bytes_per_cycle)
    ]


class ModelEngine:
    """Filter engine backed by the cycle-accurate model (a byte every cycle, readout always
    ready). ``filter`` returns 0-based positions into ``queries``; a document whose error flags
    are raised raises :class:`EngineError`."""

    def __init__(
        self,
        queries: Sequence[Query],
        options: CompileOptions = CompileOptions(),
        *,
        max_name: int = 32,
        bytes_per_cycle: int = 1,
    ):
        self.queries = tuple(queries)
        self.plan = compile_queries(self.queries, options)
        # no query, no hardware: every document matches nothing
        self.model = (
            EngineModel(self.plan, max_name=max_name, bytes_per_cycle=bytes_per_cycle)
            if self.queries
            else None
        )
        self._bits = readout_positions(enumerate(self.plan.query_numbers), self.queries)

    def filter(self, document: Union[Document, bytes]) -> frozenset[int]:
        if self.model is None:
            return frozenset()
        return filter_with_model(self.model, document, self._bits)


def readout_positions(numbers_by_bit: Iterable[tuple], queries: Sequence[Query]) -> list[tuple]:
    """(where, query position in ``queries``) pairs from (where, query number) pairs -- a
    plan's readout order (``enumerate(plan.query_numbers)``) or a programmable configuration's
    readout map (where: a readout bit, or an expression, :func:`answer_holds`). Those of
    queries not in ``queries`` are dropped."""
    position = {q.number: i for i, q in enumerate(queries)}
    return [(where, position[n]) for where, n in numbers_by_bit if n in position]


def answer_holds(where, bits: int) -> bool:
    """Whether a profile's answer is yes in a document's readout ``bits``: ``where`` is its
    readout bit, or (a boolean combination of paths on the programmable engine, whose paths
    each have a readout bit) a :class:`xpfilt.hwspec.conditions.Condition` over readout bits
    (:func:`xpfilt.compiler.programmable.profile_answer`). The one decoding every host path shares."""
    return bool(bits >> where & 1) if isinstance(where, int) else where.holds(bits)


def answers_in(pairs: Sequence[tuple], bits: int) -> tuple[int, ...]:
    """The numbers, in order, of the ``(where, number)`` pairs whose answer holds in a
    document's readout ``bits`` (:func:`answer_holds`)."""
    return tuple(sorted(n for where, n in pairs if answer_holds(where, bits)))


def answer_positions(name: str, readout: DocumentReadout, bits: Sequence[tuple]) -> frozenset[int]:
    """The query positions whose answer holds in the readout (``bits`` from
    :func:`readout_positions`); a flagged document raises :class:`EngineError`."""
    if readout.errors:
        raise EngineError(name, readout.errors)
    return frozenset(answers_in(bits, readout.bits))


def filter_with_model(
    model: FrameModel, document: Union[Document, bytes], bits: Sequence[tuple[int, int]]
) -> frozenset[int]:
    """Run one document through ``model``; return the query positions whose readout bit is set
    (``bits``: (readout bit, query position) pairs). A flagged document raises EngineError."""
    if isinstance(document, (bytes, bytearray)):
        document = Document("<bytes>", bytes(document))
    document = utf8_document(document)  # empty or undecodable: a DocumentError, never bytes
    readout = run_documents(model, [document.data])[0]
    return answer_positions(document.name, readout, bits)


class EngineError(DocumentError):
    """The engine flagged a document (malformed XML, too deep, a name too long)."""

    def __init__(self, name: str, errors: Errors):
        self.name, self.errors = name, errors
        flags = ", ".join(f.name.lower().replace("_", " ") for f in Errors if f in errors)
        super().__init__(f"{name}: the engine flagged the document: {flags}")


def run_documents(model: EngineModel, documents: Sequence[bytes]) -> list[DocumentReadout]:
    """Stream documents back to back (a byte every cycle, readout always ready) until every
    document has been read out."""
    beats: list[Union[Beat, SparseBeat]] = []
    step = model.step
    ends = 0
    for data in documents:
        if not data:
            raise ValueError("document must have at least one byte, not none")
        pieces = document_beats(data, model.bytes_per_cycle)
        i = 0
        while i < len(pieces):
            ready, beat = step(True, *pieces[i])
            if beat is not None:
                beats.append(beat)
                ends += beat.last
            if ready:
                i += 1
    idle = 0
    while ends < len(documents):
        ready, beat = step(False)
        if beat is not None:
            beats.append(beat)
            ends += beat.last
            idle = 0
        else:
            idle += 1
            if idle > 64 + model.tree_depth:  # the pipeline is ~10-20 cycles deep
                raise RuntimeError("the engine model stopped producing readout beats")
    return collect_readout(beats, model.width)
