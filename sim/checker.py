"""The scoring half of the cocotb testbench, in plain Python (no simulator needed).

The testbench (:mod:`xpfilt.sim.engine_tb`) records, for every clock cycle, what it drove into the
engine (``bytes_in`` valid/payload, ``readout.ready``) and what the engine showed
(``bytes_in.ready``, the ``readout`` beat or none): a :class:`Trace`. After the run:

* :func:`compare_with_model` drives :class:`xpfilt.model.custom.EngineModel` with the very same
  inputs, cycle by cycle, and compares ``ready`` and the readout beat of every cycle (the model
  is cycle-exact with the RTL, so any difference is a bug in one of them);
* :func:`score_documents` groups the transferred readout beats into documents and compares each
  one with the reference filter (:class:`xpfilt.software.reference.ReferenceFilter`) and with the error
  flags the document must raise (see :func:`expectation`).

Both return plain dicts (JSON-ready) describing each mismatch.
"""

from __future__ import annotations

import bisect
import re
from dataclasses import dataclass, field
from typing import Callable, Optional, Sequence
from xml.parsers import expat

from amaranth.lib import data

from xpfilt.compiler.custom import Plan
from xpfilt.hdl.frontend import ByteLayout, Errors
from xpfilt.hdl.readout import readout_layout
from xpfilt.hdl.wide_frontend import WideByteLayout
from xpfilt.hwspec.readout import DOC_WIDTH, Beat, ReadoutKind, SparseBeat, collect_readout
from xpfilt.lang.xpath import Query
from xpfilt.model.custom import EngineModel, document_beats
from xpfilt.software.events import EventKind, MalformedDocumentError, parse_events
from xpfilt.software.reference import ReferenceFilter

__all__ = [
    "BeatCodec",
    "SERIAL",
    "BYTE_FIELDS",
    "encode_beat",
    "decode_beat",
    "byte_payload",
    "InputCodec",
    "describe_cycle",
    "Trace",
    "Expectation",
    "expectation",
    "compare_with_model",
    "score_documents",
    "FAULTS",
    "error_names",
    "reference_for",
    "with_reference_fault",
]


class BeatCodec:
    """The integer a readout port of ``kind`` (``width`` readout bits) shows for a beat, and
    back; ``last_mask``: the ``last`` field's bit."""

    def __init__(self, kind: ReadoutKind, width: int):
        self.kind, self.width = kind, width
        self.beat_type = Beat if kind is ReadoutKind.SERIAL else SparseBeat
        self.fields = {
            name: (f.offset, f.width) for name, f in data.Layout.cast(readout_layout(kind, width))
        }
        self.last_mask = 1 << self.fields["last"][0]

    @classmethod
    def for_plan(cls, plan: Plan) -> "BeatCodec":
        return cls(ReadoutKind(plan.options.readout), len(plan.query_numbers))

    def encode(self, beat) -> int:
        value = 0
        for name in self.beat_type._fields:
            offset, width = self.fields[name]
            value |= (getattr(beat, name) & ((1 << width) - 1)) << offset
        return value

    def decode(self, value: int):
        return self.beat_type(
            *(
                (value >> self.fields[name][0]) & ((1 << self.fields[name][1]) - 1)
                for name in self.beat_type._fields
            )
        )

    def expected(self, beat, faulty: bool) -> tuple[int, object, bool]:
        """What the port must show for the model's ``beat`` (None: -1, no beat) with the
        ``model`` fault still to be planted when ``faulty``: (value, beat, still faulty)."""
        if beat is None:
            return -1, None, faulty
        faulted = self.with_fault(beat) if faulty else beat
        if faulted != beat:
            beat, faulty = faulted, False
        return self.encode(beat), beat, faulty

    def with_fault(self, beat):
        """The ``model`` fault: document 0's first beat changed (a readout bit flipped, or for
        the sparse readout the header's first error flag), else ``beat`` itself."""
        if beat.doc != 0:
            return beat
        if isinstance(beat, Beat):
            return beat._replace(bit=beat.bit ^ 1) if beat.first else beat
        return beat._replace(errors=beat.errors ^ 1) if beat.header else beat


#: The serial readout's codec (its layout does not depend on the width).
SERIAL = BeatCodec(ReadoutKind.SERIAL, 1)
#: (offset, width) of each field of the ``bytes_in`` payload (:class:`xpfilt.hdl.frontend.ByteLayout`).
BYTE_FIELDS = {name: (f.offset, f.width) for name, f in data.Layout.cast(ByteLayout)}
BYTE_WIDTH = data.Layout.cast(ByteLayout).size

