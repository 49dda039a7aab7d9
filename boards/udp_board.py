"""A behavioural model of an Ethernet board's protocol endpoint (the UDP link of
:mod:`xpfilt.boards.protocol`), driving the engine's cycle model, behind a real UDP socket.

:class:`BoardEndpoint` is the board as the host sees it through the network: datagrams in, the
input buffer (the gateware's input FIFO, :attr:`EndpointConfig.input_buffer` bytes, never
overrun: the credit it grants is its free room), the record parser feeding the engine one byte
per cycle (and, programmable, a configuration stream one bit per cycle), the readout records
kept until acknowledged (:attr:`EndpointConfig.readout_buffer` bytes; the engine's readout
stalls while they are full), go-back-N retransmission on ``NAK`` or timeout, and the session
switch a host restart causes. It is the specification the gateware follows, executable:
:func:`serve_endpoint` puts it behind a socket, so ``xpfilt host --udp`` talks to it exactly as
to a board (``xpfilt sim-board --link ethernet --model``).
"""

from __future__ import annotations

import select
import socket
import threading
import time
from dataclasses import dataclass
from typing import Callable, Optional

from xpfilt.boards.protocol import (
    INPUT_RECORD,
    MAX_PAYLOAD,
    READOUT_RECORD,
    UDP_PORT,
    UDP_VERSION,
    ConfigVerdict,
    Datagram,
    DatagramKind,
    InputKind,
    Mode,
    ReadoutRecordKind,
    UdpStatus,
    _pack,
    _unpack,
    decode_datagram,
    encode_datagram,
    id_bytes,
    readout_body,
    readout_record,
    seq_after,
    seq_diff,
)
from xpfilt.boards.protocol import InputRecord as _InputRecord
from xpfilt.hwspec.readout import ReadoutKind, collect_readout

__all__ = [
    "EndpointConfig",
    "BoardEndpoint",
    "model_endpoint",
    "serve_endpoint",
    "DEFAULT_MAC",
    "DEFAULT_IP",
]

#: A locally administered unicast address (bit 1 of the first byte set, bit 0 clear).
DEFAULT_MAC = 0x02_58_50_46_49_4C  # 02:58:50:46:49:4c, "XPFIL"
DEFAULT_IP = 0xC0_A8_01_32  # 192.168.1.50


@dataclass(frozen=True)
class EndpointConfig:
    """``input_buffer``: bytes of the board's input FIFO (the credit it grants at most);
    ``readout_buffer``: readout bytes it keeps until acknowledged (at least one whole readout
    record); ``timeout``: seconds without an acknowledgement before it sends again from the
    host's ``ack``; ``mac``, ``ip``, ``port``: what its status reports (the model listens where
    it is told)."""

    input_buffer: int = 16384
    readout_buffer: int = 16384
    timeout: float = 0.05
    mac: int = DEFAULT_MAC
    ip: int = DEFAULT_IP
    port: int = UDP_PORT


def _max_record(kind: ReadoutKind, width: int) -> int:
    if kind is ReadoutKind.SERIAL:
        return READOUT_RECORD + (width + 7) // 8
    return READOUT_RECORD + id_bytes(width) * width


