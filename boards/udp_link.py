"""The UDP link's gateware: the board's protocol endpoint (:mod:`xpfilt.boards.protocol`, the
UDP part), the same behaviour as the model :class:`xpfilt.boards.udp_board.BoardEndpoint`.

:class:`UdpEndpoint` runs in the link's clock domain between LiteEth's raw UDP port
(:mod:`xpfilt.boards.liteeth`; ``rx``: datagrams received, ``tx``: datagrams to send) and the
engine's side (``input``: input stream bytes, ``readout``: the engine's readout beats and
configuration verdicts, each through an ``AsyncFIFO`` in the board top):

* receive: a datagram's header is collected, then (one cycle to decide) its payload goes into the
  input buffer beyond the committed bytes when it is the expected offset of the current session
  and fits the room (the credit); the CRC, the length and the version are checked at its end,
  and only a good datagram commits its bytes and acts (HELLO: a session switch and a status;
  STATUS; DATA: the host's ack and NAK, the ack or NAK it is owed);
* the input buffer's records (kind, length, body) become the ``input`` stream: bytes with
  ``last`` on each record's final byte and ``config`` for a configuration stream; a session
  switch cuts a record short with a last byte (a space, or a zero configuration byte);
* readout records are written into the readout buffer (body first, header after, then
  committed), kept until the host acknowledges them; readouts of an earlier session's documents
  are dropped;
* transmit: a status, a NAK, readout bytes not yet sent (at most :data:`MAX_PAYLOAD`), an ack
  or credit that is due, each datagram with its CRC; after ``timeout`` cycles without an ack
  progressing, the readout bytes go again from the host's ``ack``.
"""

from amaranth.hdl import Cat, Const, Module, Mux, Signal
from amaranth.lib import crc, data, stream, wiring
from amaranth.lib.memory import Memory
from amaranth.lib.wiring import In, Out

from xpfilt.boards.protocol import (
    DATAGRAM_CRC,
    DATAGRAM_HEADER,
    INPUT_RECORD,
    MAX_PAYLOAD,
    READOUT_RECORD,
    UDP_VERSION,
    DatagramHeader,
    DatagramKind,
    InputKind,
    ReadoutRecord,
    ReadoutRecordKind,
    UdpStatusLayout,
    id_bytes,
)
from xpfilt.hdl.readout import readout_layout
from xpfilt.hwspec.readout import ReadoutKind

__all__ = [
    "RxBeat",
    "TxBeat",
    "InputBeat",
    "link_readout_layout",
    "UdpEndpoint",
    "max_record",
    "readout_buffer_size",
]


class RxBeat(data.Struct):
    """A byte of a received datagram's payload, with the sender (LiteEth's raw source)."""

    data: 8
    last: 1
    error: 1
    ip: 32
    port: 16


class TxBeat(data.Struct):
    """A byte of a datagram to send (LiteEth's raw sink): ``length`` is its UDP payload's."""

    data: 8
    last: 1
    ip: 32
    port: 16
    length: 16


class InputBeat(data.Struct):
    data: 8
    last: 1
    config: 1


def link_readout_layout(kind: ReadoutKind, width: int) -> data.StructLayout:
    """What crosses from the engine's domain to the link's: a readout beat, or (``verdict``) a
    configuration stream's verdict."""
    return data.StructLayout(
        {
            "verdict": 1,
            "generation": 8,
            "loaded": 1,
            "rejected": 1,
            "beat": readout_layout(kind, width),
        }
    )


def max_record(kind: ReadoutKind, width: int) -> int:
    if kind is ReadoutKind.SERIAL:
        return READOUT_RECORD + (width + 7) // 8
    return READOUT_RECORD + id_bytes(width) * width


def readout_buffer_size(kind: ReadoutKind, width: int, least: int = 16384) -> int:
    """The readout buffer a board gets: a power of two of at least ``least`` bytes that holds
    two whole readout records (the endpoint's room check is a cycle old, see
    :class:`UdpEndpoint`)."""
    return max(least, 1 << (2 * max_record(kind, width) - 1).bit_length())


def _pow2(n: int) -> bool:
    return n > 0 and n & (n - 1) == 0


