"""The programmable engine's hardware description and its configuration streams (§5.3).

The hardware is generated once from a :class:`HardwareSpec` (clusters × columns, tags, longest
tag, deepest level); any query set that fits is then loaded as a *configuration stream*, one bit
per cycle, without regenerating Verilog.

Columns form a chain inside a cluster: a query of ``n`` steps takes ``n`` consecutive columns;
column ``j``'s predecessor is column ``j - 1`` unless it is the first column of a query. The
engine has one *tag dictionary* of ``tags`` entries (``max_tag_len`` bytes each, zero-padded;
all zeros = matches no name) that its tag decoder compares every name with; entry ``d`` has the
tag index ``d + 1``, a name in no entry the index 0 (a name equal to several entries: the OR of
their indices). The index goes to every cluster, with whether the element is the root (level
1), and selects a row of the cluster's *tag matrix* (``2 ** (index_bits + 1)`` rows): the
columns that element matches. Row ``i`` (an element below the root) and row ``i + 2 **
index_bits`` (the root) have bit ``j`` set when column ``j``'s tag is entry ``i - 1`` or
column ``j`` is a wildcard (``*``: set in every row, row 0 too), except that the first column
of a query starting with ``/`` matches the root only (its bit is clear in the first half).
Per column two flags remain: ``first`` (a query starts here) and ``descendant`` (followed by
``//``). (Format 7 moved the first step's ``/`` or ``//`` from a per-column ``first_any``
flag into the matrix: one LUT fewer per column.) Every column has a match flag in the readout; the last
column of a query is that query's readout bit. With *readout groups*
(:attr:`HardwareSpec.readout_group` > 1) a group of that many consecutive columns has one match
flag and readout bit instead, taking on each push the new row's bit of the column its *answer
select* names (a query's readout column: at most one per group, :func:`configure` skips
columns to place them so). The queries loaded may name at most ``tags``
distinct tags in all.

Stream layout (bit ``i`` is bit ``i % 8`` of byte ``i // 8`` of ``config.bin``):

* header, 152 bits: magic ``0x5846`` (16), format version (8), hardware fingerprint (32), payload
  length in bits (32), base configuration id (32), new configuration id (32);
* payload: the dictionary's *presence* bit; when it is 1, its :attr:`HardwareSpec.dictionary_rows`
  rows of ``tags`` bits (entry 0 first), :data:`NIBBLE_ROWS` per name position ``p``: row
  :func:`dictionary_row` ``(p, low, v)`` has bit ``d`` set when byte ``p`` of entry ``d`` (0
  past its end) has ``v`` as its high (``low``: low) nibble (format 10: the decoder reads the two
  rows of a name byte's nibbles from block RAMs and ANDs a bit of each per entry, where it
  compared 8 bits per entry; 4x the bits of format 7's rows, byte ``p`` of every entry); then per cluster (cluster 0
  first) a presence bit; when it is 1, the cluster's tag matrix, row 0 first, ``columns`` bits a
  row (column 0 first), then per column (column 0 first) its flag bits
  (:attr:`HardwareSpec.column_flag_bits`: first, descendant; with comparator slots
  (:mod:`.slots`, after the tag entries in the dictionary's part) the column's slot select,
  then (also with a twig width) *closes* and *anchor*: the query's first ``text()`` step and the steps after it are
  decided when their elements close, see :func:`query_columns`; with a twig width, then
  ``twig_width`` children bits and ``twig_width`` negated bits, the split nodes of stream
  format 9 (11 with nibble rows), :mod:`.split_nodes`);
  with readout groups then each group's answer select (:attr:`HardwareSpec.group_select_bits`,
  group 0 first); after the last cluster, zero bits up to a whole byte;
* CRC-32 (IEEE, as zlib computes it) of header and payload, 32 bits.

A *full* stream has the dictionary and every cluster present and base id 0; a *delta* stream
(:func:`reconfigure`) has only the parts that change and the base id of the configuration it
changes: the engine refuses it unless that configuration is the active one. A configuration's
id (:func:`configuration_id`) is a digest of its full payload, so a delta and the full stream of
the same configuration carry the same new id. The engine checks all of it (magic, version,
fingerprint, base id, length, CRC) and only then switches every present part to its new
contents at once, between two documents; a truncated, corrupt, foreign or stale stream is
rejected and the old configuration stays. Streams of earlier formats (2: a dictionary per
cluster, no presence bits or ids; 3: a dictionary per cluster) are refused by the engine
(version and fingerprint differ) and by :func:`read_stream`.
"""

from __future__ import annotations

import bisect
import hashlib
import json
import zlib
from dataclasses import asdict, dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Optional, Sequence

from xpfilt.compiler.custom import (
    DEEPEST,
    POSITION_REFUSED,
    PREDICATES_REFUSED,
    TWIGS_REFUSED,
    EngineMode,
    clause_expression,
    hardware_refusal,
    without_nested_paths,
)
from xpfilt.compiler.split_nodes import (
    MAX_ALTERNATIVES,
    children_span,
    fits_as_written,
    or_distributed,
    twig_anchor,
    twig_nodes,
)
from xpfilt.hwspec.conditions import Bit, Condition
from xpfilt.hwspec.readout import check_readout
from xpfilt.hwspec.slots import (
    SLOT_FLAG_BITS,
    Chain,
    SlotLink,
    chains_of,
    decode_slots,
    encode_slots,
    slot_refusal,
    slot_rows,
    step_chain,
)
from xpfilt.lang.xpath import Axis, Query

__all__ = [
    "HardwareSpec",
    "ColumnConfig",
    "Configuration",
    "ConfigurationError",
    "StreamContents",
    "configure",
    "reconfigure",
    "read_stream",
    "configuration_id",
    "dictionary_entries",
    "dictionary_row",
    "dictionary_row_fields",
    "dictionary_rows",
    "cluster_queries",
    "query_width",
    "profile_answer",
    "MAGIC",
    "FORMAT_VERSION",
    "NIBBLE_ROWS",
    "HEADER_BITS",
    "CHECKED_HEADER_BITS",
    "CRC_BITS",
    "FLAG_BITS",
    "CLOSE_FLAG_BITS",
]

MAGIC = 0x5846  # "XF"
#: 2: a dictionary per cluster; 3: delta streams; 4: one dictionary; 5: comparator slots;
#: 6: text() slots and closing columns; 7: the first step's axis in the tag matrix (a root half);
#: 8: split nodes (hardware with a twig width: each closing column's children, see
#: :mod:`.split_nodes`); 9: split nodes' negated children (a nested path under ``not``);
#: 10 and 11 (with split nodes): the dictionary as nibble rows (:func:`dictionary_row`)
FORMAT_VERSION = 10
SPLIT_FORMAT_VERSION = 11
#: Dictionary rows per name position: one per value of the byte's high nibble, then of its low.
NIBBLE_ROWS = 32
HEADER_BITS = 152
#: The header bits a stream must match exactly (magic, version, fingerprint).
CHECKED_HEADER_BITS = 56
CRC_BITS = 32
FLAG_BITS = 2  # per column: first, descendant
#: With comparator slots, per column after its slot select: closes, anchor (text() steps).
CLOSE_FLAG_BITS = 2
#: Most generic columns in one cluster (4,096 take ~20 s and ~0.4 GB to generate).
MAX_CLUSTER_COLUMNS = 4096
#: Most generic columns in all (each is a readout bit per document).
MAX_COLUMNS = 65536
#: Most dictionary entries (an 8-bit tag index; each entry compares every name byte).
MAX_TAGS = 255
#: Most comparator slots (each decides one attribute condition on every attribute value).
MAX_SLOTS = 255
#: Widest twig width (a closing column's children among the next this many columns).
MAX_TWIG_WIDTH = 16


