"""The simulated Ethernet board: the board core with LiteEth (MAC, ARP, IP, UDP) and its ECP5
RGMII PHY in Verilator, the RGMII pins driven by cocotbext-eth, bridged to a UDP socket
(``xpfilt sim-board --link ethernet``), behind the fault-injecting relay; and the behavioural
models of the ECP5 primitives the simulation swaps in, against their definitions (Icarus).
``make regress`` runs every shared query set through it (one Verilator build per set, cached
in build/sim)."""

import os
import re
import select
import shutil
import signal
import subprocess
import sys
from contextlib import contextmanager
from pathlib import Path

import pytest

from xpfilt.boards.eth_sim import ECP5_SIM_MODELS, EthernetSimTop
from xpfilt.boards.faults import Faults, FaultyLink
from xpfilt.boards.host import BoardDesign, open_board_engine
from xpfilt.boards.udp_host import UdpBoardEngine, UdpLink
from xpfilt.engines import filter_batch
from xpfilt.lang.xpath import load_queries
from xpfilt.paths import repo_root, shared_data
from xpfilt.software.reference import ReferenceFilter
from xpfilt.software.results import read_expected

from .conftest import expected_cases

DATA = shared_data()
SIM_BUILD = Path(os.environ.get("XPFILT_SIM_BUILD") or repo_root() / "build" / "sim")
DOCS = sorted((DATA / "nitf" / "docs").glob("*.xml"))


def build_board(work, queries, board="colorlight-5a75b", *options):
    """``xpfilt build --board BOARD -q QUERIES --readout sparse --no-toolchain OPTIONS`` into
    ``work``/build."""
    build = work / "build"
    subprocess.run(
        [sys.executable, "-m", "xpfilt.cli", "build", "--board", board, "-q", str(queries),
         "--readout", "sparse", "--no-toolchain", "-o", str(build), *options],
        check=True, capture_output=True,
    )  # fmt: skip
    return build


@contextmanager
def simulated_board(work, build, *options):
    """`xpfilt sim-board --link ethernet --build BUILD` (a subprocess, its build cached in
    SIM_BUILD) until the block ends; yields its address."""
    err = open(work / "sim.err", "w")
    proc = subprocess.Popen(
        [sys.executable, "-m", "xpfilt.cli", "sim-board", "--link", "ethernet", "--build",
         str(build), "--port", "0", "--accept-timeout", "60", "--sim-build-dir", str(SIM_BUILD),
         *options],
        cwd=repo_root(), stdout=subprocess.PIPE, stderr=err, text=True, start_new_session=True,
    )  # fmt: skip
    try:
        ready, _, _ = select.select([proc.stdout], [], [], 3600)
        line = proc.stdout.readline() if ready else ""
        match = re.search(r"udp://([\d.]+):(\d+)", line)
        assert match, f"sim-board did not start: {line!r}\n{(work / 'sim.err').read_text()}"
        yield match.group(1), int(match.group(2))
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGTERM)
            try:
                proc.wait(20)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
        err.close()


@pytest.fixture(scope="module")
def ethernet_board(tmp_path_factory):
    """A colorlight-5a75b build of 24 NITF queries, simulated (`xpfilt sim-board --link
    ethernet`: the RGMII PHY); yields (address, build directory, query file)."""
    pytest.importorskip("liteeth")
    pytest.importorskip("cocotbext.eth")
    work = tmp_path_factory.mktemp("eth-sim")
    queries = work / "q.txt"
    lines = (DATA / "queries" / "nitf-d4-p15-n2000.txt").read_text().splitlines()[:24]
    queries.write_text("".join(f"{line}\n" for line in lines))
    build = build_board(work, queries)
    with simulated_board(work, build) as address:
        yield address, build, queries


