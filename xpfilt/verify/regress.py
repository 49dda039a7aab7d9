"""Regression of the generated RTL in a real simulator: cocotb + Verilator (or Icarus).

:func:`run_regression` compiles the queries, emits the Verilog, builds the simulation (cached by a
hash of plan and Verilog, see :mod:`xpfilt.sim.runner`), streams every document back to back through
one simulation with random valid gaps and readout backpressure, and lets the testbench
(:mod:`xpfilt.sim.engine_tb`) compare every cycle with the cycle-accurate model and every document's
answer with the reference filter.

``mode="programmable"`` runs the programmable engine of ``hardware`` (a
:class:`~xpfilt.compiler.programmable.HardwareSpec`) instead: the testbench (:mod:`xpfilt.sim.programmable_tb`)
sends a sequence of items -- configuration streams of ``queries`` and of each ``reconfigure``
query set (and corrupt/truncated ones that must be rejected) and runs of documents -- and checks
every cycle (data, readout, ``config.ready``, ``config_status``) against the model and every
document against the reference of the configuration active when it streamed (that half lives in
:mod:`xpfilt.verify.regress_programmable`). On a mismatch it writes a *replay folder* (``queries.txt``, the
failing document(s) in ``docs/``, ``mismatch.json``, the simulator log and ``command.sh``: the one
``xpfilt regress`` command that reproduces it) and names it in the summary.
"""

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

from xpfilt.compiler.custom import CompileOptions, EngineMode, compile_queries
from xpfilt.verify.harness import (
    SIMULATORS,
    RegressionConfig,
    RegressionSummary,
    load_query_source,
    run_testbench_in,
    safe_name,
    stage_documents,
)

__all__ = ["RegressionConfig", "RegressionSummary", "run_regression", "SIMULATORS"]


def run_regression(
    config: RegressionConfig, *, log=lambda message: None, write_replay: bool = True
) -> RegressionSummary:
    """Build (cached) and simulate the engine for ``config``; see the module docstring.
    ``log`` gets progress messages; ``write_replay=False``: no replay folder on a mismatch."""
    from xpfilt.hdl.verilog import emit_verilog
    from xpfilt.sim.config import TbConfig
    from xpfilt.sim.runner import build_design, default_build_root

    if config.mode is EngineMode.PROGRAMMABLE:
        from xpfilt.verify.regress_programmable import run_programmable

        return run_programmable(config, log=log, write_replay=write_replay)
    wall = time.perf_counter()
    queries, skipped_queries, query_lines = load_query_source(config.queries, config.max_name)
    if not queries:
        raise ValueError(
            "queries must include at least one path query without predicates, not none"
        )
    build_root = Path(config.build_dir or default_build_root()).resolve()
    run_dir = Path(tempfile.mkdtemp(prefix="cocotb_xpfilt_"))
    try:
        documents, skipped_documents = stage_documents(config.documents, run_dir)
        if not documents:
            raise ValueError(
                "documents must include at least one readable, non-empty document, not none"
            )
        start = time.perf_counter()
        plan = compile_queries(queries, config.options)
        plan_json = plan.to_json()
        verilog = emit_verilog(
            plan, max_name=config.max_name, bytes_per_cycle=config.bytes_per_cycle
        )
        verilog_time = time.perf_counter() - start
        design = build_design(plan_json, verilog, config.simulator, build_root, log=log)
        tb = TbConfig(
            plan=str(design.directory / "plan.json"),
            documents=[(name, str(path)) for name, path in documents],
            queries=[(q.number, str(q)) for q in queries],
            results=str(run_dir / "results.json"),
            seed=config.seed,
            p_valid=config.p_valid,
            p_ready=config.p_ready,
            max_name=config.max_name,
            fault=config.fault,
            bytes_per_cycle=config.bytes_per_cycle,
        )
        tb.write(run_dir / "config.json")
        log(f"simulating {len(documents)} documents on {config.simulator} ...")
        run, report, mismatches = run_testbench_in(design, run_dir, documents[0][0])
        summary = RegressionSummary.from_report(
            report,
            mismatches,
            design,
            simulator=config.simulator,
            documents=len(documents),
            queries=len(queries),
            clusters=len(plan.clusters),
            verilog_time=verilog_time,
            skipped_queries=skipped_queries,
            skipped_documents=skipped_documents,
        )
        if mismatches and write_replay:
            summary.replay, summary.replay_reproduces = _write_replay(
                config, query_lines, documents, mismatches, run, build_root, log
            )
    finally:
        shutil.rmtree(run_dir, ignore_errors=True)
    summary.wall_time = time.perf_counter() - wall
    return summary


