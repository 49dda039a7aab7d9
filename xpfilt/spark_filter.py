"""``xpfilt filter --spark``: documents partitioned over Spark executors, answers as Parquet.

The driver expands the document arguments (files, folders of ``*.xml``, glob patterns) in the
order of the serial ``xpfilt filter`` and cuts them into batches of ``batch_size`` documents.
The query file's lines are broadcast once; each executor's Python worker parses them and builds
its engine the first time a task of that broadcast reaches it, then keeps it for the following
tasks (workers are reused: ``spark.python.worker.reuse``). One task filters one batch, reading
the documents itself (executors must see the paths: local disks for ``local[*]``, a shared file
system on a cluster) through :func:`xpfilt.engines.filter_batch`, so a malformed or unreadable
document is a row with its error, exactly as in the serial command, never dropped.

Each batch is one Spark job of one task, submitted from driver threads as wide as the cluster
(:func:`xpfilt.fanout.fan_out`), so results come back and are saved as each batch finishes; a
batch whose task fails is reported (``summary.failed``), not saved, and retried by a rerun.

Results: a folder ``OUT`` of Parquet files, one per batch (``batch-<key>.parquet``, written under
a temporary name and renamed), columns ``document`` (file name), ``path``, ``matches`` (sorted
query numbers, null when ``error`` is set) and ``error``; ``spark.read.parquet(OUT)`` or
``pyarrow.dataset`` reads it as one table. A batch's key is a hash of its paths; ``OUT/_queries``
names the digest of the query file the folder holds answers for. A run skips the batches already
in ``OUT``, so an interrupted run resumes where it stopped; a different query file is refused.
"""

from __future__ import annotations

import glob
import hashlib
import os
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Optional, Sequence, Union

from .events import load_documents

__all__ = ["SparkFilterSummary", "expand_documents", "spark_filter", "read_results",
           "SOFTWARE_ENGINES"]

#: Engines a Spark task can build from the query lines alone.
SOFTWARE_ENGINES = ("fast", "reference", "lxml")

_ENGINES: dict = {}   # per Python worker: "query file digest, engine name" -> engine


def expand_documents(sources: Sequence[Union[str, os.PathLike]]) -> list[str]:
    """Paths of the documents: :func:`xpfilt.events.load_documents` order, and a source that
    does not exist but is a glob pattern expands to its sorted matches."""
    paths: list[str] = []
    for source in map(str, sources):
        if not os.path.exists(source) and glob.has_magic(source):
            paths += map(str, load_documents(sorted(glob.glob(source))))
        else:
            paths += map(str, load_documents([source]))
    return paths


def _digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()[:20]


@dataclass
class SparkFilterSummary:
    """What a run did: documents and batches in all, batches already in ``OUT`` (skipped),
    batches computed now; documents answered and documents with an error (all of the run's
    documents, whether computed now or before)."""
    documents: int = 0
    batches: int = 0
    skipped: int = 0
    computed: int = 0
    answered: int = 0
    errors: list = field(default_factory=list)      # (document, error)
    failed: list = field(default_factory=list)      # (first path, status, reason) per batch
    wall_s: float = 0.0

    def line(self) -> str:
        return (f"{self.documents} documents in {self.batches} batches ({self.skipped} already "
                f"done, {self.computed} computed in {self.wall_s:.1f} s): {self.answered} "
                f"documents answered, {len(self.errors)} with an error"
                + (f"; {len(self.failed)} batches failed (a rerun retries them)"
                   if self.failed else ""))


class _FilterBatch:
    """A task: filter one batch of paths with the engine built from the broadcast queries."""

    def __init__(self, lines, engine: str, identity: str):
        self.lines, self.engine, self.identity = lines, engine, identity

    def __call__(self, batch: tuple[str, list[str]]) -> tuple[str, list[dict]]:
        from .engines import filter_batch, make_engine
        from .xpath import load_queries

        key, paths = batch
        cache_key = self.identity      # the query file's digest and the engine
        engine = _ENGINES.get(cache_key)
        if engine is None:
            _ENGINES.clear()     # one query set per worker at a time
            engine = _ENGINES[cache_key] = make_engine(
                self.engine, load_queries(self.lines.value).queries)
        rows = [{"document": result.name, "path": path,
                 "matches": None if result.matches is None else list(result.matches),
                 "error": result.error}
                for path, result in zip(paths, filter_batch(engine, paths))]
        return key, rows


