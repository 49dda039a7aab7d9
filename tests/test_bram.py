# amaranth: UnusedElaboratable=no
"""xpfilt.hdl.bram: the registered ROM, in simulation (generic form) and as the ECP5's DP16KDs
(checked against Yosys's own mapping of the generic form onto DP16KDs)."""

import json
import random
import subprocess

import pytest
from amaranth.back import verilog
from amaranth.sim import Simulator

from xpfilt.hdl.bram import ECP5, RegisteredROM, dp16kd_initvals
from xpfilt.synth import tool


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


@pytest.mark.parametrize("args, message", [
    (dict(rows=[1], width=0), "ROM width must be at least 1, not 0"),
    (dict(rows=[1], width=1, ports=3), "ROM read ports must be 1 or 2, not 3"),
    (dict(rows=[], width=1), "ROM rows must not be empty"),
])
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
    subprocess.run([tool("yosys"), "-q", "-p",
                    f"read_verilog rom.v; {script}; select rom; write_json -selected rom.json"],
                   cwd=tmp_path, check=True, capture_output=True)
    module = json.loads((tmp_path / "rom.json").read_text())["modules"]["rom"]
    return module["ports"], [c for c in module["cells"].values() if c["type"] == "DP16KD"]


def test_the_ecp5_form_holds_and_reads_what_yosys_maps(tmp_path):
    rng = random.Random(7)
    rows = [rng.getrandbits(40) for _ in range(700)]
    rom = RegisteredROM(rows, width=40, ports=2)
    (tmp_path / "generic").mkdir()
    (tmp_path / "ecp5").mkdir()
    _, mapped = _dp16kds(verilog.convert(rom, name="rom"),
                         "synth_ecp5 -top rom -run :map_luts", tmp_path / "generic")
    ports, ours = _dp16kds(verilog.convert(RegisteredROM(rows, width=40, ports=2), name="rom",
                                           platform=ECP5),
                           "hierarchy -top rom; proc; flatten; opt_clean", tmp_path / "ecp5")

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
            assert outs[:bits] == data[k][lo:lo + bits]
