"""The host side of the board link (the protocol and its frame codec are in
:mod:`xpfilt.boards.protocol`).

* :class:`BoardLink`: one board over any pyserial transport (``serial.serial_for_url``:
  ``/dev/ttyUSB1``, ``socket://127.0.0.1:PORT`` for the simulated board): status, documents,
  readouts, configuration streams; link failures raise :class:`LinkError`;
* :class:`BoardDesign`: what ``xpfilt build`` wrote about the bitstream (``board.json`` and
  ``plan.json`` / ``hardware.json``), checked against what the board reports;
* :class:`BoardEngine`: a filter engine (:class:`xpfilt.engines.Engine`) answering from the
  board, so :func:`xpfilt.engines.filter_batch` and the TSV of ``xpfilt filter`` work unchanged;
  readout bits become query numbers by :func:`xpfilt.model.custom.readout_positions`, as for
  the models;
* :class:`SoftwareFallback`: the documents the board flags (it cannot answer them: malformed,
  too deep, a name too long, a value or an entity reference it cannot decide), answered by the
  fast engine instead, as ``xpfilt filter`` answers them, and counted per flag.
"""

from __future__ import annotations

import hashlib
import json
import time
from collections import Counter, deque
from dataclasses import dataclass
from pathlib import Path
from typing import Optional, Sequence, Union

from xpfilt.boards.protocol import (
    PROTOCOL_VERSION,
    BoardStatus,
    Command,
    Frame,
    FrameReader,
    LinkError,
    Mode,
    Response,
    decode_matches,
    decode_readout,
    encode_frame,
)
from xpfilt.compiler.custom import EngineMode, Plan
from xpfilt.compiler.programmable import Configuration, HardwareSpec, read_readout_map
from xpfilt.hwspec.contract import Errors
from xpfilt.hwspec.readout import DocumentReadout
from xpfilt.lang.xpath import Query, parse_query
from xpfilt.model.custom import EngineError, answer_positions, readout_positions
from xpfilt.software.events import Document, DocumentError, utf8_document

__all__ = [
    "BoardLink",
    "BoardDesign",
    "BoardEngine",
    "SoftwareFallback",
    "board_answer",
    "plan_identity",
    "DEFAULT_BAUD",
    "open_board_engine",
    "plan_queries",
    "compare_with_plan",
]

DEFAULT_BAUD = 115_200
#: How each kind of readout frame is decoded (serial bitmap or sparse positions).
_READOUT_DECODERS = {Response.READOUT.value: decode_readout, Response.MATCHES.value: decode_matches}


