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

Each concern is one method of :class:`UdpEndpoint` (``_receive``, ``_input_records``,
``_readout_records``, ``_transmit``, ``_acknowledgement_and_timer``, ``_session_switch``, and
two small ones), its docstring saying what it drives and reads; the signals they share are made
once, in :class:`_Shared`.
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


def readout_buffer_size(
    kind: ReadoutKind, width: int, least: int = 16384, in_flight: int = 8192
) -> int:
    """The readout buffer a board gets: a power of two of at least ``least`` bytes that holds
    two whole readout records (the endpoint's room check is a cycle old, see
    :class:`UdpEndpoint`) and ``in_flight`` bytes of readout sent and not yet acknowledged
    beside them (with less, a record waits for the host's ack of the one before)."""
    return max(least, 1 << (2 * max_record(kind, width) + in_flight - 1).bit_length())


def _pow2(n: int) -> bool:
    return n > 0 and n & (n - 1) == 0


class _Shared:
    """The signals that :class:`UdpEndpoint`'s concerns share, made once here (each concern's own
    signals are made in its method), and the two buffers. Registers, unless marked a strobe (a
    combinational 1 for one cycle). Which concern drives which is in the methods' docstrings."""

    def __init__(self, m: Module, ep: "UdpEndpoint"):
        N, R = ep.input_buffer, ep.readout_buffer
        self.nbits, self.rbits = N.bit_length() - 1, R.bit_length() - 1

        # --- the session ----------------------------------------------------------------------
        self.session = Signal(32)
        self.opened = Signal()
        self.host_ip = Signal(32)
        self.host_port = Signal(16)
        self.switch = Signal()  # strobe (a register): a HELLO of a new session acts this cycle
        # ``switch``, a cycle late: the stale counts are taken now, from registers, and the
        # readout records FSM (which reads and counts them down) waits this one cycle
        self.switched = Signal()

        # --- the input stream -----------------------------------------------------------------
        self.rx_next = Signal(32)  # the next input stream offset expected
        self.commit = Signal(self.nbits + 1)  # input buffer: committed end, parser's read pointer
        self.rd = Signal(self.nbits + 1)
        # the room, registered with the offset of the same cycle: the credit ``limit`` (what the
        # host may send up to) follows two cycles late, never more than the room (it only grows
        # in a session: ``commit`` and ``rx_next`` grow together); the room a datagram is
        # checked against is a cycle old, never more than now (it only shrinks in ACT)
        self.free = Signal(self.nbits + 1)
        self.free_at = Signal(32)  # ``rx_next`` when ``free`` was taken
        self.limit = Signal(32)
        self.bad, self.stale, self.dups, self.ooo = (
            Signal(16, name=n) for n in ("bad", "stale", "dups", "ooo")
        )
        self.documents = Signal(32)  # documents of this session into the engine
        # what the transmitter owes (these four are ``$signal`` in the Verilog, as they were
        # before the split into concerns: the tracer names no signal of a tuple assignment)
        self.status_due, self.ack_due, self.nak_due, self.nak_sent = (
            Signal(), Signal(), Signal(), Signal()
        )  # fmt: skip

        # --- the readout stream ---------------------------------------------------------------
        self.tx_acked = Signal(32)
        self.tx_next = Signal(32)
        self.written = Signal(32)  # readout stream: committed records end
        self.progress = Signal(range(ep.timeout + 1))

        # neither buffer is read where it is written in the same cycle (the input buffer is
        # read below ``commit`` and written from it on, within the room; the readout buffer is
        # read below ``written`` and written from it on, within what the host acknowledged),
        # so Yosys need not keep a read's old data through a write to the same address: without
        # ``no_rw_check`` it puts a comparison of the addresses and a choice after the block
        # RAM's read data (the slow 5.8 ns output of the -6 ECP5's DP16KD), before any register
        rw = {"no_rw_check": 1}
        m.submodules.inbuf = inbuf = Memory(shape=8, depth=N, init=[], attrs=rw)
        self.in_w = inbuf.write_port()
        self.in_r = inbuf.read_port()
        m.submodules.outbuf = outbuf = Memory(shape=8, depth=R, init=[], attrs=rw)
        self.out_w = outbuf.write_port()
        self.out_r = outbuf.read_port()

        # --- the datagram received ------------------------------------------------------------
        self.hdr = Signal(DATAGRAM_HEADER * 8)  # its header
        self.h = DatagramHeader(self.hdr)
        self.rx_checking = Signal()  # strobe: the receive FSM is in CHECK
        self.rx_acting = Signal()  # strobe (a register): ... in ACT
        # strobe (a register): it is a good DATA datagram of the session, acting (its ``ack``
        # the host's acknowledgement of the readout stream); registers, right in CHECK and ACT:
        # that ``ack`` less ``tx_acked``, and ``written`` and ``tx_next`` less ``tx_acked`` (a
        # cycle old: ``written`` only grows; a ``tx_next`` the transmitter moved meanwhile at
        # worst sends bytes again)
        self.acting_data = Signal()
        self.ack_ahead = Signal(32)
        self.written_ahead = Signal(32)
        self.sent_ahead = Signal(32)
        self.tx_idle = Signal()  # strobe: the transmit FSM is in IDLE

        # --- the input records and the engine -------------------------------------------------
        # the input buffer's bytes are read through two stages, so that its block RAM's read
        # data (slow: 5.8 ns clock to out on the -6 ECP5) reaches a flip-flop only: ``fetched``,
        # ``in_r.data`` holds a byte read (the block RAM's output, which holds while not read);
        # ``pv``, ``in_byte`` holds the byte at hand (the next one the records FSM takes)
        self.fetched = Signal()
        self.pv = Signal()
        self.in_byte = Signal(8)
        self.rec_i = Signal(range(INPUT_RECORD + 1))  # the record header's bytes so far
        self.is_doc = Signal()  # the record's kind, registered with its length
        self.is_cfg = Signal()
        self.started = Signal()  # a byte of the record's body was taken
        self.records_fsm_body = Signal()  # strobe: the records FSM is in BODY
        # configuration streams go to the engine (programmable mode)
        self.cfg_ok = Const(int(ep.mode == 1), 1)
        self.in_engine = Signal(16)  # documents the engine took and whose readout is not written
        # strobe: a document's last byte went to the engine (kept a wire of its own, so that
        # Yosys does not fold it into the input stream's logic: the 8,000-query ECPIX-5 placed
        # that shared LUT by the engine's input register, 60 columns from the counts)
        self.doc_done = Signal(attrs={"keep": 1})
        # ``doc_done`` a cycle late (a register): the count ``in_engine`` takes it then, so that
        # the input's handshake does not reach the count's adder in a cycle
        self.doc_done_late = Signal()
        self.read_done = Signal()  # strobe: a readout record was completed (written or dropped)
        self.stale_docs = Signal(16)  # readouts still to come of an earlier session's documents
        self.some_stale_docs = Signal()  # ``stale_docs != 0``, registered with it
        # configuration streams the same way: their verdicts are readout records too
        self.cfg_in_engine = Signal(8)  # streams the engine took whose verdict is not read
        self.cfg_done = Signal(attrs={"keep": 1})  # ... a stream's (kept, as ``doc_done``)
        self.cfg_done_late = Signal()  # ``cfg_done`` a cycle late, as ``doc_done_late``
        self.verdict_done = Signal()  # strobe: a verdict was read (written or dropped)
        self.stale_cfgs = Signal(8)  # verdicts still to come of streams of an earlier session
        self.some_stale_cfgs = Signal()  # ``stale_cfgs != 0``, registered with it

        # --- the readout records --------------------------------------------------------------
        self.doc_no = Signal(32)  # the next readout record's document number
        self.discard = Signal()  # the record in progress is an earlier session's


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

    def elaborate(self, platform):
        """The concerns, one method each, over the signals they share (:class:`_Shared`). The
        order of the calls is the order of the statements, and so their priority: where two
        concerns assign a register in the same cycle, the later one's assignment wins (the
        acknowledgement's moves of ``tx_next`` over the transmitter's, a session switch's
        resets over everything)."""
        m = Module()
        s = self.shared = _Shared(m, self)  # kept: tests check invariants over its registers
        self._receive(m, s)
        self._input_records(m, s)
        self._readout_records(m, s)
        self._engine_counts(m, s)
        self._transmit(m, s)
        self._acknowledgement_and_timer(m, s)
        self._session_switch(m, s)
        return m

    def _receive(self, m, s):
        """``rx`` -> the input buffer, and what a good datagram does.

        Drives ``rx.ready``, the input buffer's write port, the credit (``free``, ``free_at``,
        ``limit``), the received header ``h`` and the strobes ``rx_checking``, ``rx_acting``,
        ``acting_data`` (with ``ack_ahead``, ``written_ahead``, ``sent_ahead``); in ACT: the
        session (``session``, ``opened``,
        ``host_ip``, ``host_port``, the ``switch`` strobe), ``status_due``, ``ack_due``,
        ``nak_due``, ``nak_sent``, ``commit``, ``rx_next`` and the counters ``bad``, ``stale``,
        ``dups``, ``ooo``. Reads ``commit`` and ``rd`` (the room), ``tx_acked``, ``written``
        and ``tx_next``."""
        N = self.input_buffer
        m.d.sync += [s.free.eq(N - (s.commit - s.rd)), s.free_at.eq(s.rx_next)]
        m.d.sync += s.limit.eq(s.free_at + s.free)
        h = s.h
        # the datagram is of the open session: registered while it comes (its session is in
        # by its eighth byte; ``session`` and ``opened`` change in ACT only)
        current = Signal()
        m.d.sync += current.eq(s.opened & (h.session == s.session))
        # the ``switch`` strobe is a register: a good HELLO of a new session, decided in CHECK,
        # so that its many loads (the resets of a session switch) follow a flip-flop
        m.d.sync += [s.switch.eq(0), s.rx_acting.eq(0), s.acting_data.eq(0)]
        # registered: read in CHECK only, a cycle after the header's last byte at the earliest
        # (``h.ack`` is in by then, ``tx_acked`` changes in ACT only)
        m.d.sync += [
            s.ack_ahead.eq(h.ack - s.tx_acked),
            s.written_ahead.eq(s.written - s.tx_acked),
            s.sent_ahead.eq(s.tx_next - s.tx_acked),
        ]

        m.submodules.rx_crc = rx_crc = crc.Processor(crc.catalog.CRC32_ETHERNET(8))
        beat = self.rx.payload
        index = Signal(16)  # bytes of this datagram so far
        take = Signal()  # this datagram's payload goes into the input buffer
        skip = Signal(16)  # ... after this many payload bytes (the bytes before were had)
        to_take = Signal(16)  # ... this many bytes
        # ``skip != 0`` and ``to_take != 0``, registered with them (the write enable of the
        # input buffer's block RAM is then two LUTs from flip-flops)
        skipping, taking = Signal(), Signal()
        w_at = Signal(s.nbits)  # ... the next of them here
        # the datagram's offset past ``rx_next`` and its bytes beyond it, registered while the
        # header comes (its seq and length are in by its last byte; rx_next changes in ACT only)
        off = Signal(32)
        need = Signal(32)
        m.d.sync += [off.eq(s.rx_next - h.seq), need.eq(h.length - off)]
        # the payload goes into the input buffer: registered from ``need`` a cycle old, so in
        # by DECIDE (the header's ``length``, its last field, is in two cycles before DECIDE at
        # the earliest, ``off`` and ``need`` a cycle later); the room it is checked against is
        # then two cycles old, still never more than now (it only shrinks in ACT)
        takes = Signal()
        m.d.sync += takes.eq(
            (h.kind == DatagramKind.DATA.value) & current & (off < h.length) & (need <= s.free)
        )
        rx_error = Signal()
        src_ip, src_port = Signal(32), Signal(16)
        # the datagram's length is right (its last byte is where its header's ``length``
        # says, decided as that byte comes: ``index`` is at least ``last_at`` - 1 before the
        # header is in) and its version; then in CHECK, for ACT: its kind (one-hot), and
        # whether it has a payload, is after ``rx_next`` (``late``) or was had (``had``)
        last_at = Signal(17)  # (no wrap: a length past 65,535 - 27 never matches)
        length_ok, version_ok = Signal(), Signal()
        is_hello, is_status, is_data = Signal(), Signal(), Signal()
        has_payload, late, had = Signal(), Signal(), Signal()
        m.d.sync += [
            last_at.eq(DATAGRAM_HEADER + DATAGRAM_CRC - 1 + h.length),
            version_ok.eq(h.version == UDP_VERSION),
        ]
        m.d.comb += [rx_crc.data.eq(beat.data), rx_crc.start.eq(index == 0)]

        with m.FSM(name="udp_rx"):
            with m.State("HEADER"):
                m.d.comb += self.rx.ready.eq(1)
                with m.If(self.rx.valid):
                    m.d.comb += rx_crc.valid.eq(1)
                    with m.If(index == 0):
                        m.d.sync += [src_ip.eq(beat.ip), src_port.eq(beat.port), rx_error.eq(0)]
                    with m.If(index < DATAGRAM_HEADER):
                        m.d.sync += s.hdr.word_select(index[:5], 8).eq(beat.data)
                    m.d.sync += [index.eq(index + 1), rx_error.eq(rx_error | beat.error)]
                    with m.If(beat.last):
                        m.d.sync += length_ok.eq(index == last_at)
                        m.next = "CHECK"
                    with m.Elif(index == DATAGRAM_HEADER - 1):
                        m.next = "DECIDE"
            with m.State("DECIDE"):
                m.d.sync += [
                    take.eq(takes),
                    skip.eq(off[:16]),
                    skipping.eq(off[:16] != 0),
                    to_take.eq(Mux(takes, need[:16], 0)),
                    taking.eq(takes),  # (``off < h.length``: ``need`` >= 1)
                    w_at.eq(s.commit[: s.nbits]),
                ]
                m.next = "PAYLOAD"
            with m.State("PAYLOAD"):
                m.d.comb += self.rx.ready.eq(1)
                with m.If(self.rx.valid):
                    m.d.comb += rx_crc.valid.eq(1)
                    with m.If(skipping):
                        m.d.sync += [skip.eq(skip - 1), skipping.eq(skip != 1)]
                    with m.Elif(taking):
                        in_w = s.in_w
                        m.d.comb += [in_w.en.eq(1), in_w.addr.eq(w_at), in_w.data.eq(beat.data)]
                        m.d.sync += [
                            w_at.eq(w_at + 1),
                            to_take.eq(to_take - 1),
                            taking.eq(to_take != 1),
                        ]
                    m.d.sync += [index.eq(index + 1), rx_error.eq(rx_error | beat.error)]
                    with m.If(beat.last):
                        m.d.sync += length_ok.eq(index == last_at)
                        m.next = "CHECK"
            with m.State("CHECK"):  # the CRC register has taken the last byte
                m.d.comb += s.rx_checking.eq(1)
                m.d.sync += index.eq(0)
                good = rx_crc.match_detected & ~rx_error & length_ok & version_ok
                m.d.sync += [
                    is_hello.eq(h.kind == DatagramKind.HELLO.value),
                    is_status.eq(h.kind == DatagramKind.STATUS.value),
                    is_data.eq(h.kind == DatagramKind.DATA.value),
                    has_payload.eq(h.length != 0),
                    late.eq(off[31]),
                    had.eq(off >= h.length),
                ]
                with m.If(~good):
                    m.d.sync += s.bad.eq(s.bad + 1)
                    m.next = "HEADER"
                with m.Else():
                    m.d.sync += [
                        s.rx_acting.eq(1),
                        s.acting_data.eq((h.kind == DatagramKind.DATA.value) & current),
                        s.switch.eq((h.kind == DatagramKind.HELLO.value) & ~current),
                    ]
                    m.next = "ACT"
            with m.State("ACT"):
                m.next = "HEADER"
                with m.If(is_hello):
                    m.d.sync += [
                        s.host_ip.eq(src_ip), s.host_port.eq(src_port), s.status_due.eq(1)
                    ]  # fmt: skip
                    with m.If(s.switch):
                        m.d.sync += [s.session.eq(h.session), s.opened.eq(1)]
                with m.Elif(is_status):
                    with m.If(current):
                        m.d.sync += s.status_due.eq(1)
                    with m.Else():
                        m.d.sync += s.stale.eq(s.stale + 1)
                with m.Elif(is_data):
                    with m.If(~current):
                        m.d.sync += s.stale.eq(s.stale + 1)
                    with m.Else():
                        m.d.sync += s.ack_due.eq(1)
                        with m.If(take):
                            accepted = need[:16]  # h.length - the bytes had
                            m.d.sync += [
                                s.commit.eq(s.commit + accepted),
                                s.rx_next.eq(s.rx_next + accepted),
                                s.nak_sent.eq(0),
                            ]
                        with m.Elif(has_payload):
                            with m.If(late):  # the datagram is after ``rx_next``
                                m.d.sync += s.ooo.eq(s.ooo + 1)
                                with m.If(~s.nak_sent):
                                    m.d.sync += [s.nak_due.eq(1), s.nak_sent.eq(1)]
                            with m.Elif(had):
                                m.d.sync += s.dups.eq(s.dups + 1)
                with m.Else():
                    m.d.sync += s.bad.eq(s.bad + 1)

    def _input_records(self, m, s):
        """The input buffer's records -> ``input``: bytes with ``last`` on each record's final
        byte and ``config`` for a configuration stream; a session switch cuts a record short
        with a last byte (a space, or a zero configuration byte).

        Drives ``input``, the input buffer's read port, ``rd``, ``fetched``, ``pv``,
        ``in_byte``, ``rec_i``, ``is_doc``, ``is_cfg``, ``started``, ``documents`` and the
        strobes ``doc_done``, ``cfg_done``, ``records_fsm_body``. Reads ``commit`` and
        ``switch``."""
        in_r = s.in_r
        taken = Signal()  # the parser takes ``in_byte`` this cycle
        load = Signal()  # ``in_byte`` takes the byte read
        fetch = Signal()
        # ``rd != commit``, registered: exact while ``commit`` stays, a cycle late when ACT
        # moves it (it only grows, by at most the room) and 0 after a switch, so that the
        # block RAM's read enable is two LUTs from flip-flops
        unread = Signal()
        m.d.sync += unread.eq(
            Mux(fetch, s.commit != (s.rd + 1)[: s.nbits + 1], s.commit != s.rd) & ~s.switch
        )
        m.d.comb += [
            load.eq(s.fetched & (~s.pv | taken)),
            fetch.eq(unread & (~s.fetched | ~s.pv | taken)),
            in_r.en.eq(fetch),
            in_r.addr.eq(s.rd[: s.nbits]),
        ]
        with m.If(fetch):
            m.d.sync += [s.rd.eq(s.rd + 1), s.fetched.eq(1)]
        with m.Elif(load):
            m.d.sync += s.fetched.eq(0)
        with m.If(load):
            m.d.sync += [s.in_byte.eq(in_r.data), s.pv.eq(1)]
        with m.Elif(taken):
            m.d.sync += s.pv.eq(0)
        left = Signal(32)
        left_last = Signal()  # ``left == 1``, registered: the body byte at hand is the last
        rec_hdr = Signal(INPUT_RECORD * 8)
        low_0, low_1, mid_0 = Signal(), Signal(), Signal()
        doc_counted = Signal()  # a document's last byte went to the engine, one of this session's
        cut_byte = Signal(8)

        def cut_on_switch(in_body):
            if in_body:  # (not through ``switch``: it decides what ``cut_doc`` takes)
                m.d.comb += s.records_fsm_body.eq(1)
            with m.If(s.switch):  # the buffer's bytes are the old session's
                if in_body:
                    with m.If(s.started & (s.is_doc | (s.is_cfg & s.cfg_ok))):  # (``left`` >= 1)
                        m.d.sync += cut_byte.eq(Mux(s.is_doc, ord(" "), 0))
                        m.next = "CUT"
                    with m.Else():
                        m.next = "RECORD"
                else:
                    m.next = "RECORD"

        with m.FSM(name="records"):
            with m.State("RECORD"):
                cut_on_switch(False)
                m.d.comb += taken.eq(s.pv)
                with m.If(s.pv):
                    m.d.sync += [
                        rec_hdr.word_select(s.rec_i[:3], 8).eq(s.in_byte),
                        s.rec_i.eq(s.rec_i + 1),
                    ]
                    # the length's low byte is 0 or 1, its middle bytes are 0: registered as
                    # they come, so that the last byte decides with an 8-bit compare
                    with m.Switch(s.rec_i):
                        with m.Case(1):
                            m.d.sync += [low_0.eq(s.in_byte == 0), low_1.eq(s.in_byte == 1)]
                        with m.Case(2):
                            m.d.sync += mid_0.eq(s.in_byte == 0)
                        with m.Case(3):
                            m.d.sync += mid_0.eq(mid_0 & (s.in_byte == 0))
                    with m.If(s.rec_i == INPUT_RECORD - 1):
                        length = Cat(rec_hdr[8:32], s.in_byte)
                        high_0 = mid_0 & (s.in_byte == 0)
                        m.d.sync += [
                            s.rec_i.eq(0),
                            s.is_doc.eq(rec_hdr[:8] == InputKind.DOCUMENT.value),
                            s.is_cfg.eq(rec_hdr[:8] == InputKind.CONFIG.value),
                            left.eq(length),
                            left_last.eq(low_1 & high_0),  # length == 1
                            s.started.eq(0),
                        ]
                        with m.If(~(low_0 & high_0)):  # length != 0
                            m.next = "BODY"
            with m.State("BODY"):
                forward = s.is_doc | (s.is_cfg & s.cfg_ok)
                m.d.comb += [
                    self.input.valid.eq(s.pv & forward),
                    self.input.payload.data.eq(s.in_byte),
                    self.input.payload.last.eq(left_last),
                    self.input.payload.config.eq(s.is_cfg),
                    taken.eq(s.pv & (self.input.ready | ~forward)),
                ]
                with m.If(taken):
                    m.d.sync += [left.eq(left - 1), left_last.eq(left == 2), s.started.eq(1)]
                    with m.If(left_last):
                        m.d.comb += [
                            s.doc_done.eq(s.is_doc),
                            doc_counted.eq(s.is_doc),
                            s.cfg_done.eq(s.is_cfg & s.cfg_ok),
                        ]
                        m.next = "RECORD"
                cut_on_switch(True)
            with m.State("CUT"):  # a session switch cut a record short: end it
                m.d.comb += [
                    self.input.valid.eq(1),
                    self.input.payload.data.eq(cut_byte),
                    self.input.payload.last.eq(1),
                    self.input.payload.config.eq(s.is_cfg),
                ]
                with m.If(self.input.ready):
                    m.d.comb += [s.doc_done.eq(s.is_doc), s.cfg_done.eq(s.is_cfg)]
                    m.next = "RECORD"
        with m.If(doc_counted):  # not a document a session switch cut short
            m.d.sync += s.documents.eq(s.documents + 1)

    def _readout_records(self, m, s):
        """``readout`` -> the readout buffer: each record's body first, its header after, then
        committed (``written``); the records of an earlier session's documents and streams are
        dropped.

        Drives ``readout.ready``, the readout buffer's write port, ``written``, ``doc_no``,
        ``discard``, ``stale_docs`` and ``stale_cfgs`` (counting down, with ``some_stale_docs``
        and ``some_stale_cfgs``) and the strobes
        ``read_done``, ``verdict_done``. Reads ``tx_acked`` (the room), ``documents`` and
        ``switched`` (the cycle after a switch, when the stale counts are taken, it waits)."""
        R = self.readout_buffer
        rb = self.readout.payload
        eb = rb.beat
        sparse = self.kind is ReadoutKind.SPARSE
        size = id_bytes(self.width)
        wpos = Signal(32)  # the record being written starts here
        blen = Signal(32)  # its body bytes so far
        rec = Signal(ReadoutRecord)
        byte_acc = Signal(8)
        verdict_gen = Signal(8)
        nbits_acc = Signal(4)
        sub = Signal(range(max(size, READOUT_RECORD) + 1))
        # room for a record: registered, with the margin of a second record (``written`` may
        # have grown by one record since); the difference fits rbits + 1 bits
        room = Signal()
        used = Signal(s.rbits + 1)
        m.d.comb += used.eq(s.written[: s.rbits + 1] - s.tx_acked[: s.rbits + 1])
        m.d.sync += room.eq(used <= R - 2 * max_record(self.kind, self.width))
        first = eb.header if sparse else eb.first
        write_at = Signal(32)
        write_byte = Signal(8)
        write_en = Signal()
        m.d.comb += [
            s.out_w.en.eq(write_en),
            s.out_w.addr.eq(write_at[: s.rbits]),
            s.out_w.data.eq(write_byte),
        ]
        # the header's byte at ``sub`` in HEADER, registered a cycle ahead (no 16-way choice
        # before the block RAM's write data): byte 0 as HEADER comes (``sub`` is 0 then; ``rec``
        # was set a cycle or more before), the next one (or the same, while ``switched`` holds
        # it) in HEADER, where ``blen`` is final
        value = Signal(READOUT_RECORD * 8)
        m.d.comb += [value.eq(rec.as_value()), value[64:96].eq(blen)]
        in_header = Signal()
        head_byte = Signal(8)
        head_next = Mux(in_header, Mux(s.switched, sub[:4], sub[:4] + 1), 0)
        m.d.sync += head_byte.eq(value.word_select(head_next[:4], 8))
        with m.FSM(name="readout_records"):
            with m.State("IDLE"):
                with m.If(s.switched):
                    pass
                with m.Elif(self.readout.valid & rb.verdict):
                    with m.If(s.some_stale_cfgs):  # an earlier session's stream: dropped
                        m.d.comb += [self.readout.ready.eq(1), s.verdict_done.eq(1)]
                        m.d.sync += [
                            s.stale_cfgs.eq(s.stale_cfgs - 1),
                            s.some_stale_cfgs.eq(s.stale_cfgs != 1),
                        ]
                    with m.Elif(room):
                        m.d.comb += [self.readout.ready.eq(1), s.verdict_done.eq(1)]
                        m.d.sync += [
                            rec.kind.eq(ReadoutRecordKind.CONFIG.value),
                            rec.errors.eq(0),
                            rec.doc.eq(s.documents),
                            rec.length.eq(2),
                            byte_acc.eq(Cat(rb.loaded, rb.rejected)),
                            verdict_gen.eq(rb.generation),
                            wpos.eq(s.written),
                            blen.eq(0),
                            s.discard.eq(0),
                        ]
                        m.next = "VERDICT"
                with m.Elif(self.readout.valid & first):
                    with m.If(s.some_stale_docs):
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
                            rec.doc.eq(s.doc_no),
                            wpos.eq(s.written),
                            blen.eq(0),
                            byte_acc.eq(0),
                            nbits_acc.eq(0),
                            sub.eq(0),
                            s.discard.eq(0),
                        ]
                        if sparse:  # the header beat carries no id
                            m.d.comb += self.readout.ready.eq(1)
                            with m.If(eb.last):
                                m.next = "NO_IDS"
                            with m.Else():
                                m.next = "BODY"
                        else:
                            m.next = "BODY"
                with m.Elif(self.readout.valid):
                    m.d.comb += self.readout.ready.eq(1)  # not a document's start: framing lost
            with m.State("DROP"):
                m.d.comb += self.readout.ready.eq(~s.switched)
                with m.If(self.readout.valid & eb.last & ~s.switched):
                    m.d.comb += s.read_done.eq(1)
                    m.d.sync += [
                        s.stale_docs.eq(s.stale_docs - 1),
                        s.some_stale_docs.eq(s.stale_docs != 1),
                    ]
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
            with m.State("NO_IDS"):  # (a cycle for ``head_byte`` to take the new ``rec``)
                m.next = "HEADER"
            with m.State("HEADER"):  # the header, now that the length is known
                m.d.comb += [
                    in_header.eq(1),
                    write_en.eq(~s.discard),
                    write_at.eq(wpos + sub),
                    write_byte.eq(head_byte),
                ]
                with m.If(~s.switched):
                    m.d.sync += sub.eq(sub + 1)
                with m.If((sub == READOUT_RECORD - 1) & ~s.switched):
                    m.d.sync += sub.eq(0)
                    with m.If(s.discard):
                        with m.If(rec.kind != ReadoutRecordKind.CONFIG.value):
                            m.d.comb += s.read_done.eq(1)
                            m.d.sync += [
                                s.stale_docs.eq(s.stale_docs - 1),
                                s.some_stale_docs.eq(s.stale_docs != 1),
                            ]
                    with m.Else():
                        m.d.sync += s.written.eq(wpos + READOUT_RECORD + blen)
                        with m.If(rec.kind != ReadoutRecordKind.CONFIG.value):
                            m.d.comb += s.read_done.eq(1)
                            m.d.sync += s.doc_no.eq(s.doc_no + 1)
                    m.next = "IDLE"

    def _engine_counts(self, m, s):
        """The documents and configuration streams in the engine whose readout record or
        verdict is still to come: drives ``in_engine`` and ``cfg_in_engine`` from the strobes
        ``doc_done``, ``cfg_done`` (a cycle late: ``doc_done_late``, ``cfg_done_late``; a
        readout comes many cycles after its document's end), ``read_done``, ``verdict_done``."""
        m.d.sync += [s.doc_done_late.eq(s.doc_done), s.cfg_done_late.eq(s.cfg_done)]
        with m.If(s.cfg_done_late & ~s.verdict_done):
            m.d.sync += s.cfg_in_engine.eq(s.cfg_in_engine + 1)
        with m.Elif(s.verdict_done & ~s.cfg_done_late):
            m.d.sync += s.cfg_in_engine.eq(s.cfg_in_engine - 1)
        with m.If(s.doc_done_late & ~s.read_done):
            m.d.sync += s.in_engine.eq(s.in_engine + 1)
        with m.Elif(s.read_done & ~s.doc_done_late):
            m.d.sync += s.in_engine.eq(s.in_engine - 1)

    def _status(self, m, s):
        """The STATUS datagram's payload, combinational: what the endpoint reports (its
        parameters, ``config_status``, ``documents`` and the counters ``bad``, ``stale``,
        ``dups``, ``ooo``)."""
        status = Signal(UdpStatusLayout)
        cs = self.config_status
        m.d.comb += [
            status.version.eq(UDP_VERSION),
            status.mode.eq(self.mode),
            status.readout.eq(int(self.kind is ReadoutKind.SPARSE)),
            status.width.eq(self.width),
            status.identity.eq(self.identity),
            status.generation.eq(cs.generation),
            status.loaded.eq(cs.loaded if self.mode == 1 else 1),
            status.rejected.eq(cs.rejected),
            status.pending.eq(cs.pending),
            status.documents.eq(s.documents),
            status.input_buffer.eq(self.input_buffer),
            status.readout_buffer.eq(self.readout_buffer),
            status.mac.eq(self.mac),
            status.ip.eq(self.ip),
            status.port.eq(self.port),
            status.max_payload.eq(MAX_PAYLOAD),
            status.bad.eq(s.bad),
            status.stale.eq(s.stale),
            status.duplicates.eq(s.dups),
            status.out_of_order.eq(s.ooo),
        ]
        return status

    def _transmit(self, m, s):
        """``tx``: a status, a NAK, readout bytes not yet sent (at most :data:`MAX_PAYLOAD`), an
        ack or credit that is due, each datagram with its CRC, to ``host_ip``:``host_port``; a
        datagram starts only while the session is open and not in the three cycles after ACT.

        Drives ``tx``, the readout buffer's read port, ``tx_next`` (forward, by what it sends),
        ``status_due``, ``nak_due``, ``ack_due`` (cleared as it sends them) and the ``tx_idle``
        strobe. Reads ``written``, ``limit``, ``session``, ``opened``, ``rx_next``,
        ``rx_acting`` and what the status reports."""
        m.submodules.tx_crc = tx_crc = crc.Processor(crc.catalog.CRC32_ETHERNET(8))
        out_r = s.out_r
        advertised = Signal(32)  # the credit the last datagram sent carried
        tx_hdr = Signal(DATAGRAM_HEADER * 8)
        th = DatagramHeader(tx_hdr)
        tx_i = Signal(16)  # byte of the datagram being sent
        tx_len = Signal(16)  # its payload bytes
        # registered with ``tx_i``, so that no compare of it is in the fetch's paths: its last
        # byte, whether ``tx_i`` is in the payload, the payload bytes still to fetch and
        # whether there are any (``to_fetch != 0``; 0 for a status, which is not fetched)
        tx_end = Signal(16)
        tx_in_payload = Signal()
        to_fetch = Signal(16)
        fetching = Signal()
        tx_status = Signal(data.Layout.cast(UdpStatusLayout).size)
        tx_kind_status = Signal()
        crc_bytes = Signal(32)
        # the readout buffer's bytes are read through two stages, as the input buffer's (see
        # :class:`_Shared`): ``out_fetched``, ``out_r.data`` holds a byte read; ``out_pv``,
        # ``out_byte`` holds the payload byte at hand
        out_fetched = Signal()
        out_pv = Signal()
        out_byte = Signal(8)
        out_at = Signal(32)
        # what to send, registered (two stages): the readout bytes written and not sent, the
        # next datagram's length, whether the credit grew. They lag ``tx_next``: a datagram
        # starts only three cycles after ACT (which may move it forward); the transmitter's own
        # moves are followed by a whole datagram, the timer's go back (at worst less is sent)
        unsent = Signal(32)
        has_unsent = Signal()
        send_len = Signal(16)
        gain = Signal(32)  # the credit less what the last datagram sent carried
        grew = Signal()
        acted = Signal(3)
        quiet = Signal()
        # which datagram IDLE starts, chosen a cycle ahead from what is due (in this order: a
        # status, a NAK, readout bytes, an ack or credit), so that IDLE's start is a LUT or
        # two from flip-flops; the due flags it reads are cleared by a start (a datagram
        # follows, 28 cycles or more) or in ACT (``acted`` holds the start three cycles after
        # it, the last of them for ``has_unsent``'s and ``pick``'s lag behind ``tx_next``)
        pick_status, pick_nak, pick_unsent, pick_ack = Signal(), Signal(), Signal(), Signal()
        m.d.sync += [
            pick_status.eq(s.status_due),
            pick_nak.eq(~s.status_due & s.nak_due),
            pick_unsent.eq(~s.status_due & ~s.nak_due & has_unsent),
            pick_ack.eq(~s.status_due & ~s.nak_due & ~has_unsent & (s.ack_due | grew)),
        ]
        m.d.sync += [
            unsent.eq(s.written - s.tx_next),
            has_unsent.eq(unsent != 0),
            send_len.eq(Mux(unsent > MAX_PAYLOAD, MAX_PAYLOAD, unsent[:16])),
            gain.eq(s.limit - advertised),
            grew.eq(gain >= min(MAX_PAYLOAD, self.input_buffer // 2)),
            acted.eq(Cat(s.rx_acting, acted[:2])),
            # IDLE may start a datagram: the session is open, and no ACT now or in the three
            # cycles before, registered (from CHECK a cycle before: ACT may follow it), so that
            # the start's enables (hundreds of flip-flops) follow flip-flops and one LUT
            quiet.eq(s.opened & ~s.rx_checking & ~s.rx_acting & ~acted[:2].any()),
        ]
        status = self._status(m, s)
        # the datagram's bytes go out through a register (``pre`` -> ``tx``), and the CRC takes
        # each a cycle later from a register; ``pre`` is ``out_byte`` or ``other_byte``, which
        # the states below set (``from_ram``)
        tb = self.tx.payload
        pre = Signal(TxBeat)
        pre_valid, pre_ready = Signal(), Signal()
        pre_taken = Signal()
        from_ram = Signal()
        other_byte = Signal(8)
        m.d.comb += [
            pre.data.eq(Mux(from_ram, out_byte, other_byte)),
            pre.ip.eq(s.host_ip),
            pre.port.eq(s.host_port),
            pre.length.eq(DATAGRAM_HEADER + DATAGRAM_CRC + tx_len),
            pre_ready.eq(~self.tx.valid | self.tx.ready),
            pre_taken.eq(pre_valid & pre_ready),
            out_r.addr.eq(out_at[: s.rbits]),
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
                th.session.eq(s.session),
                th.seq.eq(seq),
                th.ack.eq(s.rx_next),
                th.limit.eq(s.limit),
                th.length.eq(length),
                tx_len.eq(length),
                tx_i.eq(0),
                tx_end.eq(DATAGRAM_HEADER + length - 1),
                tx_in_payload.eq(0),
                to_fetch.eq(length),
                fetching.eq(0 if kind is DatagramKind.STATUS else length != 0),
                advertised.eq(s.limit),
                s.ack_due.eq(0),
                out_at.eq(seq),
                out_fetched.eq(0),
                out_pv.eq(0),
            ]

        # the readout buffer's next bytes are fetched ahead (two cycles of latency), in
        # a readout datagram only (``fetching``, ``out_fetched`` and ``out_pv`` are 0
        # otherwise), ``out_byte`` taken when ``pre`` is (``out_pv``: it is ready), so
        # that the block RAM's enable is two LUTs from flip-flops and ``tx.ready``
        out_taken = tx_in_payload & out_pv & pre_ready
        out_load = out_fetched & (~out_pv | out_taken)
        fetch_out = fetching & (~out_fetched | ~out_pv | out_taken)
        m.d.comb += out_r.en.eq(fetch_out)
        with m.If(fetch_out):
            m.d.sync += [
                out_at.eq(out_at + 1),
                out_fetched.eq(1),
                to_fetch.eq(to_fetch - 1),
                fetching.eq(to_fetch != 1),
            ]
        with m.Elif(out_load):
            m.d.sync += out_fetched.eq(0)
        with m.If(out_load):
            m.d.sync += [out_byte.eq(out_r.data), out_pv.eq(1)]
        with m.Elif(out_taken):
            m.d.sync += out_pv.eq(0)

        hdr_taken, status_taken = Signal(), Signal()  # a byte of each went: shift (SEND)
        with m.If(hdr_taken):
            m.d.sync += [tx_hdr.eq(tx_hdr >> 8), hdr_taken.eq(0)]
        with m.If(status_taken):
            m.d.sync += [tx_status.eq(tx_status >> 8), status_taken.eq(0)]

        # IDLE decides (``go_*``: what ``pick_*`` said), START loads the datagram a cycle later,
        # so that the loads' enables (hundreds of flip-flops) are START's decode alone; IDLE
        # does not decide in CHECK either (ACT, which moves what START reads, may follow it)
        go_status, go_nak, go_unsent = Signal(), Signal(), Signal()
        with m.FSM(name="udp_tx"):
            with m.State("IDLE"):
                m.d.comb += s.tx_idle.eq(1)
                with m.If(
                    quiet & ~s.rx_checking & (pick_status | pick_nak | pick_unsent | pick_ack)
                ):
                    m.d.sync += [
                        go_status.eq(pick_status),
                        go_nak.eq(pick_nak),
                        go_unsent.eq(pick_unsent),
                    ]
                    m.next = "START"
            with m.State("START"):
                m.next = "SEND"
                with m.If(go_status):
                    start(DatagramKind.STATUS, data.Layout.cast(UdpStatusLayout).size // 8, 0)
                    m.d.sync += [s.status_due.eq(0), tx_status.eq(status.as_value()),
                                 tx_kind_status.eq(1)]  # fmt: skip
                with m.Elif(go_nak):
                    start(DatagramKind.READOUT, 0, s.tx_next, nak=1)
                    m.d.sync += [s.nak_due.eq(0), tx_kind_status.eq(0)]
                with m.Elif(go_unsent):
                    length = send_len
                    start(DatagramKind.READOUT, length, s.tx_next)
                    m.d.sync += [s.tx_next.eq(s.tx_next + length), tx_kind_status.eq(0)]
                with m.Else():  # an ack or credit
                    start(DatagramKind.READOUT, 0, s.tx_next)
                    m.d.sync += tx_kind_status.eq(0)
            with m.State("SEND"):
                in_payload = tx_in_payload  # tx_i >= DATAGRAM_HEADER
                ready_byte = ~in_payload | tx_kind_status | out_pv
                # the header's and the status's bytes go out of their registers' low ends,
                # which shift a byte a cycle after each is taken (``hdr_taken``,
                # ``status_taken``: the enables of their ~600 flip-flops come straight from a
                # flip-flop, not through ``tx.ready``); until then the byte is the second
                m.d.comb += [
                    pre_valid.eq(ready_byte),
                    from_ram.eq(in_payload & ~tx_kind_status),
                    other_byte.eq(
                        Mux(
                            in_payload,
                            Mux(status_taken, tx_status[8:16], tx_status[:8]),
                            Mux(hdr_taken, tx_hdr[8:16], tx_hdr[:8]),
                        )
                    ),
                    pre.last.eq(0),
                ]
                m.d.sync += [
                    crc_valid.eq(pre_taken),
                    hdr_taken.eq(pre_taken & ~in_payload),
                    status_taken.eq(pre_taken & in_payload),
                ]
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

    def _acknowledgement_and_timer(self, m, s):
        """The host's acknowledgement and NAK of the readout stream (in a good DATA datagram of
        the session), and the retransmission timer: after ``timeout`` cycles without an ack
        progressing, the readout bytes go again from the host's ``ack``.

        Drives ``tx_acked``, ``tx_next`` (forward past a go-back, or back) and ``progress``.
        Reads the strobes ``rx_checking``, ``acting_data`` (with ``ack_ahead`` and ``h``),
        ``rx_acting``, ``tx_idle``, and ``written``; the timer goes back only outside CHECK and
        ACT, so ``tx_acked <= tx_next <= written`` holds in every cycle."""
        # compared a cycle ahead, in CHECK (tx_acked changes only in ACT; written only grows;
        # a tx_next the transmitter moved meanwhile at worst sends bytes again): no path from
        # the offsets through the compares to tx_next in one cycle
        ack_new = Signal()  # the acknowledgement moves tx_acked forward, within what was written
        ack_beyond = Signal()  # ... past tx_next (after a go-back)
        ack_same = Signal()  # it is tx_acked
        # the timer went back in the cycle before: ``sent_ahead`` (a cycle old) does not show it
        went_back = Signal()
        h = s.h
        m.d.sync += went_back.eq(0)
        with m.If(s.rx_checking):
            m.d.sync += [
                ack_new.eq((s.ack_ahead != 0) & (s.ack_ahead <= s.written_ahead)),
                ack_beyond.eq((s.ack_ahead > s.sent_ahead) | went_back),
                ack_same.eq(s.ack_ahead == 0),
            ]
        ack_ok = s.acting_data & ack_new
        new_acked = Mux(ack_ok, h.ack, s.tx_acked)
        with m.If(ack_ok):
            m.d.sync += [s.tx_acked.eq(h.ack), s.progress.eq(0)]
            with m.If(ack_beyond):
                m.d.sync += s.tx_next.eq(h.ack)
        with m.If(s.acting_data & h.flags.nak & (ack_new | ack_same)):
            m.d.sync += s.tx_next.eq(new_acked)  # go back: the host lost a datagram after ``ack``
        # all the readout sent is acknowledged: a cycle old (registered, off the path from the
        # offsets' compare to ``progress``); at worst the timer starts a cycle late, or a go-back
        # moves ``tx_next`` to where it is
        all_acked = Signal()
        m.d.sync += all_acked.eq(s.tx_acked == s.tx_next)
        with m.If(all_acked):
            m.d.sync += s.progress.eq(0)
        with m.Elif(~ack_ok):
            with m.If(s.progress == self.timeout):
                # not in CHECK either: ACT moves tx_next by compares CHECK takes of the tx_next
                # before this go-back (an ack it takes would leave tx_next behind tx_acked); a
                # go-back the cycle before CHECK makes any new ack one beyond tx_next
                with m.If(s.tx_idle & ~s.rx_checking & ~s.rx_acting):
                    m.d.sync += [s.tx_next.eq(s.tx_acked), s.progress.eq(0), went_back.eq(1)]
            with m.Else():
                m.d.sync += s.progress.eq(s.progress + 1)

    def _session_switch(self, m, s):
        """A session switch (the ``switch`` strobe): the new session starts empty, over
        whatever else assigns the same registers this cycle (this method comes last). What the
        engine still holds of the old session becomes ``stale_docs`` and ``stale_cfgs`` a cycle
        later (``switched``: the readout records wait then), whose readouts and verdicts the
        readout records drop.

        Drives ``switched``, the resets of ``rd``, ``commit``, ``fetched``, ``pv``, ``rec_i``,
        ``rx_next``,
        ``tx_acked``, ``tx_next``, ``written``, ``doc_no``, ``documents``, ``nak_sent``,
        ``nak_due``, ``ack_due``, ``progress``, ``limit``, ``free``, ``free_at``, and
        ``discard``, and a cycle later ``stale_docs`` and ``stale_cfgs`` (and whether they are
        0). Reads the engine
        counts and the record the switch cuts (``started``, ``is_doc``, ``is_cfg``,
        ``records_fsm_body``)."""
        N = self.input_buffer
        # what a switch leaves in the engine for the old session, taken a cycle later (the
        # readout records FSM waits then): the counts (they have taken the switch's cycle's
        # completed record by then, and its last byte but in ``doc_done_late``, ``cfg_done_late``)
        # and the record the switch cuts (in BODY ``left`` is >= 1; its end goes to the engine
        # later)
        cut_doc, cut_cfg = Signal(), Signal()
        m.d.sync += [
            s.switched.eq(s.switch),
            cut_doc.eq(s.started & s.is_doc & s.records_fsm_body),
            cut_cfg.eq(s.started & s.is_cfg & s.cfg_ok & s.records_fsm_body),
        ]
        with m.If(s.switched):
            m.d.sync += [
                # (a document or stream that ended in the switch's cycle is counted a cycle
                # late: ``doc_done_late``, ``cfg_done_late`` now)
                s.stale_docs.eq(s.in_engine + cut_doc + s.doc_done_late),
                s.some_stale_docs.eq((s.in_engine != 0) | cut_doc | s.doc_done_late),
                s.stale_cfgs.eq(s.cfg_in_engine + cut_cfg + s.cfg_done_late),
                s.some_stale_cfgs.eq((s.cfg_in_engine != 0) | cut_cfg | s.cfg_done_late),
            ]
        with m.If(s.switch):
            m.d.sync += [
                s.rd.eq(0),
                s.commit.eq(0),
                s.fetched.eq(0),
                s.pv.eq(0),
                s.rec_i.eq(0),
                s.rx_next.eq(0),
                s.tx_acked.eq(0),
                s.tx_next.eq(0),
                s.written.eq(0),
                s.doc_no.eq(0),
                s.documents.eq(0),
                s.nak_sent.eq(0),
                s.nak_due.eq(0),
                s.ack_due.eq(0),
                s.progress.eq(0),
                s.limit.eq(N),
                s.free.eq(N),
                s.free_at.eq(0),
                # the record in progress, or the one IDLE starts this very cycle, is the old
                # session's (the next record IDLE starts clears it)
                s.discard.eq(1),
            ]
