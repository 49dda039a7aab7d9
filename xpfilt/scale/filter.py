"""``xpfilt filter --spark``: documents partitioned over Spark executors, answers as Parquet.

Documents come from files or from tables. Files: the driver expands the document arguments
(files, folders of ``*.xml``, glob patterns) in the order of the serial ``xpfilt filter`` and
cuts them into batches of ``batch_size`` documents. Tables (``column``): each argument is a
Parquet file or a JSON-lines file (``.parquet``/``.pq``; ``.jsonl``/``.ndjson``/``.json``, one
JSON object per line), a folder of them (what Spark writes) or a glob pattern, with the XML of
each document in ``column`` and optionally its name in ``name_column`` (else ``FILE[row]``; a
JSON-lines row is its line, from 0, and a blank line is no row). The XML is a string (text
already decoded: it is filtered as UTF-8, whatever encoding its declaration names) or, in
Parquet, binary (the bytes as a file holds them: the encoding policy of files). A batch is
``batch_size`` rows of one Parquet row group (a task reads its row group's columns: write tables
with row groups of about a batch), or consecutive lines of a JSON-lines file; the driver reads
only the Parquet metadata and the JSON-lines line ends. A null XML, or a line that is not a JSON
object with a string in ``column``, is an error row.

The query file's lines are broadcast once; each executor's Python worker parses them and builds
its engine the first time a task of that broadcast reaches it, then keeps it for the following
tasks (workers are reused: ``spark.python.worker.reuse``). One task filters one batch, reading
the documents itself (executors must see the paths: local disks for ``local[*]``, a shared file
system on a cluster) through :func:`xpfilt.engines.filter_batch`, so a malformed or unreadable
document is a row with its error, exactly as in the serial command, never dropped.

Query shards (FoXtrot's idea): a query set too large for one executor's memory is split into
``query_shards`` shards (by default as many as :func:`auto_query_shards` estimates from
:data:`QUERY_BYTES` per query and the executor memory). The queries are sorted by their text and
cut into equal runs, so a shard holds whole subtrees of the shared automaton (4 shards of
100,000 generated NITF queries: 135,512 automaton states in all against 135,496 unsharded; cut
in file order, 174,325). Each (batch, shard) pair is a task, submitted shard after shard so
that a worker keeps its engine from task to task; a worker holds one engine at a time. A batch's
answer is the union of its shards' query numbers, per document; a document one shard finds
malformed is malformed for all (the same front end), its error is reported once.

Each task is one Spark job, submitted from driver threads as wide as the cluster
(:func:`xpfilt.scale.fanout.fan_out`), so results come back and are saved as each task finishes; a
task that fails is reported (``summary.failed``), not saved, and retried by a rerun.

Results: a folder ``OUT`` of Parquet files, one per batch (``batch-<key>.parquet``, written under
a temporary name and renamed), columns ``document`` (file name, or the name column's value),
``path`` (the document's file, or the table's), ``row`` (the row in the table, from 0, or
null), ``matches`` (sorted query numbers, null when ``error`` is set) and ``error``;
``spark.read.parquet(OUT)`` or ``pyarrow.dataset`` reads it as one table. A batch's key is a
hash of its paths (of its table, columns and rows); ``OUT/_queries`` names the digest of the
query file the folder holds answers for. With shards, a finished (batch, shard) task is saved in
``OUT/_shards`` until its batch is complete. A run skips the batches (and shards) already in
``OUT``, so an interrupted run resumes where it stopped; a different query file is refused.
"""

from __future__ import annotations

import glob
import hashlib
import json
import math
import os
import re
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Optional, Sequence, Union

from xpfilt.scale.fanout import SERIAL
from xpfilt.software.events import Document, load_documents

__all__ = [
    "SparkFilterSummary",
    "expand_documents",
    "expand_tables",
    "spark_filter",
    "read_results",
    "plan_query_shards",
    "auto_query_shards",
    "SOFTWARE_ENGINES",
    "QUERY_BYTES",
    "TABLE_SUFFIXES",
]

#: Engines a Spark task can build from the query lines alone.
SOFTWARE_ENGINES = ("fast", "reference", "lxml")

#: Estimated executor memory per query: the fast engine measured 0.52 KB per query (parsed
#: query 0.24 KB, automaton 0.28 KB, 100,000 generated NITF queries), doubled for the query
#: lines and the lazy DFA's memo.
QUERY_BYTES = 1024

