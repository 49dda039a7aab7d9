"""Sustained bytes per cycle of the W-byte engine (issue 18), measured on its cycle-accurate
model (:mod:`xpfilt.model.wide_frontend`, equal to the RTL every cycle in tests/test_wide_rtl.py).

For W = 1, 2, 4, 8: the 100 NITF documents, the two XMark documents, two generated 2.2 MB NITF
documents and their compact form (one tag per line, the worst case), streamed back to back with
the readout always ready, through engines of 256 and 1,024 queries (nitf-d8-p15-n2000) with the
serial readout, and 1,024 with the sparse one. ``bytes_per_cycle_streaming``: bytes over the
cycles until the last byte was accepted (as in model_throughput.json). Goal: >= 3.5 at W = 4 on
NITF and XMark. A document streams faster than its readout when it has fewer cycles than the
readout has bits (serial: one per query): then the readout, not the parser, sets the pace.
Saved to bench/results/wide_throughput.{json,md}.
"""

from __future__ import annotations

import sys

from common import publish, stream_documents, wide_workloads

from xpfilt.compiler.custom import CompileOptions, compile_queries
from xpfilt.hwspec.contract import queue_depth_for
from xpfilt.lang.xpath import load_queries
from xpfilt.model.custom import EngineModel
from xpfilt.paths import shared_data


def main() -> None:
    all_queries = load_queries(shared_data() / "queries/nitf-d8-p15-n2000.txt").queries
    sets = wide_workloads()
    designs = [(256, "serial"), (1024, "serial"), (1024, "sparse")]
    rows = []
    for n, readout in designs:
        plan = compile_queries(all_queries[:n], CompileOptions(readout=readout))
        for label, docs in sets:
            size = sum(map(len, docs))
            for width in (1, 2, 4, 8):
                streaming, total = stream_documents(EngineModel(plan, bytes_per_cycle=width), docs)
                row = {
                    "W": width,
                    "queries": n,
                    "readout": readout,
                    "documents": label,
                    "bytes": size,
                    "queue_depth": queue_depth_for(width) if width > 1 else 0,
                    "cycles_streaming": streaming,
                    "bytes_per_cycle_streaming": size / streaming,
                    "bytes_per_cycle_total": size / total,
                }
                rows.append(row)
                print(
                    f"{n:5} {readout:6} {label:34} W={width}: "
                    f"{row['bytes_per_cycle_streaming']:.3f} bytes/cycle",
                    file=sys.stderr,
                )
    publish(
        "wide_throughput",
        rows,
        [
            ("W", "W"),
            ("queries", "queries"),
            ("readout", "readout"),
            ("documents", "documents"),
            ("bytes", "bytes"),
            ("queue_depth", "event queue"),
            ("bytes_per_cycle_streaming", "bytes/cycle (streaming)"),
            ("bytes_per_cycle_total", "bytes/cycle (incl. final readout)"),
        ],
        "The W-byte engine: sustained bytes per cycle (cycle-accurate model)",
        "Documents back to back, a beat offered every cycle, the readout always ready. "
        "Streaming: bytes over the cycles until the last byte was accepted. Goal (issue 18): "
        ">= 3.5 bytes/cycle at W = 4 on NITF and XMark.",
    )


if __name__ == "__main__":
    main()
