"""The programmable engine's hardware description and its configuration streams (§5.3).

The hardware is generated once from a :class:`HardwareSpec` (clusters × columns, tags per
cluster, longest tag, deepest level); any query set that fits is then loaded as a *configuration
stream*, one bit per cycle, without regenerating Verilog.

Columns form a chain inside a cluster: a query of ``n`` steps takes ``n`` consecutive columns;
column ``j``'s predecessor is column ``j - 1`` unless it is the first column of a query. Each
cluster has a *tag dictionary* of ``tags_per_cluster`` entries (``max_tag_len`` bytes each,
zero-padded; all zeros = matches no name) that its tag decoder compares every name with; entry
``d`` has the tag index ``d + 1``, a name in no entry the index 0 (a name equal to several
entries: the OR of their indices). A *tag matrix* of ``2 ** index_bits`` rows says which columns
an index matches: row ``i`` bit ``j`` is set when column ``j``'s tag is entry ``i - 1`` or
column ``j`` is a wildcard (``*``: set in every row, row 0 too). Per column three flags remain:
``first`` (a query starts here), ``first_any`` (... with ``//``) and ``descendant`` (followed by
``//``). Every column has a match flag in the readout; the last column of a query is that
query's readout bit. The queries placed on a cluster may name at most ``tags_per_cluster``
distinct tags.

Stream layout (bit ``i`` is bit ``i % 8`` of byte ``i // 8`` of ``config.bin``):

* header, 88 bits: magic ``0x5846`` (16), format version (8), hardware fingerprint (32), payload
  length in bits (32);
* payload, per cluster: ``max_tag_len`` rows, row ``p`` holding byte ``p`` of every dictionary
  entry (entry 0 first, 8 bits each); the tag matrix, row 0 first, ``columns`` bits a row
  (column 0 first); then per column (column 0 first) its 3 flag bits (first, first_any,
  descendant); after the last cluster, zero bits up to a whole byte (``pad_bits``);
* CRC-32 (IEEE, as zlib computes it) of header and payload, 32 bits.

The engine checks all of it and only then switches to the new configuration, between two
documents; a truncated, corrupt or foreign stream is rejected and the old configuration stays.
"""

from __future__ import annotations

import hashlib
import json
import zlib
from pathlib import Path
from dataclasses import asdict, dataclass
from typing import Sequence

from .compiler import DEEPEST
from .compiler import EngineMode, hardware_refusal
from .readout import check_readout
from .xpath import Axis, Query

__all__ = ["HardwareSpec", "ColumnConfig", "Configuration", "ConfigurationError",
           "configure", "MAGIC", "FORMAT_VERSION", "HEADER_BITS", "CRC_BITS", "FLAG_BITS"]

MAGIC = 0x5846            # "XF"
FORMAT_VERSION = 2       # 2: a tag dictionary and a tag matrix per cluster
HEADER_BITS = 88
CRC_BITS = 32
FLAG_BITS = 3             # per column: first, first_any, descendant
#: Most generic columns in one cluster (4,096 take ~20 s and ~0.4 GB to generate).
MAX_CLUSTER_COLUMNS = 4096
#: Most generic columns in all (each is a readout bit per document).
MAX_COLUMNS = 65536
#: Most dictionary entries per cluster (an 8-bit tag index; each entry compares every name byte).
MAX_CLUSTER_TAGS = 255