def test_simulated_ethernet_board_answers_through_faults_and_a_host_restart(ethernet_board):
    address, build, queries = ethernet_board
    docs = DOCS[:10]
    design = BoardDesign.load(build)
    faults = Faults(drop=0.03, duplicate=0.03, reorder=0.03, corrupt=0.03, truncate=0.03)
    with FaultyLink(address, faults, seed=7) as relay:
        where = ("127.0.0.1", relay.port)
        # a host that dies with documents in flight
        first = UdpLink(where, timeout=120, rto=2.0)
        engine = open_board_engine(first, design, engine_class=UdpBoardEngine)
        results = engine.filter_batch(docs, window=4)
        assert next(results).name == docs[0].name
        first.close()
        # the next host gets every answer once, in order
        with UdpLink(where, timeout=120, rto=2.0) as link:
            engine = open_board_engine(link, design, engine_class=UdpBoardEngine)
            got = list(engine.filter_batch(docs, window=4))
            status = link.status()
    want = list(filter_batch(ReferenceFilter(load_queries(queries).queries), docs))
    assert got == want
    assert status.documents == len(docs) and status.address.endswith("192.168.1.50:4747")
    assert sum(relay.counts["to_board"][k] for k in ("drop", "corrupt", "truncate")) > 0


@pytest.mark.rtl
def test_simulated_ethernet_board_with_the_w_byte_engine_answers_like_filter(tmp_path):
    """`xpfilt build --bytes-per-cycle 2` simulated as built (`xpfilt sim-board --link
    ethernet`: LiteEth, the RGMII PHY, the beats packed in the link domain, the engine on its
    own 62.5 MHz clock): 20 NITF documents through a lossy link, answered as the reference
    answers them."""
    pytest.importorskip("liteeth")
    pytest.importorskip("cocotbext.eth")
    queries = tmp_path / "q.txt"
    lines = (DATA / "queries" / "nitf-d4-p15-n2000.txt").read_text().splitlines()[:24]
    queries.write_text("".join(f"{line}\n" for line in lines))
    build = build_board(tmp_path, queries, "colorlight-5a75b", "--bytes-per-cycle", "2")
    docs = DOCS[:20]
    with simulated_board(tmp_path, build) as address:
        with FaultyLink(address, Faults(drop=0.03, reorder=0.03), seed=2) as relay:
            with UdpLink(("127.0.0.1", relay.port), timeout=120, rto=2.0) as link:
                design = BoardDesign.load(build)
                engine = open_board_engine(link, design, engine_class=UdpBoardEngine)
                got = list(engine.filter_batch(docs, window=8))
    want = list(filter_batch(ReferenceFilter(load_queries(queries).queries), docs))
    assert got == want


def test_the_simulated_phy_is_rgmii_or_gmii():
    with pytest.raises(ValueError, match=r"^PHY must be one of rgmii, gmii, not 'mii'$"):
        EthernetSimTop(None, "mii")


@pytest.mark.regress
@pytest.mark.parametrize(
    "queries, folder, tsv", [pytest.param(*c[1:], id=c[0]) for c in expected_cases()]
)
def test_shared_sets_through_a_lossy_link_to_the_simulated_ethernet_board(
    queries, folder, tsv, tmp_path
):
    """Every shared query set (the structural ones and the predicate set) on the simulated
    RTL board (LiteEth, RGMII), its documents through a relay that drops and reorders 3 % of
    the datagrams each way: every document answered once, in order, as the shared expected
    answers say."""
    pytest.importorskip("liteeth")
    pytest.importorskip("cocotbext.eth")
    docs = sorted(folder.glob("*.xml"))
    build = build_board(tmp_path, queries, board="ecpix5-85f")
    faults = Faults(drop=0.03, reorder=0.03)
    with simulated_board(tmp_path, build) as address:
        with FaultyLink(address, faults, seed=35) as relay:
            with UdpLink(("127.0.0.1", relay.port), timeout=300, rto=2.0) as link:
                engine = open_board_engine(
                    link, BoardDesign.load(build), engine_class=UdpBoardEngine
                )
                got = list(engine.filter_batch(docs, window=16))
                status = link.status()
    print(f"{tsv.stem}: {len(docs)} documents, faults {relay.counts}, board {status}")
    assert [r.name for r in got] == [d.name for d in docs]  # none lost, none twice, in order
    assert {r.name: r.matches for r in got} == read_expected(tsv)
    assert status.documents == len(docs)
    assert all(c["drop"] and c["reorder"] for c in relay.counts.values()), relay.counts


