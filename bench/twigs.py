"""The cost of twig profiles (nested paths) in the custom engine's hardware (issue 15).

1,024 depth-6 queries generated from the NITF DTD (``xpfilt gen-queries --dtd nitf-2-5.dtd -n 1024
-d 6 --nested-paths B --nested-depth D --seed 1``), all optimizations on, serial readout, for
(B, D) = (1, 2) and (2, 3), each next to its *trunks*: the same queries with their predicates
removed (plain path profiles; the trie merges the duplicates this makes). Per row:

* resources: the engine synthesized with Yosys ``synth_xilinx`` (LUT6-eq counted as in
  ``resources.py``), and the front end alone with the plan's tags; the stacks' share is engine
  minus front end. *Per path node* = the trunks' stacks share / their query nodes; *per twig
  node* = (twig stacks - trunk stacks) / (twig query nodes - trunk query nodes): what a branch
  step (and the trunk steps the anchor turns into entries) adds;
* Fmax: ``synth_ecp5`` then ``nextpnr-ecp5 --85k`` (default seed, router1, target 100 MHz; see
  ``fmax.py``) for the rows named by ``--fmax``; run it under ``flock /tmp/pnr.lock``;
* bytes per cycle: the model on the 100 shared NITF documents;
* the programmable engine (``--split-windows``): what configurable split-node connections would
  add per generic column, measured on a prototype of just that logic (:func:`split_prototype`,
  synthesized like the engines): per column a pending bit (a register and a LUT-RAM row by
  level, as the custom engine's twigs), an *anchor* flag (the column's holding is a match), a
  *descendant* flag (its pending bit passes up) and a mask of the ``W`` columns after it whose
  pending bits its holding needs (an ``and`` of branches; a twig placed in ``W`` consecutive
  columns), loaded by a shift register (the engine's flags are staged and active: twice these
  flip-flops).

Saved to bench/results/twigs.{json,md}, each row with the digest of the RTL sources.

Usage: flock /tmp/pnr.lock python bench/twigs.py [--points 1x2,2x3] [--fmax 1x2,trunks 1x2]
[--split-windows 2,4,8,16]
"""

from __future__ import annotations

import argparse
import json
import time

import resources
from common import RESULTS, publish, replace_rows
from fmax import run_point
from predicates import bytes_per_cycle
from resources import XILINX, component_verilog, log, source_digest, yosys_synth

from xpfilt import workloads
from xpfilt.compiler.custom import CompileOptions, compile_queries
from xpfilt.eda.synth import xilinx_counts
from xpfilt.hdl.verilog import TOP_NAME, emit_verilog
from xpfilt.lang.xpath import Query, Step, parse_query
from xpfilt.paths import shared_data

COUNT = 1024
DEPTH = 6
SEED = 1


def twig_texts(branches: int, depth: int) -> list[str]:
    config = workloads.QueryGenConfig(
        count=COUNT,
        max_depth=DEPTH,
        seed=SEED,
        predicates=workloads.PredicateGenConfig(nested_paths=branches, nested_depth=depth),
    )
    schema = workloads.DtdSchema.load(shared_data() / "nitf" / "nitf-2-5.dtd")
    return workloads.generate_queries(schema, config)


def trunk(query: Query) -> Query:
    """``query`` without its predicates (a path profile)."""
    return Query(tuple(Step(s.axis, s.name) for s in query.steps), query.number)


def split_prototype(columns: int, window: int, max_depth: int = 16):
    """The pop-side logic configurable split-node connections would add to ``columns`` generic
    columns whose twig entries reach ``window`` columns ahead (see the module docstring). Ports:
    ``push``/``pop``/``doc_end``, ``addr`` (the level's row), ``row`` (the closing element's
    column bits, from the stack memory), ``cfg_bit``/``cfg_shift`` (the flag shift register);
    ``hits`` (per column: a twig anchored there matched on this pop)."""
    from amaranth.hdl import Cat, Module, Signal
    from amaranth.lib import wiring
    from amaranth.lib.memory import Memory
    from amaranth.lib.wiring import In, Out

    per_column = window + 2  # mask, anchor, descendant

    class SplitColumns(wiring.Component):
        def __init__(self):
            super().__init__(
                {
                    "push": In(1),
                    "pop": In(1),
                    "doc_end": In(1),
                    "addr": In(range(max_depth)),
                    "row": In(columns),
                    "cfg_bit": In(1),
                    "cfg_shift": In(1),
                    "hits": Out(columns),
                }
            )

        def elaborate(self, platform):
            m = Module()
            flags = Signal(columns * per_column)
            with m.If(self.cfg_shift):
                m.d.sync += flags.eq(Cat(flags[1:], self.cfg_bit))
            pending = Signal(columns)
            up = []
            for c in range(columns):
                f = flags[c * per_column : (c + 1) * per_column]
                needs = [~f[j] | pending[c + 1 + j] for j in range(window) if c + 1 + j < columns]
                holds = self.row[c] & (Cat(*needs).all() if needs else 1)
                anchor, descendant = f[window], f[window + 1]
                m.d.comb += self.hits[c].eq(self.pop & holds & anchor)
                up.append(holds & ~anchor | descendant & pending[c])
            mem = Memory(shape=columns, depth=max_depth, init=[])
            m.submodules.pending = mem
            write, read = mem.write_port(), mem.read_port(domain="comb")
            m.d.comb += [
                read.addr.eq(self.addr),
                write.addr.eq(self.addr),
                write.data.eq(pending),
                write.en.eq(self.push),
            ]
            with m.If(self.doc_end | self.push):
                m.d.sync += pending.eq(0)
            with m.Elif(self.pop):
                m.d.sync += pending.eq(read.data | Cat(*up))
            return m

    return SplitColumns()


