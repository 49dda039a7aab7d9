"""Reference filter throughput vs lxml evaluating each query separately.

For 100 / 1,000 / 2,000 queries on the 100 NITF documents and the two XMark documents: MB/s and
events/s of each engine (parsing included for both), and the speed-up. Saved to
bench/results/reference_throughput.{json,md}.
"""

from __future__ import annotations

import sys

from common import best_time, publish

from xpfilt.lang.xpath import load_queries
from xpfilt.paths import shared_data
from xpfilt.software.events import Document, load_documents, parse_events
from xpfilt.software.lxml_filter import LxmlFilter
from xpfilt.software.reference import ReferenceFilter

WORKLOADS = [
    ("NITF (100 docs)", "nitf/docs", "nitf-d8-p15-n2000.txt"),
    ("XMark (2 docs, 272 KB)", "xmark", "xmark-sampled-d8-p15-n1000.txt"),
]


def main() -> None:
    data = shared_data()
    rows = []
    for label, folder, query_file in WORKLOADS:
        docs = [Document.from_path(p) for p in load_documents([data / folder])]
        size = sum(len(d.data) for d in docs)
        events = sum(len(parse_events(d)) for d in docs)
        all_queries = load_queries(data / "queries" / query_file).queries
        for n in (100, 1000, 2000):
            if n > len(all_queries):
                continue
            queries = all_queries[:n]
            ref, lx = ReferenceFilter(queries), LxmlFilter(queries)
            t_ref = best_time(lambda: [ref.filter(d) for d in docs])
            t_lx = best_time(lambda: [lx.filter(d) for d in docs], repeat=1)
            assert [ref.filter(d) for d in docs] == [lx.filter(d) for d in docs]
            row = {
                "workload": label,
                "queries": n,
                "bytes": size,
                "events": events,
                "reference_s": t_ref,
                "reference_MBps": size / t_ref / 1e6,
                "reference_Mevents_per_s": events / t_ref / 1e6,
                "lxml_s": t_lx,
                "lxml_MBps": size / t_lx / 1e6,
                "lxml_Mevents_per_s": events / t_lx / 1e6,
                "speedup": t_lx / t_ref,
            }
            rows.append(row)
            print(
                f"{label:24} {n:5} queries: reference {row['reference_MBps']:7.2f} MB/s "
                f"({row['reference_Mevents_per_s']:.2f} M events/s), lxml "
                f"{row['lxml_MBps']:6.3f} MB/s, speed-up {row['speedup']:6.1f}x",
                file=sys.stderr,
            )
    publish(
        "reference_throughput",
        rows,
        [
            ("workload", "workload"),
            ("queries", "queries"),
            ("reference_MBps", "reference MB/s"),
            ("reference_Mevents_per_s", "reference M events/s"),
            ("lxml_MBps", "lxml MB/s"),
            ("lxml_Mevents_per_s", "lxml M events/s"),
            ("speedup", "speed-up"),
        ],
        "Reference filter vs lxml (one XPath evaluation per query)",
        "Both include XML parsing (expat for the reference, libxml2 for lxml). "
        "Best of 3 runs for the reference, 1 run for lxml. Answers checked equal.",
    )


if __name__ == "__main__":
    main()
