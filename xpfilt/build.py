"""From queries to files: the plan, the Verilog of the custom engine, and a readable report."""

from __future__ import annotations

import dataclasses
import time
from pathlib import Path
from typing import Callable, Sequence

from .compiler import CompileOptions, Plan, compile_queries
from .xpath import Query

__all__ = ["emit_verilog", "compile_to_directory", "column_report", "TOP_NAME"]

TOP_NAME = "xpfilt_engine"


def emit_verilog(plan: Plan, *, max_name: int = 32) -> str:
    """Verilog of ``CustomEngine(plan)`` with top module :data:`TOP_NAME`."""
    from amaranth.back import verilog

    from hdl.engine import CustomEngine
    return verilog.convert(CustomEngine(plan, max_name=max_name), name=TOP_NAME)


def column_report(queries: Sequence[Query], options: CompileOptions) -> list[tuple[str, int]]:
    """Stack columns with no optimization, then adding each one in turn (up to ``options``)."""
    steps = [("no optimization", {}),
             ("+ prefix sharing", {"prefix_sharing": True}),
             ("+ (1) no column for the last node", {"opt_last": True}),
             ("+ (2) root node from the global stack", {"opt_root": True}),
             ("+ (3) shared columns", {"opt_share": True})]
    current = dataclasses.replace(options, prefix_sharing=False, opt_last=False, opt_root=False,
                                  opt_share=False)
    rows = []
    for label, change in steps:
        if change and not getattr(options, next(iter(change))):
            continue
        current = dataclasses.replace(current, **change)
        rows.append((label, compile_queries(queries, current).stats["columns"]))
    return rows


def compile_to_directory(queries: Sequence[Query], options: CompileOptions, out: Path, *,
                         max_name: int = 32, log: Callable[[str], None] = lambda _: None) -> str:
    """Write ``plan.json``, ``xpfilt_engine.v`` and ``report.md`` into ``out``; return the
    report text."""
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    start = time.perf_counter()
    plan = compile_queries(queries, options)
    t_plan = time.perf_counter() - start
    (out / "plan.json").write_text(plan.to_json())
    log(f"plan: {plan.stats['queries']} queries, {plan.stats['columns']} columns, "
        f"{plan.stats['clusters']} clusters ({t_plan:.2f} s); writing Verilog ...")
    start = time.perf_counter()
    (out / f"{TOP_NAME}.v").write_text(emit_verilog(plan, max_name=max_name))
    t_verilog = time.perf_counter() - start
    stats = plan.stats
    lines = [
        f"# xpfilt custom engine: {stats['queries']} queries",
        "",
        f"* query nodes (steps): {stats['query_nodes']}",
        f"* plan nodes after prefix sharing: {stats['nodes']}",
        f"* stack columns: {stats['columns']} "
        f"({stats['columns'] / max(1, stats['query_nodes']):.2f} per query node)",
        f"* clusters: {stats['clusters']} of up to {stats['cluster_size']} queries, "
        f"{stats['tags']} tag decoder entries in all",
        f"* maximum document depth: {options.max_depth}; longest name: {max_name} bytes",
        f"* readout: {stats['queries']} bits per document, in query order "
        f"(bit i = i-th query of the file that parsed)",
        f"* time: plan {t_plan:.2f} s, Verilog {t_verilog:.2f} s",
        "",
        "| columns | count |",
        "|---|---|",
    ]
    lines += [f"| {label} | {count} |" for label, count in column_report(queries, options)]
    lines += ["", f"Files: plan.json, {TOP_NAME}.v, report.md"]
    report = "\n".join(lines) + "\n"
    (out / "report.md").write_text(report)
    return report
