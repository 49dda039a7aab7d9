"""The host side of the UDP link (the protocol is in :mod:`xpfilt.boards.protocol`).

* :class:`UdpLink`: one session with a board at ``HOST:PORT``: the input stream (documents and
  configuration streams as records, sent as far as the board's credit allows, sent again from
  its ``ack`` on ``NAK`` or timeout), the readout stream (records in order, acknowledged;
  duplicates and datagrams after a gap dropped, a gap answered with ``NAK``), status requests;
* :class:`UdpBoardEngine`: the board as a filter engine that streams ahead: up to ``window``
  documents in flight, the answers in document order (:meth:`UdpBoardEngine.filter_batch`).

``open_board_engine`` of :mod:`xpfilt.boards.host` greets and configures a board through either
link; only the document loop differs.
"""

from __future__ import annotations

import os
import random
import select
import socket
import time
from collections import deque
from typing import Callable, Iterable, Iterator, Optional, Sequence, Union

from xpfilt.boards.host import SoftwareFallback, board_answer
from xpfilt.boards.protocol import (
    MAX_PAYLOAD,
    UDP_PORT,
    UDP_VERSION,
    ConfigVerdict,
    Datagram,
    DatagramKind,
    InputKind,
    LinkError,
    ReadoutReceiver,
    ReadoutRecordKind,
    Record,
    UdpStatus,
    _unpack,
    decode_datagram,
    decode_record,
    encode_datagram,
    input_record,
    seq_after,
    seq_diff,
)
from xpfilt.lang.xpath import Query
from xpfilt.model.custom import readout_positions
from xpfilt.software.events import Document, DocumentError, utf8_document
from xpfilt.software.results import DocumentResult

__all__ = ["UdpLink", "UdpBoardEngine", "parse_address", "default_source_port", "LinkStats"]


def parse_address(text: str) -> tuple[str, int]:
    """``HOST[:PORT]`` (the port defaults to :data:`xpfilt.boards.protocol.UDP_PORT`)."""
    host, colon, port = text.rpartition(":")
    if not colon:
        host, port = text, str(UDP_PORT)
    if not host or not port.isdigit() or not 0 < int(port) < 65536:
        raise ValueError(f"board address must be HOST[:PORT], not {text!r}")
    return host, int(port)


def default_source_port(host: str, port: int) -> int:
    """The port to send from to a board at ``host:port``: the board's own (LiteEth takes only
    datagrams from it), except on a loopback address (a simulated board or the model, which
    takes any and may hold that port itself): any."""
    import ipaddress

    try:
        loopback = ipaddress.ip_address(socket.gethostbyname(host)).is_loopback
    except (OSError, ValueError):
        loopback = False
    return 0 if loopback else port


class LinkStats:
    """What a session cost: datagrams sent and received, sent again, dropped (the readout
    stream's ``duplicates`` and ``out_of_order``: what its :class:`ReadoutReceiver` counted)."""

    FIELDS = ("sent", "received", "resent_bytes", "bad", "stale", "duplicates", "out_of_order",
              "timeouts")  # fmt: skip

    def __init__(self, readout: ReadoutReceiver):
        self.sent = self.received = self.resent_bytes = 0
        self.bad = self.stale = self.timeouts = 0
        self._readout = readout

    @property
    def duplicates(self) -> int:
        return self._readout.duplicates

    @property
    def out_of_order(self) -> int:
        return self._readout.out_of_order

    def __repr__(self) -> str:
        return ", ".join(f"{k} {getattr(self, k)}" for k in self.FIELDS)


