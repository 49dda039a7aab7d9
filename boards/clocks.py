"""The engine's clock on a board: the board's oscillator, or a PLL from it.

:func:`ecp5_pll` picks the dividers of an ECP5 ``EHXPLLL`` (feedback from CLKOP) for a wanted
frequency: output = input x ``clkfb_div`` / ``clki_div``, the VCO = output x ``clkop_div``
within :data:`ECP5_VCO_HZ`, the phase detector = input / ``clki_div`` within
:data:`ECP5_PFD_HZ` (the ECP5 family data sheet's sysCLOCK PLL limits, as Lattice's and
prjtrellis' ``ecppll`` use them). :class:`Ecp5PllClock` is that PLL on the platform's default
clock; :class:`xpfilt.boards.top.BoardTop` makes its ``sync`` domain from it. nextpnr-ecp5
derives the PLL output's constraint from the oscillator's (``FREQUENCY PORT`` in the LPF) and
the dividers, so its timing-driven placement and routing aim at the engine's clock rather than
at the board's oscillator (a ``FREQUENCY NET`` on the output is not needed, and Amaranth's name
for that net did not survive Yosys' flattening: nextpnr ignored it).
"""

import math
from dataclasses import dataclass

from amaranth.hdl import Instance, Module
from amaranth.lib import io, wiring
from amaranth.lib.wiring import Out

__all__ = [
    "ECP5_VCO_HZ",
    "ECP5_PFD_HZ",
    "PLL_FAMILIES",
    "Ecp5Pll",
    "ecp5_pll",
    "Ecp5PllClock",
]

#: The VCO's range and the phase detector's (input / CLKI_DIV) range, Hz.
ECP5_VCO_HZ = (400e6, 800e6)
ECP5_PFD_HZ = (3.125e6, 400e6)
#: Output frequencies the CLKOP output takes, Hz.
ECP5_OUT_HZ = (3.125e6, 400e6)
#: Largest divider values: CLKI_DIV, CLKFB_DIV, CLKOP_DIV.
ECP5_DIV_MAX = (128, 80, 128)
#: The output may miss the wanted frequency by this share at most.
TOLERANCE = 0.01
#: FPGA families whose board builds can clock the engine from a PLL.
PLL_FAMILIES = ("ecp5",)


@dataclass(frozen=True)
class Ecp5Pll:
    """An EHXPLLL with its feedback from CLKOP: ``input_hz`` in, CLKOP out; and, when
    ``clkos_div`` is not 0, a second output CLKOS (the VCO / ``clkos_div``), when
    ``clkos2_div`` is not 0, a third CLKOS2 (the VCO / ``clkos2_div``)."""

    input_hz: float
    clki_div: int
    clkfb_div: int
    clkop_div: int
    clkos_div: int = 0
    clkos2_div: int = 0

    @property
    def output_hz(self) -> float:
        return self.input_hz * self.clkfb_div / self.clki_div

    @property
    def vco_hz(self) -> float:
        return self.output_hz * self.clkop_div

    @property
    def clkop_cphase(self) -> int:
        """The coarse phase of CLKOP in VCO cycles: half its divider (0 degrees, as ecppll)."""
        return (self.clkop_div - 1) // 2

    @property
    def secondary_hz(self) -> float:
        """CLKOS's frequency (0: not used)."""
        return self.vco_hz / self.clkos_div if self.clkos_div else 0.0

    @property
    def tertiary_hz(self) -> float:
        """CLKOS2's frequency (0: not used)."""
        return self.vco_hz / self.clkos2_div if self.clkos2_div else 0.0