class UdpEndpoint(wiring.Component):
    """The board's protocol endpoint (see the module). ``mode``, ``kind``, ``width``,
    ``identity``, ``mac``, ``ip``, ``port``: what the status reports; ``input_buffer`` and
    ``readout_buffer``: bytes (powers of two; the readout buffer holds two whole records: a
    record starts when a registered check, a cycle old, saw room for two, so that the record
    completed meanwhile still leaves room for it); ``timeout``: cycles before a
    retransmission.
    ``config_status``: the engine's configuration status (synchronised to this domain)."""

    def __init__(
        self,
        *,
        mode: int,
        kind: ReadoutKind,
        width: int,
        identity: int,
        mac: int,
        ip: int,
        port: int,
        input_buffer: int = 16384,
        readout_buffer: int = 16384,
        timeout: int = 125_000 * 50,
    ):
        if not _pow2(input_buffer) or not _pow2(readout_buffer):
            raise ValueError(
                f"buffer sizes must be powers of two, not {input_buffer} and {readout_buffer}"
            )
        if readout_buffer < 2 * max_record(kind, width):
            raise ValueError(
                f"readout buffer must hold two whole readout records "
                f"({2 * max_record(kind, width)} bytes), not {readout_buffer} bytes"
            )
        self.mode, self.kind, self.width, self.identity = mode, kind, width, identity
        self.mac, self.ip, self.port = mac, ip, port
        self.input_buffer, self.readout_buffer, self.timeout = input_buffer, readout_buffer, timeout
        super().__init__(
            {
                "rx": In(stream.Signature(RxBeat)),
                "tx": Out(stream.Signature(TxBeat)),
                "input": Out(stream.Signature(InputBeat)),
                "readout": In(stream.Signature(link_readout_layout(kind, width))),
                "config_status": In(
                    data.StructLayout({"generation": 8, "loaded": 1, "rejected": 1, "pending": 1})
                ),  # fmt: skip
            }
        )

    def elaborate(self, platform):  # noqa: C901 -- one protocol engine, read top to bottom
        m = Module()
        N, R = self.input_buffer, self.readout_buffer
        nbits, rbits = N.bit_length() - 1, R.bit_length() - 1

        # --- session and stream state ---------------------------------------------------------
        session = Signal(32)
        opened = Signal()
        host_ip = Signal(32)
        host_port = Signal(16)
        switch = Signal()  # a HELLO of a new session acts this cycle
        rx_next = Signal(32)  # the next input stream offset expected
        commit = Signal(nbits + 1)  # input buffer: committed end, parser's read pointer
        rd = Signal(nbits + 1)
        # the room, registered with the offset of the same cycle: the credit ``limit`` (what the
        # host may send up to) follows two cycles late, never more than the room (it only grows
        # in a session: ``commit`` and ``rx_next`` grow together); the room a datagram is
        # checked against is a cycle old, never more than now (it only shrinks in ACT)
        free = Signal(nbits + 1)
        free_at = Signal(32)  # ``rx_next`` when ``free`` was taken
        m.d.sync += [free.eq(N - (commit - rd)), free_at.eq(rx_next)]
        limit = Signal(32)
        m.d.sync += limit.eq(free_at + free)
        bad, stale, dups, ooo = (Signal(16, name=n) for n in ("bad", "stale", "dups", "ooo"))
        documents = Signal(32)  # documents of this session into the engine
        status_due, ack_due, nak_due, nak_sent = Signal(), Signal(), Signal(), Signal()
        advertised = Signal(32)

        tx_acked = Signal(32)
        tx_next = Signal(32)
        written = Signal(32)  # readout stream: committed records end
        progress = Signal(range(self.timeout + 1))

        m.submodules.inbuf = inbuf = Memory(shape=8, depth=N, init=[])
        in_w = inbuf.write_port()
        in_r = inbuf.read_port()
        m.submodules.outbuf = outbuf = Memory(shape=8, depth=R, init=[])
        out_w = outbuf.write_port()
        out_r = outbuf.read_port()

        hdr = Signal(DATAGRAM_HEADER * 8)  # the header of the datagram received
        h = DatagramHeader(hdr)
        # the host's acknowledgement of the readout stream (a good DATA datagram of the session)
        rx_acting = Signal()  # the receive FSM is in ACT
        rx_checking = Signal()  # ... in CHECK
        # the datagram is of the open session: registered while it comes (its session is in
        # by its eighth byte; ``session`` and ``opened`` change in ACT only)
        current = Signal()
        m.d.sync += current.eq(opened & (h.session == session))
        hello_new = Signal()  # ... and it opens a new session (decided in CHECK)
        acting_data = Signal()
        m.d.comb += acting_data.eq(rx_acting & (h.kind == DatagramKind.DATA.value) & current)
        ack_ahead = Signal(32)
        m.d.comb += ack_ahead.eq(h.ack - tx_acked)
        tx_idle = Signal()
        records_fsm_body = Signal()
        # a switch acted last cycle: the stale counts are taken now, from registers, and the
        # readout records FSM (which reads and counts them down) waits this one cycle
        switched = Signal()

        # --- receive ------------------------------------------------------------------------
        m.submodules.rx_crc = rx_crc = crc.Processor(crc.catalog.CRC32_ETHERNET(8))
        beat = self.rx.payload
        index = Signal(16)  # bytes of this datagram so far
        take = Signal()  # this datagram's payload goes into the input buffer
        skip = Signal(16)  # ... after this many payload bytes (the bytes before were had)
        to_take = Signal(16)  # ... this many bytes
        w_at = Signal(nbits)  # ... the next of them here
        # the datagram's offset past ``rx_next`` and its bytes beyond it, registered while the
        # header comes (its seq and length are in by its last byte; rx_next changes in ACT only)
        off = Signal(32)
        need = Signal(32)
        m.d.sync += [off.eq(rx_next - h.seq), need.eq(h.length - off)]
        rx_error = Signal()
        src_ip, src_port = Signal(32), Signal(16)
        total = Signal(16)
        m.d.comb += [rx_crc.data.eq(beat.data), rx_crc.start.eq(index == 0)]

        with m.FSM(name="udp_rx"):
            with m.State("HEADER"):
                m.d.comb += self.rx.ready.eq(1)
                with m.If(self.rx.valid):
                    m.d.comb += rx_crc.valid.eq(1)
                    with m.If(index == 0):
                        m.d.sync += [src_ip.eq(beat.ip), src_port.eq(beat.port), rx_error.eq(0)]
                    with m.If(index < DATAGRAM_HEADER):
                        m.d.sync += hdr.word_select(index[:5], 8).eq(beat.data)
                    m.d.sync += [index.eq(index + 1), rx_error.eq(rx_error | beat.error)]
                    with m.If(beat.last):
                        m.d.sync += total.eq(index + 1)
                        m.next = "CHECK"
                    with m.Elif(index == DATAGRAM_HEADER - 1):
                        m.next = "DECIDE"
            with m.State("DECIDE"):
                takes = (
                    (h.kind == DatagramKind.DATA.value)
                    & current
                    & (off < h.length)
                    & (need <= free)
                )
                m.d.sync += [
                    take.eq(takes),
                    skip.eq(off[:16]),
                    to_take.eq(Mux(takes, need[:16], 0)),
                    w_at.eq(commit[:nbits]),
                ]
                m.next = "PAYLOAD"
            with m.State("PAYLOAD"):
                m.d.comb += self.rx.ready.eq(1)
                with m.If(self.rx.valid):
                    m.d.comb += rx_crc.valid.eq(1)
                    with m.If(skip != 0):
                        m.d.sync += skip.eq(skip - 1)
                    with m.Elif(to_take != 0):
                        m.d.comb += [in_w.en.eq(1), in_w.addr.eq(w_at), in_w.data.eq(beat.data)]
                        m.d.sync += [w_at.eq(w_at + 1), to_take.eq(to_take - 1)]
                    m.d.sync += [index.eq(index + 1), rx_error.eq(rx_error | beat.error)]
                    with m.If(beat.last):
                        m.d.sync += total.eq(index + 1)
                        m.next = "CHECK"
            with m.State("CHECK"):  # the CRC register has taken the last byte
                m.d.comb += rx_checking.eq(1)
                m.d.sync += [
                    index.eq(0),
                    hello_new.eq((h.kind == DatagramKind.HELLO.value) & ~current),
                ]
                good = (
                    rx_crc.match_detected
                    & ~rx_error
                    & (total == DATAGRAM_HEADER + DATAGRAM_CRC + h.length)
                    & (h.version == UDP_VERSION)
                )
                with m.If(~good):
                    m.d.sync += bad.eq(bad + 1)
                    m.next = "HEADER"
                with m.Else():
                    m.next = "ACT"
            with m.State("ACT"):
                m.d.comb += rx_acting.eq(1)
                m.next = "HEADER"
                with m.Switch(h.kind):
                    with m.Case(DatagramKind.HELLO.value):
                        m.d.sync += [host_ip.eq(src_ip), host_port.eq(src_port), status_due.eq(1)]
                        with m.If(hello_new):
                            m.d.comb += switch.eq(1)
                            m.d.sync += [session.eq(h.session), opened.eq(1)]
                    with m.Case(DatagramKind.STATUS.value):
                        with m.If(current):
                            m.d.sync += status_due.eq(1)
                        with m.Else():
                            m.d.sync += stale.eq(stale + 1)
                    with m.Case(DatagramKind.DATA.value):
                        with m.If(~current):
                            m.d.sync += stale.eq(stale + 1)
                        with m.Else():
                            m.d.sync += ack_due.eq(1)
                            with m.If(take):
                                accepted = need[:16]  # h.length - the bytes had
                                m.d.sync += [
                                    commit.eq(commit + accepted),
                                    rx_next.eq(rx_next + accepted),
                                    nak_sent.eq(0),
                                ]
                            with m.Elif(h.length != 0):
                                with m.If(off[31]):  # the datagram is after ``rx_next``
                                    m.d.sync += ooo.eq(ooo + 1)
                                    with m.If(~nak_sent):
                                        m.d.sync += [nak_due.eq(1), nak_sent.eq(1)]
                                with m.Elif(off >= h.length):
                                    m.d.sync += dups.eq(dups + 1)
                    with m.Default():
                        m.d.sync += bad.eq(bad + 1)

        # --- the input buffer's records -> ``input`` -----------------------------------------
        pv = Signal()  # in_r.data holds the byte at rd - 1
        taken = Signal()  # the parser takes that byte this cycle
        fetch = Signal()
        m.d.comb += [
            fetch.eq((rd != commit) & (~pv | taken)),
            in_r.en.eq(fetch),
            in_r.addr.eq(rd[:nbits]),
        ]
        with m.If(fetch):
            m.d.sync += [rd.eq(rd + 1), pv.eq(1)]
        with m.Elif(taken):
            m.d.sync += pv.eq(0)
        is_doc = Signal()  # the record's kind, registered with its length
        is_cfg = Signal()
        left = Signal(32)
        left_last = Signal()  # ``left == 1``, registered: the body byte at hand is the last
        rec_hdr = Signal(INPUT_RECORD * 8)
        rec_i = Signal(range(INPUT_RECORD + 1))
        started = Signal()
        in_engine = Signal(16)  # documents the engine took and whose readout is not written
        doc_done = Signal()  # a document's last byte went to the engine
        doc_counted = Signal()  # ... and it is one of this session's
        read_done = Signal()  # a readout record was completed (written or dropped)
        stale_docs = Signal(16)
        # configuration streams the same way: their verdicts are readout records too
        cfg_in_engine = Signal(8)  # streams the engine took whose verdict is not read
        cfg_done = Signal()  # a stream's last byte went to the engine
        verdict_done = Signal()  # a verdict was read (written or dropped)
        stale_cfgs = Signal(8)  # verdicts still to come of streams of an earlier session
        cut_byte = Signal(8)
        cfg_ok = Const(int(self.mode == 1), 1)

        def cut_on_switch(in_body):
            if in_body:  # (not through ``switch``: it decides what ``cut_doc`` takes)
                m.d.comb += records_fsm_body.eq(1)
            with m.If(switch):  # the buffer's bytes are the old session's
                if in_body:
                    with m.If(started & (is_doc | (is_cfg & cfg_ok))):  # (``left`` is >= 1)
                        m.d.sync += cut_byte.eq(Mux(is_doc, ord(" "), 0))
                        m.next = "CUT"
                    with m.Else():
                        m.next = "RECORD"
                else:
                    m.next = "RECORD"

        with m.FSM(name="records"):
            with m.State("RECORD"):
                cut_on_switch(False)
                m.d.comb += taken.eq(pv)
                with m.If(pv):
                    m.d.sync += [
                        rec_hdr.word_select(rec_i[:3], 8).eq(in_r.data),
                        rec_i.eq(rec_i + 1),
                    ]
                    with m.If(rec_i == INPUT_RECORD - 1):
                        length = Cat(rec_hdr[8:32], in_r.data)
                        m.d.sync += [
                            rec_i.eq(0),
                            is_doc.eq(rec_hdr[:8] == InputKind.DOCUMENT.value),
                            is_cfg.eq(rec_hdr[:8] == InputKind.CONFIG.value),
                            left.eq(length),
                            left_last.eq(length == 1),
                            started.eq(0),
                        ]
                        with m.If(length != 0):
                            m.next = "BODY"
            with m.State("BODY"):
                forward = is_doc | (is_cfg & cfg_ok)
                m.d.comb += [
                    self.input.valid.eq(pv & forward),
                    self.input.payload.data.eq(in_r.data),
                    self.input.payload.last.eq(left_last),
                    self.input.payload.config.eq(is_cfg),
                    taken.eq(pv & (self.input.ready | ~forward)),
                ]
                with m.If(taken):
                    m.d.sync += [left.eq(left - 1), left_last.eq(left == 2), started.eq(1)]
                    with m.If(left_last):
                        m.d.comb += [
                            doc_done.eq(is_doc),
                            doc_counted.eq(is_doc),
                            cfg_done.eq(is_cfg & cfg_ok),
                        ]
                        m.next = "RECORD"
                cut_on_switch(True)
            with m.State("CUT"):  # a session switch cut a record short: end it
                m.d.comb += [
                    self.input.valid.eq(1),
                    self.input.payload.data.eq(cut_byte),
                    self.input.payload.last.eq(1),
                    self.input.payload.config.eq(is_cfg),
                ]
                with m.If(self.input.ready):
                    m.d.comb += [doc_done.eq(is_doc), cfg_done.eq(is_cfg)]
                    m.next = "RECORD"
        with m.If(doc_counted):  # not a document a session switch cut short
            m.d.sync += documents.eq(documents + 1)

        # --- readout records -> the readout buffer -------------------------------------------
        rb = self.readout.payload
        eb = rb.beat
        sparse = self.kind is ReadoutKind.SPARSE
        size = id_bytes(self.width)
        wpos = Signal(32)  # the record being written starts here
        blen = Signal(32)  # its body bytes so far
        doc_no = Signal(32)
        rec = Signal(ReadoutRecord)
        byte_acc = Signal(8)
        verdict_gen = Signal(8)
        nbits_acc = Signal(4)
        sub = Signal(range(max(size, READOUT_RECORD) + 1))
        discard = Signal()  # the record in progress is an earlier session's
        # room for a record: registered, with the margin of a second record (``written`` may
        # have grown by one record since); the difference fits rbits + 1 bits
        room = Signal()
        used = Signal(rbits + 1)
        m.d.comb += used.eq(written[: rbits + 1] - tx_acked[: rbits + 1])
        m.d.sync += room.eq(used <= R - 2 * max_record(self.kind, self.width))
        first = eb.header if sparse else eb.first
        write_at = Signal(32)
        write_byte = Signal(8)
        write_en = Signal()
        m.d.comb += [
            out_w.en.eq(write_en),
            out_w.addr.eq(write_at[:rbits]),
            out_w.data.eq(write_byte),
        ]
        with m.FSM(name="readout_records"):
            with m.State("IDLE"):
                with m.If(switched):
                    pass
                with m.Elif(self.readout.valid & rb.verdict):
                    with m.If(stale_cfgs != 0):  # an earlier session's stream: dropped
                        m.d.comb += [self.readout.ready.eq(1), verdict_done.eq(1)]
                        m.d.sync += stale_cfgs.eq(stale_cfgs - 1)
                    with m.Elif(room):
                        m.d.comb += [self.readout.ready.eq(1), verdict_done.eq(1)]
                        m.d.sync += [
                            rec.kind.eq(ReadoutRecordKind.CONFIG.value),
                            rec.errors.eq(0),
                            rec.doc.eq(documents),
                            rec.length.eq(2),
                            byte_acc.eq(Cat(rb.loaded, rb.rejected)),
                            verdict_gen.eq(rb.generation),
                            wpos.eq(written),
                            blen.eq(0),
                            discard.eq(0),
                        ]
                        m.next = "VERDICT"
                with m.Elif(self.readout.valid & first):
                    with m.If(stale_docs != 0):
                        m.next = "DROP"
                    with m.Elif(room):
                        m.d.sync += [
                            rec.kind.eq(
                                (
                                    ReadoutRecordKind.MATCHES
                                    if sparse
                                    else ReadoutRecordKind.READOUT
                                ).value
                            ),
                            rec.errors.eq(eb.errors.as_value()),
                            rec.doc.eq(doc_no),
                            wpos.eq(written),
                            blen.eq(0),
                            byte_acc.eq(0),
                            nbits_acc.eq(0),
                            sub.eq(0),
                            discard.eq(0),
                        ]
                        if sparse:  # the header beat carries no id
                            m.d.comb += self.readout.ready.eq(1)
                            with m.If(eb.last):
                                m.next = "HEADER"
                            with m.Else():
                                m.next = "BODY"
                        else:
                            m.next = "BODY"
                with m.Elif(self.readout.valid):
                    m.d.comb += self.readout.ready.eq(1)  # not a document's start: framing lost
            with m.State("DROP"):
                m.d.comb += self.readout.ready.eq(~switched)
                with m.If(self.readout.valid & eb.last & ~switched):
                    m.d.comb += read_done.eq(1)
                    m.d.sync += stale_docs.eq(stale_docs - 1)
                    m.next = "IDLE"
            with m.State("VERDICT"):  # two body bytes: generation, then loaded | rejected << 1
                m.d.comb += [write_en.eq(1), write_at.eq(wpos + READOUT_RECORD + blen)]
                m.d.comb += write_byte.eq(Mux(blen == 0, verdict_gen, byte_acc))
                m.d.sync += blen.eq(blen + 1)
                with m.If(blen == 1):
                    m.d.sync += sub.eq(0)
                    m.next = "HEADER"
            with m.State("BODY"):
                body_at = wpos + READOUT_RECORD + blen
                if sparse:
                    m.d.comb += [
                        write_at.eq(body_at),
                        write_byte.eq(Cat(eb.id, Const(0, 8 * size)).word_select(sub, 8)),
                    ]
                    with m.If(self.readout.valid):
                        m.d.comb += write_en.eq(1)
                        m.d.sync += [blen.eq(blen + 1), sub.eq(sub + 1)]
                        with m.If(sub == size - 1):
                            m.d.comb += self.readout.ready.eq(1)
                            m.d.sync += sub.eq(0)
                            with m.If(eb.last):
                                m.next = "HEADER"
                else:
                    m.d.comb += self.readout.ready.eq(1)
                    acc = Signal(8)
                    m.d.comb += acc.eq(byte_acc | (eb.bit << nbits_acc[:3]))
                    with m.If(self.readout.valid):
                        with m.If((nbits_acc == 7) | eb.last):
                            m.d.comb += [write_en.eq(1), write_at.eq(body_at), write_byte.eq(acc)]
                            m.d.sync += [blen.eq(blen + 1), byte_acc.eq(0), nbits_acc.eq(0)]
                            with m.If(eb.last):
                                m.d.sync += sub.eq(0)
                                m.next = "HEADER"
                        with m.Else():
                            m.d.sync += [byte_acc.eq(acc), nbits_acc.eq(nbits_acc + 1)]
            with m.State("HEADER"):  # the header, now that the length is known
                value = Signal(READOUT_RECORD * 8)
                m.d.comb += [value.eq(rec.as_value()), value[64:96].eq(blen)]
                m.d.comb += [
                    write_en.eq(~discard),
                    write_at.eq(wpos + sub),
                    write_byte.eq(value.word_select(sub[:4], 8)),
                ]
                with m.If(~switched):
                    m.d.sync += sub.eq(sub + 1)
                with m.If((sub == READOUT_RECORD - 1) & ~switched):
                    m.d.sync += sub.eq(0)
                    with m.If(discard):
                        with m.If(rec.kind != ReadoutRecordKind.CONFIG.value):
                            m.d.comb += read_done.eq(1)
                            m.d.sync += stale_docs.eq(stale_docs - 1)
                    with m.Else():
                        m.d.sync += written.eq(wpos + READOUT_RECORD + blen)
                        with m.If(rec.kind != ReadoutRecordKind.CONFIG.value):
                            m.d.comb += read_done.eq(1)
                            m.d.sync += doc_no.eq(doc_no + 1)
                    m.next = "IDLE"

        with m.If(cfg_done & ~verdict_done):
            m.d.sync += cfg_in_engine.eq(cfg_in_engine + 1)
        with m.Elif(verdict_done & ~cfg_done):
            m.d.sync += cfg_in_engine.eq(cfg_in_engine - 1)
        with m.If(doc_done & ~read_done):
            m.d.sync += in_engine.eq(in_engine + 1)
        with m.Elif(read_done & ~doc_done):
            m.d.sync += in_engine.eq(in_engine - 1)

        # --- transmit -----------------------------------------------------------------------
        m.submodules.tx_crc = tx_crc = crc.Processor(crc.catalog.CRC32_ETHERNET(8))
        tx_hdr = Signal(DATAGRAM_HEADER * 8)
        th = DatagramHeader(tx_hdr)
        tx_i = Signal(16)  # byte of the datagram being sent
        tx_len = Signal(16)  # its payload bytes
        # registered with ``tx_i``, so that no compare of it is in the fetch's paths: its last
        # byte, whether ``tx_i`` is in the payload, the payload bytes still to fetch
        tx_end = Signal(16)
        tx_in_payload = Signal()
        to_fetch = Signal(16)
        tx_status = Signal(data.Layout.cast(UdpStatusLayout).size)
        tx_kind_status = Signal()
        crc_bytes = Signal(32)
        out_pv = Signal()  # out_r.data holds the payload byte at ``out_at - 1``
        out_at = Signal(32)
        # what to send, registered (two stages): the readout bytes written and not sent, the
        # next datagram's length, whether the credit grew. They lag ``tx_next``: a datagram
        # starts only two cycles after ACT (which may move it forward); the transmitter's own
        # moves are followed by a whole datagram, the timer's go back (at worst less is sent)
        unsent = Signal(32)
        has_unsent = Signal()
        send_len = Signal(16)
        grew = Signal()
        acted = Signal(2)
        m.d.sync += [
            unsent.eq(written - tx_next),
            has_unsent.eq(unsent != 0),
            send_len.eq(Mux(unsent > MAX_PAYLOAD, MAX_PAYLOAD, unsent[:16])),
            grew.eq((limit - advertised) >= min(MAX_PAYLOAD, N // 2)),
            acted.eq(Cat(rx_acting, acted[0])),
        ]
        status = Signal(UdpStatusLayout)
        cs = self.config_status
        m.d.comb += [
            status.version.eq(UDP_VERSION),
            status.mode.eq(self.mode),
            status.readout.eq(int(sparse)),
            status.width.eq(self.width),
            status.identity.eq(self.identity),
            status.generation.eq(cs.generation),
            status.loaded.eq(cs.loaded if self.mode == 1 else 1),
            status.rejected.eq(cs.rejected),
            status.pending.eq(cs.pending),
            status.documents.eq(documents),
            status.input_buffer.eq(N),
            status.readout_buffer.eq(R),
            status.mac.eq(self.mac),
            status.ip.eq(self.ip),
            status.port.eq(self.port),
            status.max_payload.eq(MAX_PAYLOAD),
            status.bad.eq(bad),
            status.stale.eq(stale),
            status.duplicates.eq(dups),
            status.out_of_order.eq(ooo),
        ]
        # the datagram's bytes go out through a register (``pre`` -> ``tx``), and the CRC takes
        # each a cycle later from a register: the readout buffer's block RAM output (slow:
        # 4.3 ns clock to out on the ECP5) reaches only flip-flops within a cycle, through one
        # 2-way choice (``from_ram``: it, or ``other_byte``, which the states below set)
        tb = self.tx.payload
        pre = Signal(TxBeat)
        pre_valid, pre_ready = Signal(), Signal()
        pre_taken = Signal()
        from_ram = Signal()
        other_byte = Signal(8)
        m.d.comb += [
            pre.data.eq(Mux(from_ram, out_r.data, other_byte)),
            pre.ip.eq(host_ip),
            pre.port.eq(host_port),
            pre.length.eq(DATAGRAM_HEADER + DATAGRAM_CRC + tx_len),
            pre_ready.eq(~self.tx.valid | self.tx.ready),
            pre_taken.eq(pre_valid & pre_ready),
            out_r.addr.eq(out_at[:rbits]),
        ]
        with m.If(pre_taken):
            m.d.sync += [self.tx.valid.eq(1), tb.eq(pre)]
        with m.Elif(self.tx.ready):
            m.d.sync += self.tx.valid.eq(0)
        crc_valid, crc_start = Signal(), Signal()
        crc_byte = Signal(8)
        m.d.sync += [crc_byte.eq(pre.data), crc_start.eq(tx_i == 0)]
        m.d.comb += [
            tx_crc.data.eq(crc_byte),
            tx_crc.valid.eq(crc_valid),
            tx_crc.start.eq(crc_start & crc_valid),
        ]

        def start(kind, length, seq, nak=0):
            m.d.sync += [
                th.version.eq(UDP_VERSION),
                th.kind.eq(kind.value),
                th.flags.nak.eq(nak),
                th.session.eq(session),
                th.seq.eq(seq),
                th.ack.eq(rx_next),
                th.limit.eq(limit),
                th.length.eq(length),
                tx_len.eq(length),
                tx_i.eq(0),
                tx_end.eq(DATAGRAM_HEADER + length - 1),
                tx_in_payload.eq(0),
                to_fetch.eq(length),
                advertised.eq(limit),
                ack_due.eq(0),
                out_at.eq(seq),
                out_pv.eq(0),
            ]

        with m.FSM(name="udp_tx"):
            with m.State("IDLE"):
                m.d.comb += tx_idle.eq(1)
                with m.If(~opened | rx_acting | acted.any()):
                    pass
                with m.Elif(status_due):
                    start(DatagramKind.STATUS, data.Layout.cast(UdpStatusLayout).size // 8, 0)
                    m.d.sync += [status_due.eq(0), tx_status.eq(status.as_value()),
                                 tx_kind_status.eq(1)]  # fmt: skip
                    m.next = "SEND"
                with m.Elif(nak_due):
                    start(DatagramKind.READOUT, 0, tx_next, nak=1)
                    m.d.sync += [nak_due.eq(0), tx_kind_status.eq(0)]
                    m.next = "SEND"
                with m.Elif(has_unsent):
                    length = send_len
                    start(DatagramKind.READOUT, length, tx_next)
                    m.d.sync += [tx_next.eq(tx_next + length), tx_kind_status.eq(0)]
                    m.next = "SEND"
                with m.Elif(ack_due | grew):
                    start(DatagramKind.READOUT, 0, tx_next)
                    m.d.sync += tx_kind_status.eq(0)
                    m.next = "SEND"
            with m.State("SEND"):
                at = tx_i - DATAGRAM_HEADER
                status_byte = tx_status.word_select(at[:6], 8)
                in_payload = tx_in_payload  # tx_i >= DATAGRAM_HEADER
                ready_byte = ~in_payload | tx_kind_status | out_pv
                # the readout buffer's next byte is fetched ahead (one cycle of latency)
                fetch_out = ~tx_kind_status & (~out_pv | (pre_taken & in_payload)) & (to_fetch != 0)
                m.d.comb += out_r.en.eq(fetch_out)
                with m.If(fetch_out):
                    m.d.sync += [out_at.eq(out_at + 1), out_pv.eq(1), to_fetch.eq(to_fetch - 1)]
                with m.Elif(pre_taken & in_payload):
                    m.d.sync += out_pv.eq(0)
                m.d.comb += [
                    pre_valid.eq(ready_byte),
                    from_ram.eq(in_payload & ~tx_kind_status),
                    other_byte.eq(Mux(in_payload, status_byte, tx_hdr.word_select(tx_i[:5], 8))),
                    pre.last.eq(0),
                ]
                m.d.sync += crc_valid.eq(pre_taken)
                with m.If(pre_taken):
                    m.d.sync += [tx_i.eq(tx_i + 1), tx_in_payload.eq(tx_i >= DATAGRAM_HEADER - 1)]
                    with m.If(tx_i == tx_end):
                        m.d.sync += [tx_i.eq(0), tx_in_payload.eq(0)]
                        m.next = "CRC_WAIT"
            with m.State("CRC_WAIT"):  # the CRC takes the last byte
                m.d.sync += crc_valid.eq(0)
                m.next = "CRC_LATCH"
            with m.State("CRC_LATCH"):
                m.d.sync += crc_bytes.eq(tx_crc.crc)
                m.next = "CRC"
            with m.State("CRC"):
                m.d.comb += [
                    pre_valid.eq(1),
                    other_byte.eq(crc_bytes.word_select(tx_i[:2], 8)),
                    pre.last.eq(tx_i == DATAGRAM_CRC - 1),
                ]
                with m.If(pre_ready):
                    m.d.sync += tx_i.eq(tx_i + 1)
                    with m.If(tx_i == DATAGRAM_CRC - 1):
                        m.next = "IDLE"

        # --- a good DATA datagram's acknowledgement and NAK; the timer; a session switch -------
        # compared a cycle ahead, in CHECK (tx_acked changes only in ACT; written only grows;
        # a tx_next the transmitter moved meanwhile at worst sends bytes again): no path from
        # the offsets through the compares to tx_next in one cycle
        ack_new = Signal()  # the acknowledgement moves tx_acked forward, within what was written
        ack_beyond = Signal()  # ... past tx_next (after a go-back)
        ack_same = Signal()  # it is tx_acked
        with m.If(rx_checking):
            m.d.sync += [
                ack_new.eq((ack_ahead != 0) & (ack_ahead <= written - tx_acked)),
                ack_beyond.eq(ack_ahead > tx_next - tx_acked),
                ack_same.eq(ack_ahead == 0),
            ]
        ack_ok = acting_data & ack_new
        new_acked = Mux(ack_ok, h.ack, tx_acked)
        with m.If(ack_ok):
            m.d.sync += [tx_acked.eq(h.ack), progress.eq(0)]
            with m.If(ack_beyond):
                m.d.sync += tx_next.eq(h.ack)
        with m.If(acting_data & h.flags.nak & (ack_new | ack_same)):
            m.d.sync += tx_next.eq(new_acked)  # go back: the host lost a datagram after ``ack``
        with m.If(tx_acked == tx_next):
            m.d.sync += progress.eq(0)
        with m.Elif(~ack_ok):
            with m.If(progress == self.timeout):
                with m.If(tx_idle & ~rx_acting):
                    m.d.sync += [tx_next.eq(tx_acked), progress.eq(0)]
            with m.Else():
                m.d.sync += progress.eq(progress + 1)

        # what a switch leaves in the engine for the old session, taken a cycle later (the
        # readout records FSM waits then): the counts (they have taken the switch's cycle's last
        # byte and completed record by then) and the record the switch cuts (in BODY ``left``
        # is >= 1; its end goes to the engine later)
        cut_doc, cut_cfg = Signal(), Signal()
        m.d.sync += [
            switched.eq(switch),
            cut_doc.eq(started & is_doc & records_fsm_body),
            cut_cfg.eq(started & is_cfg & cfg_ok & records_fsm_body),
        ]
        with m.If(switched):
            m.d.sync += [
                stale_docs.eq(in_engine + cut_doc),
                stale_cfgs.eq(cfg_in_engine + cut_cfg),
            ]
        with m.If(switch):
            m.d.sync += [
                rd.eq(0),
                commit.eq(0),
                pv.eq(0),
                rec_i.eq(0),
                rx_next.eq(0),
                tx_acked.eq(0),
                tx_next.eq(0),
                written.eq(0),
                doc_no.eq(0),
                documents.eq(0),
                nak_sent.eq(0),
                nak_due.eq(0),
                ack_due.eq(0),
                progress.eq(0),
                limit.eq(N),
                free.eq(N),
                free_at.eq(0),
                # the record in progress, or the one IDLE starts this very cycle, is the old
                # session's (the next record IDLE starts clears it)
                discard.eq(1),
            ]
        return m