#: Table files by suffix: Parquet, or JSON lines (one object per line; Spark writes ``.json``).
TABLE_SUFFIXES = {
    ".parquet": "parquet",
    ".pq": "parquet",
    ".jsonl": "jsonl",
    ".ndjson": "jsonl",
    ".json": "jsonl",
}

_ENGINES: dict = {}  # per Python worker: "query file digest, engine name, shard" -> engine


def expand_documents(sources: Sequence[Union[str, os.PathLike]]) -> list[str]:
    """Paths of the documents: :func:`xpfilt.software.events.load_documents` order, and a source that
    does not exist but is a glob pattern expands to its sorted matches."""
    paths: list[str] = []
    for source in map(str, sources):
        if not os.path.exists(source) and glob.has_magic(source):
            paths += map(str, load_documents(sorted(glob.glob(source))))
        else:
            paths += map(str, load_documents([source]))
    return paths


def expand_tables(sources: Sequence[Union[str, os.PathLike]]) -> list[str]:
    """Paths of the table files: files as given, folders as their sorted table files (not
    those starting with ``_`` or ``.``, such as Spark's ``_SUCCESS``), glob patterns as their
    sorted matches. Raises ValueError for a file that is no table file or a folder with none."""
    paths: list[str] = []
    for source in map(str, sources):
        if not os.path.exists(source) and glob.has_magic(source):
            found = sorted(glob.glob(source))
        elif os.path.isdir(source):
            found = sorted(
                str(p)
                for p in Path(source).iterdir()
                if p.suffix in TABLE_SUFFIXES and not p.name.startswith(("_", "."))
            )
            if not found:
                raise ValueError(
                    f"{source}: a folder of tables must hold Parquet or JSON-lines "
                    f"files ({', '.join(TABLE_SUFFIXES)}), not none"
                )
        else:
            found = [source]
        for path in found:
            suffix = Path(path).suffix
            if suffix not in TABLE_SUFFIXES:
                raise ValueError(
                    f"{path}: a table must be a Parquet or JSON-lines file "
                    f"({', '.join(TABLE_SUFFIXES)}), not "
                    f"{repr(suffix) if suffix else 'a file without suffix'}"
                )
        paths += found
    return paths


def _digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()[:20]


@dataclass(frozen=True)
class _Batch:
    """Documents one task filters: ``kind`` "files" (``source``: the paths), "parquet"
    (``source``: path, row group, first row of the group, first and end row in the group) or
    "jsonl" (``source``: path, first and end byte, row of the first line)."""

    key: str
    kind: str
    source: tuple
    size: int  # documents (for JSON lines: lines that are not blank)


def _file_batches(paths: list[str], batch_size: int) -> list[_Batch]:
    batches = []
    for i in range(0, len(paths), batch_size):
        chunk = tuple(paths[i : i + batch_size])
        batches.append(_Batch(_digest("\n".join(chunk).encode()), "files", chunk, len(chunk)))
    return batches


def _table_batches(
    paths: list[str], batch_size: int, column: str, name_column: Optional[str]
) -> list[_Batch]:
    """Batches of ``batch_size`` rows, never across a Parquet row group; a Parquet file without
    ``column`` (or ``name_column``) raises ValueError up front."""
    import pyarrow.parquet as pq

    batches = []
    for path in paths:
        tag = f"{path}\0{column}\0{name_column}"
        if TABLE_SUFFIXES[Path(path).suffix] == "parquet":
            try:
                metadata = pq.ParquetFile(path).metadata
            except OSError as exc:
                raise ValueError(f"{path}: not a readable Parquet file: {exc}") from None
            names = metadata.schema.to_arrow_schema().names
            for wanted in filter(None, (column, name_column)):
                if wanted not in names:
                    raise ValueError(
                        f"{path}: the column must be one of {', '.join(names)}, not {wanted!r}"
                    )
            offset = 0
            for group in range(metadata.num_row_groups):
                rows = metadata.row_group(group).num_rows
                for start in range(0, rows, batch_size):
                    stop = min(rows, start + batch_size)
                    source = (path, group, offset, start, stop)
                    batches.append(
                        _Batch(
                            _digest(f"{tag}\0{source[1:]}".encode()),
                            "parquet",
                            source,
                            stop - start,
                        )
                    )
                offset += rows
        else:
            with open(path, "rb") as stream:
                row = start = end = lines = documents = 0
                for line in stream:
                    end += len(line)
                    lines += 1
                    documents += bool(line.strip())
                    if lines == batch_size:
                        batches.append(_jsonl_batch(tag, path, start, end, row, documents))
                        row, start, lines, documents = row + lines, end, 0, 0
                if lines:
                    batches.append(_jsonl_batch(tag, path, start, end, row, documents))
    return batches


