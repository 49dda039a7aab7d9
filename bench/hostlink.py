"""Throughput of XML through the board's host link (issue 35): Gigabit Ethernet and the UART,
both in the simulated RTL, in one table.

Ethernet: ``xpfilt build --board ecpix5-85f --link ethernet --readout sparse --no-toolchain``
of the depth-8 NITF queries (1,024: the first of ``nitf-d8-p15-n2000.txt``; 12,000: that file,
then queries generated from the NITF DTD with the same settings, as bench/capacity.py makes
them), the board core with LiteEth's MAC, ARP, IP and UDP cores and its PHY (RGMII: the board's
ECP5 PHY, its DDR primitives modelled; GMII: LiteEth's GMII PHY) in Verilator, link and engine
at 125 MHz (:func:`xpfilt.boards.sim_server.ethernet_line_rate`). A host inside the cocotb
bench keeps the line busy: frames always queued on cocotbext-eth's PHY model (12-byte
inter-frame gap), 1,440-byte datagrams within the board's credit, readouts acknowledged.
Simulated time from the first document byte sent to the last readout received; Ethernet, IP,
UDP and protocol overhead included.

UART: ``xpfilt build --board ecpix5-85f --link uart`` of the same 1,024 queries (sparse
readout, the board's default 115,200 baud: 868 cycles of its 100 MHz clock a bit), the board
core in Verilator with its UART bridged to a socket (:func:`xpfilt.boards.sim_server.serve_board`);
``xpfilt host``'s engine sends a document and waits for its readout. Simulated time from the
connection to its end (the host's status request included). At the board's divider the
simulation runs ~100,000 cycles a second here: ten minutes for one 4 kB document. So the UART
is simulated at ``--uart-dividers`` cycles a bit (default 8, on ``--uart-docs`` documents, all
100 by default, and 32, on the first 10), the time counted in bit times and scaled to the
board's 868: the UART's framing, the host's waits and the readout frames scale with the bit
time; the engine's few cycles per byte, against 80 or 320 a byte on the line, do not. On the
same 10 documents the two dividers agree within 0.6 % (measured: 394,740 and 392,500 bit
times), the smaller one a lower bound (``--only uart --uart-dividers 8 --uart-docs 10`` adds
the row that compares them).

The limits: 1 GbE carries at most 1,472 bytes of UDP payload in a 1,538-byte slot of the line
(1,500-byte frames: preamble 8, header 14, FCS 4, gap 12), 119.6 MB/s; the protocol's full
datagrams (1,440 document bytes, a 24-byte header, a 4-byte CRC, UDP and IP headers: 1,496-byte
frames) take 1,534 bytes of the line each, 125 x 1,440 / 1,534 = 117.3 MB/s. Both directions'
answers are checked against ``../shared/data/expected`` (``answers``).

Each row carries the RTL and board sources' digests. Simulator builds are cached in
``--sim-build`` (default build/sim): the 12,000-query engine takes tens of minutes to build.
``--bytes-per-cycle W`` (Ethernet): the W-byte engine (``xpfilt build --bytes-per-cycle W``),
its beats packed in the link domain, simulated on the engine clock the build gives it (125 / W
MHz); the rows say W and the engine's clock.
Usage: nice python bench/hostlink.py [--queries 1024,12000] [--phy rgmii,gmii] [--uart-docs 100]
       [--uart-dividers 8,32] [--only ethernet|uart|render] [--work DIR] [--sim-build DIR]
       [--bytes-per-cycle W]
"""

from __future__ import annotations

import argparse
import json
import math
import subprocess
import sys
import threading
import time
from pathlib import Path

from common import RESULTS, replace_rows, save
from resources import board_source_digest, source_digest

from xpfilt.boards.protocol import DATAGRAM_CRC, DATAGRAM_HEADER, MAX_PAYLOAD
from xpfilt.paths import repo_root, shared_data
from xpfilt.software.events import load_documents