#: Test hooks that make the expectation deliberately wrong, so that a test can prove the checker
#: fails: ``model`` changes the first beat the model expects of document 0;
#: ``reference`` claims that the first well-formed document also matches a query it does not.
FAULTS = ("model", "reference")

_LAST_SHIFT = BYTE_FIELDS["last"][0]
_DATA_SHIFT = BYTE_FIELDS["data"][0]


def byte_payload(data_byte: int, last: bool) -> int:
    """The ``bytes_in.payload`` value of one byte."""
    return (data_byte << _DATA_SHIFT) | (int(last) << _LAST_SHIFT)


class InputCodec:
    """The ``bytes_in.payload`` integers of documents for an engine taking ``bytes_per_cycle``
    bytes per cycle (a byte, :func:`byte_payload`, or a beat of
    :class:`xpfilt.hdl.wide_frontend.WideByteLayout`), and back to the ``data`` and ``last``
    :meth:`xpfilt.model.custom.EngineModel.step` takes; ``last_mask``: the ``last`` bit."""

    def __init__(self, bytes_per_cycle: int = 1):
        self.width = bytes_per_cycle
        layout = ByteLayout if bytes_per_cycle == 1 else WideByteLayout(bytes_per_cycle)
        fields = {name: (f.offset, f.width) for name, f in data.Layout.cast(layout)}
        self.last_mask = 1 << fields["last"][0]
        self._data = fields["data"]
        self._count = fields.get("count", (0, 0))

    def payloads(self, documents: Sequence[bytes]) -> list[int]:
        (d_off, _), (c_off, _) = self._data, self._count
        last_mask = self.last_mask
        return [
            (int.from_bytes(chunk, "little") if self.width > 1 else chunk) << d_off
            | (len(chunk) << c_off if self.width > 1 else 0)
            | (last_mask if last else 0)
            for doc in documents
            for chunk, last in document_beats(doc, self.width)
        ]

    def decode(self, payload: int) -> tuple:
        """(data, last) of a payload: a byte value, or the beat's bytes (``count`` of them with
        ``last``)."""
        last = bool(payload & self.last_mask)
        raw = (payload >> self._data[0]) & ((1 << self._data[1]) - 1)
        if self.width == 1:
            return raw, last
        count = (payload >> self._count[0]) & ((1 << self._count[1]) - 1) if last else self.width
        return raw.to_bytes(self.width, "little")[:count], last


_ONE_BYTE = InputCodec(1)


def encode_beat(beat: Beat) -> int:
    """A serial :class:`Beat` as the integer the RTL shows on ``readout.payload``."""
    return SERIAL.encode(beat)


def decode_beat(value: int) -> Beat:
    """The integer on a serial ``readout.payload`` as a :class:`Beat`."""
    return SERIAL.decode(value)


def error_names(errors: int) -> list[str]:
    return [f.name.lower() for f in Errors if errors & f]


@dataclass
class Trace:
    """Everything that crossed the engine's ports, one entry per clock cycle.

    ``valid``/``payload``/``out_ready``: driven (``payload`` as :func:`byte_payload`);
    ``ready``: ``bytes_in.ready`` seen; ``beat``: ``readout.payload`` seen while
    ``readout.valid``, else -1. ``doc_last_cycle[i]``: the cycle whose byte ended document ``i``
    (accepted), for naming the document in flight at a given cycle."""

    valid: list = field(default_factory=list)
    payload: list = field(default_factory=list)
    out_ready: list = field(default_factory=list)
    ready: list = field(default_factory=list)
    beat: list = field(default_factory=list)
    doc_last_cycle: list = field(default_factory=list)

    def __len__(self) -> int:
        return len(self.ready)

    def transferred(self, codec: BeatCodec = SERIAL) -> list:
        """The readout beats that moved (valid and ready)."""
        return [codec.decode(b) for b, r in zip(self.beat, self.out_ready) if b >= 0 and r]

    def document_at(self, cycle: int) -> int:
        """Index of the document being streamed in ``cycle`` (the last one once all ended)."""
        i = bisect.bisect_left(self.doc_last_cycle, cycle)
        return min(i, max(0, len(self.doc_last_cycle) - 1))