def _jsonl_batch(tag: str, path: str, start: int, end: int, row: int, documents: int) -> _Batch:
    source = (path, start, end, row)
    return _Batch(_digest(f"{tag}\0{source[1:]}".encode()), "jsonl", source, documents)


#: The XML declaration's encoding: text from a string column is made UTF-8 and says so.
_DECLARED = re.compile(r"""<\?xml[ \t\r\n][^>]*?encoding[ \t\r\n]*=[ \t\r\n]*(["'])(.*?)\1""")


def _table_document(name: str, value, column: str) -> Union[Document, str]:
    """A table cell as a document: bytes as they are, a string as UTF-8 (its declared encoding
    named UTF-8 too: the string is already decoded); else the error of the row."""
    if isinstance(value, bytes):
        return Document(name, value)
    if isinstance(value, str):
        declared = _DECLARED.match(value)
        if declared:
            value = value[: declared.start(2)] + "UTF-8" + value[declared.end(2) :]
        return Document(name, value.encode("utf-8", "surrogatepass"))
    found = "null" if value is None else f"a {type(value).__name__}"
    return f"{name}: the {column!r} value must be an XML string, not {found}"


def _read_table_batch(batch: _Batch, column: str, name_column: Optional[str]) -> list:
    """(name, row, document or error message) per row of a table batch."""
    base = os.path.basename(batch.source[0])
    items = []
    if batch.kind == "parquet":
        import pyarrow.parquet as pq

        path, group, offset, start, stop = batch.source
        columns = [column] + ([name_column] if name_column and name_column != column else [])
        table = (
            pq.ParquetFile(path).read_row_group(group, columns=columns).slice(start, stop - start)
        )
        values = table.column(column).to_pylist()
        names = table.column(name_column).to_pylist() if name_column else [None] * len(values)
        for i, (value, name) in enumerate(zip(values, names)):
            row = offset + start + i
            name = f"{base}[{row}]" if name is None else str(name)
            items.append((name, row, _table_document(name, value, column)))
        return items
    path, start, end, row = batch.source
    with open(path, "rb") as stream:
        stream.seek(start)
        data = stream.read(end - start)
    lines = data.split(b"\n")  # as the driver counted them: at b"\n" only
    if lines[-1] == b"":
        lines.pop()
    for row, line in enumerate(lines, start=row):
        if not line.strip():
            continue  # a blank line is no row
        name = f"{base}[{row}]"
        try:
            record = json.loads(line)
        except ValueError as exc:
            items.append((name, row, f"{name}: not a JSON object: {exc}"))
            continue
        if not isinstance(record, dict):
            items.append(
                (name, row, f"{name}: a line must be a JSON object, not {type(record).__name__}")
            )
            continue
        if name_column and record.get(name_column) is not None:
            name = str(record[name_column])
        if column not in record:
            items.append((name, row, f"{name}: the object has no {column!r} field"))
            continue
        items.append((name, row, _table_document(name, record[column], column)))
    return items


@dataclass
class SparkFilterSummary:
    """What a run did: documents and batches in all, batches already in ``OUT`` (skipped),
    batches computed now, query shards and tasks run; documents answered and documents with an
    error (all of the run's documents, whether computed now or before); engines the tasks built
    (a worker keeps its engine for the next task of the same shard), their build time, and the
    CPU time of the tasks (in the workers: building, reading and filtering)."""

    documents: int = 0
    batches: int = 0
    skipped: int = 0
    computed: int = 0
    shards: int = 1
    tasks: int = 0
    builds: int = 0
    build_s: float = 0.0
    task_cpu_s: float = 0.0
    answered: int = 0
    errors: list = field(default_factory=list)  # (document, error)
    failed: list = field(default_factory=list)  # (first path, status, reason) per task
    wall_s: float = 0.0

    def line(self) -> str:
        shards = (
            f", {self.shards} query shards: {self.tasks} tasks" if self.shards > 1 else ""
        ) + (
            f", {self.builds} engines built in {self.build_s:.1f} s, "
            f"tasks' CPU {self.task_cpu_s:.1f} s"
        )
        return (
            f"{self.documents} documents in {self.batches} batches ({self.skipped} already "
            f"done, {self.computed} computed in {self.wall_s:.1f} s{shards}): "
            f"{self.answered} documents answered, {len(self.errors)} with an error"
            + (f"; {len(self.failed)} tasks failed (a rerun retries them)" if self.failed else "")
        )


