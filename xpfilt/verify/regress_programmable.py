"""The programmable engine's cocotb regression (``run_regression`` with ``mode`` programmable):
a schedule of configuration streams (good, corrupt, truncated, foreign, overlapping documents)
and documents, run through :mod:`xpfilt.sim.programmable_tb`, summarized, and a replay folder written
on a mismatch."""

from __future__ import annotations

import json
import shlex
import shutil
import sys
import tempfile
import time
from dataclasses import replace
from pathlib import Path
from typing import Optional

from xpfilt.compiler.custom import EngineMode
from xpfilt.software.events import Document, load_documents
from xpfilt.verify.harness import (
    RegressionConfig,
    RegressionSummary,
    load_query_source,
    run_testbench_in,
    safe_name,
    stage_documents,
)

__all__ = ["ITEM_KINDS", "corrupt_stream", "truncated_stream", "run_programmable"]

# --- the programmable engine -------------------------------------------------------------------


def corrupt_stream(stream: bytes, bit: Optional[int] = None) -> bytes:
    """``stream`` with one bit flipped (default: the middle of the payload)."""
    bit = len(stream) * 4 if bit is None else bit
    data = bytearray(stream)
    data[bit // 8] ^= 1 << (bit % 8)
    return bytes(data)


def truncated_stream(stream: bytes) -> bytes:
    """The first sixteenth of ``stream`` (past the header): ends early, no CRC."""
    return stream[: max(12, len(stream) // 16)]


#: What the items of a programmable schedule may be: ``("config", k)`` (the stream of query set
#: ``k``: 0 = ``queries``, 1.. = ``reconfigure``), ``("delta", k)`` (``k`` >= 1: the delta
#: stream from set ``k - 1``'s full stream to set ``k``, :func:`xpfilt.compiler.programmable.reconfigure`;
#: accepted only while set ``k - 1``'s is the active configuration), ``("corrupt", k)`` (the
#: stream of set ``k`` with one payload bit flipped), ``("truncated", k)`` (cut short),
#: ``("foreign", k)`` (query set ``k`` configured for other hardware: a header with another
#: fingerprint), ``("overlapping", k)`` (the stream of set ``k`` sent while the next documents
#: stream: it completes with documents in flight) and ``("documents", [sources])``.
ITEM_KINDS = ("config", "delta", "corrupt", "truncated", "foreign", "overlapping", "documents")


def _schedule(config: RegressionConfig, sets: int) -> list[tuple]:
    """``config.items`` or the default: the documents split into ``sets`` runs; before run
    ``k`` the stream of set ``k`` (from the second on: the delta from set ``k - 1``, after a
    corrupt and a truncated copy of set ``k``'s stream, with ``bad_streams``)."""
    if config.items is not None:
        for item in config.items:
            if item[0] not in ITEM_KINDS:
                raise ValueError(f"an item must be one of {', '.join(ITEM_KINDS)}, not {item[0]!r}")
            if item[0] != "documents" and not int(item[0] == "delta") <= item[1] < sets:
                raise ValueError(
                    f"item {item!r} must name a query set in {int(item[0] == 'delta')}..{sets - 1}"
                )
        return list(config.items)
    paths: list = []
    for source in config.documents:
        paths.extend([source] if isinstance(source, Document) else load_documents([source]))
    items: list[tuple] = []
    for k in range(sets):
        if k and config.bad_streams:
            items += [("corrupt", k), ("truncated", k)]
        items.append(("delta" if k else "config", k))
        chunk = paths[len(paths) * k // sets : len(paths) * (k + 1) // sets]
        if chunk:
            items.append(("documents", chunk))
    return items


def run_programmable(config: RegressionConfig, *, log, write_replay: bool) -> RegressionSummary:
    from xpfilt.compiler.programmable import answer_json, configure, reconfigure
    from xpfilt.hdl.verilog import emit_programmable_verilog
    from xpfilt.sim.config import TbConfig
    from xpfilt.sim.runner import build_design, default_build_root

    wall = time.perf_counter()
    spec = config.hardware
    sources = [config.queries, *config.reconfigure]
    labels = [
        str(s) if isinstance(s, (str, Path)) else f"<queries {k}>" for k, s in enumerate(sources)
    ]
    query_sets, skipped_queries, configurations, all_lines = [], [], [], []
    for label, source in zip(labels, sources):
        queries, skipped, lines = load_query_source(source)
        configuration = configure(queries, spec)
        skipped += [f"{label}: {reason}" for _, reason in configuration.rejected]
        if not configuration.answers:
            raise ValueError(
                f"{label} must give at least one query that fits the hardware, not none"
            )
        query_sets.append(queries)
        skipped_queries += skipped
        configurations.append(configuration)
        all_lines.append(lines)
    deltas = [None] + [
        reconfigure(query_sets[k], configurations[k - 1].stream(), spec)
        for k in range(1, len(sources))
    ]
    for k, update in enumerate(deltas[1:], start=1):
        skipped_queries += [f"{labels[k]} (delta): {reason}" for _, reason in update.rejected]
    placements: list = []  # (query set, [(readout bit, query number)]) of each good stream
    build_root = Path(config.build_dir or default_build_root()).resolve()
    run_dir = Path(tempfile.mkdtemp(prefix="cocotb_xpfilt_prog_"))
    try:
        items, documents, skipped_documents = [], [], []
        for j, item in enumerate(_schedule(config, len(sources))):
            if item[0] == "documents":
                (run_dir / f"item{j}").mkdir()
                docs, skipped = stage_documents(item[1], run_dir / f"item{j}")
                skipped_documents += skipped
                items.append(
                    {
                        "kind": "documents",
                        "documents": list(range(len(documents), len(documents) + len(docs))),
                    }
                )
                documents += docs
                continue
            kind, k = item
            stream = configurations[k].stream()
            answers = configurations[k].answers
            if kind == "delta":
                stream, answers = deltas[k].delta(), deltas[k].answers
            elif kind == "corrupt":
                stream = corrupt_stream(stream)
            elif kind == "truncated":
                stream = truncated_stream(stream)
            elif kind == "foreign":
                other = replace(spec, max_depth=spec.max_depth + 1)
                stream = configure(query_sets[k], other).stream()
            path = run_dir / f"item{j}-{kind}{k}.bin"
            path.write_bytes(stream)
            good = kind in ("config", "delta", "overlapping")
            if good:
                pairs = [(answer_json(where), n) for n, where in sorted(answers.items())]
                placements.append((k, pairs))
            items.append(
                {
                    "kind": "config",
                    "stream": str(path),
                    "set": len(placements) - 1 if good else None,
                    "label": f"{kind} {labels[k]}",
                    "overlap": kind == "overlapping",
                }
            )
        if not documents:
            raise ValueError(
                "documents must include at least one readable, non-empty document, not none"
            )
        start = time.perf_counter()
        plan_json = spec.to_json()
        verilog = emit_programmable_verilog(spec)
        verilog_time = time.perf_counter() - start
        design = build_design(plan_json, verilog, config.simulator, build_root, log=log)
        tb = TbConfig(
            plan=str(design.directory / "plan.json"),
            documents=[(name, str(path)) for name, path in documents],
            queries=[],
            results=str(run_dir / "results.json"),
            seed=config.seed,
            p_valid=config.p_valid,
            p_ready=config.p_ready,
            max_name=spec.max_name,
            stall_limit=max(20_000, 4 * spec.clusters * spec.columns),
            fault=config.fault,
            extra={
                "items": items,
                "set_labels": labels,
                "query_sets": [[(q.number, str(q)) for q in qs] for qs in query_sets],
                "placements": placements,
            },
        )
        tb.write(run_dir / "config.json")
        log(
            f"simulating {len(documents)} documents and "
            f"{sum(i['kind'] == 'config' for i in items)} configuration streams on "
            f"{config.simulator} ..."
        )
        run, report, mismatches = run_testbench_in(
            design, run_dir, documents[0][0], test_module="xpfilt.sim.programmable_tb"
        )
        summary = RegressionSummary.from_report(
            report,
            mismatches,
            design,
            simulator=config.simulator,
            documents=len(documents),
            queries=sum(len(c.answers) for c in configurations),
            clusters=spec.clusters,
            verilog_time=verilog_time,
            skipped_queries=skipped_queries,
            skipped_documents=skipped_documents,
            mode=EngineMode.PROGRAMMABLE.value,
            config_bits=report["config_bits"],
            config_stalls=report["config_stalls"],
            streams=report["streams"],
            document_configurations=[(r["name"], r["configuration"]) for r in report["documents"]],
        )
        if mismatches and write_replay:
            summary.replay = _write_programmable_replay(
                config, all_lines, items, documents, mismatches, run, build_root
            )
    finally:
        shutil.rmtree(run_dir, ignore_errors=True)
    summary.wall_time = time.perf_counter() - wall
    return summary


def _write_programmable_replay(
    config, all_lines, items, documents, mismatches, run, build_root
) -> Path:
    """A replay folder: every query set, ``hardware/hardware.json``, every document in order,
    the schedule (``items.json``), ``mismatch.json``, ``sim.log`` and ``command.sh``. The
    command reruns the whole run (same seed, same documents); it reproduces exactly when the
    schedule is the default one (``items.json`` records it either way)."""
    root = Path(config.replay_dir or build_root / "replays").resolve()
    folder = root / (
        f"{config.simulator}-programmable-seed{config.seed}-{time.strftime('%Y%m%d-%H%M%S')}"
    )
    n = 1
    while folder.exists():
        n += 1
        folder = folder.with_name(folder.name.split("~")[0] + f"~{n}")
    (folder / "docs").mkdir(parents=True)
    (folder / "hardware").mkdir()
    (folder / "hardware" / "hardware.json").write_text(config.hardware.to_json())
    names = []
    for k, lines in enumerate(all_lines):
        names.append("queries.txt" if k == 0 else f"reconfigure-{k}.txt")
        (folder / names[-1]).write_text("".join(line + "\n" for line in lines))
    for i, (name, path) in enumerate(documents):
        shutil.copyfile(path, folder / "docs" / f"{i:04d}-{safe_name(name)}")
    (folder / "items.json").write_text(
        json.dumps(
            [dict(i, stream=Path(i["stream"]).name) if i["kind"] == "config" else i for i in items],
            indent=1,
        )
    )
    (folder / "mismatch.json").write_text(json.dumps(mismatches, indent=1, default=str))
    if run.log.exists():
        shutil.copyfile(run.log, folder / "sim.log")
    cmd = [
        "xpfilt",
        "regress",
        names[0],
        "docs",
        "--mode",
        "programmable",
        "--hw",
        "hardware",
        "--sim",
        config.simulator,
        "--seed",
        str(config.seed),
        "--p-valid",
        repr(config.p_valid),
        "--p-ready",
        repr(config.p_ready),
        "--build-dir",
        str(build_root),
    ]
    for name in names[1:]:
        cmd += ["--reconfigure", name]
    if not config.bad_streams:
        cmd.append("--no-bad-streams")
    if config.fault:
        cmd += ["--fault", config.fault]
    note = (
        ""
        if config.items is None
        else "# NOTE: the run used an explicit schedule (items.json); this reruns the default one.\n"
    )
    (folder / "command.sh").write_text(
        "#!/bin/sh\n# Reruns the programmable regression of mismatch.json (exit 1 = mismatch).\n"
        + note
        + f"command -v xpfilt >/dev/null || PATH={shlex.quote(str(Path(sys.executable).parent))}"
        ':"$PATH"\n'
        f'cd "$(dirname "$0")" && exec {shlex.join(cmd)}\n'
    )
    (folder / "command.sh").chmod(0o755)
    return folder
