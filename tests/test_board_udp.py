# amaranth: UnusedElaboratable=no
"""The board's UDP link (issue 35): the datagram codec, and the host against the behavioural
model of the board's protocol endpoint (the engine's cycle model behind a real UDP socket)
through a fault-injecting relay -- drops, duplicates, reordering, corrupted and truncated
datagrams, a host restart mid-batch -- with every answer checked against the reference."""

import json
import re
import threading
import time
import zlib
from contextlib import contextmanager

import pytest
from click.testing import CliRunner

from xpfilt.boards.faults import Faults, FaultyLink
from xpfilt.boards.host import BoardDesign, open_board_engine
from xpfilt.boards.protocol import (
    DATAGRAM_CRC,
    DATAGRAM_HEADER,
    MAX_PAYLOAD,
    Datagram,
    DatagramKind,
    InputKind,
    LinkError,
    ReadoutReceiver,
    ReadoutRecordKind,
    RecordReader,
    UdpStatus,
    decode_datagram,
    encode_datagram,
    input_record,
    readout_record,
    seq_after,
    seq_diff,
)
from xpfilt.boards.udp_board import EndpointConfig, model_endpoint, serve_endpoint
from xpfilt.boards.udp_host import UdpBoardEngine, UdpLink, parse_address
from xpfilt.cli import main
from xpfilt.engines import filter_batch
from xpfilt.paths import shared_data
from xpfilt.software.reference import ReferenceFilter

DATA = shared_data()
QUERY_FILE = DATA / "queries" / "nitf-d4-p15-n2000.txt"
DOCS = sorted((DATA / "nitf" / "docs").glob("*.xml"))
ALL_FAULTS = Faults(drop=0.04, duplicate=0.04, reorder=0.04, corrupt=0.04, truncate=0.04)


def run_cli(*args):
    return CliRunner().invoke(main, [str(a) for a in args], catch_exceptions=False)


# --- the codec ------------------------------------------------------------------------------


def test_datagrams_with_a_wrong_crc_length_or_version_are_dropped():
    d = Datagram(DatagramKind.DATA.value, 0xDEADBEEF, 0xFFFFFFF0, 7, 9, b"<a/>" * 5, nak=True)
    raw = encode_datagram(d)
    assert len(raw) == DATAGRAM_HEADER + 20 + DATAGRAM_CRC
    assert decode_datagram(raw) == d
    for at in range(len(raw)):  # every single corrupted byte is caught
        bad = bytearray(raw)
        bad[at] ^= 0x40
        assert decode_datagram(bytes(bad)) is None
    for cut in range(len(raw)):  # and every truncation
        assert decode_datagram(raw[:cut]) is None
    # a right CRC over a wrong length field (a sender's bug) or version is still refused
    body = bytearray(raw[:-DATAGRAM_CRC])
    body[20] += 1  # length
    assert decode_datagram(bytes(body) + zlib.crc32(body).to_bytes(4, "little")) is None
    body = bytearray(raw[:-DATAGRAM_CRC])
    body[0] = 9  # version
    assert decode_datagram(bytes(body) + zlib.crc32(body).to_bytes(4, "little")) is None


def test_records_reassemble_from_any_split_and_offsets_wrap():
    stream = b"".join(
        readout_record(ReadoutRecordKind.MATCHES, n, n & 1, bytes(range(n))) for n in range(9)
    )
    for step in (1, 5, 13, len(stream)):
        reader = RecordReader()
        records = []
        for at in range(0, len(stream), step):
            records += reader.feed(stream[at : at + step])
        assert [(r.doc, r.errors, r.body) for r in records] == [
            (n, n & 1, bytes(range(n))) for n in range(9)
        ]
    assert seq_after(5, 0xFFFFFFFB) and not seq_after(0xFFFFFFFB, 5)
    assert seq_diff(5, 0xFFFFFFFB) == 10 and seq_diff(0xFFFFFFFB, 5) == -10
    with pytest.raises(ValueError, match="document must have at least one byte, not none"):
        input_record(InputKind.DOCUMENT, b"")
    assert parse_address("10.0.0.2") == ("10.0.0.2", 4747)
    assert parse_address("board:5000") == ("board", 5000)
    with pytest.raises(ValueError, match=r"board address must be HOST\[:PORT\], not 'b:x'"):
        parse_address("b:x")


