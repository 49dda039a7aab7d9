"""Board capacity: the largest custom and programmable designs that place and route on the
iCEBreaker (iCE40UP5K) and the ULX3S-85F (ECP5), with Fmax and throughput.

Everything is a real board build (:func:`xpfilt.boards.build.build_board`: engine + UART host link +
LEDs, the board's clock and pins; Yosys, nextpnr, pack). Per board and design kind:

1. two sizes: the smaller one placed and routed (its nextpnr logic cells per Yosys LUT give the
   packing ratio), the larger one synthesized only;
2. a line through the two (Yosys LUTs and flip-flops against size: a fixed part plus a part per
   query or column) predicts the size that fills :data:`FILL` of the device's logic cells (and
   flip-flops);
3. place and route confirms it, at the prediction on the iCE40 and at the size for 50 % of
   the device on the ECP5 (:data:`CONFIRM_FILL`); on failure the size steps down 12 % (up to
   two times); on the iCE40, where a run takes a minute, steps up of 8 % follow until one
   fails (up to four).

Custom engines: NITF queries of depth 4 and 8 (``nitf-d{4,8}-p15-n2000.txt``, then queries
generated from the NITF DTD with the same settings once 2,000 are not enough), compile options
as ``xpfilt build`` (all optimizations, stacks 16 deep). Programmable engines: clusters of
columns (tags up to 16 bytes, 16 deep, a dictionary of :data:`PROG_TAGS` tags); the queries of
each depth that their columns hold are counted with :func:`xpfilt.compiler.programmable.configure`.

Throughput: the engine takes one byte per cycle while documents are longer than the readout
(one cycle per readout bit, double-buffered), so on the 100 NITF documents it sustains
``sum(len) / sum(max(len, width))`` bytes per cycle, times the clock (the board's, and Fmax).
The UART is the real bottleneck on these boards: 10 line bits per byte, and ``xpfilt host``
sends a document, then waits for its readout frame (``ceil(width / 8) + 7`` bytes back).

Runs are capped: ``--budget`` seconds in all (default 2,400), each tool run by the time left
and each place and route by :data:`PNR_CAP`.
A point whose confirmation does not finish in time is reported as predicted only. Results are
cached per build, RTL digest and board sources' digest (:func:`build_key`) in ``--work`` (default
/tmp/board_capacity) so an interrupted run resumes; every row carries the digest of the RTL
sources it was built from (``rtl_digest``) and its builds that of the board sources.
Saved to bench/results/capacity.{json,md}; with ``--point``, only those rows are measured and the
other rows of the saved results are kept.

Why large custom designs failed on the ECP5-85F (issue 13, measured at 12,000 depth-8 queries
on the RTL before 74123db): nextpnr's pre-packing count was 80,123 of 83,640 LUT positions
(96 %): 63,289 logic LUTs, 11,112 LUT-RAM LUTs and 5,556 LUTs of the RAM write-port slices
(TRELLIS_RAMW: each TRELLIS_DPR16X4 takes three slices of a PFU, the third one's LUTs cannot hold
logic), which the fit check did not count (it said 89 %), so the predicted sizes were past the
device. Control sets were not the cause (157 clock/LSR/CE sets, 122 LSR nets, median 106
flip-flops each). A third of the LUTs and 9,201 flip-flops were each cluster's current-row
register and its push/pop multiplexer; the stacks now keep every row in the LUT-RAM
(74123db, :func:`xpfilt.hdl.stacks.level_stack`): 12,000 queries need 67,992 LUT positions
(81 %). The compiler also clusters queries in text order (0ce9b76 for board builds, now
``CompileOptions.prefix_clustering``, :func:`xpfilt.compiler.custom.cluster_order`), so common
prefixes share nodes and columns: 4,463 columns instead of 10,910 at 12,000 queries.

Usage: python bench/capacity.py [--budget S] [--work DIR] [--only icebreaker|ulx3s-85f]
       [--point ulx3s-85f-custom-d8 --sizes 12000,16000] [--readout serial|sparse]
       [--clock-mhz 100]   (ECP5: the engine from the PLL, timed at 100 MHz; the rows say so)
       [--router router1|router2]   (nextpnr's router; default :data:`NEXTPNR`'s; the rows and
       the cached builds' names say which)
       [--place-only]   (place, do not route: the post-placement estimate; the placed netlist in
       WORK/placed/ for bench/placed_paths.py)  [--no-probes] (with --sizes)  [--pnr-cap S]
"""

from __future__ import annotations

import argparse
import json
import math
import os
import re
import shutil
import time
from pathlib import Path

