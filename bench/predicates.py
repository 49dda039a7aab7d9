"""The cost of attribute predicates in the custom engine's hardware (issue 14 part 5).

1,024 depth-8 queries generated from the NITF DTD (``xpfilt gen-queries --dtd nitf-2-5.dtd -n 1024
-d 8 --predicates P --operators =,!=,<,<=,>,>= --seed 1``) with P = 0, 1 and 2 attribute
predicates per query (each on a different step; numeric literals 1..20), all optimizations on,
serial readout. Per P:

* resources: the engine synthesized with Yosys ``synth_xilinx`` (LUT6-eq counted as in
  ``resources.py``), and the front end alone with the plan's conditions and without them, so that
  the difference divided by the number of distinct (attribute, operator, literal) conditions is
  the cost of a comparator (goal <= 8 LUT6-eq); the rest of the engine's growth is the guards in
  the stacks and the condition bits carried with the events;
* a query node's cost for comparison: engine LUT6-eq / query nodes at P = 0;
* Fmax: ``synth_ecp5`` then ``nextpnr-ecp5 --85k`` (default seed, router1, target 100 MHz; see
  ``fmax.py``), one place and route at a time, ``clk`` locked to the ULX3S-85F's clock ball
  (:data:`CLOCK_PIN`; rows before it left it unconstrained, and at 1,024 queries neither router
  then finished: router2 failed the clock pad's arc, router1 ran out of its cap, P = 0 included).
  Goal: within 10 % of P = 0. ``--router``, ``--clock-pin ''`` and ``--seeds default,1,2``
  change that; the rows say so and 'Fmax / P=0' compares rows of the same router, pin and seed.
* bytes per cycle: the model on the 100 shared NITF documents (goal: unchanged, 1.0 per byte
  offered with the serial readout's beats not in the way).

Saved to bench/results/predicates.{json,md}, each row with the digest of the RTL sources.

Usage: python bench/predicates.py [--predicates 0,1,2] [--fmax 0,1,2] [--router router2] [--cap S]
[--clock-pin ''] [--seeds default,1,2] [--keep-routed]
"""

from __future__ import annotations

import argparse
import json
import time

import fmax
import resources
from common import RESULTS, median_row, publish, replace_rows, stream_documents
from fmax import run_point
from resources import XILINX, component_verilog, log, source_digest, yosys_synth

from xpfilt import workloads
from xpfilt.compiler.custom import CompileOptions, compile_queries
from xpfilt.eda.synth import xilinx_counts
from xpfilt.hdl.verilog import TOP_NAME, emit_verilog
from xpfilt.lang.xpath import parse_query
from xpfilt.paths import shared_data

COUNT = 1024
DEPTH = 8
OPERATORS = ("=", "!=", "<", "<=", ">", ">=")
SEED = 1
#: The ball ``clk`` is locked to: the ULX3S-85F's clock input (``boards``' ECP5 board).
CLOCK_PIN = "G2"

