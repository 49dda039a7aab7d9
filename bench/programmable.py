"""The programmable engine: configuration-generation time, resources per column and the ratio to
the custom engine on the same query set, and Fmax on an ECP5-85F.

* Configuration bits for 256 ... 32,768 columns (clusters of 128, a dictionary of 127 tags up to
  24 bytes) from depth-8 NITF queries generated from the DTD. Goal: a full device of 32,768
  columns in <= 1 s.
* Yosys synth_xilinx of the programmable engine (1 and 8 clusters of 128 columns, tags up to 16
  bytes, a dictionary of 31 tags; 8 x 128 with 127 and 1 x 128 with 15 tags too) and of the
  custom engine compiled for exactly the queries configured into it; the paper: the programmable
  engine needs ~7x the resources of the custom one (up to 12x); goal (issue 16) <= 2x.
* Where the LUT6-eq go: the same synthesis without -flatten at 1 and 8 clusters of 128 columns
  (127 tags), Yosys ``stat`` per module (tag decoder, front end, loader, readout, one cluster,
  the top's trees and glue): ``part`` rows.
* nextpnr Fmax of the 1 x 128 programmable engine on an ECP5-85F (``--no-fmax``: skipped).

Saved to bench/results/programmable.{json,md}. Reuses resources.py / fmax.py's cached tool runs.
"""

from __future__ import annotations

import json
import sys
import time

from common import publish
from fmax import run_point
from resources import CACHE, XILINX, log, source_digest, xilinx_counts, yosys_synth

from xpfilt import workloads
from xpfilt.compiler.custom import compile_queries
from xpfilt.compiler.programmable import HardwareSpec, configure
from xpfilt.hdl.verilog import TOP_NAME, emit_programmable_verilog, emit_verilog
from xpfilt.lang.xpath import parse_query
from xpfilt.paths import shared_data


def generated_queries(count: int):
    schema = workloads.DtdSchema.load(shared_data() / "nitf/nitf-2-5.dtd")
    texts = workloads.generate_queries(
        schema,
        workloads.QueryGenConfig(
            count=count, max_depth=8, p_wildcard=0.15, p_descendant=0.15, seed=7
        ),
    )
    return [parse_query(t, i + 1) for i, t in enumerate(texts)]


#: The engine's parts (its Verilog modules) for the breakdown rows.
PARTS = {
    "xpfilt_engine.decoder": "tag decoder",
    "xpfilt_engine.front_end": "front end",
    "xpfilt_engine.loader": "loader",
    "xpfilt_engine.readout": "readout",
    "xpfilt_prog_cluster": "cluster (each)",
}


def part_rows(spec: HardwareSpec) -> list[dict]:
    """LUT6-eq and flip-flops of each part of the programmable engine (synth_xilinx without
    -flatten: Yosys ``stat`` per module; the rest is the top's glue and distribution trees)."""
    label = (
        f"programmable {spec.clusters}x{spec.columns}, {spec.tags} tags, readout group "
        f"{spec.readout_group}, by module"
    )
    result = yosys_synth(
        emit_programmable_verilog(spec),
        TOP_NAME,
        XILINX.replace("-flatten ", ""),
        label=label,
        extra_outputs=("stat.json",),
    )
    modules = json.loads((CACHE / f"{result['key']}.stat.json").read_text())["modules"]
    rows = []
    for module, part in [
        (f"\\{TOP_NAME}", "top (trees, glue)"),
        *((f"\\{name}", part) for name, part in PARTS.items()),
    ]:
        counts = xilinx_counts(modules[module]["num_cells_by_type"])
        rows.append(
            {
                "what": "part",
                "columns": spec.clusters * spec.columns,
                "tags": spec.tags,
                "readout_group": spec.readout_group,
                "part": part,
                "prog_lut6_eq": counts["lut6_eq"],
                "prog_lut6_eq_per_column": round(counts["lut6_eq"] / spec.columns, 2)
                if part == "cluster (each)"
                else None,
                "prog_ff": counts["ffs"],
                "prog_bram": counts["bram"],
            }
        )
    return rows


