"""Resources and Fmax of the W-byte engine (issue 18) against the one-byte engine.

* Front end alone (``FrontEnd`` / ``WideFrontEnd`` with the tags of the 1,024-query plan), W = 1,
  2, 4, 8: Yosys ``synth_xilinx`` LUT6-equivalents, flip-flops and block RAMs (the W-byte tag
  CAM's ROMs; see resources.py), and the LUT6-eq growth over W = 1 (goal: <= 2.5x at W = 4);
  ``--no-tags``: also with no tag dictionary (part ``front end (no tags)``), so that what the
  tag decoder costs is the difference; ``--predicates``: also with the tags and the value
  conditions (attribute and ``text()``) of the shared predicate set's 1,000 profiles (part
  ``front end (predicates)``); ``--stages``: also where each front end's LUT6-eq go, stage by
  stage (:data:`STAGES`; saved to bench/results/wide_stages.{json,md}).
* Whole engine, 1,024 depth-8 NITF queries (serial readout), W = 1, 2, 4: LUT6-eq per query node;
  with ``--fmax``, ECP5-85F Fmax (Yosys ``synth_ecp5`` + nextpnr, default seed, target 100 MHz,
  as bench/fmax.py; elaborated for the ECP5: the tag CAM in DP16KDs with their output
  registers, ``xpfilt.hdl.bram``) and MB/s = W x Fmax (the sustained bytes per cycle on NITF
  are ~W, see wide_throughput.md). Goal: Fmax within 15 % of W = 1.

``--no-route``: place only (nextpnr ``--no-route``); the rows are ``engine (placed only)`` and
carry nextpnr's post-placement estimate (``estimate_mhz``) and the critical path it names.

Every tool run is capped (``--cap``); a failure or timeout is a row with the reason. Run place and
route under ``flock /tmp/pnr.lock`` on a shared machine. Saved to bench/results/wide_fmax.{json,md}.

Usage: python bench/wide_fmax.py [--fmax [--no-route]] [--front-ends 1,2,4,8] [--no-tags] [--stages]
       [--widths 1,2,4] [--queries N] [--cap S]   (--widths '': front ends
only, small enough to synthesize without the place-and-route lock)
"""

from __future__ import annotations

import argparse
import json
import re
import time
from pathlib import Path

import fmax
import resources
from capacity import query_texts
from common import publish
from resources import (
    CACHE,
    XILINX,
    component_verilog,
    log,
    lut6_eq_by_register,
    source_digest,
    yosys_synth,
)

from xpfilt.compiler.custom import CompileOptions, compile_queries
from xpfilt.eda.synth import xilinx_counts
from xpfilt.hdl.bram import ECP5
from xpfilt.hdl.verilog import TOP_NAME, emit_verilog
from xpfilt.lang.xpath import parse_query

QUERIES = 1024


def front_end(plan, width: int, tags: bool = True):
    """The front end of ``plan`` at ``width`` bytes per cycle, with the plan's value conditions
    (``tags``: with its tag dictionary, else with none: no tag decoder, the rest as it is)."""
    from xpfilt.hdl.frontend import FrontEnd
    from xpfilt.hdl.wide_frontend import WideFrontEnd

    names = plan.tags if tags else []
    if width == 1:
        return FrontEnd(names, max_depth=plan.options.max_depth, conditions=plan.conditions)
    return WideFrontEnd(
        names, width=width, max_depth=plan.options.max_depth, conditions=plan.conditions
    )


def predicate_plan():
    """The plan of the shared predicate set (nitf-d6-p15-pred1-n1000: attribute and text()
    predicates)."""
    from xpfilt.compiler.custom import hardware_queries
    from xpfilt.lang.xpath import load_queries
    from xpfilt.paths import shared_data

    loaded = load_queries(shared_data() / "queries/nitf-d6-p15-pred1-n1000.txt")
    return compile_queries(hardware_queries(loaded.queries)[0], CompileOptions())


