"""The cycle-accurate model: simulated cycles per second, and sustained bytes per cycle.

For 256 and 2,000 depth-8 queries (shared nitf-d8-p15-n2000) over the 100 NITF documents and the
two XMark documents streamed back to back with the readout always ready. Bytes per cycle is a
property of the hardware (the model is cycle-accurate): goal exactly 1.0 while documents are
longer than the readout. Model speed goal: >= 200,000 cycles/s.
Saved to bench/results/model_throughput.{json,md}.
"""

from __future__ import annotations

import sys
import time

from common import publish, stream_documents

from xpfilt.compiler.custom import compile_queries
from xpfilt.lang.xpath import load_queries
from xpfilt.model.custom import EngineModel, run_documents
from xpfilt.paths import shared_data
from xpfilt.software.events import load_documents


def main() -> None:
    data = shared_data()
    all_queries = load_queries(data / "queries/nitf-d8-p15-n2000.txt").queries
    workloads = [
        ("NITF", [p.read_bytes() for p in load_documents([data / "nitf/docs"])]),
        ("XMark", [p.read_bytes() for p in load_documents([data / "xmark"])]),
    ]
    rows = []
    for n in (256, 2000):
        plan = compile_queries(all_queries[:n])
        for label, docs in workloads:
            model = EngineModel(plan)
            start = time.perf_counter()
            readouts = run_documents(model, docs)
            elapsed = time.perf_counter() - start
            size = sum(map(len, docs))
            longer = sum(len(d) > n for d in docs)
            row = {
                "queries": n,
                "documents": f"{label} ({len(docs)})",
                "bytes": size,
                "docs_longer_than_readout": longer,
                "cycles": model.cycle,
                "bytes_per_cycle_total": size / model.cycle,
                "cycles_per_s": model.cycle / elapsed,
                "MB_per_s": size / elapsed / 1e6,
            }
            # bytes per cycle while streaming: cycles until the last byte was accepted
            stream_cycles, _ = stream_documents(EngineModel(plan), docs)
            row["bytes_per_cycle_streaming"] = size / stream_cycles
            assert len(readouts) == len(docs)
            rows.append(row)
            print(
                f"{n:5} queries, {label:5}: {row['cycles_per_s']:9,.0f} cycles/s, "
                f"{row['bytes_per_cycle_streaming']:.4f} bytes/cycle while streaming "
                f"({longer}/{len(docs)} documents longer than the {n}-bit readout)",
                file=sys.stderr,
            )
    publish(
        "model_throughput",
        rows,
        [
            ("queries", "queries"),
            ("documents", "documents"),
            ("bytes", "bytes"),
            ("docs_longer_than_readout", "docs longer than readout"),
            ("bytes_per_cycle_streaming", "bytes/cycle (streaming)"),
            ("bytes_per_cycle_total", "bytes/cycle (incl. final readout)"),
            ("cycles_per_s", "model cycles/s"),
            ("MB_per_s", "model MB/s"),
        ],
        "Cycle-accurate model: speed, and the hardware's sustained input rate",
        "bytes/cycle (streaming) counts cycles until the last byte is accepted; 1.0 means the "
        "input never stalled. It drops below 1.0 only when documents are shorter than the "
        "readout (one bit per query per document): the input waits for the shadow register.",
    )


if __name__ == "__main__":
    main()
