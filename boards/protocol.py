"""The host links' protocols -- the one definition the gateware and the host use: over a UART,
a framed byte protocol (this docstring; gateware :mod:`xpfilt.boards.hostlink`, host
:mod:`xpfilt.boards.host`); over Ethernet, datagrams of two reliable byte streams (the comments
of the UDP section below; gateware :mod:`xpfilt.boards.udp_link`, host
:mod:`xpfilt.boards.udp_host`, model :mod:`xpfilt.boards.udp_board`).

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

* ``R`` (serial readout) + one readout per document, in document order: a
  :class:`ReadoutHeader` (``doc``, 2 bytes little endian: the engine's wrapping document
  number, from 0; ``errors``, 1 byte, :class:`xpfilt.hdl.frontend.ErrorFlags`: bit 0 malformed, 1
  depth overflow, 2 name too long, 3 value undecided, 4 entity), then the readout bits packed 8
  per byte: readout bit ``i``
  is bit ``i % 8`` of body byte ``3 + i // 8`` (``ceil(width / 8)`` bytes; unused high bits
  are 0).
* ``M`` (sparse readout) + one readout per document: the same :class:`ReadoutHeader`, then the
  position of every readout bit that is set, in increasing order, each in
  :func:`id_bytes` bytes, little endian (the frame's length says how many).

  Which query a readout bit is: the plan's readout order (custom) or the configuration's
  readout map (programmable).
* ``S`` + :class:`StatusLayout` (:data:`STATUS_BYTES` bytes, little endian): protocol
  version, engine mode (0 custom, 1 programmable), readout width, design identity (custom: a
  hash of the plan; programmable: the hardware fingerprint), configuration status
  (:class:`xpfilt.hdl.programmable.ConfigStatus`), link errors since the previous status frame
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

import dataclasses
import zlib
from dataclasses import dataclass
from typing import NamedTuple, Optional

from amaranth.lib import data, enum

from xpfilt.hdl.frontend import ErrorFlags, Errors
from xpfilt.hwspec.readout import DOC_WIDTH, DocumentReadout, ReadoutKind

__all__ = [
    "SOF",
    "EOF",
    "ESC",
    "ESC_XOR",
    "SPECIAL",
    "PROTOCOL_VERSION",
    "Command",
    "Response",
    "Mode",
    "LinkErrors",
    "StatusLayout",
    "STATUS_BYTES",
    "ReadoutHeader",
    "READOUT_HEADER",
    "id_bytes",
    "LinkError",
    "Frame",
    "encode_frame",
    "FrameReader",
    "BoardStatus",
    "decode_readout",
    "decode_matches",
    "status_fields",
    "mode_name",
    "UDP_VERSION",
    "UDP_PORT",
    "MAX_PAYLOAD",
    "DatagramKind",
    "DatagramHeader",
    "DATAGRAM_HEADER",
    "DATAGRAM_CRC",
    "InputKind",
    "InputRecord",
    "INPUT_RECORD",
    "ReadoutRecordKind",
    "ReadoutRecord",
    "READOUT_RECORD",
    "ConfigVerdict",
    "UdpStatusLayout",
    "UDP_STATUS_BYTES",
    "seq_after",
    "seq_diff",
    "Datagram",
    "encode_datagram",
    "decode_datagram",
    "input_record",
    "readout_record",
    "Record",
    "RecordReader",
    "ReadoutTaken",
    "ReadoutReceiver",
    "readout_body",
    "decode_record",
    "UdpStatus",
]

SOF = 0xC0
EOF = 0xC1
ESC = 0xDB
ESC_XOR = 0x20
#: The bytes that are escaped inside a frame.
SPECIAL = (SOF, EOF, ESC)
PROTOCOL_VERSION = 2


class Command(enum.Enum, shape=8):
    """Kinds of host -> board frames."""

    DOCUMENT = ord("D")
    CONFIG = ord("C")
    STATUS = ord("S")


class Response(enum.Enum, shape=8):
    """Kinds of board -> host frames."""

    READOUT = ord("R")  # serial readout: the packed readout bits
    MATCHES = ord("M")  # sparse readout: the positions of the set bits
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


class ReadoutHeader(data.Struct):
    """The first bytes of a readout frame (``R`` or ``M``)."""

    doc: DOC_WIDTH
    errors: ErrorFlags
    _pad: 8 - ErrorFlags.as_shape().size


READOUT_HEADER = data.Layout.cast(ReadoutHeader).size // 8


def id_bytes(width: int) -> int:
    """Bytes per readout-bit position in an ``M`` frame of a ``width``-bit readout."""
    return (max(1, (width - 1).bit_length()) + 7) // 8


def _fields(layout) -> dict:
    """(offset, width) of each named field of a layout (padding left out)."""
    return {
        name: (f.offset, f.width)
        for name, f in data.Layout.cast(layout)
        if not name.startswith("_")
    }


def _pack(layout, **fields) -> bytes:
    value = 0
    for name, (offset, width) in _fields(layout).items():
        value |= (fields.get(name, 0) & ((1 << width) - 1)) << offset
    return value.to_bytes(data.Layout.cast(layout).size // 8, "little")


def _unpack(layout, raw: bytes) -> dict:
    value = int.from_bytes(raw, "little")
    return {
        name: value >> offset & ((1 << width) - 1)
        for name, (offset, width) in _fields(layout).items()
    }


def mode_name(mode: int) -> str:
    """A status's engine mode as a word (``custom``, ``programmable``)."""
    try:
        return Mode(mode).name.lower()
    except ValueError:
        return f"unknown mode {mode}"


