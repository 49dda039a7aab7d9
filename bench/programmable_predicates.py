"""The cost of value predicates in the programmable engine (issue 14 part 3): LUT6-eq per
comparator slot and per column.

Yosys ``synth_xilinx`` (LUT6-eq as in ``resources.py``) of the programmable engine with clusters
of 128 columns, tags up to 16 bytes, a dictionary of 31 tags, and S comparator slots:

* ``1 x 128`` with S = 0 (the engine before slots: "before"), 8 and 32, and ``2 x 128`` with
  S = 0 and 8;
* the front end alone with S = 0, 8 and 32: per slot = (S = 32 - S = 8) / 24, a slot's name and
  string comparator, digit comparators, decision, flags and LUT-RAM; the slots' shared part (the
  number lexer, positions) = S = 8 - S = 0 - 8 slots;
* per column = the second cluster's cost per column, with and without slots: (2 x 128 - 1 x 128)
  / 128 at S = 0 (before) and at S = 8 (after: the column's slot select, an (S + 1):1
  multiplexer, and its gate);
* the negated-child mask (split nodes: a nested path under ``not``) at twig width W = 4, 8
  slots: :func:`xpfilt.hdl.programmable.children_held` for 128 columns with the negated bits
  as inputs and tied to 0 (the logic without them), per column; its flip-flops are counted:
  each flag bit is a staged and an active flip-flop, 2 W per column (and W stream bits).

The custom engine's comparator costs 1.96 LUT6-eq per condition (bench/results/predicates; a
constant's bits are folded into LUTs); a programmable slot compares with loaded bytes.

With ``--fmax``: nextpnr-ecp5 (ECP5-85F, default seed, router1, ports on pins as
``programmable.py``'s row) of the 1 x 128 engine (``--fmax-clusters N``: N x 128) with S = 0
and S = 8 (run it under ``flock /tmp/pnr.lock``, with ``--cap``); ``--router router2`` routes
with nextpnr's router2 (the row says which); ``--io registered`` puts the engine in
``fmax.py``'s harness (every port bit through flip-flops, as the custom engine's rows) instead
of its ports on pins; ``--seeds default,1,2,3,4`` places and routes each engine with those
nextpnr seeds (a row each, and a median row: one seed's Fmax moves by several percent with any
change to the netlist). Rows are kept per slots, router, clusters, io and seed; 'Fmax / 0
slots' compares a row with the slot-free one of the same kind, seed, clock pin and RTL;
``--clock-pin G2`` locks clk to that ball (a clock pin), as ``predicates.py``.

Saved to bench/results/programmable_predicates.{json,md} with the RTL digest. ``--only
resources`` / ``--only fmax`` measures that part alone (the P&R part under the lock, the rest
outside it) and keeps the saved rows of the other part.
Usage: python bench/programmable_predicates.py [--fmax] [--only resources|fmax] [--cap S]
[--router router2] [--fmax-clusters N] [--io registered] [--seeds default,1,2] [--clock-pin G2]
"""

from __future__ import annotations

import argparse
import json
import time

import fmax
import resources
from amaranth.hdl import Cat, Const, Module
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out
from common import RESULTS, median_row, publish, replace_rows
from fmax import HARNESS_NAME, harnessed, run_point
from resources import XILINX, component_verilog, log, source_digest, yosys_synth

from xpfilt.compiler.programmable import HardwareSpec
from xpfilt.eda.synth import xilinx_counts
from xpfilt.hdl.frontend import FrontEnd
from xpfilt.hdl.programmable import ProgrammableEngine, children_held
from xpfilt.hdl.verilog import TOP_NAME, emit_programmable_verilog

POINTS = ((1, 0), (1, 8), (1, 32), (2, 0), (2, 8))  # (clusters, slots)
NEGATED_SPEC = HardwareSpec(clusters=1, columns=128, max_tag_len=16, tags=31, slots=8, twig_width=4)


