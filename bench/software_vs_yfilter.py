"""Software filtering at 1k, 10k and 100k queries: the fast engine, the reference, and YFilter 1.0.

Queries: ``xpfilt gen-queries --dtd nitf-2-5.dtd -n N --max-depth 6 --p-wildcard 0.15
--p-descendant 0.15 --seed 1`` (issue 17's workload). Documents: the 100 shared NITF documents
(the fast engine filters them cycled to >= 15 MB, issue 37), and two generated NITF documents of
2.2 MB (``xpfilt gen-docs --size 2.2M --seed 1``, depth 16). An engine with ``filter_many``
(the fast engine's compiled loop) gets the documents in batches of
:data:`xpfilt.engines.BATCH_DOCUMENTS`, as ``xpfilt filter`` gives them; the answers stay the
engine's (arrays of query positions).

Each row runs in its own process (``--row``), so ``peak_rss_MB`` is that process's peak resident
set (Python, NumPy, the parsed queries, the engine, the documents) -- the measure YFilter's
figure is. Per row: time to load the query file and to build the engine, the first pass over
the documents (``cold``: the fast engine builds its lazy DFA) and the best later pass
(``warm``), MB/s and events/s (events: opens, closes and text nodes, as in
reference_throughput), and the machine load (other jobs share this machine). The reference at
100k queries takes minutes per MB: it is measured on the first 10 NITF documents only and on no
generated document (the row says so); the fast engine's answers are checked equal to the
reference's on every document both filtered.

YFilter 1.0 (Java) cannot run here; its figures are issue 17's, measured on this machine over 500
NITF documents (2.9 MB), whole process (JVM start, query parsing, NFA build, filtering). The
like-for-like comparison is ``whole``: the wall time and peak memory of one ``xpfilt filter``
process over 2.9 MB of NITF (the 100 documents, cycled) with its output written, and
``stream``: the fast engine's filtering rate on those same 2.9 MB inside a process (first cycle
cold). Issue 37 adds the same whole process over >= 15 MB: the 100 documents named 50 times on
the command line (19.4 MB); YFilter's figure there is issue 37's at 10k profiles (18.8 MB,
6.15 s, 597 MB) and, at 1k and 100k, its 2.9 MB figure scaled by bytes (an upper bound of its
time: its start-up is scaled too). Saved to bench/results/software_vs_yfilter{,_whole}.{json,md}.
"""

from __future__ import annotations

import argparse
import gc
import hashlib
import json
import os
import resource
import subprocess
import sys
import time
from pathlib import Path

from common import publish

from xpfilt.paths import shared_data
from xpfilt.software.events import Document, load_documents, parse_events

SIZES = (1000, 10000, 100000)
#: issue 17: YFilter 1.0 over 500 NITF documents (2.9 MB), whole process: seconds, peak MB
YFILTER = {1000: (0.91, None), 10000: (1.40, None), 100000: (4.84, 1100)}
YFILTER_BYTES = 2.9e6
#: issue 37: YFilter 1.0 over 18.8 MB of NITF (5,000 files), 10k profiles, whole process
YFILTER_LARGE = {10000: (6.15, 597, 18.8e6)}
LARGE_BYTES = 15e6  # issue 37: the fast engine filters >= 15 MB of NITF
LARGE_FILES = 5000
REFERENCE_SUBSET = 10  # NITF documents the reference filters at 100k queries
WORK = Path(__file__).resolve().parent.parent / "build" / "bench-software"
PYTHON = sys.executable
XPFILT = [str(Path(PYTHON).parent / "xpfilt")]


def _run(argv: list[str]) -> None:
    subprocess.run(argv, check=True, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL)