def status_fields() -> dict:
    """(offset, width) of each field of :class:`StatusLayout`."""
    return _fields(StatusLayout)


# --- the host's side of the framing --------------------------------------------------------------


class LinkError(RuntimeError):
    """The board did not answer as the protocol says (or the transport failed)."""


class Frame(NamedTuple):
    kind: int
    body: bytes


def _escape(raw: bytes) -> bytes:
    return (
        raw.replace(bytes([ESC]), bytes([ESC, ESC ^ ESC_XOR]))
        .replace(bytes([SOF]), bytes([ESC, SOF ^ ESC_XOR]))
        .replace(bytes([EOF]), bytes([ESC, EOF ^ ESC_XOR]))
    )


def encode_frame(kind: int, body: bytes = b"") -> bytes:
    """``SOF``, the escaped kind and body, ``EOF``."""
    return bytes([SOF]) + _escape(bytes([kind]) + bytes(body)) + bytes([EOF])


class FrameReader:
    """Line bytes -> frames. Bytes outside frames, frames cut short by ``SOF`` and frames with a
    bad escape are dropped and counted in ``dropped`` (bytes)."""

    def __init__(self):
        self._buffer = bytearray()
        self.dropped = 0

    def feed(self, chunk: bytes) -> list[Frame]:
        buffer = self._buffer
        buffer += chunk
        frames = []
        while True:
            start = buffer.find(SOF)
            if start < 0:
                self.dropped += len(buffer)
                buffer.clear()
                return frames
            if start:
                self.dropped += start
                del buffer[:start]
            end = buffer.find(EOF, 1)
            cut = buffer.find(SOF, 1)
            if 0 < cut and (end < 0 or cut < end):  # a frame cut short by the next SOF
                self.dropped += cut
                del buffer[:cut]
                continue
            if end < 0:
                return frames
            raw, body = bytes(buffer[1:end]), bytearray()
            del buffer[: end + 1]
            i = 0
            while i < len(raw):
                if raw[i] == ESC:
                    if i + 1 >= len(raw) or raw[i + 1] ^ ESC_XOR not in (SOF, EOF, ESC):
                        body = None
                        break
                    body.append(raw[i + 1] ^ ESC_XOR)
                    i += 2
                else:
                    body.append(raw[i])
                    i += 1
            if not body:  # empty or badly escaped
                self.dropped += len(raw) + 2
                continue
            frames.append(Frame(body[0], bytes(body[1:])))


