"""The Ethernet core of the Ethernet boards: LiteEth's standalone UDP/IP core (MAC, ARP, IP,
UDP, the ECP5 RGMII PHY), written as Verilog by LiteEth's own generator (``liteeth_gen``, the
``liteeth.gen`` module of the ``eth`` extra) from the YAML configuration :func:`liteeth_config`
makes, and instantiated by the Amaranth board top.

The core is a module :data:`LITEETH_MODULE` with the RGMII pins (``rgmii_*``), its system clock
and reset (``sys_clock``, ``sys_reset``: the ``eth`` domain, :data:`LITEETH_HZ`; LiteEth
crosses to the PHY's receive and transmit clocks itself) and one *raw* UDP port, ``xpfilt_*``,
as wide as LiteEth's datapath (:data:`DATA_WIDTH` bits, byte lane 0 first, ``last_be`` marking
the last valid byte of a datagram's last word): ``source_*`` the datagrams received for the
board's port (payload, ``last``, the sender's IP address and port, the length, ``error``),
``sink_*`` the datagrams to send (destination address and port, length, payload).
:class:`xpfilt.boards.eth_bridge.UdpPortBridge` turns that port into the endpoint's bytes. LiteEth's raw port takes the datagrams whose destination port is the
port it sends to (``sink_dst_port``), so the board sends from and to its own UDP port, and a
host talks to it from that port (``xpfilt host --udp`` does, :mod:`xpfilt.boards.udp_host`).

Generation takes a few seconds; the Verilog is cached under the build directory by a hash of the
configuration and LiteEth's version.
"""

from __future__ import annotations

import hashlib
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from xpfilt.boards.protocol import UDP_PORT
from xpfilt.eda.synth import ToolError

__all__ = [
    "LITEETH_MODULE",
    "EthernetConfig",
    "liteeth_config",
    "generate_liteeth",
    "liteeth_version",
    "format_ip",
    "format_mac",
    "parse_ip",
    "parse_mac",
    "DEFAULT_MAC",
    "DEFAULT_IP",
    "DATA_WIDTH",
    "LITEETH_HZ",
    "udp_port_connections",
]

LITEETH_MODULE = "xpfilt_liteeth"
#: The raw UDP port's name in the generated core (its ports are ``xpfilt_sink_*`` and so on).
PORT_NAME = "xpfilt"
#: LiteEth's datapath width (bits) and its system clock on the boards: 32 bits at 62.5 MHz
#: carry 2 Gb/s, twice the line; its 8-bit datapath needs 125 MHz, which the ECP5 did not
#: reach (84.2 MHz on the -8, 56.9 MHz on the -6).
DATA_WIDTH = 32
LITEETH_HZ = 62.5e6
#: A locally administered unicast address (bit 1 of the first byte set, bit 0 clear).
DEFAULT_MAC = 0x02_58_50_46_49_4C  # 02:58:50:46:49:4c
DEFAULT_IP = 0xC0_A8_01_32  # 192.168.1.50


def format_mac(mac: int) -> str:
    return ":".join(f"{b:02x}" for b in mac.to_bytes(6, "big"))


def format_ip(ip: int) -> str:
    return ".".join(str(b) for b in ip.to_bytes(4, "big"))


def parse_mac(text: str) -> int:
    parts = text.split(":")
    if len(parts) != 6 or not all(len(p) == 2 for p in parts):
        raise ValueError(f"MAC address must be six hex bytes a:b:c:d:e:f, not {text!r}")
    try:
        value = int("".join(parts), 16)
    except ValueError:
        raise ValueError(f"MAC address must be six hex bytes a:b:c:d:e:f, not {text!r}") from None
    if value >> 40 & 1:
        raise ValueError(f"MAC address must be unicast (first byte even), not {text!r}")
    return value


def parse_ip(text: str) -> int:
    parts = text.split(".")
    if len(parts) != 4 or not all(p.isdigit() and int(p) < 256 for p in parts):
        raise ValueError(f"IP address must be four numbers 0-255 a.b.c.d, not {text!r}")
    return int.from_bytes(bytes(int(p) for p in parts), "big")


@dataclass(frozen=True)
class EthernetConfig:
    """What the board is on the network (``mac``, ``ip``, UDP ``port``) and how LiteEth is
    built for it: ``device`` (the ECP5 part), ``phy`` (a LiteEth PHY class name), ``clock_hz``
    (its system clock: the ``eth`` domain), ``data_width`` (its datapath's and the raw UDP
    port's, bits), the RGMII delays LiteEth adds in the FPGA (seconds;
    0 when the PHY chip adds them), ``tx_cdc_depth``: the words of LiteEth's transmit FIFO from
    its system clock to the PHY's (its default is 32: two 16-word LUT RAMs and a choice between
    them after the read, the slowest path of the RGMII clock on the -6 ECP5; 16 words, 64
    bytes, still hold what its system clock, twice the line's rate, puts ahead of the PHY),
    ``rx_cdc_depth``: the same for its receive FIFO, whose read and choice end LiteEth's own
    slowest path on the -6 (its receive stack's ready, 20.5 ns at 50 MHz); 16 words hold what
    the line brings while the endpoint, which takes a byte a cycle and needs 3 cycles a
    datagram against the 66 byte times a frame's headers, preamble, FCS and gap take, is
    behind)."""

    device: str
    mac: int = DEFAULT_MAC
    ip: int = DEFAULT_IP
    port: int = UDP_PORT
    phy: str = "LiteEthECP5PHYRGMII"
    clock_hz: float = LITEETH_HZ
    data_width: int = DATA_WIDTH
    tx_delay: float = 2e-9
    rx_delay: float = 2e-9
    tx_cdc_depth: int = 16
    rx_cdc_depth: int = 16

    def __post_init__(self):
        if not 0 < self.port < 65536:
            raise ValueError(f"UDP port must be between 1 and 65535, not {self.port!r}")
        if self.mac >> 40 & 1 or not 0 < self.mac < 1 << 48:
            raise ValueError(f"MAC address must be a unicast 48-bit address, not {self.mac:#x}")

    @property
    def address(self) -> str:
        return f"{format_mac(self.mac)} {format_ip(self.ip)}:{self.port}"


