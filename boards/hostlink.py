"""The host link's gateware (the protocol is described in :mod:`xpfilt.boards.protocol`):
:class:`CommandDecoder` unframes host -> board bytes, :class:`ConfigSerializer` turns
configuration bytes into bits, :class:`Escaper` escapes frame bodies and
:class:`ResponseEncoder` frames readouts and status frames; :class:`BeatPacker` packs
document bytes into the W-byte beats of the W-byte engine (both links use it).
"""

from amaranth.hdl import Cat, Const, Module, Mux, Signal
from amaranth.lib import data, stream, wiring
from amaranth.lib.wiring import In, Out

from xpfilt.boards.protocol import (
    EOF,
    ESC,
    ESC_XOR,
    READOUT_HEADER,
    SOF,
    STATUS_BYTES,
    Command,
    ReadoutHeader,
    Response,
    StatusLayout,
    id_bytes,
)
from xpfilt.hdl.frontend import ByteLayout
from xpfilt.hdl.programmable import ConfigBit
from xpfilt.hdl.readout import readout_layout
from xpfilt.hdl.wide_frontend import WideByteLayout
from xpfilt.hwspec.contract import check_bytes_per_cycle
from xpfilt.hwspec.readout import ReadoutKind

__all__ = ["BeatPacker", "CommandDecoder", "ConfigSerializer", "Escaper", "ResponseEncoder"]


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
        super().__init__(
            {
                "bytes_in": In(stream.Signature(8)),
                "document": Out(stream.Signature(ByteLayout)),
                "config": Out(stream.Signature(ByteLayout)),
                "status_request": Out(1),
                "error": Out(1),
            }
        )

    def elaborate(self, platform):
        m = Module()
        out_valid = Signal()
        out_data = Signal(8)
        out_last = Signal()
        out_config = Signal()  # the output byte goes to ``config``, else ``document``
        held = Signal()  # a payload byte waits in ``held_data``
        held_data = Signal(8)
        escaped = Signal()  # the previous payload byte was ESC
        in_config = Signal()  # the frame being received is a ``C`` frame

        for port, selected in ((self.document, ~out_config), (self.config, out_config)):
            m.d.comb += [
                port.valid.eq(out_valid & selected),
                port.payload.data.eq(out_data),
                port.payload.last.eq(out_last),
            ]
        sent = (self.document.valid & self.document.ready) | (self.config.valid & self.config.ready)
        with m.If(sent):
            m.d.sync += out_valid.eq(0)

        byte = self.bytes_in.payload
        m.d.comb += self.bytes_in.ready.eq(~out_valid)
        take = self.bytes_in.valid & ~out_valid

        def emit_held(last):
            m.d.sync += [
                out_valid.eq(1),
                out_data.eq(held_data),
                out_last.eq(last),
                out_config.eq(in_config),
                held.eq(0),
            ]

        with m.FSM(name="host_rx"):
            with m.State("IDLE"):  # between frames: only SOF is expected
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
                        pass  # repeated SOF: harmless
                    with m.Elif(byte == EOF):
                        m.next = "IDLE"  # an empty frame
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
            with m.State("SKIP"):  # after an error: up to the next frame
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

    @property
    def idle(self):
        """1 when every configuration bit taken has gone to the engine: a document may go
        (a board core gates documents on it; the engine then holds a document that follows a
        stream until the stream is committed or rejected)."""
        return self.bytes_in.ready

    def elaborate(self, platform):
        m = Module()
        shift = Signal(8)
        left = Signal(range(9))  # bits of ``shift`` not yet sent
        last = Signal()
        m.d.comb += [
            self.bytes_in.ready.eq(left == 0),
            self.bits.valid.eq(left != 0),
            self.bits.payload.bit.eq(shift[0]),
            self.bits.payload.last.eq(last & (left == 1)),
        ]
        with m.If(self.bytes_in.valid & self.bytes_in.ready):
            m.d.sync += [
                shift.eq(self.bytes_in.payload.data),
                left.eq(8),
                last.eq(self.bytes_in.payload.last),
            ]
        with m.Elif(self.bits.valid & self.bits.ready):
            m.d.sync += [shift.eq(shift >> 1), left.eq(left - 1)]
        return m