@dataclass(frozen=True)
class BoardStatus:
    """A decoded status frame (see :class:`StatusLayout`)."""

    version: int
    mode: int
    width: int
    identity: int
    generation: int
    loaded: int
    rejected: int
    pending: int
    overrun: int
    framing: int
    protocol: int
    documents: int

    @classmethod
    def decode(cls, body: bytes) -> "BoardStatus":
        if len(body) != STATUS_BYTES:
            raise LinkError(f"a status frame must have {STATUS_BYTES} bytes, not {len(body)}")
        return cls(**_unpack(StatusLayout, body))

    def encode(self) -> bytes:
        """The status frame body (for tests and fakes)."""
        return _pack(StatusLayout, **dataclasses.asdict(self))

    @property
    def mode_name(self) -> str:
        return mode_name(self.mode)

    def link_errors(self) -> list[str]:
        return [name for name in ("overrun", "framing", "protocol") if getattr(self, name)]


def _header(body: bytes, what: str) -> tuple[int, Errors]:
    if len(body) < READOUT_HEADER:
        raise LinkError(
            f"a {what} frame must have at least {READOUT_HEADER} bytes, not {len(body)}"
        )
    value = int.from_bytes(body[:READOUT_HEADER], "little")
    fields = _fields(ReadoutHeader)
    doc_at, doc_width = fields["doc"]
    errors_at, errors_width = fields["errors"]
    return (
        value >> doc_at & ((1 << doc_width) - 1),
        Errors(value >> errors_at & ((1 << errors_width) - 1)),
    )


def decode_readout(body: bytes, width: int) -> DocumentReadout:
    """The body of an ``R`` frame of a ``width``-bit serial readout."""
    size = READOUT_HEADER + (width + 7) // 8
    if len(body) != size:
        raise LinkError(
            f"a readout frame of a {width}-bit readout must have {size} bytes, not {len(body)}"
        )
    doc, errors = _header(body, "readout")
    bits = int.from_bytes(body[READOUT_HEADER:], "little")
    if bits >> width:
        raise LinkError(
            f"a readout frame must have no bits beyond bit {width - 1}, "
            f"not {bits >> width:#x} << {width}"
        )
    return DocumentReadout(doc, errors, bits)


def decode_matches(body: bytes, width: int) -> DocumentReadout:
    """The body of an ``M`` frame of a ``width``-bit sparse readout."""
    doc, errors = _header(body, "matches")
    size = id_bytes(width)
    ids = body[READOUT_HEADER:]
    if len(ids) % size:
        raise LinkError(
            f"a matches frame of a {width}-bit readout must have {size}-byte ids, "
            f"not {len(ids)} bytes of them"
        )
    bits = 0
    for k in range(0, len(ids), size):
        position = int.from_bytes(ids[k : k + size], "little")
        if position >= width or bits >> position & 1:
            raise LinkError(
                f"a matches frame must list each position below {width} once, "
                f"not {position} again or beyond"
            )
        bits |= 1 << position
    return DocumentReadout(doc, errors, bits)


