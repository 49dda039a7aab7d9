"""cocotb bridge from a TCP socket to the UART pins of a simulated board core (``xpfilt_board``,
see :class:`xpfilt.boards.top.BoardCore` and :func:`xpfilt.boards.build.simulation_verilog`).

The test listens on a TCP port and writes the port number to a file, then serves connections
one after the other (the board's state carries over, as on a real board): bytes from the client
are driven onto ``rx`` as 8N1 frames of ``divider`` clock cycles per bit, and bytes the board
sends on ``tx`` (sampled in the middle of each bit) go back to the client. So
``serial.serial_for_url("socket://127.0.0.1:PORT")`` -- :class:`xpfilt.boards.host.BoardLink` --
talks to the simulation exactly as to a board on a serial port.

Speed: Python wakes up once per run of equal bits on ``rx`` and once per bit on ``tx``; between
those Verilator runs freely. With nothing to send and the line quiet, the test sleeps a few
milliseconds in ``select`` between short stretches of simulated time.

Configuration (JSON named by ``$XPFILT_TB_CONFIG``): ``divider``, ``host``, ``port`` (0: any
free port), ``port_file``, ``connections`` (0: serve until the process is stopped),
``accept_timeout`` (seconds to wait for a connection before ending). The simulated times each
connection opened and closed (ns) are written to ``sessions.json`` beside ``port_file``.
"""

from __future__ import annotations

import json
import os
import select
import socket
from pathlib import Path

import cocotb
from cocotb.clock import Clock
from cocotb.triggers import ClockCycles, FallingEdge, Timer
from cocotb.utils import get_sim_time

from xpfilt.sim.config import CONFIG_ENV

PERIOD_NS = 10
#: Bit times simulated per poll of the socket while the client sends nothing.
_IDLE_BITS = 64


class TxMonitor:
    """Samples 8N1 frames on ``tx``; received bytes collect in ``out``."""

    def __init__(self, dut, bit_ns: int):
        self.tx = dut.tx
        self.bit_ns = bit_ns
        self.out = bytearray()
        self.framing_errors = 0
        self.last_activity = 0.0  # sim time (ns) of the last start bit seen

    async def run(self) -> None:
        half = Timer(self.bit_ns * 3 // 2, unit="ns")
        bit = Timer(self.bit_ns, unit="ns")
        while True:
            await FallingEdge(self.tx)
            self.last_activity = get_sim_time("ns")
            await half  # the middle of data bit 0
            value = 0
            for i in range(8):
                value |= int(self.tx.value) << i
                await bit
            if int(self.tx.value) != 1:  # the middle of the stop bit
                self.framing_errors += 1
            self.out += bytes([value])
            self.last_activity = get_sim_time("ns")


class RxDriver:
    """Drives 8N1 frames onto ``rx``, one timer per run of equal bits."""

    def __init__(self, dut, bit_ns: int):
        self.rx = dut.rx
        self.bit_ns = bit_ns
        self.rx.value = 1
        self._timers = {}

    def _timer(self, bits: int) -> Timer:
        timer = self._timers.get(bits)
        if timer is None:
            timer = self._timers[bits] = Timer(bits * self.bit_ns, unit="ns")
        return timer

    async def send(self, byte: int) -> None:
        line = [0] + [byte >> i & 1 for i in range(8)] + [1]
        i = 0
        while i < len(line):
            j = i
            while j < len(line) and line[j] == line[i]:
                j += 1
            self.rx.value = line[i]
            await self._timer(j - i)
            i = j


def _flush(conn: socket.socket, monitor: TxMonitor) -> bool:
    """Send what the board transmitted; False when the client is gone."""
    if not monitor.out:
        return True
    try:
        sent = conn.send(monitor.out)
    except BlockingIOError:
        return True
    except OSError:
        monitor.out.clear()
        return False
    del monitor.out[:sent]
    return True


async def serve(conn: socket.socket, driver: RxDriver, monitor: TxMonitor, dut) -> None:
    """Bridge one connection until the client closes it."""
    conn.setblocking(False)
    monitor.out.clear()
    idle_wait = Timer(_IDLE_BITS * driver.bit_ns, unit="ns")
    quiet_ns = 4 * 10 * driver.bit_ns
    nap = 0.001
    while True:
        if not _flush(conn, monitor):
            return
        try:
            chunk = conn.recv(1 << 16)
        except BlockingIOError:
            chunk = None
        except OSError:
            return
        if chunk == b"":
            return
        if chunk:
            nap = 0.001
            for k, byte in enumerate(chunk):
                await driver.send(byte)
                if monitor.out and k % 32 == 31:
                    _flush(conn, monitor)
            continue
        await idle_wait  # let the board work: readouts, status frames
        if not monitor.out and get_sim_time("ns") - monitor.last_activity > quiet_ns:
            select.select([conn], [], [], nap)  # nothing moves: wait for the client
            nap = min(nap * 2, 0.05)


@cocotb.test()
async def board_bridge(dut):
    """Serve TCP clients on the board's UART until the configured connections are done."""
    config = json.loads(Path(os.environ[CONFIG_ENV]).read_text())
    bit_ns = config["divider"] * PERIOD_NS
    Clock(dut.clk, PERIOD_NS, unit="ns").start(start_high=False)
    driver = RxDriver(dut, bit_ns)
    dut.rst.value = 1
    await ClockCycles(dut.clk, 4)
    dut.rst.value = 0
    monitor = TxMonitor(dut, bit_ns)
    cocotb.start_soon(monitor.run())

    server = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    server.bind((config["host"], config["port"]))
    server.listen(1)
    port_file = Path(config["port_file"])
    partial = port_file.with_suffix(".tmp")
    partial.write_text(str(server.getsockname()[1]))
    partial.rename(port_file)
    server.settimeout(config["accept_timeout"])
    served = 0
    sessions = []
    try:
        while not config["connections"] or served < config["connections"]:
            try:
                conn, peer = server.accept()
            except socket.timeout:
                dut._log.info("no connection within %s s: ending", config["accept_timeout"])
                break
            served += 1
            dut._log.info("connection %d from %s", served, peer)
            conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            opened = get_sim_time("ns")
            try:
                await serve(conn, driver, monitor, dut)
            finally:
                conn.close()
            sessions.append({"open_ns": opened, "close_ns": get_sim_time("ns")})
            port_file.with_name("sessions.json").write_text(json.dumps(sessions))
            dut._log.info("connection %d closed at %.0f us simulated", served, get_sim_time("us"))
    finally:
        server.close()
    assert monitor.framing_errors == 0, f"{monitor.framing_errors} bad stop bits on tx"
