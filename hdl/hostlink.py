"""The host link: a framed byte protocol between a host and an engine on a board, over a UART.

Framing (both directions). A frame is ``SOF kind body... EOF``. Inside ``kind`` and ``body``
the three special bytes ``SOF`` (0xC0), ``EOF`` (0xC1) and ``ESC`` (0xDB) are sent as ``ESC``
followed by the byte XOR 0x20 (so 0xC0 -> DB E0, 0xC1 -> DB E1, 0xDB -> DB FB); no other byte
is escaped. 0xC0 and 0xC1 never occur in UTF-8 text, so XML documents pass almost unchanged.
Frames have no length field: a document of any size is one frame, and a receiver that lost
bytes finds the next frame at the next ``SOF``.

Host -> board (:class:`Command`):

* ``D`` + the bytes of one document: the engine gets them in order, ``last`` on the final byte
  (the byte before ``EOF``). An empty ``D`` frame is ignored.
* ``C`` + a configuration stream (programmable engines only; ``config.bin`` of
  ``xpfilt configure``): its bits go to the engine LSB first, ``last`` on the final bit. The
  engine checks and commits it between two documents; ask ``S`` for the verdict.
* ``S`` (no body): the board answers with one status frame.

Board -> host (:class:`Response`):

* ``R`` + one readout per document, in document order: ``doc`` (2 bytes, little endian: the
  engine's wrapping document number, from 0), ``errors`` (1 byte,
  :class:`hdl.frontend.ErrorFlags`: bit 0 malformed, 1 depth overflow, 2 name too long), then
  the readout bits packed 8 per byte: readout bit ``i`` is bit ``i % 8`` of body byte
  ``3 + i // 8`` (``ceil(width / 8)`` bytes; unused high bits are 0). Which query a readout bit
  is: the plan's readout order (custom) or the configuration's readout map (programmable).
* ``S`` + :class:`StatusLayout` (:data:`STATUS_BYTES` bytes, little endian): protocol
  version, engine mode (0 custom, 1 programmable), readout width, design identity (custom: a
  hash of the plan; programmable: the hardware fingerprint), configuration status
  (:class:`hdl.programmable.ConfigStatus`), link errors since the previous status frame
  (``overrun``: a received byte was lost, the receive FIFO was full; ``framing``: a UART stop
  bit was low; ``protocol``: a byte outside a frame, an unknown kind, a bad escape, a frame cut
  short by ``SOF`` -- a document cut short still ends, at its last byte received) and the
  number of documents streamed into the engine (16 bits, wrapping).

Frames of the two kinds never interleave; a status request waits for the readout frame in
flight. There is no flow control on the line: the engine takes a byte per clock cycle, far
faster than the UART delivers them, and stalls only while a finished document waits for the
readout of the one before it. A host that sends the next document only once the previous
readout has arrived (``xpfilt host`` does) never meets that stall; one that streams ahead must
keep the bytes sent during a readout below the receive FIFO (64 bytes), or they are lost and
``overrun`` is reported.
"""

from amaranth.hdl import Module, Mux, Signal
from amaranth.lib import data, enum, stream, wiring
from amaranth.lib.wiring import In, Out

from .frontend import ByteLayout
from .programmable import ConfigBit
from .readout import DOC_WIDTH, ReadoutLayout

__all__ = ["SOF", "EOF", "ESC", "ESC_XOR", "SPECIAL", "PROTOCOL_VERSION", "Command",
           "Response", "Mode", "LinkErrors", "StatusLayout", "STATUS_BYTES", "READOUT_HEADER",
           "CommandDecoder", "ConfigSerializer", "Escaper", "ResponseEncoder"]

SOF = 0xC0
EOF = 0xC1
ESC = 0xDB
ESC_XOR = 0x20
#: The bytes that are escaped inside a frame.
SPECIAL = (SOF, EOF, ESC)
PROTOCOL_VERSION = 1
#: Body bytes of a readout frame before the packed bits: doc (2), errors (1).
READOUT_HEADER = 3