class BoardLink:
    """The protocol over ``transport`` (pyserial-like: ``write``, ``flush``, ``read(n)``
    returning after its own short timeout, ``close``). ``timeout``: seconds a response may take
    to start arriving after the request was sent."""

    def __init__(self, transport, *, timeout: float = 10.0, name: str = "board"):
        self.transport = transport
        self.timeout = timeout
        self.name = name
        self.reader = FrameReader()
        self._frames: deque[Frame] = deque()
        self.stale_readouts = 0  # readout frames discarded while waiting for a status

    @classmethod
    def open(cls, url: str, *, baud: int = DEFAULT_BAUD, timeout: float = 10.0) -> "BoardLink":
        """``serial.serial_for_url(url, baud)``: a serial device or ``socket://HOST:PORT``."""
        import serial

        try:
            transport = serial.serial_for_url(url, baudrate=baud, timeout=0.05)
        except (serial.SerialException, ValueError) as exc:
            raise LinkError(f"cannot open {url}: {exc}") from None
        return cls(transport, timeout=timeout, name=url)

    def close(self) -> None:
        try:
            self.transport.close()
        except OSError:
            pass

    def __enter__(self) -> "BoardLink":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def _write(self, raw: bytes) -> None:
        try:
            self.transport.write(raw)
            self.transport.flush()
        except OSError as exc:
            raise LinkError(f"{self.name}: cannot send: {exc}") from None

    def _frame(self, what: str) -> Frame:
        """The next frame; LinkError when none starts arriving within ``timeout`` of silence."""
        deadline = time.monotonic() + self.timeout
        while not self._frames:
            try:
                chunk = self.transport.read(4096)
            except OSError as exc:
                raise LinkError(f"{self.name}: cannot receive: {exc}") from None
            if chunk:
                self._frames.extend(self.reader.feed(chunk))
                deadline = time.monotonic() + self.timeout
            elif time.monotonic() > deadline:
                raise LinkError(
                    f"{self.name}: no {what} within {self.timeout:g} s (is the "
                    "bitstream loaded, the port and baud rate right?)"
                )
        return self._frames.popleft()

    def status(self) -> BoardStatus:
        """Ask for a status frame; readout frames that arrive first are stale (an earlier
        session's) and dropped."""
        self._write(encode_frame(Command.STATUS.value))
        while True:
            frame = self._frame("status frame")
            if frame.kind == Response.STATUS.value:
                status = BoardStatus.decode(frame.body)
                if status.version != PROTOCOL_VERSION:
                    raise LinkError(
                        f"{self.name}: board protocol version must be "
                        f"{PROTOCOL_VERSION}, not {status.version}"
                    )
                return status
            if frame.kind not in _READOUT_DECODERS:
                raise LinkError(
                    f"{self.name}: frame kind must be 'S', 'R' or 'M', not {frame.kind:#04x}"
                )
            self.stale_readouts += 1

    def send_document(self, document: bytes) -> None:
        if not document:
            raise ValueError("document must have at least one byte, not none")
        self._write(encode_frame(Command.DOCUMENT.value, document))

    def read_readout(self, width: int) -> DocumentReadout:
        frame = self._frame("readout frame")
        if frame.kind not in _READOUT_DECODERS:
            raise LinkError(
                f"{self.name}: expected a readout frame ('R' or 'M'), not kind {frame.kind:#04x}"
            )
        return _READOUT_DECODERS[frame.kind](frame.body, width)

    def configure(self, stream: bytes, *, poll: float = 0.02) -> BoardStatus:
        """Send a configuration stream and wait until the board has committed it (returns the
        status) or refused it (:class:`LinkError`)."""
        before = self.status()
        if before.mode != Mode.PROGRAMMABLE.value:
            raise LinkError(
                f"{self.name}: a configuration stream needs a programmable engine, "
                f"not a {before.mode_name} one"
            )
        self._write(encode_frame(Command.CONFIG.value, stream))
        deadline = time.monotonic() + self.timeout
        while True:
            status = self.status()
            if status.generation != before.generation and status.loaded and not status.pending:
                return status
            if status.rejected and not status.pending:
                raise LinkError(
                    f"{self.name}: the board rejected the configuration stream "
                    f"({len(stream)} bytes): wrong hardware fingerprint, length or "
                    "CRC (was it made with `xpfilt configure --hw` for this "
                    "bitstream's hardware.json?)"
                )
            if time.monotonic() > deadline:
                raise LinkError(
                    f"{self.name}: the configuration was neither committed nor "
                    f"rejected within {self.timeout:g} s ({status})"
                )
            time.sleep(poll)


def plan_identity(plan: Plan) -> int:
    """The 32-bit design identity a custom board reports: a hash of the plan (without stats)."""
    fields = plan.to_dict()
    fields.pop("stats", None)
    text = json.dumps(fields, sort_keys=True).encode()
    return int.from_bytes(hashlib.sha256(text).digest()[:4], "little")


@dataclass(frozen=True)
class BoardDesign:
    """What the host knows about a bitstream, from the directory ``xpfilt build`` wrote:
    ``board.json`` (board, mode, readout width, identity, baud) and ``plan.json`` (custom) or
    ``hardware.json`` (programmable)."""

    directory: Path
    board: str
    mode: str
    width: int
    identity: int
    baud: int
    plan: Optional[Plan] = None
    spec: Optional[HardwareSpec] = None

    @classmethod
    def load(cls, directory: Union[str, Path]) -> "BoardDesign":
        directory = Path(directory)
        try:
            info = json.loads((directory / "board.json").read_text())
            plan = spec = None
            if info["mode"] == EngineMode.CUSTOM:
                plan = Plan.from_json((directory / "plan.json").read_text())
            else:
                spec = HardwareSpec.load(directory)
            return cls(
                directory,
                info["board"],
                info["mode"],
                info["width"],
                int(info["identity"], 16),
                info["baud"],
                plan,
                spec,
            )
        except (OSError, ValueError, KeyError, TypeError) as exc:
            raise LinkError(
                f"{directory} must be a directory written by `xpfilt build` "
                f"(board.json, plan.json or hardware.json), not unreadable: "
                f"{exc}"
            ) from None

    def check(self, status: BoardStatus, where: str) -> None:
        """LinkError unless the board at ``where`` runs this design."""
        if (status.mode_name, status.width, status.identity) != (
            self.mode,
            self.width,
            self.identity,
        ):
            raise LinkError(
                f"the board at {where} must run the design of {self.directory} ({self.mode}, "
                f"{self.width}-bit readout, identity {self.identity:08x}), not "
                f"{status.mode_name}, {status.width}-bit readout, identity "
                f"{status.identity:08x}: load that bitstream or pass its --build directory"
            )