def plan_query_shards(lines: Sequence[str], shards: int) -> list[list[int]]:
    """The query numbers (line numbers, from 1) of each shard: the lines sorted by their text
    (queries with a common prefix side by side) cut into ``shards`` runs of equal length, each
    run in increasing order. Blank lines are left out; there are never more shards than
    lines."""
    numbered = sorted(
        (line.strip(), number) for number, line in enumerate(lines, start=1) if line.strip()
    )
    shards = max(1, min(shards, len(numbered)))
    return [
        sorted(
            number
            for _, number in numbered[
                i * len(numbered) // shards : (i + 1) * len(numbered) // shards
            ]
        )
        for i in range(shards)
    ]


_SIZE = re.compile(r"([0-9]+)([kmgt]?)b?", re.IGNORECASE)


def _memory_bytes(text: str) -> int:
    """A Spark memory setting ("1g", "512m", "2048") in bytes (a bare number is MiB)."""
    m = _SIZE.fullmatch(text.strip())
    if not m:
        raise ValueError(f"a Spark memory setting must be a size such as 512m or 4g, not {text!r}")
    return int(m.group(1)) << (10 * " kmgt".index((m.group(2) or "m").lower()))


def auto_query_shards(queries: int, executor_memory: str = "1g") -> int:
    """Shards so that each shard's engine (:data:`QUERY_BYTES` per query) takes at most half of
    ``executor_memory`` (the rest: the documents, Python, and the memo's growth)."""
    budget = _memory_bytes(executor_memory) // 2
    return max(1, math.ceil(queries * QUERY_BYTES / budget))


def _executor_memory(context) -> str:
    conf = context.getConf()
    return (
        conf.get("spark.executor.pyspark.memory", None)
        or conf.get("spark.executor.memory", None)
        or "1g"
    )


class _FilterTask:
    """A task: filter one batch with the engine of one query shard, built from the broadcast
    query lines and shards (``None``: all the queries)."""

    def __init__(
        self,
        broadcast,
        engine: str,
        identity: str,
        column: Optional[str],
        name_column: Optional[str],
    ):
        self.broadcast, self.engine, self.identity = broadcast, engine, identity
        self.column, self.name_column = column, name_column

    def __call__(self, task: tuple[_Batch, int]) -> tuple:
        """(batch key, shard, rows, engine build seconds or None, CPU seconds)"""
        cpu = time.process_time()
        key, shard, rows, built = self._filter(*task)
        return key, shard, rows, built, time.process_time() - cpu

    def _filter(self, batch: _Batch, shard: int) -> tuple:
        from xpfilt.engines import filter_batch, make_engine
        from xpfilt.lang.xpath import load_queries
        from xpfilt.software.fast import gc_paused

        lines, shards = self.broadcast.value
        # the query file's digest, the engine, the shard of how many (a shard's queries follow)
        cache_key = f"{self.identity.strip()} {shard}/{1 if shards is None else len(shards)}"
        engine, built = _ENGINES.get(cache_key), None
        if engine is None:
            _ENGINES.clear()  # one engine per worker at a time
            start = time.perf_counter()
            with gc_paused():
                if shards is None:
                    queries = load_queries(lines).queries
                else:
                    numbers = shards[shard]
                    queries = load_queries([lines[n - 1] for n in numbers], numbers).queries
                engine = _ENGINES[cache_key] = make_engine(self.engine, queries)
            built = time.perf_counter() - start
        if batch.kind == "files":
            rows = [
                {
                    "document": result.name,
                    "path": path,
                    "row": None,
                    "matches": None if result.matches is None else list(result.matches),
                    "error": result.error,
                }
                for path, result in zip(batch.source, filter_batch(engine, batch.source))
            ]
            return batch.key, shard, rows, built
        items = _read_table_batch(batch, self.column, self.name_column)
        documents = [document for _, _, document in items if isinstance(document, Document)]
        results = iter(filter_batch(engine, documents))
        rows = []
        for name, row, document in items:
            if isinstance(document, Document):
                result = next(results)
                matches, error = result.matches, result.error
            else:
                matches, error = None, document
            rows.append(
                {
                    "document": name,
                    "path": batch.source[0],
                    "row": row,
                    "matches": None if matches is None else list(matches),
                    "error": error,
                }
            )
        return batch.key, shard, rows, built