# --- the ECP5 primitives' simulation models -------------------------------------------------

PRIMITIVES_TB = r"""
`timescale 1ns/1ps
module tb;
  reg clk = 0, d = 0, d0 = 0, d1 = 0, pd = 1, ff_d = 0;
  wire q, q0, q1, ff_q, z, io_o;
  wire rx_clk;
  assign #2 rx_clk = clk;  // the receiver samples a quarter period late: mid-bit, as RGMII's skew
  ODDRX1F oddr(.D0(d0), .D1(d1), .SCLK(clk), .RST(1'b0), .Q(q));
  IDDRX1F iddr(.D(q), .SCLK(rx_clk), .RST(1'b0), .Q0(q0), .Q1(q1));
  DELAYG #(.DEL_MODE("SCLK_ALIGNED"), .DEL_VALUE(0)) delay(.A(d), .Z(z));
  FD1S3BX ff(.D(ff_d), .CK(clk), .PD(pd), .Q(ff_q));
  TRELLIS_IO #(.DIR("INPUT")) pin(.B(d), .I(1'b0), .T(1'b1), .O(io_o));
  always #4 clk = ~clk;
  integer i, errors = 0;
  initial begin
    // (D0, D1) given each cycle; each cycle's (Q0, Q1) printed: the test finds the latency
    for (i = 0; i < 24; i = i + 1) begin
      @(negedge clk); d0 = $random; d1 = $random;
      @(posedge clk); #3;
      $display("PAIR %0d %b%b %b%b", i, d0, d1, q0, q1);
    end
    // the preset holds Q at 1 without a clock; then D is taken at rising edges
    pd = 1; #1; if (ff_q !== 1) begin $display("FD1S3BX preset"); errors = errors + 1; end
    @(negedge clk); pd = 0; ff_d = 0; @(posedge clk); #1;
    if (ff_q !== 0) begin $display("FD1S3BX D"); errors = errors + 1; end
    #2 pd = 1; #1; if (ff_q !== 1) begin $display("FD1S3BX async"); errors = errors + 1; end
    d = 1; #1; if (z !== 1 || io_o !== 1) begin $display("DELAYG/TRELLIS_IO"); errors = errors + 1; end
    d = 0; #1; if (z !== 0 || io_o !== 0) begin $display("DELAYG/TRELLIS_IO"); errors = errors + 1; end
    if (errors == 0) $display("PASS"); else $display("FAIL %0d", errors);
    $finish;
  end
endmodule
"""


def test_ecp5_primitive_models_follow_their_definitions(tmp_path):
    if not shutil.which("iverilog"):
        pytest.skip("needs Icarus Verilog (iverilog)")
    (tmp_path / "tb.v").write_text(ECP5_SIM_MODELS + PRIMITIVES_TB)
    subprocess.run(["iverilog", "-o", "tb", "tb.v"], cwd=tmp_path, check=True)
    run = subprocess.run(["vvp", "tb"], cwd=tmp_path, capture_output=True, text=True, check=True)
    assert "PASS" in run.stdout, run.stdout
    # ODDRX1F -> IDDRX1F gives back each cycle's pair, in order (D0 as Q0, D1 as Q1), after a
    # fixed latency: what LiteEth's RGMII PHY relies on (a 4-bit nibble each edge)
    pairs = [line.split()[2:] for line in run.stdout.splitlines() if line.startswith("PAIR")]
    sent, got = [p[0] for p in pairs], [p[1] for p in pairs]
    fits = [k for k in range(1, 5) if got[k + 2 :] == sent[2 : len(sent) - k]]
    assert fits and len(set(sent)) == 4, (fits, pairs)
