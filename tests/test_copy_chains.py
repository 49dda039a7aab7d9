"""The clusters' copy-enable chains (xpfilt.hdl.cluster.copy_register) survive synthesis."""

import json
import subprocess

import pytest

from xpfilt.compiler.custom import CompileOptions, compile_queries
from xpfilt.eda.synth import tool
from xpfilt.hdl.verilog import TOP_NAME, emit_verilog
from xpfilt.lang.xpath import parse_query


def _copy_enable_flip_flops(tmp_path, n_clusters: int) -> int:
    """Flip-flops left driving a ``copy_on_k`` net after ``synth_ecp5`` of an engine of
    ``n_clusters`` two-query clusters."""
    queries = [parse_query(f"//a{i}/b", i + 1) for i in range(2 * n_clusters)]
    plan = compile_queries(queries, CompileOptions(cluster_size=2, max_depth=4))
    assert len(plan.clusters) == n_clusters
    (tmp_path / "engine.v").write_text(emit_verilog(plan, max_name=8, jobs=1))
    subprocess.run(
        [
            tool("yosys"),
            "-q",
            "-p",
            f"read_verilog engine.v; synth_ecp5 -top {TOP_NAME}; write_json out.json",
        ],
        cwd=tmp_path,
        check=True,
        capture_output=True,
    )
    module = json.loads((tmp_path / "out.json").read_text())["modules"][TOP_NAME]
    chain_bits = {
        bit
        for name, net in module["netnames"].items()
        if name.rsplit(".", 1)[-1].startswith("copy_on_")
        for bit in net["bits"]
    }
    return sum(
        1
        for cell in module["cells"].values()
        if cell["type"] == "TRELLIS_FF" and cell["connections"]["Q"][0] in chain_bits
    )


@pytest.mark.rtl
def test_every_cluster_keeps_its_own_copy_enable_chain(tmp_path):
    """Yosys merged the clusters' identical chains (``on_1`` <= 1, ``on_k`` <= ``on_(k-1)``)
    into one flip-flop per form: at 12,000 queries 3 flip-flops drove ~2,500 clock enables
    each across the die (20.2 ns after placement). Each cluster of forms 1-3 keeps its own
    chain (at least two flip-flops), besides the engine's tree's."""
    n_clusters = 8  # forms 0-3 twice over; the tree has one level of 2 registers
    clusters_with_chain = sum(1 for i in range(n_clusters) if i % 4)
    assert _copy_enable_flip_flops(tmp_path, n_clusters) >= 2 * clusters_with_chain


@pytest.mark.rtl
def test_a_wide_copy_takes_an_enable_chain_per_slice(tmp_path):
    """A form k > 0 copy wider than COPY_ENABLE_FANOUT bits: after ``synth_ecp5`` no
    ``copy_on_k`` net enables more than COPY_ENABLE_FANOUT flip-flops (one chain for a
    cluster's whole copy of the events put ~1,000 condition bits on one enable net, 13.6 ns of
    routing at 1,024 queries with 2 predicates each), and every bit still loads its value."""
    from amaranth.back import verilog
    from amaranth.hdl import Module
    from amaranth.lib import wiring
    from amaranth.lib.wiring import In, Out

    from xpfilt.hdl.cluster import COPY_ENABLE_FANOUT, copy_register

    width = 2 * COPY_ENABLE_FANOUT + 9

    class Copy(wiring.Component):
        value: In(width)
        copy: Out(width)

        def elaborate(self, platform):
            m = Module()
            m.d.comb += self.copy.eq(copy_register(m, self.value, 3, name="copied"))
            return m

    (tmp_path / "copy.v").write_text(verilog.convert(Copy(), name="copy"))
    subprocess.run(
        [
            tool("yosys"),
            "-q",
            "-p",
            "read_verilog copy.v; synth_ecp5 -top copy; write_json out.json",
        ],
        cwd=tmp_path,
        check=True,
        capture_output=True,
    )
    module = json.loads((tmp_path / "out.json").read_text())["modules"]["copy"]
    enables = {}
    for name, net in module["netnames"].items():
        if name.rsplit(".", 1)[-1].startswith("copy_on_"):
            enables.update({bit: name for bit in net["bits"]})
    loads = {}
    flops = [c for c in module["cells"].values() if c["type"] == "TRELLIS_FF"]
    for cell in flops:
        ce = cell["connections"].get("CE", [None])[0]
        if ce in enables:
            loads[ce] = loads.get(ce, 0) + 1
    assert sum(loads.values()) >= width, loads  # every copied bit takes an enable
    assert max(loads.values()) <= COPY_ENABLE_FANOUT, loads