def _merge_shards(pieces: list[list[dict]]) -> list[dict]:
    """One batch's rows from its shards' rows (same documents, same order): the union of the
    query numbers; a document with an error in any shard is that error."""
    merged = []
    for rows in zip(*pieces, strict=True):
        if len({(r["path"], r["row"], r["document"]) for r in rows}) != 1:
            raise RuntimeError(f"the shards of a batch answered different documents: {rows}")
        error = next((r["error"] for r in rows if r["error"] is not None), None)
        matches = None if error is not None else sorted(set().union(*(r["matches"] for r in rows)))
        merged.append(dict(rows[0], matches=matches, error=error))
    return merged


def _schema():
    import pyarrow as pa

    return pa.schema(
        [
            ("document", pa.string()),
            ("path", pa.string()),
            ("row", pa.int64()),
            ("matches", pa.list_(pa.int64())),
            ("error", pa.string()),
        ]
    )


def _write_rows(path: Path, rows: list[dict]) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    partial = path.with_suffix(f".{os.getpid()}.partial")
    pq.write_table(pa.Table.from_pylist(rows, schema=_schema()), partial)
    os.replace(partial, path)


def read_results(out: Union[str, Path]) -> list[dict]:
    """Every row of ``out`` (a folder written by :func:`spark_filter`), batch file by batch
    file (the batches' order is not kept: sort by ``path`` and ``row`` as needed)."""
    import pyarrow.parquet as pq

    rows = []
    for path in sorted(Path(out).glob("batch-*.parquet")):
        rows.extend(pq.read_table(path).to_pylist())
    return rows


