"""Which register-to-register paths of a placed (not routed) ECP5 design are long, and why: a
ranking over nextpnr's placed netlist (``fmax.py --no-route`` keeps it in the cache), for when
nextpnr's post-placement estimate says only the slowest clock's frequency.

Each path's delay is estimated as nextpnr-ecp5 predicts an unrouted arc (``Arch::predictDelay``:
120 ps x (6 + max(dx - 5, 0) + max(dy - 5, 0) + 2 (min(dx, 5) + min(dy, 5))) for a distance of
dx, dy tiles; 0 along a carry chain) plus :data:`LUT_NS` per logic cell and :data:`CLK_Q_NS` at
the start. The scale is rougher than nextpnr's (it ignores the cells' own timing), so compare the
paths of one design, not the ns with nextpnr's estimate. A DCCA's net (a global: the clock,
the boards' reset) costs nothing, as nextpnr times a routed global. Paths are grouped by
(start, end) net group (as in ``congestion.py``); the worst of each group is printed with its
cells' tiles. Paths from I/O pins and constant drivers are skipped (nextpnr does not time them
against the clock).

With ``--report`` (a routed netlist and nextpnr's report with ``--detailed-timing-report``, as
``fmax.py`` / ``predicates.py --keep-routed`` keep them): each endpoint's routed arrival from
the report instead (nextpnr's own times, clock to output included, setup not), the start and
the hops of its group's worst still traced over the estimates.

Usage: python bench/placed_paths.py PLACED.json [--report REPORT.json] [--top 25] [--min-ns 0]
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import Counter
from pathlib import Path

from congestion import BEL, group_of

#: Estimated delay of a logic cell (LUT, carry, LUT-RAM read) and a flip-flop's clock to output.
LUT_NS = 0.4
CLK_Q_NS = 0.5
#: Inputs through which a TRELLIS_COMB / TRELLIS_RAMW cell is combinational.
COMB_INPUTS = {
    "A",
    "B",
    "C",
    "D",
    "M",
    "FXA",
    "FXB",
    "FCI",
    "A0",
    "B0",
    "C0",
    "D0",
    "A1",
    "B1",
    "C1",
    "D1",
    "F1",
}
#: Inputs that end a path: flip-flop data, enable, set/reset; LUT-RAM write side.
ENDPOINTS = {
    "TRELLIS_FF": {"DI", "M", "CE", "LSR"},
    "TRELLIS_COMB": {"WAD0", "WAD1", "WAD2", "WAD3", "WD", "WRE", "DI0", "DI1"},
}
SOURCES = {"TRELLIS_FF", "TRELLIS_IO", "DCCA"}
#: Setup times added to routed arrivals (nextpnr-ecp5's critical path reports: 0.42 ns for a
#: flip-flop's LSR, none for DI and M).
ROUTED_SETUP_NS = {"LSR": 0.424}


def arc_ns(a: tuple[int, int], b: tuple[int, int]) -> float:
    """nextpnr-ecp5's predicted delay of an unrouted arc between tiles ``a`` and ``b``."""
    dx, dy = abs(a[0] - b[0]), abs(a[1] - b[1])
    return 0.12 * (6 + max(dx - 5, 0) + max(dy - 5, 0) + 2 * (min(dx, 5) + min(dy, 5)))


def routed_arrivals(report: Path) -> dict:
    """{(cell, port): ns}: each endpoint's latest arrival from the clock in nextpnr's detailed
    timing report. An endpoint that the reset pin reaches too is listed twice, the clock's
    launch first (nextpnr 0.11 names only a net's first launch); nets launched by the pins
    alone (``<async>``) are left out."""
    arrivals = {}
    for net in json.loads(report.read_text()).get("detailed_net_timings", []):
        if net.get("event", "").startswith("<async>"):
            continue
        for end in net["endpoints"]:
            delay = end["delay"]
            arrivals.setdefault(
                (end["cell"], end["port"]), float(max(delay) if isinstance(delay, list) else delay)
            )
    if not arrivals:
        raise SystemExit(f"{report}: no detailed net timings (nextpnr --detailed-timing-report)")
    return arrivals