class BoardEndpoint:
    """The board's protocol endpoint around ``model`` (an
    :class:`xpfilt.model.custom.EngineModel` or
    :class:`xpfilt.model.programmable.ProgrammableModel`): :meth:`receive` takes a datagram's
    bytes, :meth:`run` advances the engine some cycles, and both return the datagrams the board
    sends (bytes). ``now`` (seconds) drives the retransmission timer."""

    def __init__(self, model, *, mode: Mode, identity: int, config: EndpointConfig):
        self.model = model
        self.mode = mode
        self.identity = identity & 0xFFFFFFFF
        self.config = config
        self.width = model.width
        self.kind = model.readout_kind
        need = _max_record(self.kind, self.width)
        if config.readout_buffer < need:
            raise ValueError(
                f"readout buffer must hold a whole readout record ({need} bytes for a "
                f"{self.width}-bit {self.kind.value} readout), not {config.readout_buffer} bytes"
            )
        self.programmable = mode is Mode.PROGRAMMABLE
        self.session = None
        self.bad = self.stale = self.duplicates = self.out_of_order = self.overruns = 0
        self._reset_streams()
        self._in_engine = 0  # documents whose last byte the engine took, not yet read out
        self._stale_readouts = 0  # of those, the ones of an earlier session
        self._beats: list = []

    # --- sessions ---------------------------------------------------------------------------

    def _reset_streams(self) -> None:
        self.rx_next = 0  # the next input stream offset expected
        self.fifo = bytearray()  # accepted, not yet taken by the parser
        self.nak_sent = False
        self.header = bytearray()  # the record header being parsed
        self.record_kind = 0
        self.left = 0  # bytes of the record's body not yet taken
        self.started = False  # a byte of the body went to the engine
        self.bits: list = []  # a configuration byte's bits not yet taken
        self.verdict = None  # generation before the configuration stream awaiting its verdict
        self.out = bytearray()  # readout stream bytes from ``tx_acked`` on
        self.tx_acked = self.tx_next = 0
        self.documents = 0  # documents of this session taken by the engine
        self.readouts = 0  # document readout records written
        self.advertised = 0  # the last limit sent
        self.ack_due = False
        self.progress_at = None

    def _open(self, session: int) -> None:
        """A new session: what the old one left in the engine is finished (a document cut short
        ends at a space byte, a configuration stream at a zero byte, which the loader rejects:
        its length or CRC is wrong) and its readouts are dropped."""
        self.fifo.clear()
        if self.left and self.started and self.record_kind == InputKind.DOCUMENT.value:
            while not self._step(True, ord(" "), True)[0]:
                pass
            self._in_engine += 1
        elif self.left and self.started and self.programmable:
            self.bits += [(0, i == 7) for i in range(8)]
        while self.bits:
            self._config_cycle()
        self._stale_readouts = self._in_engine
        self._reset_streams()
        self.session = session

    # --- datagrams in -----------------------------------------------------------------------

    def limit(self) -> int:
        return (self.rx_next + self.config.input_buffer - len(self.fifo)) & 0xFFFFFFFF

    def status(self) -> UdpStatus:
        s = self.model.status if self.programmable else {}
        return UdpStatus(
            version=UDP_VERSION,
            mode=self.mode.value,
            readout=int(self.kind is ReadoutKind.SPARSE),
            width=self.width,
            identity=self.identity,
            generation=s.get("generation", 0),
            loaded=s.get("loaded", 1),
            rejected=s.get("rejected", 0),
            pending=s.get("pending", 0),
            documents=self.documents,
            input_buffer=self.config.input_buffer,
            readout_buffer=self.config.readout_buffer,
            mac=self.config.mac,
            ip=self.config.ip,
            port=self.config.port,
            max_payload=MAX_PAYLOAD,
            bad=self.bad & 0xFFFF,
            stale=self.stale & 0xFFFF,
            duplicates=self.duplicates & 0xFFFF,
            out_of_order=self.out_of_order & 0xFFFF,
        )

    def _datagram(self, kind: DatagramKind, payload: bytes = b"", seq: int = 0, nak=False) -> bytes:
        limit = self.limit()
        self.advertised = limit
        self.ack_due = False
        return encode_datagram(
            Datagram(kind.value, self.session, seq, self.rx_next, limit, payload, nak)
        )

    def receive(self, raw: bytes, now: float) -> list[bytes]:
        d = decode_datagram(raw)
        if d is None:
            self.bad += 1
            return []
        if d.kind == DatagramKind.HELLO.value:
            if d.session != self.session:
                self._open(d.session)
            return [self._datagram(DatagramKind.STATUS, self.status().encode())]
        if d.session != self.session:
            self.stale += 1
            return []
        if d.kind == DatagramKind.STATUS.value:
            return [self._datagram(DatagramKind.STATUS, self.status().encode())]
        if d.kind != DatagramKind.DATA.value:
            self.bad += 1
            return []
        # the host's acknowledgement of the readout stream
        written = self.tx_acked + len(self.out)
        if seq_after(d.ack, self.tx_acked) and not seq_after(d.ack, written):
            del self.out[: seq_diff(d.ack, self.tx_acked)]
            self.tx_acked = d.ack
            self.progress_at = now
            if seq_after(self.tx_acked, self.tx_next):
                self.tx_next = self.tx_acked
        if d.nak and d.ack == self.tx_acked:
            self.tx_next = self.tx_acked  # go back: the host lost a datagram after ``ack``
        self.ack_due = True
        out = []
        if d.payload:
            start = seq_diff(d.seq, self.rx_next)
            end = start + len(d.payload)
            if start > 0:
                self.out_of_order += 1
                if not self.nak_sent:
                    self.nak_sent = True
                    out.append(self._datagram(DatagramKind.READOUT, seq=self.tx_next, nak=True))
            elif end <= 0:
                self.duplicates += 1
            elif end > self.config.input_buffer - len(self.fifo):
                self.overruns += 1  # beyond the credit granted (a host that obeys never sends it)
            else:
                self.fifo += d.payload[-start:]
                self.rx_next = (self.rx_next + end) & 0xFFFFFFFF
                self.nak_sent = False
        return out

    # --- the engine -------------------------------------------------------------------------

    def _step(self, valid=False, byte=0, last=False, cfg=None):
        out_ready = self._room()
        if cfg is None:
            ready, beat = self.model.step(valid, byte, last, out_ready)
        else:
            ready, beat = self.model.step(False, 0, False, out_ready, True, *cfg)
        if beat is not None and out_ready:
            self._beat(beat)
        return ready, beat

    def _room(self) -> bool:
        """The readout may move a beat: a whole record more still fits the readout buffer."""
        return len(self.out) + _max_record(self.kind, self.width) <= self.config.readout_buffer

    def _beat(self, beat) -> None:
        self._beats.append(beat)
        if not beat.last:
            return
        (readout,) = collect_readout(self._beats, self.width)
        self._beats = []
        self._in_engine -= 1
        if self._stale_readouts:
            self._stale_readouts -= 1
            return
        kind = (
            ReadoutRecordKind.MATCHES
            if self.kind is ReadoutKind.SPARSE
            else ReadoutRecordKind.READOUT
        )
        body = readout_body(self.kind, readout, self.width)
        self.out += readout_record(kind, self.readouts, int(readout.errors), body)
        self.readouts += 1

    def busy(self) -> bool:
        return bool(
            self.fifo or self.left or self.bits or self._in_engine or self.verdict is not None
        )

    def _config_cycle(self) -> None:
        """A cycle offering the next configuration bit to the engine."""
        model = self.model
        taken = not (model.held and model.cfg_pending)  # the loader's input register is free
        bit, last = self.bits[0]
        self._step(cfg=(bit, last))
        if taken:
            self.bits.pop(0)
            if last and self.verdict is not None:
                self.verdict = (self.verdict[0], True)

    def _cycle(self) -> None:
        """One engine cycle: the next byte (or configuration bit) of the input stream."""
        model = self.model
        if self.bits:
            self._config_cycle()
            return
        if self.verdict is not None and self.verdict[1]:
            if not model.held and not model.cfg_pending:  # committed or rejected
                s = model.status
                committed = s["generation"] != self.verdict[0]
                verdict = _pack(
                    ConfigVerdict,
                    generation=s["generation"],
                    loaded=s["loaded"],
                    rejected=int(not committed),
                )
                self.out += readout_record(ReadoutRecordKind.CONFIG, self.documents, 0, verdict)
                self.verdict = None
        if not self.left:
            need = INPUT_RECORD - len(self.header)
            self.header += self.fifo[:need]
            del self.fifo[:need]
            if len(self.header) == INPUT_RECORD:
                h = _unpack(_InputRecord, self.header)
                self.header = bytearray()
                self.record_kind, self.left, self.started = h["kind"], h["length"], False
                if self.record_kind == InputKind.CONFIG.value and self.programmable and self.left:
                    self.verdict = (model.status["generation"], False)
        elif self.fifo:
            byte, last = self.fifo[0], self.left == 1
            if self.record_kind == InputKind.DOCUMENT.value:
                ready, _ = self._step(True, byte, last)
                if not ready:
                    return
                if last:
                    self._in_engine += 1
                    self.documents += 1
            elif self.record_kind == InputKind.CONFIG.value and self.programmable:
                self.bits = [(byte >> i & 1, last and i == 7) for i in range(8)]
                self._config_cycle()  # the serializer takes the byte and offers its first bit
            else:
                self._step()  # a record of another kind (a custom engine's configuration): skipped
            del self.fifo[0]
            self.left -= 1
            self.started = True
            return
        self._step()

    def run(self, cycles: int, now: float) -> list[bytes]:
        """Advance the engine up to ``cycles`` cycles (fewer when idle) and return the datagrams
        to send: readout bytes not yet sent, an acknowledgement or credit that is due, and a
        retransmission when nothing was acknowledged for the timeout."""
        for _ in range(cycles):
            if not self.busy():
                break
            self._cycle()
        return self.transmit(now)

    def transmit(self, now: float) -> list[bytes]:
        if self.session is None:
            return []
        out = []
        written = self.tx_acked + len(self.out)
        if self.tx_acked != self.tx_next or self.out:
            if self.progress_at is None:
                self.progress_at = now
            elif now - self.progress_at > self.config.timeout and self.tx_next != self.tx_acked:
                self.tx_next, self.progress_at = self.tx_acked, now  # go back: nothing acked
        else:
            self.progress_at = now
        while seq_after(written, self.tx_next):
            at = seq_diff(self.tx_next, self.tx_acked)
            chunk = bytes(self.out[at : at + MAX_PAYLOAD])
            out.append(self._datagram(DatagramKind.READOUT, chunk, self.tx_next))
            self.tx_next = (self.tx_next + len(chunk)) & 0xFFFFFFFF
        grown = seq_diff(self.limit(), self.advertised) >= min(
            MAX_PAYLOAD, self.config.input_buffer // 2
        )
        if self.ack_due or grown:
            out.append(self._datagram(DatagramKind.READOUT, seq=self.tx_next))
        return out