class Command(enum.Enum, shape=8):
    """Kinds of host -> board frames."""
    DOCUMENT = ord("D")
    CONFIG = ord("C")
    STATUS = ord("S")


class Response(enum.Enum, shape=8):
    """Kinds of board -> host frames."""
    READOUT = ord("R")
    STATUS = ord("S")


class Mode(enum.Enum, shape=8):
    CUSTOM = 0
    PROGRAMMABLE = 1


class LinkErrors(data.Struct):
    """Link errors, sticky until the next status frame reports them."""
    overrun: 1
    framing: 1
    protocol: 1


class StatusLayout(data.Struct):
    """The body of a status frame, byte ``i`` = bits ``8i .. 8i+7``."""
    version: 8
    mode: 8
    width: 32
    identity: 32
    generation: 8
    loaded: 1
    rejected: 1
    pending: 1
    _pad0: 5
    overrun: 1
    framing: 1
    protocol: 1
    _pad1: 5
    documents: 16


STATUS_BYTES = data.Layout.cast(StatusLayout).size // 8


class CommandDecoder(wiring.Component):
    """Unframes host -> board bytes. Ports: ``bytes_in`` (received bytes), ``document``
    (document bytes with ``last`` on each document's final byte), ``config`` (configuration
    bytes, ``last`` on the stream's final byte; ``C`` frames are protocol errors unless
    ``config``), ``status_request`` and ``error`` (one-cycle pulses: an ``S`` frame ended; a
    protocol error).

    A payload byte is held back until the next one arrives (or ``EOF``), which is how ``last``
    lands on the final byte. Takes a byte at most every other cycle (far faster than a UART)."""

    def __init__(self, *, config: bool):
        self.accepts_config = config
        super().__init__({
            "bytes_in": In(stream.Signature(8)),
            "document": Out(stream.Signature(ByteLayout)),
            "config": Out(stream.Signature(ByteLayout)),
            "status_request": Out(1),
            "error": Out(1),
        })

    def elaborate(self, platform):
        m = Module()
        out_valid = Signal()
        out_data = Signal(8)
        out_last = Signal()
        out_config = Signal()             # the output byte goes to ``config``, else ``document``
        held = Signal()                   # a payload byte waits in ``held_data``
        held_data = Signal(8)
        escaped = Signal()                # the previous payload byte was ESC
        in_config = Signal()              # the frame being received is a ``C`` frame

        for port, selected in ((self.document, ~out_config), (self.config, out_config)):
            m.d.comb += [port.valid.eq(out_valid & selected), port.payload.data.eq(out_data),
                         port.payload.last.eq(out_last)]
        sent = ((self.document.valid & self.document.ready)
                | (self.config.valid & self.config.ready))
        with m.If(sent):
            m.d.sync += out_valid.eq(0)

        byte = self.bytes_in.payload
        m.d.comb += self.bytes_in.ready.eq(~out_valid)
        take = self.bytes_in.valid & ~out_valid

        def emit_held(last):
            m.d.sync += [out_valid.eq(1), out_data.eq(held_data), out_last.eq(last),
                         out_config.eq(in_config), held.eq(0)]

        with m.FSM(name="host_rx"):
            with m.State("IDLE"):                 # between frames: only SOF is expected
                with m.If(take):
                    with m.If(byte == SOF):
                        m.next = "KIND"
                    with m.Elif(byte != EOF):
                        m.d.comb += self.error.eq(1)
                        m.next = "SKIP"
            with m.State("KIND"):
                with m.If(take):
                    m.d.sync += escaped.eq(0)
                    with m.If(byte == SOF):
                        pass                      # repeated SOF: harmless
                    with m.Elif(byte == EOF):
                        m.next = "IDLE"           # an empty frame
                    with m.Elif(byte == Command.DOCUMENT.value):
                        m.d.sync += in_config.eq(0)
                        m.next = "PAYLOAD"
                    with m.Elif((byte == Command.CONFIG.value) & self.accepts_config):
                        m.d.sync += in_config.eq(1)
                        m.next = "PAYLOAD"
                    with m.Elif(byte == Command.STATUS.value):
                        m.next = "STATUS"
                    with m.Else():
                        m.d.comb += self.error.eq(1)
                        m.next = "SKIP"
            with m.State("PAYLOAD"):
                with m.If(take):
                    with m.If((byte == SOF) | (byte == EOF)):
                        with m.If(held):
                            emit_held(1)
                        with m.If((byte == SOF) | escaped):
                            m.d.comb += self.error.eq(1)
                        with m.If(byte == SOF):
                            m.next = "KIND"
                        with m.Else():
                            m.next = "IDLE"
                    with m.Elif((byte == ESC) & ~escaped):
                        m.d.sync += escaped.eq(1)
                    with m.Else():
                        value = Mux(escaped, byte ^ ESC_XOR, byte)
                        with m.If(escaped & (value != SOF) & (value != EOF) & (value != ESC)):
                            m.d.comb += self.error.eq(1)
                        with m.If(held):
                            emit_held(0)
                        m.d.sync += [held.eq(1), held_data.eq(value), escaped.eq(0)]
            with m.State("STATUS"):
                with m.If(take):
                    with m.If(byte == EOF):
                        m.d.comb += self.status_request.eq(1)
                        m.next = "IDLE"
                    with m.Elif(byte == SOF):
                        m.d.comb += self.error.eq(1)
                        m.next = "KIND"
                    with m.Else():
                        m.d.comb += self.error.eq(1)
                        m.next = "SKIP"
            with m.State("SKIP"):                 # after an error: up to the next frame
                with m.If(take):
                    with m.If(byte == SOF):
                        m.next = "KIND"
                    with m.Elif(byte == EOF):
                        m.next = "IDLE"
        return m


