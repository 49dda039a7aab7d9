# amaranth: UnusedElaboratable=no
"""The UDP link's gateware (:class:`xpfilt.boards.udp_link.UdpEndpoint`) in the Amaranth
simulator, around a custom engine, against the protocol as the host and the model speak it:
a session opens, documents go in datagrams within the credit, corrupted, duplicated and
overtaking datagrams are dropped (a NAK for the gap), the readout records equal the engine
model's, unacknowledged readouts go again after the timeout, and a new session drops the old
one's documents."""

import pytest
from amaranth.hdl import Module
from amaranth.sim import Simulator

from xpfilt.boards.protocol import (
    Datagram,
    DatagramKind,
    InputKind,
    RecordReader,
    UdpStatus,
    decode_datagram,
    decode_record,
    encode_datagram,
    input_record,
)
from xpfilt.boards.udp_link import UdpEndpoint, max_record, readout_buffer_size
from xpfilt.compiler.custom import CompileOptions, compile_queries
from xpfilt.hdl.custom import CustomEngine
from xpfilt.hwspec.readout import ReadoutKind
from xpfilt.lang.xpath import parse_query
from xpfilt.model.custom import EngineModel, run_documents

from .rtl_compare import Bench as Rerun

QUERIES = ["/a/b", "//c", "/a/*/d", "//b//d", "/x"]
DOCS = [
    b"<a><b/></a>",
    b"<a><c><d/></c></a>",
    b"<x><b><d>text</d></b></x>",
    b"<a><b><c/></b></a>",
    b"<a></b>",  # malformed: flagged
    b"<c/>",
]
HOST_PORT = 5000


def small_plan(kind=ReadoutKind.SERIAL):
    queries = [parse_query(q, i + 1) for i, q in enumerate(QUERIES)]
    return compile_queries(queries, CompileOptions(max_depth=8, readout=kind.value))


class Bench:
    """The endpoint and an engine in one clock domain; ``send`` puts a datagram on ``rx``,
    ``replies`` gathers what ``tx`` sends (decoded). Elaborated once (~1.5 s) and run again
    for every stimulus (``run``: the simulator reset, ``replies`` emptied), as a new bench
    would run it."""

    def __init__(self, kind=ReadoutKind.SERIAL, timeout=4000):
        self.plan = small_plan(kind)
        self.engine = CustomEngine(self.plan)
        self.ep = UdpEndpoint(
            mode=0, kind=kind, width=len(QUERIES), identity=0x1234, mac=0x0258504649AA,
            ip=0x0A000002, port=4747, input_buffer=128, readout_buffer=128, timeout=timeout,
        )  # fmt: skip
        m = Module()
        m.submodules.ep, m.submodules.engine = ep, engine = self.ep, self.engine
        m.d.comb += [
            engine.bytes_in.valid.eq(ep.input.valid),
            engine.bytes_in.payload.data.eq(ep.input.payload.data),
            engine.bytes_in.payload.last.eq(ep.input.payload.last),
            ep.input.ready.eq(engine.bytes_in.ready),
            ep.readout.valid.eq(engine.readout.valid),
            ep.readout.payload.beat.eq(engine.readout.payload),
            engine.readout.ready.eq(ep.readout.ready),
        ]
        self.rerun = Rerun(m, processes=2)
        self.replies = []

    def run(self, testbench, monitor=None):
        """Run ``testbench`` (and the process ``monitor``) from the initial state."""
        self.replies.clear()
        self.rerun.run(testbench, self._collect, *[monitor] * (monitor is not None))

    async def _collect(self, ctx):
        ep, buf = self.ep, bytearray()
        ctx.set(ep.tx.ready, 1)
        async for _, _, valid, byte, last, port, length in ctx.tick().sample(
            ep.tx.valid, ep.tx.payload.data, ep.tx.payload.last, ep.tx.payload.port,
            ep.tx.payload.length,
        ):  # fmt: skip
            if valid:
                buf.append(byte)
                if last:
                    assert (port, length) == (HOST_PORT, len(buf))
                    d = decode_datagram(bytes(buf))
                    # the credit never reaches past the input buffer's room
                    assert d is None or (d.limit - d.ack) % (1 << 32) <= ep.input_buffer, d
                    self.replies.append(d)
                    buf = bytearray()

    async def send(self, ctx, raw: bytes):
        await _send(ctx, self.ep, raw, 4)

    def model_readouts(self, docs):
        return run_documents(EngineModel(self.plan), docs)


def data(session, seq, payload=b"", ack=0, nak=False):
    return encode_datagram(Datagram(DatagramKind.DATA.value, session, seq, ack, 0, payload, nak))


