"""Helpers for benchmark scripts: timing, machine facts, and saving JSON + Markdown results."""

from __future__ import annotations

import json
import os
import platform
import statistics
import sys
import time
from pathlib import Path
from typing import Callable, Sequence

RESULTS = Path(__file__).resolve().parent / "results"


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
    name: str, rows: Sequence[dict], columns: Sequence[tuple[str, str]], title: str, notes: str = ""
) -> Path:
    """Write ``results/NAME.json`` (rows + machine) and ``results/NAME.md`` (a table)."""
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / f"{name}.json").write_text(
        json.dumps({"machine": machine(), "rows": list(rows)}, indent=2) + "\n"
    )
    lines = [
        f"# {title}",
        "",
        notes,
        "" if notes else None,
        "| " + " | ".join(label for _, label in columns) + " |",
        "|" + "---|" * len(columns),
    ]
    for row in rows:
        lines.append("| " + " | ".join(_fmt(row.get(key)) for key, _ in columns) + " |")
    lines += ["", f"Machine: {machine()}"]
    path = RESULTS / f"{name}.md"
    path.write_text("\n".join(line for line in lines if line is not None) + "\n")
    return path


def publish(
    name: str, rows: Sequence[dict], columns: Sequence[tuple[str, str]], title: str, notes: str = ""
) -> Path:
    """:func:`save`, then say on stderr where the table went: every script's last step."""
    path = save(name, rows, columns, title, notes)
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
