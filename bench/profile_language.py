"""The software engines on the profile language (issues 14 and 15): value predicates, clauses
and twigs, next to plain paths.

Query sets on the 100 shared NITF documents: the shared path set (2,000 d8 queries), the shared
predicate set (1,000 d6 queries, one attribute predicate each), and generated sets from the NITF
DTD (1,000 queries each): two predicates per query with text(), four operators and clauses; one
nested path per query (twigs); both. For each, MB/s and MB/CPU-s of the fast, reference and lxml engines
(parsing included; answers checked equal) and the matches found. Saved to
bench/results/profile_language.{json,md}.
"""

from __future__ import annotations

import os
import sys
import time

from common import best_time, publish

from xpfilt.lang.xpath import load_queries
from xpfilt.paths import shared_data
from xpfilt.software.events import Document, load_documents
from xpfilt.software.fast import FastFilter
from xpfilt.software.lxml_filter import LxmlFilter
from xpfilt.software.reference import ReferenceFilter
from xpfilt.workloads import DtdSchema, PredicateGenConfig, QueryGenConfig, generate_queries

GENERATED = {
    "generated: 2 predicates (text, 4 operators, clauses)": PredicateGenConfig(
        count=2, p_text=0.3, operators=("=", "!=", "<", ">="), p_clause=0.2
    ),
    "generated: twigs (1 nested path)": PredicateGenConfig(nested_paths=1, nested_depth=2),
    "generated: twigs + 1 predicate": PredicateGenConfig(count=1, p_text=0.3, nested_paths=1),
}


def main() -> None:
    data = shared_data()
    docs = [Document.from_path(p) for p in load_documents([data / "nitf" / "docs"])]
    size = sum(len(d.data) for d in docs)
    schema = DtdSchema.load(data / "nitf" / "nitf-2-5.dtd")
    sets = [
        (
            "shared: paths (nitf-d8-p15)",
            load_queries(data / "queries" / "nitf-d8-p15-n2000.txt").queries,
        ),
        (
            "shared: predicates (nitf-d6-p15-pred1)",
            load_queries(data / "queries" / "nitf-d6-p15-pred1-n1000.txt").queries,
        ),
    ]
    for label, axes in GENERATED.items():
        texts = generate_queries(schema, QueryGenConfig(1000, 6, seed=1, predicates=axes))
        sets.append((label, load_queries(texts).queries))
    rows = []
    for label, queries in sets:
        engines = {
            "fast": FastFilter(queries),
            "reference": ReferenceFilter(queries),
            "lxml": LxmlFilter(queries),
        }
        answers = {name: [e.filter(d) for d in docs] for name, e in engines.items()}
        assert answers["fast"] == answers["reference"] == answers["lxml"], label
        row = {
            "workload": label,
            "queries": len(queries),
            "bytes": size,
            "matches": sum(map(len, answers["fast"])),
            "load": os.getloadavg()[0],
        }
        for name, engine in engines.items():
            for key, clock in (("MBps", time.perf_counter), ("MB_per_cpu_s", time.process_time)):
                seconds = best_time(
                    lambda: [engine.filter(d) for d in docs],
                    repeat=1 if name == "lxml" else 3,
                    clock=clock,
                )
                row[f"{name}_{key}"] = size / seconds / 1e6
        rows.append(row)
        print(
            f"{label:52} {len(queries):5} queries {row['matches']:6} matches: fast "
            f"{row['fast_MBps']:6.2f}, reference {row['reference_MBps']:6.2f}, lxml "
            f"{row['lxml_MBps']:6.3f} MB/s",
            file=sys.stderr,
        )
    publish(
        "profile_language",
        rows,
        [
            ("workload", "query set"),
            ("queries", "queries"),
            ("matches", "matches"),
            ("fast_MBps", "fast MB/s"),
            ("reference_MBps", "reference MB/s"),
            ("lxml_MBps", "lxml MB/s"),
            ("fast_MB_per_cpu_s", "fast MB/CPU-s"),
            ("reference_MB_per_cpu_s", "reference MB/CPU-s"),
            ("lxml_MB_per_cpu_s", "lxml MB/CPU-s"),
            ("load", "load"),
        ],
        "Software engines on the profile language (100 NITF documents)",
        "Parsing included. Best of 3 runs (lxml: 1), by wall clock (MB/s) and by this "
        "process's CPU time (MB/CPU-s, steadier when other jobs share the machine). Answers of "
        "the three engines checked equal. Generated sets: 1,000 queries from the NITF DTD, "
        "seed 1, depth <= 6. load: 1-minute load average before the row (2 cores).",
    )


if __name__ == "__main__":
    main()