class UdpLink:
    """A session with the board at ``address`` (``(host, port)``). ``timeout``: seconds of
    silence before the board counts as not answering; ``rto``: seconds without an
    acknowledgement before unacknowledged bytes are sent again; ``session``: the session id
    (default: random); ``source_port``: the local UDP port (0: any; a board's LiteEth core
    takes only datagrams from its own port, :mod:`xpfilt.boards.liteeth`)."""

    def __init__(
        self,
        address: tuple[str, int],
        *,
        timeout: float = 10.0,
        rto: float = 0.05,
        session: Optional[int] = None,
        name: Optional[str] = None,
        source_port: int = 0,
    ):
        self.address = address
        self.timeout = timeout
        self.rto = rto
        self.name = name or f"{address[0]}:{address[1]}"
        self.session = session if session is not None else random.SystemRandom().getrandbits(32)
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 1 << 21)
        try:
            if source_port:  # a LiteEth board answers datagrams sent from its own port
                self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
                self.sock.bind(("", source_port))
            self.sock.connect(address)
        except OSError as exc:
            raise LinkError(f"cannot reach {self.name}: {exc.strerror or exc}") from None
        self.sock.setblocking(False)
        self.opened = False
        # the input stream: bytes from ``acked`` on; ``next`` the next to send
        self.out = bytearray()
        self.acked = self.next = self.limit = 0
        self.sent_high = 0  # the furthest offset ever sent (what goes again counts as resent)
        self.progress_at = time.monotonic()
        self.readout = ReadoutReceiver()
        self.records: deque[Record] = deque()  # the readout stream's, not yet taken
        self.stats = LinkStats(self.readout)
        self.heard_at = self.probed_at = time.monotonic()
        self.last_status: Optional[UdpStatus] = None

    def close(self) -> None:
        self.sock.close()

    def __enter__(self) -> "UdpLink":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    # --- datagrams ----------------------------------------------------------------------

    def _send(self, kind: DatagramKind, payload: bytes = b"", seq: int = 0, nak=False) -> None:
        raw = encode_datagram(
            Datagram(kind.value, self.session, seq, self.readout.rx_next, 0, payload, nak)
        )
        try:
            self.sock.send(raw)
        except BlockingIOError:
            pass  # the socket's buffer is full: as if the network dropped it
        except OSError as exc:  # e.g. ICMP port unreachable from an earlier datagram
            if exc.errno not in (111, 113):  # ECONNREFUSED, EHOSTUNREACH: keep trying
                raise LinkError(f"{self.name}: cannot send: {exc.strerror or exc}") from None
        self.stats.sent += 1
        if kind is DatagramKind.DATA:
            self.readout.ack_due = False

    def _receive(self, wait: float) -> bool:
        """Take every datagram that arrives within ``wait`` seconds (then those waiting)."""
        got = False
        ready, _, _ = select.select([self.sock], [], [], max(0.0, wait))
        while ready:
            try:
                raw = self.sock.recv(65536)
            except BlockingIOError:
                break
            except OSError:  # ECONNREFUSED: nobody listens (yet)
                break
            got = True
            self._datagram(raw)
            ready, _, _ = select.select([self.sock], [], [], 0)
        return got

    def _datagram(self, raw: bytes) -> None:
        now = time.monotonic()
        d = decode_datagram(raw)
        self.stats.received += 1
        if d is None:
            self.stats.bad += 1
            return
        if d.session != self.session:
            self.stats.stale += 1
            return
        self.heard_at = now
        written = (self.acked + len(self.out)) & 0xFFFFFFFF
        if seq_after(d.ack, self.acked) and not seq_after(d.ack, written):
            del self.out[: seq_diff(d.ack, self.acked)]
            self.acked = d.ack
            self.progress_at = now
            if seq_after(self.acked, self.next):
                self.next = self.acked
        if seq_after(d.limit, self.limit):
            self.limit = d.limit
        if d.nak and d.ack == self.acked:
            self.next = self.acked  # the board lost a datagram after ``ack``: go back
        if d.kind == DatagramKind.STATUS.value:
            self.last_status = UdpStatus.decode(d.payload)
            return
        taken = self.readout.take(d)
        self.records.extend(taken.records)
        if taken.nak:
            self._send(DatagramKind.DATA, seq=self.next, nak=True)

    def _transmit(self) -> None:
        now = time.monotonic()
        if self.next != self.acked and now - self.progress_at > self.rto:
            self.next, self.progress_at = self.acked, now  # go back: nothing acknowledged
            self.stats.timeouts += 1
        written = (self.acked + len(self.out)) & 0xFFFFFFFF
        while seq_after(written, self.next) and seq_after(self.limit, self.next):
            at = seq_diff(self.next, self.acked)
            size = min(MAX_PAYLOAD, seq_diff(self.limit, self.next))
            chunk = bytes(self.out[at : at + size])
            if seq_after(self.sent_high, self.next):
                self.stats.resent_bytes += min(len(chunk), seq_diff(self.sent_high, self.next))
            self._send(DatagramKind.DATA, chunk, self.next)
            self.next = (self.next + len(chunk)) & 0xFFFFFFFF
            if seq_after(self.next, self.sent_high):
                self.sent_high = self.next
            self.progress_at = now if at == 0 else self.progress_at
        if self.readout.ack_due:
            self._send(DatagramKind.DATA, seq=self.next)

    def pump(self, wait: float = 0.01) -> None:
        """Send what may go, take what arrives within ``wait`` seconds, acknowledge it. When
        nothing has been heard for ``rto``, a payload-less datagram asks the board for its
        acknowledgement and credit (one may have been lost)."""
        self._transmit()
        now = time.monotonic()
        if not self._receive(wait) and now - max(self.heard_at, self.probed_at) > self.rto:
            self._send(DatagramKind.DATA, seq=self.next)
            self.probed_at = now
        self._transmit()

    # --- the session --------------------------------------------------------------------

    def _request(self, kind: DatagramKind) -> UdpStatus:
        self.last_status = None
        start = last = time.monotonic()
        self._send(kind)
        while self.last_status is None:
            now = time.monotonic()
            if now - start > self.timeout:
                raise LinkError(
                    f"{self.name}: no status within {self.timeout:g} s (is the board on, at "
                    "this address and port, and reachable: `ping` it?)"
                )
            if now - last > self.rto:
                self._send(kind)
                last = now
            self._receive(self.rto)
        status = self.last_status
        if status.version != UDP_VERSION:
            raise LinkError(
                f"{self.name}: board protocol version must be {UDP_VERSION}, not {status.version}"
            )
        return status

    def status(self) -> UdpStatus:
        """The board's status; the first call opens the session (``HELLO``)."""
        if not self.opened:
            status = self._request(DatagramKind.HELLO)
            self.opened = True
            return status
        return self._request(DatagramKind.STATUS)

    def send_record(self, record: bytes) -> None:
        self.out += record

    @property
    def unsent(self) -> int:
        """Input stream bytes queued and not yet acknowledged."""
        return len(self.out)

    def next_record(self, what: str = "readout") -> Record:
        while not self.records:
            self.pump()
            if time.monotonic() - self.heard_at > self.timeout:
                raise LinkError(f"{self.name}: no {what} within {self.timeout:g} s")
        return self.records.popleft()

    def configure(self, stream: bytes) -> UdpStatus:
        """Send a configuration stream; the board's verdict comes in the readout stream. Returns
        the status once committed; a rejected stream raises :class:`LinkError`."""
        before = self.status()
        if before.mode_name != "programmable":
            raise LinkError(
                f"{self.name}: a configuration stream needs a programmable engine, "
                f"not a {before.mode_name} one"
            )
        self.send_record(input_record(InputKind.CONFIG, stream))
        while True:
            record = self.next_record("configuration verdict")
            if record.kind == ReadoutRecordKind.CONFIG.value:
                break
        verdict = _unpack(ConfigVerdict, record.body)
        if verdict["rejected"]:
            raise LinkError(
                f"{self.name}: the board rejected the configuration stream "
                f"({len(stream)} bytes): wrong hardware fingerprint, length or CRC (was it "
                "made with `xpfilt configure --hw` for this bitstream's hardware.json?)"
            )
        return self.status()