@dataclass(frozen=True)
class HardwareSpec:
    """Parameters of a programmable engine: ``clusters`` × ``columns`` generic columns."""

    clusters: int = 1
    columns: int = 128
    max_tag_len: int = 16
    max_depth: int = 16
    max_name: int = 32
    readout: str = "serial"  # a xpfilt.hwspec.readout.ReadoutKind value
    #: Distinct tags the loaded queries may name in all (the tag dictionary's entries; a
    #: ``index_bits``-bit index goes to every cluster). The NITF DTD has 123 element names.
    tags: int = 31
    #: Comparator slots: distinct attribute conditions (attribute, operator, constant) the
    #: loaded queries may test in all (0: no value predicates; see :mod:`.slots`).
    slots: int = 0
    #: Split nodes: each closing column's children are any of the next ``twig_width`` columns
    #: (a mask of that many bits in its flags; twigs such as ``//a[b]/c``, ``/a/b[c]/d``, see
    #: :mod:`.split_nodes`). 0: a closing column's child is the next column, the hardware
    #: before split nodes bit for bit.
    twig_width: int = 0
    #: Columns per readout bit (a power of two): each group of that many consecutive columns
    #: has one match flag, whose column the configuration selects (its *answer select*), so
    #: at most one readout column per group (:func:`configure` places queries so); 1: a flag
    #: per column. Needs no closing columns (no slots, no twig width: they set their flags on
    #: pops).
    readout_group: int = 1

    def __post_init__(self):
        for name in (
            "clusters",
            "columns",
            "max_tag_len",
            "max_depth",
            "max_name",
            "tags",
            "slots",
            "twig_width",
            "readout_group",
        ):
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool):
                raise ValueError(f"{name.replace('_', ' ')} must be an integer, not {value!r}")
        for name in ("clusters", "columns", "max_tag_len", "max_depth", "tags", "readout_group"):
            if getattr(self, name) < 1:
                raise ValueError(
                    f"{name.replace('_', ' ')} must be at least 1, not {getattr(self, name)!r}"
                )
        if self.columns % 2:
            raise ValueError(f"columns must be even, not {self.columns!r}")
        group = self.readout_group
        if group & (group - 1) or self.columns % group:
            raise ValueError(
                f"readout group must be a power of two dividing the columns "
                f"({self.columns}), not {group!r}"
            )
        if group > 1 and (self.slots or self.twig_width):
            raise ValueError(
                f"readout group must be 1 with closing columns (comparator slots or "
                f"a twig width: they set their match flags on pops), not {group!r}"
            )
        if self.columns > MAX_CLUSTER_COLUMNS:
            raise ValueError(
                f"columns must be at most {MAX_CLUSTER_COLUMNS:,} per cluster (use "
                f"more clusters), not {self.columns:,}"
            )
        if self.clusters * self.columns > MAX_COLUMNS:
            raise ValueError(
                f"clusters x columns must be at most {MAX_COLUMNS:,}, not "
                f"{self.clusters * self.columns:,}: that engine would need a "
                f"{self.clusters * self.columns:,}-bit readout per document and a "
                f"{self.stream_bits / 8e6:,.0f} MB configuration stream"
            )
        if self.max_depth > DEEPEST:
            raise ValueError(
                f"max depth must be at most {DEEPEST} (the rows of every stack "
                f"memory), not {self.max_depth!r}"
            )
        if self.tags > MAX_TAGS:
            raise ValueError(f"tags must be at most {MAX_TAGS:,}, not {self.tags:,}")
        if not 0 <= self.slots <= MAX_SLOTS:
            raise ValueError(f"slots must be 0 to {MAX_SLOTS}, not {self.slots:,}")
        if not 0 <= self.twig_width <= MAX_TWIG_WIDTH:
            raise ValueError(f"twig width must be 0 to {MAX_TWIG_WIDTH}, not {self.twig_width:,}")
        check_readout(self.readout)
        if self.max_tag_len > self.max_name:
            raise ValueError(
                f"max tag length must be at most max name ({self.max_name}), "
                f"not {self.max_tag_len!r}"
            )

    @property
    def index_bits(self) -> int:
        """Width of a tag index (0 = no entry, 1 ... ``tags``)."""
        return self.tags.bit_length()

    @property
    def matrix_rows(self) -> int:
        """Rows of the tag matrix: one per tag index for elements below the root, then one per
        tag index for the root (level 1)."""
        return 2 << self.index_bits

    @property
    def select_bits(self) -> int:
        """A column's comparator select (0: no predicate, ``s + 1``: slot ``s``)."""
        return self.slots.bit_length()

    @property
    def closing(self) -> bool:
        """The columns can be decided when their elements close (``text()`` slots, split
        nodes): they have closes and anchor flags and pending bits."""
        return bool(self.slots or self.twig_width)

    @property
    def column_flag_bits(self) -> int:
        """Flag bits per column: first, descendant, the slot select, with closing columns
        closes and anchor, then ``twig_width`` children bits and as many negated bits."""
        return (
            FLAG_BITS
            + self.select_bits
            + (CLOSE_FLAG_BITS if self.closing else 0)
            + 2 * self.twig_width
        )

    @property
    def children_bit(self) -> int:
        """A column's first children bit in its flags (with a twig width): bit ``i`` set when
        column ``j + 1 + i`` is a child of column ``j``."""
        return self.closes_bit + CLOSE_FLAG_BITS

    @property
    def negated_bit(self) -> int:
        """A column's first negated bit (with a twig width): bit ``i`` set when its child
        ``j + 1 + i`` must have held below the element nowhere (a nested path under ``not``)."""
        return self.children_bit + self.twig_width

    @property
    def format_version(self) -> int:
        """The stream format this hardware takes."""
        return SPLIT_FORMAT_VERSION if self.twig_width else FORMAT_VERSION

    @property
    def group_select_bits(self) -> int:
        """A readout group's answer select: the group's column whose flag is its bit."""
        return (self.readout_group - 1).bit_length()

    @property
    def readout_width(self) -> int:
        """Readout bits per document: one per group of :attr:`readout_group` columns."""
        return self.clusters * self.columns // self.readout_group

    @property
    def cluster_flag_bits(self) -> int:
        """A cluster's flags in its payload: each column's, then each readout group's answer
        select."""
        return self.column_flag_bits * self.columns + self.group_select_bits * (
            self.columns // self.readout_group
        )

    @property
    def closes_bit(self) -> int:
        """A column's ``closes`` flag in its flags (``anchor`` is the next bit; with slots)."""
        return FLAG_BITS + self.select_bits

    @property
    def slot_bits(self) -> int:
        """The comparator slots' part of the dictionary's payload."""
        return self.slots * (8 * slot_rows(self.max_tag_len) + SLOT_FLAG_BITS)

    @property
    def dictionary_bits(self) -> int:
        """The dictionary's payload (without its presence bit): tag entries, then the
        comparator slots."""
        return self.dictionary_rows * self.tags + self.slot_bits

    @property
    def dictionary_rows(self) -> int:
        """The tag entries' rows (``tags`` bits each, :func:`dictionary_row`)."""
        return NIBBLE_ROWS * self.max_tag_len

    @property
    def cluster_bits(self) -> int:
        """A cluster's payload (without its presence bit): tag matrix and flags."""
        return self.matrix_rows * self.columns + self.cluster_flag_bits

    def payload_bits_for(self, present: int, dictionary: bool = True) -> int:
        """Payload bits of a stream with ``present`` clusters (and the ``dictionary``) present,
        whole bytes."""
        bits = 1 + dictionary * self.dictionary_bits + self.clusters + present * self.cluster_bits
        return bits + -bits % 8

    @property
    def payload_bits(self) -> int:
        """Payload bits of a full stream (the longest)."""
        return self.payload_bits_for(self.clusters)

    @property
    def stream_bits(self) -> int:
        """Bits of a full stream."""
        return HEADER_BITS + self.payload_bits + CRC_BITS

    @property
    def header_check(self) -> int:
        """The first :data:`CHECKED_HEADER_BITS` of every stream this hardware accepts."""
        return MAGIC | self.format_version << 16 | self.fingerprint << 24

    def header(self, payload_bits: int, base_id: int, new_id: int) -> int:
        """A stream header: magic, version, fingerprint, length, base and new id."""
        return self.header_check | payload_bits << 56 | base_id << 88 | new_id << 120

    @property
    def fingerprint(self) -> int:
        """32 bits that change with every parameter (and the stream format)."""
        text = json.dumps([self.format_version, self._fields()], sort_keys=True).encode()
        return int.from_bytes(hashlib.sha256(text).digest()[:4], "little")

    def _fields(self) -> dict:
        """The parameters (``twig_width`` and ``readout_group`` only when set: hardware
        without split nodes or readout groups keeps its fingerprint and ``hardware.json``)."""
        fields = asdict(self)
        if not self.twig_width:
            del fields["twig_width"]
        if self.readout_group == 1:
            del fields["readout_group"]
        return fields

    def to_json(self) -> str:
        return json.dumps(
            {"mode": "programmable", **self._fields(), "fingerprint": f"{self.fingerprint:08x}"},
            indent=1,
        )

    @classmethod
    def load(cls, directory) -> "HardwareSpec":
        """The ``hardware.json`` of a directory ``xpfilt compile --mode programmable`` (or
        ``xpfilt build``) wrote; ValueError naming the directory when it is not one."""
        from pathlib import Path

        try:
            return cls.from_json((Path(directory) / "hardware.json").read_text())
        except (OSError, ValueError, KeyError, TypeError) as exc:
            raise ValueError(
                f"{directory}: not a programmable hardware directory ({exc})"
            ) from None

    @classmethod
    def from_json(cls, text: str) -> "HardwareSpec":
        raw = json.loads(text)
        if not isinstance(raw, dict):
            raise ValueError(f"hardware must be a JSON object, not {type(raw).__name__}")
        missing = [
            k
            for k in ("clusters", "columns", "max_tag_len", "max_depth", "max_name")
            if k not in raw
        ]
        if missing:
            raise ValueError(f"hardware must give {', '.join(missing)}")
        if raw.get("mode") != "programmable":
            raise ValueError(f"hardware must be programmable, not {raw.get('mode')!r}")
        if "tags_per_cluster" in raw:
            raise ValueError(
                "hardware must have one tag dictionary (stream format "
                f"{FORMAT_VERSION}), not one per cluster: rebuild it with "
                "`xpfilt compile --mode programmable`"
            )
        return cls(
            **{k: raw[k] for k in ("clusters", "columns", "max_tag_len", "max_depth", "max_name")},
            readout=raw.get("readout", "serial"),
            **{k: raw[k] for k in ("tags", "slots", "twig_width", "readout_group") if k in raw},
        )