def compare_with_model(
    plan: Plan,
    trace: Trace,
    *,
    max_name: int = 32,
    fault: Optional[str] = None,
    bytes_per_cycle: int = 1,
) -> dict:
    """Step the model with the trace's inputs; compare ``ready`` and the beat of every cycle.

    Returns ``{"cycles", "mismatching_cycles", "first"}``; ``first`` is None or describes the
    first differing cycle (both sides, decoded, and the document in flight)."""
    model = EngineModel(plan, max_name=max_name, bytes_per_cycle=bytes_per_cycle)
    codec = BeatCodec.for_plan(plan)
    inputs = InputCodec(bytes_per_cycle)
    decode = inputs.decode
    step = model.step
    faulty = fault == "model"
    first = None
    bad = 0
    for c, (valid, payload, out_ready, ready, beat) in enumerate(
        zip(trace.valid, trace.payload, trace.out_ready, trace.ready, trace.beat)
    ):
        m_ready, m_beat = step(valid, *decode(payload), out_ready)
        expected, m_beat, faulty = codec.expected(m_beat, faulty)
        if m_ready != ready or expected != beat:
            bad += 1
            if first is None:
                first = describe_cycle(
                    c, trace, codec, ready, beat, m_ready, m_beat, valid, payload, out_ready, inputs
                )
    return {"cycles": len(trace), "mismatching_cycles": bad, "first": first}


def describe_cycle(
    cycle: int,
    trace: Trace,
    codec: BeatCodec,
    ready,
    beat: int,
    m_ready,
    m_beat,
    valid,
    payload: int,
    out_ready,
    inputs: Optional[InputCodec] = None,
) -> dict:
    """A cycle where the RTL and the model differ: both sides' ``ready`` and beat (decoded),
    the inputs (``inputs``: their codec, one byte per cycle if None), and the document in
    flight."""
    data_in, last_in = (inputs or _ONE_BYTE).decode(payload)
    rtl_beat = None if beat < 0 else codec.decode(beat)
    doc = m_beat.doc if m_beat is not None else rtl_beat.doc if rtl_beat is not None else None
    return {
        "cycle": cycle,
        "document": trace.document_at(cycle) if doc is None else doc,
        "rtl": {"ready": bool(ready), "beat": None if rtl_beat is None else rtl_beat._asdict()},
        "model": {"ready": bool(m_ready), "beat": None if m_beat is None else m_beat._asdict()},
        "inputs": {
            "valid": bool(valid),
            "data": data_in if isinstance(data_in, int) else data_in.hex(),
            "last": last_in,
            "out_ready": bool(out_ready),
        },
    }


@dataclass(frozen=True)
class Expectation:
    """What the engine must say about one document: ``numbers`` (the query numbers that match,
    by the reference filter) when it must answer, or None with ``must_flag`` the error flags
    that must rise (a malformed document, one deeper than the stacks, a name too long, a
    reference to an entity other than the predefined ones)."""

    numbers: Optional[tuple[int, ...]]
    must_flag: int = 0
    reason: str = ""


#: Markup after the DOCTYPE in which an "&" is no reference (left-most match first).
_NOT_REFERENCES = re.compile(rb"<!--.*?-->|<!\[CDATA\[.*?\]\]>|<\?.*?\?>", re.S)
#: An "&" that does not begin a predefined entity's or a character reference.
_UNDECIDED = re.compile(rb"&(?!(?:lt|gt|amp|apos|quot);|#)")


def undecided_reference(document: bytes) -> bool:
    """A well-formed ``document`` refers to an entity other than the five predefined ones in
    its content or an attribute value, so the hardware must flag ``entity`` (its text may
    hold markup). Found without the front end's parser: expat says where the DOCTYPE ends,
    comments, CDATA sections and processing instructions after it are left out, and any "&"
    left that does not begin ``&lt;``, ``&gt;``, ``&amp;``, ``&apos;``, ``&quot;`` or ``&#``
    counts."""
    parser = expat.ParserCreate()
    ends: list[int] = []
    parser.EndDoctypeDeclHandler = lambda: ends.append(parser.CurrentByteIndex)
    parser.Parse(document, True)
    body = document[ends[0] :] if ends else document
    return bool(_UNDECIDED.search(_NOT_REFERENCES.sub(b"", body)))


def expectation(
    reference: ReferenceFilter,
    numbers: Sequence[int],
    document: bytes,
    *,
    max_depth: int,
    max_name: int,
) -> Expectation:
    """The answer the engine owes ``document`` (``numbers[i]`` = the i-th reference query)."""
    try:
        events = parse_events(document)
    except MalformedDocumentError as exc:
        return Expectation(
            None, int(Errors.MALFORMED), f"malformed: {exc.reason} at {exc.line}:{exc.column}"
        )
    depth = deepest = 0
    longest = 0
    for event in events:
        if event.kind is EventKind.OPEN:
            depth += 1
            deepest = max(deepest, depth)
            longest = max(longest, len(event.name.encode("utf-8")))
        elif event.kind is EventKind.CLOSE:
            depth -= 1
    flags, reasons = 0, []
    if deepest > max_depth:
        flags |= int(Errors.DEPTH_OVERFLOW)
        reasons.append(f"depth {deepest} > {max_depth}")
    if longest > max_name:
        flags |= int(Errors.NAME_TOO_LONG)
        reasons.append(f"a name of {longest} bytes > {max_name}")
    if undecided_reference(document):
        flags |= int(Errors.ENTITY)
        reasons.append("a reference to an entity other than the predefined ones")
    if flags:
        return Expectation(None, flags, ", ".join(reasons))
    positions = reference.filter_events(events)
    return Expectation(tuple(sorted(numbers[p] for p in positions)))