def _schema():
    import pyarrow as pa
    return pa.schema([("document", pa.string()), ("path", pa.string()),
                      ("matches", pa.list_(pa.int64())), ("error", pa.string())])


def _write_batch(out: Path, key: str, rows: list[dict]) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    path = out / f"batch-{key}.parquet"
    partial = path.with_suffix(f".{os.getpid()}.partial")
    pq.write_table(pa.Table.from_pylist(rows, schema=_schema()), partial)
    os.replace(partial, path)


def read_results(out: Union[str, Path]) -> list[dict]:
    """Every row of ``out`` (a folder written by :func:`spark_filter`), batch file by batch
    file (the batches' order is not kept: sort by ``path`` as needed)."""
    import pyarrow.parquet as pq

    rows = []
    for path in sorted(Path(out).glob("batch-*.parquet")):
        rows.extend(pq.read_table(path).to_pylist())
    return rows


def spark_filter(queries_path: Union[str, Path], documents: Sequence, out: Union[str, Path], *,
                 engine: str = "fast", master: Optional[str] = None, batch_size: int = 64,
                 progress: bool = False,
                 log: Callable[[str], None] = lambda message: None) -> SparkFilterSummary:
    """Filter ``documents`` (see :func:`expand_documents`) against the query file on Spark
    (``master``: any Spark master URL, default ``local[*]`` or spark-submit's), saving each
    batch's rows in ``out`` as it arrives (see the module docstring)."""
    if engine not in SOFTWARE_ENGINES:
        raise ValueError(f"engine must be one of {', '.join(SOFTWARE_ENGINES)} with Spark, "
                         f"not {engine!r}")
    if batch_size < 1:
        raise ValueError(f"batch size must be at least 1, not {batch_size}")
    start = time.perf_counter()
    data = Path(queries_path).read_bytes()
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    marker = out / "_queries"
    identity = f"{_digest(data)} {engine}\n"
    if marker.exists() and marker.read_text() != identity:
        raise ValueError(f"{out} holds answers for another query file or engine "
                         f"({marker.read_text().strip()}); choose another output folder")
    marker.write_text(identity)

    paths = expand_documents(documents)
    batches = []
    for i in range(0, len(paths), batch_size):
        chunk = paths[i:i + batch_size]
        batches.append((_digest("\n".join(chunk).encode()), chunk))
    todo = [b for b in batches if not (out / f"batch-{b[0]}.parquet").exists()]
    summary = SparkFilterSummary(documents=len(paths), batches=len(batches),
                                 skipped=len(batches) - len(todo))
    log(f"{summary.skipped} of {len(batches)} batches already in {out}; filtering "
        f"{sum(len(b[1]) for b in todo)} documents in {len(todo)} batches")
    if todo:
        from .fanout import fan_out
        from .spark import spark_context

        context = spark_context(master)
        lines = context.broadcast(data.decode("utf-8").splitlines())
        try:
            for outcome in fan_out(todo, _FilterBatch(lines, engine, identity), master=master,
                                   progress=progress, label="batches"):
                if outcome.status == "ok":
                    _write_batch(out, *outcome.value)
                    summary.computed += 1
                else:
                    summary.failed.append((outcome.item[1][0], outcome.status, outcome.reason))
        finally:
            lines.unpersist()
    import pyarrow.parquet as pq

    for key, _ in batches:
        if not (out / f"batch-{key}.parquet").exists():
            continue     # a failed batch: counted in summary.failed, retried by a rerun
        for row in pq.read_table(out / f"batch-{key}.parquet",
                                 columns=["document", "error"]).to_pylist():
            if row["error"] is None:
                summary.answered += 1
            else:
                summary.errors.append((row["document"], row["error"]))
    summary.wall_s = time.perf_counter() - start
    return summary