def workload() -> dict:
    """Generate (once) the query files and the 2.2 MB documents under build/bench-software."""
    data = shared_data()
    dtd = str(data / "nitf" / "nitf-2-5.dtd")
    WORK.mkdir(parents=True, exist_ok=True)
    queries = {}
    for n in SIZES:
        path = WORK / f"nitf-d6-p15-n{n}-seed1.txt"
        if not path.exists():
            _run(
                XPFILT
                + [
                    "gen-queries",
                    "--dtd",
                    dtd,
                    "-n",
                    str(n),
                    "--max-depth",
                    "6",
                    "--p-wildcard",
                    "0.15",
                    "--p-descendant",
                    "0.15",
                    "--seed",
                    "1",
                    "-o",
                    str(path),
                ]
            )
        queries[n] = path
    generated = WORK / "nitf-2.2M"
    if not (generated / "doc-2.xml").exists():
        _run(
            XPFILT
            + [
                "gen-docs",
                "--dtd",
                dtd,
                "-n",
                "2",
                "--size",
                "2.2M",
                "--seed",
                "1",
                "-o",
                str(generated),
            ]
        )
    return {
        "queries": queries,
        "docs": {"NITF (100 docs)": data / "nitf" / "docs", "generated (2 x 2.2 MB)": generated},
    }


def _digest(answer: frozenset) -> str:
    return hashlib.sha1(" ".join(map(str, sorted(answer))).encode()).hexdigest()[:12]


def _answerer(engine):
    """A function filtering a list of documents as ``xpfilt filter`` does: in batches through
    ``filter_many`` when the engine has it, else one by one in order (no set built)."""
    from xpfilt.engines import BATCH_DOCUMENTS

    many = getattr(engine, "filter_many", None)
    if many is not None:

        def run(docs):
            for i in range(0, len(docs), BATCH_DOCUMENTS):
                many(docs[i : i + BATCH_DOCUMENTS])

        return run
    one = getattr(engine, "filter_ordered", engine.filter)

    def run(docs):
        for doc in docs:
            one(doc)

    return run


def _cycled(docs: list, size: float) -> list:
    """``docs`` repeated until they hold at least ``size`` bytes."""
    out, total = [], 0
    while total < size:
        doc = docs[len(out) % len(docs)]
        out.append(doc)
        total += len(doc.data)
    return out