@pytest.mark.parametrize("kind", [ReadoutKind.SERIAL, ReadoutKind.SPARSE])
def test_endpoint_rtl_takes_documents_through_faults_and_answers_like_the_model(kind):
    bench = Bench(kind)
    stream = b"".join(input_record(InputKind.DOCUMENT, d) for d in DOCS)
    chunk = 40
    got = {}

    async def testbench(ctx):
        r = bench.replies
        await bench.send(ctx, encode_datagram(Datagram(DatagramKind.HELLO.value, 7)))
        await ctx.tick().repeat(120)
        status = UdpStatus.decode(r[0].payload)
        assert (r[0].kind, r[0].session, r[0].ack, r[0].limit) == (ord("S"), 7, 0, 128)
        assert (status.width, status.identity, status.port, status.input_buffer) == (
            5,
            0x1234,
            4747,
            128,
        )
        # a corrupted datagram, then one after a gap (NAK), a duplicate, a stale session's
        bad = bytearray(data(7, 0, stream[:chunk]))
        bad[30] ^= 1
        await bench.send(ctx, bytes(bad))
        await bench.send(ctx, data(7, chunk, stream[chunk : 2 * chunk]))
        await ctx.tick().repeat(60)
        assert any(d.nak and d.ack == 0 for d in r)
        await bench.send(ctx, data(8, 0, stream[:chunk]))
        # the stream within the credit, the readout bytes acknowledged as they come
        seq, rx_next, reader, limit = 0, 0, RecordReader(), 128
        dup_sent = False
        for _ in range(400):
            for d in list(r):
                limit = max(limit, d.limit)
                if d.kind == ord("R") and d.payload and d.seq == rx_next:
                    for record in reader.feed(d.payload):
                        got[record.doc] = decode_record(record, 5)
                    rx_next += len(d.payload)
            r.clear()
            size = min(chunk, len(stream) - seq, limit - seq)
            if size > 0:
                await bench.send(ctx, data(7, seq, stream[seq : seq + size], ack=rx_next))
                if not dup_sent:  # the same again: a duplicate
                    await bench.send(ctx, data(7, seq, stream[seq : seq + size], ack=rx_next))
                    dup_sent = True
                seq += size
            else:
                await bench.send(ctx, data(7, seq, ack=rx_next))
                await ctx.tick().repeat(80)
            if len(got) == len(DOCS):
                break
        await ctx.tick().repeat(20)
        await bench.send(ctx, encode_datagram(Datagram(DatagramKind.STATUS.value, 7)))
        await ctx.tick().repeat(120)
        (status,) = [UdpStatus.decode(d.payload) for d in r if d.kind == ord("S")]
        assert (status.bad, status.duplicates, status.out_of_order, status.stale) == (1, 1, 1, 1)
        assert status.documents == len(DOCS)

    bench.run(testbench)
    want = bench.model_readouts(DOCS)
    assert [got[i] for i in range(len(DOCS))] == [w._replace(doc=i) for i, w in enumerate(want)]


def test_endpoint_rtl_sends_again_after_its_timeout_and_drops_an_old_sessions_readouts():
    bench = Bench(timeout=300)
    first = input_record(InputKind.DOCUMENT, DOCS[1])
    second = input_record(InputKind.DOCUMENT, DOCS[3])

    async def testbench(ctx):
        r = bench.replies
        await bench.send(ctx, encode_datagram(Datagram(DatagramKind.HELLO.value, 1)))
        await bench.send(ctx, data(1, 0, first))
        await ctx.tick().repeat(900)  # its readout, never acknowledged: sent again
        readouts = [d for d in r if d.kind == ord("R") and d.payload]
        assert len(readouts) >= 2 and {(d.seq, d.payload) for d in readouts} == {
            (0, readouts[0].payload)
        }
        # half of a document, then a new session: the cut document's readout is dropped
        await bench.send(ctx, data(1, len(first), second[:9], ack=len(readouts[0].payload)))
        await ctx.tick().repeat(50)
        r.clear()
        await bench.send(ctx, encode_datagram(Datagram(DatagramKind.HELLO.value, 2)))
        await bench.send(ctx, data(2, 0, second))
        await ctx.tick().repeat(400)
        sent = {d.seq: d.payload for d in r if d.kind == ord("R") and d.session == 2}
        records = RecordReader().feed(b"".join(sent[k] for k in sorted(sent)))  # once each
        assert [(rec.doc, decode_record(rec, 5).bits) for rec in records] == [
            (0, bench.model_readouts([DOCS[3]])[0].bits)
        ]
        r.clear()
        await bench.send(ctx, encode_datagram(Datagram(DatagramKind.STATUS.value, 2)))
        await ctx.tick().repeat(150)
        (status,) = [UdpStatus.decode(d.payload) for d in r if d.kind == ord("S")]
        assert status.documents == 1  # the cut document is not the new session's

    bench.run(testbench)


async def _new_session_after(ctx, bench, old: bytes, delay: int, new: bytes) -> list:
    """Session 1 sends the input record ``old``; ``delay`` + 1 cycles later session 2 opens
    and sends ``new``: session 2's readout records 300 cycles on, as (document, bits)."""
    await bench.send(ctx, encode_datagram(Datagram(DatagramKind.HELLO.value, 1)))
    await bench.send(ctx, data(1, 0, old))
    await ctx.tick().repeat(delay + 1)
    await bench.send(ctx, encode_datagram(Datagram(DatagramKind.HELLO.value, 2)))
    await bench.send(ctx, data(2, 0, new))
    await ctx.tick().repeat(300)
    r = bench.replies
    sent = {d.seq: d.payload for d in r if d.kind == ord("R") and d.session == 2}
    records = RecordReader().feed(b"".join(sent[k] for k in sorted(sent)))
    return [(rec.doc, decode_record(rec, 5).bits) for rec in records]