#: Runs whose rows were replaced, and what they measured.
HISTORY = (
    "Before the front end sent the attribute bits straight from its conds register and "
    "registered the closing quote's decision (RTL 05c90f61aa5c): P = 1 had 9,425 "
    "flip-flops and routing did not finish (router1 at iteration 97,000 with ~460 "
    "overused wires after 25 min; post-placement estimate 104.7 MHz vs 136.7 at P = 0). "
    "P = 0 re-run on RTL 2d3ae1ed7e14 (the P = 1 row's): router1 did not finish in "
    "1,800 s (~500 arcs left, congestion), post-placement estimate 123.0 MHz vs 115.2 at "
    "P = 1 (0.937); the P = 0 row kept is the routed one on 05c90f61aa5c. On RTL "
    "d1dc3adf5635 (the P = 2 row's) P = 0 did not finish routing with router1 in "
    "1,800 s either (the P = 0 row kept is still the one on 05c90f61aa5c). With the "
    "attribute decision in two registered steps (RTL 8be2aa9dd618 on, which cut the "
    "P = 2 row's a_lex -> conds path): P = 2's post-placement estimate 99.35 MHz (87.07 "
    "before, the same placer), but router1 did not finish routing in 1,800 s (~570 "
    "overused wires at iteration 114,000), so the router1 P = 2 row kept is the one on "
    "d1dc3adf5635; router2 stopped at the clock pad's arc (the unconstrained clk pin "
    "to the global network, the 'error' of its row); a hand run with clk on a clock pin "
    "(G2) routed at 70.8 MHz, one net of 13.6 ns routing across the device "
    "(cluster_1.copy_on_1)."
    " With clk on G2 (router1, default seed) P = 2 routed at 128.5 MHz on RTL "
    "dfcd87ee5742 (critical path byte_nstart_go -> the name tap's restart -> pos, 7.78 "
    "ns; seeds 1 / 2: 135.2 / 121.5, the median row); its default-seed row is now that "
    "of the conds register's clear from a register of its own (RTL 551d637ccac4; "
    "4d1425ddbaf9 differs from it in comments only). On 4d1425ddbaf9 (router1, G2): "
    "P = 0 170.9 / 165.2 / 162.8 MHz at seeds default / 1 / 2 (median 165.2), P = 2 "
    "144.4 / 129.2 / 108.4 (median 129.2, 0.78; seed 1's path a_attr -> "
    "value_undecided 7.74 ns, seed 2's excess -> malformed 9.23 ns). Issue 14's "
    "session of 2026-11-27 evening, default seed unless said: RTL b7c58d7bc894 (the "
    "trie a cycle late, the attribute requests ahead, avalued from the CAM's hits) P = 0 "
    "158.3, P = 1 142.7 (a_ipos -> a staged comparison, 7.01 ns), P = 2 139.1 "
    "(byte_nchar -> slot_fed, 7.19 ns); RTL d0cd34706293 (ex_at through the adder) "
    "P = 0 148.1 / 151.0 / 149.7 (ex_down -> ex_at 6.75 ns); RTL ae8d63454463 (conds "
    "clear copies per 64 bits, avalued a byte late; reverted) P = 2 127.8 (a_ipos -> a "
    "staged comparison, 7.82 ns), seeds 1 and 2 not routed in 1,200 s (router1 "
    "congestion). RTL af9a0464f50f (router1, G2): P = 0 163.5 / 169.9 / 157.3 MHz at "
    "seeds default / 1 / 2 (median 163.5), P = 2 138.8 / 136.9 / 124.7 (median 136.9, "
    "0.837; paths conds_clear -> 1,029 resets 7.20 ns, the CAM's hits -> anumeric "
    "7.31, the serial readout's count -> push 8.02). Issue 14's session of 2026-11-28, "
    "P = 2, default seed, each with every endpoint ranked (--keep-routed, "
    "placed_paths.py --report): RTL 1cea261aa375 (the attribute CAM's byte match aok a "
    "register over apos's next value) 133.6 MHz (valid -> a_aok, 7.49 ns); RTL "
    "fd210e09e45d (aok from three registers, one per way apos steps) 123.7 MHz (D1's "
    "nibbles -> a_aok_shift, 8.08 ns, 158 endpoints past 7 ns; nextpnr 1,215 s); both "
    "reverted."
)


def query_texts(predicates: int, p_text: float = 0.0) -> list[str]:
    config = workloads.QueryGenConfig(
        count=COUNT,
        max_depth=DEPTH,
        seed=SEED,
        predicates=workloads.PredicateGenConfig(
            count=predicates, operators=OPERATORS, p_text=p_text
        ),
    )
    schema = workloads.DtdSchema.load(shared_data() / "nitf" / "nitf-2-5.dtd")
    return workloads.generate_queries(schema, config)