@dataclass(frozen=True)
class ColumnConfig:
    tag: bytes = b""  # empty: matches no name (unless wildcard); in the dictionary
    first: bool = False
    first_any: bool = False
    wildcard: bool = False
    descendant: bool = False
    slot: int = 0  # 0: no predicate; s + 1: gated by comparator slot s
    closes: bool = False  # decided when its element closes (a text() step and after it)
    anchor: bool = False  # ... the first of those: holding there is the query's match
    children: int = 0  # closing: its children, bit i = column j + 1 + i (twig width)
    negated: int = 0  # ... those of them under a 'not' (held nowhere below)
    answer: bool = False  # its path's readout column (the answer select of its group)


class ConfigurationError(ValueError):
    """The query set does not fit the hardware; says which queries and by how much."""

    def __init__(self, message: str, missing_columns: int = 0):
        self.missing_columns = missing_columns
        super().__init__(message)


@dataclass(frozen=True)
class Configuration:
    """Where every query went (:func:`configure`, :func:`reconfigure`): ``columns[k][j]``
    configures column ``j`` of cluster ``k``, ``tags`` is the dictionary (entry ``d`` = tag
    index ``d + 1``; ``b""``: a free entry), ``links`` the comparator slots (slot ``s``:
    ``links[s]``, None: free); ``readout_bit[number]`` is the readout position of path profile
    ``number``'s readout column, ``combined[number]`` a boolean combination of paths' and/or/not
    over its paths' readout bits (a :class:`xpfilt.hwspec.conditions.Condition` with
    :class:`~xpfilt.hwspec.conditions.Bit` leaves; the paths are placed as internal queries
    without a number of their own, see :func:`profile_answer`); ``rejected``: (query number,
    why) of the queries not configured, ``missing_columns`` the columns short for those
    without room.

    A configuration made from a loaded one (``base``, the full stream's contents) keeps the
    base's payload for every cluster not in ``changed`` and its dictionary unless
    ``dictionary_changed``: :meth:`delta` carries only what changed (for a configuration
    without a base, every part: the full stream)."""

    spec: HardwareSpec
    columns: tuple[tuple[ColumnConfig, ...], ...]
    readout_bit: dict
    rejected: tuple[tuple[int, str], ...] = ()  # (query number, why it is not configured)
    missing_columns: int = 0  # columns short for the queries without room
    tags: tuple[bytes, ...] = ()  # () = the columns' tags in order
    links: tuple[Optional[SlotLink], ...] = ()  # the comparator slots (slot s: [s])
    combined: dict = field(default_factory=dict)  # combinations of paths: number -> expression
    base: Optional[StreamContents] = field(default=None, compare=False, repr=False)
    changed: tuple[int, ...] = ()  # the clusters that differ from the base (() = every one)
    dictionary_changed: bool = True

    def __post_init__(self):
        if not self.tags:
            object.__setattr__(
                self,
                "tags",
                tuple(dict.fromkeys(c.tag for cluster in self.columns for c in cluster if c.tag)),
            )
        if len(self.tags) > self.spec.tags:
            raise ValueError(
                f"the dictionary's tags must be at most {self.spec.tags}, not {len(self.tags)}"
            )
        unknown = {c.tag for cluster in self.columns for c in cluster if c.tag} - set(self.tags)
        if unknown:
            raise ValueError(f"columns must name tags of the dictionary, not {sorted(unknown)!r}")
        if self.base is None and not self.changed:
            object.__setattr__(self, "changed", tuple(range(len(self.columns))))

    @property
    def answers(self) -> dict:
        """Where each configured profile's answer is: number -> a readout bit or a combination's
        expression over readout bits (:func:`xpfilt.model.custom.answer_holds` decides it)."""
        return {**self.readout_bit, **self.combined}

    def summary(self) -> str:
        """A readable account of what did not fit (empty when everything did)."""
        if not self.rejected:
            return ""
        lines = [f"{len(self.rejected)} queries are not configured:"]
        lines += [f"  {reason}" for _, reason in self.rejected[:50]]
        if len(self.rejected) > 50:
            lines.append(f"  ... and {len(self.rejected) - 50} more")
        if self.missing_columns:
            lines.append(
                f"at least {self.missing_columns} more columns would be needed "
                f"(the hardware has {self.spec.clusters * self.spec.columns})"
            )
        return "\n".join(lines)

    def write_readout_map(self, stream_path) -> None:
        """Write ``STREAM.map.tsv`` beside a stream: ``query number<TAB>readout bit`` lines, for
        a combination of paths ``query number<TAB>expression`` (JSON: ``["and", ["c", 3],
        ["not", ["c", 5]]]`` over readout bits) (:func:`read_readout_map` reads them)."""
        readout_map_path(stream_path).write_text(
            "".join(
                f"{number}\t{json.dumps(answer_json(where))}\n"
                for number, where in sorted(self.answers.items())
            )
        )

    @cached_property
    def dictionary_payload(self) -> int:
        """The dictionary's payload (``spec.dictionary_bits``, without the presence bit)."""
        if self.base is not None and not self.dictionary_changed:
            return self.base.dictionary
        return _dictionary_payload(self.spec, self.tags, self.links)

    @cached_property
    def cluster_payloads(self) -> tuple[int, ...]:
        """Each cluster's payload (``spec.cluster_bits`` bits, without the presence bit)."""
        index = {t: d + 1 for d, t in enumerate(self.tags) if t}
        changed = set(self.changed)
        return tuple(
            _cluster_payload(self.spec, index, cluster)
            if self.base is None or k in changed
            else self.base.payloads[k]
            for k, cluster in enumerate(self.columns)
        )

    @property
    def id(self) -> int:
        """This configuration's id (:func:`configuration_id`)."""
        return configuration_id(
            _payload_bytes(self.spec, self.dictionary_payload, self.cluster_payloads)
        )

    def stream(self) -> bytes:
        """The full configuration stream (header, payload, CRC) as bytes, LSB first."""
        return _full_stream(self.spec, self.dictionary_payload, self.cluster_payloads)

    def delta(self) -> bytes:
        """The stream that turns the base's configuration into this one: only the ``changed``
        clusters, and the dictionary when ``dictionary_changed`` (the engine refuses it on
        any other configuration); without a base, the full stream."""
        if self.base is None:
            return self.stream()
        changed = set(self.changed)
        payload = _payload_bytes(
            self.spec,
            self.dictionary_payload if self.dictionary_changed else None,
            [p if k in changed else None for k, p in enumerate(self.cluster_payloads)],
        )
        return _framed(self.spec, payload, self.base.new_id, self.id)


def _dictionary_payload(
    spec: HardwareSpec, tags: Sequence[bytes], links: Sequence[Optional[SlotLink]] = ()
) -> int:
    """The dictionary's rows, then the comparator slots' rows and flags, as an integer
    (stream order)."""
    entries = [t.ljust(spec.max_tag_len, b"\0") for t in tags] + [bytes(spec.max_tag_len)] * (
        spec.tags - len(tags)
    )
    rows = [0] * spec.dictionary_rows
    for p, column in enumerate(zip(*entries)):  # byte p of every entry
        for low, nibbles in (
            (False, bytes(b >> 4 for b in column)),
            (True, bytes(b & 15 for b in column)),
        ):
            for v in set(nibbles):  # entry 0 is the row's bit 0
                rows[dictionary_row(p, low, v)] = int(nibbles[::-1].translate(_ONE_WHERE[v]), 2)
    value = _concat(rows, spec.tags)
    if spec.slots:
        slots, flags = encode_slots(links, spec.slots, spec.max_tag_len)
        value |= (_concat(slots, 8 * spec.slots) | flags << (8 * spec.slots * len(slots))) << (
            spec.dictionary_rows * spec.tags
        )
    return value


