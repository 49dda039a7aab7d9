"""The boards xpfilt builds bitstreams for: :data:`BOARDS` maps a name to a :class:`Board`.

A board is an amaranth-boards platform plus what xpfilt needs to know about it: the FPGA's
capacity (for "does this query set fit" answers before place and route), which toolchain runs
here (the open-source one for iCE40 and ECP5; for Xilinx only the Vivado project files are
generated), the UART to the host and which LED shows what (:data:`hdl.board.LED_FUNCTIONS`).
The clock is the platform's default clock, and so are its constraints.
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
    """A board. ``family``: ``ice40``, ``ecp5`` or ``xilinx`` (the cell families of
    :func:`xpfilt.synth.count_cells`). ``luts``/``ffs``: LUTs (LUT4 on iCE40/ECP5, LUT6 on
    Xilinx) and flip-flops of the device; ``bram``: block RAMs (iCE40 EBR 4 kbit, ECP5 DP16KD
    18 kbit, Xilinx RAMB36); ``lutram``: whether LUTs can be RAM. ``bitstream``: the file the
    open toolchain writes (None: tools are not run here). ``leds``: (LED function, resource
    name, number)."""
    name: str
    title: str
    platform: type
    family: str
    device: str
    luts: int
    ffs: int
    bram: int
    lutram: bool
    bitstream: Optional[str]
    leds: tuple[tuple[str, str, int], ...]
    notes: str = ""

    def create_platform(self):
        return self.platform()

    @property
    def clock_hz(self) -> float:
        return self.platform().default_clk_frequency

    @property
    def runs_toolchain(self) -> bool:
        return self.bitstream is not None


BOARDS: dict[str, Board] = {board.name: board for board in [
    Board("icebreaker", "1BitSquared iCEBreaker", ICEBreakerPlatform, "ice40",
          "iCE40UP5K-SG48", luts=5_280, ffs=5_280, bram=30, lutram=False, bitstream="bin",
          # LED 0 is the red one, LED 1 the green one
          leds=(("error", "led", 0), ("heartbeat", "led", 1)),
          notes="12 MHz clock; FTDI FT2232H channel B is the UART (3 Mbaud = 12 MHz / 4 at most)"),
    Board("ulx3s-85f", "Radiona ULX3S (LFE5U-85F)", ULX3S_85F_Platform, "ecp5",
          "LFE5U-85F-6BG381C", luts=83_640, ffs=83_640, bram=208, lutram=True, bitstream="bit",
          leds=(("heartbeat", "led", 0), ("busy", "led", 1), ("error", "led", 2),
                ("loaded", "led", 3)),
          notes="25 MHz clock; FTDI FT231X is the UART (1 Mbaud = 25 MHz / 25 is the "
                "fastest exact rate)"),
    Board("arty-a7-35", "Digilent Arty A7-35", ArtyA7_35Platform, "xilinx",
          "XC7A35TI-CSG324-1L", luts=20_800, ffs=41_600, bram=50, lutram=True, bitstream=None,
          leds=(("heartbeat", "led", 0), ("busy", "led", 1), ("error", "led", 2),
                ("loaded", "led", 3)),
          notes="100 MHz clock; FTDI FT2232HQ channel B is the UART; Vivado builds the "
                "bitstream (not run here)"),
]}


def get_board(name: str) -> Board:
    try:
        return BOARDS[name]
    except KeyError:
        raise ValueError(f"board must be one of {', '.join(BOARDS)}, not {name!r}") from None
