"""XML documents as streams of open/close/text events, parsed by expat (never by hand).

Element names are reported exactly as written (``prefix:local`` stays as is): the hardware's tag
decoder sees the raw bytes too, and the query fragment matches names literally. Comments,
processing instructions, the XML declaration, DOCTYPE (with its internal subset), CDATA sections,
entity references and self-closing tags are all handled by expat; a self-closing tag yields an
OPEN immediately followed by a CLOSE. TEXT events carry one whole XPath text node (adjacent
character data and CDATA merged; comments and processing instructions split text nodes).

Encodings: every engine (and the board link) sees UTF-8 only. :func:`utf8_document` transcodes a
document whose XML declaration names another encoding, or whose byte order mark or first bytes
say UTF-16 or UTF-32, and drops a UTF-8 byte order mark; it is the one place this happens.
"""

from __future__ import annotations

import codecs
import enum
import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable, Iterator, NamedTuple, Union
from xml.parsers import expat

__all__ = [
    "EventKind",
    "Event",
    "Document",
    "DocumentError",
    "MalformedDocumentError",
    "iter_events",
    "parse_events",
    "utf8_document",
    "load_documents",
    "document_depth",
]

_CHUNK = 1 << 16
_READ = 1 << 16  # Document.from_path reads this much at a time (under the mmap threshold)


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
        # not pathlib, not even open(): a file object costs more than reading a NITF document
        # (3,867 files read and kept: open() 24 ms, os.read 15-17 ms), and a batch run reads
        # thousands
        fd = os.open(path, os.O_RDONLY)
        try:
            chunks = []
            while True:
                chunk = os.read(fd, _READ)
                if not chunk:
                    break
                chunks.append(chunk)
        finally:
            os.close(fd)
        return cls(os.path.basename(path), chunks[0] if len(chunks) == 1 else b"".join(chunks))


class DocumentError(ValueError):
    """A document that could not be answered; the message names the document and why."""


class MalformedDocumentError(DocumentError):
    """A document that is not well-formed XML. ``line`` and ``column`` are 1-based."""

    def __init__(self, name: str, line: int, column: int, reason: str):
        self.name, self.line, self.column, self.reason = name, line, column, reason
        super().__init__(f"{name}:{line}:{column}: malformed XML: {reason}")


#: Byte order marks, longest first (a UTF-32-LE mark starts like a UTF-16-LE one).
_BOMS = (
    (codecs.BOM_UTF32_LE, "utf-32-le"),
    (codecs.BOM_UTF32_BE, "utf-32-be"),
    (codecs.BOM_UTF8, "utf-8"),
    (codecs.BOM_UTF16_LE, "utf-16-le"),
    (codecs.BOM_UTF16_BE, "utf-16-be"),
)
_DECLARED = re.compile(r"""<\?xml[ \t\r\n][^>]*?encoding[ \t\r\n]*=[ \t\r\n]*(["'])(.*?)\1""")
_DECLARED_BYTES = re.compile(_DECLARED.pattern.encode())
#: Python codecs that decode bytes to text but are no character encoding a document declares.
_NOT_DOCUMENT_ENCODINGS = frozenset(
    {"unicode-escape", "raw-unicode-escape", "undefined", "idna", "punycode", "charmap"}
)


def _unicode_family(data: bytes) -> tuple[str, int]:
    """The codec the first bytes of ``data`` imply ("" if ASCII-compatible) and the BOM length."""
    for bom, codec in _BOMS:
        if data.startswith(bom):
            return ("" if codec == "utf-8" else codec), len(bom)
    if data[:3] == b"\0\0\0" or (data[:1] != b"\0" and data[1:4] == b"\0\0\0"):
        return ("utf-32-be" if data[:1] == b"\0" else "utf-32-le"), 0
    if data[:1] == b"\0" or data[1:2] == b"\0":
        return ("utf-16-be" if data[:1] == b"\0" else "utf-16-le"), 0
    return "", 0


def utf8_document(document: Document) -> Document:
    """``document`` as UTF-8, the only encoding the engines take (see the module docstring).

    Returns ``document`` itself when it already is UTF-8 without a byte order mark. Raises
    :class:`MalformedDocumentError` for an empty document and for bytes that are not in the
    encoding the document declares, :class:`DocumentError` for an unknown or non-text encoding.
    """
    data = document.data
    if not data:
        raise MalformedDocumentError(document.name, 1, 1, "no element found")
    codec, bom = _unicode_family(data)
    if len(data) == bom:  # a byte order mark and nothing after it
        raise MalformedDocumentError(document.name, 1, 1, "no element found")
    if codec:
        try:
            text = data[bom:].decode(codec)
        except UnicodeDecodeError as exc:
            raise _undecodable(document, exc.start + bom, codec) from None
    else:
        declared = _DECLARED_BYTES.match(data, bom)  # match() anchors at ``bom``
        name = declared.group(2).decode("ascii", "replace") if declared else "UTF-8"
        codec = ""
        if re.fullmatch(r"[A-Za-z][A-Za-z0-9._-]*", name):  # an XML EncName, checked first
            try:
                codec = codecs.lookup(name).name
            except LookupError:
                pass
        if codec in _NOT_DOCUMENT_ENCODINGS:
            codec = ""
        if codec == "utf-8":
            return Document(document.name, data[bom:]) if bom else document
        if codec.startswith(("utf-16", "utf-32")):
            raise MalformedDocumentError(
                document.name, 1, 1, f"the document declares {name!r} but is not encoded in it"
            )
        try:
            if not codec:
                raise LookupError(name)
            text = data[bom:].decode(codec)
        except LookupError:
            raise DocumentError(
                f"{document.name}: the declared encoding must be a known text "
                f"encoding, not {name!r}"
            ) from None
        except UnicodeDecodeError as exc:
            raise _undecodable(document, exc.start + bom, name) from None
    declared = _DECLARED.match(text)
    if declared:
        text = text[: declared.start(2)] + "UTF-8" + text[declared.end(2) :]
    return Document(document.name, text.encode("utf-8"))


def _undecodable(document: Document, offset: int, encoding: str) -> MalformedDocumentError:
    data = document.data
    line_start = data.rfind(b"\n", 0, offset) + 1
    return MalformedDocumentError(
        document.name,
        data.count(b"\n", 0, offset) + 1,
        offset - line_start + 1,
        f"the bytes are not valid {encoding}",
    )


def iter_events(document: Union[Document, bytes]) -> Iterator[Event]:
    """Stream the events of ``document``; raise :class:`MalformedDocumentError` where it breaks.

    Events before the error have already been yielded when it is raised.
    """
    if isinstance(document, (bytes, bytearray)):
        document = Document("<bytes>", bytes(document))
    document = utf8_document(document)
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
        chunk = data[offset : offset + _CHUNK]
        final = offset + _CHUNK >= len(data)
        try:
            parser.Parse(chunk, final)
        except expat.ExpatError as exc:
            yield from pending
            raise MalformedDocumentError(
                document.name, exc.lineno, exc.offset + 1, expat.ErrorString(exc.code)
            ) from None
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