# --- the UDP link (Ethernet boards) --------------------------------------------------------------
#
# Over UDP the link is two reliable byte streams, one each way, carried in datagrams with
# sequence numbers, go-back-N, as TCP does it but small enough for gateware:
#
# * Every datagram is a :class:`DatagramHeader` (:data:`DATAGRAM_HEADER` bytes), ``length``
#   payload bytes and a CRC-32 (zlib's, the Ethernet FCS polynomial) of header and payload,
#   little endian. A datagram whose version, length or CRC is wrong (corrupted, truncated) is
#   dropped whole, and so is one of another ``session`` (stale: a host that restarted).
# * ``seq`` is the byte offset in its stream of the payload's first byte (32 bits, wrapping);
#   a receiver takes a datagram only when ``seq`` is the next byte it expects: an older one
#   (a duplicate) is dropped and acknowledged again, a newer one (a datagram before it was lost
#   or overtaken) is dropped and answered with ``NAK`` set, once per gap, so the sender goes
#   back to the receiver's ``ack`` at once instead of after its timeout.
# * ``ack`` in every datagram: the next byte offset expected of the other side's stream
#   (cumulative). ``limit`` (board -> host): the host may send input stream bytes below this
#   offset -- the board's input buffer has room for them, so it is never overrun; the board
#   sends a datagram (payload-less if it has nothing else) when the room grows.
# * A sender keeps what it sent until it is acknowledged and sends it again from the
#   receiver's ``ack`` when ``NAK`` comes or nothing was acknowledged for its timeout.
#
# Host -> board (:class:`DatagramKind`): ``HELLO`` opens session ``session`` (a new one resets
# both streams to offset 0; the old session's documents still in the engine are finished and
# their readouts dropped; a HELLO of the current session changes nothing) and is answered by
# ``STATUS``; ``STATUS`` asks for one; ``DATA`` carries input stream bytes (none: an ack).
# Board -> host: ``STATUS`` (payload :class:`UdpStatusLayout`), ``READOUT`` (readout stream bytes;
# none: an ack or a credit).
#
# The input stream is a sequence of :class:`InputRecord` headers each followed by ``length``
# bytes: a document (``length`` >= 1; the engine gets ``last`` on its final byte) or a
# configuration stream of the programmable engine (committed between two documents, as over the
# UART). The readout stream is a sequence of :class:`ReadoutRecord` headers each followed by
# ``length`` bytes, one per document in order (``doc``: the session's document number, from 0):
# ``R`` the packed readout bits (as an ``R`` frame's), ``M`` the ids (as an ``M`` frame's), or,
# once per configuration stream, ``C``: its verdict (:class:`ConfigVerdict`; ``doc``: the
# documents before it). The board keeps readout bytes until the host acknowledges them.

UDP_VERSION = 1
#: The board's UDP port unless built with another.
UDP_PORT = 4747
#: Payload bytes a datagram carries at most: 1,500-byte IP packets (20 bytes of IP header, 8 of
#: UDP), less the header and the CRC.
MAX_PAYLOAD = 1440
SEQ_MASK = 0xFFFFFFFF


class DatagramKind(enum.Enum, shape=8):
    HELLO = ord("H")
    STATUS = ord("S")
    DATA = ord("D")
    READOUT = ord("R")


class DatagramFlags(data.Struct):
    nak: 1  # a datagram after ``ack`` came first: send again from ``ack``
    _pad: 7


class DatagramHeader(data.Struct):
    version: 8
    kind: 8
    flags: DatagramFlags
    _pad0: 8
    session: 32
    seq: 32
    ack: 32
    limit: 32
    length: 16
    _pad1: 16


DATAGRAM_HEADER = data.Layout.cast(DatagramHeader).size // 8
DATAGRAM_CRC = 4


class InputKind(enum.Enum, shape=8):
    DOCUMENT = ord("D")
    CONFIG = ord("C")


class InputRecord(data.Struct):
    kind: 8
    length: 32


INPUT_RECORD = data.Layout.cast(InputRecord).size // 8


class ReadoutRecordKind(enum.Enum, shape=8):
    READOUT = ord("R")
    MATCHES = ord("M")
    CONFIG = ord("C")


class ReadoutRecord(data.Struct):
    kind: 8
    errors: 8
    _pad: 16
    doc: 32
    length: 32


READOUT_RECORD = data.Layout.cast(ReadoutRecord).size // 8


class ConfigVerdict(data.Struct):
    generation: 8
    loaded: 1
    rejected: 1
    _pad: 6


class UdpStatusLayout(data.Struct):
    """The payload of a board's ``STATUS`` datagram, byte ``i`` = bits ``8i .. 8i+7``."""

    version: 8
    mode: 8
    readout: 8  # 0 serial, 1 sparse
    _pad0: 8
    width: 32
    identity: 32
    generation: 8
    loaded: 1
    rejected: 1
    pending: 1
    _pad1: 5
    _pad2: 16
    documents: 32  # documents of this session taken by the engine
    input_buffer: 32  # bytes of the input buffer (the most credit ever granted)
    readout_buffer: 32  # bytes of readout the board keeps unacknowledged at most
    mac: 48
    _pad3: 16
    ip: 32
    port: 16
    max_payload: 16
    bad: 16  # datagrams dropped: version, length or CRC wrong (wrapping counters, since power-up)
    stale: 16  # datagrams of another session
    duplicates: 16  # data datagrams before the expected offset
    out_of_order: 16  # data datagrams after it


