"""Engine throughput at scale (issue 13): sustained bytes/cycle of the custom engine with the
serial and the sparse readout, for 1k to 16k depth-8 NITF queries, on the shared NITF and XMark
documents and on generated 2.2 MB documents; engine MB/s = ECP5-85F Fmax x bytes/cycle where
bench/results/fmax.json has a place-and-route row for that size and readout.

Bytes/cycle comes from the cycle-accurate model (readout always ready, a byte offered every
cycle): ``streaming`` counts cycles until the last byte is accepted, ``total`` until the last
readout beat. Saved to bench/results/throughput.{json,md}: the rows of the sizes measured now
replace theirs, the others stay; each row carries the digest of the RTL sources (the readout's
latency is shared by RTL and model).
Usage: python throughput.py [--queries 1024,4000,8000,12000,16000]  (1,024: the size bench/fmax.py places and routes)
"""

from __future__ import annotations

import argparse
import json
import sys
import time

from common import RESULTS, save, stream_documents
from resources import source_digest

from xpfilt import workloads
from xpfilt.compiler.custom import CompileOptions, compile_queries
from xpfilt.lang.xpath import parse_query
from xpfilt.model.custom import EngineModel
from xpfilt.paths import shared_data
from xpfilt.software.events import load_documents

READOUTS = ("serial", "sparse")


def fmax_rows() -> list[dict]:
    path = RESULTS / "fmax.json"
    return json.loads(path.read_text())["rows"] if path.exists() else []


def fmax_for(rows: list[dict], queries: int, readout: str):
    """The ECP5-85F Fmax measured for ``queries`` depth-8 queries and ``readout`` (None if no
    such row; rows without a readout field are serial): of the placed and routed rows, one
    with registered I/O (bench/fmax.py's timing harness) first, router1 before router2."""
    found = [
        row
        for row in rows
        if row.get("family") == "ecp5"
        and row.get("queries") == queries
        and row.get("readout", "serial") == readout
        and row.get("fmax_mhz")
    ]
    found.sort(
        key=lambda row: (
            row.get("io", "pins") != "registered",
            row.get("router", "router1") != "router1",
        )
    )
    return found[0]["fmax_mhz"] if found else None


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--queries", default="1024,4000,8000,12000,16000")
    args = parser.parse_args()
    sizes = [int(n) for n in args.queries.split(",")]
    data = shared_data()
    schema = workloads.DtdSchema.load(data / "nitf/nitf-2-5.dtd")
    generated = workloads.generate_documents(
        schema, workloads.DocGenConfig(max_depth=8, target_bytes=2_200_000, seed=1), 2
    )
    corpora = [
        ("NITF", [p.read_bytes() for p in load_documents([data / "nitf/docs"])]),
        ("XMark", [p.read_bytes() for p in load_documents([data / "xmark"])]),
        ("generated 2.2 MB", generated),
    ]
    texts = workloads.generate_queries(
        schema,
        workloads.QueryGenConfig(
            count=max(sizes), max_depth=8, p_wildcard=0.15, p_descendant=0.15, seed=1
        ),
    )
    queries = [parse_query(t, i + 1) for i, t in enumerate(texts)]
    fmax = fmax_rows()
    digest = source_digest()
    rows = []
    for n in sizes:
        for readout in READOUTS:
            start = time.perf_counter()
            plan = compile_queries(queries[:n], CompileOptions(max_depth=16, readout=readout))
            compile_s = time.perf_counter() - start
            mhz = fmax_for(fmax, n, readout)
            for label, docs in corpora:
                model = EngineModel(plan)
                start = time.perf_counter()
                streaming, total = stream_documents(model, docs)
                size = sum(map(len, docs))
                row = {
                    "queries": n,
                    "readout": readout,
                    "documents": f"{label} ({len(docs)})",
                    "bytes": size,
                    "W": 1,
                    "bytes_per_cycle_streaming": size / streaming,
                    "bytes_per_cycle_total": size / total,
                    "fmax_mhz": mhz,
                    "engine_MB_per_s": None if mhz is None else mhz * size / streaming,
                    "compile_s": round(compile_s, 1),
                    "rtl_digest": digest,
                    "model_s": round(time.perf_counter() - start, 1),
                }
                rows.append(row)
                print(
                    f"{n:6} queries {readout:6} {label:17} "
                    f"{row['bytes_per_cycle_streaming']:.3f} B/cycle streaming, "
                    f"{row['bytes_per_cycle_total']:.3f} total"
                    + ("" if mhz is None else f", {row['engine_MB_per_s']:.0f} MB/s"),
                    file=sys.stderr,
                )
    previous = RESULTS / "throughput.json"  # rows of the sizes not measured now stay
    kept = (
        [r for r in json.loads(previous.read_text())["rows"] if r["queries"] not in sizes]
        if previous.exists()
        else []
    )
    rows = sorted(kept + rows, key=lambda r: (r["queries"], READOUTS.index(r["readout"])))
    path = save(
        "throughput",
        rows,
        [
            ("queries", "queries"),
            ("readout", "readout"),
            ("documents", "documents"),
            ("bytes", "bytes"),
            ("bytes_per_cycle_streaming", "bytes/cycle (streaming)"),
            ("bytes_per_cycle_total", "bytes/cycle (incl. final readout)"),
            ("fmax_mhz", "ECP5-85F Fmax MHz"),
            ("engine_MB_per_s", "engine MB/s"),
            ("rtl_digest", "RTL digest"),
        ],
        "Custom engine throughput: serial vs sparse readout, 1 byte per cycle front end",
        "Depth-8 NITF queries (xpfilt gen-queries, seed 1), max depth 16; bytes/cycle from the "
        "cycle-accurate model with a byte offered every cycle and the readout always ready. "
        "Serial: a document's readout takes one cycle per query, so documents shorter than the "
        "query count stall the input. Sparse: the captured flags are held L + latency + "
        "leaves cycles for L tree levels and the document's non-empty leaves of 8 flags, "
        "which go whole into a block-RAM output queue that sends one id per cycle "
        "(xpfilt.hwspec.readout.readout_cycles: leaves + 18 from 513 to 1,024 queries, + 19 to 21 to "
        "4,096, + 29 to 8,192, + 30 to 16,384; rows before RTL 4a915ce7de58: L + 1 + latency "
        "+ matches). Engine MB/s = Fmax (nextpnr, "
        "bench/results/fmax.json, the row for that size and readout; blank: not placed and "
        "routed) x bytes/cycle (streaming).",
    )
    print(f"saved {path}", file=sys.stderr)


if __name__ == "__main__":
    main()