# --- replay folders ---------------------------------------------------------------------------


def replay_command(
    config: RegressionConfig, queries: str, documents: str, build_dir: Path
) -> list[str]:
    """The ``xpfilt regress`` command line that runs ``config`` on other files."""
    o = config.options
    defaults = CompileOptions()
    cmd = [
        "xpfilt",
        "regress",
        queries,
        documents,
        "--sim",
        config.simulator,
        "--seed",
        str(config.seed),
        "--p-valid",
        repr(config.p_valid),
        "--p-ready",
        repr(config.p_ready),
        "--max-depth",
        str(o.max_depth),
        "--build-dir",
        str(build_dir),
    ]
    if o.cluster_size is not None:
        cmd += ["--cluster-size", str(o.cluster_size)]
    for flag, attr in (
        ("--no-opt1", "opt_last"),
        ("--no-opt2", "opt_root"),
        ("--no-opt3", "opt_share"),
        ("--no-prefix-sharing", "prefix_sharing"),
        ("--file-order", "prefix_clustering"),
    ):
        if not getattr(o, attr):
            cmd.append(flag)
    if o.share_limit != defaults.share_limit:
        raise ValueError("replay commands cannot express share_limit; use the default")
    if config.max_name != 32:
        cmd += ["--max-name", str(config.max_name)]
    if config.bytes_per_cycle != 1:
        cmd += ["--bytes-per-cycle", str(config.bytes_per_cycle)]
    if config.fault:
        cmd += ["--fault", config.fault]
    return cmd


def _fill(
    folder: Path,
    query_lines: list[str],
    docs: list[tuple[str, Path]],
    config: RegressionConfig,
    build_root: Path,
    mismatches: list[dict],
    log_path: Path,
) -> RegressionConfig:
    if folder.exists():
        shutil.rmtree(folder)
    (folder / "docs").mkdir(parents=True)
    (folder / "queries.txt").write_text("".join(line + "\n" for line in query_lines))
    for i, (name, path) in enumerate(docs):
        shutil.copyfile(path, folder / "docs" / f"{i:04d}-{safe_name(name)}")
    (folder / "mismatch.json").write_text(json.dumps(mismatches, indent=1, default=str))
    if log_path.exists():
        shutil.copyfile(log_path, folder / "sim.log")
    cmd = replay_command(config, "queries.txt", "docs", build_root)
    (folder / "command.sh").write_text(
        "#!/bin/sh\n# Reproduces the mismatch in mismatch.json (exit status 1 = mismatch).\n"
        f"command -v xpfilt >/dev/null || PATH={shlex.quote(str(Path(sys.executable).parent))}"
        ':"$PATH"\n'
        f'cd "$(dirname "$0")" && exec {shlex.join(cmd)}\n'
    )
    (folder / "command.sh").chmod(0o755)
    return replace(
        config,
        queries=folder / "queries.txt",
        documents=[folder / "docs"],
        build_dir=build_root,
        verify_replay=False,
    )


def _write_replay(
    config, query_lines, documents, mismatches, run, build_root, log
) -> tuple[Path, Optional[bool]]:
    """Write the replay folder. With ``verify_replay``, first try the smallest candidate (the
    failing document, with its predecessor for a cycle-level mismatch) and check that it
    reproduces; otherwise keep every document up to the failing one, which reproduces by
    construction (same seed, same cycles up to the mismatch)."""
    first = mismatches[0]
    k = max(0, min(int(first.get("document") or 0), len(documents) - 1))
    root = Path(config.replay_dir or build_root / "replays").resolve()
    folder = root / f"{config.simulator}-seed{config.seed}-{time.strftime('%Y%m%d-%H%M%S')}"
    n = 1
    while folder.exists():
        n += 1
        folder = folder.with_name(folder.name.split("~")[0] + f"~{n}")
    if config.verify_replay:
        # a document's answer: that document alone; a cycle: also the one read out meanwhile
        small = (
            documents[k : k + 1]
            if first["kind"] == "document"
            else documents[max(0, k - 1) : k + 1]
        )
        if len(small) < k + 1:
            replay = _fill(folder, query_lines, small, config, build_root, mismatches, run.log)
            log(f"checking that the replay in {folder} reproduces the mismatch ...")
            if not run_regression(replay, write_replay=False).ok:
                return folder, True
    replay = _fill(folder, query_lines, documents[: k + 1], config, build_root, mismatches, run.log)
    if config.verify_replay:
        log(f"checking that the replay in {folder} reproduces the mismatch ...")
        return folder, not run_regression(replay, write_replay=False).ok
    return folder, None
