"""Where the fast engine's compiled path spends its time, per phase, at 1k, 10k and 100k queries.

The workload of ``software_vs_yfilter.py`` (issue 37): queries ``xpfilt gen-queries --max-depth
6 --p-wildcard 0.15 --p-descendant 0.15 --seed 1``, the 100 shared NITF documents cycled to
>= 15 MB, in batches of :data:`xpfilt.engines.BATCH_DOCUMENTS`, warm (a first pass builds the
lazy DFA). Per query count, the best of three passes by CPU time of:

* ``scan``: the compiled tokenizer and DFA steps alone (``FastFilter._scan`` without its
  ``answers`` call, measured as ``_scan`` minus ``answers``);
* ``answers``: the union of the queries the visited DFA states accept, sorted positions;
* ``filter_many``: what the caller gets, positions per document (scan, answers, Python);
* ``filter_many_text``: the same as ``xpfilt filter`` writes it, TSV text.

Also per document: the distinct queries matched and the (state, word) pairs ``answers`` ORs.
The machine is shared: CPU time, with the load average. Saved to
bench/results/software_phases.{json,md}.
"""

from __future__ import annotations

import os
import time

import numpy as np
from common import publish
from software_vs_yfilter import SIZES, _cycled, workload

from xpfilt.engines import BATCH_DOCUMENTS
from xpfilt.lang.xpath import load_queries
from xpfilt.paths import shared_data
from xpfilt.software.events import Document, load_documents
from xpfilt.software.fast import FastFilter, gc_paused

SIZE = 15e6


def _timed(fn, batches) -> float:
    """CPU time of ``fn`` over each batch, its answers dropped as they come (as ``xpfilt
    filter`` drops them: kept, 15 MB of NITF at 100,000 queries are 120 MB of positions, and
    the fresh pages they take cost more than answering)."""
    start = time.process_time()
    for batch in batches:
        fn(batch)
    return time.process_time() - start


def measure(n: int, path, stream: list[Document]) -> dict:
    with gc_paused():
        queries = load_queries(path).queries
    engine = FastFilter(queries)
    numbers = [q.number for q in queries]
    batches = [stream[i : i + BATCH_DOCUMENTS] for i in range(0, len(stream), BATCH_DOCUMENTS)]
    datas = [[d.data for d in batch] for batch in batches]
    for batch in batches:  # the lazy DFA, once
        engine.filter_many(batch)
    loop = engine._loop
    answers = loop.answers
    spent = {"answers": 0.0}
    pairs = []

    def counted_answers(*args):  # the (state, word) pairs answers() ORs, untimed
        _status, visited_start, visited_end, visited, _start, count = args[:6]
        pairs.append(
            sum(int(count[visited[a:b]].sum()) for a, b in zip(visited_start, visited_end))
        )
        return answers(*args)

    def timed_answers(*args):
        start = time.process_time()
        out = answers(*args)
        spent["answers"] += time.process_time() - start
        return out

    loop.answers = counted_answers
    for data in datas:
        engine._scan(data)
    best: dict = {}
    for _ in range(3):
        spent["answers"] = 0.0
        loop.answers = timed_answers
        total = _timed(engine._scan, datas)
        loop.answers = answers
        row = {
            "scan": total - spent["answers"],
            "answers": spent["answers"],
            "filter_many": _timed(engine.filter_many, batches),
            "filter_many_text": _timed(lambda b: engine.filter_many_text(b, numbers), batches),
        }
        for key, value in row.items():
            best[key] = min(best.get(key, value), value)
    size = sum(len(d.data) for d in stream)
    matched = sum(len(a) for b in batches for a in engine.filter_many(b)) / len(stream)
    out = {
        "queries": n,
        "documents": len(stream),
        "bytes": size,
        "matches_per_doc": matched,
        "words_per_doc": sum(pairs) / len(stream),
        "loop": engine.stats["loop"],
        "load": round(os.getloadavg()[0], 2),
    }
    for key, value in best.items():
        out[f"{key}_cpu_s"] = value
        out[f"{key}_us_per_doc"] = value / len(stream) * 1e6
        out[f"{key}_MB_per_cpu_s"] = size / value / 1e6
    return out


def main() -> None:
    work = workload()
    docs = [Document.from_path(p) for p in load_documents([shared_data() / "nitf" / "docs"])]
    stream = _cycled(docs, SIZE)
    rows = []
    for n in SIZES:
        row = measure(n, work["queries"][n], stream)
        rows.append(row)
        print(
            f"{n:6} queries: scan {row['scan_us_per_doc']:5.1f}, answers "
            f"{row['answers_us_per_doc']:5.1f}, filter_many {row['filter_many_us_per_doc']:5.1f}"
            f" ({row['filter_many_MB_per_cpu_s']:.0f} MB/CPU-s), text "
            f"{row['filter_many_text_us_per_doc']:5.1f} us/doc (load {row['load']})"
        )
    publish(
        "software_phases",
        rows,
        [
            ("queries", "queries"),
            ("loop", "loop"),
            ("matches_per_doc", "matches per doc"),
            ("words_per_doc", "(state, word) pairs per doc"),
            ("scan_us_per_doc", "scan µs/doc"),
            ("answers_us_per_doc", "answers µs/doc"),
            ("filter_many_us_per_doc", "filter_many µs/doc"),
            ("filter_many_MB_per_cpu_s", "filter_many MB/CPU-s"),
            ("filter_many_text_us_per_doc", "filter_many_text µs/doc"),
            ("filter_many_text_MB_per_cpu_s", "filter_many_text MB/CPU-s"),
            ("load", "load"),
        ],
        "The fast engine's compiled path per phase (NITF cycled to 15 MB, warm, CPU time)",
        "scan: tokenizing and DFA steps; answers: the union of the queries the visited DFA "
        "states accept, as sorted positions; filter_many: both and the Python around them "
        "(positions per document); filter_many_text: the same as TSV text (xpfilt filter). "
        "Best of three passes, per NITF document (3,876 bytes on average). "
        f"numpy {np.__version__}. load: 1-minute load average (2 cores).",
        key=lambda row: row["queries"],
    )


if __name__ == "__main__":
    main()