UDP_STATUS_BYTES = data.Layout.cast(UdpStatusLayout).size // 8


def seq_after(a: int, b: int) -> bool:
    """Whether offset ``a`` is after ``b`` (32-bit wrapping, as TCP compares)."""
    return 0 < (a - b) & SEQ_MASK < 1 << 31


def seq_diff(a: int, b: int) -> int:
    """``a - b`` of two wrapping offsets less than 2**31 apart (negative when ``a`` is before)."""
    d = (a - b) & SEQ_MASK
    return d - (1 << 32) if d >> 31 else d


class Datagram(NamedTuple):
    kind: int
    session: int
    seq: int = 0
    ack: int = 0
    limit: int = 0
    payload: bytes = b""
    nak: bool = False


def encode_datagram(d: Datagram) -> bytes:
    if len(d.payload) > 0xFFFF:
        raise ValueError(f"a datagram's payload must be at most 65535 bytes, not {len(d.payload)}")
    header = _pack(
        DatagramHeader,
        version=UDP_VERSION,
        kind=d.kind,
        flags=int(d.nak),
        session=d.session,
        seq=d.seq,
        ack=d.ack,
        limit=d.limit,
        length=len(d.payload),
    )
    body = header + bytes(d.payload)
    return body + zlib.crc32(body).to_bytes(DATAGRAM_CRC, "little")


def decode_datagram(raw: bytes) -> Optional[Datagram]:
    """The datagram in ``raw``, or None when its version, length or CRC is wrong."""
    if len(raw) < DATAGRAM_HEADER + DATAGRAM_CRC:
        return None
    body, crc = raw[:-DATAGRAM_CRC], raw[-DATAGRAM_CRC:]
    if zlib.crc32(body).to_bytes(DATAGRAM_CRC, "little") != crc:
        return None
    h = _unpack(DatagramHeader, body[:DATAGRAM_HEADER])
    payload = body[DATAGRAM_HEADER:]
    if h["version"] != UDP_VERSION or h["length"] != len(payload):
        return None
    return Datagram(
        h["kind"],
        h["session"],
        h["seq"],
        h["ack"],
        h["limit"],
        bytes(payload),
        bool(h["flags"] & 1),
    )


def input_record(kind: InputKind, body: bytes) -> bytes:
    """An input stream record: header and body (a document needs at least one byte)."""
    if kind is InputKind.DOCUMENT and not body:
        raise ValueError("document must have at least one byte, not none")
    return _pack(InputRecord, kind=kind.value, length=len(body)) + bytes(body)


def readout_record(kind: ReadoutRecordKind, doc: int, errors: int, body: bytes) -> bytes:
    return _pack(ReadoutRecord, kind=kind.value, errors=errors, doc=doc, length=len(body)) + body


class Record(NamedTuple):
    kind: int
    doc: int
    errors: int
    body: bytes


class RecordReader:
    """Readout stream bytes (in order) -> :class:`Record`\\ s."""

    def __init__(self):
        self._buffer = bytearray()

    def feed(self, chunk: bytes) -> list[Record]:
        buffer = self._buffer
        buffer += chunk
        records = []
        while len(buffer) >= READOUT_RECORD:
            h = _unpack(ReadoutRecord, buffer[:READOUT_RECORD])
            end = READOUT_RECORD + h["length"]
            if len(buffer) < end:
                break
            records.append(
                Record(h["kind"], h["doc"], h["errors"], bytes(buffer[READOUT_RECORD:end]))
            )
            del buffer[:end]
        return records


class ReadoutTaken(NamedTuple):
    """What one datagram did to the readout stream (:meth:`ReadoutReceiver.take`)."""

    records: list[Record]  # the records it completed, in order
    nak: bool  # send a NAK now: the first datagram after a gap since the stream last moved