def rank(path: Path, top: int, min_ns: float, routed: dict | None = None) -> list[dict]:
    """The worst path of each (start, end) group, longest first; ``routed``
    (:func:`routed_arrivals`): the endpoints' arrivals from it, not estimated."""
    design = json.loads(path.read_text())
    module = next(m for m in design["modules"].values() if m.get("attributes", {}).get("top"))
    cells = module["cells"]
    where = {}
    for name, cell in cells.items():
        found = BEL.match(cell.get("attributes", {}).get("NEXTPNR_BEL", ""))
        if found:
            where[name] = (int(found[1]), int(found[2]))
    names = {}
    for name, net in module["netnames"].items():
        for bit in net["bits"]:
            if isinstance(bit, int) and (bit not in names or len(name) < len(names[bit])):
                names[bit] = name
    driver = {}
    for name, cell in cells.items():
        for port, bits in cell["connections"].items():
            if cell["port_directions"][port] == "output":
                for bit in bits:
                    if isinstance(bit, int):
                        driver[bit] = name

    def delay(src: str, dst: str, port: str) -> float:
        if port in ("FCI", "FXA", "FXB") or cells[src]["type"] == "DCCA":
            return 0.0
        return arc_ns(where.get(src, (0, 0)), where.get(dst, (0, 0)))

    arrival: dict[str, tuple[float, object]] = {}
    sys.setrecursionlimit(max(10_000, 4 * len(cells)))

    def arrive(name: str) -> tuple[float, object]:
        """Latest arrival at ``name``'s output and the (driver, net bit) it comes through."""
        if name in arrival:
            return arrival[name]
        cell = cells[name]
        if cell["type"] in SOURCES:
            arrival[name] = (CLK_Q_NS, None)
            return arrival[name]
        arrival[name] = (0.0, None)  # breaks combinational loops, if any
        best = (0.0, None)
        for port, bits in cell["connections"].items():
            if cell["port_directions"][port] != "input" or port not in COMB_INPUTS:
                continue
            for bit in bits:
                src = driver.get(bit) if isinstance(bit, int) else None
                if (
                    src is None or src.startswith("$PACKER") or cells[src]["type"] == "TRELLIS_IO"
                ):  # not timed from the clock
                    continue
                t = arrive(src)[0] + delay(src, name, port)
                if t > best[0]:
                    best = (t, (src, bit))
        arrival[name] = (best[0] + LUT_NS, best[1])
        return arrival[name]

    ends = []
    for name, cell in cells.items():
        for port, bits in cell["connections"].items():
            if port not in ENDPOINTS.get(cell["type"], ()):
                continue
            for bit in bits:
                src = driver.get(bit) if isinstance(bit, int) else None
                if src is None or src.startswith("$PACKER") or cells[src]["type"] == "TRELLIS_IO":
                    continue
                if routed is None:
                    t = arrive(src)[0] + delay(src, name, port)
                elif (name, port) in routed:
                    t = routed[name, port] + ROUTED_SETUP_NS.get(port, 0.0)
                    arrive(src)  # for the trace of its start
                else:
                    continue
                ends.append((t, name, port, src, bit))
    ends.sort(reverse=True)
    groups = Counter()
    worst = {}
    for t, name, port, src, bit in ends:
        hops, cur = [], src
        while True:
            through = arrival.get(cur, (0.0, None))[1]
            if not through:
                break
            hops.append(
                {
                    "net": group_of(names.get(through[1], "?")),
                    "from": where.get(through[0]),
                    "to": where.get(cur),
                }
            )
            cur = through[0]
        key = (group_of(cur), group_of(name))
        if cells[cur]["type"] == "TRELLIS_IO":
            continue
        groups[key] += 1
        if key not in worst:
            worst[key] = {
                "ns": round(t, 2),
                "start": key[0],
                "start_tile": where.get(cur),
                "end": f"{key[1]}.{port}",
                "end_tile": where.get(name),
                "levels": len(hops),
                "hops": hops[::-1],
            }
    rows = [dict(w, endpoints=groups[k]) for k, w in worst.items() if w["ns"] >= min_ns]
    rows.sort(key=lambda r: -r["ns"])
    return rows[:top]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("placed", type=Path)
    parser.add_argument(
        "--report",
        type=Path,
        default=None,
        help="nextpnr's report with detailed net timings: routed arrivals",
    )
    parser.add_argument("--top", type=int, default=25)
    parser.add_argument("--min-ns", type=float, default=0.0)
    args = parser.parse_args()
    routed = routed_arrivals(args.report) if args.report else None
    for row in rank(args.placed, args.top, args.min_ns, routed):
        print(
            f"{row['ns']:6.2f} ns  {row['start']} {row['start_tile']} -> {row['end']} "
            f"{row['end_tile']}  ({row['levels']} logic levels, {row['endpoints']} endpoints "
            f"in this group)"
        )
        for hop in row["hops"]:
            print(f"           via {hop['net']}: {hop['from']} -> {hop['to']}")


if __name__ == "__main__":
    main()