class SoftwareFallback:
    """The documents a board cannot answer, answered in software: the fast engine (what
    ``xpfilt filter`` runs) over the board's ``queries``, its answers kept to the query
    ``positions`` the board answers (a programmable board may hold fewer than were asked for),
    so that the board and its host together answer every document as ``xpfilt filter`` does
    (a malformed document gets the software's error). Those are the documents the board flags,
    and those the board answers that the software's compiled scanner does not accept (the
    front end checks well-formedness less strictly than expat: a repeated attribute, ``]]>``
    in text or ``&#0;`` pass it). Counts the documents, each flag that sent one, and those the
    host's check sent."""

    def __init__(self, queries: Sequence[Query], positions):
        from xpfilt.engines import make_engine

        self.engine = make_engine("fast", queries)
        self.positions = frozenset(positions)
        self.documents = 0
        self.flags: Counter = Counter()
        self.unchecked = 0  # answered by the board, not accepted by the host's check
        self.malformed = 0  # of the documents answered here, those the software refused too

    def answer(self, document: Document, error: Optional[EngineError]) -> frozenset[int]:
        """The positions of the queries matching ``document``, which the board flagged with
        ``error`` (None: the host's check sent it); a
        :class:`xpfilt.software.events.DocumentError` if the software cannot answer it
        either."""
        self.documents += 1
        if error is None:
            self.unchecked += 1
        else:
            self.flags.update(flag for flag in Errors if flag in error.errors)
        try:
            return frozenset(self.engine.filter(document)) & self.positions
        except DocumentError:
            self.malformed += 1
            raise

    def accepts(self, document: Document) -> bool:
        """Whether the software's compiled scanner accepts ``document`` as well-formed (it
        decides like expat; False also when it leaves the document to expat, or is not
        available), so that the board's answer stands."""
        return self.engine.compiled_verdicts([document.data])[0]

    def summary(self) -> str:
        """How many documents were answered in software, and why."""
        why = [
            f"{flag.name.lower().replace('_', ' ')} {self.flags[flag]}"
            for flag in Errors
            if self.flags[flag]
        ]
        reasons = [f"flagged by the board: {', '.join(why)}"] if why else []
        if self.unchecked:
            reasons.append(f"not accepted by the host's well-formedness check {self.unchecked}")
        s = "" if self.documents == 1 else "s"
        refused = f", {self.malformed} of them malformed" if self.malformed else ""
        return f"{self.documents} document{s} answered in software{refused}" + (
            f" ({'; '.join(reasons)})" if reasons else ""
        )


def board_answer(
    document: Document, readout: DocumentReadout, bits, fallback: Optional[SoftwareFallback]
) -> frozenset[int]:
    """The query positions whose answer holds in a document's ``readout``. With ``fallback``,
    a flagged document, or one its check does not accept, is answered there; without, a
    flagged document raises :class:`xpfilt.model.custom.EngineError`."""
    try:
        positions = answer_positions(document.name, readout, bits)
    except EngineError as exc:
        if fallback is None:
            raise
        return fallback.answer(document, exc)
    if fallback is not None and not fallback.accepts(document):
        return fallback.answer(document, None)
    return positions


class BoardEngine:
    """A filter engine backed by a board: ``filter(document)`` sends it, waits for its readout
    and returns the 0-based positions of the matching ``queries``. ``numbers_by_bit``:
    (readout bit, query number) pairs -- the plan's readout order or the configuration's
    readout map. A flagged document raises :class:`xpfilt.model.custom.EngineError`, or with
    ``fallback`` is answered in software (:class:`SoftwareFallback`, ``self.fallback``); a
    link failure raises :class:`LinkError` (which ends the batch)."""

    def __init__(
        self,
        link: BoardLink,
        queries: Sequence[Query],
        numbers_by_bit,
        width: int,
        next_doc: int = 0,
        *,
        fallback: bool = False,
    ):
        self.link = link
        self.queries = tuple(queries)
        self.width = width
        self._bits = readout_positions(numbers_by_bit, self.queries)
        self.next_doc = next_doc & 0xFFFF
        self.fallback = (
            SoftwareFallback(self.queries, (p for _, p in self._bits)) if fallback else None
        )

    def filter(self, document: Union[Document, bytes]) -> frozenset[int]:
        if isinstance(document, (bytes, bytearray)):
            document = Document("<bytes>", bytes(document))
        document = utf8_document(document)
        self.link.send_document(document.data)
        readout = self.link.read_readout(self.width)
        if readout.doc != self.next_doc:
            raise LinkError(
                f"{self.link.name}: readout of document number {readout.doc} "
                f"arrived for document number {self.next_doc} ({document.name}): "
                "the board and the host are out of step"
            )
        self.next_doc = (self.next_doc + 1) & 0xFFFF
        return board_answer(document, readout, self._bits, self.fallback)


