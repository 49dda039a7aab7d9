"""Where sweep rows live: Parquet files under an output folder, partitioned by engine and device.

One file per design point, ``OUT/engine=E/device=D/<hash of the point's key>.parquet`` (Hive
partitioning, so ``spark.read.parquet(OUT)`` and ``pyarrow.dataset`` see ``engine`` and
``device`` as columns). A file is written under a temporary name and renamed, so an interrupted
sweep leaves only whole rows; a point's presence is what makes a resumed sweep skip it. Every
file has the same schema (:data:`COLUMNS`; missing values are nulls, nested values JSON text),
so the folder reads as one table (:meth:`SweepStore.table`).

The store is where a row takes that schema, and it never refuses one: a field that is not a
column, or a value its column's type cannot hold, is kept in the JSON-text column ``extra``
(``{field: value}``) and named in :attr:`SweepStore.extra_fields`, so a tool that reports a new
field costs no finished point.
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from typing import Iterable, Optional, Union

__all__ = ["SweepStore", "COLUMNS", "PARTITIONS", "EXTRA"]

PARTITIONS = ("engine", "device")

#: Column -> Arrow type name, in file order (the partition columns are not stored in files).
COLUMNS = {
    # the design point (cluster_size: queries per cluster for the custom engine, columns per
    # cluster for the programmable one, see xpfilt.scale.sweep.CLUSTER_UNIT)
    "key": "string",
    "queries": "int64",
    "depth": "int64",
    "p_wildcard": "float64",
    "p_descendant": "float64",
    "cluster_size": "int64",
    "opt_last": "bool",
    "opt_root": "bool",
    "opt_share": "bool",
    "prefix_sharing": "bool",
    "max_depth": "int64",
    "documents": "int64",
    "document_bytes": "int64",
    "seed": "int64",
    "readout": "string",
    "beat_bytes": "int64",
    # how it ended
    "status": "string",
    "reason": "string",
    "traceback": "string",
    "seconds": "float64",
    "driver_s": "float64",
    # compile / configure
    "query_nodes": "int64",
    "columns": "int64",
    "clusters": "int64",
    "tags": "int64",
    "configured": "int64",
    "config_bits": "int64",
    "verilog_bytes": "int64",
    # model run
    "documents_bytes": "int64",
    "cycles": "int64",
    "bytes_per_cycle": "float64",
    "readout_overhead": "float64",
    "flagged": "int64",
    # synthesis
    "part": "string",
    "luts": "int64",
    "ffs": "int64",
    "lutram": "int64",
    "bram": "int64",
    "cells": "string",
    "synth_s": "float64",
    # place and route
    "fmax_mhz": "float64",
    "clocks": "string",
    "utilization": "string",
    "util_luts": "float64",
    "critical_from": "string",
    "critical_to": "string",
    "critical_cells": "int64",
    "critical_ns": "float64",
    "critical_logic_ns": "float64",
    "critical_route_ns": "float64",
    "pnr_s": "float64",
    "throughput_MBps": "float64",
    "constraints": "string",
    # fields that are not columns, or values their column cannot hold: {field: value} as JSON
    "extra": "string",
}

#: The column that keeps what the others cannot (see the module docstring).
EXTRA = "extra"


def _arrow_type(kind: str):
    import pyarrow as pa

    return getattr(pa, "bool_" if kind == "bool" else kind)()


def _schema():
    import pyarrow as pa

    return pa.schema([(name, _arrow_type(kind)) for name, kind in COLUMNS.items()])


class SweepStore:
    """The rows of one output folder (see the module docstring)."""

    def __init__(self, root: Union[str, Path]):
        self.root = Path(root)
        #: Fields this store has kept in :data:`EXTRA`, each with why (not a column, or a
        #: value its column cannot hold), in the order first seen.
        self.extra_fields: dict[str, str] = {}

    def path_for(self, row: dict) -> Path:
        digest = hashlib.sha256(row["key"].encode()).hexdigest()[:20]
        parts = [f"{name}={row[name]}" for name in PARTITIONS]
        return self.root.joinpath(*parts, f"{digest}.parquet")

    def write(self, row: dict) -> Path:
        """Save one row (replacing an earlier row of the same point). Nested values (the
        tools' dicts and lists) become JSON text; see the module docstring for fields that
        are not columns. Only ``key`` and the partition columns are required."""
        import pyarrow as pa
        import pyarrow.parquet as pq

        path = self.path_for(row)
        path.parent.mkdir(parents=True, exist_ok=True)
        table = pa.Table.from_pylist([self._columns_of(row)], schema=_schema())
        partial = path.with_suffix(f".{os.getpid()}.partial")
        pq.write_table(table, partial)
        os.replace(partial, path)
        return path

    def _columns_of(self, row: dict) -> dict:
        """``row`` in the schema's columns, what does not fit them in :data:`EXTRA`."""
        import pyarrow as pa

        values: dict = {}
        extra: dict = {}
        for name, value in row.items():
            if name in PARTITIONS or name == EXTRA:
                continue
            kind = COLUMNS.get(name)
            if kind is None:
                extra[name] = value
                self.extra_fields.setdefault(name, "is not a column of the store")
                continue
            if kind == "string" and isinstance(value, (dict, list, tuple)):
                value = json.dumps(value, sort_keys=True, default=str)
            try:
                pa.array([value], type=_arrow_type(kind))
            except (pa.ArrowInvalid, pa.ArrowTypeError, TypeError, ValueError, OverflowError):
                extra[name] = value
                self.extra_fields.setdefault(name, f"has a value its column ({kind}) cannot hold")
                continue
            values[name] = value
        if extra:
            values[EXTRA] = json.dumps(extra, sort_keys=True, default=str)
        return values

    def table(self):
        """Every saved row as one ``pyarrow.Table`` in the store's schema (the partition
        columns included; files written before a column existed read it as nulls)."""
        import pyarrow as pa
        import pyarrow.dataset as ds

        schema = _schema()
        for name in PARTITIONS:
            schema = schema.append(pa.field(name, pa.string()))
        return ds.dataset(
            self.root, format="parquet", partitioning="hive", schema=schema
        ).to_table()

    def files(self) -> list[Path]:
        return sorted(self.root.glob("/".join(f"{p}=*" for p in PARTITIONS) + "/*.parquet"))

    def rows(self) -> list[dict]:
        """Every saved row, the partition columns included, in file order (a column a file
        predates reads as None)."""
        import pyarrow.parquet as pq

        rows = []
        empty = dict.fromkeys(COLUMNS)
        for path in self.files():
            partition = dict(
                part.split("=", 1) for part in (path.parent.parent.name, path.parent.name)
            )
            for row in pq.read_table(path).to_pylist():
                rows.append({**partition, **empty, **row})
        return rows

    def keys(self, statuses: Optional[Iterable[str]] = None) -> set[str]:
        """Keys of the saved points (only those whose status is in ``statuses``, if given)."""
        wanted = None if statuses is None else set(statuses)
        return {row["key"] for row in self.rows() if wanted is None or row["status"] in wanted}