def spark_filter(
    queries_path: Union[str, Path],
    documents: Sequence,
    out: Union[str, Path],
    *,
    engine: str = "fast",
    master: Optional[str] = None,
    batch_size: int = 64,
    column: Optional[str] = None,
    name_column: Optional[str] = None,
    query_shards: Optional[int] = None,
    progress: bool = False,
    log: Callable[[str], None] = lambda message: None,
) -> SparkFilterSummary:
    """Filter ``documents`` (files, see :func:`expand_documents`; with ``column``, tables, see
    :func:`expand_tables`) against the query file on Spark (``master``: any Spark master URL,
    default ``local[*]`` or spark-submit's; ``"serial"``: the same tasks one after another in
    this process), in ``query_shards`` shards (default: as
    :func:`auto_query_shards` estimates), saving each batch's rows in ``out`` as it completes
    (see the module docstring)."""
    if engine not in SOFTWARE_ENGINES:
        raise ValueError(
            f"engine must be one of {', '.join(SOFTWARE_ENGINES)} with Spark, not {engine!r}"
        )
    if batch_size < 1:
        raise ValueError(f"batch size must be at least 1, not {batch_size}")
    if query_shards is not None and query_shards < 1:
        raise ValueError(f"query shards must be at least 1, not {query_shards}")
    if name_column and not column:
        raise ValueError(f"a name column ({name_column!r}) needs the column of the XML")
    start = time.perf_counter()
    data = Path(queries_path).read_bytes()
    lines = data.decode("utf-8").splitlines()
    out = Path(out)
    if column:
        batches = _table_batches(expand_tables(documents), batch_size, column, name_column)
    else:
        batches = _file_batches(expand_documents(documents), batch_size)
    out.mkdir(parents=True, exist_ok=True)
    marker = out / "_queries"
    identity = f"{_digest(data)} {engine}\n"
    if marker.exists() and marker.read_text() != identity:
        raise ValueError(
            f"{out} holds answers for another query file or engine "
            f"({marker.read_text().strip()}); choose another output folder"
        )
    marker.write_text(identity)

    todo = [b for b in batches if not (out / f"batch-{b.key}.parquet").exists()]
    summary = SparkFilterSummary(
        documents=sum(b.size for b in batches),
        batches=len(batches),
        skipped=len(batches) - len(todo),
    )
    context = None
    if todo and master != SERIAL:
        from xpfilt.scale.spark import spark_context

        context = spark_context(master)
    if todo and query_shards is None:
        query_shards = auto_query_shards(
            len(lines), "1g" if context is None else _executor_memory(context)
        )
    shards = plan_query_shards(lines, query_shards or 1)
    summary.shards = len(shards)
    pieces_dir = out / "_shards"

    def piece(batch: _Batch, shard: int) -> Path:
        return pieces_dir / f"batch-{batch.key}.{shard}-of-{len(shards)}.parquet"

    # shard after shard, so that a worker keeps its engine from one task to the next
    tasks = [
        (b, s)
        for s in range(len(shards))
        for b in todo
        if len(shards) == 1 or not piece(b, s).exists()
    ]
    log(
        f"{summary.skipped} of {len(batches)} batches already in {out}; filtering "
        f"{sum(b.size for b in todo)} documents in {len(todo)} batches"
        + (f" x {len(shards)} query shards ({len(tasks)} tasks)" if len(shards) > 1 else "")
    )
    if tasks:
        from xpfilt.scale.fanout import fan_out

        if len(shards) > 1:
            pieces_dir.mkdir(exist_ok=True)
        value = (lines, shards if len(shards) > 1 else None)
        broadcast = _Held(value) if context is None else context.broadcast(value)
        by_key = {b.key: b for b in todo}
        remaining = {b.key: 0 for b in todo}
        for b, _ in tasks:
            remaining[b.key] += 1
        try:
            for outcome in fan_out(
                tasks,
                _FilterTask(broadcast, engine, identity, column, name_column),
                master=master,
                progress=progress,
                label="tasks",
            ):
                summary.tasks += 1
                if outcome.status != "ok":
                    summary.failed.append(
                        (outcome.item[0].source[0], outcome.status, outcome.reason)
                    )
                    continue
                key, shard, rows, built, cpu = outcome.value
                summary.task_cpu_s += cpu
                if built is not None:
                    summary.builds += 1
                    summary.build_s += built
                if len(shards) == 1:
                    _write_rows(out / f"batch-{key}.parquet", rows)
                    summary.computed += 1
                    continue
                _write_rows(piece(by_key[key], shard), rows)
                remaining[key] -= 1
                if remaining[key] == 0:
                    _complete(out, by_key[key], [piece(by_key[key], s) for s in range(len(shards))])
                    summary.computed += 1
        finally:
            broadcast.unpersist()
            if context is None:
                _ENGINES.clear()  # this process is no worker: keep no engine
    if len(shards) > 1:  # batches whose every shard an earlier run saved
        for b in todo:
            if not (out / f"batch-{b.key}.parquet").exists() and all(
                piece(b, s).exists() for s in range(len(shards))
            ):
                _complete(out, b, [piece(b, s) for s in range(len(shards))])
                summary.computed += 1
    if pieces_dir.is_dir() and not any(pieces_dir.iterdir()):
        pieces_dir.rmdir()
    import pyarrow.parquet as pq

    for batch in batches:
        path = out / f"batch-{batch.key}.parquet"
        if not path.exists():
            continue  # a failed batch: counted in summary.failed, retried by a rerun
        for row in pq.read_table(path, columns=["document", "error"]).to_pylist():
            if row["error"] is None:
                summary.answered += 1
            else:
                summary.errors.append((row["document"], row["error"]))
    summary.wall_s = time.perf_counter() - start
    return summary


class _Held:
    """A broadcast's stand-in when the tasks run in this process (``master="serial"``)."""

    def __init__(self, value):
        self.value = value

    def unpersist(self) -> None:
        self.value = None


def _complete(out: Path, batch: _Batch, pieces: list[Path]) -> None:
    """Merge a batch's shard pieces into its batch file, then drop them (and any piece of the
    batch from a run with another number of shards)."""
    import pyarrow.parquet as pq

    _write_rows(
        out / f"batch-{batch.key}.parquet",
        _merge_shards([pq.read_table(p).to_pylist() for p in pieces]),
    )
    for stale in (out / "_shards").glob(f"batch-{batch.key}.*.parquet"):
        stale.unlink()