@dataclass(frozen=True)
class HardwareSpec:
    """Parameters of a programmable engine: ``clusters`` × ``columns`` generic columns."""
    clusters: int = 1
    columns: int = 128
    max_tag_len: int = 16
    max_depth: int = 16
    max_name: int = 32
    readout: str = "serial"   # a xpfilt.readout.ReadoutKind value
    #: Distinct tags the queries of one cluster may name (its tag dictionary's entries). 31
    #: (a 5-bit tag index: the tag matrix's two banks are 64 rows, one LUT-RAM deep) holds all
    #: 467 generated depth-8 NITF queries on 16 x 128 columns filled to 90 % (24: 421).
    tags_per_cluster: int = 31

    def __post_init__(self):
        for name in ("clusters", "columns", "max_tag_len", "max_depth", "max_name",
                     "tags_per_cluster"):
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool):
                raise ValueError(f"{name.replace('_', ' ')} must be an integer, not {value!r}")
        for name in ("clusters", "columns", "max_tag_len", "max_depth", "tags_per_cluster"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name.replace('_', ' ')} must be at least 1, "
                                 f"not {getattr(self, name)!r}")
        if self.columns % 2:
            raise ValueError(f"columns must be even, not {self.columns!r}")
        if self.columns > MAX_CLUSTER_COLUMNS:
            raise ValueError(f"columns must be at most {MAX_CLUSTER_COLUMNS:,} per cluster (use "
                             f"more clusters), not {self.columns:,}")
        if self.clusters * self.columns > MAX_COLUMNS:
            raise ValueError(
                f"clusters x columns must be at most {MAX_COLUMNS:,}, not "
                f"{self.clusters * self.columns:,}: that engine would need a "
                f"{self.clusters * self.columns:,}-bit readout per document and a "
                f"{self.stream_bits / 8e6:,.0f} MB configuration stream")
        if self.max_depth > DEEPEST:
            raise ValueError(f"max depth must be at most {DEEPEST} (the rows of every stack "
                             f"memory), not {self.max_depth!r}")
        if self.tags_per_cluster > MAX_CLUSTER_TAGS:
            raise ValueError(f"tags per cluster must be at most {MAX_CLUSTER_TAGS:,}, not "
                             f"{self.tags_per_cluster:,}")
        check_readout(self.readout)
        if self.max_tag_len > self.max_name:
            raise ValueError(f"max tag length must be at most max name ({self.max_name}), "
                             f"not {self.max_tag_len!r}")

    @property
    def index_bits(self) -> int:
        """Width of a tag index (0 = no entry, 1 ... ``tags_per_cluster``)."""
        return self.tags_per_cluster.bit_length()

    @property
    def matrix_rows(self) -> int:
        """Rows of the tag matrix: one per tag index."""
        return 1 << self.index_bits

    @property
    def cluster_bits(self) -> int:
        return (8 * self.max_tag_len * self.tags_per_cluster
                + (self.matrix_rows + FLAG_BITS) * self.columns)

    @property
    def pad_bits(self) -> int:
        """Zero bits after the last cluster that make the payload whole bytes."""
        return -(self.clusters * self.cluster_bits) % 8

    @property
    def payload_bits(self) -> int:
        return self.clusters * self.cluster_bits + self.pad_bits

    @property
    def stream_bits(self) -> int:
        return HEADER_BITS + self.payload_bits + CRC_BITS

    @property
    def header(self) -> int:
        """The 88-bit stream header this hardware accepts (magic, version, fingerprint, length)."""
        return (MAGIC | FORMAT_VERSION << 16 | self.fingerprint << 24
                | self.payload_bits << 56)

    @property
    def fingerprint(self) -> int:
        """32 bits that change with every parameter (and the stream format)."""
        text = json.dumps([FORMAT_VERSION, asdict(self)], sort_keys=True).encode()
        return int.from_bytes(hashlib.sha256(text).digest()[:4], "little")

    def to_json(self) -> str:
        return json.dumps({"mode": "programmable", **asdict(self),
                           "fingerprint": f"{self.fingerprint:08x}"}, indent=1)

    @classmethod
    def load(cls, directory) -> "HardwareSpec":
        """The ``hardware.json`` of a directory ``xpfilt compile --mode programmable`` (or
        ``xpfilt build``) wrote; ValueError naming the directory when it is not one."""
        from pathlib import Path
        try:
            return cls.from_json((Path(directory) / "hardware.json").read_text())
        except (OSError, ValueError, KeyError, TypeError) as exc:
            raise ValueError(f"{directory}: not a programmable hardware directory "
                             f"({exc})") from None

    @classmethod
    def from_json(cls, text: str) -> "HardwareSpec":
        raw = json.loads(text)
        if not isinstance(raw, dict):
            raise ValueError(f"hardware must be a JSON object, not {type(raw).__name__}")
        missing = [k for k in ("clusters", "columns", "max_tag_len", "max_depth", "max_name")
                   if k not in raw]
        if missing:
            raise ValueError(f"hardware must give {', '.join(missing)}")
        if raw.get("mode") != "programmable":
            raise ValueError(f"hardware must be programmable, not {raw.get('mode')!r}")
        return cls(**{k: raw[k] for k in ("clusters", "columns", "max_tag_len", "max_depth",
                                          "max_name")}, readout=raw.get("readout", "serial"),
                   **({"tags_per_cluster": raw["tags_per_cluster"]}
                      if "tags_per_cluster" in raw else {}))


@dataclass(frozen=True)
class ColumnConfig:
    tag: bytes = b""          # empty: matches no name (unless wildcard); in the cluster's tags
    first: bool = False
    first_any: bool = False
    wildcard: bool = False
    descendant: bool = False


class ConfigurationError(ValueError):
    """The query set does not fit the hardware; says which queries and by how much."""

    def __init__(self, message: str, missing_columns: int = 0):
        self.missing_columns = missing_columns
        super().__init__(message)