class UdpBoardEngine:
    """A board behind a :class:`UdpLink` as a filter engine. :meth:`filter_batch` streams up
    to ``window`` documents ahead of their answers; :meth:`filter` sends one and waits (for
    :func:`xpfilt.engines.filter_batch`). With ``fallback`` the documents the board flags are
    answered in software (:class:`xpfilt.boards.host.SoftwareFallback`, ``self.fallback``)."""

    def __init__(
        self,
        link: UdpLink,
        queries: Sequence[Query],
        numbers_by_bit,
        width: int,
        _=0,
        *,
        fallback: bool = False,
    ):
        self.link = link
        self.queries = tuple(queries)
        self.width = width
        self._bits = readout_positions(numbers_by_bit, self.queries)
        self.fallback = (
            SoftwareFallback(self.queries, (p for _, p in self._bits)) if fallback else None
        )
        self.next_doc = 0  # the session's number of the next document sent
        self.next_answer = 0
        self.documents = self.bytes = 0

    def _answer(self) -> tuple[int, object]:
        record = self.link.next_record()
        while record.kind == ReadoutRecordKind.CONFIG.value:
            record = self.link.next_record()
        readout = decode_record(record, self.width)
        if readout.doc != self.next_answer:
            raise LinkError(
                f"{self.link.name}: readout of document {readout.doc} arrived for document "
                f"{self.next_answer}: the board and the host are out of step"
            )
        self.next_answer += 1
        return readout

    def _send(self, document: Document) -> None:
        self.link.send_record(input_record(InputKind.DOCUMENT, document.data))
        self.next_doc += 1
        self.documents += 1
        self.bytes += len(document.data)

    def filter(self, document: Union[Document, bytes]) -> frozenset[int]:
        if isinstance(document, (bytes, bytearray)):
            document = Document("<bytes>", bytes(document))
        document = utf8_document(document)
        self._send(document)
        return board_answer(document, self._answer(), self._bits, self.fallback)

    def filter_batch(
        self,
        documents: Iterable[Union[str, os.PathLike, Document]],
        *,
        window: int = 64,
        on_result: Callable[[DocumentResult], None] = lambda _: None,
    ) -> Iterator[DocumentResult]:
        """The results of ``documents`` in order (as :func:`xpfilt.engines.filter_batch`), up
        to ``window`` documents and four input buffers of bytes in flight."""
        numbers = [q.number for q in self.queries]
        status = self.link.last_status
        budget = 4 * (status.input_buffer if status else 65536)
        queue: deque = deque()  # DocumentResult, or (name, document number, document)
        answers: dict[int, object] = {}
        items = iter(documents)
        exhausted = False
        while True:
            while not exhausted and self.next_doc - self.next_answer < window:
                if self.link.unsent > budget:
                    break
                try:
                    item = next(items)
                except StopIteration:
                    exhausted = True
                    break
                name = item.name if isinstance(item, Document) else os.path.basename(item)
                try:
                    document = item if isinstance(item, Document) else Document.from_path(item)
                    document = utf8_document(document)
                except DocumentError as exc:
                    queue.append(DocumentResult(name, None, str(exc)))
                    continue
                except OSError as exc:
                    queue.append(
                        DocumentResult(name, None, f"{name}: cannot read: {exc.strerror or exc}")
                    )
                    continue
                queue.append((name, self.next_doc, document))
                self._send(document)
            while queue:
                head = queue[0]
                if isinstance(head, tuple):
                    if head[1] not in answers:
                        break
                    name, number, document = head
                    try:
                        positions = board_answer(
                            document, answers.pop(number), self._bits, self.fallback
                        )
                    except DocumentError as exc:  # flagged (no fallback), or malformed
                        result = DocumentResult(name, None, str(exc))
                    else:
                        result = DocumentResult(name, tuple(sorted(numbers[p] for p in positions)))
                else:
                    result = head
                queue.popleft()
                on_result(result)
                yield result
            if exhausted and not queue:
                return
            if self.next_answer < self.next_doc:
                readout = self._answer()
                answers[readout.doc] = readout
            else:
                self.link.pump(0)
