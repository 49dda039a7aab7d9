"""xpfilt filter on Spark vs serially: 2,000 generated NITF documents (~200 MB) x 10,000 queries.

Serial: one ``xpfilt filter`` process (fast engine), output to /dev/null. Spark: ``xpfilt filter
--spark --master local[2] --out TMP`` (batches of 64 documents, 32 tasks), each worker building
its engine once. Both are whole processes timed by wall clock, with the machine load recorded
(2 cores, shared with other jobs: the speed-up is bounded by what the other jobs leave).
Spark start-up: the same Spark command over a single small document. Overhead per task:
(Spark wall - start-up - serial wall / 2) / tasks, i.e. what Spark costs beyond a perfect
2-way split. The answers of both runs are compared. Saved to
bench/results/spark_filter_speedup.{json,md}.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from common import save

from software_vs_yfilter import WORK, XPFILT, workload

DOCUMENTS = 2000
DOCUMENT_SIZE = "100K"
QUERIES = 10000
BATCH = 64


def _timed(argv: list[str]) -> float:
    start = time.perf_counter()
    subprocess.run(argv, check=True, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                   stderr=subprocess.DEVNULL)
    return time.perf_counter() - start


def main() -> None:
    from xpfilt.paths import shared_data
    from xpfilt.results import read_expected
    from xpfilt.spark_filter import read_results

    queries = workload()["queries"][QUERIES]
    docs = WORK / f"nitf-{DOCUMENT_SIZE}-x{DOCUMENTS}"
    if not (docs / f"doc-{DOCUMENTS}.xml").exists():
        dtd = shared_data() / "nitf" / "nitf-2-5.dtd"
        subprocess.run(XPFILT + ["gen-docs", "--dtd", str(dtd), "-n", str(DOCUMENTS), "--size",
                                 DOCUMENT_SIZE, "--seed", "2", "-o", str(docs)],
                       check=True, stdin=subprocess.DEVNULL)
    size = sum(p.stat().st_size for p in docs.glob("*.xml"))
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        load = os.getloadavg()[0]
        serial_tsv = tmp / "serial.tsv"
        serial = _timed(XPFILT + ["filter", "-q", str(queries), "-o", str(serial_tsv), str(docs)])
        one = sorted(docs.glob("*.xml"))[0]
        startup = _timed(XPFILT + ["filter", "-q", str(queries), "--spark", "--master",
                                   "local[2]", "--out", str(tmp / "one"), str(one)])
        spark = _timed(XPFILT + ["filter", "-q", str(queries), "--spark", "--master", "local[2]",
                                 "--batch-size", str(BATCH), "--out", str(tmp / "spark"),
                                 str(docs)])
        tasks = -(-DOCUMENTS // BATCH)
        answers = {r["document"]: tuple(r["matches"]) for r in read_results(tmp / "spark")}
        same = answers == read_expected(serial_tsv)
    row = {"documents": DOCUMENTS, "bytes": size, "queries": QUERIES, "tasks": tasks,
           "serial_s": serial, "serial_MBps": size / serial / 1e6, "spark_s": spark,
           "spark_MBps": size / spark / 1e6, "speedup": serial / spark,
           "spark_startup_s": startup,
           "overhead_per_task_s": (spark - startup - serial / 2) / tasks,
           "answers_equal": same, "load_before": round(load, 2),
           "load_after": round(os.getloadavg()[0], 2)}
    print(f"{DOCUMENTS} documents ({size / 1e6:.0f} MB) x {QUERIES} queries: serial "
          f"{serial:.1f} s, Spark local[2] {spark:.1f} s ({row['speedup']:.2f}x; start-up "
          f"{startup:.1f} s, {row['overhead_per_task_s']:.2f} s per task beyond a 2-way split), "
          f"answers equal: {same} (load {row['load_before']})", file=sys.stderr)
    path = save("spark_filter_speedup", [row], [
        ("documents", "documents"), ("bytes", "bytes"), ("queries", "queries"),
        ("tasks", "tasks"), ("serial_s", "serial s"), ("spark_s", "Spark local[2] s"),
        ("speedup", "speed-up"), ("spark_startup_s", "Spark start-up s"),
        ("overhead_per_task_s", "overhead per task s"), ("answers_equal", "answers equal"),
        ("load_before", "load")],
        "xpfilt filter serially vs on Spark local[2]",
        "Whole processes, wall clock; fast engine; goal (issue 17) >= 1.7x on 2 cores. load: "
        "1-minute load average before the runs (other jobs share the 2 cores).")
    print(f"saved {path}", file=sys.stderr)


if __name__ == "__main__":
    main()
