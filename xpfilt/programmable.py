"""The programmable engine's hardware description and its configuration streams (§5.3).

The hardware is generated once from a :class:`HardwareSpec` (clusters × columns, longest tag,
deepest level); any query set that fits is then loaded as a *configuration stream*, one bit per
cycle, without regenerating Verilog.

Columns form a chain inside a cluster: a query of ``n`` steps takes ``n`` consecutive columns;
column ``j``'s predecessor is column ``j - 1`` unless it is the first column of a query. Per column
the configuration holds a tag entry (``max_tag_len`` bytes, zero-padded; all zeros = matches no
name) and four flags: ``first`` (a query starts here), ``first_any`` (... with ``//``),
``wildcard`` (``*``: any tag) and ``descendant`` (followed by ``//``). Every column has a match
flag in the readout; the last column of a query is that query's readout bit.

Stream layout (bit ``i`` is bit ``i % 8`` of byte ``i // 8`` of ``config.bin``):

* header, 88 bits: magic ``0x5846`` (16), format version (8), hardware fingerprint (32), payload
  length in bits (32);
* payload, per cluster: ``max_tag_len`` rows, row ``p`` holding byte ``p`` of every column's tag
  entry (column 0 first, 8 bits each), then 4 flag bits per column (first, first_any, wildcard,
  descendant);
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
FORMAT_VERSION = 1
HEADER_BITS = 88
CRC_BITS = 32
FLAG_BITS = 4
#: Most generic columns in one cluster (4,096 take ~20 s and ~0.4 GB to generate).
MAX_CLUSTER_COLUMNS = 4096
#: Most generic columns in all (each is a readout bit per document).
MAX_COLUMNS = 65536


@dataclass(frozen=True)
class HardwareSpec:
    """Parameters of a programmable engine: ``clusters`` × ``columns`` generic columns."""
    clusters: int = 1
    columns: int = 128
    max_tag_len: int = 16
    max_depth: int = 16
    max_name: int = 32
    readout: str = "serial"   # a xpfilt.readout.ReadoutKind value

    def __post_init__(self):
        for name in ("clusters", "columns", "max_tag_len", "max_depth", "max_name"):
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool):
                raise ValueError(f"{name.replace('_', ' ')} must be an integer, not {value!r}")
        for name in ("clusters", "columns", "max_tag_len", "max_depth"):
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
        check_readout(self.readout)
        if self.max_tag_len > self.max_name:
            raise ValueError(f"max tag length must be at most max name ({self.max_name}), "
                             f"not {self.max_tag_len!r}")

    @property
    def cluster_bits(self) -> int:
        return self.columns * (8 * self.max_tag_len + FLAG_BITS)

    @property
    def payload_bits(self) -> int:
        return self.clusters * self.cluster_bits

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
                                          "max_name")}, readout=raw.get("readout", "serial"))


@dataclass(frozen=True)
class ColumnConfig:
    tag: bytes = b""          # empty: matches no name (unless wildcard)
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
    """Where every query went: ``columns[k][j]`` configures column ``j`` of cluster ``k``;
    ``readout_bit[number]`` is the readout position of query ``number``'s last column."""
    spec: HardwareSpec
    columns: tuple[tuple[ColumnConfig, ...], ...]
    readout_bit: dict
    rejected: tuple[tuple[int, str], ...] = ()   # (query number, why it is not configured)
    missing_columns: int = 0                       # columns short for the queries without room

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
        payload = bytearray()
        for cluster in self.columns:
            for p in range(spec.max_tag_len):
                payload += bytes(c.tag[p] if p < len(c.tag) else 0 for c in cluster)
            flags = 0
            for j, c in enumerate(cluster):
                flags |= (c.first | c.first_any << 1 | c.wildcard << 2 | c.descendant << 3) \
                    << (FLAG_BITS * j)
            payload += flags.to_bytes(FLAG_BITS * spec.columns // 8, "little")
        body = header + bytes(payload)
        return body + zlib.crc32(body).to_bytes(4, "little")


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


def configure(queries: Sequence[Query], spec: HardwareSpec, *,
              strict: bool = False) -> Configuration:
    """Place the queries on the columns (first fit, longest queries first, clusters of
    ``spec.columns``). A query that cannot be placed (a predicate, a combination, a tag longer than
    ``max_tag_len``, no room left) is listed in ``Configuration.rejected`` with the reason, and
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
        else:
            candidates.append(q)
    free = [spec.columns] * spec.clusters
    placed: list[list[tuple[int, Query]]] = [[] for _ in range(spec.clusters)]
    no_room = []
    for q in sorted(candidates, key=lambda q: (-len(q), q.number)):
        for k in range(spec.clusters):
            if free[k] >= len(q):
                placed[k].append((spec.columns - free[k], q))
                free[k] -= len(q)
                break
        else:
            no_room.append(q)
    missing = 0
    if no_room:
        needed = sum(len(q) for q in no_room)
        missing = max(1, needed - sum(free))
        for q in no_room:
            rejected.append((q.number, f"query {q.number} ({q}): no room left "
                                       f"({spec.clusters} clusters x {spec.columns} columns)"))
    rejected.sort()
    columns = []
    readout_bit = {}
    for k in range(spec.clusters):
        row = [ColumnConfig()] * spec.columns
        for start, q in placed[k]:
            row[start:start + len(q)] = query_columns(q)
            readout_bit[q.number] = k * spec.columns + start + len(q) - 1
        columns.append(tuple(row))
    config = Configuration(spec, tuple(columns), readout_bit, tuple(rejected), missing)
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