class ReadoutReceiver:
    """The host's end of the board's readout stream, without sockets or clocks: give
    :meth:`take` every datagram of the session. From a ``READOUT`` datagram with a payload it
    keeps the bytes from ``rx_next`` (the next offset expected, 32-bit wrapping) on and returns
    the records they complete; a datagram it had counts in ``duplicates``, one after a gap in
    ``out_of_order`` (dropped: the board sends it again), and the first of those after the
    stream last moved asks for a NAK. Each readout datagram makes ``ack_due`` true: the caller
    sends ``rx_next`` as its ``ack`` and sets ``ack_due`` false. Other datagrams change
    nothing."""

    def __init__(self, rx_next: int = 0):
        self.rx_next = rx_next
        self.ack_due = False
        self.duplicates = self.out_of_order = 0
        self._nak_sent = False
        self._reader = RecordReader()

    def take(self, d: Datagram) -> ReadoutTaken:
        if d.kind != DatagramKind.READOUT.value or not d.payload:
            return ReadoutTaken([], False)
        self.ack_due = True
        start = seq_diff(d.seq, self.rx_next)
        end = start + len(d.payload)
        if start > 0:
            self.out_of_order += 1
            nak, self._nak_sent = not self._nak_sent, True
            return ReadoutTaken([], nak)
        if end <= 0:
            self.duplicates += 1
            return ReadoutTaken([], False)
        self.rx_next = (self.rx_next + end) & SEQ_MASK
        self._nak_sent = False
        return ReadoutTaken(self._reader.feed(d.payload[-start:]), False)


def readout_body(kind: ReadoutKind, readout: DocumentReadout, width: int) -> bytes:
    """The body of a document's readout record (``R`` packed bits, ``M`` ids)."""
    if kind is ReadoutKind.SERIAL:
        return readout.bits.to_bytes((width + 7) // 8, "little")
    size = id_bytes(width)
    bits, out, i = readout.bits, bytearray(), 0
    while bits:
        if bits & 1:
            out += i.to_bytes(size, "little")
        bits >>= 1
        i += 1
    return bytes(out)


def decode_record(record: Record, width: int) -> DocumentReadout:
    """A document's readout record as a :class:`DocumentReadout` (``doc``: the record's)."""
    header = _pack(ReadoutHeader, doc=record.doc, errors=record.errors)
    if record.kind == ReadoutRecordKind.READOUT.value:
        readout = decode_readout(header + record.body, width)
    elif record.kind == ReadoutRecordKind.MATCHES.value:
        readout = decode_matches(header + record.body, width)
    else:
        raise LinkError(f"a document's readout record must be 'R' or 'M', not {record.kind:#04x}")
    return readout._replace(doc=record.doc)


@dataclass(frozen=True)
class UdpStatus:
    """A decoded ``STATUS`` datagram payload (see :class:`UdpStatusLayout`)."""

    version: int
    mode: int
    readout: int
    width: int
    identity: int
    generation: int
    loaded: int
    rejected: int
    pending: int
    documents: int
    input_buffer: int
    readout_buffer: int
    mac: int
    ip: int
    port: int
    max_payload: int
    bad: int
    stale: int
    duplicates: int
    out_of_order: int

    @classmethod
    def decode(cls, payload: bytes) -> "UdpStatus":
        if len(payload) != UDP_STATUS_BYTES:
            raise LinkError(
                f"a status datagram must have {UDP_STATUS_BYTES} payload bytes, not {len(payload)}"
            )
        return cls(**_unpack(UdpStatusLayout, payload))

    def encode(self) -> bytes:
        return _pack(UdpStatusLayout, **dataclasses.asdict(self))

    @property
    def mode_name(self) -> str:
        return mode_name(self.mode)

    @property
    def readout_kind(self) -> ReadoutKind:
        return ReadoutKind.SPARSE if self.readout else ReadoutKind.SERIAL

    @property
    def address(self) -> str:
        """``MAC ip:port`` as a person reads them."""
        mac = ":".join(f"{b:02x}" for b in self.mac.to_bytes(6, "big"))
        ip = ".".join(str(b) for b in self.ip.to_bytes(4, "big"))
        return f"{mac} {ip}:{self.port}"
