"""The two match readouts an engine can have, as every side sees them (RTL, model, host).

* ``serial`` -- the paper's readout (§5.1): at the end of a document all match flags are captured
  and shifted out one bit per beat; a document takes as many beats as the engine has readout
  bits, however few queries matched.
* ``sparse`` -- a header beat (document number, error flags) followed by one beat per matching
  readout bit (its position ``id``), in increasing order; the last beat of a document has
  ``last`` set and its ``count`` is the number of ids of that document. The flags are scanned by
  a tree of :data:`SPARSE_FANIN`-way nodes (:func:`sparse_levels`): empty subtrees are skipped,
  and each non-empty leaf (:data:`SPARSE_FANIN` flags) goes whole into an output queue that sends
  its ids one per cycle, so the flags are free for the next document after one cycle per
  non-empty leaf plus :func:`sparse_latency` and the header, whatever the number of queries
  (see :func:`readout_cycles`), and the ids follow one per cycle. The count travels on the last beat rather
  than the header: it is known only once the flags have been scanned (a header count would need
  a population count over all flags at capture, about one LUT per query).

A host turns either stream of beats into :class:`DocumentReadout` records with
:func:`collect_readout`.
"""

from __future__ import annotations

import enum
from typing import Iterable, NamedTuple, Optional, Union

__all__ = [
    "ReadoutKind",
    "check_readout",
    "DOC_WIDTH",
    "SPARSE_FANIN",
    "sparse_levels",
    "SPARSE_GROUPS_PER_COPY",
    "SPARSE_SHOW_DELAY",
    "sparse_spread",
    "sparse_latency",
    "sparse_queue_depth",
    "Beat",
    "SparseBeat",
    "DocumentReadout",
    "collect_readout",
    "readout_cycles",
]

#: Width of the wrapping document sequence number every readout carries.
DOC_WIDTH = 16
#: Fan-in of the sparse readout's tree: a leaf holds this many flags, every node above it this many
#: children; each cycle's logic looks at one node's bits (a power of two).
SPARSE_FANIN = 8

#: Cycles from a word's write into the sparse readout's output queue (LUT or block RAM,
#: :data:`SPARSE_QUEUE_LUT_RAM_WORDS`) to its first beat on the port (ready always 1): the write,
#: the read, a register (a block RAM's output is slow), the read side's iterator, the port's
#: 2-entry queue.
SPARSE_SHOW_DELAY = 5

#: Groups of :data:`SPARSE_FANIN` masks that one copy of a fetch's select drives in the sparse
#: readout's first fetch stage (each select bit then has ``SPARSE_FANIN`` loads per group).
SPARSE_GROUPS_PER_COPY = 4


class ReadoutKind(enum.Enum):
    SERIAL = "serial"
    SPARSE = "sparse"


def check_readout(value: str) -> ReadoutKind:
    """The readout kind named ``value`` (a configuration field), or a ValueError."""
    try:
        return ReadoutKind(value)
    except ValueError:
        raise ValueError(
            f"readout must be one of {', '.join(k.value for k in ReadoutKind)}, not {value!r}"
        ) from None