def test_a_session_switch_in_any_cycle_of_a_documents_readout_leaves_it_to_the_old_one():
    """A new session while a document of the old one is in the engine, the switch swept over
    the cycles its readout comes in (one of them is the cycle its record starts): the new
    session's readout stream holds its own document's record only, numbered 0, and that
    document is answered."""
    first = input_record(InputKind.DOCUMENT, DOCS[1])
    second = input_record(InputKind.DOCUMENT, DOCS[3])
    bench = Bench(ReadoutKind.SPARSE)
    for delay in range(10):
        got = {}

        async def testbench(ctx, delay=delay, got=got):
            got["records"] = await _new_session_after(ctx, bench, first, delay, second)

        bench.run(testbench)
        want = [(0, bench.model_readouts([DOCS[3]])[0].bits)]
        assert got["records"] == want, f"switch {delay + 1} cycles after the document's datagram"


def test_a_session_switch_in_any_cycle_around_an_old_documents_end_drops_its_readout():
    """A new session as an old document's last byte goes to the engine, the switch swept over
    the cycles either side (cut short before, whole after): the old document's readout is
    dropped, whichever it was (the count of documents in the engine is taken at the switch),
    the new session's readout stream holds its own document's record only, numbered 0, and
    in the end no document is counted in the engine."""
    old = input_record(InputKind.DOCUMENT, b"<a>" + b"x" * 60 + b"</a>")
    new = input_record(InputKind.DOCUMENT, DOCS[3])
    bench = Bench(ReadoutKind.SPARSE)

    def run(delay):
        ep, s = bench.ep, bench.ep.shared
        seen = {"cycle": 0, "switch": None, "old_end": None, "records": None, "counts": None}

        async def monitor(ctx):
            async for _, _, switch, valid, ready, last in ctx.tick().sample(
                s.switch, ep.input.valid, ep.input.ready, ep.input.payload.last
            ):
                seen["cycle"] += 1
                if switch:  # (the last: the new session's)
                    seen["switch"] = seen["cycle"]
                if valid and ready and last and seen["old_end"] is None:
                    seen["old_end"] = seen["cycle"]

        async def testbench(ctx):
            seen["records"] = await _new_session_after(ctx, bench, old, delay, new)
            seen["counts"] = (ctx.get(s.in_engine), ctx.get(s.stale_docs))

        bench.run(testbench, monitor)
        want = [(0, bench.model_readouts([DOCS[3]])[0].bits)]
        assert seen["records"] == want, f"switch at {seen['switch'] - seen['old_end']}"
        assert seen["counts"] == (0, 0), f"switch at {seen['switch'] - seen['old_end']}"
        return seen["switch"] - seen["old_end"]

    # the switch ``run(delay)`` cycles after the old document's end, for a delay past it
    centre = 100 - run(100)
    offsets = [run(delay) for delay in range(centre - 4, centre + 5)]
    # cut short (its end, a space, just after the switch), in the very cycle, and after
    assert min(offsets) < 0 and 0 in offsets and max(offsets) == 4, offsets


# --- the Ethernet board core: the endpoint, two clock domains, the engine -------------------


class CoreBench:
    """:class:`EthernetBoardCore` around ``engine`` with the link at 125 MHz and the engine at
    an unrelated clock; ``host`` plays the host's side (credit, acks) over the raw UDP port."""

    def __init__(
        self, engine, *, mode, width, readout=ReadoutKind.SERIAL, engine_period=7.3e-9,
        readout_buffer=256,
    ):  # fmt: skip
        from xpfilt.boards.eth_top import EthernetBoardCore

        self.core = EthernetBoardCore(
            engine, mode=mode, width=width, identity=0x55, readout=readout, heartbeat=100,
            mac=0x0258504649AA, ip=0x0A000002, port=4747, input_buffer=256,
            readout_buffer=readout_buffer,
            timeout=3000, bytes_per_cycle=getattr(engine, "bytes_per_cycle", 1),
        )  # fmt: skip
        self.sim = Simulator(self.core)
        self.sim.add_clock(8e-9, domain="link")
        self.sim.add_clock(engine_period, domain="sync")
        self.replies = []
        self.sim.add_process(self._collect)

    async def _collect(self, ctx):
        tx, buf = self.core.tx, bytearray()
        ctx.set(tx.ready, 1)
        async for _, _, valid, byte, last in ctx.tick("link").sample(
            tx.valid, tx.payload.data, tx.payload.last
        ):
            if valid:
                buf.append(byte)
                if last:
                    self.replies.append(decode_datagram(bytes(buf)))
                    buf = bytearray()

    async def send(self, ctx, raw):
        rx = self.core.rx
        for i, byte in enumerate(raw):
            ctx.set(rx.valid, 1)
            ctx.set(rx.payload.data, byte)
            ctx.set(rx.payload.last, i == len(raw) - 1)
            ctx.set(rx.payload.port, HOST_PORT)
            await ctx.tick("link").until(rx.ready)
        ctx.set(rx.valid, 0)

    async def host(
        self, ctx, stream, records_wanted, *, session=3, chunk=64, hold=None, rounds=3000
    ):
        """Open ``session``, send ``stream`` within the credit, acknowledge the readout
        stream (``hold``: only from ``hold`` rounds after the whole stream went in); returns
        the records once ``records_wanted`` came."""
        await self.send(ctx, encode_datagram(Datagram(DatagramKind.HELLO.value, session)))
        seq = rx_next = limit = 0
        reader, records = RecordReader(), []
        sent_at = None
        for round_ in range(rounds):
            await ctx.tick("link").repeat(30)
            for d in self.replies:
                assert d is not None and d.session == session
                limit = max(limit, d.limit)
                if d.kind == ord("R") and d.payload and d.seq == rx_next:
                    records += reader.feed(d.payload)
                    rx_next += len(d.payload)
            self.replies.clear()
            if len(records) >= records_wanted:
                return records
            size = min(chunk, len(stream) - seq, limit - seq)
            payload = stream[seq : seq + max(size, 0)]
            if sent_at is None and seq == len(stream):
                sent_at = round_
            acking = hold is None or (sent_at is not None and round_ >= sent_at + hold)
            await self.send(ctx, data(session, seq, payload, ack=rx_next if acking else 0))
            seq += len(payload)
        raise AssertionError(
            f"{len(records)} of {records_wanted} records came: "
            f"{[(chr(r.kind), r.doc, r.body.hex()) for r in records]}"
        )


