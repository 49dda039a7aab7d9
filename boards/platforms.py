"""The boards xpfilt builds bitstreams for: :data:`BOARDS` maps a name to a :class:`Board`.

A board is an amaranth-boards platform plus what xpfilt needs to know about it: its FPGA (the
capacity, for "does this query set fit" answers before place and route, comes from the one
device table, :data:`xpfilt.eda.synth.DEVICES`), which toolchain runs here (the open-source one for
iCE40 and ECP5; for Xilinx only the Vivado project files are generated), the UART to the host
and which LED shows what (:data:`xpfilt.boards.top.LED_FUNCTIONS`). The clock is the platform's
default clock, and so are its constraints.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

from amaranth_boards.arty_a7 import ArtyA7_35Platform
from amaranth_boards.icebreaker import ICEBreakerPlatform
from amaranth_boards.ulx3s import ULX3S_85F_Platform

__all__ = ["Board", "BOARDS", "get_board"]


@dataclass(frozen=True)
class Board:
    """A board. ``family``: ``ice40``, ``ecp5`` or ``xilinx``, the key of its FPGA in
    :data:`xpfilt.eda.synth.DEVICES` (capacity: ``luts``, ``ffs``, ``bram``, ``lutram``);
    ``device``: the exact part. ``bitstream``: the file the open toolchain writes (None: tools
    are not run here). ``leds``: (LED function, resource name, number)."""

    name: str
    title: str
    platform: type
    family: str
    device: str
    bitstream: Optional[str]
    leds: tuple[tuple[str, str, int], ...]
    notes: str = ""

    def create_platform(self):
        return self.platform()

    @property
    def capacity(self):
        from xpfilt.eda.synth import DEVICES

        return DEVICES[self.family]

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