class ChildrenHeld(wiring.Component):
    """:func:`children_held` of ``spec``'s columns as a component (``active``: the cluster's
    flags, ``pending``: the closing element's pending bits, ``held`` per column);
    ``negated=False`` ties every negated bit to 0."""

    def __init__(self, spec: HardwareSpec, negated: bool):
        self.spec, self.negated = spec, negated
        super().__init__(
            {
                "active": In(spec.cluster_flag_bits),
                "pending": In(spec.columns),
                "held": Out(spec.columns),
            }
        )

    def elaborate(self, platform):
        m = Module()
        spec, w = self.spec, self.spec.column_flag_bits
        negated = range(spec.negated_bit, spec.negated_bit + spec.twig_width)
        active = (
            self.active
            if self.negated
            else Cat(
                *(
                    Const(0, 1) if b < w * spec.columns and b % w in negated else self.active[b]
                    for b in range(len(self.active))
                )
            )
        )
        m.d.comb += self.held.eq(children_held(spec, active, None)(self.pending))
        return m


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--fmax", action="store_true", help="place and route S = 0 and 8")
    parser.add_argument(
        "--fmax-slots",
        default="0,8",
        help="the S to place and route, comma-separated (default 0,8)",
    )
    parser.add_argument(
        "--io",
        choices=("pins", "registered"),
        default="pins",
        help="the engine's ports on pins (default) or through fmax.py's "
        "registered harness, as fmax.py's rows",
    )
    parser.add_argument(
        "--fmax-clusters",
        type=int,
        default=1,
        help="clusters of 128 columns of the engine placed and routed (default 1)",
    )
    parser.add_argument(
        "--only",
        choices=("resources", "fmax"),
        help="measure this part alone, keep the saved rows of the other",
    )
    parser.add_argument(
        "--router",
        default=fmax.ROUTER,
        choices=("router1", "router2"),
        help=f"nextpnr's router (default {fmax.ROUTER}; the row says which)",
    )
    parser.add_argument(
        "--seeds",
        default="default",
        help="nextpnr seeds, comma-separated ('default': its own; default "
        "%(default)s): a row per seed, and with several a median row",
    )
    parser.add_argument(
        "--clock-pin",
        default=None,
        help="lock clk to this ECP5 ball, e.g. G2, a clock pin (the row says so)",
    )
    args = resources.parse_args_with_cap(parser)
    fmax.ROUTER = args.router
    fmax.CLOCK_PIN = args.clock_pin
    started = time.perf_counter()
    digest = source_digest()
    lut = {}
    rows = []
    measure = args.only != "fmax"
    for clusters, slots in POINTS if measure else ():
        spec = HardwareSpec(clusters=clusters, columns=128, max_tag_len=16, tags=31, slots=slots)
        result = yosys_synth(
            emit_programmable_verilog(spec),
            TOP_NAME,
            XILINX,
            label=f"programmable {clusters}x128, {slots} slots",
        )
        row = {
            "what": "engine",
            "clusters": clusters,
            "columns": clusters * 128,
            "slots": slots,
            "stream_bits": spec.stream_bits,
            "rtl_digest": digest,
            "error": result["error"],
        }
        if result["error"] is None:
            counts = xilinx_counts(result["cells"])
            row.update(lut6_eq=counts["lut6_eq"], ff=counts["ffs"], bram=counts["bram"])
            lut[clusters, slots] = counts["lut6_eq"]
        rows.append(row)
        log(f"{clusters}x128, {slots} slots: {row}")
    front = {}
    for slots in (0, 8, 32) if measure else ():
        result = yosys_synth(
            component_verilog(
                FrontEnd((), max_depth=16, max_name=32, slots=slots, slot_name_len=16), "part"
            ),
            "part",
            XILINX,
            label=f"front end, {slots} slots",
        )
        row = {"what": "front end", "slots": slots, "rtl_digest": digest, "error": result["error"]}
        if result["error"] is None:
            counts = xilinx_counts(result["cells"])
            row.update(lut6_eq=counts["lut6_eq"], ff=counts["ffs"])
            front[slots] = counts
        rows.append(row)
    held = {}
    for negated in (True, False) if measure else ():
        result = yosys_synth(
            component_verilog(ChildrenHeld(NEGATED_SPEC, negated), "part"),
            "part",
            XILINX,
            label=f"children held, negated {negated}",
        )
        row = {
            "what": "children held" + ("" if negated else ", no negated mask"),
            "columns": NEGATED_SPEC.columns,
            "slots": NEGATED_SPEC.slots,
            "twig_width": NEGATED_SPEC.twig_width,
            "rtl_digest": digest,
            "error": result["error"],
        }
        if result["error"] is None:
            row["lut6_eq"] = held[negated] = xilinx_counts(result["cells"])["lut6_eq"]
        rows.append(row)
    if len(held) == 2:
        rows.append(
            {
                "what": "negated mask",
                "columns": NEGATED_SPEC.columns,
                "slots": NEGATED_SPEC.slots,
                "twig_width": NEGATED_SPEC.twig_width,
                "negated_lut6_per_column": round(
                    (held[True] - held[False]) / NEGATED_SPEC.columns, 2
                ),
                "negated_ff_per_column": 2 * NEGATED_SPEC.twig_width,
                "negated_stream_bits_per_column": NEGATED_SPEC.twig_width,
                "rtl_digest": digest,
            }
        )
        log(f"negated mask: {rows[-1]}")
    if len(lut) == len(POINTS) and len(front) == 3:
        per_slot = (front[32]["lut6_eq"] - front[8]["lut6_eq"]) / 24
        before = (lut[2, 0] - lut[1, 0]) / 128
        after = (lut[2, 8] - lut[1, 8]) / 128
        rows.append(
            {
                "what": "derived",
                "per_slot": round(per_slot, 2),
                "ff_per_slot": round((front[32]["ffs"] - front[8]["ffs"]) / 24, 2),
                "lutram_per_slot": round(
                    (front[32]["lutram_luts"] - front[8]["lutram_luts"]) / 24, 2
                ),
                "slots_shared": round(front[8]["lut6_eq"] - front[0]["lut6_eq"] - 8 * per_slot),
                "per_column_before": round(before, 2),
                "per_column_after": round(after, 2),
                "per_column_growth": round(after - before, 2),
                "rtl_digest": digest,
            }
        )
        log(f"derived: {rows[-1]}")
    routed = [int(x) for x in args.fmax_slots.split(",")]
    routed_clusters = args.fmax_clusters
    seeds = fmax.parse_seeds(args.seeds)
    for slots in routed if args.fmax or args.only == "fmax" else ():
        spec = HardwareSpec(
            clusters=routed_clusters, columns=128, max_tag_len=16, tags=31, slots=slots
        )
        verilog = emit_programmable_verilog(spec)
        if args.io == "registered":
            verilog = harnessed(verilog, ProgrammableEngine(spec, instances=True))
        for seed in seeds:
            fmax.SEED = seed
            point = run_point(
                "ecp5",
                128 * routed_clusters,
                verilog,
                {"query_nodes": 0, "columns": 128 * routed_clusters, "clusters": routed_clusters},
                top=HARNESS_NAME if args.io == "registered" else TOP_NAME,
            )
            rows.append(
                {
                    "what": "fmax",
                    "clusters": routed_clusters,
                    "columns": 128,
                    "slots": slots,
                    "io": args.io,
                    "router": args.router,
                    "seed": "default" if seed is None else seed,
                    "clock_pin": args.clock_pin or "",
                    "fmax_mhz": point.get("fmax_mhz"),
                    "lut4": point.get("lut4"),
                    "ff": point.get("ff"),
                    "critical_from": point.get("critical_from"),
                    "critical_to": point.get("critical_to"),
                    "rtl_digest": digest,
                    "error": point.get("error"),
                }
            )
            log(f"fmax {slots} slots seed {rows[-1]['seed']}: {rows[-1]}")
        if len(seeds) > 1:
            rows.append(
                median_row(
                    rows[-len(seeds) :],
                    args.seeds,
                    fmax="fmax_mhz",
                    seed="seed",
                    error="error",
                    per_seed=("critical_from", "critical_to"),
                )
                | {"what": "fmax median"}
            )
            log(f"fmax {slots} slots: {rows[-1]}")
    if args.only:  # the other part's saved rows, read now (a run of it may just have ended)
        saved = RESULTS / "programmable_predicates.json"
        kept = json.loads(saved.read_text())["rows"] if saved.exists() else []
        for row in kept:
            if row["what"].startswith("fmax"):
                row.setdefault("router", "router1")  # rows from before --router
                row.setdefault("io", "pins")  # rows from before --io
                row.setdefault("seed", "default")  # rows from before --seeds
                row.setdefault("clock_pin", "")  # rows from before --clock-pin
        if args.only == "resources":
            rows += [r for r in kept if r["what"].startswith("fmax")]
        else:
            rows = replace_rows(
                kept,
                rows,
                key=lambda r: (
                    r["what"],
                    r.get("slots"),
                    r.get("router"),
                    r.get("clusters"),
                    r.get("io"),
                    r.get("seed", "default"),
                    r.get("clock_pin", ""),
                ),
            )
    _compare_with_slot_free(rows)
    rows.sort(key=lambda row: row["what"].startswith("fmax"))  # stable: the P&R rows last
    publish(
        "programmable_predicates",
        rows,
        [
            ("what", "row"),
            ("clusters", "clusters"),
            ("columns", "columns"),
            ("slots", "slots"),
            ("stream_bits", "stream bits"),
            ("lut6_eq", "LUT6-eq"),
            ("ff", "FF"),
            ("bram", "block RAM"),
            ("per_slot", "LUT6-eq / slot"),
            ("lutram_per_slot", "of which LUT-RAM"),
            ("ff_per_slot", "FF / slot"),
            ("per_column_before", "LUT6-eq / column, no slots"),
            ("per_column_after", "LUT6-eq / column, with slots"),
            ("per_column_growth", "growth / column"),
            ("slots_shared", "slots' shared part"),
            ("twig_width", "twig width W"),
            ("negated_lut6_per_column", "negated mask LUT6-eq / column"),
            ("negated_ff_per_column", "negated mask FF / column"),
            ("negated_stream_bits_per_column", "negated mask stream bits / column"),
            ("router", "router"),
            ("io", "I/O"),
            ("clock_pin", "clk pin"),
            ("seed", "seed"),
            ("fmax_mhz", "ECP5 Fmax MHz"),
            ("fmax_vs_no_slots", "Fmax / 0 slots"),
            ("lut4", "LUT4"),
            ("critical_from", "critical from"),
            ("critical_to", "to"),
            ("rtl_digest", "RTL digest"),
            ("error", "error"),
        ],
        "Value predicates in the programmable engine: LUT6-eq per comparator slot and column",
        "Yosys synth_xilinx (LUT6-eq as in resources.md) of the programmable engine, clusters "
        "of 128 columns, tags up to 16 bytes, 31 tags, S comparator slots (stream format 5). "
        "Per slot: the front end alone, (S = 32 - S = 8) / 24. Per column: (2 x 128 - 1 x 128) "
        "/ 128 at S = 0 (before) and S = 8 (after: slot select and gate). Shared part: the "
        "number lexer and positions (front end S = 8 - S = 0 - 8 slots). Before the names and "
        "strings shared a memory and operators were loaded as accepted outcomes (RTL "
        "66df7bd8a2ad): 75.8 LUT6-eq per slot in the front end. Negated mask (split nodes' "
        "negated children, W = 4): children_held for 128 columns with the negated bits and "
        "with them tied to 0, per column; its FF counted (a staged and an active flip-flop "
        "per flag bit). Custom engine for comparison: "
        "1.96 "
        "LUT6-eq per condition (constants folded into LUTs; bench/results/predicates). "
        f"This run {time.perf_counter() - started:.0f} s.",
    )


def _compare_with_slot_free(rows: list[dict]) -> None:
    """``fmax_vs_no_slots`` on every P&R row with slots: its Fmax over that of the row with 0
    slots of the same kind, router, clusters, I/O, seed and RTL (the goal: >= 0.9)."""

    def kind(row):
        return (
            row["what"],
            row.get("router"),
            row.get("clusters"),
            row.get("io"),
            row.get("seed", "default"),
            row.get("clock_pin", ""),
            row.get("rtl_digest"),
        )

    free = {
        kind(r): r.get("fmax_mhz")
        for r in rows
        if r["what"].startswith("fmax") and r.get("slots") == 0
    }
    for row in rows:
        base = free.get(kind(row))
        if row["what"].startswith("fmax") and row.get("slots") and base and row.get("fmax_mhz"):
            row["fmax_vs_no_slots"] = round(row["fmax_mhz"] / base, 3)


if __name__ == "__main__":
    main()