def sparse_levels(width: int) -> list[int]:
    """The sparse readout's tree for ``width`` flags: the number of nodes on each level, leaves
    first (each holds :data:`SPARSE_FANIN` flags, zero-padded), the root (1 node) last."""
    if width < 1:
        raise ValueError(f"readout width must be at least 1, not {width!r}")
    levels = [-(-width // SPARSE_FANIN)]
    while levels[-1] > 1:
        levels.append(-(-levels[-1] // SPARSE_FANIN))
    return levels


def sparse_spread(width: int) -> list[int]:
    """Per level below the root of the sparse readout's tree (leaves first): the registers that
    spread the parent's select to the groups of the level's first fetch stage (one group per
    parent node, :data:`SPARSE_FANIN` masks each). 0 when one select drives at most
    :data:`SPARSE_GROUPS_PER_COPY` groups; else one registered copy per that many groups, fed
    by a distribution tree (:func:`xpfilt.hdl.cluster.distribute`), so no select bit drives more
    than ``SPARSE_FANIN * SPARSE_GROUPS_PER_COPY`` loads however wide the readout (8,000 flags:
    1,000 without)."""
    from xpfilt.hwspec.contract import distribution_depth  # imported late (Amaranth)

    sizes = sparse_levels(width)
    spread = []
    for groups in sizes[1:]:
        copies = -(-groups // SPARSE_GROUPS_PER_COPY)
        spread.append(distribution_depth(copies) + 1 if copies > 1 else 0)
    return spread


def sparse_latency(width: int) -> int:
    """Idle cycles between the sparse readout's header and its first id (ready always 1): each
    level below the root adds the cycles its fetch takes (one per level above it, and its
    :func:`sparse_spread`) plus two."""
    levels = len(sparse_levels(width))
    return levels * (levels - 1) // 2 + 2 * (levels - 1) + sum(sparse_spread(width))


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
    count: int  # type: ignore[assignment]  # shadows tuple.count, as the layout names it


class DocumentReadout(NamedTuple):
    """A whole document's readout: its sequence number, error flags and readout bits."""

    doc: int
    errors: int  # an xpfilt.hdl.frontend.Errors value
    bits: int  # bit i = readout position i


def collect_readout(
    beats: Iterable[Union[Beat, SparseBeat]], width: int, *, problems: Optional[list] = None
) -> list[DocumentReadout]:
    """Group readout beats of either kind into documents, checking their framing: a framing
    error raises ValueError, or, with ``problems`` given, is appended to it (the readout is
    kept as far as it goes; beats after the last complete document count as a problem)."""
    from xpfilt.hwspec.contract import Errors  # the flag names; imported late (Amaranth)

    def problem(message: str) -> None:
        if problems is None:
            raise ValueError(message)
        problems.append(message)

    out: list[DocumentReadout] = []
    bits = count = 0
    for beat in beats:
        if isinstance(beat, SparseBeat):
            if beat.header != (count == 0):
                problem(
                    f"sparse readout beat {count} of document {beat.doc} has header={beat.header}"
                )
            if not beat.header:
                if not 0 <= beat.id < width or bits >> beat.id & 1:
                    problem(
                        f"sparse readout of document {beat.doc} repeats or overruns id {beat.id}"
                    )
                bits |= 1 << beat.id
            count += 1
            if beat.last:
                if beat.count != count - 1:
                    problem(
                        f"sparse readout of document {beat.doc} says {beat.count} ids, "
                        f"not {count - 1}"
                    )
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


#: The sparse readout's output queue is LUT RAM up to this many words (1,024 queries and fewer:
#: a block RAM's 5.8 ns clock-to-out without its output register, which Yosys does not use,
#: limited 1,024 sparse to 130.8 MHz), block RAM above.
SPARSE_QUEUE_LUT_RAM_WORDS = 256
#: ... in banks of this many words, each read into its own register (a 256-word memory's 16-to-1
#: read multiplexer before its register limited 1,024 sparse to 145.1 MHz).
SPARSE_QUEUE_BANK_WORDS = 64


def sparse_queue_depth(width: int) -> int:
    """Words in the sparse readout's output queue (a header or a leaf's :data:`SPARSE_FANIN`
    flags each): a power of two that holds one document's header and every leaf, and the two
    words its registered room (``level < depth - 2`` a cycle ago) leaves unused."""
    return 1 << (sparse_levels(width)[0] + 2).bit_length()


def readout_cycles(kind: ReadoutKind, width: int, flags: int) -> int:
    """Cycles one document's readout is busy after the capture of ``flags`` (readout always
    ready): the input streams at a byte per cycle whenever each document has more bytes than
    the previous one's readout. Serial: one per readout bit. Sparse: the root of the tree is
    known and the header enters the output queue ``len(sparse_levels(width))`` cycles after
    the capture, then :func:`sparse_latency` idle cycles and one cycle per non-empty leaf (:data:`SPARSE_FANIN` flags), whatever its number of matches: the output
    queue takes a leaf a cycle and sends its ids one per cycle while the next document's
    flags are scanned (as long as it has room, :func:`sparse_queue_depth`)."""
    if kind is ReadoutKind.SERIAL:
        return width
    levels = len(sparse_levels(width))
    mask = (1 << SPARSE_FANIN) - 1
    leaves = sum(1 for k in range(0, width, SPARSE_FANIN) if flags >> k & mask)
    return levels + (sparse_latency(width) + leaves if leaves else 0)
