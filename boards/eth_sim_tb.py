"""cocotb bridge from a UDP socket to the PHY pins of a simulated Ethernet board
(:class:`xpfilt.boards.eth_sim.EthernetSimTop`: the board core with LiteEth's MAC, ARP, IP and
UDP cores and its RGMII or GMII PHY).

cocotbext-eth's ``RgmiiSource`` drives the board's RGMII receive pins (4 bits on each edge of
the 125 MHz receive clock) and ``RgmiiSink`` takes its transmit pins on the transmit clock the
board drives; with the GMII PHY, ``GmiiSource`` and ``GmiiSink`` (8 bits per cycle). Each
datagram a host sends to the socket goes to the board in an
Ethernet frame (IPv4, UDP, from the host's addresses below to the board's, both UDP ports the
board's: LiteEth's raw port takes only those); each UDP frame the board sends goes back to the
address the host last sent from. ARP requests for the host's address are answered with the host
MAC; other frames are counted and dropped. So ``xpfilt host --udp 127.0.0.1:PORT`` talks to the
simulation exactly as to a board.

Configuration (JSON named by ``$XPFILT_TB_CONFIG``): ``host``, ``port`` (0: any free port),
``port_file``, ``idle_timeout`` (seconds without a datagram before ending), ``mac``, ``ip``,
``udp_port`` (the board's), ``phy`` (``rgmii``, the default, or ``gmii``: the simulation's).
"""

from __future__ import annotations

import json
import os
import socket
import struct
import time
from pathlib import Path

import cocotb
from cocotb.clock import Clock
from cocotb.triggers import ClockCycles, Timer

from xpfilt.sim.config import CONFIG_ENV

HOST_MAC = bytes.fromhex("020000000001")
#: The simulated host's IP address: the board's with the last byte 1 (or 2 if that is the board).
PERIOD_NS = 8
#: LiteEth's system clock (62.5 MHz, its 32-bit datapath), as on the boards.
ETH_PERIOD_NS = 16


def _checksum(header: bytes) -> int:
    total = sum(struct.unpack(f"!{len(header) // 2}H", header))
    while total >> 16:
        total = (total & 0xFFFF) + (total >> 16)
    return ~total & 0xFFFF


def udp_frame(board_mac, board_ip, host_ip, port, payload: bytes, ident: int) -> bytes:
    """An Ethernet frame (no preamble, no FCS) of an IPv4 UDP datagram host -> board."""
    udp = struct.pack("!HHHH", port, port, 8 + len(payload), 0) + payload
    ip = struct.pack("!BBHHHBBH4s4s", 0x45, 0, 20 + len(udp), ident & 0xFFFF, 0, 64, 17, 0,
                     host_ip, board_ip)  # fmt: skip
    ip = ip[:10] + struct.pack("!H", _checksum(ip)) + ip[12:]
    return board_mac + HOST_MAC + b"\x08\x00" + ip + udp


def arp_reply(board_mac, board_ip, host_ip) -> bytes:
    body = struct.pack("!HHBBH6s4s6s4s", 1, 0x0800, 6, 4, 2, HOST_MAC, host_ip, board_mac,
                       board_ip)  # fmt: skip
    return board_mac + HOST_MAC + b"\x08\x06" + body


def phy_models(dut, phy: str):
    """The PHY's receive clock started and cocotbext-eth's (source, sink) on the pins of
    ``phy``: RGMII's sink on the transmit clock the board drives (LiteEth's ``ODDRX1F``), GMII's
    on the receive clock (LiteEth's GMII PHY transmits on it)."""
    from cocotbext.eth import GmiiSink, GmiiSource, RgmiiSink, RgmiiSource

    if phy == "rgmii":
        Clock(dut.rgmii_rx_clk, PERIOD_NS, unit="ns").start()
        source = RgmiiSource(dut.rgmii_rxd, dut.rgmii_rx_ctl, dut.rgmii_rx_clk)
        sink = RgmiiSink(dut.rgmii_txd, dut.rgmii_tx_ctl, dut.rgmii_tx_clk)
    else:
        Clock(dut.gmii_rx_clk, PERIOD_NS, unit="ns").start()
        source = GmiiSource(dut.gmii_rxd, dut.gmii_rx_er, dut.gmii_rx_dv, dut.gmii_rx_clk)
        sink = GmiiSink(dut.gmii_txd, dut.gmii_tx_er, dut.gmii_tx_en, dut.gmii_rx_clk)
    return source, sink