def test_the_readout_stream_is_taken_once_in_order_and_a_gap_is_naked_once():
    records = [readout_record(ReadoutRecordKind.MATCHES, n, 0, bytes([n]) * 10) for n in range(4)]
    stream = b"".join(records)  # 4 records of 22 bytes
    start = 0x1_0000_0000 - 30  # the offsets wrap inside the second record
    receiver = ReadoutReceiver(rx_next=start)

    def take(at, end, kind=DatagramKind.READOUT):
        seq = (start + at) & 0xFFFFFFFF
        got = receiver.take(Datagram(kind.value, 1, seq, payload=stream[at:end]))
        return [r.doc for r in got.records], got.nak

    assert take(0, 30) == ([0], False)  # the first record, and 8 bytes of the second
    assert receiver.ack_due
    receiver.ack_due = False  # a datagram carried the ack
    assert take(0, 30) == ([], False)  # had: a duplicate, acknowledged again
    assert (receiver.duplicates, receiver.ack_due) == (1, True)
    assert take(50, 70) == ([], True)  # after a gap: dropped, NAK
    assert take(70, 88) == ([], False)  # NAK once while the gap stays
    assert take(20, 50) == ([1], False)  # fills the gap (10 bytes had, 20 new)
    assert receiver.rx_next == 20  # wrapped
    assert take(70, 88) == ([], True)  # a new gap since the stream moved: NAK again
    assert take(50, 70) == ([2], False)
    assert take(50, 88) == ([3], False)
    assert (receiver.rx_next, receiver.duplicates, receiver.out_of_order) == (58, 1, 3)
    # nothing else is readout: no records, no ack due
    receiver.ack_due = False
    assert take(88, 88) == ([], False)
    assert take(0, 30, kind=DatagramKind.DATA) == take(0, 30, kind=DatagramKind.STATUS)
    assert not receiver.ack_due and receiver.duplicates == 1


def test_faults_parse_and_are_checked():
    assert Faults.parse("drop=0.1, reorder=0.2") == Faults(drop=0.1, reorder=0.2)
    with pytest.raises(ValueError, match="a fault must be NAME=PROBABILITY"):
        Faults.parse("lose=0.1")
    with pytest.raises(ValueError, match="drop probability must be between 0 and 1, not 2.0"):
        Faults(drop=2.0)


# --- the model board behind a socket ----------------------------------------------------------


@contextmanager
def model_board(build, config=EndpointConfig(), faults=None, seed=0):
    """The endpoint model of ``build`` serving on a free port (behind a fault relay when
    ``faults``): yields (endpoint, (host, port) to talk to, relay or None)."""
    endpoint = model_endpoint(build, config)
    ports, stop = [], threading.Event()
    server = threading.Thread(
        target=serve_endpoint,
        args=(endpoint,),
        kwargs=dict(on_port=ports.append, stop=stop),
        daemon=True,
    )
    server.start()
    while not ports:
        time.sleep(0.005)
    relay = FaultyLink(("127.0.0.1", ports[0]), faults, seed=seed).start() if faults else None
    try:
        yield endpoint, ("127.0.0.1", relay.port if relay else ports[0]), relay
    finally:
        if relay:
            relay.stop()
        stop.set()
        server.join()


def queries_file(tmp_path, count, start=0):
    path = tmp_path / f"q{start}-{count}.txt"
    path.write_text("".join(f"{line}\n" for line in QUERY_FILE.read_text().splitlines()[:count]))
    return path