BOARD = "ecpix5-85f"
LINK_HZ = 125e6
#: 1 GbE: 125 MB/s on the line; a 1,500-byte frame takes 1,538 bytes of it (preamble and SFD 8,
#: Ethernet header 14, FCS 4, inter-frame gap 12) and carries 1,472 bytes of UDP payload.
LINE_MB_S = 125.0
SLOT = 1500 + 8 + 14 + 4 + 12
GBE_PAYLOAD_MB_S = LINE_MB_S * (1500 - 20 - 8) / SLOT
#: The protocol's limit: a full datagram's document bytes per slot of the line (UDP 8 and IP 20
#: header bytes, then the frame's 38 bytes of the line as above).
PROTOCOL_MB_S = LINE_MB_S * MAX_PAYLOAD / (MAX_PAYLOAD + DATAGRAM_HEADER + DATAGRAM_CRC + 28 + 38)
#: The goals (issue 35): MB/s of document bytes by query count.
GOALS = {1024: 110.0, 12000: 100.0}
#: The UART board's simulated clock period (100 MHz, :mod:`xpfilt.boards.sim_tb`).
UART_CLOCK_NS = 10
PHY_NAMES = {"rgmii": "RGMII (LiteEth ECP5 PHY)", "gmii": "GMII (LiteEth GMII PHY)"}


