"""The same 16-point sweep serially and on Spark ``local[2]``: speed-up and per-point overhead.

16 custom-engine points (128 / 256 NITF-DTD queries x depth 4 / 8 x cluster sizes 16 / 32 / 64
/ 128; each: generate the workload, compile, emit Verilog, run the model over 8 documents of
20 KB), no synthesis, so the work is the project's own Python. Each run gets an empty Verilog
cache (``XPFILT_CACHE``) and an empty output folder, so neither reuses the other's work.

* serial: ``run_sweep(master="serial", verilog_jobs=1)``, the points one after another in this
  process, one core;
* serial, parallel Verilog: the same with each point's clusters converted to Verilog in two
  processes (what ``--master serial`` does by default; shown for honesty: it is the strongest
  single-process baseline);
* Spark: ``run_sweep(master="local[2]")`` (one Verilog process per point: the points fill the
  cores), after the Spark session is started (its ~5 s start is reported apart: a sweep pays it
  once).

Speed-up = serial wall / Spark wall (goal >= 1.7x on 2 cores). Per-point overhead = (Spark wall
x 2 workers - sum of the points' own seconds measured inside the workers) / points: the time
Spark adds around each point (goal < 1 s). The load average before and after is saved with the
numbers: another job on the machine makes both runs slower and the speed-up smaller.
Saved to bench/results/sweep_speedup.{json,md}.

Usage: python bench/sweep_speedup.py
"""

from __future__ import annotations

import os
import shutil
import tempfile
import time
from pathlib import Path

from common import save

from xpfilt.scale.sweep import load_spec, run_sweep

SPEC = {
    "grid": {
        "engine": "custom",
        "queries": [128, 256],
        "depth": [4, 8],
        "cluster_size": [16, 32, 64, 128],
        "documents": 8,
        "document_bytes": 20_000,
        "seed": 11,
    }
}


def timed_sweep(label: str, master: str, out: Path, cache: Path, **options) -> dict:
    os.environ["XPFILT_CACHE"] = str(cache)
    spec = load_spec(SPEC)
    load = os.getloadavg()[0]
    summary = run_sweep(spec, out, master=master, progress=False, **options)
    assert summary.statuses == {"ok": len(spec.points())}, summary.line()
    return {
        "master": label,
        "points": summary.computed,
        "wall_s": round(summary.wall_s, 2),
        "work_s": round(summary.work_s, 2),
        "load_before": round(load, 2),
        "load_after": round(os.getloadavg()[0], 2),
    }


def main() -> None:
    scratch = Path(tempfile.mkdtemp(prefix="xpfilt-speedup-"))
    try:
        serial = timed_sweep(
            "serial", "serial", scratch / "serial", scratch / "cache-serial", verilog_jobs=1
        )
        print(f"serial:     {serial['wall_s']:.1f} s for {serial['points']} points")
        serial2 = timed_sweep(
            "serial, 2 Verilog processes",
            "serial",
            scratch / "serial2",
            scratch / "cache-serial2",
            verilog_jobs=2,
        )
        print(f"serial, 2 Verilog processes: {serial2['wall_s']:.1f} s")

        from xpfilt.scale.spark import spark_context

        start = time.perf_counter()
        os.environ["XPFILT_CACHE"] = str(scratch / "cache-spark")  # before the workers start
        context = spark_context("local[2]")
        startup = time.perf_counter() - start
        spark = timed_sweep(
            "Spark local[2]", "local[2]", scratch / "spark", scratch / "cache-spark"
        )
        spark["session_start_s"] = round(startup, 2)
        workers = context.defaultParallelism
        print(f"local[2]:   {spark['wall_s']:.1f} s (+ {startup:.1f} s session start)")
    finally:
        shutil.rmtree(scratch, ignore_errors=True)

    speedup = serial["wall_s"] / spark["wall_s"]
    overhead = (spark["wall_s"] * workers - spark["work_s"]) / spark["points"]
    rows = [
        {**serial, "speedup": 1.0, "overhead_per_point_s": 0.0},
        {
            **serial2,
            "speedup": round(serial["wall_s"] / serial2["wall_s"], 2),
            "overhead_per_point_s": None,
        },
        {**spark, "speedup": round(speedup, 2), "overhead_per_point_s": round(overhead, 3)},
    ]
    print(
        f"speed-up {speedup:.2f}x (goal >= 1.7x); Spark overhead {overhead:.2f} s per point "
        f"(goal < 1 s)"
    )
    notes = (
        f"{len(load_spec(SPEC).points())} custom points (queries 128/256 x depth 4/8 x "
        "cluster 16/32/64/128, 8 x 20 KB documents through the model, no synthesis), "
        "fresh Verilog cache per run. Work = sum of the points' own seconds (inside the "
        "Spark workers: slower than serial when both cores are busy). Overhead per point "
        f"= (wall x {workers} - work) / points. Spark session start "
        f"{spark['session_start_s']} s, paid once per sweep, not counted in the wall time."
    )
    save(
        "sweep_speedup",
        rows,
        [
            ("master", "run"),
            ("points", "points"),
            ("wall_s", "wall s"),
            ("work_s", "work s"),
            ("speedup", "speed-up"),
            ("overhead_per_point_s", "overhead s/point"),
            ("load_before", "load before"),
            ("load_after", "load after"),
        ],
        "16-point sweep: serial vs Spark local[2]",
        notes,
    )


if __name__ == "__main__":
    main()