def test_ethernet_board_core_filters_across_its_clock_domains():
    from xpfilt.boards.protocol import Mode

    plan = small_plan()
    core = CoreBench(CustomEngine(plan), mode=Mode.CUSTOM, width=len(QUERIES))
    stream = b"".join(input_record(InputKind.DOCUMENT, d) for d in DOCS)
    got = []

    async def testbench(ctx):
        got.extend(await core.host(ctx, stream, len(DOCS)))

    core.sim.add_testbench(testbench)
    core.sim.run()
    want = run_documents(EngineModel(plan), DOCS)
    assert [decode_record(r, 5) for r in got] == [w._replace(doc=i) for i, w in enumerate(want)]


@pytest.mark.parametrize("width", [2, pytest.param(4, marks=pytest.mark.rtl)])  # 9 s, 13 s
def test_ethernet_board_core_with_the_w_byte_engine_answers_like_the_reference(width):
    """The W-byte engine on the board core, its clock the link's / W (+3 %: unrelated):
    NITF documents between one- to three-byte ones, back to back, answered as the reference
    answers them (the short ones are malformed: flagged)."""
    from xpfilt.boards.protocol import Mode
    from xpfilt.lang.xpath import load_queries
    from xpfilt.paths import shared_data
    from xpfilt.software.reference import ReferenceFilter

    data_dir = shared_data()
    lines = (data_dir / "queries" / "nitf-d4-p15-n2000.txt").read_text().splitlines()[:16]
    queries = load_queries(lines).queries
    plan = compile_queries(queries, CompileOptions(max_depth=16, readout="sparse"))
    nitf = [(data_dir / "nitf" / "docs" / f"outFile{n}.xml").read_bytes() for n in (98, 6)]
    docs = [b"<", nitf[0], b"<a", b"x", nitf[1], b"<a/", b"<b/>"]
    engine = CustomEngine(plan, bytes_per_cycle=width)
    core = CoreBench(
        engine, mode=Mode.CUSTOM, width=len(queries), readout=ReadoutKind.SPARSE,
        engine_period=8e-9 * width * 1.03,
    )  # fmt: skip
    stream = b"".join(input_record(InputKind.DOCUMENT, d) for d in docs)
    got = []

    async def testbench(ctx):
        got.extend(await core.host(ctx, stream, len(docs), chunk=200))

    core.sim.add_testbench(testbench)
    core.sim.run()
    readouts = [decode_record(r, len(queries)) for r in got]
    assert [r.doc for r in readouts] == list(range(len(docs)))
    reference, order = ReferenceFilter(queries), plan.query_numbers
    for readout, doc in zip(readouts, docs):
        if doc in nitf or doc == b"<b/>":
            assert readout.errors == 0, doc
            matches = sorted(order[i] for i in range(len(queries)) if readout.bits >> i & 1)
            assert matches == sorted(i + 1 for i in reference.filter(doc)), doc
        else:
            assert readout.errors != 0, doc


def test_ethernet_board_core_configures_a_programmable_engine_and_says_its_verdict():
    from xpfilt.boards.protocol import ConfigVerdict, Mode, ReadoutRecordKind, _unpack
    from xpfilt.compiler.programmable import HardwareSpec, configure
    from xpfilt.hdl.programmable import ProgrammableEngine
    from xpfilt.model.programmable import ProgrammableModelEngine

    spec = HardwareSpec(clusters=1, columns=8, max_tag_len=4, max_depth=8, tags=7)
    queries = [parse_query(q, i + 1) for i, q in enumerate(QUERIES)]
    stream = configure(queries, spec).stream()
    core = CoreBench(ProgrammableEngine(spec), mode=Mode.PROGRAMMABLE, width=spec.readout_width)
    bad = bytearray(stream)
    bad[-1] ^= 1  # a wrong CRC: rejected, the loaded set stays
    records_in = (
        input_record(InputKind.CONFIG, stream)
        + b"".join(input_record(InputKind.DOCUMENT, d) for d in DOCS[:4])
        + input_record(InputKind.CONFIG, bytes(bad))
        + input_record(InputKind.DOCUMENT, DOCS[5])
    )
    got = []

    async def testbench(ctx):
        got.extend(await core.host(ctx, records_in, 7, chunk=200))

    core.sim.add_testbench(testbench)
    core.sim.run()
    verdicts = [_unpack(ConfigVerdict, r.body) for r in got if r.kind == ord("C")]
    assert [(v["generation"], v["loaded"], v["rejected"]) for v in verdicts] == [
        (1, 1, 0),
        (1, 1, 1),
    ]
    model = ProgrammableModelEngine(queries, spec)
    readouts = [decode_record(r, spec.readout_width) for r in got if r.kind != ord("C")]
    docs = DOCS[:4] + DOCS[5:]
    assert [r.doc for r in readouts] == list(range(5))
    # the first document after the stream is answered by the new set: none is flagged here
    assert [r.bits for r in readouts] == [run_documents(model.model, [d])[0].bits for d in docs]
    assert ReadoutRecordKind.CONFIG.value == ord("C")


