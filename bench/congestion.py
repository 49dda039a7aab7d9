"""Where a placed design's routing demand concentrates, and which nets make it: a RUDY estimate
(rectangular uniform wire density) over nextpnr's placed netlist (``fmax.py --no-route`` keeps it
in the cache), without routing.

Every net except the global clock spreads its estimated wirelength (half the perimeter of the
bounding box of its cells' tiles, times a factor that grows with its pin count, as a Steiner tree
does) evenly over that box. The *hot* tiles are the top ``--hot`` fraction by demand; each net
group (its name with numbers replaced by ``N``, up to the first ``$``) is charged the demand it
puts on the hot tiles, and its share of the whole estimated wirelength. Also: the logic cells
on the hot tiles. Demand is in wire-tile units: compare rows of one design, not with a device's
routing capacity.

Usage: python bench/congestion.py PLACED.json [--hot 0.05] [--top 25] [--name NAME]
(saves bench/results/congestion_NAME.{json,md})
"""

from __future__ import annotations

import argparse
import json
import re
from collections import Counter, defaultdict
from pathlib import Path

import numpy as np
from common import save

BEL = re.compile(r"X(\d+)/Y(\d+)/")


def steiner_factor(pins: int) -> float:
    """How much longer than the half perimeter a ``pins``-pin net's tree is (1 up to 3 pins,
    ~2.8 at 50, then growing linearly)."""
    if pins <= 3:
        return 1.0
    if pins <= 50:
        return 1.0 + 1.79 * ((pins - 3) / 47) ** 0.8
    return 2.79 + 0.026 * (pins - 50)


def group_of(name: str) -> str:
    """A net's group: its hierarchical name up to the first ``$`` or tool suffix, digits as N."""
    name = name.replace("engine.engine.", "")
    name = re.split(r"\$|_TRELLIS|_LUT4|_PFUMX|_L6MUX|_CCU2|_DPR", name)[0]
    return re.sub(r"\d+", "N", name)


def analyse(path: Path, hot: float, top: int) -> dict:
    design = json.loads(path.read_text())
    module = next(m for m in design["modules"].values() if m.get("attributes", {}).get("top"))
    where = {}
    kinds = defaultdict(Counter)  # tile -> cell types
    pins = defaultdict(set)  # net bit -> tiles
    for name, cell in module["cells"].items():
        found = BEL.match(cell.get("attributes", {}).get("NEXTPNR_BEL", ""))
        if not found:
            continue
        tile = (int(found[1]), int(found[2]))
        where[name] = tile
        kinds[tile][cell["type"]] += 1
        for bits in cell["connections"].values():
            for bit in bits:
                if isinstance(bit, int):
                    pins[bit].add(tile)
    names = {}
    for name, net in module["netnames"].items():
        for bit in net["bits"]:
            if isinstance(bit, int) and (bit not in names or len(name) < len(names[bit])):
                names[bit] = name
    width = 1 + max(x for x, _ in where.values())
    height = 1 + max(y for _, y in where.values())
    diff = np.zeros((height + 1, width + 1))
    boxes = []
    for bit, tiles in pins.items():
        name = names.get(bit, "?")
        if len(tiles) < 2 or name == "clk" or "$glbnet$" in name:
            continue
        xs = [x for x, _ in tiles]
        ys = [y for _, y in tiles]
        x0, x1, y0, y1 = min(xs), max(xs), min(ys), max(ys)
        w, h = x1 - x0 + 1, y1 - y0 + 1
        density = (w + h) * steiner_factor(len(tiles)) / (w * h)
        diff[y0, x0] += density
        diff[y0, x1 + 1] -= density
        diff[y1 + 1, x0] -= density
        diff[y1 + 1, x1 + 1] += density
        boxes.append((name, x0, x1, y0, y1, density))
    demand = diff.cumsum(0).cumsum(1)[:height, :width]
    used = demand[demand > 0]
    threshold = np.quantile(used, 1 - hot)
    hot_mask = demand >= threshold
    area = np.zeros((height + 1, width + 1))
    area[1:, 1:] = hot_mask.cumsum(0).cumsum(1)
    charged = Counter()  # demand on the hot tiles
    wire = Counter()  # estimated wirelength anywhere
    for name, x0, x1, y0, y1, density in boxes:
        group = group_of(name)
        wire[group] += density * (x1 - x0 + 1) * (y1 - y0 + 1)
        tiles = area[y1 + 1, x1 + 1] - area[y0, x1 + 1] - area[y1 + 1, x0] + area[y0, x0]
        if tiles:
            charged[group] += density * tiles
    total = sum(charged.values())
    total_wire = sum(wire.values())
    hot_cells = Counter()
    for tile in zip(*np.nonzero(hot_mask)):
        hot_cells.update(kinds.get((int(tile[1]), int(tile[0])), {}))
    ys, xs = np.nonzero(hot_mask)
    return {
        "design": path.name,
        "tiles": f"{width} x {height}",
        "mean_demand": round(float(used.mean()), 2),
        "hot_threshold": round(float(threshold), 2),
        "max_demand": round(float(demand.max()), 2),
        "hot_tiles": int(hot_mask.sum()),
        "hot_box": f"X {xs.min()}-{xs.max()}, Y {ys.min()}-{ys.max()}",
        "hot_cells": dict(hot_cells.most_common()),
        "groups": [
            {
                "group": g,
                "hot_demand": round(float(d), 1),
                "share": round(float(d / total), 3),
                "wirelength_share": round(float(wire[g] / total_wire), 3),
            }
            for g, d in charged.most_common(top)
        ],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("placed", type=Path)
    parser.add_argument("--hot", type=float, default=0.05, help="fraction of tiles called hot")
    parser.add_argument("--top", type=int, default=25, help="net groups listed")
    parser.add_argument("--name", default=None, help="results file suffix")
    args = parser.parse_args()
    result = analyse(args.placed, args.hot, args.top)
    summary = {k: v for k, v in result.items() if k != "groups"}
    print(json.dumps(summary, indent=1))
    for row in result["groups"]:
        print(
            f"{row['share']:6.1%} {row['hot_demand']:10.1f} {row['wirelength_share']:6.1%}  "
            f"{row['group']}"
        )
    if args.name:
        notes = (
            " ".join(f"{k}: {v}." for k, v in summary.items())
            + " Demand: RUDY wire-tile units (see bench/congestion.py)."
        )
        save(
            f"congestion_{args.name}",
            result["groups"],
            [
                ("group", "net group"),
                ("hot_demand", "demand on hot tiles"),
                ("share", "share of hot demand"),
                ("wirelength_share", "share of wirelength"),
            ],
            f"Placement congestion estimate: {args.name}",
            notes,
        )


if __name__ == "__main__":
    main()
