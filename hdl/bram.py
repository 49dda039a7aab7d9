"""A read-only block RAM with its output register: the one home of the block RAM primitives.

:class:`RegisteredROM` reads ``rows[addr]`` two cycles after ``addr`` (the address registered by
the block RAM, then its output register), on as many read ports as asked. Elaborated for an
ECP5 (a ``platform`` whose ``family`` is ``"ecp5"``: :data:`ECP5`, or an Amaranth
``LatticePlatform``), it is made of ``DP16KD`` primitives with ``REGMODE = "OUTREG"``, their
own output registers (Yosys maps an inferred memory's output register into the fabric, never
into the block RAM: YosysHQ/yosys#5814, so the block RAM's clock-to-out, 5.8 ns without it,
starts a path through the fabric); elsewhere (simulation, Verilator, other families) it is an
``amaranth.lib.memory.Memory`` read port followed by a fabric register. Both forms show the same
data in the same cycle, so the cycle-accurate model knows one of them.
"""

from dataclasses import dataclass
from typing import Sequence

from amaranth.hdl import ClockSignal, Const, Instance, Module, ResetSignal, Signal
from amaranth.lib import wiring
from amaranth.lib.memory import Memory
from amaranth.lib.wiring import In, Out

__all__ = ["Target", "ECP5", "is_ecp5", "RegisteredROM", "DP16KD_WORDS", "DP16KD_WIDTH",
           "dp16kd_initvals"]


@dataclass(frozen=True)
class Target:
    """What a netlist is elaborated for, passed as Amaranth's ``platform`` (``verilog.convert(...,
    platform=ECP5)``): ``family`` as Amaranth's vendor platforms name it."""
    family: str


#: Elaborate for the ECP5 (block RAM primitives instantiated: synthesis only, no simulation
#: model).
ECP5 = Target("ecp5")

#: A DP16KD port 18 bits wide holds 1,024 words (the width of a ``RegisteredROM`` on the ECP5
#: is cut into slices of 18 bits, one DP16KD each; deeper ROMs keep the generic form).
DP16KD_WORDS = 1024
DP16KD_WIDTH = 18
#: Words of one ``INITVAL_xx`` parameter (each 18 bits in a slot of 20).
INITVAL_WORDS = 16
INITVAL_SLOT = 20


def is_ecp5(platform) -> bool:
    """Whether ``platform`` (as ``elaborate`` receives it) is an ECP5."""
    return getattr(platform, "family", None) == "ecp5"


def dp16kd_initvals(words: Sequence[int]) -> dict[str, Const]:
    """The ``INITVAL_00`` .. ``INITVAL_3F`` parameters of a DP16KD in 1,024 x 18 mode holding
    ``words`` (18-bit words from address 0): 16 words per parameter, word ``i`` in bits
    ``20i .. 20i + 17`` (the layout of Yosys's ``brams_map_16kd.v``)."""
    if len(words) > DP16KD_WORDS:
        raise ValueError(f"a DP16KD holds at most {DP16KD_WORDS} words of 18 bits, "
                         f"not {len(words)!r}")
    params = {}
    for k in range(DP16KD_WORDS // INITVAL_WORDS):
        chunk = words[k * INITVAL_WORDS:(k + 1) * INITVAL_WORDS]
        value = sum(word << (i * INITVAL_SLOT) for i, word in enumerate(chunk))
        params[f"INITVAL_{k:02X}"] = Const(value, INITVAL_WORDS * INITVAL_SLOT)
    return params


class RegisteredROM(wiring.Component):
    """``rows`` (integers of ``width`` bits) read on ``ports`` read ports: ``read[i].data`` is
    ``rows[a]`` two cycles after ``read[i].addr`` was ``a`` (``a`` below ``len(rows)``)."""

    def __init__(self, rows: Sequence[int], *, width: int, ports: int = 1):
        if width < 1:
            raise ValueError(f"ROM width must be at least 1, not {width!r}")
        if ports not in (1, 2):
            raise ValueError(f"ROM read ports must be 1 or 2, not {ports!r}")
        if not rows:
            raise ValueError("ROM rows must not be empty")
        self.rows = list(rows)
        self.width = width
        self.ports = ports
        abits = max(1, (len(self.rows) - 1).bit_length())
        super().__init__({"read": Out(wiring.Signature({"addr": In(abits), "data": Out(width)}))
                          .array(ports)})

    def elaborate(self, platform):
        m = Module()
        if is_ecp5(platform) and len(self.rows) <= DP16KD_WORDS:
            self._dp16kd(m)
            return m
        m.submodules.memory = memory = Memory(shape=self.width, depth=len(self.rows),
                                              init=self.rows, attrs={"rom_style": "block"})
        for k, port in enumerate(self.read):
            read = memory.read_port()
            data = Signal(self.width, name=f"out{k}")
            m.d.comb += read.addr.eq(port.addr)
            m.d.sync += data.eq(read.data)
            m.d.comb += port.data.eq(data)
        return m

    def _dp16kd(self, m: Module) -> None:
        """The ROM as DP16KDs (1,024 x 18 each, both ports reading, REGMODE OUTREG)."""
        names = "AB"
        for s, lo in enumerate(range(0, self.width, DP16KD_WIDTH)):
            bits = min(DP16KD_WIDTH, self.width - lo)
            words = [row >> lo & ((1 << bits) - 1) for row in self.rows]
            args = {"p_DATA_WIDTH_A": DP16KD_WIDTH, "p_DATA_WIDTH_B": DP16KD_WIDTH,
                    "p_REGMODE_A": "OUTREG", "p_REGMODE_B": "OUTREG",
                    "p_RESETMODE": "SYNC", "p_ASYNC_RESET_RELEASE": "SYNC",
                    "p_CSDECODE_A": "0b000", "p_CSDECODE_B": "0b000",
                    "p_WRITEMODE_A": "NORMAL", "p_WRITEMODE_B": "NORMAL", "p_GSR": "AUTO",
                    **{f"p_{name}": value for name, value in dp16kd_initvals(words).items()}}
            for k, name in enumerate(names):
                port = self.read[k] if k < self.ports else None
                out = Signal(DP16KD_WIDTH, name=f"slice{s}_do{name.lower()}")
                # x18: ADx13..ADx4 the word, ADx3..ADx2 zero, ADx1..ADx0 the write's byte
                # enables (no write)
                addr = Signal(14, name=f"slice{s}_ad{name.lower()}")
                if port is not None:
                    m.d.comb += [addr[4:4 + len(port.addr)].eq(port.addr),
                                 port.data[lo:lo + bits].eq(out[:bits])]
                args.update({f"i_CLK{name}": ClockSignal(), f"i_CE{name}": Const(1),
                             f"i_OCE{name}": Const(1), f"i_RST{name}": ResetSignal(),
                             f"i_WE{name}": Const(0),
                             **{f"i_CS{name}{j}": Const(0) for j in range(3)},
                             **{f"i_AD{name}{j}": addr[j] for j in range(14)},
                             **{f"i_DI{name}{j}": Const(0) for j in range(DP16KD_WIDTH)},
                             **{f"o_DO{name}{j}": out[j] for j in range(DP16KD_WIDTH)}})
            m.submodules[f"slice{s}"] = Instance("DP16KD", **args)