from common import RESULTS, replace_rows, save

from xpfilt import workloads
from xpfilt.boards import get_board
from xpfilt.boards.build import BuildConfig, build_board, custom_design, programmable_design
from xpfilt.compiler.custom import CompileOptions
from xpfilt.compiler.programmable import HardwareSpec, configure
from xpfilt.eda.synth import ToolError
from xpfilt.lang.xpath import parse_query
from xpfilt.paths import shared_data
from xpfilt.software.events import load_documents

FILL = 0.9
#: Where place and route starts confirming: at FILL on the iCE40 (a run takes a minute); much
#: lower on the ECP5, where a run takes half an hour or more: 13,935 depth-8 queries and 12,336
#: ended in "Unable to find legal placement" after 27 and 30 min (the LUT positions that the
#: LUT-RAM write-port slices block were not counted: those designs needed ~100 % of them).
CONFIRM_FILL = {"ice40": FILL, "ecp5": 0.5}
#: Longest place and route per family: a nearly full UP5K can spend many minutes legalising
#: (6 programmable columns, 96 % of the cells: > 8 min); such a size counts as not fitting.
PNR_CAP = {"ice40": 300, "ecp5": 2700}
#: --pnr-cap: the cap of every place and route of this run, seconds (None: :data:`PNR_CAP`).
PNR_CAP_ASKED = [None]
#: The fastest UART rate each board's clock divides to within 2 % that its FTDI chip takes
#: (3 Mbaud at most): 12 MHz / 4; 25 MHz / 25.
FASTEST_BAUD = {"icebreaker": 3_000_000, "ulx3s-85f": 1_000_000}
#: (board, kind, depth): the two sizes (queries, or columns = clusters x per-cluster columns).
POINTS = [
    ("icebreaker", "custom", 4, (32, 96)),
    ("icebreaker", "custom", 8, (32, 96)),
    ("icebreaker", "programmable", None, (4, 8)),
    ("ulx3s-85f", "custom", 8, (1000, 3000)),
    ("ulx3s-85f", "custom", 4, (1000, 3000)),
    ("ulx3s-85f", "programmable", None, (128, 384)),
]
#: nextpnr options per board: router2 routes the large ECP5 designs ~3x faster than the
#: default router1 (2,000 queries: 50 s instead of 172 s) at a lower Fmax (62 vs 84 MHz).
NEXTPNR = {"icebreaker": (), "ulx3s-85f": ("--router", "router2")}
#: nextpnr's own default router.
DEFAULT_ROUTER = "router1"
#: Programmable engines: columns per cluster on each board (one cluster on the iCE40).
CLUSTER_COLUMNS = {"icebreaker": None, "ulx3s-85f": 128}
PROG = dict(max_tag_len=16, max_depth=16)
#: Programmable engines: the tag dictionary's entries (the NITF DTD names 123 elements; 31 on
#: the iCE40, whose engines hold a few queries).
PROG_TAGS = {"icebreaker": 31, "ulx3s-85f": 127}


#: The table's columns (bench/ethernet_capacity.py adds its Ethernet rows to the same table:
#: the link, each clock's Fmax, Yosys' LUTs and flip-flops, the block RAMs).
COLUMNS = [
    ("board", "board"),
    ("link", "link"),
    ("kind", "engine"),
    ("depth", "query depth"),
    ("readout", "readout"),
    ("queries", "queries"),
    ("columns", "columns"),
    ("queries_d4", "d4 queries held"),
    ("queries_d8", "d8 queries held"),
    ("status", "status"),
    ("predicted", "predicted"),
    ("cells", "logic cells"),
    ("cell_share", "of device"),
    ("fmax_mhz", "Fmax MHz"),
    ("fmax_clocks", "Fmax per clock MHz (constraint, verdict)"),
    ("meets_timing", "meets every clock"),
    ("luts", "LUTs (Yosys)"),
    ("ffs", "FFs (Yosys)"),
    ("dp16kd", "DP16KD"),
    ("clock_mhz", "clock MHz (constraint)"),
    ("beat_bytes", "engine bytes a beat (W)"),
    ("engine_clock_mhz", "engine clock MHz"),
    ("fmax_engine_mhz", "engine Fmax MHz"),
    ("clock_source", "clock from"),
    ("router", "router"),
    ("bytes_per_cycle", "bytes/cycle"),
    ("mb_s_board_clock", "engine MB/s @board clock"),
    ("mb_s_fmax", "engine MB/s @Fmax"),
    ("uart_115200_mb_s", "UART MB/s @115200"),
    ("fastest_baud", "fastest baud"),
    ("uart_fastest_mb_s", "UART MB/s @fastest"),
    ("limit", "limited by"),
    ("luts_per_unit", "LUTs per query/column"),
    ("packing_ratio", "cells/LUT"),
    ("probes", "probes"),
    ("all_tries", "all P&R runs (size: result, s)"),
    ("pnr_seconds", "nextpnr s"),
    ("placement_estimate_mhz", "post-placement MHz"),
    ("rtl_digest", "RTL digest"),
    ("error", "error"),
]


