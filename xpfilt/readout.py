"""The two match readouts an engine can have, as every side sees them (RTL, model, host).

* ``serial`` -- the paper's readout (§5.1): at the end of a document all match flags are captured
  and shifted out one bit per beat; a document takes as many beats as the engine has readout
  bits, however few queries matched.
* ``sparse`` -- a header beat (document number, error flags) followed by one beat per matching
  readout bit (its position ``id``), in increasing order; the last beat of a document has
  ``last`` set and its ``count`` is the number of ids of that document. The flags are scanned in
  chunks of :func:`sparse_chunk` bits; empty chunks are skipped, so a document takes one cycle
  per match plus three (the header and :data:`SPARSE_LATENCY`), whatever the number of queries. The count travels on the last beat rather than the header: it is known only once
  the flags have been scanned (a header count would need a population count over all flags at
  capture, about one LUT per query).

A host turns either stream of beats into :class:`DocumentReadout` records with
:func:`collect_readout`.
"""

from __future__ import annotations

import enum
from typing import Iterable, NamedTuple, Optional, Union

__all__ = ["ReadoutKind", "check_readout", "DOC_WIDTH", "SPARSE_LATENCY", "SPARSE_QUEUE", "sparse_chunk",
           "Beat", "SparseBeat", "DocumentReadout", "collect_readout", "readout_cycles"]

#: Width of the wrapping document sequence number every readout carries.
DOC_WIDTH = 16
#: Idle cycles between the sparse readout's header beat and its first id (ready always 1).
SPARSE_LATENCY = 2
#: Chunks the sparse readout may have fetched but not yet emitted.
SPARSE_QUEUE = 4


class ReadoutKind(enum.Enum):
    SERIAL = "serial"
    SPARSE = "sparse"


def check_readout(value: str) -> ReadoutKind:
    """The readout kind named ``value`` (a configuration field), or a ValueError."""
    try:
        return ReadoutKind(value)
    except ValueError:
        raise ValueError(f"readout must be one of {', '.join(k.value for k in ReadoutKind)}, "
                         f"not {value!r}") from None


def sparse_chunk(width: int) -> int:
    """The sparse readout's chunk: a power of two, 64 bits, or fewer for a narrow readout."""
    return min(64, 1 << max(0, (width - 1).bit_length()))


class Beat(NamedTuple):
    """One serial readout transfer (the fields of :class:`xpfilt.hdl.readout.ReadoutLayout`)."""
    bit: int
    first: int
    last: int
    doc: int
    errors: int


class SparseBeat(NamedTuple):
    """One sparse readout transfer (the fields of :func:`xpfilt.hdl.readout.sparse_layout`):
    ``header`` 1 for the document's first beat, else ``id`` is a matching readout bit;
    ``count`` is the number of ids of the document so far (all of them on the ``last`` beat)."""
    header: int
    last: int
    doc: int
    errors: int
    id: int
    count: int


class DocumentReadout(NamedTuple):
    """A whole document's readout: its sequence number, error flags and readout bits."""
    doc: int
    errors: int        # an xpfilt.hdl.frontend.Errors value
    bits: int          # bit i = readout position i


def collect_readout(beats: Iterable[Union[Beat, SparseBeat]], width: int, *,
                    problems: Optional[list] = None) -> list[DocumentReadout]:
    """Group readout beats of either kind into documents, checking their framing: a framing
    error raises ValueError, or, with ``problems`` given, is appended to it (the readout is
    kept as far as it goes; beats after the last complete document count as a problem)."""
    from .hwdefs import Errors   # the flag names; imported late (Amaranth)

    def problem(message: str) -> None:
        if problems is None:
            raise ValueError(message)
        problems.append(message)

    out: list[DocumentReadout] = []
    bits = count = 0
    for beat in beats:
        if isinstance(beat, SparseBeat):
            if beat.header != (count == 0):
                problem(f"sparse readout beat {count} of document {beat.doc} has "
                        f"header={beat.header}")
            if not beat.header:
                if not 0 <= beat.id < width or bits >> beat.id & 1:
                    problem(f"sparse readout of document {beat.doc} repeats or overruns id "
                            f"{beat.id}")
                bits |= 1 << beat.id
            count += 1
            if beat.last:
                if beat.count != count - 1:
                    problem(f"sparse readout of document {beat.doc} says {beat.count} ids, "
                            f"not {count - 1}")
                out.append(DocumentReadout(beat.doc, Errors(beat.errors), bits))
                bits = count = 0
            continue
        if beat.first != (count == 0):
            problem(f"readout beat {count} of document {beat.doc} has first={beat.first}")
        bits |= beat.bit << count
        count += 1
        if beat.last:
            if count != width:
                problem(f"readout of document {beat.doc} must have {width} bits, not {count}")
            out.append(DocumentReadout(beat.doc, Errors(beat.errors), bits))
            bits, count = 0, 0
    if count:
        problem(f"readout {len(out)} stopped after {count} beats")
    return out


def readout_cycles(kind: ReadoutKind, width: int, matches: int) -> int:
    """Cycles one document's readout is busy (readout always ready): the input streams at a
    byte per cycle whenever each document has more bytes than the previous one's readout."""
    if kind is ReadoutKind.SERIAL:
        return width
    return 1 + matches + (SPARSE_LATENCY if matches else 0)