#: Per nibble value v, a bytes.translate table: v -> "1", any other byte -> "0".
_ONE_WHERE = [bytes(b"1"[0] if n == v else b"0"[0] for n in range(256)) for v in range(16)]


def dictionary_row(position: int, low: bool, value: int) -> int:
    """The dictionary row of the entries whose byte ``position`` has ``value`` as its high
    (``low``: low) nibble: its bits 0-3 the value, bit 4 ``low``, the bits above the position
    (the tag decoder's write address is these fields)."""
    return NIBBLE_ROWS * position + 16 * low + value


def dictionary_row_fields(row: int) -> tuple[int, bool, int]:
    """The ``(position, low, value)`` of a dictionary row: the inverse of :func:`dictionary_row`."""
    position, nibble = divmod(row, NIBBLE_ROWS)
    return position, bool(nibble >> 4), nibble & 15


def dictionary_rows(spec: HardwareSpec, dictionary: int) -> list[int]:
    """The tag entries' rows of a dictionary payload, row 0 first."""
    mask = (1 << spec.tags) - 1
    return [dictionary >> (spec.tags * r) & mask for r in range(spec.dictionary_rows)]


def dictionary_links(spec: HardwareSpec, dictionary: int) -> list[Optional[SlotLink]]:
    """The comparator slots a dictionary payload holds (None: a free slot), slot 0 first."""
    if not spec.slots:
        return []
    value = dictionary >> (spec.dictionary_rows * spec.tags)
    width, count = 8 * spec.slots, slot_rows(spec.max_tag_len)
    rows = [value >> (width * r) & ((1 << width) - 1) for r in range(count)]
    return decode_slots(rows, value >> (width * count), spec.slots, spec.max_tag_len)