def measure_row(
    engine_name: str,
    queries_path: Path,
    folder: Path,
    limit: int,
    stream_bytes: float,
    cycle_bytes: float = 0,
) -> dict:
    """In a fresh process: load, build, filter (cold, then warm), and peak memory.
    ``cycle_bytes``: the documents cycled to that size for the timed passes."""
    from xpfilt.engines import make_engine
    from xpfilt.lang.xpath import load_queries
    from xpfilt.software.fast import gc_paused

    docs = [Document.from_path(p) for p in load_documents([folder])]
    if limit:
        docs = docs[:limit]
    timed = _cycled(docs, cycle_bytes) if cycle_bytes else docs
    baseline = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    start = time.perf_counter()
    with gc_paused():  # as xpfilt filter does
        queries = load_queries(queries_path).queries
    load_s = time.perf_counter() - start
    start = time.perf_counter()
    engine = make_engine(engine_name, queries)
    build_s = time.perf_counter() - start
    gc.freeze()
    # the answer as xpfilt filter takes it: batches, or in order (no set built)
    answer = _answerer(engine)
    passes, cpu = [], []
    for _ in range(3 if engine_name == "fast" else 1):
        start, start_cpu = time.perf_counter(), time.process_time()
        answer(timed)
        passes.append(time.perf_counter() - start)
        cpu.append(time.process_time() - start_cpu)
    digests, matches = [], 0  # one more pass, untimed, keeping no answer (memory)
    for doc in docs:
        found = engine.filter(doc)
        digests.append(_digest(found))
        matches += len(found)
    row = {
        "load_s": load_s,
        "build_s": build_s,
        "cold_s": passes[0],
        "warm_s": min(passes),
        "cold_cpu_s": cpu[0],
        "warm_cpu_s": min(cpu),
        "digests": digests,
        "matches": matches,
        "baseline_rss_MB": baseline,
        "timed_documents": len(timed),
        "timed_bytes": sum(len(doc.data) for doc in timed),
    }
    row["stats"] = dict(getattr(engine, "stats", {}))
    row["peak_rss_MB"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    if stream_bytes:  # the 100 NITF documents cycled to YFilter's 2.9 MB, the first cycle cold
        del engine
        gc.collect()
        stream = _cycled(docs, stream_bytes)
        size = sum(len(doc.data) for doc in stream)
        fresh = make_engine(engine_name, queries)
        answer = _answerer(fresh)
        start, start_cpu = time.perf_counter(), time.process_time()
        answer(stream)
        row.update(
            stream_bytes=size,
            stream_s=time.perf_counter() - start,
            stream_cpu_s=time.process_time() - start_cpu,
        )
    return row


def run_row(
    engine: str,
    n: int,
    queries_path: Path,
    label: str,
    folder: Path,
    limit: int,
    stream: bool,
    cycle: float = 0,
) -> dict:
    docs = load_documents([folder])
    docs = docs[:limit] if limit else docs
    size = sum(p.stat().st_size for p in docs)
    events = sum(len(parse_events(Document.from_path(p))) for p in docs)
    load = os.getloadavg()[0]
    argv = [
        PYTHON,
        __file__,
        "--row",
        engine,
        str(queries_path),
        str(folder),
        str(limit),
        str(YFILTER_BYTES if stream else 0),
        str(cycle),
    ]
    proc = subprocess.run(argv, capture_output=True, text=True)
    if proc.returncode:
        raise RuntimeError(f"row {engine} {n} {label} failed:\n{proc.stderr[-3000:]}")
    measured = json.loads(proc.stdout)
    cycles = measured["timed_bytes"] / size  # the timed passes filtered the documents cycled
    size, events = measured["timed_bytes"], round(events * cycles)
    row = {
        "engine": engine,
        "queries": n,
        "workload": label,
        "documents": measured["timed_documents"],
        "bytes": size,
        "events": events,
        "subset": f"first {limit} documents" if limit else "",
        "load_s": measured["load_s"],
        "build_s": measured["build_s"],
        "build_us_per_query": measured["build_s"] / n * 1e6,
        "cold_s": measured["cold_s"],
        "warm_s": measured["warm_s"],
        "cold_MBps": size / measured["cold_s"] / 1e6,
        "warm_MBps": size / measured["warm_s"] / 1e6,
        "warm_Mevents_per_s": events / measured["warm_s"] / 1e6,
        "cold_cpu_s": measured["cold_cpu_s"],
        "warm_cpu_s": measured["warm_cpu_s"],
        "cold_cpu_MBps": size / measured["cold_cpu_s"] / 1e6,
        "warm_cpu_MBps": size / measured["warm_cpu_s"] / 1e6,
        "matches": measured["matches"],
        "peak_rss_MB": measured["peak_rss_MB"],
        "baseline_rss_MB": measured["baseline_rss_MB"],
        "stats": measured["stats"],
        "path": measured["stats"].get("loop") or "python",
        "load_before": round(load, 2),
        "load_after": round(os.getloadavg()[0], 2),
        "digests": measured["digests"],
    }
    if "stream_s" in measured:
        row.update(
            stream_bytes=measured["stream_bytes"],
            stream_s=measured["stream_s"],
            stream_MBps=measured["stream_bytes"] / measured["stream_s"] / 1e6,
            stream_cpu_MBps=measured["stream_bytes"] / measured["stream_cpu_s"] / 1e6,
        )
    return row


def whole_process(n: int, queries_path: Path, folder: Path, size_goal: float) -> dict:
    """One ``xpfilt filter`` process over ``size_goal`` bytes of NITF (the documents named again
    and again), output to /dev/null, against YFilter's figure for that size."""
    docs, size = [], 0
    files = load_documents([folder])
    while size < size_goal:
        path = files[len(docs) % len(files)]
        docs.append(str(path))
        size += path.stat().st_size
    load = os.getloadavg()[0]
    start = time.perf_counter()
    proc = subprocess.Popen(
        XPFILT + ["filter", "-q", str(queries_path), "-o", os.devnull] + docs,
        stdin=subprocess.DEVNULL,
    )
    _, status, usage = os.wait4(proc.pid, 0)
    elapsed = time.perf_counter() - start
    if os.waitstatus_to_exitcode(status) != 0:
        raise RuntimeError(f"xpfilt filter failed for {queries_path}")
    if size_goal <= YFILTER_BYTES:
        yfilter_s, yfilter_mb = YFILTER[n]
        yfilter_bytes, yfilter_source = YFILTER_BYTES, "issue 17: 2.9 MB"
    elif n in YFILTER_LARGE:
        yfilter_s, yfilter_mb, yfilter_bytes = YFILTER_LARGE[n]
        yfilter_source = "issue 37: 18.8 MB"
    else:
        yfilter_s, yfilter_mb = YFILTER[n]
        yfilter_s, yfilter_bytes = yfilter_s * size / YFILTER_BYTES, size
        yfilter_source = "issue 17's 2.9 MB figure scaled by bytes"
    cpu = usage.ru_utime + usage.ru_stime
    return {
        "queries": n,
        "documents": len(docs),
        "bytes": size,
        "fast_whole_s": elapsed,
        "fast_whole_cpu_s": cpu,
        "fast_whole_MBps": size / elapsed / 1e6,
        "fast_peak_MB": usage.ru_maxrss / 1024,
        "yfilter_s": yfilter_s,
        "yfilter_bytes": yfilter_bytes,
        "yfilter_source": yfilter_source,
        "yfilter_MBps": yfilter_bytes / yfilter_s / 1e6,
        "yfilter_peak_MB": yfilter_mb,
        "whole_speedup": yfilter_s / elapsed * size / yfilter_bytes,
        "whole_cpu_speedup": yfilter_s / cpu * size / yfilter_bytes,
        "load_before": round(load, 2),
    }


def main() -> None:
    work = workload()
    rows, whole = [], []
    for n in SIZES:
        for label, folder in work["docs"].items():
            nitf = label.startswith("NITF")
            cycle = LARGE_BYTES if nitf else 0
            fast = run_row("fast", n, work["queries"][n], label, folder, 0, nitf, cycle)
            if n == SIZES[-1] and not nitf:
                ref = None  # minutes per MB at 100k queries: see the module docstring
            else:
                limit = REFERENCE_SUBSET if n == SIZES[-1] else 0
                ref = run_row("reference", n, work["queries"][n], label, folder, limit, False)
                assert ref["digests"] == fast["digests"][: len(ref["digests"])], (
                    f"fast and reference disagree at {n} queries on {label}"
                )
            for row in (fast, ref):
                if row is None:
                    continue
                rows.append(row)
                print(
                    f"{row['engine']:9} {n:6} queries, {label:22}: build {row['build_s']:6.2f} s "
                    f"({row['build_us_per_query']:5.1f} us/query), cold "
                    f"{row['cold_MBps']:6.2f} MB/s, warm {row['warm_MBps']:6.2f} MB/s "
                    f"({row['warm_Mevents_per_s']:.2f} M events/s), peak "
                    f"{row['peak_rss_MB']:5.0f} MB {row['subset']} (load "
                    f"{row['load_before']})",
                    file=sys.stderr,
                )
        for row in rows:
            if row["engine"] == "fast" and row["queries"] == n and "stream_MBps" in row:
                stream = row
        for goal in (YFILTER_BYTES, LARGE_BYTES):
            entry = whole_process(n, work["queries"][n], work["docs"]["NITF (100 docs)"], goal)
            entry.update(
                fast_stream_MBps=stream["stream_MBps"],
                fast_stream_cpu_MBps=stream["stream_cpu_MBps"],
                fast_load_s=stream["load_s"],
                fast_build_s=stream["build_s"],
                stream_speedup=stream["stream_MBps"] / entry["yfilter_MBps"],
            )
            whole.append(entry)
            print(
                f"whole process, {n:6} queries: xpfilt filter {entry['fast_whole_s']:.2f} s "
                f"({entry['fast_peak_MB']:.0f} MB peak) for {entry['bytes'] / 1e6:.2f} MB, "
                f"YFilter {entry['yfilter_s']:.2f} s ({entry['yfilter_source']}): "
                f"{entry['whole_speedup']:.1f}x",
                file=sys.stderr,
            )
    for row in rows:
        row.pop("digests")
    publish(
        "software_vs_yfilter",
        rows,
        [
            ("engine", "engine"),
            ("path", "path"),
            ("queries", "queries"),
            ("workload", "documents"),
            ("subset", "subset"),
            ("bytes", "bytes"),
            ("build_s", "build s"),
            ("build_us_per_query", "build µs/query"),
            ("cold_MBps", "cold MB/s"),
            ("warm_MBps", "warm MB/s"),
            ("warm_Mevents_per_s", "warm M events/s"),
            ("cold_cpu_MBps", "cold MB/CPU-s"),
            ("warm_cpu_MBps", "warm MB/CPU-s"),
            ("peak_rss_MB", "peak RSS MB"),
            ("load_before", "load"),
        ],
        "Software engines: fast (shared NFA, lazy DFA) vs reference",
        "One process per row; peak RSS is the whole process's. cold: first pass (the lazy DFA is "
        "built), warm: best later pass. Query-file parsing is not in build s (see load_s in the "
        "JSON). MB/CPU-s: per second of the process's CPU time, steadier than wall time when "
        "other jobs share the machine. load: 1-minute load average before the row (2 cores).",
    )
    publish(
        "software_vs_yfilter_whole",
        whole,
        [
            ("queries", "queries"),
            ("bytes", "bytes"),
            ("yfilter_s", "YFilter s"),
            ("yfilter_source", "YFilter figure"),
            ("yfilter_MBps", "YFilter MB/s"),
            ("yfilter_peak_MB", "YFilter peak MB"),
            ("fast_whole_s", "xpfilt filter s"),
            ("fast_whole_cpu_s", "xpfilt filter CPU s"),
            ("fast_whole_MBps", "xpfilt filter MB/s"),
            ("fast_peak_MB", "xpfilt peak MB"),
            ("whole_speedup", "whole-process speed / YFilter's"),
            ("whole_cpu_speedup", "same, by CPU time"),
            ("fast_load_s", "query file parse s"),
            ("fast_build_s", "engine build s"),
            ("fast_stream_MBps", "fast filtering MB/s"),
            ("fast_stream_cpu_MBps", "fast filtering MB/CPU-s"),
            ("stream_speedup", "filtering MB/s / YFilter's MB/s"),
            ("load_before", "load"),
        ],
        "xpfilt filter (fast engine) vs YFilter 1.0, whole process, 2.9 MB and 19.4 MB of NITF",
        "YFilter: issue 17's figures (500 NITF documents, 2.9 MB, whole process, this machine) "
        "and issue 37's (5,000 files, 18.8 MB, 10k profiles); at 1k and 100k over 19.4 MB the "
        "2.9 MB figure scaled by bytes (its start-up scaled too: an upper bound). "
        "xpfilt filter: one process over the 100 shared NITF documents cycled to the size, "
        "output written to /dev/null; the speed ratio scales by bytes. Filtering MB/s: the "
        "fast engine alone over the same stream (first cycle cold), without Python start-up, "
        "query-file parsing and output.",
    )


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "--row":
        parser = argparse.ArgumentParser()
        parser.add_argument("--row", dest="engine")
        parser.add_argument("queries", type=Path)
        parser.add_argument("folder", type=Path)
        parser.add_argument("limit", type=int)
        parser.add_argument("stream", type=float)
        parser.add_argument("cycle", type=float)
        args = parser.parse_args()
        row = measure_row(
            args.engine, args.queries, args.folder, args.limit, args.stream, args.cycle
        )
        print(json.dumps(row))
    else:
        main()