class ConfigSerializer(wiring.Component):
    """Configuration bytes (``last`` on the final byte) -> configuration bits, LSB first,
    ``last`` on the final bit of the final byte."""

    bytes_in: In(stream.Signature(ByteLayout))
    bits: Out(stream.Signature(ConfigBit))

    def elaborate(self, platform):
        m = Module()
        shift = Signal(8)
        left = Signal(range(9))           # bits of ``shift`` not yet sent
        last = Signal()
        m.d.comb += [
            self.bytes_in.ready.eq(left == 0),
            self.bits.valid.eq(left != 0),
            self.bits.payload.bit.eq(shift[0]),
            self.bits.payload.last.eq(last & (left == 1)),
        ]
        with m.If(self.bytes_in.valid & self.bytes_in.ready):
            m.d.sync += [shift.eq(self.bytes_in.payload.data), left.eq(8),
                         last.eq(self.bytes_in.payload.last)]
        with m.Elif(self.bits.valid & self.bits.ready):
            m.d.sync += [shift.eq(shift >> 1), left.eq(left - 1)]
        return m


class _Escapable(data.Struct):
    data: 8
    raw: 1          # send as is (SOF, EOF), never escaped


class Escaper(wiring.Component):
    """Frame bytes -> line bytes: a byte not marked ``raw`` that is special goes out as
    ``ESC, byte ^ ESC_XOR``."""

    bytes_in: In(stream.Signature(_Escapable))
    bytes_out: Out(stream.Signature(8))

    def elaborate(self, platform):
        m = Module()
        second = Signal()                 # ESC went out; the escaped byte is next
        byte = self.bytes_in.payload.data
        special = ~self.bytes_in.payload.raw & ((byte == SOF) | (byte == EOF) | (byte == ESC))
        m.d.comb += [
            self.bytes_out.valid.eq(self.bytes_in.valid),
            self.bytes_out.payload.eq(Mux(special, Mux(second, byte ^ ESC_XOR, ESC), byte)),
            self.bytes_in.ready.eq(self.bytes_out.ready & (~special | second)),
        ]
        with m.If(self.bytes_out.valid & self.bytes_out.ready):
            m.d.sync += second.eq(special & ~second)
        return m


