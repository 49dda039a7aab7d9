# amaranth: UnusedElaboratable=no
"""xpfilt.hdl.bram: the registered ROM, in simulation (generic form) and as the ECP5's DP16KDs
(checked against Yosys's own mapping of the generic form onto DP16KDs)."""

import json
import random
import subprocess

import pytest
from amaranth.back import verilog
from amaranth.sim import Simulator

from xpfilt.eda.synth import tool
from xpfilt.hdl.bram import ECP5, RegisteredRAM, RegisteredROM, dp16kd_initvals


def test_registered_rom_reads_two_cycles_after_the_address():
    rng = random.Random(5)
    rows = [rng.getrandbits(23) for _ in range(37)]
    dut = RegisteredROM(rows, width=23, ports=2)
    addrs = [[rng.randrange(len(rows)) for _ in range(40)] for _ in range(2)]
    seen = [[], []]

    async def bench(ctx):
        for t in range(40):
            for k in range(2):
                ctx.set(dut.read[k].addr, addrs[k][t])
            await ctx.tick()
            for k in range(2):
                seen[k].append(ctx.get(dut.read[k].data))

    sim = Simulator(dut)
    sim.add_clock(1e-6)
    sim.add_testbench(bench)
    sim.run()
    # after the tick of cycle t the data shows the address of cycle t - 1
    for k in range(2):
        assert seen[k][1:] == [rows[a] for a in addrs[k][:-1]]


@pytest.mark.parametrize(
    "args, message",
    [
        (dict(rows=[1], width=0), "ROM width must be at least 1, not 0"),
        (dict(rows=[1], width=1, ports=3), "ROM read ports must be 1 or 2, not 3"),
        (dict(rows=[], width=1), "ROM rows must not be empty"),
    ],
)
def test_registered_rom_refuses_bad_parameters(args, message):
    with pytest.raises(ValueError) as e:
        RegisteredROM(**args)
    assert str(e.value) == message


def test_a_dp16kd_holds_at_most_1024_words():
    with pytest.raises(ValueError) as e:
        dp16kd_initvals([0] * 1025)
    assert str(e.value) == "a DP16KD holds at most 1024 words of 18 bits, not 1025"


def _dp16kds(verilog_text: str, script: str, tmp_path) -> tuple[dict, list[dict]]:
    """The ports and the DP16KD cells of ``verilog_text`` (top ``rom``) after ``script``."""
    (tmp_path / "rom.v").write_text(verilog_text)
    subprocess.run(
        [
            tool("yosys"),
            "-q",
            "-p",
            f"read_verilog rom.v; {script}; select rom; write_json -selected rom.json",
        ],
        cwd=tmp_path,
        check=True,
        capture_output=True,
    )
    module = json.loads((tmp_path / "rom.json").read_text())["modules"]["rom"]
    return module["ports"], [c for c in module["cells"].values() if c["type"] == "DP16KD"]


@pytest.mark.rtl
def test_the_ecp5_form_holds_and_reads_what_yosys_maps(tmp_path):
    rng = random.Random(7)
    rows = [rng.getrandbits(40) for _ in range(700)]
    rom = RegisteredROM(rows, width=40, ports=2)
    (tmp_path / "generic").mkdir()
    (tmp_path / "ecp5").mkdir()
    _, mapped = _dp16kds(
        verilog.convert(rom, name="rom"), "synth_ecp5 -top rom -run :map_luts", tmp_path / "generic"
    )
    ports, ours = _dp16kds(
        verilog.convert(RegisteredROM(rows, width=40, ports=2), name="rom", platform=ECP5),
        "hierarchy -top rom; proc; flatten; opt_clean",
        tmp_path / "ecp5",
    )

    def initvals(cell):
        return tuple(int(cell["parameters"][f"INITVAL_{k:02X}"], 2) for k in range(64))

    # the same contents, slice by slice (Yosys names them memory.0.<slice>)
    assert sorted(map(initvals, ours)) == sorted(map(initvals, mapped))
    assert len(ours) == 3
    addr = [ports[f"read__{k}__addr"]["bits"] for k in range(2)]
    data = [ports[f"read__{k}__data"]["bits"] for k in range(2)]
    for cell in ours:
        assert cell["parameters"]["REGMODE_A"] == cell["parameters"]["REGMODE_B"] == "OUTREG"
        assert int(cell["parameters"]["DATA_WIDTH_A"], 2) == 18
        conn = cell["connections"]
        for k, side in enumerate("AB"):
            # the word address on AD13..AD4 as Yosys wires it, AD3..AD0 zero
            assert [conn[f"AD{side}{j}"][0] for j in range(4, 14)] == addr[k]
            assert [conn[f"AD{side}{j}"][0] for j in range(4)] == ["0"] * 4
            assert conn[f"WE{side}"] == ["0"]
            # the block RAM's output (its own register) drives the port's data bits directly
            outs = [conn[f"DO{side}{j}"][0] for j in range(18)]
            lo = data[k].index(outs[0])
            bits = min(18, 40 - lo)
            assert outs[:bits] == data[k][lo : lo + bits]