#: The front end's stages (the first part of a register's name, as hdl/wide_frontend.py and,
#: for W = 1, hdl/frontend.py name them), for ``--stages``; the rest is ``other``.
STAGES = (
    ("D1, D2: beat, byte classes", r"d1|d2|c1|valid1|last1|lanes1"),
    ("X: composed transition functions", r"x\d+"),
    ("S: lane start states (loop s0)", r"s0|s"),
    ("O: lane requests", r"o"),
    ("N, N2: depth/name/hash prefixes, bounds", r"n\d*"),
    ("L, L2, L3: depth, name position, hash per lane", r"l\d*|v0|pos0|h0|root0"),
    ("tag decoder (CAM rows, M, M2; W = 1: trie)", r"dec\d+|match0|m\d*|ram:cam.*|trie"),
    ("P2, event queue", r"p2|ram:queue.*|occupied|head|tail|in|load|room|after|bank\d+"),
    ("E, F: global stack, end check, events", r"e|f|tos|events|mismatched|sticky|ram:stack"),
    ("parser (W = 1)", r"state|kw|byte|excess|ex|low|high|h|hsh|pos|level|root|restart|tap"),
)


def stage_of(register: str) -> str:
    """The stage of :data:`STAGES` that the register (or memory) named ``register`` is in."""
    first = re.split(r"[_.$]", register.lstrip("\\"))[0]
    return next((stage for stage, pattern in STAGES if re.fullmatch(pattern, first)), "other")


def xilinx(verilog: str, top: str, label: str, stages: bool = False) -> dict:
    """``synth_xilinx`` counts; ``stages``: also the LUT6-eq of each of :data:`STAGES`
    (``by_stage``, from :func:`resources.lut6_eq_by_register` on the netlist)."""
    synth = yosys_synth(
        verilog,
        top,
        XILINX + ("; write_json synth.json" if stages else ""),
        label=label,
        extra_outputs=("synth.json",) if stages else (),
    )
    if synth["error"]:
        return {"error": f"yosys: {synth['error']}"}
    counts = xilinx_counts(synth["cells"])
    row = {
        "lut6_eq": counts["lut6_eq"],
        "ffs": counts["ffs"],
        "bram": counts["bram"],
        "yosys_s": round(synth["seconds"], 1),
    }
    if stages:
        netlist = json.loads((CACHE / f"{synth['key']}.synth.json").read_text())
        by_stage: dict[str, float] = {}
        for register, share in lut6_eq_by_register(netlist["modules"][top]).items():
            by_stage[stage_of(register)] = by_stage.get(stage_of(register), 0) + share
        row["by_stage"] = {
            stage: round(v) for stage, v in sorted(by_stage.items(), key=lambda kv: -kv[1])
        }
    return row


def earlier_rows(digest: str, planned: set) -> list[dict]:
    """The saved rows this run does not measure again (``planned``: its (part, W, queries,
    router) on RTL ``digest``; each row carries its digest and router): a run adds to them."""
    path = Path(__file__).parent / "results" / "wide_fmax.json"
    if not path.exists():
        return []
    return [
        row
        for row in json.loads(path.read_text())["rows"]
        if row.get("rtl_digest") != digest
        or (row["part"], row["W"], row["queries"], row.get("router")) not in planned
    ]


def configuration(row: dict) -> tuple:
    """What a wide_fmax row measures, whatever the RTL: its current row is the last one saved
    (:func:`common.save`; earlier rows of the same configuration go to results/history/)."""
    return (
        row["part"],
        row["W"],
        row["queries"],
        row.get("router"),
        row.get("conditions"),
        row.get("tags"),
    )


def stage_configuration(row: dict) -> tuple:
    """What a wide_stages row measures: the front end, W and the stage."""
    return (row["part"], row["W"], row["stage"])