class ResponseEncoder(wiring.Component):
    """Frames board -> host responses. Ports: ``readout`` (the engine's readout stream: one
    ``R`` frame per document), ``status_request`` (pulse: send an ``S`` frame with ``status``
    as it is when the frame starts), ``status``, ``status_sent`` (pulse: the status was
    latched, sticky flags may clear), ``bytes_out`` (escaped line bytes, to the UART)."""

    def __init__(self):
        super().__init__({
            "readout": In(stream.Signature(ReadoutLayout)),
            "status_request": In(1),
            "status": In(StatusLayout),
            "status_sent": Out(1),
            "bytes_out": Out(stream.Signature(8)),
        })

    def elaborate(self, platform):
        m = Module()
        m.submodules.escaper = escaper = Escaper()
        wiring.connect(m, wiring.flipped(self.bytes_out), escaper.bytes_out)
        frame = escaper.bytes_in
        moved = frame.valid & frame.ready

        wanted = Signal()                  # a status frame was asked for
        latched = Signal(STATUS_BYTES * 8)
        count = Signal(range(max(STATUS_BYTES, 8) + 1))
        bits = Signal(8)
        beat = self.readout.payload

        def send(value, raw=False, then=None):
            m.d.comb += [frame.valid.eq(1), frame.payload.data.eq(value),
                         frame.payload.raw.eq(raw)]
            if then is not None:
                with m.If(moved):
                    m.next = then

        with m.FSM(name="host_tx"):
            with m.State("IDLE"):
                with m.If(wanted):
                    m.d.comb += self.status_sent.eq(1)
                    m.d.sync += [latched.eq(self.status.as_value()), wanted.eq(0),
                                 count.eq(0)]
                    m.next = "S_SOF"
                with m.Elif(self.readout.valid):
                    m.next = "R_SOF"
            with m.State("S_SOF"):
                send(SOF, raw=True, then="S_KIND")
            with m.State("S_KIND"):
                send(Response.STATUS.value, then="S_BODY")
            with m.State("S_BODY"):
                send(latched[:8])
                with m.If(moved):
                    m.d.sync += [latched.eq(latched >> 8), count.eq(count + 1)]
                    with m.If(count == STATUS_BYTES - 1):
                        m.next = "S_EOF"
            with m.State("S_EOF"):
                send(EOF, raw=True, then="IDLE")
            with m.State("R_SOF"):
                send(SOF, raw=True, then="R_KIND")
            with m.State("R_KIND"):
                send(Response.READOUT.value, then="R_DOC0")
            with m.State("R_DOC0"):
                send(beat.doc[:8], then="R_DOC1")
            with m.State("R_DOC1"):
                send(beat.doc[8:DOC_WIDTH], then="R_ERRORS")
            with m.State("R_ERRORS"):
                send(beat.errors.as_value(), then="R_COLLECT")
                with m.If(moved):
                    m.d.sync += [bits.eq(0), count.eq(0)]
            with m.State("R_COLLECT"):             # up to 8 readout bits into one byte
                m.d.comb += self.readout.ready.eq(1)
                with m.If(self.readout.valid):
                    with m.Switch(count):
                        for i in range(8):
                            with m.Case(i):
                                m.d.sync += bits[i].eq(beat.bit)
                    m.d.sync += count.eq(count + 1)
                    with m.If(beat.last):
                        m.next = "R_LAST_BYTE"
                    with m.Elif(count == 7):
                        m.next = "R_BYTE"
            with m.State("R_BYTE"):
                send(bits)
                with m.If(moved):
                    m.d.sync += [bits.eq(0), count.eq(0)]
                    m.next = "R_COLLECT"
            with m.State("R_LAST_BYTE"):
                send(bits, then="R_EOF")
            with m.State("R_EOF"):
                send(EOF, raw=True, then="IDLE")
        with m.If(self.status_request):        # after the FSM: a request is never lost
            m.d.sync += wanted.eq(1)
        return m
