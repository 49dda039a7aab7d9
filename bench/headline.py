"""The README's headline numbers, generated from bench/results/*.json so they cannot drift.

``python bench/headline.py`` rewrites the table between the README's ``<!-- headline:begin -->``
and ``<!-- headline:end -->`` markers; ``--check`` exits with 1 if the README's table is not what
the results say (``tests/test_readme.py`` runs the same check). Each headline picks the current
row of one configuration from one result file (the last row that matches: a rerun of a
configuration replaces its row, see ``common.save``) and formats it; the row's file is named in
the table, where its command, RTL digest, commit and machine load are.
"""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

RESULTS = Path(__file__).resolve().parent / "results"
README = Path(__file__).resolve().parent.parent / "README.md"
BEGIN = "<!-- headline:begin -->"
END = "<!-- headline:end -->"


def rows(name: str) -> list[dict]:
    """The rows of ``results/NAME.json`` (a fuzz report is one row)."""
    doc = json.loads((RESULTS / f"{name}.json").read_text())
    return doc["rows"] if "rows" in doc else [doc]


def current(name: str, **match) -> dict:
    """The last row of ``results/NAME.json`` whose fields equal ``match`` (the current one)."""
    found = [r for r in rows(name) if all(r.get(k) == v for k, v in match.items())]
    if not found:
        raise LookupError(f"{name}.json has no row with {match}")
    return found[-1]


def _x(value: float) -> str:
    return f"{value:.1f}x"


def _software() -> str:
    s = [
        current("software_vs_yfilter_whole", queries=n)["whole_speedup"]
        for n in (1000, 10000, 100000)
    ]
    big = current("software_vs_yfilter_whole", queries=100000)
    return (
        f"{' / '.join(_x(v) for v in s)} faster, whole process; "
        f"{big['fast_peak_MB']:.0f} MB vs {big['yfilter_peak_MB'] / 1000:.1f} GB at 100k"
    )


def _reference() -> str:
    r = current("reference_throughput", workload="NITF (100 docs)", queries=2000)
    return f"{r['reference_MBps']:.1f} vs {r['lxml_MBps']:.1f} MB/s ({_x(r['speedup'])})"


def _resources() -> str:
    on = current("resources", part="engine", depth=8, queries=2000, config="all on")
    off = current(
        "resources",
        part="engine",
        depth=8,
        queries=2000,
        config="(1)(2)(3) off, prefix sharing on",
    )
    saved = 1 - on["lut6_eq"] / off["lut6_eq"]
    return (
        f"{on['lut6_per_node']:.2f} LUT6-eq per query node (Yosys synth_xilinx); "
        f"the optimizations (1)-(3) save {saved:.0%}"
    )


def _fmax(queries: int, readout: str) -> float:
    """ECP5 Fmax of the custom engine in fmax.py's timing harness, router1, clk unconstrained."""
    return current(
        "fmax", family="ecp5", queries=queries, readout=readout, router="router1", clock_pin=None
    )["fmax_mhz"]


def _fmax_1024() -> str:
    return (
        f"{_fmax(1024, 'serial'):.1f} MHz serial / {_fmax(1024, 'sparse'):.1f} MHz sparse "
        "readout (router1)"
    )


def _fmax_8000() -> str:
    f = {"fmax_mhz": _fmax(8000, "sparse")}
    t = current("throughput", queries=8000, readout="sparse", documents="NITF (100)", W=1)
    return (
        f"{f['fmax_mhz']:.1f} MHz at {t['bytes_per_cycle_streaming']:.3f} byte/cycle on NITF: "
        f"{f['fmax_mhz'] * t['bytes_per_cycle_streaming']:.0f} MB/s"
    )


def _board_custom() -> str:
    r = current("capacity", board="ulx3s-85f", kind="custom", clock_mhz=100.0, router="router1")
    return (
        f"{r['queries']:,} depth-{r['depth']} queries, sparse readout: "
        f"{r['fmax_mhz']:.1f} MHz against a 100 MHz constraint"
    )


