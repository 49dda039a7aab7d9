"""Block RAMs with their output registers: the one home of the block RAM primitives.

:class:`RegisteredRAM` (one write port, one read port) reads ``data[addr]`` two cycles after
``addr`` the same way, as a synchronous ``Memory`` read port and a fabric register would; on the
ECP5 it is made of :func:`dp16kd` primitives 36 bits wide (pseudo dual port, up to 512 words
all 0 at first) or 18 bits wide (up to 1,024 words).

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

__all__ = [
    "Target",
    "ECP5",
    "is_ecp5",
    "RegisteredROM",
    "RegisteredRAM",
    "DP16KD_WORDS",
    "DP16KD_WIDTH",
    "DP16KD_WIDE_WORDS",
    "DP16KD_WIDE_WIDTH",
    "dp16kd",
    "dp16kd_initvals",
]


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
#: In its pseudo-dual-port mode (port A writes, port B reads, both 36 bits) a DP16KD holds 512
#: words of 36 bits (the :class:`RegisteredRAM` form).
DP16KD_WIDE_WORDS = 512
DP16KD_WIDE_WIDTH = 36
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
        raise ValueError(
            f"a DP16KD holds at most {DP16KD_WORDS} words of 18 bits, not {len(words)!r}"
        )
    params = {}
    for k in range(DP16KD_WORDS // INITVAL_WORDS):
        chunk = words[k * INITVAL_WORDS : (k + 1) * INITVAL_WORDS]
        value = sum(word << (i * INITVAL_SLOT) for i, word in enumerate(chunk))
        params[f"INITVAL_{k:02X}"] = Const(value, INITVAL_WORDS * INITVAL_SLOT)
    return params


def dp16kd(*, width_a: int, width_b: int, **ports) -> Instance:
    """A DP16KD with ``DATA_WIDTH_A``/``_B`` ``width_a``/``width_b`` and both output registers on
    (``REGMODE_A``/``_B`` ``OUTREG``: the data shows two clock edges after its address), clocked,
    clock-enabled and (synchronously) reset by the ``sync`` domain, chip selects off;
    ``ports``: the rest as ``Instance`` arguments (``i_WEA``, ``i_ADA0`` ... ``i_ADA13``,
    ``i_DIA0`` ..., ``o_DOA0`` ..., ``p_INITVAL_00`` ...)."""
    return Instance(
        "DP16KD",
        p_DATA_WIDTH_A=width_a,
        p_DATA_WIDTH_B=width_b,
        p_REGMODE_A="OUTREG",
        p_REGMODE_B="OUTREG",
        p_RESETMODE="SYNC",
        p_ASYNC_RESET_RELEASE="SYNC",
        p_CSDECODE_A="0b000",
        p_CSDECODE_B="0b000",
        p_WRITEMODE_A="NORMAL",
        p_WRITEMODE_B="NORMAL",
        p_GSR="AUTO",
        **{
            f"i_{name}": value
            for side in "AB"
            for name, value in (
                (f"CLK{side}", ClockSignal()),
                (f"CE{side}", Const(1)),
                (f"OCE{side}", Const(1)),
                (f"RST{side}", ResetSignal()),
                *((f"CS{side}{j}", Const(0)) for j in range(3)),
            )
        },
        **ports,
    )


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
        super().__init__(
            {"read": Out(wiring.Signature({"addr": In(abits), "data": Out(width)})).array(ports)}
        )

    def elaborate(self, platform):
        m = Module()
        if is_ecp5(platform) and len(self.rows) <= DP16KD_WORDS:
            self._dp16kd(m)
            return m
        m.submodules.memory = memory = Memory(
            shape=self.width, depth=len(self.rows), init=self.rows, attrs={"rom_style": "block"}
        )
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
            args = {f"p_{name}": value for name, value in dp16kd_initvals(words).items()}
            for k, name in enumerate(names):
                port = self.read[k] if k < self.ports else None
                out = Signal(DP16KD_WIDTH, name=f"slice{s}_do{name.lower()}")
                # x18: ADx13..ADx4 the word, ADx3..ADx2 zero, ADx1..ADx0 the write's byte
                # enables (no write)
                addr = Signal(14, name=f"slice{s}_ad{name.lower()}")
                if port is not None:
                    m.d.comb += [
                        addr[4 : 4 + len(port.addr)].eq(port.addr),
                        port.data[lo : lo + bits].eq(out[:bits]),
                    ]
                args.update(
                    {
                        f"i_WE{name}": Const(0),
                        **{f"i_AD{name}{j}": addr[j] for j in range(14)},
                        **{f"i_DI{name}{j}": Const(0) for j in range(DP16KD_WIDTH)},
                        **{f"o_DO{name}{j}": out[j] for j in range(DP16KD_WIDTH)},
                    }
                )
            m.submodules[f"slice{s}"] = dp16kd(width_a=DP16KD_WIDTH, width_b=DP16KD_WIDTH, **args)


class RegisteredRAM(wiring.Component):
    """``depth`` words of ``width`` bits, ``init`` at first (the rest 0): ``write.data`` is
    stored at ``write.addr`` on a clock edge where ``write.en`` is 1; ``read.data`` is the word
    at ``read.addr`` two cycles before (the word before a write to it in the cycle after that
    address: the read does not see a write of the same edge), 0 after a reset until then.
    ``ram_style``: the generic form's Yosys attribute (``"block"``: block RAM, never LUTs)."""

    def __init__(
        self, *, width: int, depth: int, init: Sequence[int] = (), ram_style: str | None = None
    ):
        if width < 1:
            raise ValueError(f"RAM width must be at least 1, not {width!r}")
        if depth < 1:
            raise ValueError(f"RAM depth must be at least 1, not {depth!r}")
        if len(init) > depth:
            raise ValueError(f"RAM init must have at most {depth} words, not {len(init)}")
        self.width, self.depth = width, depth
        self.init = list(init) + [0] * (depth - len(init))
        self.ram_style = ram_style
        abits = max(1, (depth - 1).bit_length())
        super().__init__(
            {
                "write": Out(wiring.Signature({"addr": In(abits), "data": In(width), "en": In(1)})),
                "read": Out(wiring.Signature({"addr": In(abits), "data": Out(width)})),
            }
        )

    def elaborate(self, platform):
        m = Module()
        if is_ecp5(platform) and self.depth <= DP16KD_WORDS:
            self._dp16kds(m, wide=self.depth <= DP16KD_WIDE_WORDS and not any(self.init))
            return m
        m.submodules.memory = memory = Memory(
            shape=self.width,
            depth=self.depth,
            init=self.init,
            attrs={"ram_style": self.ram_style} if self.ram_style else {},
        )
        read, write = memory.read_port(), memory.write_port()
        data = Signal(self.width)  # the fabric's output register
        m.d.comb += [
            read.addr.eq(self.read.addr),
            self.read.data.eq(data),
            write.addr.eq(self.write.addr),
            write.data.eq(self.write.data),
            write.en.eq(self.write.en),
        ]
        m.d.sync += data.eq(read.data)
        return m

    def _dp16kds(self, m: Module, *, wide: bool) -> None:
        """The RAM as DP16KDs, port A writing, port B reading: ``wide``, 512 x 36 (pseudo dual
        port: DIA/DOA carry bits 0..17, DIB/DOB bits 18..35, as Yosys's ``brams_map_16kd.v``
        maps a PDPW16KD; the byte enables ADA3..ADA0 are the write's enable), else 1,024 x 18
        (WEA the write's enable, both byte enables ADA1..ADA0 on; DOB the data) holding
        ``init``. The word address is on ADx13..ADx5 (x36) or ADx13..ADx4 (x18), the bits
        below it 0 but the byte enables."""
        width = DP16KD_WIDE_WIDTH if wide else DP16KD_WIDTH
        shift, half = (5, width // 2) if wide else (4, width)
        waddr, raddr = Signal(14), Signal(14)
        m.d.comb += [
            waddr[shift : shift + len(self.write.addr)].eq(self.write.addr),
            raddr[shift : shift + len(self.read.addr)].eq(self.read.addr),
            waddr[: 4 if wide else 2].eq(self.write.en.replicate(4) if wide else 0b11),
        ]
        sides = "AB" if wide else "A"
        for s, lo in enumerate(range(0, self.width, width)):
            bits = min(width, self.width - lo)
            din = Signal(width, name=f"slice{s}_di")
            dout = Signal(width, name=f"slice{s}_do")
            m.d.comb += [
                din[:bits].eq(self.write.data[lo : lo + bits]),
                self.read.data[lo : lo + bits].eq(dout[:bits]),
            ]
            outs = sides if wide else "B"
            words = [word >> lo & ((1 << bits) - 1) for word in self.init]
            m.submodules[f"slice{s}"] = dp16kd(
                width_a=width,
                width_b=width,
                i_WEA=Const(1) if wide else self.write.en,
                i_WEB=Const(0),
                **{
                    f"i_AD{side}{j}": addr[j]
                    for side, addr in (("A", waddr), ("B", raddr))
                    for j in range(14)
                },
                **{
                    f"i_DI{side}{j}": din[k * half + j] if side in sides else Const(0)
                    for k, side in enumerate("AB")
                    for j in range(DP16KD_WIDTH)
                },
                **{
                    f"o_DO{side}{j}": dout[k * half + j]
                    for k, side in enumerate(outs)
                    for j in range(DP16KD_WIDTH)
                },
                **(
                    {}
                    if wide
                    else {f"p_{name}": value for name, value in dp16kd_initvals(words).items()}
                ),
            )
