"""The cost of split nodes in the programmable engine (issue 14): LUT6-eq and flip-flops per
column with a twig width W against the same engine without (W = 0, the hardware before split
nodes, bit for bit).

Yosys ``synth_xilinx`` (LUT6-eq as in ``resources.py``) of the programmable engine with clusters
of 128 columns, tags up to 16 bytes, 31 tags, S comparator slots and twig width W, at 1 x 128
and 2 x 128 columns: per column = (2 x 128 - 1 x 128) / 128, for (S, W) in (0, 0), (0, 4),
(8, 0), (8, 4). Without slots and W = 0 the columns have no closing logic at all; a twig width
adds it (the closes and anchor flags, the pending bits, the closing row's read) plus the W
children bits and the W-input AND per column; with 8 slots the closing logic is there already
and W = 4 adds the children only. The prototype estimate before split nodes were built
(bench/twigs.py): 4.5 LUT6-eq and 7 flip-flops per column at W = 4.

Saved to bench/results/split_nodes.{json,md} with the RTL digest.
Usage: python bench/split_nodes.py [--widths 4] [--slots 0,8]
"""

from __future__ import annotations

import argparse
import time

from common import publish
from resources import XILINX, log, source_digest, yosys_synth

from xpfilt.compiler.programmable import HardwareSpec
from xpfilt.eda.synth import xilinx_counts
from xpfilt.hdl.verilog import TOP_NAME, emit_programmable_verilog


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--widths", default="4", help="twig widths beside 0, comma-separated")
    parser.add_argument("--slots", default="0,8", help="comparator slots, comma-separated")
    args = parser.parse_args()
    started = time.perf_counter()
    digest = source_digest()
    widths = [0] + [int(w) for w in args.widths.split(",")]
    rows, per_column = [], {}
    for slots in (int(s) for s in args.slots.split(",")):
        for width in widths:
            counts = {}
            for clusters in (1, 2):
                spec = HardwareSpec(
                    clusters=clusters,
                    columns=128,
                    max_tag_len=16,
                    tags=31,
                    slots=slots,
                    twig_width=width,
                )
                result = yosys_synth(
                    emit_programmable_verilog(spec),
                    TOP_NAME,
                    XILINX,
                    label=f"programmable {clusters}x128, {slots} slots, W={width}",
                )
                if result["error"] is None:
                    counts[clusters] = xilinx_counts(result["cells"])
                else:
                    rows.append(
                        {
                            "slots": slots,
                            "twig_width": width,
                            "clusters": clusters,
                            "rtl_digest": digest,
                            "error": result["error"],
                        }
                    )
            if len(counts) == 2:
                lut = (counts[2]["lut6_eq"] - counts[1]["lut6_eq"]) / 128
                ff = (counts[2]["ffs"] - counts[1]["ffs"]) / 128
                per_column[slots, width] = lut, ff
                base = per_column.get((slots, 0))
                rows.append(
                    {
                        "slots": slots,
                        "twig_width": width,
                        "lut6_eq_1x128": counts[1]["lut6_eq"],
                        "lut6_eq_2x128": counts[2]["lut6_eq"],
                        "lut6_eq_per_column": round(lut, 2),
                        "ff_per_column": round(ff, 2),
                        "lut6_eq_growth": round(lut - base[0], 2) if base else None,
                        "ff_growth": round(ff - base[1], 2) if base else None,
                        "stream_bits": spec.stream_bits,
                        "rtl_digest": digest,
                    }
                )
                log(f"split nodes: {rows[-1]}")
    publish(
        "split_nodes",
        rows,
        [
            ("slots", "slots"),
            ("twig_width", "twig width W"),
            ("clusters", "clusters"),
            ("lut6_eq_1x128", "LUT6-eq 1 x 128"),
            ("lut6_eq_2x128", "LUT6-eq 2 x 128"),
            ("lut6_eq_per_column", "LUT6-eq / column"),
            ("ff_per_column", "FF / column"),
            ("lut6_eq_growth", "LUT6-eq / column over W = 0"),
            ("ff_growth", "FF / column over W = 0"),
            ("stream_bits", "stream bits (2 x 128)"),
            ("rtl_digest", "RTL digest"),
            ("error", "error"),
        ],
        "Split nodes in the programmable engine: LUT6-eq and flip-flops per column",
        "Yosys synth_xilinx (LUT6-eq as in resources.md) of the programmable engine, clusters "
        "of 128 columns, tags up to 16 bytes, 31 tags; per column = (2 x 128 - 1 x 128) / 128. "
        "Twig width 0 is the hardware without split nodes. Prototype estimate before they were "
        "built (bench/twigs.py): +4.5 LUT6-eq and +7 FF per column at W = 4. "
        f"This run {time.perf_counter() - started:.0f} s.",
    )


if __name__ == "__main__":
    main()