class BeatPacker(wiring.Component):
    """Document bytes (``last`` on a document's final byte) -> beats of W bytes
    (:class:`xpfilt.hdl.wide_frontend.WideByteLayout`: lane 0 first, ``count`` the bytes held,
    ``last``), for the W-byte engine's ``bytes_in``. A beat goes out when W bytes are in or a
    document ends, so a document's last beat may be partial (its unused lanes 0) and the next
    document starts in a fresh beat.

    Takes a byte every cycle while ``beats_out`` is ready, so W bytes a beat come out at 1/W
    beats per cycle: in front of an ``AsyncFIFO`` of beats, the reading domain may run W times
    slower. ``bytes_in.ready`` is a flip-flop (no beat waits in the second of two output
    registers), so ``beats_out.ready`` (an ``AsyncFIFO``'s ``w_rdy``, from its pointer compare)
    is not in the sender's paths."""

    def __init__(self, width: int):
        self.width = check_bytes_per_cycle(width)
        super().__init__(
            {
                "bytes_in": In(stream.Signature(ByteLayout)),
                "beats_out": Out(stream.Signature(WideByteLayout(width))),
            }
        )

    def elaborate(self, platform):
        m = Module()
        W = self.width
        lanes = Signal(8 * W)  # the bytes of the beat being filled (lanes >= ``filled`` are 0)
        filled = Signal(range(W))
        inp, out = self.bytes_in, self.beats_out
        beat = Signal(WideByteLayout(W))  # the beat the byte being taken completes
        waiting = Signal(WideByteLayout(W))  # a beat behind a stalled output
        full = Signal()  # ... is there
        m.d.comb += [
            inp.ready.eq(~full),
            beat.data.eq(
                Cat(
                    *(Mux(filled == i, inp.payload.data, lanes.word_select(i, 8)) for i in range(W))
                )
            ),
            beat.count.eq(filled + 1),
            beat.last.eq(inp.payload.last),
        ]
        done = Signal()  # a byte taken completes ``beat``
        m.d.comb += done.eq(inp.valid & inp.ready & (inp.payload.last | (filled == W - 1)))
        with m.If(inp.valid & inp.ready):
            with m.If(done):
                m.d.sync += [lanes.eq(0), filled.eq(0)]
            with m.Else():
                m.d.sync += [lanes.eq(beat.data), filled.eq(filled + 1)]
        with m.If(~out.valid | out.ready):  # the output register is free next cycle
            with m.If(full):  # (no byte is taken while full)
                m.d.sync += [out.payload.eq(waiting), out.valid.eq(1), full.eq(0)]
            with m.Else():
                m.d.sync += [out.payload.eq(beat), out.valid.eq(done)]
        with m.Elif(done):
            m.d.sync += [waiting.eq(beat), full.eq(1)]
        return m


class _Escapable(data.Struct):
    data: 8
    raw: 1  # send as is (SOF, EOF), never escaped