@cocotb.test()
async def ethernet_bridge(dut):
    from cocotbext.eth import GmiiFrame

    config = json.loads(Path(os.environ[CONFIG_ENV]).read_text())
    board_mac = int(config["mac"].replace(":", ""), 16).to_bytes(6, "big")
    board_ip = bytes(int(b) for b in config["ip"].split("."))
    host_ip = board_ip[:3] + bytes([1 if board_ip[3] != 1 else 2])
    udp_port = config["udp_port"]

    Clock(dut.link_clk, PERIOD_NS, unit="ns").start()
    Clock(dut.clk, config.get("engine_period_ns", PERIOD_NS), unit="ns").start()
    Clock(dut.eth_clk, ETH_PERIOD_NS, unit="ns").start()
    dut.link_rst.value = 1
    dut.rst.value = 1
    dut.eth_rst.value = 1
    source, sink = phy_models(dut, config.get("phy", "rgmii"))
    await ClockCycles(dut.link_clk, 8)
    dut.link_rst.value = 0
    dut.rst.value = 0
    dut.eth_rst.value = 0
    await ClockCycles(dut.link_clk, 64)

    if "rate" in config:
        await line_rate(dut, config, source, sink, (board_mac, board_ip, host_ip, udp_port))
        return

    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 1 << 21)
    sock.bind((config["host"], config["port"]))
    sock.setblocking(False)
    port_file = Path(config["port_file"])
    partial = port_file.with_suffix(".tmp")
    partial.write_text(str(sock.getsockname()[1]))
    partial.rename(port_file)

    peer = None
    heard = time.monotonic()
    ident = 0
    counts = {"to_board": 0, "to_host": 0, "arp": 0, "other": 0, "bad_fcs": 0}
    step = Timer(2, unit="us")
    try:
        while time.monotonic() - heard < config["idle_timeout"]:
            moved = False
            while True:
                try:
                    payload, peer = sock.recvfrom(65536)
                except BlockingIOError:
                    break
                heard = time.monotonic()
                ident += 1
                frame = udp_frame(board_mac, board_ip, host_ip, udp_port, payload, ident)
                await source.send(GmiiFrame.from_payload(frame))
                counts["to_board"] += 1
                moved = True
            while not sink.empty():
                frame = sink.recv_nowait()
                moved = True
                if not frame.check_fcs():
                    counts["bad_fcs"] += 1
                    continue
                data = frame.get_payload()
                kind = data[12:14]
                if kind == b"\x08\x06" and data[38:42] == host_ip:  # ARP: who has the host?
                    await source.send(
                        GmiiFrame.from_payload(arp_reply(board_mac, board_ip, host_ip))
                    )
                    counts["arp"] += 1
                elif kind == b"\x08\x00" and data[23] == 17 and peer is not None:
                    header = (data[14] & 0xF) * 4
                    length = struct.unpack("!H", data[14 + header + 4 : 14 + header + 6])[0]
                    udp_payload = data[14 + header + 8 : 14 + header + length]
                    try:
                        sock.sendto(udp_payload, peer)
                    except OSError:
                        pass
                    counts["to_host"] += 1
                else:
                    counts["other"] += 1
            await step
            if not moved and source.empty():
                await Timer(20, unit="us")
    finally:
        sock.close()
        dut._log.info("bridge ended: %s", counts)
    assert counts["bad_fcs"] == 0, counts