def test_a_verdict_waits_for_the_end_of_a_readout_record_the_link_holds_back():
    """A configuration stream right after a document whose serial readout (32 beats) is longer
    than the readout FIFO (16), the endpoint's readout buffer full (the host does not
    acknowledge yet): the engine stalls mid-record, the stream loads meanwhile, and its
    verdict goes in after that record's last beat, never between two of its beats."""
    from xpfilt.boards.protocol import ConfigVerdict, Mode, _unpack
    from xpfilt.compiler.programmable import HardwareSpec, configure
    from xpfilt.hdl.programmable import ProgrammableEngine
    from xpfilt.model.programmable import ProgrammableModelEngine

    spec = HardwareSpec(clusters=1, columns=32, max_tag_len=4, max_depth=8, tags=7)
    queries = [parse_query(q, i + 1) for i, q in enumerate(QUERIES)]
    stream = configure(queries, spec).stream()
    core = CoreBench(
        ProgrammableEngine(spec), mode=Mode.PROGRAMMABLE, width=spec.readout_width,
        readout_buffer=32,  # two whole records: room for the next only while it is empty
    )  # fmt: skip
    docs = [DOCS[1], DOCS[3]]
    records_in = (
        input_record(InputKind.CONFIG, stream)
        + input_record(InputKind.DOCUMENT, docs[0])
        + input_record(InputKind.CONFIG, stream)
        + input_record(InputKind.DOCUMENT, docs[1])
    )
    got = []

    async def testbench(ctx):
        got.extend(await core.host(ctx, records_in, 4, chunk=200, hold=40, rounds=400))

    core.sim.add_testbench(testbench)
    core.sim.run()
    assert [chr(r.kind) for r in got] == ["C", "R", "C", "R"]
    verdicts = [_unpack(ConfigVerdict, r.body) for r in got if r.kind == ord("C")]
    assert [(v["generation"], v["loaded"], v["rejected"]) for v in verdicts] == [
        (1, 1, 0),
        (2, 1, 0),
    ]
    model = ProgrammableModelEngine(queries, spec)
    readouts = [decode_record(r, spec.readout_width) for r in got if r.kind != ord("C")]
    assert [(r.doc, r.errors) for r in readouts] == [(0, 0), (1, 0)]
    assert [r.bits for r in readouts] == [run_documents(model.model, [d])[0].bits for d in docs]