def ecp5_pll(
    input_hz: float, output_hz: float, secondary_hz: float = 0, tertiary_hz: float = 0
) -> Ecp5Pll:
    """The dividers whose output is nearest ``output_hz`` (ties: the VCO nearest the middle of
    its range) and, with ``secondary_hz`` (CLKOS) and ``tertiary_hz`` (CLKOS2), whose VCO also
    divides to those within :data:`TOLERANCE`; ValueError when nothing comes within
    :data:`TOLERANCE`."""
    low, high = ECP5_OUT_HZ
    if not low <= output_hz <= high:
        raise ValueError(
            f"engine clock must be between {low / 1e6:g} and {high / 1e6:g} MHz "
            f"on an ECP5 PLL, not {output_hz / 1e6:g} MHz"
        )
    middle = sum(ECP5_VCO_HZ) / 2
    best, best_key = None, None
    max_i, max_fb, max_op = ECP5_DIV_MAX
    for clki_div in range(1, max_i + 1):
        pfd = input_hz / clki_div
        if not ECP5_PFD_HZ[0] <= pfd <= ECP5_PFD_HZ[1]:
            continue
        for clkfb_div in range(1, max_fb + 1):
            out = pfd * clkfb_div
            first = max(1, math.ceil(ECP5_VCO_HZ[0] / out))
            for clkop_div in range(first, min(max_op, int(ECP5_VCO_HZ[1] // out)) + 1):
                if not ECP5_OUT_HZ[0] <= out <= ECP5_OUT_HZ[1]:
                    continue
                vco = out * clkop_div
                divs = [_divider(vco, hz) for hz in (secondary_hz, tertiary_hz)]
                if None in divs:
                    continue
                key = (abs(out - output_hz), abs(vco - middle))
                if best_key is None or key < best_key:
                    best = Ecp5Pll(input_hz, clki_div, clkfb_div, clkop_div, *divs)
                    best_key = key
    if best is None or abs(best.output_hz - output_hz) > TOLERANCE * output_hz:
        nearest = f" (nearest {best.output_hz / 1e6:g} MHz)" if best else ""
        also = "".join(f" and {hz / 1e6:g} MHz" for hz in (secondary_hz, tertiary_hz) if hz)
        raise ValueError(
            f"engine clock must be within {TOLERANCE:.0%} of what an ECP5 PLL "
            f"makes from {input_hz / 1e6:g} MHz, not {output_hz / 1e6:g} MHz{also}"
            f"{nearest}"
        )
    return best


def _divider(vco: float, hz: float):
    """The output divider taking ``vco`` to ``hz`` within :data:`TOLERANCE` (0: no output
    wanted; None: none does)."""
    if not hz:
        return 0
    div = max(1, min(ECP5_DIV_MAX[2], round(vco / hz)))
    return div if abs(vco / div - hz) <= TOLERANCE * hz else None


class Ecp5PllClock(wiring.Component):
    """The platform's default clock into an ECP5 EHXPLLL: ``clk`` at ``pll.output_hz``
    (CLKOP, fed back), ``clk2`` at ``pll.secondary_hz`` (CLKOS, if used), ``clk3`` at
    ``pll.tertiary_hz`` (CLKOS2, if used), ``locked`` once they are stable."""

    clk: Out(1)
    clk2: Out(1)
    clk3: Out(1)
    locked: Out(1)

    def __init__(self, pll: Ecp5Pll):
        self.pll = pll
        super().__init__()

    def elaborate(self, platform):
        m = Module()
        pll = self.pll
        clk_in = platform.request(platform.default_clk, dir="-")
        m.submodules.clk_buf = clk_buf = io.Buffer("i", clk_in)
        mhz = lambda hz: f"{hz / 1e6:g}"  # noqa: E731
        secondary = {}
        for port, div, hz, out in (
            ("CLKOS", pll.clkos_div, pll.secondary_hz, self.clk2),
            ("CLKOS2", pll.clkos2_div, pll.tertiary_hz, self.clk3),
        ):
            if div:
                secondary |= {
                    f"a_FREQUENCY_PIN_{port}": mhz(hz),
                    f"p_{port}_ENABLE": "ENABLED",
                    f"p_{port}_DIV": div,
                    f"p_{port}_CPHASE": (div - 1) // 2,
                    f"p_{port}_FPHASE": 0,
                    f"o_{port}": out,
                }
        m.submodules.pll = Instance(
            "EHXPLLL",
            a_FREQUENCY_PIN_CLKI=mhz(pll.input_hz),
            a_FREQUENCY_PIN_CLKOP=mhz(pll.output_hz),
            a_ICP_CURRENT="12",
            a_LPF_RESISTOR="8",
            a_MFG_ENABLE_FILTEROPAMP="1",
            a_MFG_GMCREF_SEL="2",
            p_PLLRST_ENA="DISABLED",
            p_INTFB_WAKE="DISABLED",
            p_STDBY_ENABLE="DISABLED",
            p_DPHASE_SOURCE="DISABLED",
            p_OUTDIVIDER_MUXA="DIVA",
            p_CLKOP_ENABLE="ENABLED",
            p_CLKI_DIV=pll.clki_div,
            p_CLKFB_DIV=pll.clkfb_div,
            p_CLKOP_DIV=pll.clkop_div,
            p_CLKOP_CPHASE=pll.clkop_cphase,
            p_CLKOP_FPHASE=0,
            p_FEEDBK_PATH="CLKOP",
            i_CLKI=clk_buf.i,
            i_CLKFB=self.clk,
            i_RST=0,
            i_STDBY=0,
            i_PHASESEL0=0,
            i_PHASESEL1=0,
            i_PHASEDIR=1,
            i_PHASESTEP=1,
            i_PHASELOADREG=1,
            i_PLLWAKESYNC=0,
            i_ENCLKOP=0,
            o_CLKOP=self.clk,
            o_LOCK=self.locked,
            **secondary,
        )
        return m
