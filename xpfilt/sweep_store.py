"""Where sweep rows live: Parquet files under an output folder, partitioned by engine and device.

One file per design point, ``OUT/engine=E/device=D/<hash of the point's key>.parquet`` (Hive
partitioning, so ``spark.read.parquet(OUT)`` and ``pyarrow.dataset`` see ``engine`` and
``device`` as columns). A file is written under a temporary name and renamed, so an interrupted
sweep leaves only whole rows; a point's presence is what makes a resumed sweep skip it. Every
file has the same schema (:data:`COLUMNS`; missing values are nulls, nested values JSON text),
so the folder reads as one table.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path
from typing import Iterable, Optional, Union

__all__ = ["SweepStore", "COLUMNS", "PARTITIONS"]

PARTITIONS = ("engine", "device")

#: Column -> Arrow type name, in file order (the partition columns are not stored in files).
COLUMNS = {
    # the design point (cluster_size: queries per cluster for the custom engine, columns per
    # cluster for the programmable one, see xpfilt.sweep.CLUSTER_UNIT)
    "key": "string", "queries": "int64", "depth": "int64", "p_wildcard": "float64",
    "p_descendant": "float64", "cluster_size": "int64", "opt_last": "bool", "opt_root": "bool",
    "opt_share": "bool", "prefix_sharing": "bool", "max_depth": "int64", "documents": "int64",
    "document_bytes": "int64", "seed": "int64", "readout": "string", "beat_bytes": "int64",
    # how it ended
    "status": "string", "reason": "string", "traceback": "string", "seconds": "float64",
    "driver_s": "float64",
    # compile / configure
    "query_nodes": "int64", "columns": "int64", "clusters": "int64", "tags": "int64",
    "configured": "int64", "config_bits": "int64", "verilog_bytes": "int64",
    # model run
    "documents_bytes": "int64", "cycles": "int64", "bytes_per_cycle": "float64",
    "readout_overhead": "float64", "flagged": "int64",
    # synthesis
    "part": "string", "luts": "int64", "ffs": "int64", "lutram": "int64", "bram": "int64",
    "cells": "string", "synth_s": "float64",
    # place and route
    "fmax_mhz": "float64", "clocks": "string", "utilization": "string", "util_luts": "float64",
    "critical_from": "string", "critical_to": "string", "critical_cells": "int64",
    "critical_ns": "float64", "critical_logic_ns": "float64", "critical_route_ns": "float64",
    "pnr_s": "float64", "throughput_MBps": "float64",
}


def _schema():
    import pyarrow as pa
    return pa.schema([(name, getattr(pa, "bool_" if kind == "bool" else kind)())
                      for name, kind in COLUMNS.items()])


class SweepStore:
    """The rows of one output folder (see the module docstring)."""

    def __init__(self, root: Union[str, Path]):
        self.root = Path(root)

    def path_for(self, row: dict) -> Path:
        digest = hashlib.sha256(row["key"].encode()).hexdigest()[:20]
        parts = [f"{name}={row[name]}" for name in PARTITIONS]
        return self.root.joinpath(*parts, f"{digest}.parquet")

    def write(self, row: dict) -> Path:
        """Save one row (replacing an earlier row of the same point). Unknown keys are an
        error: the schema is the contract with the report and with Spark readers."""
        import pyarrow as pa
        import pyarrow.parquet as pq

        unknown = sorted(set(row) - set(COLUMNS) - set(PARTITIONS))
        if unknown:
            raise ValueError(f"sweep row has columns outside sweep_store.COLUMNS: {unknown}")
        path = self.path_for(row)
        path.parent.mkdir(parents=True, exist_ok=True)
        table = pa.Table.from_pylist([{name: row.get(name) for name in COLUMNS}],
                                     schema=_schema())
        partial = path.with_suffix(f".{os.getpid()}.partial")
        pq.write_table(table, partial)
        os.replace(partial, path)
        return path

    def files(self) -> list[Path]:
        return sorted(self.root.glob("/".join(f"{p}=*" for p in PARTITIONS) + "/*.parquet"))

    def rows(self) -> list[dict]:
        """Every saved row, the partition columns included, in file order."""
        import pyarrow.parquet as pq

        rows = []
        for path in self.files():
            partition = dict(part.split("=", 1) for part in
                             (path.parent.parent.name, path.parent.name))
            for row in pq.read_table(path).to_pylist():
                rows.append({**partition, **row})
        return rows

    def keys(self, statuses: Optional[Iterable[str]] = None) -> set[str]:
        """Keys of the saved points (only those whose status is in ``statuses``, if given)."""
        wanted = None if statuses is None else set(statuses)
        return {row["key"] for row in self.rows()
                if wanted is None or row["status"] in wanted}