def test_registered_ram_reads_as_a_synchronous_read_port_and_a_fabric_register():
    """Cycle by cycle as the memory it replaced in the programmable cluster's tag matrix (a
    ``Memory`` read port, not transparent, then a register): random writes and reads, the same
    address often, a read of the word being written included."""
    from amaranth.hdl import Module, Signal
    from amaranth.lib.memory import Memory

    rng = random.Random(11)
    width, depth, cycles = 7, 12, 300
    init = [rng.getrandbits(width) for _ in range(depth - 2)]
    dut = RegisteredRAM(width=width, depth=depth, init=init)
    ref = Module()
    ref.submodules.dut = dut
    ref.submodules.memory = memory = Memory(shape=width, depth=depth, init=init)
    read, write = memory.read_port(), memory.write_port()
    expected = Signal(width)
    ref.d.comb += [
        read.addr.eq(dut.read.addr),
        write.addr.eq(dut.write.addr),
        write.data.eq(dut.write.data),
        write.en.eq(dut.write.en),
    ]
    ref.d.sync += expected.eq(read.data)
    seen = []

    async def bench(ctx):
        for _ in range(cycles):
            addr = rng.randrange(depth)
            ctx.set(dut.write.addr, addr)
            ctx.set(dut.write.data, rng.getrandbits(width))
            ctx.set(dut.write.en, rng.random() < 0.4)
            ctx.set(dut.read.addr, addr if rng.random() < 0.3 else rng.randrange(depth))
            await ctx.tick()
            seen.append((ctx.get(dut.read.data), ctx.get(expected)))

    sim = Simulator(ref)
    sim.add_clock(1e-6)
    sim.add_testbench(bench)
    sim.run()
    assert [got for got, _ in seen] == [want for _, want in seen]
    assert len({want for _, want in seen}) > 5  # the words written are read back


@pytest.mark.parametrize(
    "args, message",
    [
        (dict(width=0, depth=4), "RAM width must be at least 1, not 0"),
        (dict(width=4, depth=0), "RAM depth must be at least 1, not 0"),
        (dict(width=4, depth=2, init=[1, 2, 3]), "RAM init must have at most 2 words, not 3"),
    ],
)
def test_registered_ram_refuses_bad_parameters(args, message):
    with pytest.raises(ValueError) as e:
        RegisteredRAM(**args)
    assert str(e.value) == message


@pytest.mark.rtl
def test_the_ecp5_ram_is_dp16kds_36_wide_with_their_output_registers(tmp_path):
    ram = RegisteredRAM(width=40, depth=512)
    ports, cells = _dp16kds(
        verilog.convert(ram, name="rom", platform=ECP5),
        "hierarchy -top rom; proc; flatten; opt_clean",
        tmp_path,
    )
    assert len(cells) == 2
    waddr, raddr = ports["write__addr"]["bits"], ports["read__addr"]["bits"]
    wdata, rdata = ports["write__data"]["bits"], ports["read__data"]["bits"]
    en = ports["write__en"]["bits"]
    for s, cell in enumerate(cells):
        params, conn = cell["parameters"], cell["connections"]
        assert params["REGMODE_A"] == params["REGMODE_B"] == "OUTREG"
        assert int(params["DATA_WIDTH_A"], 2) == int(params["DATA_WIDTH_B"], 2) == 36
        # x36: the word on AD13..AD5, AD4 zero; port A's byte enables the write's enable
        assert [conn[f"ADA{j}"][0] for j in range(5, 14)] == waddr
        assert [conn[f"ADB{j}"][0] for j in range(5, 14)] == raddr
        assert [conn[f"ADA{j}"][0] for j in range(4)] == en * 4
        assert [conn[f"ADB{j}"][0] for j in range(5)] + [conn["ADA4"][0]] == ["0"] * 6
        assert (conn["WEA"], conn["WEB"]) == (["1"], ["0"])
        # the data bits in order, DIA/DOA below DIB/DOB; the outputs drive the read port
        di = [conn[f"DI{side}{j}"][0] for side in "AB" for j in range(18)]
        do = [conn[f"DO{side}{j}"][0] for side in "AB" for j in range(18)]
        lo = wdata.index(di[0])
        bits = min(36, 40 - lo)
        assert di[:bits] == wdata[lo : lo + bits]
        assert do[:bits] == rdata[lo : lo + bits]


@pytest.mark.rtl
def test_the_ecp5_ram_with_contents_is_dp16kds_18_wide_with_their_output_registers(tmp_path):
    rng = random.Random(13)
    init = [rng.getrandbits(20) for _ in range(1000)]
    ram = RegisteredRAM(width=20, depth=1024, init=init)
    ports, cells = _dp16kds(
        verilog.convert(ram, name="rom", platform=ECP5),
        "hierarchy -top rom; proc; flatten; opt_clean",
        tmp_path,
    )
    assert len(cells) == 2
    waddr, raddr = ports["write__addr"]["bits"], ports["read__addr"]["bits"]
    wdata, rdata = ports["write__data"]["bits"], ports["read__data"]["bits"]
    for cell in cells:
        params, conn = cell["parameters"], cell["connections"]
        assert params["REGMODE_A"] == params["REGMODE_B"] == "OUTREG"
        assert int(params["DATA_WIDTH_A"], 2) == int(params["DATA_WIDTH_B"], 2) == 18
        # x18: the word on AD13..AD4; port A writes both bytes, port B reads
        assert [conn[f"ADA{j}"][0] for j in range(4, 14)] == waddr
        assert [conn[f"ADB{j}"][0] for j in range(4, 14)] == raddr
        assert [conn[f"ADA{j}"][0] for j in range(4)] == ["1", "1", "0", "0"]
        assert [conn[f"ADB{j}"][0] for j in range(4)] == ["0"] * 4
        assert conn["WEA"] == ports["write__en"]["bits"] and conn["WEB"] == ["0"]
        lo = wdata.index(conn["DIA0"][0])
        bits = min(18, 20 - lo)
        assert [conn[f"DIA{j}"][0] for j in range(bits)] == wdata[lo : lo + bits]
        assert [conn[f"DOB{j}"][0] for j in range(bits)] == rdata[lo : lo + bits]
        words = [w >> lo & ((1 << bits) - 1) for w in init + [0] * 24]
        assert all(
            int(params[f"INITVAL_{k:02X}"], 2) == value.value
            for k, value in enumerate(dp16kd_initvals(words).values())
        )