def log(message: str) -> None:
    print(f"[hostlink {time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


def query_file(work: Path, count: int) -> Path:
    """The first ``count`` depth-8 p15 NITF queries (generated ones after the shared 2,000)."""
    from capacity import query_texts

    path = work / f"nitf-d8-p15-{count}.txt"
    if not path.exists():
        path.write_text("".join(f"{t}\n" for t in query_texts(8, count)))
    return path


def build(work: Path, link: str, queries: Path, count: int, width: int = 1) -> Path:
    out = work / (f"{link}-{count}" + ("" if width == 1 else f"-w{width}"))
    command = [sys.executable, "-m", "xpfilt.cli", "build", "--board", BOARD, "--link", link,
               "-q", str(queries), "--readout", "sparse", "--no-toolchain", "-o", str(out),
               "--bytes-per-cycle", str(width)]  # fmt: skip
    subprocess.run(command, check=True, capture_output=True, cwd=repo_root())
    return out


def expected_answers(docs, count: int) -> dict:
    """The shared expected answers of ``docs`` for the first ``count`` queries (the numbers of
    the queries after the shared file's 2,000 are not in it: None then)."""
    from xpfilt.software.results import read_expected

    if count > 2000:
        return None
    expected = read_expected(shared_data() / "expected" / "nitf-docs--nitf-d8-p15-n2000.tsv")
    return {d.name: tuple(n for n in expected[d.name] if n <= count) for d in docs}


def reference_answers(queries: Path, docs) -> dict:
    """The reference's answers (for query sets the shared expected answers do not cover)."""
    from xpfilt.engines import filter_batch
    from xpfilt.lang.xpath import load_queries
    from xpfilt.software.reference import ReferenceFilter

    engine = ReferenceFilter(load_queries(queries).queries)
    return {r.name: r.matches for r in filter_batch(engine, docs)}


def readout_answers(design: Path, docs, readouts) -> dict:
    """{document name: query numbers} of the readout records the line-rate bench received."""
    from xpfilt.boards.host import BoardDesign, answer_positions, plan_queries, readout_positions
    from xpfilt.boards.protocol import Record, decode_record

    board = BoardDesign.load(design)
    plan = board.plan
    queries = plan_queries(plan)
    bits = readout_positions(enumerate(plan.query_numbers), queries)
    answers = {}
    for doc, (kind, number, errors, body) in zip(docs, readouts):
        readout = decode_record(Record(kind, number, errors, bytes.fromhex(body)), board.width)
        positions = answer_positions(doc.name, readout, bits)
        answers[doc.name] = tuple(sorted(queries[p].number for p in positions))
    return answers


def verdict(got: dict, want: dict) -> str:
    wrong = [name for name in want if got.get(name) != want[name]]
    return "as expected" if not wrong else f"WRONG: {len(wrong)} documents, first {wrong[0]}"


def ethernet_row(work, sim_build, count, phy, docs, digests, width=1) -> dict:
    from xpfilt.boards.sim_server import ethernet_line_rate

    queries = query_file(work, count)
    design = build(work, "ethernet", queries, count, width)
    info = json.loads((design / "board.json").read_text())
    log(f"Ethernet, {count} queries, {phy}, W={width}: simulating (Verilator build cached in "
        f"{sim_build})")  # fmt: skip
    result = ethernet_line_rate(
        design, docs, work / f"rate-{count}-{phy}-w{width}.json", phy=phy, build_root=sim_build,
        log=log,
    )  # fmt: skip
    want = expected_answers(docs, count) or reference_answers(queries, docs)
    answers = verdict(readout_answers(design, docs, result["readouts"]), want)
    cycles = result["ns"] * LINK_HZ / 1e9
    mb_s = result["bytes"] / result["ns"] * 1e3
    row = {
        "link": "Gigabit Ethernet (UDP, LiteEth)",
        "board": BOARD,
        "phy": PHY_NAMES[phy],
        "queries": count,
        "beat_bytes": width,
        "engine_mhz": info.get("engine_hz", LINK_HZ) / 1e6,
        "query_set": "nitf-d8-p15" + (" + generated" if count > 2000 else ""),
        "readout": "sparse",
        "documents": result["documents"],
        "document_bytes": result["bytes"],
        "simulated_ms": result["ns"] / 1e6,
        "bytes_per_cycle": round(result["bytes"] / cycles, 3),
        "mb_per_s": round(mb_s, 1),
        "goal_mb_per_s": GOALS.get(count),
        "meets_goal": None if count not in GOALS else mb_s >= GOALS[count],
        "of_1gbe_payload_limit": round(mb_s / GBE_PAYLOAD_MB_S, 3),
        "frames": f"{result['to_board']} to the board, {result['to_host']} back",
        "answers": answers,
        "build_s": result["build_s"],
        "run_s": result["run_s"],
        **digests,
    }
    log(f"  {mb_s:.1f} MB/s, {row['bytes_per_cycle']} bytes/cycle, answers {answers}")
    return row


def uart_row(work, sim_build, count, docs, divider, digests) -> dict:
    """The UART board of ``count`` queries simulated at ``divider`` clock cycles a bit, its
    simulated time in bit times scaled to the board's divider (the engine's own cycles are
    not scaled, a few per document byte against ``10 x divider`` a byte on the line)."""
    from xpfilt.boards.host import BoardDesign, BoardLink, open_board_engine
    from xpfilt.boards.sim_server import SimBoardConfig, serve_board
    from xpfilt.engines import filter_batch

    queries = query_file(work, count)
    design = build(work, "uart", queries, count)
    info = json.loads((design / "board.json").read_text())
    run_dir = work / f"uart-run-{count}-{divider}"
    ports = []
    config = SimBoardConfig(
        design, divider=divider, connections=1, build_root=sim_build, run_dir=run_dir
    )
    log(
        f"UART, {count} queries, {info['baud']:,} baud (divider {info['divider']}), "
        f"{len(docs)} documents: simulating at {divider} cycles a bit"
    )
    server = threading.Thread(
        target=lambda: serve_board(config, on_port=ports.append, log=log), daemon=True
    )
    server.start()
    while not ports and server.is_alive():
        server.join(0.1)
    if not ports:
        raise RuntimeError("the simulated UART board did not start")
    start = time.perf_counter()
    with BoardLink.open(f"socket://127.0.0.1:{ports[0]}", timeout=600) as link:
        engine = open_board_engine(link, BoardDesign.load(design))
        got = {r.name: r.matches for r in filter_batch(engine, docs)}
    took = time.perf_counter() - start
    server.join()
    session = json.loads((run_dir / "sessions.json").read_text())[0]
    bits = (session["close_ns"] - session["open_ns"]) / (divider * UART_CLOCK_NS)
    ns = bits * info["divider"] * UART_CLOCK_NS  # on the board
    size = sum(len(d.read_bytes()) for d in docs)
    mb_s = size / ns * 1e3
    row = {
        "link": f"UART ({info['baud']:,} baud 8N1)",
        "board": BOARD,
        "phy": f"UART (simulated at {divider} cycles a bit, scaled to {info['divider']})",
        "queries": count,
        "query_set": "nitf-d8-p15",
        "readout": "sparse",
        "documents": len(docs),
        "document_bytes": size,
        "simulated_ms": round(ns / 1e6, 1),
        "bytes_per_cycle": None,
        "mb_per_s": round(mb_s, 4),
        "goal_mb_per_s": None,
        "meets_goal": None,
        "of_1gbe_payload_limit": round(mb_s / GBE_PAYLOAD_MB_S, 5),
        "frames": f"{bits:,.0f} bit times ({size * 10 / bits:.3f} of them document bytes)",
        "answers": verdict(got, expected_answers(docs, count)),
        "build_s": None,
        "run_s": round(took, 1),
        **digests,
    }
    log(f"  {mb_s:.4f} MB/s ({row['answers']})")
    return row


def shown(value: float) -> str:
    """``value`` with four significant digits (at least one decimal)."""
    digits = max(1, 3 - math.floor(math.log10(abs(value)))) if value else 1
    return f"{value:,.{digits}f}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--queries", default="1024,12000")
    parser.add_argument(
        "--phy", default="rgmii,gmii", help="PHYs up to 1,024 queries (larger: rgmii only)"
    )
    parser.add_argument("--uart-docs", type=int, default=100)
    parser.add_argument(
        "--uart-dividers",
        default="8,32",
        help="cycles a bit simulated (the first on --uart-docs, the others on 10 documents)",
    )
    parser.add_argument(
        "--only", choices=["ethernet", "uart", "render"], help="render: the saved rows again"
    )
    parser.add_argument("--work", type=Path, default=repo_root() / "build" / "hostlink")
    parser.add_argument("--sim-build", type=Path, default=repo_root() / "build" / "sim")
    parser.add_argument(
        "--bytes-per-cycle",
        type=int,
        default=1,
        choices=[1, 2, 4, 8],
        help="Ethernet: the W-byte engine, clocked at 125 / W MHz",
    )
    args = parser.parse_args()
    args.work.mkdir(parents=True, exist_ok=True)
    docs = load_documents([shared_data() / "nitf" / "docs"])
    digests = {"rtl_digest": source_digest(), "board_digest": board_source_digest()}
    sizes = [int(n) for n in args.queries.split(",")]
    phys = args.phy.split(",")
    rows = []
    if args.only not in ("uart", "render"):
        for count in sizes:
            for phy in phys if count <= 1024 else ["rgmii"]:
                rows.append(
                    ethernet_row(
                        args.work, args.sim_build, count, phy, docs, digests, args.bytes_per_cycle
                    )
                )
    if args.only not in ("ethernet", "render"):
        dividers = [int(d) for d in args.uart_dividers.split(",")]
        for i, divider in enumerate(dividers):
            subset = docs[: args.uart_docs if i == 0 else 10]
            rows.append(uart_row(args.work, args.sim_build, 1024, subset, divider, digests))
    path = RESULTS / "hostlink.json"
    saved = json.loads(path.read_text())["rows"] if path.exists() else []
    key = lambda r: (  # noqa: E731
        r["link"].split(" ")[0],
        r["phy"],
        r["queries"],
        r["documents"],
        r.get("beat_bytes") or 1,
    )
    rows = replace_rows(saved, rows, key)
    rows.sort(key=lambda r: (r["link"].startswith("UART"), r["queries"], r["phy"]))
    for row in rows:  # shown as measured (the table's own format rounds 116.6 to 117)
        if not row["link"].startswith("UART"):  # rows from before W: the one-byte engine
            row.setdefault("beat_bytes", 1)
            row.setdefault("engine_mhz", LINK_HZ / 1e6)
        row["mb_per_s_shown"] = shown(row["mb_per_s"])
        row["simulated_shown"] = shown(row["simulated_ms"])
    ethernet = [r for r in rows if not r["link"].startswith("UART")]
    uart = [r for r in rows if r["link"].startswith("UART")]
    ratio = ""
    if uart and any(r["queries"] == 1024 for r in ethernet):
        fast = min(r["mb_per_s"] for r in ethernet if r["queries"] == 1024)
        slow = max(uart, key=lambda r: r["documents"])["mb_per_s"]
        ratio = f" Ethernet / UART at 1,024 queries: {fast / slow:,.0f}x."
    notes = (
        "Throughput of document bytes through the host link, simulated RTL (Verilator), the "
        "100 shared NITF documents (387,755 bytes) unless the documents column says fewer. "
        "Ethernet: the ECPIX-5 board core with LiteEth (MAC, ARP, IP, UDP) and the PHY named, "
        "link and engine at 125 MHz (a W-byte engine, W > 1: at 125 / W MHz, its beats packed "
        "in the link domain; --bytes-per-cycle W), the line kept busy by a host in the cocotb bench "
        "(frames always queued, 12-byte gap, 1,440-byte datagrams within the credit, readouts "
        "acknowledged); first document byte sent to last readout received; bytes/cycle per "
        "125 MHz cycle. 1 GbE's UDP payload limit with 1,500-byte frames is "
        f"{GBE_PAYLOAD_MB_S:.1f} MB/s (1,472 of 1,538 line bytes; 'of 1 GbE limit'); the "
        f"protocol's 1,440-byte datagrams allow {PROTOCOL_MB_S:.1f} MB/s. Goals (issue 35): "
        "110 MB/s at 1,024 queries, 100 MB/s at 12,000. UART: the ECPIX-5 UART board core, "
        "xpfilt host sending a document and waiting for its readout, simulated at a few cycles "
        "a bit (the board's 868 would take hours) and its time in bit times scaled to the "
        "board's baud; on the same 10 documents 8 and 32 cycles a bit agree within 0.6 % (8 "
        "counts the engine's cycles and the host's waits as more bit times: a lower bound). "
        f"Answers checked against ../shared/data/expected.{ratio} Command: nice python bench/hostlink.py "
        "(build_s: the Verilator build, 0 when cached; run_s: the simulation's wall time)."
    )
    columns = [
        ("link", "link"),
        ("board", "board"),
        ("phy", "PHY"),
        ("queries", "queries"),
        ("beat_bytes", "engine bytes a beat (W)"),
        ("engine_mhz", "engine MHz"),
        ("query_set", "query set"),
        ("readout", "readout"),
        ("documents", "documents"),
        ("document_bytes", "document bytes"),
        ("simulated_shown", "simulated ms"),
        ("bytes_per_cycle", "bytes/cycle (125 MHz)"),
        ("mb_per_s_shown", "MB/s"),
        ("goal_mb_per_s", "goal MB/s"),
        ("meets_goal", "meets goal"),
        ("of_1gbe_payload_limit", "of 1 GbE limit"),
        ("frames", "frames / line"),
        ("answers", "answers"),
        ("build_s", "build s"),
        ("run_s", "run s"),
        ("rtl_digest", "RTL digest"),
        ("board_digest", "board digest"),
    ]
    save("hostlink", rows, columns, "Host link throughput: Gigabit Ethernet and UART", notes)
    print(f"saved {RESULTS / 'hostlink.md'}", file=sys.stderr)


if __name__ == "__main__":
    main()