def _board_programmable() -> str:
    routed = [
        r
        for r in rows("capacity")
        if r["board"] == "ulx3s-85f"
        and r["kind"] == "programmable"
        and r.get("clock_mhz") == 100.0
        and r.get("router") == "router1"
        and r.get("fmax_mhz")
    ]
    r = max(routed, key=lambda r: r["columns"])
    return (
        f"{r['columns']:,} generic columns ({r['queries_d4']:,} depth-4 / {r['queries_d8']:,} "
        f"depth-8 queries): {r['fmax_mhz']:.1f} MHz against a 100 MHz constraint"
    )


def _wide() -> str:
    w4 = current("wide_fmax", part="engine", W=4, queries=1024, router="router1")
    return (
        f"{w4['fmax_mhz']:.1f} MHz x 4 bytes/cycle = {w4['MB_per_s']:.1f} MB/s "
        f"({w4['fmax_mhz'] / _fmax(1024, 'serial'):.1%} of the one-byte engine's clock)"
    )


def _config_update() -> str:
    r = current("config_update", columns=4096)
    return (
        f"{r['add_one_total_ms']:.2f} ms from the changed file to the new configuration "
        f"({r['add_one_delta_bits']:,}-bit delta stream); full reload {r['full_reload_total_ms']:.1f} ms"
    )


def _fuzz() -> str:
    r = current("fuzz")
    c = r["counts"]
    return (
        f"{c['wellformed']:,} well-formed cases, {c['hostile']:,} hostile documents, "
        f"{c['config']:,} configuration streams, {c['rtl']:,} RTL streams: "
        f"{r['total_failures']} failures (commit {r['commit']})"
    )


@dataclass(frozen=True)
class Headline:
    what: str
    source: str  # the result file(s), for the reader
    value: Callable[[], str]


HEADLINES = [
    Headline(
        "`xpfilt filter` vs YFilter 1.0, 1k / 10k / 100k NITF queries",
        "software_vs_yfilter_whole",
        _software,
    ),
    Headline("reference filter vs lxml, 2,000 NITF queries", "reference_throughput", _reference),
    Headline("custom engine, 2,000 depth-8 queries", "resources", _resources),
    Headline("custom engine Fmax, ECP5-85F, 1,024 queries", "fmax", _fmax_1024),
    Headline(
        "custom engine, 8,000 queries, sparse readout, ECP5-85F", "fmax, throughput", _fmax_8000
    ),
    Headline("largest custom set at 100 MHz, ULX3S-85F board build", "capacity", _board_custom),
    Headline(
        "largest programmable engine at 100 MHz, ULX3S-85F board build",
        "capacity",
        _board_programmable,
    ),
    Headline("W-byte front end, W = 4, 1,024 queries, ECP5-85F", "wide_fmax", _wide),
    Headline(
        "one profile added to 4,096 loaded programmable columns", "config_update", _config_update
    ),
    Headline("`make fuzz`", "fuzz", _fuzz),
]


def table() -> str:
    """The headline table, Markdown."""
    lines = ["| what | result | from `bench/results/` |", "|---|---|---|"]
    for h in HEADLINES:
        files = ", ".join(f"`{s.strip()}`" for s in h.source.split(","))
        lines.append(f"| {h.what} | {h.value()} | {files} |")
    return "\n".join(lines)


def with_table(readme: str) -> str:
    """``readme`` with the table between the markers replaced by :func:`table`."""
    start = readme.index(BEGIN) + len(BEGIN)
    end = readme.index(END)
    return readme[:start] + "\n" + table() + "\n" + readme[end:]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="exit 1 if README.md is stale")
    args = parser.parse_args()
    text = README.read_text()
    fresh = with_table(text)
    if args.check:
        if fresh != text:
            print(
                "README.md's headline table is stale: run python bench/headline.py", file=sys.stderr
            )
            sys.exit(1)
        return
    README.write_text(fresh)
    print(f"wrote the headline table into {README}", file=sys.stderr)


if __name__ == "__main__":
    main()
