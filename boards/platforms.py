"""The boards xpfilt builds bitstreams for: :data:`BOARDS` maps a name to a :class:`Board`.

A board is an amaranth-boards platform plus what xpfilt needs to know about it: its FPGA (the
capacity, for "does this query set fit" answers before place and route, comes from the one
device table, :data:`xpfilt.eda.synth.DEVICES`), which toolchain runs here (the open-source one for
iCE40 and ECP5; for Xilinx only the Vivado project files are generated), the UART to the host
and which LED shows what (:data:`xpfilt.boards.top.LED_FUNCTIONS`). The clock is the platform's
default clock, and so are its constraints.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Optional

from amaranth_boards.arty_a7 import ArtyA7_35Platform
from amaranth_boards.colorlight_5a75b_r7_0 import Colorlight_5A75B_R70Platform
from amaranth_boards.ecpix5 import ECPIX585Platform
from amaranth_boards.icebreaker import ICEBreakerPlatform
from amaranth_boards.ulx3s import ULX3S_85F_Platform

from xpfilt.eda.synth import DEVICES, Device

__all__ = ["Board", "BOARDS", "get_board", "LINKS"]

#: The host links a board can have: a UART (:mod:`xpfilt.boards.top`) or Gigabit Ethernet with
#: the UDP protocol (:mod:`xpfilt.boards.eth_top`).
LINKS = ("uart", "ethernet")

#: The Colorlight 5A-75B's LFE5U-25F (the device table's ECP5 is the 85F): 24,288 LUT4s and
#: flip-flops, 56 DP16KD.
_LFE5U_25F = dataclasses.replace(
    DEVICES["ecp5"],
    part="LFE5U-25F-CABGA256",
    nextpnr_args=("--25k", "--package", "CABGA256"),
    luts=24_288,
    ffs=24_288,
    bram=56,
)


@dataclass(frozen=True)
class Board:
    """A board. ``family``: ``ice40``, ``ecp5`` or ``xilinx``, the key of its FPGA in
    :data:`xpfilt.eda.synth.DEVICES` (capacity: ``luts``, ``ffs``, ``bram``, ``lutram``);
    ``device``: the exact part. ``bitstream``: the file the open toolchain writes (None: tools
    are not run here). ``leds``: (LED function, resource name, number[, subsignal of an RGB
    LED]). ``links``: the host links it can have (:data:`LINKS`), the default first;
    ``liteeth_device``: the part as LiteEth's generator names it and ``liteeth_hz`` LiteEth's
    system clock (Ethernet boards: its 32-bit datapath carries the line from 31.25 MHz on;
    the fastest the part's speed grade meets with margin). ``device_facts``: its capacity when it is not the device table's for ``family``."""

    name: str
    title: str
    platform: type
    family: str
    device: str
    bitstream: Optional[str]
    leds: tuple[tuple, ...]
    notes: str = ""
    links: tuple[str, ...] = ("uart",)
    liteeth_device: Optional[str] = None
    liteeth_hz: float = 62.5e6
    device_facts: Optional[Device] = None

    def create_platform(self):
        return self.platform()

    @property
    def capacity(self):
        return self.device_facts or DEVICES[self.family]

    @property
    def luts(self) -> int:
        return self.capacity.luts

    @property
    def ffs(self) -> int:
        return self.capacity.ffs

    @property
    def bram(self) -> int:
        return self.capacity.bram

    @property
    def lutram(self) -> bool:
        return self.capacity.lutram

    @property
    def clock_hz(self) -> float:
        return self.platform().default_clk_frequency

    @property
    def runs_toolchain(self) -> bool:
        return self.bitstream is not None


BOARDS: dict[str, Board] = {
    board.name: board
    for board in [
        Board(
            "icebreaker",
            "1BitSquared iCEBreaker",
            ICEBreakerPlatform,
            "ice40",
            "iCE40UP5K-SG48",
            bitstream="bin",
            # LED 0 is the red one, LED 1 the green one
            leds=(("error", "led", 0), ("heartbeat", "led", 1)),
            notes="12 MHz clock; FTDI FT2232H channel B is the UART (3 Mbaud = 12 MHz / 4 at most)",
        ),
        Board(
            "ulx3s-85f",
            "Radiona ULX3S (LFE5U-85F)",
            ULX3S_85F_Platform,
            "ecp5",
            "LFE5U-85F-6BG381C",
            bitstream="bit",
            leds=(
                ("heartbeat", "led", 0),
                ("busy", "led", 1),
                ("error", "led", 2),
                ("loaded", "led", 3),
            ),
            notes="25 MHz clock; FTDI FT231X is the UART (1 Mbaud = 25 MHz / 25 is the "
            "fastest exact rate)",
        ),
        Board(
            "ecpix5-85f",
            "LambdaConcept ECPIX-5 (LFE5UM5G-85F)",
            ECPIX585Platform,
            "ecp5",
            "LFE5UM5G-85F-8BG554C",
            bitstream="bit",
            leds=(
                ("heartbeat", "rgb_led", 0, "g"),
                ("busy", "rgb_led", 1, "b"),
                ("error", "rgb_led", 2, "r"),
                ("loaded", "rgb_led", 3, "g"),
            ),
            notes="100 MHz clock; RTL8211E Gigabit Ethernet PHY (RGMII); FTDI FT2232H channel "
            "B is the UART",
            links=("uart", "ethernet"),
            liteeth_device="LFE5UM5G-85F-8BG554C",
        ),
        Board(
            "colorlight-5a75b",
            "Colorlight 5A-75B v7.0 (LFE5U-25F)",
            Colorlight_5A75B_R70Platform,
            "ecp5",
            "LFE5U-25F-6BG256C",
            bitstream="bit",
            leds=(("heartbeat", "led", 0),),
            notes="25 MHz clock; two B50612D Gigabit Ethernet PHYs (RGMII; the first is used); "
            "no UART (its pins are the LED and the button)",
            links=("ethernet",),
            liteeth_device="LFE5U-25F-6BG256C",
            liteeth_hz=50e6,  # the -6 part: 62.5 MHz would leave no margin
            device_facts=_LFE5U_25F,
        ),
        Board(
            "arty-a7-35",
            "Digilent Arty A7-35",
            ArtyA7_35Platform,
            "xilinx",
            "XC7A35TI-CSG324-1L",
            bitstream=None,
            leds=(
                ("heartbeat", "led", 0),
                ("busy", "led", 1),
                ("error", "led", 2),
                ("loaded", "led", 3),
            ),
            notes="100 MHz clock; FTDI FT2232HQ channel B is the UART; Vivado builds the "
            "bitstream (not run here)",
        ),
    ]
}


def get_board(name: str) -> Board:
    try:
        return BOARDS[name]
    except KeyError:
        raise ValueError(f"board must be one of {', '.join(BOARDS)}, not {name!r}") from None