def test_a_new_session_never_gets_the_verdict_of_a_stream_an_old_one_cut_short():
    """A host restart in the middle of a configuration stream: the board ends the stream (a
    zero byte: rejected) and its verdict belongs to the old session; the new session's
    readout stream carries only its own documents' records."""
    from xpfilt.boards.protocol import Mode
    from xpfilt.compiler.programmable import HardwareSpec, configure
    from xpfilt.hdl.programmable import ProgrammableEngine

    spec = HardwareSpec(clusters=1, columns=8, max_tag_len=4, max_depth=8, tags=7)
    queries = [parse_query(q, i + 1) for i, q in enumerate(QUERIES)]
    stream = input_record(InputKind.CONFIG, configure(queries, spec).stream())
    core = CoreBench(ProgrammableEngine(spec), mode=Mode.PROGRAMMABLE, width=spec.readout_width)
    docs = DOCS[:3]
    got = []

    async def testbench(ctx):
        await core.send(ctx, encode_datagram(Datagram(DatagramKind.HELLO.value, 3)))
        await ctx.tick("link").repeat(100)
        await core.send(ctx, data(3, 0, stream[: len(stream) // 2]))
        await ctx.tick("link").repeat(400)
        core.replies.clear()
        records = b"".join(input_record(InputKind.DOCUMENT, d) for d in docs)
        got.extend(await core.host(ctx, records, len(docs), session=4))
        await ctx.tick("link").repeat(2000)  # a late verdict would come by now

    core.sim.add_testbench(testbench)
    core.sim.run()
    assert [chr(r.kind) for r in got] == ["R"] * len(docs)
    assert [r.doc for r in got] == list(range(len(docs)))


# --- a session switch in the cycle a readout record starts ----------------------------------


async def _send(ctx, ep, raw: bytes, pad: int):
    """``raw`` on ``ep``'s rx, a byte a cycle as it takes them, then ``pad`` idle cycles."""
    for i, byte in enumerate(raw):
        ctx.set(ep.rx.valid, 1)
        ctx.set(ep.rx.payload.data, byte)
        ctx.set(ep.rx.payload.last, i == len(raw) - 1)
        ctx.set(ep.rx.payload.port, HOST_PORT)
        await ctx.tick().until(ep.rx.ready)
    ctx.set(ep.rx.valid, 0)
    if pad:
        await ctx.tick().repeat(pad)


def _race_endpoint(verdict: bool) -> Rerun:
    """The endpoint alone (mode programmable when ``verdict``), elaborated once for
    :func:`_switch_race`'s runs."""
    ep = UdpEndpoint(
        mode=int(verdict), kind=ReadoutKind.SERIAL, width=5, identity=1, mac=1, ip=2,
        port=4747, input_buffer=128, readout_buffer=128, timeout=100_000,
    )  # fmt: skip
    return Rerun(ep, processes=1)


def _switch_race(bench: Rerun, offset: int, *, verdict: bool) -> list:
    """The endpoint alone (``bench``, from ``_race_endpoint(verdict)``): session 7 sends a
    document (or a configuration stream) the engine takes; session 8's HELLO goes in, and
    ``offset`` cycles after its last byte the old record's readout (five 1 bits, or a verdict)
    starts; then session 8's own document and its readout (bits 0 1 0 0 0). Returns session
    8's readout records as (kind, doc, body hex)."""
    width = 5
    ep = bench.dut
    replies = []

    async def collect(ctx):
        buf = bytearray()
        ctx.set(ep.tx.ready, 1)
        async for _, _, valid, byte, last in ctx.tick().sample(
            ep.tx.valid, ep.tx.payload.data, ep.tx.payload.last
        ):
            if valid:
                buf.append(byte)
                if last:
                    replies.append(decode_datagram(bytes(buf)))
                    buf = bytearray()

    async def send(ctx, raw, pad):
        await _send(ctx, ep, raw, pad)

    async def readout(ctx, bits):
        for i, bit in enumerate(bits):
            ctx.set(ep.readout.valid, 1)
            ctx.set(ep.readout.payload.beat.bit, bit)
            ctx.set(ep.readout.payload.beat.first, i == 0)
            ctx.set(ep.readout.payload.beat.last, i == len(bits) - 1)
            await ctx.tick().until(ep.readout.ready)
        ctx.set(ep.readout.valid, 0)

    async def old_verdict(ctx):
        ctx.set(ep.readout.valid, 1)
        ctx.set(ep.readout.payload.verdict, 1)
        ctx.set(ep.readout.payload.loaded, 1)
        await ctx.tick().until(ep.readout.ready)
        ctx.set(ep.readout.valid, 0)
        ctx.set(ep.readout.payload.verdict, 0)

    async def testbench(ctx):
        ctx.set(ep.input.ready, 1)  # the engine takes every byte
        doc = input_record(InputKind.DOCUMENT, b"<a/>")
        old = input_record(InputKind.CONFIG, b"\x01\x02\x03") if verdict else doc
        await send(ctx, encode_datagram(Datagram(DatagramKind.HELLO.value, 7)), 50)
        await send(ctx, data(7, 0, old), 100)
        await send(ctx, encode_datagram(Datagram(DatagramKind.HELLO.value, 8)), offset)
        await (old_verdict(ctx) if verdict else readout(ctx, [1] * width))
        await ctx.tick().repeat(200)
        await send(ctx, data(8, 0, doc), 100)
        await readout(ctx, [0, 1, 0, 0, 0])
        await ctx.tick().repeat(300)
        await send(ctx, data(8, len(doc)), 300)  # asks for the readout stream

    bench.run(testbench, collect)
    stream = {d.seq: d.payload for d in replies if d and d.session == 8 and d.kind == ord("R")}
    records = RecordReader().feed(b"".join(stream[k] for k in sorted(stream)))
    return [(chr(r.kind), r.doc, r.body.hex()) for r in records]


@pytest.mark.parametrize("verdict", [False, True], ids=["readout", "verdict"])
def test_a_record_starting_as_a_new_session_opens_stays_with_the_old_session(verdict):
    """A HELLO's switch and the start of an old document's readout (or an old configuration
    stream's verdict) in the same cycle: the record is the old session's and is dropped, for
    every offset around that cycle; the new session gets its own document's record only."""
    bench = _race_endpoint(verdict)
    for offset in range(4):
        assert _switch_race(bench, offset, verdict=verdict) == [("R", 0, "02")], offset


def test_a_stream_register_passes_every_beat_once_in_order_at_full_rate():
    """:class:`StreamRegister` (the board core's registers between the endpoint and the FIFOs):
    random valid and ready on either side, every beat once and in order; with both always
    on, a beat a cycle."""
    import random

    from xpfilt.boards.eth_top import StreamRegister

    for pattern in ("random", "always"):
        reg = StreamRegister(8)
        sim = Simulator(reg)
        sim.add_clock(1e-8)
        rng = random.Random(7)
        sent, got, cycles = list(range(200)), [], []

        async def source(ctx, rng=rng, sent=sent, pattern=pattern):
            for value in sent:
                ctx.set(reg.i.payload, value)
                ctx.set(reg.i.valid, 1)
                await ctx.tick().until(reg.i.ready)
                if pattern == "random" and rng.random() < 0.3:
                    ctx.set(reg.i.valid, 0)
                    await ctx.tick().repeat(rng.randint(1, 3))
            ctx.set(reg.i.valid, 0)

        async def sink(ctx, rng=rng, got=got, cycles=cycles, pattern=pattern):
            cycle = 0
            while len(got) < len(sent) and cycle < 2000:
                ready = pattern == "always" or rng.random() < 0.6
                ctx.set(reg.o.ready, ready)
                _, _, valid, value = await ctx.tick().sample(reg.o.valid, reg.o.payload)
                cycle += 1
                if valid and ready:
                    got.append(value)
                    cycles.append(cycle)

        sim.add_testbench(source)
        sim.add_testbench(sink)
        sim.run()
        assert got == sent
        if pattern == "always":
            assert cycles[-1] - cycles[0] == len(sent) - 1


def test_a_timeout_in_the_cycle_an_ack_is_checked_never_leaves_tx_next_behind_the_ack():
    """The retransmission timer's go-back and the host's ack of the readout sent: the ack's
    CHECK swept over the cycles around the timeout. In every cycle the readout bytes still to
    send start within what the host has not acknowledged (``tx_acked <= tx_next <= written``):
    a go-back in CHECK, acting on compares of the ``tx_next`` before it, used to leave
    ``tx_next`` behind the ack just taken, and the acknowledged bytes went again."""
    first = input_record(InputKind.DOCUMENT, DOCS[1])
    bench = Bench(timeout=150)  # the readout is sent well before it runs out

    def run(ack_delay):
        ep, s = bench.ep, bench.ep.shared
        seen = {"cycle": 0, "doc_sent": 0, "go_back": None, "checked_at_timeout": False}

        async def monitor(ctx):
            sent = 0
            async for _, _, acked, nxt, written, checking, progress, idle in ctx.tick().sample(
                s.tx_acked, s.tx_next, s.written, s.rx_checking, s.progress, s.tx_idle
            ):
                seen["cycle"] += 1
                assert (nxt - acked) % (1 << 32) <= (written - acked) % (1 << 32), (
                    f"tx_next {nxt} outside [tx_acked {acked}, written {written}] "
                    f"in cycle {seen['cycle']}, the ack {ack_delay} cycles after the document"
                )
                seen["checked_at_timeout"] |= bool(checking and idle and progress == ep.timeout)
                if seen["go_back"] is None and nxt < sent:
                    seen["go_back"] = seen["cycle"]
                sent = max(sent, nxt)

        async def testbench(ctx):
            await bench.send(ctx, encode_datagram(Datagram(DatagramKind.HELLO.value, 1)))
            await bench.send(ctx, data(1, 0, first))
            seen["doc_sent"] = seen["cycle"]
            if ack_delay is None:
                await ctx.tick().repeat(400)
                return
            await ctx.tick().repeat(ack_delay)
            (readout,) = {d.payload for d in bench.replies if d.kind == ord("R") and d.payload}
            await bench.send(ctx, data(1, len(first), ack=len(readout)))
            await ctx.tick().repeat(30)  # a wrong tx_next shows in ACT

        bench.run(testbench, monitor)
        return seen

    # without an ack, the timer goes back ``go_back - doc_sent`` cycles after the document:
    # the ack's last byte swept over 5 cycles either side of that
    probe = run(None)
    assert probe["go_back"] is not None, "the readout was never sent again"
    centre = probe["go_back"] - probe["doc_sent"] - len(data(1, len(first), ack=1))
    runs = [run(delay) for delay in range(centre - 5, centre + 6)]
    assert any(r["checked_at_timeout"] for r in runs), "no ack was checked as the timer expired"


@pytest.mark.parametrize("width", [5, 1024, 4000, 8000, 12000, 30000])
@pytest.mark.parametrize("kind", [ReadoutKind.SERIAL, ReadoutKind.SPARSE])
def test_a_boards_readout_buffer_leaves_room_for_readout_in_flight_beside_two_records(kind, width):
    """A record starts only while the bytes not yet acknowledged leave room for two whole
    records; the buffer a board gets leaves at least 8 KB for readout in flight beyond them
    (at 8,000 queries it used to leave 744 bytes: a record waited for the one before's ack)."""
    size = readout_buffer_size(kind, width)
    assert size & (size - 1) == 0 and size >= 16384
    assert size - 2 * max_record(kind, width) >= 8192


def _lone_endpoint() -> Rerun:
    """An endpoint without an engine (serial readout of 5 bits, 128-byte buffers, no timeout
    in reach) in the simulator, clocked at 100 MHz, room for one process beside a testbench;
    elaborated once (~0.3 s, as long as a run of :func:`_input_across_a_switch`) for all the
    runs of a test."""
    ep = UdpEndpoint(
        mode=0, kind=ReadoutKind.SERIAL, width=5, identity=1, mac=1, ip=2, port=4747,
        input_buffer=128, readout_buffer=128, timeout=100_000,
    )  # fmt: skip
    return Rerun(ep, processes=1)


def _input_across_a_switch(bench: Rerun, offset: int, stall: int) -> list:
    """The endpoint alone (``bench``, from ``_lone_endpoint()``): session 7 sends a long
    document, session 8's HELLO comes ``offset`` cycles after it and then session 8's own
    document; the engine takes the input bytes with ``stall`` (0: every cycle; n: one cycle
    in n + 1 not). Returns the (data, last) the engine took, as records (lists of bytes, each
    ended by a last byte)."""
    ep = bench.dut
    records, current = [], bytearray()

    async def engine(ctx):
        cycle = 0
        async for _, _, valid, ready, byte, last in ctx.tick().sample(
            ep.input.valid, ep.input.ready, ep.input.payload.data, ep.input.payload.last
        ):
            cycle += 1
            if valid and ready:
                current.append(byte)
                if last:
                    records.append(bytes(current))
                    current.clear()
            ctx.set(ep.input.ready, stall == 0 or cycle % (stall + 1) != 0)

    async def send(ctx, raw, pad):
        await _send(ctx, ep, raw, pad)

    async def testbench(ctx):
        ctx.set(ep.tx.ready, 1)
        old = input_record(InputKind.DOCUMENT, b"<a>" + b"x" * 90 + b"</a>")
        new = input_record(InputKind.DOCUMENT, b"<b/>")
        await send(ctx, encode_datagram(Datagram(DatagramKind.HELLO.value, 7)), 50)
        await send(ctx, data(7, 0, old), offset)
        await send(ctx, encode_datagram(Datagram(DatagramKind.HELLO.value, 8)), 0)
        await send(ctx, data(8, 0, new), 400)

    bench.run(testbench, engine)
    return records


@pytest.mark.parametrize("stall", [0, 1, 2])
def test_a_session_switch_while_input_bytes_are_read_cuts_the_record_and_loses_none(stall):
    """The input buffer's bytes are read through two stages (block RAM, register): a switch
    in any cycle of an old document's bytes going to the engine, with the engine taking every
    byte or stalling, ends that document with a space (or lets it end, when it was all
    taken) and gives the new session's document whole, its bytes never mixed with the old."""
    body = b"<a>" + b"x" * 90 + b"</a>"
    seen = set()
    bench = _lone_endpoint()
    for offset in range(0, 120 * (stall + 1), 3 * (stall + 1)):
        old, new = _input_across_a_switch(bench, offset, stall)
        seen.add(old == body)
        assert body.startswith(old[:-1]) and (old == body or old[-1:] == b" "), offset
        assert new == b"<b/>", offset
    assert seen == {False, True}  # cut short, and whole, at some offsets


def _resealed(raw: bytes, *, length=None, version=None, cut=0) -> bytes:
    """``raw`` (an encoded datagram) with its header's ``length`` or ``version`` changed or its
    last ``cut`` payload bytes gone, and a CRC that fits what is left."""
    import zlib

    body = bytearray(raw[:-4])
    if length is not None:
        body[20:22] = length.to_bytes(2, "little")
    if version is not None:
        body[0] = version
    body = bytes(body[: len(body) - cut])
    return body + zlib.crc32(body).to_bytes(4, "little")


def test_datagrams_whose_length_or_version_is_wrong_count_as_bad_and_give_nothing():
    """A datagram with a right CRC but a header ``length`` one more or one less than its
    payload (or far more: 65,535, also in a datagram of 27 bytes), cut short, or of another
    version: counted bad, no document
    of theirs reaches the engine; the right one after them does."""
    bench = Bench()
    doc = input_record(InputKind.DOCUMENT, DOCS[0])
    good = data(5, 0, doc)
    wrong = [
        _resealed(good, length=len(doc) + 1),
        _resealed(good, length=len(doc) - 1),
        _resealed(good, length=0xFFFF),
        _resealed(good, cut=3),
        _resealed(good, version=good[0] + 1),
        # 27 bytes: its last is where a 16-bit 27 + 65,535 would wrap to
        _resealed(good[:23] + bytes(4), length=0xFFFF),
    ]

    async def status(ctx):
        bench.replies.clear()
        await bench.send(ctx, encode_datagram(Datagram(DatagramKind.STATUS.value, 5)))
        await ctx.tick().repeat(150)
        (status,) = [UdpStatus.decode(d.payload) for d in bench.replies if d.kind == ord("S")]
        return status.bad, status.documents

    async def testbench(ctx):
        await bench.send(ctx, encode_datagram(Datagram(DatagramKind.HELLO.value, 5)))
        for raw in wrong:
            await bench.send(ctx, raw)
        await ctx.tick().repeat(100)
        assert await status(ctx) == (len(wrong), 0)
        await bench.send(ctx, good)
        await ctx.tick().repeat(200)
        assert await status(ctx) == (len(wrong), 1)

    bench.run(testbench)


def test_records_of_lengths_around_the_length_bytes_edges_go_whole_to_the_engine():
    """Document records of 1, 2, 255, 256 and 257 bytes (a length whose low byte is 0 or 1
    while its higher bytes are not 0), back to back in a stream sent in datagrams within the
    credit: each goes whole, its last byte marked."""
    lengths = [1, 2, 255, 256, 257, 1]
    stream = b"".join(input_record(InputKind.DOCUMENT, b"a" * n) for n in lengths)
    bench = _lone_endpoint()
    ep = bench.dut
    records, current, replies = [], bytearray(), []

    async def engine(ctx):
        ctx.set(ep.input.ready, 1)
        ctx.set(ep.tx.ready, 1)
        buf = bytearray()
        async for _, _, valid, byte, last, tv, tb, tl in ctx.tick().sample(
            ep.input.valid, ep.input.payload.data, ep.input.payload.last,
            ep.tx.valid, ep.tx.payload.data, ep.tx.payload.last,
        ):  # fmt: skip
            if valid:
                current.append(byte)
                if last:
                    records.append(bytes(current))
                    current.clear()
            if tv:
                buf.append(tb)
                if tl:
                    replies.append(decode_datagram(bytes(buf)))
                    buf.clear()

    async def send(ctx, raw):
        await _send(ctx, ep, raw, 60)

    async def testbench(ctx):
        await send(ctx, encode_datagram(Datagram(DatagramKind.HELLO.value, 3)))
        seq = 0
        while seq < len(stream):
            limit = max((d.limit for d in replies if d), default=128)
            size = min(50, len(stream) - seq, limit - seq)
            if size > 0:
                await send(ctx, data(3, seq, stream[seq : seq + size]))
                seq += size
            else:
                await send(ctx, data(3, seq))
        await ctx.tick().repeat(300)

    bench.run(testbench, engine)
    assert records == [b"a" * n for n in lengths]