def bytes_per_cycle(plan) -> float:
    from xpfilt.model.custom import EngineModel
    from xpfilt.software.events import load_documents

    docs = [p.read_bytes() for p in load_documents([shared_data() / "nitf" / "docs"])]
    model = EngineModel(plan)
    streaming, _ = stream_documents(model, docs)
    return sum(map(len, docs)) / streaming


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--predicates", default="0,1,2")
    parser.add_argument(
        "--fmax", default="0,1,2", help="the predicate counts to place and route ('' for none)"
    )
    parser.add_argument(
        "--p-text",
        type=float,
        default=0.0,
        help="probability that a predicate tests text() (gen-queries --p-text)",
    )
    parser.add_argument(
        "--router",
        default=fmax.ROUTER,
        choices=("router1", "router2"),
        help=f"nextpnr's router (default {fmax.ROUTER}; the row says which, and "
        f"'Fmax / P=0' compares rows of one router)",
    )
    parser.add_argument(
        "--clock-pin",
        default=CLOCK_PIN,
        help="lock clk to this ECP5 ball (default %(default)s, a clock pin; "
        "'' leaves it unconstrained; 'Fmax / P=0' compares rows with the "
        "same pin)",
    )
    parser.add_argument(
        "--seeds",
        default="default",
        help="nextpnr seeds, comma-separated ('default': its own): a row each "
        "and, with several, a median row",
    )
    parser.add_argument(
        "--keep-routed",
        action="store_true",
        help="keep each routed netlist and its detailed timing report (for "
        "placed_paths.py --report)",
    )
    args = resources.parse_args_with_cap(parser)
    fmax.KEEP_ROUTED = args.keep_routed
    fmax.ROUTER = args.router
    fmax.CLOCK_PIN = args.clock_pin or None
    digest = source_digest()
    started = time.perf_counter()
    from xpfilt.hdl.frontend import FrontEnd

    rows = []
    for p in (int(x) for x in args.predicates.split(",") if x):  # '': republish the rows
        texts = query_texts(p, args.p_text)
        queries = [parse_query(t, i + 1) for i, t in enumerate(texts)]
        plan = compile_queries(queries, CompileOptions())
        s = plan.stats
        n_preds = sum(t.count("[") for t in texts)
        row = {
            "predicates_per_query": p,
            "p_text": args.p_text,
            "queries": len(texts),
            "predicates": n_preds,
            "text_conditions": sum(getattr(c, "is_text", False) for c in plan.conditions),
            "conditions": len(plan.conditions),
            "query_nodes": s["query_nodes"],
            "columns": s["columns"],
            "clusters": s["clusters"],
            "tags": len(plan.tags),
            "rtl_digest": digest,
        }
        label = f"p{p}" + (f" text {args.p_text}" if args.p_text else "")
        log(
            f"{label}: {n_preds} predicates, {len(plan.conditions)} conditions, "
            f"{s['columns']} columns, {s['clusters']} clusters"
        )
        verilog = emit_verilog(plan)
        synth = yosys_synth(verilog, TOP_NAME, XILINX, label=f"{label} engine")
        if synth["error"] is None:
            row["engine_lut6"] = xilinx_counts(synth["cells"])["lut6_eq"]
            row["engine_ff"] = xilinx_counts(synth["cells"])["ffs"]
            row["lut6_per_node"] = round(row["engine_lut6"] / s["query_nodes"], 3)
        fe = {}
        for name, conds in (("with", plan.conditions), ("without", ())):
            component = FrontEnd(
                plan.tags, max_depth=plan.options.max_depth, max_name=32, conditions=conds
            )
            result = yosys_synth(
                component_verilog(component, "part"),
                "part",
                XILINX,
                label=f"{label} front end {name} conditions",
            )
            if result["error"] is None:
                fe[name] = xilinx_counts(result["cells"])["lut6_eq"]
        if len(fe) == 2:
            row["front_end_lut6"] = fe["with"]
            row["comparators_lut6"] = fe["with"] - fe["without"]
            if plan.conditions:
                row["lut6_per_condition"] = round(row["comparators_lut6"] / len(plan.conditions), 2)
        row["bytes_per_cycle"] = round(bytes_per_cycle(plan), 4)
        routed = []
        seeds = fmax.parse_seeds(args.seeds)
        for seed in seeds if str(p) in args.fmax.split(",") else ():
            fmax.SEED = seed
            ecp5 = run_point("ecp5", COUNT, verilog, s, "serial")
            routed.append(
                {
                    **row,
                    **{
                        "ecp5_" + key: ecp5[key]
                        for key in (
                            "router",
                            "clock_pin",
                            "seed",
                            "fmax_mhz",
                            "lut4",
                            "dpr16x4",
                            "ff",
                            "critical_ns",
                            "critical_cells",
                            "critical_from",
                            "critical_to",
                            "error",
                        )
                        if key in ecp5
                    },
                }
            )
        if len(routed) > 1:  # and a row of the median over the seeds
            routed.append(
                median_row(
                    routed,
                    args.seeds,
                    fmax="ecp5_fmax_mhz",
                    seed="ecp5_seed",
                    error="ecp5_error",
                    per_seed=(
                        "ecp5_critical_ns",
                        "ecp5_critical_cells",
                        "ecp5_critical_from",
                        "ecp5_critical_to",
                    ),
                )
            )
        for row in routed or [row]:
            rows.append(row)
            log(f"{label}: {row}")

    def key(row):
        return (
            row["predicates_per_query"],
            row.get("p_text", 0.0),
            row.get("ecp5_router", "router1"),
            row.get("ecp5_clock_pin", ""),
            str(row.get("ecp5_seed", "default")),
        )

    previous = RESULTS / "predicates.json"
    if previous.exists():  # rows of other (predicates, p_text) points are kept
        rows = replace_rows(json.loads(previous.read_text())["rows"], rows, key)
        rows.sort(key=key)
    for row in rows:
        base = next((r for r in rows if key(r) == (0, 0.0, *key(row)[2:])), None)
        if "engine_lut6" in row and "front_end_lut6" in row:
            row["stacks_lut6_per_node"] = round(
                (row["engine_lut6"] - row["front_end_lut6"]) / row["query_nodes"], 3
            )
        if base and row is not base:
            if "engine_lut6" in row and "engine_lut6" in base:
                row["engine_growth_lut6"] = row["engine_lut6"] - base["engine_lut6"]
            if row.get("ecp5_fmax_mhz") and base.get("ecp5_fmax_mhz"):
                row["fmax_vs_p0"] = round(row["ecp5_fmax_mhz"] / base["ecp5_fmax_mhz"], 3)
    notes = (
        f"{COUNT} depth-{DEPTH} NITF queries per row from `xpfilt gen-queries --dtd "
        f"nitf-2-5.dtd -n {COUNT} -d {DEPTH} --predicates P --operators "
        f"{','.join(OPERATORS)} --seed {SEED}` (the paths differ between rows: the "
        f"generator picks steps with attributes for predicates), all optimizations on, "
        f"serial readout. LUT6-eq: Yosys `synth_xilinx` as in resources.py; 'comparators' = "
        f"front end with the plan's conditions minus the same front end without them; "
        f"'per condition' divides that by the distinct (attribute, op, literal) "
        f"conditions (goal <= 8); 'without the front end' = (engine - front end) / "
        f"query nodes, the stacks' share, where a guard costs. Fmax: ECP5-85F, "
        f"nextpnr-ecp5 default seed unless 'seed' says otherwise, router1 unless "
        f"'router' does, clk on the ball in 'clk pin' ({CLOCK_PIN}: the ULX3S-85F's "
        f"clock input; empty: unconstrained, as every row before it), target "
        f"100 MHz (goal: within 10 % of P = 0 of the same router, pin and seed); "
        f"'post-placement estimate' = nextpnr's Max frequency after placement, from its log "
        f"(filled in by hand where routing did not finish, see 'error'). "
        f"Bytes/cycle: model, 100 shared NITF documents back to back. RTL digest of this "
        f"run {digest} (each row's own in 'RTL digest'); this run "
        f"{time.perf_counter() - started:.0f} s. {HISTORY}"
    )
    publish(
        "predicates",
        rows,
        [
            ("predicates_per_query", "predicates/query"),
            ("p_text", "p(text())"),
            ("predicates", "predicates"),
            ("conditions", "distinct conditions"),
            ("text_conditions", "of them text()"),
            ("query_nodes", "query nodes"),
            ("columns", "columns"),
            ("clusters", "clusters"),
            ("engine_lut6", "engine LUT6-eq"),
            ("lut6_per_node", "LUT6-eq / node"),
            ("stacks_lut6_per_node", "LUT6-eq / node without the front end"),
            ("engine_growth_lut6", "growth vs P=0"),
            ("engine_ff", "FF (Xilinx)"),
            ("front_end_lut6", "front end LUT6-eq"),
            ("comparators_lut6", "comparators LUT6-eq"),
            ("lut6_per_condition", "LUT6-eq / condition"),
            ("bytes_per_cycle", "bytes/cycle"),
            ("ecp5_router", "router"),
            ("ecp5_clock_pin", "clk pin"),
            ("ecp5_seed", "seed"),
            ("ecp5_fmax_mhz", "ECP5 Fmax MHz"),
            ("fmax_vs_p0", "Fmax / P=0"),
            ("ecp5_placed_mhz", "ECP5 post-placement estimate MHz"),
            ("ecp5_lut4", "LUT4"),
            ("ecp5_ff", "FF"),
            ("ecp5_critical_ns", "critical ns"),
            ("ecp5_critical_from", "critical from"),
            ("ecp5_critical_to", "to"),
            ("rtl_digest", "RTL digest"),
            ("ecp5_error", "error"),
        ],
        "Attribute predicates in the custom engine: resources and Fmax",
        notes,
    )


if __name__ == "__main__":
    main()