@pytest.fixture(scope="module", params=["serial", "sparse"])
def custom_build(request, tmp_path_factory):
    work = tmp_path_factory.mktemp(f"udp-{request.param}")
    queries = queries_file(work, 24)
    build = work / "build"
    result = run_cli(
        "build", "--board", "ulx3s-85f", "-q", queries, "--readout", request.param,
        "--max-depth", 16, "--no-toolchain", "-o", build,
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    return build, queries


def reference_results(queries, docs):
    from xpfilt.lang.xpath import load_queries

    return list(filter_batch(ReferenceFilter(load_queries(queries).queries), docs))


def test_model_board_answers_like_the_reference_through_every_fault(custom_build, tmp_path):
    build, queries = custom_build
    docs = DOCS[:24]
    broken = tmp_path / "broken.xml"
    broken.write_bytes(b"<nitf><head></nitf>")
    docs = docs[:3] + [broken] + docs[3:]
    config = EndpointConfig(input_buffer=4096, readout_buffer=2048, timeout=0.02)
    with model_board(build, config, ALL_FAULTS, seed=3) as (endpoint, address, relay):
        with UdpLink(address, timeout=20, rto=0.02) as link:
            engine = open_board_engine(link, BoardDesign.load(build), engine_class=UdpBoardEngine)
            got = list(engine.filter_batch(docs, window=8))
        status = endpoint.status()
    want = reference_results(queries, docs)
    assert [r.name for r in got] == [d.name for d in docs]  # each once, in order
    assert [r.matches for r in got if r.name != "broken.xml"] == [
        r.matches for r in want if r.name != "broken.xml"
    ]
    assert got[3].error == "broken.xml: the engine flagged the document: malformed"
    # every fault happened, both ways, and the board saw its effects
    for direction in relay.counts.values():
        assert all(direction[name] > 0 for name in ("drop", "duplicate", "reorder", "corrupt"))
    assert status.bad > 0 and status.duplicates > 0 and status.out_of_order > 0
    assert endpoint.overruns == 0 and status.documents == len(docs)
    assert link.stats.bad > 0 and link.stats.resent_bytes > 0


def test_board_never_takes_more_than_its_credit(custom_build):
    build, _ = custom_build
    config = EndpointConfig(input_buffer=2000)
    endpoint = model_endpoint(build, config)
    (hello,) = endpoint.receive(encode_datagram(Datagram(DatagramKind.HELLO.value, 1)), 0.0)
    reply = decode_datagram(hello)
    status = UdpStatus.decode(reply.payload)
    assert (reply.ack, reply.limit, status.input_buffer) == (0, 2000, 2000)
    largest = max(DOCS, key=lambda d: d.stat().st_size)
    stream = input_record(InputKind.DOCUMENT, largest.read_bytes())
    assert len(stream) > 2 * MAX_PAYLOAD

    def data(seq, size):
        raw = Datagram(DatagramKind.DATA.value, 1, seq, 0, 0, stream[seq : seq + size])
        return endpoint.receive(encode_datagram(raw), 0.0)

    data(0, MAX_PAYLOAD)
    data(MAX_PAYLOAD, MAX_PAYLOAD)  # beyond the limit: dropped, not acknowledged
    assert (endpoint.rx_next, endpoint.overruns) == (MAX_PAYLOAD, 1)
    data(MAX_PAYLOAD, 2000 - MAX_PAYLOAD)  # up to the limit: taken
    assert (endpoint.rx_next, endpoint.limit()) == (2000, 2000)
    replies = endpoint.run(5000, 0.0)  # the engine drains the buffer: the credit grows
    assert endpoint.limit() > 2000
    assert any(decode_datagram(r).limit == endpoint.limit() for r in replies)
    # of another session: stale, changes nothing
    raw = Datagram(DatagramKind.DATA.value, 2, 2000, 0, 0, stream[2000:2100])
    assert endpoint.receive(encode_datagram(raw), 0.0) == [] and endpoint.stale == 1


def test_host_restart_mid_batch_gets_every_answer_once(custom_build):
    build, queries = custom_build
    docs = DOCS[:16]
    design = BoardDesign.load(build)
    config = EndpointConfig(input_buffer=4096, readout_buffer=2048, timeout=0.02)
    with model_board(build, config, Faults(drop=0.03, reorder=0.03), seed=5) as (
        endpoint,
        address,
        _,
    ):
        # the first host sends a window, takes two answers and dies with the rest in flight
        first = UdpLink(address, timeout=20, rto=0.02)
        engine = open_board_engine(first, design, engine_class=UdpBoardEngine)
        results = engine.filter_batch(docs, window=8)
        assert [next(results).name for _ in range(2)] == [d.name for d in docs[:2]]
        old_session = first.session
        first.close()
        # a new host (a new session): the old one's documents still in the board are dropped
        second = UdpLink(address, timeout=20, rto=0.02)
        engine = open_board_engine(second, design, engine_class=UdpBoardEngine)
        assert endpoint.session == second.session != old_session
        got = list(engine.filter_batch(docs, window=8))
        stale_before = endpoint.stale
        second._send(DatagramKind.DATA)  # still accepted: the current session
        time.sleep(0.1)
        assert endpoint.stale == stale_before
        # an old session's datagram is stale (sent until one passes the lossy relay)
        replay = encode_datagram(Datagram(DatagramKind.DATA.value, old_session, 0, 0, 0, b"<"))
        with UdpLink(address, rto=0.02) as third:
            deadline = time.monotonic() + 20
            while endpoint.stale == stale_before and time.monotonic() < deadline:
                third.sock.send(replay)
                time.sleep(0.05)
        second.close()
        assert endpoint.stale > stale_before
    assert got == reference_results(queries, docs)


def test_a_restart_cuts_a_document_short_and_its_readout_is_dropped(custom_build):
    build, queries = custom_build
    endpoint = model_endpoint(build)
    endpoint.receive(encode_datagram(Datagram(DatagramKind.HELLO.value, 1)), 0.0)
    doc = DOCS[0].read_bytes()
    half = input_record(InputKind.DOCUMENT, doc)[:700]
    endpoint.receive(encode_datagram(Datagram(DatagramKind.DATA.value, 1, 0, 0, 0, half)), 0.0)
    endpoint.run(400, 0.0)  # part of it into the engine
    assert endpoint.started and endpoint.left
    endpoint.receive(encode_datagram(Datagram(DatagramKind.HELLO.value, 2)), 0.0)
    whole = input_record(InputKind.DOCUMENT, doc)
    for at in range(0, len(whole), MAX_PAYLOAD):
        chunk = whole[at : at + MAX_PAYLOAD]
        endpoint.receive(encode_datagram(Datagram(DatagramKind.DATA.value, 2, at, 0, 0, chunk)), 0)
        endpoint.run(100_000, 0.0)
    reader = RecordReader()
    (record,) = reader.feed(bytes(endpoint.out))
    assert (record.doc, record.errors, endpoint.documents) == (0, 0, 1)
    assert not endpoint.busy()


@pytest.fixture(scope="module")
def programmable_build(tmp_path_factory):
    work = tmp_path_factory.mktemp("udp-programmable")
    build = work / "build"
    result = run_cli(
        "build", "--board", "ulx3s-85f", "--mode", "programmable", "--clusters", 2,
        "--columns", 24, "--max-tag-len", 16, "--max-depth", 16, "--no-toolchain", "-o", build,
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    return build, work


def test_programmable_board_is_configured_over_a_faulty_link(programmable_build):
    build, work = programmable_build
    queries = queries_file(work, 12)
    docs = DOCS[:6]
    config = EndpointConfig(timeout=0.02)
    with model_board(build, config, ALL_FAULTS, seed=11) as (endpoint, address, _):
        with UdpLink(address, timeout=30, rto=0.02) as link:
            from xpfilt.lang.xpath import load_queries

            engine = open_board_engine(
                link,
                BoardDesign.load(build),
                queries=load_queries(queries).queries,
                engine_class=UdpBoardEngine,
            )
            got = list(engine.filter_batch(docs, window=4))
            assert endpoint.status().loaded and endpoint.status().generation == 1
            # a corrupt stream is refused with the board's verdict; the set stays
            with pytest.raises(LinkError, match="the board rejected the configuration stream"):
                link.configure(b"\x00" * 64)
            assert list(engine.filter_batch(docs[:2])) == got[:2]
    model = run_cli("filter", "-e", "model", "--mode", "programmable", "--hw", build, "-q",
                    queries, *docs)  # fmt: skip
    assert "".join(f"{r.name}\t{' '.join(map(str, r.matches))}\n" for r in got) == model.stdout


def test_host_udp_command_prints_the_filter_tsv_and_rates(custom_build):
    build, queries = custom_build
    docs = DOCS[:10]
    with model_board(build, EndpointConfig(timeout=0.02), Faults(drop=0.05), seed=2) as (
        _,
        (host, port),
        _,
    ):
        result = run_cli("host", "--udp", f"{host}:{port}", "--build", build, "-q", queries,
                         "--window", 4, *docs)  # fmt: skip
    assert result.exit_code == 0, result.output
    assert result.stdout == run_cli("filter", "-q", queries, *docs).stdout
    assert "xpfilt host: 10 documents, " in result.stderr and " MB/s " in result.stderr
    assert "board at 02:58:50:46:49:4c 192.168.1.50:4747" in result.stderr
    result = run_cli("host", "--udp", "x", "--port", "/dev/null", "--build", build, docs[0])
    assert result.exit_code == 2 and "give the board's --port (UART) or its --udp" in result.output


# --- Ethernet board builds (files only; LiteEth's generator runs) -----------------------------


@pytest.mark.parametrize(
    "board, width", [("ecpix5-85f", 1), ("colorlight-5a75b", 1), ("colorlight-5a75b", 2)]
)
def test_ethernet_boards_get_liteeth_the_endpoint_and_constraints(board, width, tmp_path):
    pytest.importorskip("liteeth")
    queries = queries_file(tmp_path, 8)
    out = tmp_path / "build"
    result = run_cli(
        "build", "--board", board, "-q", queries, "--link", "ethernet", "--mac",
        "02:00:00:00:00:07", "--ip", "10.0.0.7", "--udp-port", 5000, "--no-toolchain", "-o", out,
        "--bytes-per-cycle", width,
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    info = json.loads((out / "board.json").read_text())
    assert (info["link"], info["mac"], info["ip"], info["port"]) == (
        "ethernet", "02:00:00:00:00:07", "10.0.0.7", 5000,
    )  # fmt: skip
    assert info["clock_hz"] == 125e6
    pll = info["pll"]  # LiteEth's system clock: the PLL's second output
    vco = pll["input_hz"] * pll["clkfb_div"] / pll["clki_div"] * pll["clkop_div"]
    assert vco / pll["clkos_div"] == {"ecpix5-85f": 62.5e6, "colorlight-5a75b": 50e6}[board]
    assert info["bytes_per_cycle"] == width
    if width > 1:  # the W-byte engine on a clock of its own: the link's / W (CLKOS2)
        assert vco / pll["clkos2_div"] == info["engine_hz"] == 125e6 / width
        assert "the engine at 62.5 MHz (the PLL's CLKOS2)" in (out / "report.md").read_text()
    else:
        assert "clkos2_div" not in pll and "engine_hz" not in info
    liteeth = (out / "gateware" / "xpfilt_liteeth.v").read_text()
    assert "module xpfilt_liteeth (" in liteeth and "IDDRX1F" in liteeth
    assert re.search(r"input\s+wire\s+\[31:0\]\s+xpfilt_sink_data", liteeth)  # 32 bits wide
    top = (out / "xpfilt_board.v").read_text()
    assert re.search(r"\bxpfilt_liteeth\s+\w+\s*\(", top)
    assert re.search(r"\bxpfilt_engine\s+\w+\s*\(", top)
    lpf = (out / "gateware" / "xpfilt_board.lpf").read_text()
    for pin in ("eth_rgmii_0__rx_clk__io", "eth_rgmii_0__tx_data__io", "EHXPLLL"):
        assert pin in lpf or pin in top, pin
    assert 'FREQUENCY PORT "eth_rgmii_0__rx_clk__io" 125 MHz;' in lpf
    assert (
        "Gigabit Ethernet, UDP (LiteEth), 02:00:00:00:00:07 10.0.0.7:5000"
        in (out / "report.md").read_text()
    )
    # the model of this board reports the addresses it was built with
    status = model_endpoint(out).status()
    assert status.address == "02:00:00:00:00:07 10.0.0.7:5000"


def test_ethernet_build_options_are_checked(tmp_path):
    queries = queries_file(tmp_path, 4)
    result = run_cli("build", "--board", "colorlight-5a75b", "-q", queries, "--link", "uart",
                     "--no-toolchain", "-o", tmp_path / "b")  # fmt: skip
    assert result.exit_code == 2
    assert "link must be one of ethernet on colorlight-5a75b, not 'uart'" in result.output
    result = run_cli("build", "--board", "ecpix5-85f", "-q", queries, "--mac", "01:00:00:00:00:01",
                     "--no-toolchain", "-o", tmp_path / "b")  # fmt: skip
    assert result.exit_code == 2
    assert "MAC address must be unicast (first byte even), not '01:00:00:00:00:01'" in result.output
    result = run_cli("build", "--board", "ecpix5-85f", "-q", queries, "--ip", "10.0.0.300",
                     "--no-toolchain", "-o", tmp_path / "b")  # fmt: skip
    assert result.exit_code == 2
    assert "IP address must be four numbers 0-255 a.b.c.d, not '10.0.0.300'" in result.output
    result = run_cli("build", "--board", "ecpix5-85f", "--mode", "programmable",
                     "--bytes-per-cycle", 2, "--no-toolchain", "-o", tmp_path / "b")  # fmt: skip
    assert result.exit_code == 2
    assert (
        "--bytes-per-cycle must be 1 with --mode programmable (its W-byte front end is not "
        "built yet), not 2" in result.output
    )


@pytest.mark.regress
def test_shared_nitf_documents_through_a_lossy_ethernet_link_to_the_model_board(tmp_path):
    """The shared NITF documents and query set through the model board behind a relay that
    drops and reorders 3 % of the datagrams each way: the shared expected answers."""
    from xpfilt.software.results import read_expected

    queries = DATA / "queries" / "nitf-d8-p15-n2000.txt"
    build = tmp_path / "build"
    result = run_cli("build", "--board", "colorlight-5a75b", "-q", queries, "--readout", "sparse",
                     "--no-toolchain", "-o", build)  # fmt: skip
    assert result.exit_code == 0, result.output
    expected = read_expected(DATA / "expected" / "nitf-docs--nitf-d8-p15-n2000.tsv")
    faults = Faults(drop=0.03, reorder=0.03)
    with model_board(build, EndpointConfig(timeout=0.05), faults, seed=35) as (_, address, relay):
        with UdpLink(address, timeout=60, rto=0.05) as link:
            engine = open_board_engine(link, BoardDesign.load(build), engine_class=UdpBoardEngine)
            got = list(engine.filter_batch(DOCS, window=32))
    assert {r.name: r.matches for r in got} == expected
    assert [r.name for r in got] == [d.name for d in DOCS]
    assert all(c["drop"] and c["reorder"] for c in relay.counts.values())


# --- documents the board flags, answered in software (issue 35 #7) ----------------------------

#: Documents the custom board of ``custom_build`` flags (its stacks are 16 deep).
FLAGGED = {
    "entity.xml": b'<!DOCTYPE nitf [<!ENTITY m "<head><meta/></head>">]><nitf>&m;<body/></nitf>',
    "deep.xml": b"<nitf>" + b"<x>" * 20 + b"</x>" * 20 + b"<head><meta/></head></nitf>",
    "broken.xml": b"<nitf><head></nitf>",
}
#: Malformed documents the board answers without a flag (its front end checks less than expat):
#: the host's well-formedness check sends them to the software, which refuses them.
UNFLAGGED = {
    "repeated.xml": b'<nitf a="1" a="2"><head><meta/></head></nitf>',
    "cdata-end.xml": b"<nitf><head>]]></head></nitf>",
}
#: How ``xpfilt host --no-fallback`` reports each of them.
FLAG_NAMES = {"entity.xml": "entity", "deep.xml": "depth overflow", "broken.xml": "malformed"}


def flagged_batch(tmp_path):
    """Good NITF documents with each of :data:`FLAGGED` and :data:`UNFLAGGED` among them."""
    bad = []
    for name, data in {**FLAGGED, **UNFLAGGED}.items():
        (tmp_path / name).write_bytes(data)
        bad.append(tmp_path / name)
    return [DOCS[0], bad[0], DOCS[1], bad[1], bad[2], DOCS[2], bad[3], bad[4]]


def check_fallback(result, wanted, fallback: bool) -> None:
    """``xpfilt host``'s ``result`` on :func:`flagged_batch` against ``xpfilt filter``'s
    (``wanted``): with the fallback the same TSV and errors, and the count per flag; without
    it the others' lines, and the three reported flagged."""
    assert result.exit_code == 1
    if fallback:
        assert result.stdout == wanted.stdout
        assert wanted.stderr in result.stderr
        assert (
            "xpfilt host: 5 documents answered in software, 3 of them malformed (flagged by "
            "the board: malformed 1, depth overflow 1, entity 1; not accepted by the host's "
            "well-formedness check 2)\n" in result.stderr
        )
        return
    kept = [line for line in wanted.stdout.splitlines(True) if line.split("\t")[0] not in FLAGGED]
    # without the software the board's answers stand, the unflagged malformed ones' too
    got = [line for line in result.stdout.splitlines(True) if line.split("\t")[0] not in UNFLAGGED]
    assert got == kept
    for name, flag in FLAG_NAMES.items():
        assert f"xpfilt: {name}: the engine flagged the document: {flag}\n" in result.stderr
    assert "answered in software" not in result.stderr


def test_host_answers_what_the_board_flags_in_software(custom_build, tmp_path):
    """The board flags an entity with markup, a document deeper than its stacks and a
    malformed one; ``xpfilt host`` answers them with the fast engine: its TSV (and its error
    for the malformed one) is ``xpfilt filter``'s, and it says how many and why. With
    ``--no-fallback`` they are reported flagged."""
    build, queries = custom_build
    docs = flagged_batch(tmp_path)
    wanted = run_cli("filter", "-q", queries, *docs)
    assert wanted.exit_code == 1 and "broken.xml" in wanted.stderr
    assert "entity.xml\t" in wanted.stdout and "deep.xml\t" in wanted.stdout
    with model_board(build) as (_, (host, port), _):
        result = run_cli("host", "--udp", f"{host}:{port}", "--build", build, "-q", queries,
                         "--window", 3, *docs)  # fmt: skip
    check_fallback(result, wanted, True)
    with model_board(build) as (_, (host, port), _):
        result = run_cli("host", "--udp", f"{host}:{port}", "--build", build, "-q", queries,
                         "--no-fallback", *docs)  # fmt: skip
    check_fallback(result, wanted, False)


@contextmanager
def model_serial_board(build):
    """The custom engine's model of ``build`` behind the UART protocol on a TCP socket (as
    ``xpfilt sim-board`` serves the simulated board, without the simulator): yields its
    ``socket://`` URL."""
    import socket

    from xpfilt.boards.protocol import (
        PROTOCOL_VERSION,
        BoardStatus,
        Command,
        FrameReader,
        Mode,
        ReadoutHeader,
        Response,
        _pack,
        encode_frame,
        readout_body,
    )
    from xpfilt.hwspec.readout import ReadoutKind
    from xpfilt.model.custom import EngineModel, run_documents

    design = BoardDesign.load(build)
    model = EngineModel(design.plan)
    kind = ReadoutKind(design.plan.options.readout)
    status = BoardStatus(PROTOCOL_VERSION, Mode.CUSTOM.value, design.width, design.identity,
                         0, 0, 0, 0, 0, 0, 0, 0)  # fmt: skip
    server = socket.create_server(("127.0.0.1", 0))

    def serve():
        conn, _ = server.accept()
        reader = FrameReader()
        with conn:
            while chunk := conn.recv(4096):
                for frame in reader.feed(chunk):
                    if frame.kind == Command.STATUS.value:
                        conn.sendall(encode_frame(Response.STATUS.value, status.encode()))
                    elif frame.kind == Command.DOCUMENT.value:
                        (readout,) = run_documents(model, [frame.body])
                        header = _pack(ReadoutHeader, doc=readout.doc, errors=int(readout.errors))
                        body = readout_body(kind, readout, design.width)
                        response = (
                            Response.MATCHES if kind is ReadoutKind.SPARSE else Response.READOUT
                        )
                        conn.sendall(encode_frame(response.value, header + body))

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    try:
        yield f"socket://127.0.0.1:{server.getsockname()[1]}"
    finally:
        server.close()


def test_host_on_a_uart_answers_what_the_board_flags_in_software(custom_build, tmp_path):
    """As over UDP: the serial link's host answers the flagged documents in software."""
    build, queries = custom_build
    docs = flagged_batch(tmp_path)
    wanted = run_cli("filter", "-q", queries, *docs)
    with model_serial_board(build) as url:
        result = run_cli("host", "--port", url, "--build", build, "-q", queries, *docs)
    check_fallback(result, wanted, True)
    with model_serial_board(build) as url:
        result = run_cli("host", "--port", url, "--build", build, "--no-fallback", *docs)
    check_fallback(result, wanted, False)


def test_the_line_rate_benchs_host_acknowledges_readout_while_it_has_no_credit():
    """The host of ``bench/hostlink.py``'s line-rate simulation acknowledges readout as it
    comes, whether or not it has credit to send data: it used to acknowledge only within data
    datagrams or once the whole stream was sent, and a board whose readout waited for that ack
    (its engine, and so its credit, held up behind the readout) waited for ever."""
    from xpfilt.boards.eth_sim_tb import LineRateHost
    from xpfilt.boards.protocol import ReadoutRecordKind, readout_record

    host = LineRateHost(b"x" * 5000, session=7)

    def board(seq=0, limit=2000, payload=b""):
        kind = DatagramKind.READOUT.value
        host.take(encode_datagram(Datagram(kind, 7, seq, 0, limit, payload)))

    board()
    assert [len(d.payload) for d in host.datagrams(queued=0)] == [MAX_PAYLOAD, 2000 - MAX_PAYLOAD]
    assert host.datagrams(queued=0) == []  # no credit, nothing to acknowledge
    record = readout_record(ReadoutRecordKind.MATCHES, 0, 0, b"\x01\x02")
    board(payload=record)
    assert len(host.records) == 1
    (ack,) = host.datagrams(queued=1)  # what is queued went with the ack before
    assert (ack.payload, ack.ack, ack.seq) == (b"", len(record), 2000)
    assert host.datagrams(queued=0) == []  # acknowledged once