def measure_split(columns: int, window: int) -> dict:
    label = f"programmable split nodes W={window}"
    row = {
        "set": label,
        "columns": columns,
        "split_window": window,
        "config_bits_per_column": window + 2,
    }
    result = yosys_synth(
        component_verilog(split_prototype(columns, window), "part"), "part", XILINX, label=label
    )
    if result["error"] is None:
        counts = xilinx_counts(result["cells"])
        row["engine_lut6"], row["engine_ff"] = counts["lut6_eq"], counts["ffs"]
        row["lut6_per_column"] = round(counts["lut6_eq"] / columns, 3)
        row["ff_per_column"] = round(counts["ffs"] / columns, 3)
    log(f"{label}: {row}")
    return row


def measure(label: str, queries: list[Query], fmax: bool) -> dict:
    from xpfilt.hdl.frontend import FrontEnd

    plan = compile_queries(queries, CompileOptions())
    s = plan.stats
    row = {
        "set": label,
        "queries": len(queries),
        "twig_queries": s["twigs"],
        "query_nodes": s["query_nodes"],
        "nodes": s["nodes"],
        "columns": s["columns"],
        "twig_entries": sum(len(p.chain) - 1 for c in plan.clusters for p in c.queries if p.chain),
        "pending_bits": s["pending_bits"],
        "clusters": s["clusters"],
        "tags": len(plan.tags),
    }
    # the programmable engine's window: how far (in entries, laid out in the plan's order)
    # a twig entry's columns would be from the entry whose condition reads it
    spans = [
        max(e - up for e, (_c, _g, up, _d) in enumerate(q.chain) if e)
        for c in plan.clusters
        for q in c.queries
        if len(q.chain) > 1
    ]
    if spans:
        row["split_span_max"] = max(spans)
        row["split_span_le4"] = round(sum(x <= 4 for x in spans) / len(spans), 3)
    log(f"{label}: {row}")
    verilog = emit_verilog(plan)
    synth = yosys_synth(verilog, TOP_NAME, XILINX, label=f"{label} engine")
    if synth["error"] is None:
        counts = xilinx_counts(synth["cells"])
        row["engine_lut6"], row["engine_ff"] = counts["lut6_eq"], counts["ffs"]
        row["lut6_per_node"] = round(row["engine_lut6"] / s["query_nodes"], 3)
    front = FrontEnd(plan.tags, max_depth=plan.options.max_depth, max_name=32)
    result = yosys_synth(
        component_verilog(front, "part"), "part", XILINX, label=f"{label} front end"
    )
    if result["error"] is None and "engine_lut6" in row:
        row["front_end_lut6"] = xilinx_counts(result["cells"])["lut6_eq"]
        row["stacks_lut6"] = row["engine_lut6"] - row["front_end_lut6"]
        row["stacks_lut6_per_node"] = round(row["stacks_lut6"] / s["query_nodes"], 3)
    row["bytes_per_cycle"] = round(bytes_per_cycle(plan), 4)
    if fmax:
        ecp5 = run_point("ecp5", COUNT, verilog, s, "serial")
        for key in (
            "fmax_mhz",
            "lut4",
            "dpr16x4",
            "ff",
            "critical_ns",
            "critical_from",
            "critical_to",
        ):
            if key in ecp5:
                row["ecp5_" + key] = ecp5[key]
        row["ecp5_error"] = ecp5.get("error")  # None replaces an earlier run's reason
    log(f"{label}: {row}")
    return row


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--points",
        default="1x2,2x3",
        help="nested paths per query x their most steps, comma-separated",
    )
    parser.add_argument(
        "--fmax", default="1x2,trunks 1x2", help="the rows to place and route ('' for none)"
    )
    parser.add_argument(
        "--split-windows",
        default="2,4,8,16",
        help="windows of the programmable split-node prototype ('' for none)",
    )
    parser.add_argument("--split-columns", type=int, default=128)
    args = resources.parse_args_with_cap(parser)
    digest = source_digest()
    started = time.perf_counter()
    fmax = set(filter(None, args.fmax.split(",")))
    rows = []
    for window in filter(None, args.split_windows.split(",")):
        rows.append({**measure_split(args.split_columns, int(window)), "rtl_digest": digest})
    for point in filter(None, args.points.split(",")):
        branches, depth = (int(x) for x in point.split("x"))
        texts = twig_texts(branches, depth)
        queries = [parse_query(t, i + 1) for i, t in enumerate(texts)]
        for label, chosen in ((f"trunks {point}", [trunk(q) for q in queries]), (point, queries)):
            row = measure(label, chosen, label in fmax)
            row.update({"nested_paths": branches, "nested_depth": depth, "rtl_digest": digest})
            rows.append(row)

    previous = RESULTS / "twigs.json"
    if previous.exists():  # rows of other sets are kept, and the measures of a row of
        # the same set and RTL that this run did not take (an Fmax from an earlier run)
        old = {r["set"]: r for r in json.loads(previous.read_text())["rows"]}
        for i, row in enumerate(rows):
            if old.get(row["set"], {}).get("rtl_digest") == row["rtl_digest"]:
                rows[i] = {**old[row["set"]], **row}
        rows = replace_rows(list(old.values()), rows, key=lambda r: r["set"])

    for twig in rows:  # each point against its trunks (this run's or an earlier one's)
        base = next((r for r in rows if r["set"] == f"trunks {twig['set']}"), None)
        if base is None:
            continue
        if "stacks_lut6" in base and "stacks_lut6" in twig:
            added = twig["query_nodes"] - base["query_nodes"]
            twig["lut6_per_twig_node"] = round(
                (twig["stacks_lut6"] - base["stacks_lut6"]) / added, 3
            )
            twig["ff_per_twig_node"] = round((twig["engine_ff"] - base["engine_ff"]) / added, 3)
        if twig.get("ecp5_fmax_mhz") and base.get("ecp5_fmax_mhz"):
            twig["fmax_vs_trunks"] = round(twig["ecp5_fmax_mhz"] / base["ecp5_fmax_mhz"], 3)
    notes = (
        f"{COUNT} depth-{DEPTH} NITF twigs per point from `xpfilt gen-queries --dtd "
        f"nitf-2-5.dtd -n {COUNT} -d {DEPTH} --nested-paths B --nested-depth D --seed "
        f"{SEED}` (point BxD), each after its trunks (the same queries without predicates), "
        f"all optimizations on, serial readout. LUT6-eq: Yosys `synth_xilinx` as in "
        f"resources.py; 'stacks' = engine - front end (the plan's tags, no conditions); "
        f"'per path node' = the trunks' stacks / query nodes; 'per twig node' = (twig "
        f"stacks - trunk stacks) / (twig query nodes - trunk query nodes). Fmax: ECP5-85F, "
        f"nextpnr-ecp5 default seed, router1, target 100 MHz. Bytes/cycle: model, 100 "
        f"shared NITF documents back to back. RTL digest of this run {digest}; this run "
        f"{time.perf_counter() - started:.0f} s."
    )
    publish(
        "twigs",
        rows,
        [
            ("set", "set"),
            ("queries", "queries"),
            ("twig_queries", "twigs"),
            ("query_nodes", "query nodes"),
            ("nodes", "plan nodes"),
            ("columns", "columns"),
            ("twig_entries", "twig entries"),
            ("pending_bits", "pending bits (shared)"),
            ("clusters", "clusters"),
            ("engine_lut6", "engine LUT6-eq"),
            ("engine_ff", "FF (Xilinx)"),
            ("front_end_lut6", "front end LUT6-eq"),
            ("stacks_lut6", "stacks LUT6-eq"),
            ("lut6_per_node", "LUT6-eq / node"),
            ("stacks_lut6_per_node", "stacks LUT6-eq / node"),
            ("lut6_per_twig_node", "stacks LUT6-eq / twig node"),
            ("ff_per_twig_node", "FF / twig node"),
            ("split_span_max", "widest split span"),
            ("split_span_le4", "twigs within W=4"),
            ("split_window", "split window W"),
            ("config_bits_per_column", "config bits / column"),
            ("lut6_per_column", "LUT6-eq / column"),
            ("ff_per_column", "FF / column"),
            ("bytes_per_cycle", "bytes/cycle"),
            ("ecp5_fmax_mhz", "ECP5 Fmax MHz"),
            ("fmax_vs_trunks", "Fmax / trunks"),
            ("ecp5_lut4", "LUT4"),
            ("ecp5_dpr16x4", "DPR16X4"),
            ("ecp5_ff", "FF"),
            ("ecp5_critical_ns", "critical ns"),
            ("ecp5_critical_from", "critical from"),
            ("ecp5_critical_to", "to"),
            ("rtl_digest", "RTL digest"),
            ("ecp5_error", "error"),
        ],
        "Twig profiles in the custom engine: resources and Fmax",
        notes,
    )


if __name__ == "__main__":
    main()