def save(rows: list[dict], started: float) -> None:
    """Publish the rows so far (after every engine, so a run cut short keeps what it measured)."""
    publish(
        "wide_fmax",
        rows,
        [
            ("part", "part"),
            ("W", "W"),
            ("queries", "queries"),
            ("tags", "tags"),
            ("conditions", "value conditions"),
            ("lut6_eq", "LUT6-eq (xilinx)"),
            ("growth", "growth vs W=1"),
            ("ffs", "FF"),
            ("bram", "block RAM (xilinx)"),
            ("lut6_eq_per_node", "LUT6-eq per query node"),
            ("ecp5_lut4", "ECP5 LUT4"),
            ("fmax_mhz", "ECP5-85F Fmax MHz"),
            ("estimate_mhz", "post-placement estimate MHz"),
            ("MB_per_s", "MB/s (W x Fmax)"),
            ("critical_from", "critical path from"),
            ("critical_to", "to"),
            ("router", "router"),
            ("pnr_s", "nextpnr s"),
            ("rtl_digest", "RTL digest"),
            ("note", "note"),
            ("error", "error"),
        ],
        "The W-byte engine: resources and Fmax (issue 18)",
        f"1,024 depth-8 NITF queries, all optimizations, serial readout. Yosys synth_xilinx "
        f"LUT6-eq as resources.py; ECP5 as fmax.py (nextpnr default seed, target 100 MHz). "
        f"Run took {time.perf_counter() - started:.0f} s so far.",
        key=configuration,
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--fmax", action="store_true", help="also ECP5 place and route")
    parser.add_argument(
        "--front-ends",
        default="1,2,4,8",
        help="front-end widths to synthesize alone (default 1,2,4,8; '' for none)",
    )
    parser.add_argument(
        "--no-tags",
        action="store_true",
        help="front ends also without tags (part 'front end (no tags)': what "
        "the tag decoder costs is the difference)",
    )
    parser.add_argument(
        "--predicates",
        action="store_true",
        help="front ends also for the shared predicate set (part 'front end "
        "(predicates)': its 1,000 profiles' tags and value conditions)",
    )
    parser.add_argument(
        "--stages",
        action="store_true",
        help="front ends: also where their LUT6-eq go, stage by stage "
        "(bench/results/wide_stages.{json,md})",
    )
    parser.add_argument(
        "--no-route",
        action="store_true",
        help="with --fmax: place only, nextpnr's post-placement estimate",
    )
    parser.add_argument(
        "--no-xilinx", action="store_true", help="no synth_xilinx of the engines (ECP5 only)"
    )
    parser.add_argument(
        "--router",
        default=fmax.ROUTER,
        choices=("router1", "router2"),
        help=f"nextpnr's router (default {fmax.ROUTER}; the row says which)",
    )
    parser.add_argument(
        "--queries", type=int, default=QUERIES, help=f"queries of the engines (default {QUERIES})"
    )
    parser.add_argument(
        "--widths",
        default="4,1,2",
        help="engine widths, in this order (default 4,1,2; '' for the front ends only)",
    )
    args = resources.parse_args_with_cap(parser)
    started = time.perf_counter()
    digest = source_digest()
    fmax.PLACE_ONLY = args.no_route
    fmax.ROUTER = args.router
    n = args.queries
    engine_part = "engine (placed only)" if args.no_route else "engine"
    queries = [parse_query(t, i + 1) for i, t in enumerate(query_texts(8, n))]
    plan = compile_queries(queries, CompileOptions())
    nodes = plan.stats["query_nodes"]
    front_ends = [int(w) for w in args.front_ends.split(",") if w]
    widths = [int(w) for w in args.widths.split(",") if w]
    parts = (
        [("front end", True, plan)]
        + ([("front end (no tags)", False, plan)] if args.no_tags else [])
        + ([("front end (predicates)", True, predicate_plan())] if args.predicates else [])
    )
    router = "placed only" if args.no_route else args.router if args.fmax else None
    rows = earlier_rows(
        digest,
        {(part, w, n, None) for part, _, _ in parts for w in front_ends}
        | {(engine_part, w, n, router) for w in widths},
    )
    stage_rows: list[dict] = []
    for part, tags, part_plan in parts:
        base = None
        for width in front_ends:
            row = {
                "part": part,
                "W": width,
                "queries": len(part_plan.query_numbers),
                "tags": len(part_plan.tags) if tags else 0,
                **({"conditions": len(part_plan.conditions)} if part_plan.conditions else {}),
                **xilinx(
                    component_verilog(front_end(part_plan, width, tags), "front_end"),
                    "front_end",
                    f"{part} W{width}",
                    stages=args.stages,
                ),
            }
            stage_rows += [
                {
                    "part": part,
                    "W": width,
                    "stage": stage,
                    "lut6_eq": v,
                    "share": round(v / row["lut6_eq"], 3),
                    "rtl_digest": digest,
                }
                for stage, v in row.pop("by_stage", {}).items()
            ]
            if width == 1:
                base = row.get("lut6_eq")
            if base and "lut6_eq" in row:
                row["growth"] = round(row["lut6_eq"] / base, 2)
            row["rtl_digest"] = digest
            rows.append(row)
            log(f"{part} W={width}: {row}")
    if stage_rows:  # added to the saved rows of other RTL
        saved = Path(__file__).parent / "results" / "wide_stages.json"
        stage_rows = [
            row
            for row in (json.loads(saved.read_text())["rows"] if saved.exists() else [])
            if row["rtl_digest"] != digest
        ] + stage_rows
        publish(
            "wide_stages",
            stage_rows,
            [
                ("part", "part"),
                ("W", "W"),
                ("stage", "stage"),
                ("lut6_eq", "LUT6-eq (xilinx)"),
                ("share", "share of the front end"),
                ("rtl_digest", "RTL digest"),
            ],
            "Where the W-byte front end's LUTs go (issue 18)",
            "Yosys synth_xilinx -flatten; each LUT shared equally among the registers, "
            "memories and ports it reaches through logic alone, grouped by the register names' "
            "stage (bench/wide_fmax.py STAGES, resources.lut6_eq_by_register).",
            key=stage_configuration,
        )
    for width in widths:
        verilog = emit_verilog(plan, bytes_per_cycle=width)
        row = {
            "part": engine_part,
            "W": width,
            "queries": n,
            "tags": len(plan.tags),
            "query_nodes": nodes,
        }
        if not (args.no_route or args.no_xilinx):  # (placing only: a quick look at the clock)
            row.update(xilinx(verilog, TOP_NAME, f"engine n{n} W{width}"))
        if "lut6_eq" in row:
            row["lut6_eq_per_node"] = round(row["lut6_eq"] / nodes, 3)
        if args.fmax:  # the tag CAM as DP16KDs with their output registers (hdl/bram.py)
            ecp5 = fmax.run_point(
                "ecp5", n, emit_verilog(plan, bytes_per_cycle=width, platform=ECP5), plan.stats
            )
            row.update(
                {
                    "ecp5_lut4": ecp5.get("lut4"),
                    "ecp5_ff": ecp5.get("ff"),
                    "fmax_mhz": ecp5.get("fmax_mhz"),
                    "pnr_s": ecp5.get("pnr_s"),
                    "estimate_mhz": ecp5.get("estimate_mhz"),
                    "router": ecp5.get("router"),
                    "critical_from": ecp5.get("critical_from"),
                    "critical_to": ecp5.get("critical_to"),
                }
            )
            if ecp5.get("error"):
                row["error"] = ecp5["error"]
            if row.get("fmax_mhz"):
                row["MB_per_s"] = round(width * row["fmax_mhz"], 1)
        row["rtl_digest"] = digest
        rows.append(row)
        log(f"engine W={width}: {row}")
        save(rows, started)
    save(rows, started)


if __name__ == "__main__":
    main()