def _cluster_payload(spec: HardwareSpec, index: dict, cluster: Sequence[ColumnConfig]) -> int:
    """One cluster's tag matrix and flags as an integer (stream order); ``index[tag]`` is the
    tag's index in the dictionary."""
    half = spec.matrix_rows // 2
    matrix = [0] * half
    wildcards = flags = root_only = selects = 0
    for j, c in enumerate(cluster):
        if c.answer:
            selects |= (j % spec.readout_group) << (
                spec.group_select_bits * (j // spec.readout_group)
            )
        if c.wildcard:
            wildcards |= 1 << j
        elif c.tag:
            matrix[index[c.tag]] |= 1 << j
        if c.first and not c.first_any:
            root_only |= 1 << j
        flags |= (
            c.first
            | c.descendant << 1
            | c.slot << FLAG_BITS
            | (c.closes | c.anchor << 1) << spec.closes_bit
            | (
                c.children << spec.children_bit | c.negated << spec.negated_bit
                if spec.twig_width
                else 0
            )
        ) << (spec.column_flag_bits * j)
    rows = [row | wildcards for row in matrix]
    flags |= selects << (spec.column_flag_bits * spec.columns)
    return _concat([row & ~root_only for row in rows] + rows, spec.columns) | flags << (
        spec.matrix_rows * spec.columns
    )


def _payload_bytes(
    spec: HardwareSpec, dictionary: Optional[int], payloads: Sequence[Optional[int]]
) -> bytes:
    """The stream payload: the dictionary's and each cluster's presence bit and, when present
    (not None), its payload; zero bits to a whole byte."""
    width = spec.cluster_bits + 1
    if all(p is not None for p in payloads):
        value = _concat([1 | p << 1 for p in payloads], width)
    else:
        value, shift = 0, 0
        for p in payloads:
            if p is None:
                shift += 1
            else:
                value |= (1 | p << 1) << shift
                shift += width
    value = (
        1 | dictionary << 1 | value << (spec.dictionary_bits + 1)
        if dictionary is not None
        else value << 1
    )
    present = sum(p is not None for p in payloads)
    return value.to_bytes(spec.payload_bits_for(present, dictionary is not None) // 8, "little")


def configuration_id(full_payload: bytes) -> int:
    """A configuration's 32-bit id: a digest of its full stream's payload (never 0, the base
    id of a full stream)."""
    return int.from_bytes(hashlib.sha256(full_payload).digest()[:4], "little") or 1


def _framed(spec: HardwareSpec, payload: bytes, base_id: int, new_id: int) -> bytes:
    body = (
        spec.header(8 * len(payload), base_id, new_id).to_bytes(HEADER_BITS // 8, "little")
        + payload
    )
    return body + zlib.crc32(body).to_bytes(CRC_BITS // 8, "little")


def _full_stream(spec: HardwareSpec, dictionary: int, payloads: Sequence[int]) -> bytes:
    payload = _payload_bytes(spec, dictionary, payloads)
    return _framed(spec, payload, 0, configuration_id(payload))


def _or_rows(value: int, rows: int, width: int) -> int:
    """The OR of the ``rows`` rows of ``width`` bits ``value`` holds (row 0 its lowest bits),
    folded in halves."""
    while rows > 1:
        rest = rows - rows // 2
        value = value & ((1 << width * rest) - 1) | value >> (width * rest)
        rows = rest
    return value


def _concat(chunks: list[int], width: int) -> int:
    """``chunks[0] | chunks[1] << width | ...``, pairwise (a running OR into one large integer
    costs time quadratic in its length)."""
    if not chunks:
        return 0
    while len(chunks) > 1:
        chunks = [
            chunks[i] | (chunks[i + 1] << width if i + 1 < len(chunks) else 0)
            for i in range(0, len(chunks), 2)
        ]
        width *= 2
    return chunks[0]


@dataclass(frozen=True)
class StreamContents:
    """A configuration stream read back: ``dictionary`` is the dictionary's payload and
    ``payloads[k]`` cluster ``k``'s, None when the stream leaves that part as it is."""

    base_id: int
    new_id: int
    dictionary: Optional[int]
    payloads: tuple[Optional[int], ...]

    @property
    def full(self) -> bool:
        return (
            self.base_id == 0
            and self.dictionary is not None
            and all(p is not None for p in self.payloads)
        )


def read_stream(spec: HardwareSpec, data: bytes, what: str = "stream") -> StreamContents:
    """Check and split a configuration stream for ``spec`` (as the engine checks it);
    ValueError naming ``what`` and the first thing wrong."""
    head = HEADER_BITS // 8
    if len(data) < head + CRC_BITS // 8:
        raise ValueError(
            f"{what} must be a configuration stream of at least "
            f"{head + CRC_BITS // 8} bytes, not {len(data)}"
        )
    header = int.from_bytes(data[:head], "little")
    if header & 0xFFFF != MAGIC:
        raise ValueError(
            f"{what} must start with the magic {MAGIC:#06x}, not "
            f"{header & 0xFFFF:#06x}: not a configuration stream"
        )
    if header >> 16 & 0xFF != spec.format_version:
        raise ValueError(
            f"{what} must be configuration stream format {spec.format_version}, not "
            f"{header >> 16 & 0xFF}: regenerate it with `xpfilt configure`"
        )
    if header & ((1 << CHECKED_HEADER_BITS) - 1) != spec.header_check:
        raise ValueError(
            f"{what} must be generated for this hardware (fingerprint "
            f"{spec.fingerprint:08x}), not {header >> 24 & 0xFFFFFFFF:08x}"
        )
    if zlib.crc32(data[:-4]) != int.from_bytes(data[-4:], "little"):
        raise ValueError(f"{what} must end with the CRC-32 of its contents: corrupt")
    length = header >> 56 & 0xFFFFFFFF
    payload = data[head:-4]
    if length != 8 * len(payload):
        raise ValueError(
            f"{what}: payload length must be {8 * len(payload)} bits (the "
            f"stream's size), not {length}"
        )

    def bits(at: int, count: int) -> int:  # payload bits at ... at + count - 1 (0 past it)
        return int.from_bytes(payload[at // 8 : (at + count + 7) // 8], "little") >> at % 8 & (
            (1 << count) - 1
        )

    dictionary = None
    at = 1
    if bits(0, 1):
        dictionary = bits(1, spec.dictionary_bits)
        at += spec.dictionary_bits
    width = spec.cluster_bits
    payloads = []
    for _ in range(spec.clusters):
        if bits(at, 1):
            payloads.append(bits(at + 1, width))
            at += width + 1
        else:
            payloads.append(None)
            at += 1
    if at > 8 * len(payload) or at + -at % 8 != 8 * len(payload) or bits(at, 8 * len(payload) - at):
        raise ValueError(
            f"{what}: payload must be {at + -at % 8} bits for its parts, not {8 * len(payload)}"
        )
    return StreamContents(
        header >> 88 & 0xFFFFFFFF, header >> 120 & 0xFFFFFFFF, dictionary, tuple(payloads)
    )


def dictionary_entries(spec: HardwareSpec, dictionary: int) -> list[str]:
    """The entries a dictionary payload holds (``""``: a free entry), entry 0 first (each byte
    the OR of the nibble values whose rows have the entry: one each in a stream we write)."""
    size = spec.dictionary_rows * spec.tags
    bits = format(dictionary & ((1 << size) - 1), f"0{size}b")[::-1]  # bit i at [i]
    entries = [bytearray(spec.max_tag_len) for _ in range(spec.tags)]
    for r in range(spec.dictionary_rows):  # a value's bits into its entries' bytes
        position, low, nibble = dictionary_row_fields(r)
        value = nibble if low else nibble << 4
        if value:
            row = bits[r * spec.tags : (r + 1) * spec.tags]
            d = row.find("1")
            while d >= 0:
                entries[d][position] |= value
                d = row.find("1", d + 1)
    return [bytes(e).split(b"\0", 1)[0].decode() for e in entries]


def cluster_queries(
    spec: HardwareSpec, entries: Sequence[str], payload: int, chains: Optional[dict] = None
) -> list[tuple[int, str]]:
    """The queries a cluster's payload holds (``entries``: the dictionary's, ``chains``: its
    slots' chains by first slot, :func:`xpfilt.hwspec.slots.chains_of`): (first column, path) pairs,
    in column order, a path as :func:`_path_text`
    writes it. A query is a run of used columns (a tag or ``*``) from a ``first`` column to
    the next ``first`` or unused column."""
    n = spec.columns
    half = spec.matrix_rows // 2
    # the columns an element below the root can match: the OR of the first half's rows
    below = _or_rows(payload & ((1 << n * half) - 1), half, n)
    if n % 8:  # the root's rows name every used column
        matrix = [payload >> (n * i) & ((1 << n) - 1) for i in range(half, 2 * half)]
    else:  # whole bytes a row: slices (shifts cost more)
        data, w = payload.to_bytes(spec.cluster_bits // 8 + 1, "little"), n // 8
        rows = [data[w * i : w * i + w] for i in range(half, 2 * half)]
        matrix = [
            0 if row == rows[0] else int.from_bytes(row, "little")  # 0: no tag
            for row in rows
        ]
        matrix[0] = int.from_bytes(rows[0], "little")
    wild = matrix[0]
    names = ["*" if wild >> j & 1 else "" for j in range(n)] if wild else [""] * n
    for i in range(1, half):
        row = matrix[i] & ~wild
        while row:
            j = (row & -row).bit_length() - 1
            names[j] = entries[i - 1]
            row &= row - 1
    w = spec.column_flag_bits
    flags = format(payload >> (spec.matrix_rows * n) & ((1 << w * n) - 1), f"0{w * n}b")[::-1]
    first, descendant = (flags[k::w] for k in range(FLAG_BITS))
    slot = (
        [int(flags[w * j + FLAG_BITS : w * j + spec.closes_bit][::-1] or "0", 2) for j in range(n)]
        if spec.select_bits
        else [0] * n
    )
    marks = (
        [
            _children_mark(
                flags[w * j + spec.closes_bit] == "1",
                (
                    int(flags[w * j + spec.children_bit : w * j + spec.negated_bit][::-1], 2),
                    int(flags[w * j + spec.negated_bit : w * (j + 1)][::-1], 2),
                ),
            )
            for j in range(n)
        ]
        if spec.twig_width
        else [""] * n
    )
    # column j's text but its axis, then with the axis it has after column j - 1
    texts = [
        names[j] + _slot_text(chains.get(slot[j] - 1) if slot[j] and chains else None) + marks[j]
        if names[j]
        else ""
        for j in range(n)
    ]
    after = [""] + [("//" if d == "1" else "/") + t for d, t in zip(descendant, texts[1:])]
    out = []
    start = first.find("1")
    while start >= 0:  # a query: from a first column to the next or a gap
        end = first.find("1", start + 1)
        end = n if end < 0 else end
        gap = names.index("", start, end) if "" in names[start:end] else end
        if gap > start:
            out.append(
                (
                    start,
                    ("//" if below >> start & 1 else "/")
                    + texts[start]
                    + "".join(after[start + 1 : gap]),
                )
            )
        else:
            out.append((start, ""))
        start = first.find("1", end) if end < n else -1
    return out


def query_columns(query: Query, slot_of: Optional[dict] = None) -> list[ColumnConfig]:
    """The chain of columns one query occupies (``slot_of``: chain key -> its first slot, for
    its steps' predicates); a combination of paths: its paths' chains one after the other.
    From the first step with a ``text()`` comparison (the *anchor*) on, the columns close:
    decided bottom up when their elements close (see :mod:`xpfilt.hdl.programmable`)."""
    return [c for path in query.paths for c in _path_columns(path, slot_of)]


def _path_columns(query: Query, slot_of: Optional[dict]) -> list[ColumnConfig]:
    steps = column_steps(query)
    anchor = anchor_step(query)
    children = _children(query)
    answer = readout_column(query)
    out = []
    for j, step in enumerate(steps):
        followed = j + 1 < len(steps) and steps[j + 1].axis is Axis.DESCENDANT
        chain = step_chain(step)
        out.append(
            ColumnConfig(
                tag=b"" if step.is_wildcard else step.name.encode(),
                first=j == 0,
                first_any=j == 0 and step.axis is Axis.DESCENDANT,
                wildcard=step.is_wildcard,
                descendant=followed,
                slot=slot_of[chain.key] + 1 if chain else 0,
                closes=anchor is not None and j >= anchor,
                anchor=j == anchor,
                children=children[j][0],
                negated=children[j][1],
                answer=j == answer,
            )
        )
    return out


def _children(path: Query) -> list[tuple[int, int]]:
    """Each column's (children mask, negated mask) (closing columns): a twig's split nodes,
    else the next column for each closing column but the last."""
    if path.has_nested_paths:
        return [(n.mask, n.negated_mask) for n in twig_nodes(path)]
    anchor, width = anchor_step(path), len(path)
    return [(int(anchor is not None and anchor <= j < width - 1), 0) for j in range(width)]


def _children_mark(closes: bool, masks: tuple[int, int]) -> str:
    """How :func:`cluster_queries` and :func:`_path_text` show a column's closing and
    (children, negated) masks on hardware with a twig width (a twig's columns read as a path
    otherwise)."""
    children, negated = masks
    return (f"{{{children}!{negated}}}" if negated else f"{{{children}}}") if closes else ""


def column_steps(path: Query) -> tuple:
    """The steps a path's columns test, in column order: its steps; a twig's (split nodes,
    :func:`xpfilt.compiler.split_nodes.twig_nodes`) every step of it, branches included, without its
    nested paths."""
    if path.has_nested_paths:
        return tuple(n.step for n in twig_nodes(path))
    return path.steps


def anchor_step(query: Query) -> Optional[int]:
    """The first column decided at the close: of a twig its anchor, else the first step whose
    predicates compare text (None: none do)."""
    if not query.has_predicates:
        return None
    if query.has_nested_paths:
        return twig_anchor(query)
    return next((j for j, s in enumerate(query.steps) if (c := step_chain(s)) and c.closes), None)


def readout_column(query: Query) -> int:
    """The column of a path (from its first) whose match flag is its readout bit: the
    anchor's, else the last step's."""
    anchor = anchor_step(query)
    return len(query) - 1 if anchor is None else anchor


def answer_offsets(query: Query) -> list[int]:
    """The readout columns of a profile's paths, counted from its first column."""
    out, at = [], 0
    for path in query.paths:
        out.append(at + readout_column(path))
        at += path_width(path)
    return out


def _group_fit(spec: HardwareSpec, query: Query, taken: set, lo: int, hi: int) -> Optional[int]:
    """The first column from ``lo`` on where ``query`` fits before column ``hi`` with each of
    its readout columns in a readout group of its own that is not in ``taken``; None if none
    does. (Readout groups of one column: ``lo`` when the query fits.)"""
    size, group = query_width(query), spec.readout_group
    if group == 1:
        return lo if hi - lo >= size else None
    offsets = answer_offsets(query)
    for start in range(lo, hi - size + 1):
        groups = {(start + o) // group for o in offsets}
        if len(groups) == len(offsets) and not groups & taken:
            return start
    return None


def _answer_groups(spec: HardwareSpec, query: Query, start: int) -> set:
    """The readout groups (of its cluster) whose answer selects ``query`` from ``start`` takes."""
    return {(start + o) // spec.readout_group for o in answer_offsets(query)}


def query_width(query: Query) -> int:
    """The columns a profile takes: a path's steps (a twig's: all of them, branches
    included), a combination's paths' steps."""
    return sum(path_width(path) for path in query.paths)


def path_width(path: Query) -> int:
    """The columns one path takes."""
    return len(column_steps(path))


def profile_answer(query: Query, column: int, group: int = 1):
    """Where profile ``query``'s answer is when its columns start at column ``column`` (of the
    engine; ``group``: :attr:`HardwareSpec.readout_group`): a path's readout column's bit; a
    combination's clause over its paths' readout bits (a condition with :class:`Bit` readout
    bit leaves, decided at the document's end from the match flags, so ``not`` is "matched
    nowhere in the document")."""
    bits = [(column + offset) // group for offset in answer_offsets(query)]
    if query.is_path:
        return bits[0]
    return clause_expression(query.clause, []).with_leaves(lambda leaf: Bit(bits[leaf.index]))


def _record(readout_bit: dict, combined: dict, query: Query, column: int, group: int = 1) -> None:
    """Note where ``query``, placed from column ``column`` of the engine on, is answered."""
    where = profile_answer(query, column, group)
    (readout_bit if query.is_path else combined)[query.number] = where


def query_chains(query: Query) -> dict:
    """The slot chains of a query's steps (every path's): key -> chain (the slots must hold
    them)."""
    return {c.key: c for p in query.paths for s in column_steps(p) if (c := step_chain(s))}


def _chain_keys(query: Query) -> frozenset:
    return frozenset(query_chains(query))


def _slot_text(chain: Optional[Chain]) -> str:
    return f"[{chain.key!r}]" if chain else ""


def _path_text(query: Query, twig_width: int = 0) -> str:
    """A path as :func:`cluster_queries` reads it back from a stream of hardware with
    ``twig_width`` (a step's predicates as its chain's key; with a twig width each closing
    column's children); "" for a query no stream holds (predicates no slot decides)."""
    if not query.has_predicates:  # no chains, no closing columns
        return "".join(("//" if s.axis is Axis.DESCENDANT else "/") + s.name for s in query.steps)
    try:
        steps = column_steps(query)
        anchor = anchor_step(query)
        marks = (
            [
                _children_mark(anchor is not None and j >= anchor, mask)
                for j, mask in enumerate(_children(query))
            ]
            if twig_width
            else [""] * len(steps)
        )
        return "".join(
            ("//" if s.axis is Axis.DESCENDANT else "/") + s.name + _slot_text(step_chain(s)) + mark
            for s, mark in zip(steps, marks)
        )
    except ValueError:
        return ""


def query_tags(query: Query) -> frozenset[bytes]:
    """The distinct tags a query's columns name (a cluster's dictionary must hold them)."""
    return frozenset(s.name.encode() for p in query.paths for s in column_steps(p) if s.name != "*")


def _refusal(q: Query, spec: HardwareSpec) -> str:
    """Why query ``q`` cannot go on this hardware at all ("" if it can)."""
    why = hardware_refusal(q, EngineMode.PROGRAMMABLE)
    if why and not fits_as_written(q) and or_distributed(q) is None:
        why = (
            f"its 'or's spread a path into more than {MAX_ALTERNATIVES} paths (the "
            f"programmable engine takes an 'or' of comparisons per step, and nested paths "
            f"under 'and')"
        )
    elif why == TWIGS_REFUSED and spec.twig_width:
        why = _split_refusal(q, spec)
    elif why == PREDICATES_REFUSED:  # the slots decide, below
        why = ""
    if why:
        return f"query {q.number} ({q}): {why}"
    long_tags = [
        s.name for p in q.paths for s in column_steps(p) if len(s.name.encode()) > spec.max_tag_len
    ]
    if any(s.predicates for p in q.paths for s in column_steps(p)):
        why = _predicate_refusal(q, spec)
    if why:
        return f"query {q.number} ({q}): {why}"
    if long_tags:
        return (
            f"query {q.number} ({q}): tag {long_tags[0]!r} is longer than the hardware's "
            f"max tag length {spec.max_tag_len}"
        )
    if query_width(q) > spec.columns:
        paths = "" if q.is_path else f" (of its {len(q.paths)} paths)"
        return (
            f"query {q.number} ({q}): {query_width(q)} steps{paths} do not fit in a "
            f"cluster of {spec.columns} columns"
        )
    if len(needs := query_tags(q)) > spec.tags:
        return (
            f"query {q.number} ({q}): {len(needs)} distinct tags do not fit the "
            f"dictionary's {spec.tags} tags"
        )
    if (need := sum(len(c.links) for c in query_chains(q).values())) > spec.slots:
        return (
            f"query {q.number} ({q}): {need} comparisons do not fit the "
            f"{spec.slots} comparator slots"
        )
    return ""


def _predicate_refusal(q: Query, spec: HardwareSpec) -> str:
    """Why the predicates of path ``q`` do not fit comparator slots ("" if they do)."""
    if not spec.slots:
        return (
            "value predicates need comparator slots (this hardware has none: "
            "`xpfilt compile --mode programmable --slots N`)"
        )
    for step in (s for p in q.paths for s in column_steps(p)):
        try:
            chain = step_chain(step)
        except ValueError as exc:
            return str(exc)
        for cond, _ in chain.links if chain else ():
            if why := slot_refusal(cond, spec.max_tag_len):
                return why
    return ""


def _split_refusal(q: Query, spec: HardwareSpec) -> str:
    """Why twig ``q`` cannot take split nodes on this hardware ("" if it can)."""
    for path in q.paths:
        if not path.has_nested_paths:
            continue
        if any(s.uses_position for s in path.steps):
            return POSITION_REFUSED
        try:
            span = children_span(path)
        except ValueError as exc:
            return str(exc)
        if span > spec.twig_width:
            return (
                f"a split node's children spread over {span} columns, more than the "
                f"hardware's twig width {spec.twig_width}"
            )
    return ""


def _no_room(q: Query, spec: HardwareSpec, dictionary: bool = False, slots: bool = False) -> str:
    if slots:
        return f"query {q.number} ({q}): no room left in the comparator slots ({spec.slots} slots)"
    if dictionary:
        return f"query {q.number} ({q}): no room left in the tag dictionary ({spec.tags} tags)"
    return (
        f"query {q.number} ({q}): no room left ({spec.clusters} clusters x {spec.columns} columns)"
    )


def _new_chains(q: Query, slot_of: dict) -> dict:
    """The chains of ``q`` no slots hold yet: key -> chain, in step order."""
    return {key: c for key, c in query_chains(q).items() if key not in slot_of}


def _tag_order(q: Query) -> list[str]:
    """The placement order: queries naming the same tags meet in a cluster."""
    return [s.name for p in q.paths for s in p.steps]


def configure(
    queries: Sequence[Query],
    spec: HardwareSpec,
    *,
    strict: bool = False,
    previous: Optional[bytes] = None,
    what: str = "previous stream",
) -> Configuration:
    """Place the queries on the columns: in the order of their tag sequences, each on the first
    cluster with enough free columns, while the dictionary has room for its new tags. A query
    that cannot be placed (a predicate no slot decides, a nested path, a tag longer than
    ``max_tag_len``, more distinct tags than the dictionary holds, no room left) is listed in
    ``Configuration.rejected`` with the reason, and the rest are configured; with ``strict``,
    :class:`ConfigurationError` is raised instead. A boolean combination of paths takes
    consecutive columns of one cluster, its paths' chains one after the other.

    With ``previous`` (a full stream of ``spec``), start from what it holds and move nothing
    that stays: a query of ``previous`` (the same path) keeps its columns and readout bit, and
    every dictionary entry in use its index; a removed query frees its columns, a new one goes
    to the first cluster with a free run of columns (in the order above), its new tags to free
    dictionary entries (or ones no remaining query names); a combination of paths stays where
    its paths' columns are, one after the other. :meth:`Configuration.delta` then holds only
    the parts that change. ValueError (naming ``what``) when ``previous`` is not a full stream
    of ``spec``. Without ``previous`` a query goes after the last one of its cluster (never
    into a column skipped to give a readout group its own answer), and the delta is the full
    stream."""
    queries, written = _lowered(queries)
    rejected: list[tuple[int, str]] = []
    if previous is None:
        layout = _Layout.empty(spec)
        new = [q for q in queries if not _refused(q, spec, rejected)]
    else:
        layout = _Layout.of_stream(spec, read_stream(spec, previous, what), what)
        new = [q for q in layout.keep(queries) if not _refused(q, spec, rejected)]
    no_room = layout.place(sorted(new, key=lambda q: (_tag_order(q), q.number)), rejected)
    missing = 0
    if no_room:
        missing = max(1, sum(query_width(q) for q in no_room) - sum(layout.room))
        rejected += [(q.number, _no_room(q, spec)) for q in no_room]
    config = layout.configuration(tuple(sorted(_as_written(rejected, written))), missing)
    if strict and config.rejected:
        raise ConfigurationError(config.summary(), missing_columns=missing)
    return config


def reconfigure(
    queries: Sequence[Query], previous: bytes, spec: HardwareSpec, *, what: str = "previous stream"
) -> Configuration:
    """Load ``queries`` where the full stream ``previous`` is loaded: :func:`configure` with
    ``previous`` (the one allocator); :meth:`Configuration.delta` is the stream that turns
    ``previous``'s configuration into the new one."""
    return configure(queries, spec, previous=previous, what=what)


def _refused(q: Query, spec: HardwareSpec, rejected: list) -> bool:
    """Whether ``q`` cannot go on this hardware at all (noted in ``rejected``)."""
    why = _refusal(q, spec)
    if why:
        rejected.append((q.number, why))
    return bool(why)


@dataclass
class _Layout:
    """What an allocation fills in: per cluster the queries placed (``placed[k]``: (first
    column, query), in placement order), the dictionary's entries (``tags``, ``b""``: free;
    ``index``: tag -> entry + 1), the comparator slots (``keys[s]``: the key of the chain slot
    ``s`` is part of, ``links[s]`` its link, None: free; ``slot_of``: key -> first slot), where
    each profile's answer is, and what changed from the stream it started from (``base``, None
    for an empty engine). ``gaps``: a new query may go between placed ones (a start from a
    stream: removed queries leave gaps), else only after the last one of a cluster."""

    spec: HardwareSpec
    tags: list
    keys: list
    links: list
    slot_of: dict
    base: Optional[StreamContents] = None
    gaps: bool = False
    placed: list = field(default_factory=list)
    changed: set = field(default_factory=set)
    dictionary_changed: bool = False
    readout_bit: dict = field(default_factory=dict)
    combined: dict = field(default_factory=dict)
    where: dict = field(default_factory=dict)  # a base's paths: text -> [(cluster, start)]

    def __post_init__(self):
        self.placed = self.placed or [[] for _ in range(self.spec.clusters)]
        self.index = {t: d + 1 for d, t in enumerate(self.tags) if t}
        self.tags_in_use = _InUse(query_tags, self.placed)
        self.slots_in_use = _InUse(_chain_keys, self.placed)
        self._spans: dict[int, list] = {}  # per cluster looked at: the column spans taken
        self._groups: dict[int, set] = {}  # ... and the readout groups
        self._used = [0] * self.spec.clusters  # per cluster: the columns taken
        self._end = [0] * self.spec.clusters  # ... and the end of the last query

    @classmethod
    def empty(cls, spec: HardwareSpec) -> "_Layout":
        slots = [None] * spec.slots
        return cls(
            spec,
            [b""] * spec.tags,
            slots,
            list(slots),
            {},
            changed=set(range(spec.clusters)),
            dictionary_changed=True,
        )

    @classmethod
    def of_stream(cls, spec: HardwareSpec, old: StreamContents, what: str) -> "_Layout":
        """The layout the full stream ``old`` holds (nothing placed yet: :meth:`keep`)."""
        if not old.full:
            raise ValueError(
                f"{what} must be a full configuration stream (`xpfilt configure` "
                f"writes one beside every delta), not a delta"
            )
        entries = dictionary_entries(spec, old.dictionary)
        links = dictionary_links(spec, old.dictionary)
        chains = chains_of(links)
        keys: list = [None] * spec.slots
        for first, chain in chains.items():
            keys[first : first + len(chain.links)] = [chain.key] * len(chain.links)
        layout = cls(
            spec,
            [e.encode() for e in entries],
            keys,
            links,
            {chain.key: first for first, chain in chains.items()},
            base=old,
            gaps=True,
        )
        for k, payload in enumerate(old.payloads):
            for start, text in cluster_queries(spec, entries, payload, chains):
                layout.where.setdefault(text, []).append((k, start))
        for spots in layout.where.values():
            spots.reverse()  # pop() takes them in column order
        return layout

    def keep(self, queries: Sequence[Query]) -> list[Query]:
        """Keep each of ``queries`` the base holds where it is; the others, to place."""
        new = []
        # combinations first: a path profile equal to one of their paths takes another copy
        for q in sorted(queries, key=lambda q: q.is_path):
            spot = _take(self.where, q, self.spec.twig_width)
            if spot:  # it was placed on this hardware: it fits
                self._record(q, *spot)
            else:
                new.append(q)
        self.changed |= {k for spots in self.where.values() for k, _ in spots}  # a query left
        return new

    def place(self, queries: Sequence[Query], rejected: list) -> list[Query]:
        """Place ``queries`` in order, each where the first room is (a reason in ``rejected``
        for one without room in the dictionary or the slots); those without columns left."""
        no_room = []
        for q in queries:
            needs = sorted(t for t in query_tags(q) if t not in self.index)
            entries = _free_entries(self.tags, len(needs), self.tags_in_use, query_tags(q))
            if entries is None:
                rejected.append((q.number, _no_room(q, self.spec, dictionary=True)))
                continue
            new_chains = _new_chains(q, self.slot_of)
            slots = _free_runs(
                self.keys,
                [len(c.links) for c in new_chains.values()],
                self.slots_in_use,
                _chain_keys(q),
            )
            if slots is None:
                rejected.append((q.number, _no_room(q, self.spec, slots=True)))
                continue
            spot = self._columns_for(q)
            if spot is None:
                no_room.append(q)
                continue
            self._take_entries(needs, entries)
            self._take_slots(new_chains, slots)
            self._record(q, *spot)
            self.changed.add(spot[0])
        return no_room

    def _columns_for(self, q: Query) -> Optional[tuple[int, int]]:
        """(cluster, first column) of the first room for ``q``, None if no cluster has it."""
        room, width = self._used if self.gaps else self._end, query_width(q)
        for k in range(self.spec.clusters):
            if self.spec.columns - room[k] < width:
                continue
            spans, groups = self._taken(k)
            if self.gaps:
                start = _free_run(self.spec, spans, q, groups)
            else:
                start = _group_fit(self.spec, q, groups, self._end[k], self.spec.columns)
            if start is not None:
                return k, start
        return None

    def _taken(self, k: int) -> tuple[list, set]:
        """Cluster ``k``'s column spans in use (sorted) and readout groups in use."""
        if k not in self._spans:
            placed = self.placed[k]
            self._spans[k] = sorted((start, start + query_width(q)) for start, q in placed)
            self._groups[k] = (
                set().union(*(_answer_groups(self.spec, q, start) for start, q in placed))
                if self.spec.readout_group > 1
                else set()
            )  # groups of one: no constraint
        return self._spans[k], self._groups[k]

    @property
    def room(self) -> list[int]:
        """Per cluster, the columns a new query may still take: the free ones (``gaps``),
        else those after the last query."""
        return [self.spec.columns - u for u in (self._used if self.gaps else self._end)]

    def _take_entries(self, needs: list, entries: list) -> None:
        for t, d in zip(needs, entries):
            self.index.pop(self.tags[d], None)
            self.tags[d], self.index[t] = t, d + 1
            self.dictionary_changed = True

    def _take_slots(self, new_chains: dict, slots: list) -> None:
        keys, links = self.keys, self.links
        for (key, chain), first in zip(new_chains.items(), slots):
            span = range(first, first + len(chain.links))
            for victim in {keys[t] for t in span} - {None}:  # chains no placed query uses
                self.slot_of.pop(victim)
                for t in range(self.spec.slots):
                    if keys[t] == victim:
                        keys[t] = links[t] = None
            for t, link in zip(span, chain.slot_links()):
                keys[t], links[t] = key, link
            self.slot_of[key] = first
            self.dictionary_changed = True

    def _record(self, q: Query, k: int, start: int) -> None:
        """``q`` goes to cluster ``k`` from column ``start`` on."""
        self.placed[k].append((start, q))
        self._used[k] += query_width(q)
        self._end[k] = max(self._end[k], start + query_width(q))
        self.tags_in_use.add(q)
        self.slots_in_use.add(q)
        if k in self._spans:
            bisect.insort(self._spans[k], (start, start + query_width(q)))
            self._groups[k] |= _answer_groups(self.spec, q, start)
        where = profile_answer(q, k * self.spec.columns + start, self.spec.readout_group)
        (self.readout_bit if q.is_path else self.combined)[q.number] = where

    def configuration(self, rejected: tuple, missing: int) -> Configuration:
        columns = []
        for queries in self.placed:
            row = [ColumnConfig()] * self.spec.columns
            for start, q in queries:
                row[start : start + query_width(q)] = query_columns(q, self.slot_of)
            columns.append(tuple(row))
        return Configuration(
            self.spec,
            tuple(columns),
            self.readout_bit,
            rejected,
            missing,
            tuple(_trimmed(self.tags, b"")),
            tuple(_trimmed(self.links, None)),
            self.combined,
            base=self.base,
            changed=tuple(sorted(self.changed)),
            dictionary_changed=self.dictionary_changed,
        )


def _trimmed(values: list, free) -> list:
    """``values`` without its trailing ``free`` entries."""
    end = len(values)
    while end and values[end - 1] == free:
        end -= 1
    return values[:end]


def _lowered(queries: Sequence[Query]) -> tuple[list[Query], dict]:
    """The queries as the engine takes them: nested paths rewritten into paths and
    combinations where they can be (:func:`xpfilt.compiler.custom.without_nested_paths`), a step
    that does not fit as written with its ``or``s moved out first
    (:func:`xpfilt.compiler.split_nodes.or_distributed`), and per number the rewritten ones' (text,
    text as written)."""
    out, written = [], {}
    for q in queries:
        if not q.has_predicates:  # as written (most profiles)
            out.append(q)
            continue
        lowered = without_nested_paths(q) if q.has_nested_paths else q
        if lowered is None or not fits_as_written(lowered):
            spread = or_distributed(q)
            lowered = q if spread is None else spread  # None: _refusal says why
            if lowered.has_nested_paths:
                rewritten = without_nested_paths(lowered)
                lowered = lowered if rewritten is None else rewritten
        out.append(lowered)
        if lowered is not q:
            written.setdefault(q.number, []).append((str(lowered), str(q)))
    return out, written


def _as_written(rejected: list, written: dict) -> list[tuple[int, str]]:
    """``rejected``'s reasons naming each rewritten query as it was written."""
    out = []
    for number, why in rejected:
        for text, original in written.get(number, ()):
            head = f"query {number} ({text})"
            if why.startswith(head):
                why = f"query {number} ({original}){why[len(head) :]}"
        out.append((number, why))
    return out


def _take(where: dict, q: Query, twig_width: int = 0) -> Optional[tuple[int, int]]:
    """The (cluster, first column) of profile ``q``'s columns in a previous stream (``where``:
    path text -> spots, last in column order first; of hardware with ``twig_width``), taken
    out of ``where``; None when it holds no such run (a combination's paths must be on
    consecutive columns, in order)."""
    if q.is_path:  # its own run: the first in column order
        spots = where.get(_path_text(q, twig_width))
        return spots.pop() if spots else None
    texts = [_path_text(p, twig_width) for p in q.paths]
    for k, start in reversed(where.get(texts[0], ())):
        run, at = [], start
        for p, text in zip(q.paths, texts):
            if (k, at) not in where.get(text, ()):
                break
            run.append((text, (k, at)))
            at += path_width(p)
        else:
            for text, spot in run:
                where[text].remove(spot)
            return k, start
    return None


class _InUse:
    """The entries (of ``needs(query)``) the kept queries use, computed when first asked."""

    def __init__(self, needs, kept):
        self.needs, self.kept, self.entries = needs, kept, None

    def __contains__(self, entry) -> bool:
        if self.entries is None:
            self.entries = set().union(*(self.needs(q) for ks in self.kept for _, q in ks))
        return entry in self.entries

    def add(self, query) -> None:
        if self.entries is not None:
            self.entries |= self.needs(query)


def _free_entries(
    table: list, count: int, in_use: _InUse, own: frozenset = frozenset()
) -> Optional[list[int]]:
    """``count`` positions of ``table`` (the dictionary's tags) for new entries: free ones
    first, then ones neither a kept query nor the new query (``own``: the entries it names)
    uses; None if too few."""
    if not count:
        return []
    spots = [d for d, t in enumerate(table) if not t][:count]
    if len(spots) < count:
        spots += [d for d, t in enumerate(table) if t and t not in own and t not in in_use][
            : count - len(spots)
        ]
    return spots if len(spots) == count else None


def _free_runs(
    keys: list, sizes: list[int], in_use: _InUse, own: frozenset = frozenset()
) -> Optional[list[int]]:
    """The first slots of runs of ``sizes`` consecutive slots for new chains (each slot free
    or part of a chain neither a kept query nor the new query, ``own``, uses), first fit;
    None if they do not all fit."""
    taken = set()
    out = []
    for size in sizes:
        run = 0
        for s, key in enumerate(keys):
            free = key is None or key not in own and key not in in_use
            run = run + 1 if s not in taken and free else 0
            if run == size:
                out.append(s - size + 1)
                taken.update(range(s - size + 1, s + 1))
                break
        else:
            return None
    return out


def _free_run(
    spec: HardwareSpec, spans: list[tuple[int, int]], query: Query, taken: set
) -> Optional[int]:
    """The first column of the first free columns between the sorted used ``spans`` where
    ``query`` fits (:func:`_group_fit`, ``taken``: the readout groups in use)."""
    at = 0
    for a, b in [*spans, (spec.columns, spec.columns)]:
        start = _group_fit(spec, query, taken, at, a)
        if start is not None:
            return start
        at = max(at, b)
    return None


def delta_path(stream_path) -> Path:
    """Where ``xpfilt configure --previous`` writes the delta stream beside ``stream_path``."""
    return Path(f"{stream_path}.delta")


def readout_map_path(stream_path) -> Path:
    """Where the readout map of the configuration stream ``stream_path`` lives."""
    return Path(f"{stream_path}.map.tsv")


def read_readout_map(stream_path) -> list[tuple]:
    """(where, query number) pairs of the stream ``stream_path``'s readout map (see
    :meth:`Configuration.write_readout_map`; where: a readout bit, or a combination's
    expression over readout bits); ValueError naming the file and line."""
    path = readout_map_path(stream_path)
    try:
        text = path.read_text()
    except OSError as exc:
        raise ValueError(
            f"{path} must be the readout map `xpfilt configure` writes beside the "
            f"stream, not missing: {exc.strerror or exc}"
        ) from None
    pairs = []
    for line_number, line in enumerate(text.splitlines(), start=1):
        try:
            number, where = line.split("\t")
            pairs.append((answer_from_json(json.loads(where)), int(number)))
        except (ValueError, TypeError, IndexError):
            raise ValueError(
                f"{path}: line {line_number} must be 'query number<TAB>readout "
                f"bit' (or a combination's expression over readout bits), not "
                f"{line!r}"
            ) from None
    return pairs


def answer_json(where):
    """Where a profile's answer is (:attr:`Configuration.answers`: a readout bit or a
    combination's condition) as JSON data: the bit, or the condition's JSON form (readout maps,
    the regression's test bench configuration); :func:`answer_from_json` reads it back."""
    return where if isinstance(where, int) else where.to_json()


def answer_from_json(value):
    """A where of :func:`answer_json` checked: a readout bit, or and/or/not (two operands or
    more) over ``["c", bit]`` leaves, as a :class:`Condition`; ValueError otherwise."""
    if isinstance(value, int) and not isinstance(value, bool) and value >= 0:
        return value
    if value and _pairs_or_more(value):  # [] is no answer
        return Condition.from_json(value, kinds="c")
    raise ValueError(f"not a readout bit or expression: {value!r}")


def _pairs_or_more(value) -> bool:
    """Whether every and/or in ``value`` (JSON) has two operands or more (the readout map's
    rule, stricter than :meth:`Condition.from_json`'s)."""
    if not isinstance(value, list):
        return True
    if value and value[0] in ("and", "or") and len(value) < 3:
        return False
    return all(_pairs_or_more(v) for v in value[1:])