def score_documents(
    plan: Plan,
    names: Sequence[str],
    expected: Sequence[Expectation],
    beats: Sequence,
    *,
    decode: Optional[Callable[[int, int], tuple[int, ...]]] = None,
) -> tuple[list[dict], list[dict]]:
    """Group transferred readout beats (either kind) into documents and compare each with its
    expectation; ``decode(i, bits)`` gives the query numbers of document ``i``'s readout bits
    (default: the bits set, in ``plan``'s readout order).

    Returns (per-document results, mismatches). A result: name, the engine's query numbers
    (None when it raised flags), its flags, and the expectation."""
    order = plan.query_numbers
    width = len(order)
    if decode is None:

        def decode(_i, bits):
            return tuple(sorted(order[j] for j in range(width) if bits >> j & 1))

    results, mismatches = [], []
    framing: list[str] = []
    readouts = [
        (r.doc, int(r.errors), r.bits) for r in collect_readout(beats, width, problems=framing)
    ]
    if framing:
        mismatches.append({"kind": "framing", "document": len(readouts), "detail": framing[0]})
    if len(readouts) != len(names):
        mismatches.append(
            {
                "kind": "framing",
                "document": min(len(readouts), len(names) - 1),
                "detail": f"{len(readouts)} readouts for {len(names)} documents",
            }
        )
    for i, (name, exp) in enumerate(zip(names, expected)):
        if i >= len(readouts):
            break
        doc, errors, bits = readouts[i]
        numbers = decode(i, bits)
        result = {
            "document": i,
            "name": name,
            "flags": error_names(errors),
            "numbers": None if errors else list(numbers),
            "expected": None if exp.numbers is None else list(exp.numbers),
            "must_flag": error_names(exp.must_flag),
            "reason": exp.reason,
        }
        results.append(result)
        problems = []
        if doc != i % (1 << DOC_WIDTH):
            problems.append(f"readout sequence number {doc}, not {i % (1 << DOC_WIDTH)}")
        if exp.numbers is None:
            if errors & exp.must_flag != exp.must_flag:
                problems.append(
                    f"flags {error_names(errors) or 'none'} must include "
                    f"{error_names(exp.must_flag)} ({exp.reason})"
                )
        elif errors:
            problems.append(f"flags {error_names(errors)} on a document the reference accepts")
        elif numbers != exp.numbers:
            missing = sorted(set(exp.numbers) - set(numbers))
            extra = sorted(set(numbers) - set(exp.numbers))
            problems.append(f"queries missing {missing[:20]}, extra {extra[:20]}")
        if problems:
            mismatches.append(
                {"kind": "document", "document": i, "name": name, "detail": "; ".join(problems)}
            )
    return results, mismatches


def reference_for(queries: Sequence[Query]) -> tuple[ReferenceFilter, list[int]]:
    """The reference filter over ``queries`` and the query number of each position."""
    return ReferenceFilter(queries), [q.number for q in queries]


def with_reference_fault(expected: Sequence[Expectation], plan: Plan) -> list[Expectation]:
    """The ``reference`` fault: the first document that must be answered gets query
    ``plan.query_numbers[0]`` toggled in its expected answer."""
    out = list(expected)
    victim = plan.query_numbers[0]
    for i, exp in enumerate(out):
        if exp.numbers is not None:
            out[i] = Expectation(
                tuple(sorted(set(exp.numbers) ^ {victim})),
                exp.must_flag,
                "fault injected: reference answer changed",
            )
            break
    return out


def root_cause_first(mismatches: list, trace, names: Sequence[str], stopped, cycles: dict) -> list:
    """Put the root cause in front: the first cycle that differs from the model, then a stall
    (the simulation stopped waiting), then the per-document mismatches."""
    front = []
    if cycles["first"] is not None:
        at = min(cycles["first"]["document"], len(names) - 1)
        front.append({"kind": "cycle", "document": at, "name": names[at], "detail": cycles})
    if stopped:
        at = trace.document_at(len(trace))
        front.append({"kind": "stall", "document": at, "name": names[at], "detail": stopped})
    return front + list(mismatches)
