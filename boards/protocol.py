"""The host link's protocol: a framed byte protocol between a host and an engine on a board,
over a UART -- the one definition both the gateware (:mod:`xpfilt.boards.hostlink`) and the host
(:mod:`xpfilt.boards.host`) use.

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
  depth overflow, 2 name too long), then the readout bits packed 8 per byte: readout bit ``i``
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

from dataclasses import dataclass
from typing import NamedTuple

from amaranth.lib import data, enum

from xpfilt.hdl.frontend import ErrorFlags, Errors
from xpfilt.hwspec.readout import DOC_WIDTH, DocumentReadout

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
        value = int.from_bytes(body, "little")
        return cls(
            **{
                name: value >> offset & ((1 << width) - 1)
                for name, (offset, width) in status_fields().items()
            }
        )

    def encode(self) -> bytes:
        """The status frame body (for tests and fakes)."""
        value = 0
        for name, (offset, width) in status_fields().items():
            value |= (getattr(self, name) & ((1 << width) - 1)) << offset
        return value.to_bytes(STATUS_BYTES, "little")

    @property
    def mode_name(self) -> str:
        try:
            return Mode(self.mode).name.lower()
        except ValueError:
            return f"unknown mode {self.mode}"

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
