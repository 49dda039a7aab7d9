"""Ethernet boards placed and routed (issue 35's timing goal): per board and query count, the
whole board (LiteEth, the UDP endpoint, the FIFOs, a custom engine with sparse readout, LEDs),
its size and each clock's Fmax against its constraint, and what the link itself costs.

Builds are real board builds (:func:`xpfilt.boards.build.build_board` with ``--link
ethernet``: Yosys, nextpnr-ecp5 with its default router1 and seed, ecppack). Clocks: the
endpoint and the engine at 125 MHz (the PLL's CLKOP, the ``link`` and ``sync`` domains),
LiteEth's 32-bit datapath at 62.5 MHz (CLKOS, the ``eth`` domain), and the RGMII receive
clock from the PHY (125 MHz). A point with the W-byte engine (``BOARD:QUERIES:wW``, column
``beat_bytes``) clocks the engine at 125 / W MHz from a PLL output of its own (CLKOS2): its
beats are packed in the link domain, so it still takes the link's 125 MB/s. A row passes
when every clock meets its constraint.

The link's own resources: the board of the first point synthesized again with ``synth_ecp5
-noflatten`` and counted per module (LiteEth's core, the endpoint with its buffers, the
bridge to LiteEth's 32-bit port, the clock-domain FIFOs, the rest of the board core), so the
engine's share can be told apart.

Only one place and route runs at a time on the machine (``flock`` on :data:`LOCK`, shared with
the other helpers' runs; ``--lock PATH`` takes another lock, to run beside them); builds are cached in ``--work`` by board, queries and the digests
of the RTL and board sources, so an interrupted run resumes; a failed or timed-out build is a
row with its error. Results: bench/results/capacity.{json,md} (rows with ``link`` =
"ethernet"; the UART rows of bench/capacity.py are kept) and
bench/results/ethernet_link.{json,md}.

Usage: python bench/ethernet_capacity.py [--work DIR] [--point ecpix5-85f:1024 ...]
       [--point colorlight-5a75b:1024:w2 ...] [--timeout S] [--no-link-resources] [--lock PATH]
"""

from __future__ import annotations

import argparse
import fcntl
import json
import shutil
import subprocess
import time
from pathlib import Path

from capacity import COLUMNS, query_texts
from common import RESULTS, replace_rows, save
from resources import board_source_digest, source_digest

from xpfilt.boards.build import BuildConfig, build_board, custom_design
from xpfilt.compiler.custom import CompileOptions
from xpfilt.eda.synth import ToolError, count_cells, tool
from xpfilt.lang.xpath import parse_query

#: (board, query depth, queries) in the order they are built.
POINTS = [("ecpix5-85f", 8, 1024), ("colorlight-5a75b", 8, 1024), ("ecpix5-85f", 8, 8000)]
LOCK = Path("/tmp/pnr.lock")
ENGINE_MHZ = 125.0
ROUTER = "router1"  # nextpnr's default


def log(message: str) -> None:
    print(f"[ethernet {time.strftime('%H:%M:%S')}] {message}", flush=True)


def clock_role(name: str, constraint: float) -> str:
    """Which clock a nextpnr clock net is: ``rgmii`` (the PHY's receive clock), ``link`` (the
    endpoint's, and the engine's unless it has its own), ``eth`` (LiteEth's system clock) or
    ``engine`` (the W-byte engine's own clock)."""
    if "rgmii" in name:
        return "rgmii"
    if "link_clk" in name:
        return "link"
    if "liteeth" in name or "eth_clk" in name:  # (named after the bridge's port when it is)
        return "eth"
    return "engine" if "$glbnet$" in name else ("eth" if constraint < ENGINE_MHZ - 1 else "link")


def parse_point(text: str) -> tuple[str, int, int]:
    """``BOARD:QUERIES`` or ``BOARD:QUERIES:wW`` -> (board, queries, W)."""
    board, queries, *rest = text.split(":")
    width = int(rest[0].lstrip("w")) if rest else 1
    return board, int(queries), width