def plan_queries(plan: Plan) -> list[Query]:
    """The queries of a plan, numbered as in its query file."""
    return [parse_query(q.text, q.number) for cluster in plan.clusters for q in cluster.queries]


def compare_with_plan(plan: Plan, queries: Sequence[Query]) -> list[str]:
    """Why ``queries`` (from a query file) differ from the ones ``plan`` was built from:
    one message per query that differs (empty when they agree)."""
    built = {q.number: q.text for cluster in plan.clusters for q in cluster.queries}
    given = {q.number: str(q) for q in queries}
    problems = [
        f"query {n} is {given[n]!r} in the query file, {built[n]!r} on the board"
        for n in sorted(built)
        if n in given and given[n] != built[n]
    ]
    problems += [
        f"query {n} ({built[n]}) is on the board, not in the query file"
        for n in sorted(built)
        if n not in given
    ]
    problems += [
        f"query {n} ({given[n]}) is in the query file, not on the board"
        for n in sorted(given)
        if n not in built
    ]
    return problems


def configuration_pairs(configuration: Configuration) -> list[tuple[int, int]]:
    return [(where, number) for number, where in configuration.answers.items()]


def open_board_engine(
    link: BoardLink,
    design: Optional[BoardDesign],
    *,
    queries: Optional[Sequence[Query]] = None,
    config_path: Optional[Path] = None,
    warn=lambda message: None,
    engine_class=None,
    fallback: bool = False,
) -> BoardEngine:
    """Greet the board (status), check it runs ``design`` and return the engine to filter with.

    Custom: readout bits map to queries by ``design.plan``; ``queries`` (from a query file)
    must be the plan's. Programmable: the board is configured first -- with ``queries`` placed
    on ``design.spec`` (the ones that do not fit go to ``warn``) or with the stream at
    ``config_path`` and its ``.map.tsv``. ``link``: a :class:`BoardLink` or a
    :class:`xpfilt.boards.udp_host.UdpLink`; ``engine_class``: the engine made around it
    (default :class:`BoardEngine`); ``fallback``: it answers the documents the board flags
    in software (:class:`SoftwareFallback`)."""
    engine_class = engine_class or BoardEngine
    status = link.status()
    if design is not None:
        design.check(status, link.name)
    if status.mode == Mode.CUSTOM.value:
        if design is None or design.plan is None:
            raise LinkError(
                f"{link.name} runs a custom engine: --build DIR (the `xpfilt build` "
                "directory of its bitstream) must say which query each readout "
                "bit is"
            )
        if config_path is not None:
            raise LinkError(f"{link.name} runs a custom engine: --config needs a programmable one")
        if queries is not None:
            problems = compare_with_plan(design.plan, queries)
            if problems:
                more = f" (and {len(problems) - 5} more)" if len(problems) > 5 else ""
                raise LinkError(
                    f"the board's plan ({design.directory}/plan.json) must be "
                    f"built from the query file, not differ: "
                    f"{'; '.join(problems[:5])}{more}"
                )
        plan = design.plan
        return engine_class(
            link,
            plan_queries(plan),
            enumerate(plan.query_numbers),
            status.width,
            status.documents,
            fallback=fallback,
        )
    if status.mode != Mode.PROGRAMMABLE.value:
        raise LinkError(
            f"{link.name}: engine mode must be custom or programmable, not {status.mode}"
        )
    if config_path is not None:
        stream = Path(config_path).read_bytes()
        try:
            pairs = read_readout_map(config_path)
        except ValueError as exc:
            raise LinkError(str(exc)) from None
        if queries is None:
            queries = [Query((), number) for _, number in sorted(pairs, key=lambda p: p[1])]
    elif queries is not None:
        if design is None or design.spec is None:
            raise LinkError(
                f"{link.name} runs a programmable engine: configuring --queries "
                "needs --build DIR (its hardware.json)"
            )
        from xpfilt.compiler.programmable import configure

        configuration = configure(queries, design.spec)
        for _, reason in configuration.rejected:
            warn(f"skipped: {reason}")
        stream = configuration.stream()
        pairs = configuration_pairs(configuration)
    else:
        raise LinkError(
            f"{link.name} runs a programmable engine: give --queries (configured "
            "now) or --config CONFIG.bin (from `xpfilt configure`)"
        )
    status = link.configure(stream)
    return engine_class(link, queries, pairs, status.width, status.documents, fallback=fallback)