@dataclass(frozen=True)
class Configuration:
    """Where every query went: ``columns[k][j]`` configures column ``j`` of cluster ``k``,
    ``tags[k]`` is cluster ``k``'s dictionary (entry ``d`` = tag index ``d + 1``);
    ``readout_bit[number]`` is the readout position of query ``number``'s last column."""
    spec: HardwareSpec
    columns: tuple[tuple[ColumnConfig, ...], ...]
    readout_bit: dict
    rejected: tuple[tuple[int, str], ...] = ()   # (query number, why it is not configured)
    missing_columns: int = 0                       # columns short for the queries without room
    tags: tuple[tuple[bytes, ...], ...] = ()     # per cluster; () = the columns' tags in order

    def __post_init__(self):
        if not self.tags:
            object.__setattr__(self, "tags", tuple(
                tuple(dict.fromkeys(c.tag for c in cluster if c.tag))
                for cluster in self.columns))
        for k, (tags, cluster) in enumerate(zip(self.tags, self.columns)):
            if len(tags) > self.spec.tags_per_cluster:
                raise ValueError(f"cluster {k}'s tags must be at most "
                                 f"{self.spec.tags_per_cluster}, not {len(tags)}")
            unknown = {c.tag for c in cluster if c.tag} - set(tags)
            if unknown:
                raise ValueError(f"cluster {k}'s columns must name tags of its dictionary, "
                                 f"not {sorted(unknown)!r}")

    def summary(self) -> str:
        """A readable account of what did not fit (empty when everything did)."""
        if not self.rejected:
            return ""
        lines = [f"{len(self.rejected)} queries are not configured:"]
        lines += [f"  {reason}" for _, reason in self.rejected[:50]]
        if len(self.rejected) > 50:
            lines.append(f"  ... and {len(self.rejected) - 50} more")
        if self.missing_columns:
            lines.append(f"at least {self.missing_columns} more columns would be needed "
                         f"(the hardware has {self.spec.clusters * self.spec.columns})")
        return "\n".join(lines)

    def write_readout_map(self, stream_path) -> None:
        """Write ``STREAM.map.tsv`` beside a stream: ``query number<TAB>readout bit`` lines
        (:func:`read_readout_map` reads them)."""
        readout_map_path(stream_path).write_text("".join(
            f"{number}\t{bit}\n" for number, bit in sorted(self.readout_bit.items())))

    def stream(self) -> bytes:
        """The configuration stream (header, payload, CRC) as bytes, LSB first."""
        spec = self.spec
        header = spec.header.to_bytes(HEADER_BITS // 8, "little")
        clusters = []
        entry_bits = 8 * spec.tags_per_cluster
        for tags, cluster in zip(self.tags, self.columns):
            entries = list(tags) + [b""] * (spec.tags_per_cluster - len(tags))
            rows = [int.from_bytes(bytes(t[p] if p < len(t) else 0 for t in entries), "little")
                    for p in range(spec.max_tag_len)]
            index = {t: d + 1 for d, t in enumerate(tags)}
            matrix = [0] * spec.matrix_rows
            wildcards = flags = 0
            for j, c in enumerate(cluster):
                if c.wildcard:
                    wildcards |= 1 << j
                elif c.tag:
                    matrix[index[c.tag]] |= 1 << j
                flags |= (c.first | c.first_any << 1 | c.descendant << 2) << (FLAG_BITS * j)
            clusters.append(_concat(rows, entry_bits)
                            | _concat([row | wildcards for row in matrix], spec.columns)
                            << (entry_bits * spec.max_tag_len)
                            | flags << (spec.cluster_bits - FLAG_BITS * spec.columns))
        payload = _concat(clusters, spec.cluster_bits)
        body = header + payload.to_bytes((spec.payload_bits + 7) // 8, "little")
        return body + zlib.crc32(body).to_bytes(4, "little")


def _concat(chunks: list[int], width: int) -> int:
    """``chunks[0] | chunks[1] << width | ...``, pairwise (a running OR into one large integer
    costs time quadratic in its length)."""
    if not chunks:
        return 0
    while len(chunks) > 1:
        chunks = [chunks[i] | (chunks[i + 1] << width if i + 1 < len(chunks) else 0)
                  for i in range(0, len(chunks), 2)]
        width *= 2
    return chunks[0]


def query_columns(query: Query) -> list[ColumnConfig]:
    """The chain of columns one query occupies."""
    steps = query.steps
    out = []
    for j, step in enumerate(steps):
        followed = j + 1 < len(steps) and steps[j + 1].axis is Axis.DESCENDANT
        out.append(ColumnConfig(
            tag=b"" if step.is_wildcard else step.name.encode(),
            first=j == 0, first_any=j == 0 and step.axis is Axis.DESCENDANT,
            wildcard=step.is_wildcard, descendant=followed))
    return out


def query_tags(query: Query) -> frozenset[bytes]:
    """The distinct tags a query's columns name (a cluster's dictionary must hold them)."""
    return frozenset(s.name.encode() for s in query.steps if s.name != "*")


def configure(queries: Sequence[Query], spec: HardwareSpec, *,
              strict: bool = False) -> Configuration:
    """Place the queries on the columns: in the order of their tag sequences (so that queries
    naming the same tags meet in a cluster), each on the first cluster with enough free columns
    whose dictionary has room for the query's new tags. A query that cannot be placed (a
    predicate, a combination, a tag longer than ``max_tag_len``, more distinct tags than a
    dictionary holds, no room left) is listed in ``Configuration.rejected`` with the reason, and
    the rest are configured; with ``strict``, :class:`ConfigurationError` is raised instead."""
    rejected: list[tuple[int, str]] = []
    candidates = []
    for q in queries:
        long_tags = [s.name for s in q.steps if len(s.name.encode()) > spec.max_tag_len]
        why = hardware_refusal(q, EngineMode.PROGRAMMABLE)
        if why:
            rejected.append((q.number, f"query {q.number} ({q}): {why}"))
        elif long_tags:
            rejected.append((q.number, f"query {q.number} ({q}): tag {long_tags[0]!r} is "
                                       f"longer than the hardware's max tag length "
                                       f"{spec.max_tag_len}"))
        elif len(q) > spec.columns:
            rejected.append((q.number, f"query {q.number} ({q}): {len(q)} steps do not fit "
                                       f"in a cluster of {spec.columns} columns"))
        elif len(needs := query_tags(q)) > spec.tags_per_cluster:
            rejected.append((q.number, f"query {q.number} ({q}): {len(needs)} "
                                       f"distinct tags do not fit a cluster's "
                                       f"{spec.tags_per_cluster} tags"))
        else:
            candidates.append((q, needs))
    free = [spec.columns] * spec.clusters
    tags: list[dict[bytes, None]] = [{} for _ in range(spec.clusters)]   # ordered sets
    placed: list[list[tuple[int, Query]]] = [[] for _ in range(spec.clusters)]
    no_room = []
    room = spec.tags_per_cluster
    open_clusters = list(range(spec.clusters))     # those with a free column, in order
    for *_, q, needs in sorted(([s.name for s in q.steps], q.number, i, q, needs)
                               for i, (q, needs) in enumerate(candidates)):
        size = len(q)
        for k in open_clusters:
            held = tags[k]
            if free[k] >= size and (len(held) + len(needs) <= room or len(held) + len(
                    needs.difference(held)) <= room):
                placed[k].append((spec.columns - free[k], q))
                free[k] -= size
                held.update(dict.fromkeys(sorted(needs - held.keys())))
                if not free[k]:
                    open_clusters.remove(k)
                break
        else:
            no_room.append(q)
    missing = 0
    if no_room:
        needed = sum(len(q) for q in no_room)
        missing = max(1, needed - sum(free))
        for q in no_room:
            rejected.append((q.number, f"query {q.number} ({q}): no room left "
                                       f"({spec.clusters} clusters x {spec.columns} columns, "
                                       f"{spec.tags_per_cluster} tags each)"))
    rejected.sort()
    columns = []
    readout_bit = {}
    for k in range(spec.clusters):
        row = [ColumnConfig()] * spec.columns
        for start, q in placed[k]:
            row[start:start + len(q)] = query_columns(q)
            readout_bit[q.number] = k * spec.columns + start + len(q) - 1
        columns.append(tuple(row))
    config = Configuration(spec, tuple(columns), readout_bit, tuple(rejected), missing,
                           tuple(tuple(t) for t in tags))
    if strict and rejected:
        raise ConfigurationError(config.summary(), missing_columns=missing)
    return config


def readout_map_path(stream_path) -> Path:
    """Where the readout map of the configuration stream ``stream_path`` lives."""
    return Path(f"{stream_path}.map.tsv")


def read_readout_map(stream_path) -> list[tuple[int, int]]:
    """(readout bit, query number) pairs of the stream ``stream_path``'s readout map (see
    :meth:`Configuration.write_readout_map`); ValueError naming the file and line."""
    path = readout_map_path(stream_path)
    try:
        text = path.read_text()
    except OSError as exc:
        raise ValueError(f"{path} must be the readout map `xpfilt configure` writes beside the "
                         f"stream, not missing: {exc.strerror or exc}") from None
    pairs = []
    for line_number, line in enumerate(text.splitlines(), start=1):
        try:
            number, bit = (int(x) for x in line.split("\t"))
        except ValueError:
            raise ValueError(f"{path}: line {line_number} must be 'query number<TAB>readout "
                             f"bit', not {line!r}") from None
        pairs.append((bit, number))
    return pairs