def log(message: str) -> None:
    print(f"[capacity {time.strftime('%H:%M:%S')}] {message}", flush=True)


class Budget:
    def __init__(self, seconds: float, cached_only: bool = False):
        self.deadline = time.monotonic() + seconds
        self.cached_only = cached_only

    def left(self) -> float:
        return self.deadline - time.monotonic()


_QUERIES: dict = {}
_DIGEST: list = []
_BOARD_DIGEST: list = []


def rtl_digest() -> str:
    """The digest of the RTL sources (as bench/fmax.py notes it), computed once."""
    if not _DIGEST:
        from resources import source_digest

        _DIGEST.append(source_digest())
    return _DIGEST[0]


def board_digest() -> str:
    """The digest of the board sources (the rows' ``board_digest``), computed once."""
    if not _BOARD_DIGEST:
        from resources import board_source_digest

        _BOARD_DIGEST.append(board_source_digest())
    return _BOARD_DIGEST[0]


def build_key() -> str:
    """The key of a cached board build: the RTL digest and the board sources' digest, so a
    change to either builds again (the RTL digest alone once reused a stale build)."""
    return f"{rtl_digest()}-b{board_digest()}"


def query_texts(depth: int, count: int) -> list[str]:
    """The first ``count`` queries of the shared depth-``depth`` file, then generated ones."""
    texts = _QUERIES.get(depth)
    if texts is None or len(texts) < count:
        texts = (shared_data() / f"queries/nitf-d{depth}-p15-n2000.txt").read_text().splitlines()
        if count > len(texts):
            schema = workloads.DtdSchema.load(shared_data() / "nitf/nitf-2-5.dtd")
            more = workloads.generate_queries(
                schema,
                workloads.QueryGenConfig(
                    count=int(count * 1.3) + 100,
                    max_depth=depth,
                    p_wildcard=0.15,
                    p_descendant=0.15,
                    seed=depth,
                ),
            )
            seen = set(texts)
            texts = texts + [t for t in more if t not in seen and not seen.add(t)]
        _QUERIES[depth] = texts
    if len(texts) < count:
        raise ValueError(f"only {len(texts)} distinct depth-{depth} queries, not {count}")
    return texts[:count]


