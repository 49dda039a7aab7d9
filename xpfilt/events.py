"""XML documents as streams of open/close/text events, parsed by expat (never by hand).

Element names are reported exactly as written (``prefix:local`` stays as is): the hardware's tag
decoder sees the raw bytes too, and the query fragment matches names literally. Comments,
processing instructions, the XML declaration, DOCTYPE (with its internal subset), CDATA sections,
entity references and self-closing tags are all handled by expat; a self-closing tag yields an
OPEN immediately followed by a CLOSE. TEXT events carry one whole XPath text node (adjacent
character data and CDATA merged; comments and processing instructions split text nodes).
"""

from __future__ import annotations

import enum
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable, Iterator, NamedTuple, Union
from xml.parsers import expat

__all__ = [
    "EventKind", "Event", "Document", "DocumentError", "MalformedDocumentError", "iter_events",
    "parse_events",
    "load_documents", "document_depth",
]

_CHUNK = 1 << 16


class EventKind(enum.IntEnum):
    OPEN = 0
    CLOSE = 1
    TEXT = 2


class Event(NamedTuple):
    """One parse event. ``value``: the attribute dict (OPEN), the text (TEXT) or None (CLOSE)."""
    kind: EventKind
    name: str
    value: Union[dict, str, None] = None


@dataclass(frozen=True)
class Document:
    """A document to filter: a display name (the file name) and its raw bytes."""
    name: str
    data: bytes

    @classmethod
    def from_path(cls, path: Union[str, os.PathLike]) -> "Document":
        path = Path(path)
        return cls(path.name, path.read_bytes())


class DocumentError(ValueError):
    """A document that could not be answered; the message names the document and why."""


class MalformedDocumentError(DocumentError):
    """A document that is not well-formed XML. ``line`` and ``column`` are 1-based."""

    def __init__(self, name: str, line: int, column: int, reason: str):
        self.name, self.line, self.column, self.reason = name, line, column, reason
        super().__init__(f"{name}:{line}:{column}: malformed XML: {reason}")


def iter_events(document: Union[Document, bytes]) -> Iterator[Event]:
    """Stream the events of ``document``; raise :class:`MalformedDocumentError` where it breaks.

    Events before the error have already been yielded when it is raised.
    """
    if isinstance(document, (bytes, bytearray)):
        document = Document("<bytes>", bytes(document))
    pending: list[Event] = []
    text: list[str] = []
    depth = 0

    def flush_text() -> None:
        if text:
            if depth:
                pending.append(Event(EventKind.TEXT, "", "".join(text)))
            text.clear()

    def start(name: str, attrs: dict) -> None:
        nonlocal depth
        flush_text()
        depth += 1
        pending.append(Event(EventKind.OPEN, name, attrs))

    def end(name: str) -> None:
        nonlocal depth
        flush_text()
        depth -= 1
        pending.append(Event(EventKind.CLOSE, name))

    parser = expat.ParserCreate()
    parser.buffer_text = True
    parser.StartElementHandler = start
    parser.EndElementHandler = end
    parser.CharacterDataHandler = text.append
    parser.CommentHandler = lambda _data: flush_text()
    parser.ProcessingInstructionHandler = lambda _target, _data: flush_text()

    data = document.data
    for offset in range(0, max(len(data), 1), _CHUNK):
        chunk = data[offset:offset + _CHUNK]
        final = offset + _CHUNK >= len(data)
        try:
            parser.Parse(chunk, final)
        except expat.ExpatError as exc:
            yield from pending
            raise MalformedDocumentError(
                document.name, exc.lineno, exc.offset + 1, expat.ErrorString(exc.code)) from None
        yield from pending
        pending.clear()


def parse_events(document: Union[Document, bytes]) -> list[Event]:
    """All events of a document as a list (raises like :func:`iter_events`)."""
    return list(iter_events(document))


def load_documents(paths: Iterable[Union[str, os.PathLike]]) -> list[Path]:
    """Expand arguments into document paths: files as given, directories as their sorted ``*.xml``.

    Sorting is by file name in code-point order, the order of ``shared/data/expected``.
    """
    out: list[Path] = []
    for p in map(Path, paths):
        if p.is_dir():
            out.extend(sorted(p.glob("*.xml"), key=lambda q: q.name))
        else:
            out.append(p)
    return out


def document_depth(events: Iterable[Event]) -> int:
    """The maximum element nesting depth (the root element is depth 1)."""
    depth = best = 0
    for event in events:
        if event.kind is EventKind.OPEN:
            depth += 1
            best = max(best, depth)
        elif event.kind is EventKind.CLOSE:
            depth -= 1
    return best