class LineRateHost:
    """The line-rate bench's host, without the simulation: ``stream`` (input records) goes in
    full datagrams of session ``session`` within the board's credit, and the readout stream
    comes back in order (``records``, taken by a :class:`xpfilt.boards.protocol.ReadoutReceiver`
    as ``xpfilt host`` takes it; the simulated line loses nothing, so no NAK is sent).
    :meth:`take` takes a UDP payload from the board; :meth:`datagrams` says what to send now,
    ``queued`` frames being on the PHY's queue."""

    QUEUED = 3  # frames kept queued on the PHY: the line never idles between them

    def __init__(self, stream: bytes, session: int):
        from xpfilt.boards.protocol import ReadoutReceiver

        self.stream, self.session = stream, session
        self.limit = self.seq = 0
        self.readout, self.records = ReadoutReceiver(), []

    def take(self, payload: bytes) -> None:
        from xpfilt.boards.protocol import decode_datagram

        d = decode_datagram(payload)
        if d is None or d.session != self.session:
            return
        self.limit = max(self.limit, d.limit)
        self.records += self.readout.take(d).records

    def datagrams(self, queued: int) -> list:
        from xpfilt.boards.protocol import MAX_PAYLOAD, Datagram, DatagramKind

        def data(payload=b""):
            return Datagram(DatagramKind.DATA.value, self.session, self.seq,
                            self.readout.rx_next, 0, payload)  # fmt: skip

        out = []
        while self.seq < len(self.stream) and queued + len(out) < self.QUEUED:
            size = min(MAX_PAYLOAD, len(self.stream) - self.seq, self.limit - self.seq)
            if size <= 0:
                break
            out.append(data(self.stream[self.seq : self.seq + size]))
            self.seq += size
        # readout that came is acknowledged in the next datagram, data or (the line not full
        # of data, no credit) alone: the board may be waiting for it, its credit held up by
        # the engine behind its readout; at the end, an ack whenever the line is free
        if not out and queued < self.QUEUED:
            done = self.seq >= len(self.stream) and not queued
            if self.readout.ack_due or done:
                out.append(data())
        if out:
            self.readout.ack_due = False
        return out


async def line_rate(dut, config, source, sink, addresses):
    """Throughput with the line kept busy: a host inside the simulation (:class:`LineRateHost`)
    sends the documents of ``config["rate"]["documents"]`` (paths) in full datagrams within the
    board's credit, several frames always queued on the PHY (cocotbext-eth keeps the 12-byte
    inter-frame gap), and acknowledges the readouts. Writes ``config["rate"]["output"]``
    (JSON): document bytes, simulated nanoseconds from the first document byte sent to the last
    readout, frames, and the readout records (kind, document number, error flags, body in hex)
    to check."""
    from cocotb.utils import get_sim_time
    from cocotbext.eth import GmiiFrame

    from xpfilt.boards.protocol import (
        Datagram,
        DatagramKind,
        InputKind,
        encode_datagram,
        input_record,
    )

    board_mac, board_ip, host_ip, udp_port = addresses
    documents = [Path(p).read_bytes() for p in config["rate"]["documents"]]
    stream = b"".join(input_record(InputKind.DOCUMENT, d) for d in documents)
    host, ident = LineRateHost(stream, session=0x35), 0
    frames = {"to_board": 0, "to_host": 0}

    def send(datagram):
        nonlocal ident
        ident += 1
        raw = encode_datagram(datagram)
        frame = udp_frame(board_mac, board_ip, host_ip, udp_port, raw, ident)
        source.send_nowait(GmiiFrame.from_payload(frame))

    def take():
        while not sink.empty():
            data = sink.recv_nowait().get_payload()
            if data[12:14] == b"\x08\x06":
                source.send_nowait(GmiiFrame.from_payload(arp_reply(board_mac, board_ip, host_ip)))
                continue
            header = (data[14] & 0xF) * 4
            length = struct.unpack("!H", data[14 + header + 4 : 14 + header + 6])[0]
            frames["to_host"] += 1
            host.take(data[14 + header + 8 : 14 + header + length])

    waited = 0
    while host.limit == 0:  # LiteEth may still be leaving reset: ask again every 20 us
        if waited % 20 == 0:
            send(Datagram(DatagramKind.HELLO.value, host.session))
        await Timer(1, unit="us")
        waited += 1
        take()
    start = get_sim_time("ns")
    step = Timer(200, unit="ns")
    while len(host.records) < len(documents):
        take()
        for datagram in host.datagrams(source.count()):
            send(datagram)
            frames["to_board"] += bool(datagram.payload)
        await step
    took = get_sim_time("ns") - start
    Path(config["rate"]["output"]).write_text(
        json.dumps(
            {
                "documents": len(documents),
                "bytes": sum(map(len, documents)),
                "ns": took,
                **frames,
                "readouts": [[r.kind, r.doc, r.errors, r.body.hex()] for r in host.records],
            }
        )
    )