def main() -> None:
    start_all = time.perf_counter()
    digest = source_digest()
    queries = generated_queries(8000)
    rows = []
    for columns in (256, 1024, 4096, 32768):
        spec = HardwareSpec(clusters=columns // 128, columns=128, max_tag_len=24, tags=127)
        start = time.perf_counter()
        configuration = configure(queries, spec)
        stream = configuration.stream()
        seconds = time.perf_counter() - start
        rows.append(
            {
                "what": "configuration",
                "columns": columns,
                "queries_configured": len(configuration.readout_bit),
                "bits": len(stream) * 8,
                "seconds": round(seconds, 3),
                "load_ms_at_100MHz": round(len(stream) * 8 / 100e6 * 1e3, 2),
            }
        )
        log(f"configure {columns} columns: {seconds:.3f} s, {len(stream) * 8} bits")

    for clusters, tags, group in (
        (1, 31, 1),
        (8, 31, 1),
        (8, 127, 1),
        (1, 15, 1),
        (1, 31, 4),
        (8, 127, 2),
        (8, 127, 4),
        (8, 127, 8),
    ):
        spec = HardwareSpec(
            clusters=clusters, columns=128, max_tag_len=16, tags=tags, readout_group=group
        )
        configuration = configure(queries, spec)
        placed = [q for q in queries if q.number in configuration.readout_bit]
        nodes = sum(len(q) for q in placed)
        prog = xilinx_counts(
            yosys_synth(
                emit_programmable_verilog(spec),
                TOP_NAME,
                XILINX,
                label=f"programmable {clusters}x128, {tags} tags, readout group {group}",
            )["cells"]
        )
        plan = compile_queries(placed)
        custom = xilinx_counts(
            yosys_synth(
                emit_verilog(plan),
                TOP_NAME,
                XILINX,
                label=f"custom for the same {len(placed)} queries",
            )["cells"]
        )
        row = {
            "what": "resources",
            "columns": clusters * 128,
            "tags": tags,
            "readout_group": group,
            "queries_configured": len(placed),
            "query_nodes": nodes,
            "prog_lut6_eq": prog["lut6_eq"],
            "prog_ff": prog["ffs"],
            "prog_lut6_eq_per_column": round(prog["lut6_eq"] / (clusters * 128), 2),
            "prog_bram": prog["bram"],
            "custom_lut6_eq": custom["lut6_eq"],
            "custom_ff": custom["ffs"],
            "ratio": round(prog["lut6_eq"] / custom["lut6_eq"], 2),
            "rtl_digest": digest,
        }
        rows.append(row)
        log(
            f"{clusters}x128, {tags} tags, readout group {group}: programmable {prog['lut6_eq']} LUT6-eq vs custom "
            f"{custom['lut6_eq']} -> {row['ratio']}x"
        )

    for clusters, group in ((1, 1), (8, 1), (8, 4)):
        rows += [
            {**row, "rtl_digest": digest}
            for row in part_rows(
                HardwareSpec(
                    clusters=clusters, columns=128, max_tag_len=16, tags=127, readout_group=group
                )
            )
        ]

    if "--no-fmax" not in sys.argv:
        spec = HardwareSpec(clusters=1, columns=128, max_tag_len=16)
        point = run_point(
            "ecp5",
            128,
            emit_programmable_verilog(spec),
            {"query_nodes": 0, "columns": 128, "clusters": 1},
        )
        rows.append(
            {
                "what": "fmax",
                "columns": 128,
                "fmax_mhz": point.get("fmax_mhz"),
                "lut4": point.get("lut4"),
                "ff": point.get("ff"),
                "error": point.get("error"),
            }
        )
    publish(
        "programmable",
        rows,
        [
            ("what", "measure"),
            ("columns", "columns"),
            ("tags", "tags"),
            ("readout_group", "columns per readout bit"),
            ("part", "part"),
            ("queries_configured", "queries"),
            ("bits", "config bits"),
            ("seconds", "generation s"),
            ("load_ms_at_100MHz", "load ms @100 MHz"),
            ("query_nodes", "query nodes"),
            ("prog_lut6_eq", "programmable LUT6-eq"),
            ("prog_lut6_eq_per_column", "per column"),
            ("prog_bram", "programmable block RAM"),
            ("custom_lut6_eq", "custom LUT6-eq (same queries)"),
            ("ratio", "ratio"),
            ("prog_ff", "programmable FF"),
            ("fmax_mhz", "Fmax MHz (ECP5-85F)"),
            ("lut4", "LUT4"),
            ("ff", "FF"),
            ("error", "error"),
            ("rtl_digest", "RTL"),
        ],
        "Programmable engine: configuration time, resources vs custom, Fmax",
        "Configuration: queries placed on clusters of 128 columns (a dictionary of 127 tags up to "
        "24 bytes), stream with header and CRC-32. Resources: Yosys synth_xilinx, LUT6-eq as in "
        "resources.md, tags up to 16 bytes; the custom engine is compiled for exactly the "
        "queries the programmable one holds. Paper: ~7x (up to 12x); goal (issue 16) <= 2x. "
        "Stream format 4: one tag dictionary for the engine, a tag matrix per cluster (read "
        "synchronously: block RAM when it is deep enough, not counted in LUT6-eq; LUT-RAM with "
        "31 tags before format 7), presence bits (delta streams). Format 7: the matrix has a "
        "root half (rows by tag index and level 1) that holds the first step's '/' or '//', "
        "and the match flags take the diagonal move only: per column two LUTs (LUT6 new row, "
        "LUT5 flag) instead of three, 2 flags instead of 3 (cluster 479 -> 352 LUT6-eq, "
        "1,281 -> 1,025 FF at 127 tags); twice the matrix bits in the stream. "
        "Before: format 2/3, a dictionary and a LUT-RAM matrix per cluster: 15.5 LUT6-eq per "
        "column, 3.03x at 1 x 128; 11.2, 6.64x at 8 x 128; a tag entry per column before "
        "format 2: 24.8, 3.74x at 1 x 128. Part rows: synth_xilinx without -flatten (a few "
        "% more than flattened), per Verilog module; per column of a cluster. "
        "Issue 16, fourth session: the serial readout's chunks load from the flags only and the "
        "next chunk comes through a registered tree of 4:1 multiplexers (1,024-bit readout "
        "1,121 -> 490 LUT6-eq; the custom engine's readout is the same component); readout "
        "groups ('columns per readout bit' N > 1, HardwareSpec.readout_group): one match flag "
        "and readout bit per N columns, the column chosen by a configured answer select "
        "(128-column cluster 352 -> 289 LUT6-eq at N = 4, readout 490 -> 226 at 1,024 "
        "columns), at most one query ending per group, so short queries skip columns and at "
        "most columns / N queries fit (the custom engine is then compiled for fewer queries). "
        "Fifth session, stream format 10: the tag decoder's block RAMs hold per name position a "
        "row per value of the byte's high nibble and one per value of its low nibble (which "
        "entries have it there), so an entry's byte comparison is the AND of two RAM bits in "
        "its 'still' LUT (a LUT3 per entry, restart and advance on the flip-flop's set and "
        "enable): tag decoder 940 -> 287 LUT6-eq, 2,788 -> 907 FF at 127 tags (16 RAMB36E1 -> "
        "16 RAMB18E1); 4x the dictionary's stream bits. "
        + ("Fmax not run (--no-fmax). " if "--no-fmax" in sys.argv else "")
        + f"Total {time.perf_counter() - start_all:.0f} s.",
    )


if __name__ == "__main__":
    main()