class Escaper(wiring.Component):
    """Frame bytes -> line bytes: a byte not marked ``raw`` that is special goes out as
    ``ESC, byte ^ ESC_XOR``."""

    bytes_in: In(stream.Signature(_Escapable))
    bytes_out: Out(stream.Signature(8))

    def elaborate(self, platform):
        m = Module()
        second = Signal()  # ESC went out; the escaped byte is next
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
    """Frames board -> host responses. Ports: ``readout`` (the engine's readout stream of
    ``kind`` for ``width`` readout bits: one ``R`` frame (serial) or ``M`` frame (sparse) per
    document), ``status_request`` (pulse: send an ``S`` frame with ``status`` as it is when the
    frame starts), ``status``, ``status_sent`` (pulse: the status was latched, sticky flags may
    clear), ``bytes_out`` (escaped line bytes, to the UART). Each frame byte passes through a
    register, so a byte reaches ``bytes_out`` a cycle after its state (the line keeps the
    pace: the register refills while the UART sends)."""

    def __init__(self, kind: ReadoutKind = ReadoutKind.SERIAL, width: int = 1):
        self.kind, self.width = kind, width
        super().__init__(
            {
                "readout": In(stream.Signature(readout_layout(kind, width))),
                "status_request": In(1),
                "status": In(StatusLayout),
                "status_sent": Out(1),
                "bytes_out": Out(stream.Signature(8)),
            }
        )

    def elaborate(self, platform):
        m = Module()
        m.submodules.escaper = escaper = Escaper()
        wiring.connect(m, wiring.flipped(self.bytes_out), escaper.bytes_out)
        # the next frame byte waits in a register: the states below move on from registers
        # only (``full``), never from the line's ``ready`` or the escaper's decision
        frame = Signal(_Escapable)
        full = Signal()
        moved = Signal()  # this state's byte goes into the register
        m.d.comb += [escaper.bytes_in.valid.eq(full), escaper.bytes_in.payload.eq(frame)]
        with m.If(escaper.bytes_in.ready):
            m.d.sync += full.eq(0)
        sparse = self.kind is ReadoutKind.SPARSE

        wanted = Signal(range(4))  # status frames asked for and not yet started
        started = Signal()
        latched = Signal(STATUS_BYTES * 8)
        count = Signal(range(max(STATUS_BYTES, READOUT_HEADER, 8) + 1))
        bits = Signal(8)
        beat = self.readout.payload
        header = Signal(ReadoutHeader)
        m.d.comb += [header.doc.eq(beat.doc), header.errors.eq(beat.errors)]
        id_size = id_bytes(self.width)

        def send(value, raw=False, then=None):
            m.d.comb += moved.eq(~full)
            with m.If(~full):
                m.d.sync += [full.eq(1), frame.data.eq(value), frame.raw.eq(raw)]
            if then is not None:
                with m.If(moved):
                    m.next = then

        with m.FSM(name="host_tx"):
            with m.State("IDLE"):
                with m.If(wanted != 0):
                    m.d.comb += [self.status_sent.eq(1), started.eq(1)]
                    m.d.sync += [latched.eq(self.status.as_value()), count.eq(0)]
                    m.next = "S_SOF"
                with m.Elif(self.readout.valid):
                    m.d.sync += count.eq(0)
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
                send((Response.MATCHES if sparse else Response.READOUT).value, then="R_HEADER")
            with m.State("R_HEADER"):  # from the document's first beat
                send(header.as_value().word_select(count, 8))
                with m.If(moved):
                    m.d.sync += count.eq(count + 1)
                    with m.If(count == READOUT_HEADER - 1):
                        m.d.sync += [bits.eq(0), count.eq(0)]
                        if sparse:  # the header beat is done with
                            m.d.comb += self.readout.ready.eq(1)
                            with m.If(beat.last):
                                m.next = "R_EOF"
                            with m.Else():
                                m.next = "R_ID"
                        else:
                            m.next = "R_COLLECT"
            if sparse:
                with m.State("R_ID"):  # each id in id_size bytes
                    with m.If(self.readout.valid):
                        send(Cat(beat.id, Const(0, 8 * id_size)).word_select(count, 8))
                        with m.If(moved):
                            m.d.sync += count.eq(count + 1)
                            with m.If(count == id_size - 1):
                                m.d.comb += self.readout.ready.eq(1)
                                m.d.sync += count.eq(0)
                                with m.If(beat.last):
                                    m.next = "R_EOF"
            else:
                with m.State("R_COLLECT"):  # up to 8 readout bits into one byte
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
        # every request gets its own status frame (up to three may wait)
        with m.If(self.status_request & ~started & (wanted != 3)):
            m.d.sync += wanted.eq(wanted + 1)
        with m.Elif(started & ~self.status_request):
            m.d.sync += wanted.eq(wanted - 1)
        return m