def spec_for(board: str, columns: int) -> HardwareSpec:
    per = CLUSTER_COLUMNS[board]
    if per is None:
        return HardwareSpec(clusters=1, columns=columns, tags=PROG_TAGS[board], **PROG)
    return HardwareSpec(clusters=max(1, columns // per), columns=per, tags=PROG_TAGS[board], **PROG)


READOUT = ["serial"]  # the readout of the custom designs (--readout)
#: The engine clock asked for (--clock-mhz), Hz; None: the board's oscillator.
ENGINE_CLOCK = [None]
#: The router asked for (--router); None: the board's in :data:`NEXTPNR`.
ROUTER = [None]
#: --place-only: place without routing (nextpnr's post-placement estimate; the placed netlist
#: kept in --work for bench/placed_paths.py).
PLACE_ONLY = [False]


def router_for(board: str) -> str:
    """The nextpnr router of ``board``'s builds in this run."""
    return ROUTER[0] or router_for_default(board)


def nextpnr_args(board: str) -> tuple:
    """:data:`NEXTPNR`'s options for ``board`` with the router of this run."""
    args = list(NEXTPNR[board])
    if "--router" in args:
        del args[args.index("--router") : args.index("--router") + 2]
    return (*args, "--router", router_for(board))


def design_for(board: str, kind: str, depth, size: int):
    if kind == "custom":
        queries = [parse_query(t, i + 1) for i, t in enumerate(query_texts(depth, size))]
        return custom_design(queries, CompileOptions(readout=READOUT[0]))
    return programmable_design(spec_for(board, size), family=get_board(board).family)


def point_name(board: str, kind: str, depth) -> str:
    sparse = "-sparse" if kind == "custom" and READOUT[0] == "sparse" else ""
    clock = f"-c{ENGINE_CLOCK[0] / 1e6:g}" if ENGINE_CLOCK[0] else ""
    router = f"-{ROUTER[0]}" if ROUTER[0] and ROUTER[0] != router_for_default(board) else ""
    placed = "-placed" if PLACE_ONLY[0] else ""
    return f"{board}-{kind}-d{depth or 'x'}{sparse}{clock}{router}{placed}"


def router_for_default(board: str) -> str:
    """The router :data:`NEXTPNR` gives ``board`` (builds with it carry no router in their
    names, as before --router)."""
    args = NEXTPNR[board]
    return args[args.index("--router") + 1] if "--router" in args else DEFAULT_ROUTER


def engine_clock_mhz(board: str) -> float:
    """The clock the builds of ``board`` run (and are constrained) at, MHz."""
    return (ENGINE_CLOCK[0] or get_board(board).clock_hz) / 1e6


def run_build(
    work: Path, board: str, kind: str, depth, size: int, *, pnr: bool, budget: Budget
) -> dict:
    """One build (cached by name in ``work``); a dict with counts, P&R results or the error.
    With ``budget.cached_only``, a build not in the cache is not run."""
    name = f"{point_name(board, kind, depth)}-{size}-{'pnr' if pnr else 'synth'}"
    cache = work / f"{name}-{build_key()}.json"
    if cache.exists():
        row = json.loads(cache.read_text())
        log(f"{name}: cached ({row.get('error') or 'ok'})")
        return row
    if budget.cached_only:
        return {"name": name, "size": size, "error": "not run (--cached-only)", "skipped": True}
    cap = (PNR_CAP_ASKED[0] or PNR_CAP[get_board(board).family]) if pnr else math.inf
    timeout = min(budget.left(), cap)
    if timeout < 60:
        return {"name": name, "size": size, "error": "time budget used up", "skipped": True}
    out = work / name
    start = time.perf_counter()
    row = {"name": name, "size": size, "rtl_digest": rtl_digest(), "board_digest": board_digest()}
    try:
        design = design_for(board, kind, depth, size)
        row.update(queries=design.queries, units=design.units, width=design.width)
        result = build_board(
            design,
            BuildConfig(
                board,
                out,
                synthesize_only=not pnr,
                timeout=timeout,
                nextpnr_args=nextpnr_args(board),
                clock_hz=ENGINE_CLOCK[0],
                place_only=PLACE_ONLY[0] and pnr,
            ),
            log=log,
        )
        report = json.loads(result.to_json())
    except ToolError as exc:
        report = (
            json.loads((out / "report.json").read_text()) if (out / "report.json").exists() else {}
        )
        row["error"] = str(exc)[:300]
        row["timeout"] = "timed out" in str(exc)
    row["seconds"] = round(time.perf_counter() - start, 1)
    fit = report.get("fit") or {}
    row.update(luts=fit.get("luts"), ffs=fit.get("ffs"), bram=fit.get("bram"))
    pnr_report = report.get("pnr")
    if pnr_report:
        util = {
            bel: dict(zip(("used", "available"), map(int, share.split("/"))))
            for bel, share in pnr_report["utilization"].items()
        }
        cells = util.get("ICESTORM_LC") or util.get("TRELLIS_COMB") or {}
        row.update(
            cells=cells.get("used"),
            cells_available=cells.get("available"),
            pnr_ffs=(util.get("TRELLIS_FF") or {}).get("used"),
            fmax_mhz=report.get("fmax_mhz"),
            meets_timing=report.get("meets_timing"),
            constraint_mhz=max(pnr_report["constraints"].values(), default=None),
        )
    row["times"] = report.get("times")
    pnr_log = out / "gateware" / f"nextpnr-{get_board(board).family}.log"
    if pnr_log.exists():  # kept: a timed-out route still has its placement's estimate
        kept = work / f"{name}-{build_key()}.nextpnr.log"
        shutil.copy(pnr_log, kept)
        row["placement_estimate_mhz"] = placement_estimate(kept.read_text(errors="replace"))
    placed = out / "gateware" / "placed.json"
    if placed.exists():  # --place-only: for bench/placed_paths.py (not *.json in work)
        (work / "placed").mkdir(exist_ok=True)
        row["placed_netlist"] = str(
            shutil.copy(placed, work / "placed" / f"{name}-{build_key()}.json")
        )
    if not row.get("timeout") or timeout == cap:  # a timeout of the budget: not cached
        cache.write_text(json.dumps(row, indent=1))
    else:  # ... but listed among the runs
        (work / f"{name}-{build_key()}.attempt.json").write_text(json.dumps(row, indent=1))
    shutil.rmtree(out, ignore_errors=True)  # keep the disk small; the row has the numbers
    log(f"{name}: {row.get('error') or 'ok'} ({row['seconds']:.0f} s)")
    return row


def placement_estimate(text: str):
    """nextpnr's Fmax estimate after placement (the last "Max frequency" before routing starts;
    the log is verbose: ``AMARANTH_verbose``), MHz, or None."""
    placed = re.split(r"\n.*(?:Routing|router2)", text, maxsplit=1)[0]
    found = re.findall(r"Max frequency for clock .*?: ([\d.]+) MHz", placed)
    return float(found[-1]) if found else None


def predict(board: str, small: dict, large: dict, fill: float = FILL) -> tuple[int, dict]:
    """The size at which the design fills ``fill`` of the device: Yosys LUTs and flip-flops
    are a line through the two points; logic cells = LUTs x the packing ratio measured at the
    small point (nextpnr cells / Yosys LUTs)."""
    spec = get_board(board)
    s1, s2 = small["size"], large["size"]
    ratio = small["cells"] / small["luts"]
    lut_slope = (large["luts"] - small["luts"]) / (s2 - s1)
    lut_base = small["luts"] - lut_slope * s1
    ff_slope = (large["ffs"] - small["ffs"]) / (s2 - s1)
    ff_base = small["ffs"] - ff_slope * s1
    by_cells = (fill * spec.luts / ratio - lut_base) / lut_slope
    by_ffs = (fill * spec.ffs - ff_base) / ff_slope if spec.family == "ecp5" else math.inf
    size = int(min(by_cells, by_ffs))
    model = {
        "packing_ratio": round(ratio, 3),
        "luts_per_unit": round(lut_slope, 2),
        "fixed_luts": round(lut_base),
        "ffs_per_unit": round(ff_slope, 2),
        "fixed_ffs": round(ff_base),
        "limit": "logic cells" if by_cells <= by_ffs else "flip-flops",
    }
    return size, model


def round_size(kind: str, board: str, size: int) -> int:
    if kind == "custom":
        return max(1, size)
    per = CLUSTER_COLUMNS[board]
    return max(2, size // 2 * 2) if per is None else max(per, size // per * per)


def throughput(
    board: str, width: int, clock_mhz: float, fmax_mhz, docs: list[int], matches: list[int] = None
) -> dict:
    """Serial readout (``matches`` None): ``width`` cycles and ``ceil(width / 8) + 7`` frame
    bytes per document; sparse: a header and one id per match (``matches[i]`` for document
    i), ids of ``ceil(bits(width) / 8)`` bytes in the frame."""
    total = sum(docs)
    if matches is None:
        beats, frames = [width] * len(docs), [(width + 7) // 8 + 7] * len(docs)
    else:
        id_bytes = (max(1, width.bit_length()) + 7) // 8
        beats = [1 + k for k in matches]
        frames = [7 + id_bytes * k for k in matches]
    per_cycle = total / sum(max(n, b) for n, b in zip(docs, beats))
    out = {
        "bytes_per_cycle": round(per_cycle, 3),
        "mb_s_board_clock": round(per_cycle * clock_mhz, 2),
        "mb_s_fmax": round(per_cycle * fmax_mhz, 2) if fmax_mhz else None,
    }
    line = sum(n + 4 + f for n, f in zip(docs, frames))  # frames both ways, one by one
    out["uart_115200_mb_s"] = round(total / line * 115_200 / 10 / 1e6, 4)
    out["fastest_baud"] = FASTEST_BAUD[board]
    out["uart_fastest_mb_s"] = round(total / line * FASTEST_BAUD[board] / 10 / 1e6, 4)
    return out


def earlier_tries(work: Path, board: str, kind: str, depth) -> str:
    """Every place and route of this point in the cache (this run's and earlier runs'), by
    size: ``ok`` with the share of logic cells, or why it failed; runs of other RTL say
    their digest."""
    out = []
    for path in work.glob(f"{point_name(board, kind, depth)}-[0-9]*-pnr*.json"):
        row = json.loads(path.read_text())
        if row.get("error"):
            reason = (
                "no legal placement"
                if "legal placement" in row["error"]
                else "no BELs left"
                if "no BELs" in row["error"]
                else "stopped at the time cap"
                if "took longer" in row["error"]
                else row["error"][:60]
            )
            if row.get("placement_estimate_mhz"):
                reason += f" (placed: {row['placement_estimate_mhz']:.1f} MHz estimated)"
        else:
            reason = f"ok, {row['cells'] / row['cells_available']:.0%} of the cells"
            if row.get("fmax_mhz"):
                reason += f", {row['fmax_mhz']:.1f} MHz"
        if row.get("rtl_digest", "") != rtl_digest():
            reason += f", RTL {row.get('rtl_digest') or 'unknown'}"
        out.append((row["size"], f"{row['size']}: {reason}, {row.get('seconds', 0):.0f} s"))
    return "; ".join(text for _, text in sorted(out))


def merge_rows(saved: list, fresh: list, *, by_size: bool) -> list:
    """``saved`` rows but those ``fresh`` ones measure again, then ``fresh``: a row replaces the
    saved row of its point (board, engine, depth, readout, clock, router) or, ``by_size``
    (--sizes: measurements of the sizes asked for), only the saved row of its point at its
    size."""

    def key(r):
        return (
            r["board"],
            r["kind"],
            r.get("depth"),
            r.get("readout", "serial"),
            r.get("clock_source", "oscillator"),
            r["clock_mhz"],
            r.get("router") or router_for_default(r["board"]),
            *((r.get("queries"), r.get("columns")) if by_size else ()),
        )

    return replace_rows(saved, fresh, key)


def configured(spec: HardwareSpec, depth: int) -> int:
    queries = [parse_query(t, i + 1) for i, t in enumerate(query_texts(depth, 2000))]
    return len(configure(queries, spec).answers)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--budget", type=float, default=2400)
    parser.add_argument("--work", type=Path, default=Path("/tmp/board_capacity"))
    parser.add_argument("--only", choices=["icebreaker", "ulx3s-85f"])
    parser.add_argument(
        "--cached-only",
        action="store_true",
        help="Report from the builds cached in --work; run none.",
    )
    parser.add_argument(
        "--point",
        action="append",
        default=[],
        help="Measure only this point (board-kind-dDEPTH, e.g. "
        "ulx3s-85f-custom-d8; repeatable); the saved rows of the others "
        "are kept.",
    )
    parser.add_argument(
        "--sizes",
        default="",
        help="Comma-separated sizes that place and route confirms, in order, "
        "instead of the predicted ones (with --point); a size smaller "
        "than one confirmed already is skipped (16000,12000: a fallback).",
    )
    parser.add_argument(
        "--readout",
        choices=["serial", "sparse"],
        default="serial",
        help="Readout of the custom designs (default serial).",
    )
    parser.add_argument(
        "--clock-mhz",
        type=float,
        default=None,
        help="Clock the engine and host link from a PLL at this frequency "
        "(ECP5) and constrain place and route at it (default: the "
        "board's oscillator, 25 MHz on the ULX3S: nextpnr then stops "
        "improving paths once they meet 25 MHz).",
    )
    parser.add_argument(
        "--router",
        choices=["router1", "router2"],
        default=None,
        help="nextpnr's router (default: router2 on the ULX3S, nextpnr's "
        "router1 on the iCEBreaker); the rows say which.",
    )
    parser.add_argument(
        "--pnr-cap",
        type=float,
        default=None,
        help="Seconds each place and route may take (default: 300 on the "
        "iCE40, 2,700 on the ECP5); the --budget still caps the run.",
    )
    parser.add_argument(
        "--place-only",
        action="store_true",
        help="Place without routing (ECP5): the rows give nextpnr's "
        "post-placement estimate, and the placed netlist stays in --work "
        "for bench/placed_paths.py.",
    )
    parser.add_argument(
        "--no-probes",
        action="store_true",
        help="With --sizes: place and route only those sizes, without the two "
        "probe builds and the prediction (the rows then have none).",
    )
    parser.add_argument(
        "--rtl-digest",
        default=None,
        help="With --cached-only: report the cached builds of this RTL digest "
        "(the sources may have changed since they were built).",
    )
    parser.add_argument(
        "--board-digest",
        default=None,
        help="With --cached-only: ... and of these board sources (a build's "
        "board_digest; default: the current ones).",
    )
    args = parser.parse_args()
    READOUT[0] = args.readout
    PNR_CAP_ASKED[0] = args.pnr_cap
    PLACE_ONLY[0] = args.place_only
    os.environ.setdefault("AMARANTH_verbose", "1")  # nextpnr's log with its estimates
    ENGINE_CLOCK[0] = args.clock_mhz * 1e6 if args.clock_mhz else None
    ROUTER[0] = args.router
    if args.rtl_digest:
        if not args.cached_only:
            parser.error("--rtl-digest needs --cached-only")
        _DIGEST[:] = [args.rtl_digest]
    if args.board_digest:
        if not args.cached_only:
            parser.error("--board-digest needs --cached-only")
        _BOARD_DIGEST[:] = [args.board_digest]
    args.work.mkdir(parents=True, exist_ok=True)
    budget = Budget(args.budget, args.cached_only)
    started = time.perf_counter()
    doc_paths = load_documents([shared_data() / "nitf/docs"])
    docs = [p.stat().st_size for p in doc_paths]
    points = [p for p in POINTS if args.only in (None, p[0])]
    names = {f"{b}-{k}-d{d or 'x'}": (b, k, d) for b, k, d, _ in POINTS}
    unknown = [name for name in args.point if name not in names]
    if unknown:
        parser.error(f"--point must be one of {sorted(names)}, not {unknown}")
    if args.point:
        points = [p for p in points if f"{p[0]}-{p[1]}-d{p[2] or 'x'}" in args.point]
    sizes = [int(n) for n in args.sizes.split(",") if n.strip()]
    if sizes and not args.point:
        parser.error("--sizes needs --point")
    if args.no_probes and not sizes:
        parser.error("--no-probes needs --sizes")

    # phase 1: the two sizes of every point (cheap); phase 2: confirmations, cheapest first
    measured = {}
    for board, kind, depth, (s1, s2) in points:
        if args.no_probes:
            measured[(board, kind, depth)] = None
            continue
        small = run_build(args.work, board, kind, depth, s1, pnr=True, budget=budget)
        large = run_build(args.work, board, kind, depth, s2, pnr=False, budget=budget)
        measured[(board, kind, depth)] = (small, large)
    rows = []
    for board, kind, depth, _ in points:
        small, large = measured[(board, kind, depth)] or ({}, {})
        spec = get_board(board)
        row = {
            "board": board,
            "kind": kind,
            "depth": depth,
            "readout": args.readout if kind == "custom" else "serial",
            "rtl_digest": rtl_digest(),
            "clock_mhz": engine_clock_mhz(board),
            "clock_source": "PLL" if ENGINE_CLOCK[0] else "oscillator",
            "router": "placed only" if PLACE_ONLY[0] else router_for(board),
            "probes": "none (--no-probes)"
            if args.no_probes
            else f"{small['size']} (P&R), {large['size']} (synth)",
        }
        confirmed, tries = None, []
        if not args.no_probes:
            if small.get("error") or large.get("error") or not small.get("cells"):
                row["error"] = (
                    small.get("error") or large.get("error") or "no P&R at the small size"
                )
                rows.append(row)
                continue
            size, model = predict(board, small, large)
            size = round_size(kind, board, size)
            row.update(predicted=size, **model)
            candidate = round_size(
                kind, board, predict(board, small, large, CONFIRM_FILL[spec.family])[0]
            )
        for attempt in range(3 if not sizes else 0):
            result = run_build(args.work, board, kind, depth, candidate, pnr=True, budget=budget)
            outcome = result.get("error", "ok")[:80]
            tries.append(f"{candidate}: {outcome}")
            if not result.get("error"):
                confirmed = result
                break
            if result.get("timeout") or result.get("skipped"):
                break
            candidate = round_size(kind, board, int(candidate * 0.88))
        last = None
        for size_asked in sizes:  # --sizes: these, in order; the largest that works
            if confirmed is not None and size_asked < confirmed["size"]:
                continue  # a fallback size, not needed
            result = last = run_build(
                args.work, board, kind, depth, size_asked, pnr=True, budget=budget
            )
            tries.append(f"{size_asked}: {result.get('error', 'ok')[:80]}")
            if not result.get("error") and (confirmed is None or size_asked > confirmed["size"]):
                confirmed = result
        for _ in range(4 if confirmed and spec.family == "ice40" else 0):
            up = round_size(kind, board, int(confirmed["size"] * 1.08) + 1)
            if up <= confirmed["size"]:  # a few columns: the next even size
                up = confirmed["size"] + 2
            result = run_build(args.work, board, kind, depth, up, pnr=True, budget=budget)
            tries.append(f"{up}: {result.get('error', 'ok')[:80]}")
            if result.get("error"):
                break
            confirmed = result
        row["tries"] = "; ".join(tries)
        row["all_tries"] = earlier_tries(args.work, board, kind, depth)
        best = confirmed
        if best is None and args.no_probes:  # no probe to fall back on: the last size tried
            best = last
            row.update(
                status=f"not placed and routed: {best.get('error', '?')[:120]}",
                error=best.get("error"),
            )
        elif best is None:  # the largest that did place and route: the probe
            row["status"] = (
                f"predicted {size}; not confirmed: largest placed and routed is the small probe"
            )
            best = small
        else:
            row["status"] = (
                "placed, not routed (--place-only)" if PLACE_ONLY[0] else "placed and routed"
            )
        row["placement_estimate_mhz"] = best.get("placement_estimate_mhz")
        if best.get("cells"):
            row.update(
                fmax_mhz=best.get("fmax_mhz"),
                cells=best.get("cells"),
                cells_available=best.get("cells_available"),
                cell_share=round(best["cells"] / best["cells_available"], 3),
                pnr_seconds=(best.get("times") or {}).get("nextpnr"),
            )
        matches = None
        if kind == "custom":
            row["queries"] = best["size"]
            width = best["size"]
            if args.readout == "sparse":
                from xpfilt.software.fast import FastFilter

                engine = FastFilter(
                    [parse_query(t, i + 1) for i, t in enumerate(query_texts(depth, width))]
                )
                matches = [len(engine.filter(path.read_bytes())) for path in doc_paths]
        else:
            hw = spec_for(board, best["size"])
            width = hw.clusters * hw.columns
            row.update(
                columns=width,
                clusters=hw.clusters,
                queries_d4=configured(hw, 4),
                queries_d8=configured(hw, 8),
            )
        row.update(throughput(board, width, row["clock_mhz"], row.get("fmax_mhz"), docs, matches))
        rows.append(row)
        log(f"{board} {kind} d{depth}: {row['status']} at {best['size']}")

    total = time.perf_counter() - started
    tool_time = sum(
        json.loads(path.read_text()).get("seconds", 0) for path in args.work.glob("*.json")
    )
    if args.point or args.only:  # keep the saved rows of the points not measured now
        saved = (
            json.loads((RESULTS / "capacity.json").read_text())["rows"]
            if (RESULTS / "capacity.json").exists()
            else []
        )
        rows = merge_rows(saved, rows, by_size=bool(sizes))
        order = {(b, k, d): i for i, (b, k, d, _) in enumerate(POINTS)}
        rows.sort(
            key=lambda r: (
                order.get((r["board"], r["kind"], r.get("depth")), 99),
                r.get("readout", "serial") != "serial",
            )
        )
    notes = (
        f"Board builds (engine + UART host link + LEDs) with yowasp Yosys/nextpnr "
        "(ECP5: router2 unless the router column says router1: router2 is faster on large "
        "designs, at a lower Fmax); "
        f"prediction at {FILL:.0%} of the logic cells from two probe sizes, confirmed by "
        "place and route (iCE40: from the prediction, then up 8 % until one fails; ECP5: from "
        "the size for 50 % of the device, 12 % down on failure; or the sizes asked for "
        "with --sizes). ECP5 LUT counts include the 2 LUT positions of each LUT-RAM's "
        "write-port slice (before 0d068af they did not, and the prediction overshot). "
        "Custom: NITF p15 queries, stacks 16 deep; programmable: tags up to 16 bytes, 16 "
        "deep, clusters of 128 columns on the ECP5 (one cluster on the iCE40); 'd4/d8 "
        "queries held' = how many shared-file queries `xpfilt configure` places. "
        "bytes/cycle = sum(len) / sum(max(len, readout width)) over the 100 NITF documents; "
        "UART MB/s = the documents' bytes over the line time of xpfilt host's frames "
        "(document, then its readout; 10 bits per byte; sparse: a 7-byte frame plus "
        "one id per match, approximated). The UART is the bottleneck: the "
        f"engine could take 10-100x more. This run: budget {args.budget:.0f} s, "
        f"{total:.0f} s{' (from the cache)' if args.cached_only else ''}; all builds in "
        f"the cache took {tool_time / 60:.0f} min."
    )
    saved = (
        json.loads((RESULTS / "capacity.json").read_text())
        if (RESULTS / "capacity.json").exists()
        else {"rows": [], "table": {"notes": ""}}
    )
    rows += [r for r in saved["rows"] if r.get("link") == "ethernet" and r not in rows]
    ethernet = saved["table"]["notes"].partition(" Ethernet rows")  # bench/ethernet_capacity.py's
    notes += ethernet[1] + ethernet[2]
    save("capacity", rows, COLUMNS, "Board capacity: largest designs that place and route", notes)
    log(f"done in {total:.0f} s")


if __name__ == "__main__":
    main()