def liteeth_config(config: EthernetConfig) -> str:
    """The YAML configuration ``liteeth_gen`` reads: a UDP core (``core: udp``) with the board's
    MAC and IP addresses fixed and one raw UDP port as wide as the datapath."""
    return "\n".join(
        [
            f"phy: {config.phy}",
            "vendor: lattice",
            "toolchain: trellis",
            f"device: {config.device}",
            f"clk_freq: {config.clock_hz:g}",
            f"phy_tx_delay: {config.tx_delay:g}",
            f"phy_rx_delay: {config.rx_delay:g}",
            f"tx_cdc_depth: {config.tx_cdc_depth}",
            f"rx_cdc_depth: {config.rx_cdc_depth}",
            "core: udp",
            f"mac_address: {config.mac:#014x}",
            f"ip_address: {format_ip(config.ip)}",
            f"data_width: {config.data_width}",
            "udp_ports:",
            f"  {PORT_NAME}:",
            "    mode: raw",
            f"    data_width: {config.data_width}",
            "",
        ]
    )


def liteeth_version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("liteeth")
    except PackageNotFoundError:
        raise ToolError(
            "the Ethernet link needs LiteEth (the eth extra): pip install -e '.[eth]' "
            "(make setup installs it)"
        ) from None


def generate_liteeth(config: EthernetConfig, cache: Path, *, timeout: float = 300) -> str:
    """The Verilog of the LiteEth core for ``config`` (generated into ``cache``/<hash>/, or
    taken from there)."""
    text = liteeth_config(config)
    key = hashlib.sha256(f"{liteeth_version()}\n{text}".encode()).hexdigest()[:16]
    directory = Path(cache).resolve() / key
    verilog = directory / "gateware" / f"{LITEETH_MODULE}.v"
    if not verilog.exists():
        directory.mkdir(parents=True, exist_ok=True)
        (directory / "liteeth.yml").write_text(text)
        command = [
            sys.executable,
            "-m",
            "liteeth.gen",
            str(directory / "liteeth.yml"),
            "--name",
            LITEETH_MODULE,
            "--output-dir",
            str(directory),
        ]
        try:
            run = subprocess.run(
                command, capture_output=True, text=True, timeout=timeout, cwd=directory
            )
        except subprocess.TimeoutExpired:
            raise ToolError(f"liteeth_gen took more than {timeout:g} s") from None
        (directory / "liteeth_gen.log").write_text(run.stdout + run.stderr)
        if run.returncode or not verilog.exists():
            shutil.rmtree(directory / "gateware", ignore_errors=True)
            tail = "\n".join((run.stdout + run.stderr).splitlines()[-15:])
            raise ToolError(f"liteeth_gen failed (exit {run.returncode}):\n{tail}")
    return verilog.read_text()


def udp_port_connections(rx, tx, port: int) -> dict:
    """The ports of the generated core's UDP user port (:data:`PORT_NAME`) as ``Instance``
    keyword arguments: datagrams received into stream ``rx`` (words of
    :class:`xpfilt.boards.eth_bridge.RxWord`: data, last, last_be, error, source address and
    port), datagrams from stream ``tx`` (:class:`~xpfilt.boards.eth_bridge.TxWord`) sent from
    and to UDP ``port``. The one definition for the board top and its simulation."""
    from amaranth.hdl import Const, Signal

    p = PORT_NAME
    return {
        f"o_{p}_source_valid": rx.valid,
        f"i_{p}_source_ready": rx.ready,
        f"o_{p}_source_data": rx.payload.data,
        f"o_{p}_source_last": rx.payload.last,
        f"o_{p}_source_error": rx.payload.error,
        f"o_{p}_source_ip_address": rx.payload.ip,
        f"o_{p}_source_src_port": rx.payload.port,
        f"o_{p}_source_dst_port": Signal(16),
        f"o_{p}_source_length": Signal(16),
        f"o_{p}_source_last_be": rx.payload.last_be,
        f"i_{p}_sink_valid": tx.valid,
        f"o_{p}_sink_ready": tx.ready,
        f"i_{p}_sink_data": tx.payload.data,
        f"i_{p}_sink_last": tx.payload.last,
        f"i_{p}_sink_last_be": tx.payload.last_be,
        f"i_{p}_sink_ip_address": tx.payload.ip,
        f"i_{p}_sink_dst_port": Const(port, 16),
        f"i_{p}_sink_src_port": Const(port, 16),
        f"i_{p}_sink_length": tx.payload.length,
    }