def build(
    work: Path,
    board: str,
    depth: int,
    queries: int,
    timeout: float,
    width: int = 1,
    lock_path: Path = LOCK,
) -> dict:
    """One Ethernet board build (cached) with the ``width``-byte engine; its row."""
    key = f"{source_digest()}-b{board_source_digest()}"
    name = f"{board}-eth-d{depth}-{queries}-sparse" + (f"-w{width}" if width > 1 else "")
    out = work / f"{name}-{key}"
    cached = out / "row.json"
    if cached.exists():
        log(f"{name}: cached")
        return json.loads(cached.read_text())
    row = {
        "board": board,
        "link": "ethernet",
        "kind": "custom",
        "depth": depth,
        "readout": "sparse",
        "queries": queries,
        "beat_bytes": width,
        "engine_clock_mhz": ENGINE_MHZ / width,
        "clock_mhz": ENGINE_MHZ,
        "clock_source": "PLL",
        "router": ROUTER,
        "rtl_digest": source_digest(),
        "board_digest": board_source_digest(),
    }
    start = time.perf_counter()
    try:
        texts = query_texts(depth, queries)
        design = custom_design(
            [parse_query(t, i + 1) for i, t in enumerate(texts)],
            CompileOptions(readout="sparse"),
            bytes_per_cycle=width,
        )
        log(f"{name}: waiting for {lock_path} ...")
        with open(lock_path, "w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            log(f"{name}: building in {out}")
            build_board(
                design,
                BuildConfig(board, out, link="ethernet", timeout=timeout),
                log=log,
            )
    except ToolError as exc:
        row["error"] = str(exc)[:300]
    row["seconds"] = round(time.perf_counter() - start, 1)
    report = out / "report.json"
    if report.exists():
        row.update(from_report(json.loads(report.read_text())))
    row["status"] = (
        "placed and routed" if row.get("fmax_mhz") else f"failed: {row.get('error', '?')[:80]}"
    )
    out.mkdir(parents=True, exist_ok=True)
    cached.write_text(json.dumps(row, indent=1) + "\n")
    return row


def from_report(report: dict) -> dict:
    """A row's size and timing fields from a build's report.json."""
    fit = report.get("fit") or {}
    row = {"luts": fit.get("luts"), "ffs": fit.get("ffs"), "bram": fit.get("bram")}
    pnr = report.get("pnr")
    if not pnr:
        return row
    util = {bel: tuple(map(int, share.split("/"))) for bel, share in pnr["utilization"].items()}
    used, available = util.get("TRELLIS_COMB", (0, 1))
    row.update(
        cells=used,
        cells_available=available,
        cell_share=round(used / available, 3),
        dp16kd=util.get("DP16KD", (None,))[0],
        pnr_seconds=round((report.get("times") or {}).get("nextpnr", 0)),
        meets_timing=report.get("meets_timing"),
    )
    clocks = []
    for net, achieved in sorted(pnr["clocks"].items()):
        constraint = pnr["constraints"][net]
        role = clock_role(net, constraint)
        row[f"fmax_{role}_mhz"] = round(achieved, 1)
        verdict = "pass" if achieved >= constraint else "FAIL"
        clocks.append(f"{role} {achieved:.1f} ({constraint:g}, {verdict})")
    row["fmax_mhz"] = row.get("fmax_link_mhz")
    if "fmax_engine_mhz" not in row:  # the engine on the link's clock
        row["fmax_engine_mhz"] = row.get("fmax_link_mhz")
    row["fmax_clocks"] = "; ".join(clocks)
    return row


#: The link's parts: (label, module name prefixes in the Yosys hierarchy).
LINK_PARTS = [
    ("LiteEth (MAC, ARP, IP, ICMP, UDP, RGMII PHY; 32 bits at 62.5 MHz)", ("xpfilt_liteeth",)),
    ("UDP endpoint (protocol, input and readout buffers)", ("xpfilt_board.core.endpoint",)),
    ("bridge: LiteEth's 32-bit port <-> bytes (2 AsyncFIFOs)", ("xpfilt_board.bridge",)),
    (
        "engine FIFOs (AsyncFIFO each way) and board glue",
        ("xpfilt_board.core.input_fifo", "xpfilt_board.core.readout_fifo", "xpfilt_board"),
    ),
]


def link_resources(
    build_dir: Path, work: Path, timeout: float, lock_path: Path = LOCK
) -> list[dict]:
    """The board of ``build_dir`` synthesized without flattening: LUTs, flip-flops and block
    RAMs per part of the link (:data:`LINK_PARTS`), the engine and the whole board."""
    gateware = build_dir / "gateware"
    synth = work / f"{build_dir.name}-noflatten"
    stat = synth / "stat.json"
    if not stat.exists():
        synth.mkdir(parents=True, exist_ok=True)
        for name in ("xpfilt_board.il", "xpfilt_engine.v", "xpfilt_liteeth.v"):
            shutil.copy(gateware / name, synth / name)
        script = (
            "read_verilog xpfilt_engine.v\nread_verilog xpfilt_liteeth.v\n"
            "read_rtlil xpfilt_board.il\nsynth_ecp5 -noflatten -top xpfilt_board\n"
            "tee -q -o stat.json stat -json\n"
        )
        (synth / "noflatten.ys").write_text(script)
        with open(lock_path, "w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            log(f"link resources: yosys -noflatten in {synth}")
            subprocess.run(
                ["nice", tool("yosys"), "-q", "-l", "yosys.log", "noflatten.ys"],
                cwd=synth,
                check=True,
                timeout=timeout,
                capture_output=True,
            )
    modules = json.loads(stat.read_text())["modules"]
    parts: dict[str, dict] = {}
    for module, info in modules.items():
        name = module.lstrip("\\")
        label = "engine (custom, sparse readout)"
        for part, prefixes in LINK_PARTS:  # the most specific prefix wins: the order above
            if any(name == p or name.startswith(p + ".") for p in prefixes):
                label = part
                break
        cells = {k: v for k, v in info.get("num_cells_by_type", {}).items() if "$" not in k}
        counts = count_cells("ecp5", cells)
        total = parts.setdefault(label, {"luts": 0, "ffs": 0, "bram": 0, "lutram": 0})
        for k in total:
            total[k] += counts[k]
    report = json.loads((build_dir / "report.json").read_text())
    rows = [{"part": label, **parts.get(label, {})} for label, _ in LINK_PARTS]
    link = {k: sum(r.get(k, 0) for r in rows) for k in ("luts", "ffs", "bram", "lutram")}
    rows.append({"part": "the link in all", **link})
    rows.append({"part": "engine (custom, sparse readout)", **parts.get(
        "engine (custom, sparse readout)", {})})  # fmt: skip
    for row in rows:
        row.update(board=report["board"], design=report["design"])
    return rows


ETHERNET_NOTE = (
    "Ethernet rows (link = ethernet, bench/ethernet_capacity.py): the whole board -- LiteEth "
    "(32-bit datapath at 62.5 MHz), the UDP endpoint and the engine at 125 MHz from one PLL, "
    "the RGMII clock 125 MHz -- with nextpnr's router1 and default seed; 'Fmax MHz' is the "
    "endpoint's and engine's clock, 'Fmax per clock' gives every clock against its "
    "constraint; LUTs/FFs from Yosys, logic cells and DP16KD from nextpnr."
)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--work", type=Path, default=Path("/tmp/ethernet_capacity"))
    parser.add_argument(
        "--point",
        action="append",
        default=[],
        help="BOARD:QUERIES (one of the points) or BOARD:QUERIES:wW (any board and size, the "
        "W-byte engine, W = 2, 4, 8)",
    )
    parser.add_argument(
        "--lock", type=Path, default=LOCK, help=f"The place-and-route lock [{LOCK}]."
    )
    parser.add_argument("--timeout", type=float, default=3600, help="Seconds per tool run.")
    parser.add_argument("--no-link-resources", action="store_true")
    args = parser.parse_args()
    points = [(board, depth, queries, 1) for board, depth, queries in POINTS]
    if args.point:
        depths = {board: depth for board, depth, _ in POINTS}
        points = [(b, depths.get(b, 8), q, w) for b, q, w in map(parse_point, args.point)]
    args.work.mkdir(parents=True, exist_ok=True)
    fresh = []
    for board, depth, queries, width in points:
        row = build(args.work, board, depth, queries, args.timeout, width, args.lock)
        log(f"{board} {queries} W={width}: {row['status']}; {row.get('fmax_clocks')}")
        fresh.append(row)
        fresh = save_capacity(fresh)
    if not args.no_link_resources:
        board, depth, queries = POINTS[0]
        key = f"{source_digest()}-b{board_source_digest()}"
        build_dir = args.work / f"{board}-eth-d{depth}-{queries}-sparse-{key}"
        if (build_dir / "report.json").exists():
            rows = link_resources(build_dir, args.work, args.timeout, args.lock)
            save(
                "ethernet_link",
                rows,
                [
                    ("board", "board"),
                    ("design", "design"),
                    ("part", "part"),
                    ("luts", "LUTs"),
                    ("ffs", "flip-flops"),
                    ("lutram", "LUT-RAM cells"),
                    ("bram", "DP16KD"),
                ],  # fmt: skip
                "What the Ethernet link costs: resources per part",
                "Yosys synth_ecp5 -noflatten of the board of bench/ethernet_capacity.py's first "
                "point, counted per module (LUTs include the 6 LUT positions of each LUT-RAM "
                "cell). The link = LiteEth + the endpoint + the bridge + the FIFOs and the "
                "board glue (PLL, reset synchronisers, LEDs).",
            )


def save_capacity(fresh: list) -> list:
    """The Ethernet rows into bench/results/capacity.json beside bench/capacity.py's rows;
    returns them as saved (with their provenance, so saving them again changes nothing)."""
    path = RESULTS / "capacity.json"
    doc = json.loads(path.read_text())

    def key(r):
        return (
            r["board"],
            r.get("link", "uart"),
            r["kind"],
            r.get("depth"),
            r.get("queries"),
            r.get("beat_bytes") or 1,
        )

    rows = replace_rows(doc["rows"], fresh, key)
    notes = doc["table"]["notes"].split(" Ethernet rows")[0]
    save(
        "capacity",
        rows,
        COLUMNS,
        doc["table"]["title"],
        f"{notes} {ETHERNET_NOTE}",
    )
    saved = {key(r): r for r in json.loads(path.read_text())["rows"]}
    return [saved[key(r)] for r in fresh]


if __name__ == "__main__":
    main()