def model_endpoint(directory, config: EndpointConfig = EndpointConfig()) -> BoardEndpoint:
    """The endpoint of the design in an ``xpfilt build`` directory, with its engine's model."""
    from xpfilt.boards.host import BoardDesign

    design = BoardDesign.load(directory)
    import dataclasses
    import json
    from pathlib import Path

    from xpfilt.boards.liteeth import parse_ip, parse_mac

    info = json.loads((Path(directory) / "board.json").read_text())
    if "mac" in info:  # built for Ethernet: report its addresses, as the board would
        config = dataclasses.replace(
            config, mac=parse_mac(info["mac"]), ip=parse_ip(info["ip"]), port=info["port"]
        )
    if design.plan is not None:
        from xpfilt.model.custom import EngineModel

        model, mode = EngineModel(design.plan), Mode.CUSTOM
    else:
        from xpfilt.model.programmable import ProgrammableModel

        model, mode = ProgrammableModel(design.spec), Mode.PROGRAMMABLE
    return BoardEndpoint(model, mode=mode, identity=design.identity, config=config)


def serve_endpoint(
    endpoint: BoardEndpoint,
    *,
    host: str = "127.0.0.1",
    port: int = 0,
    on_port: Callable[[int], None] = lambda _: None,
    stop: Optional[threading.Event] = None,
    idle_timeout: Optional[float] = None,
    cycles: int = 4000,
) -> None:
    """Serve ``endpoint`` on UDP ``host:port`` (0: any free port, told to ``on_port``) until
    ``stop`` is set or no datagram came for ``idle_timeout`` seconds. Replies go to the address
    of the last datagram received."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 1 << 21)
    sock.bind((host, port))
    on_port(sock.getsockname()[1])
    peer = None
    heard = time.monotonic()
    try:
        while not (stop is not None and stop.is_set()):
            now = time.monotonic()
            if idle_timeout is not None and now - heard > idle_timeout:
                return
            wait = 0 if endpoint.busy() else 0.005
            replies = []
            readable, _, _ = select.select([sock], [], [], wait)
            while readable:
                try:
                    raw, peer = sock.recvfrom(65536)
                except BlockingIOError:
                    break
                heard = now
                replies += endpoint.receive(raw, now)
                readable, _, _ = select.select([sock], [], [], 0)
            replies += endpoint.run(cycles, time.monotonic())
            if peer is not None:
                for raw in replies:
                    try:
                        sock.sendto(raw, peer)
                    except OSError:
                        pass  # the host went away: its datagrams are lost like any others
    finally:
        sock.close()
