"""Run one document through one engine and compare engines, classifying every difference.

An engine's answer to a document is one of four *outcomes*: an answer (the matching query
numbers), a flag (the engines' documented per-document error, :class:`xpfilt.software.events.DocumentError`
and its subclasses), a crash (any other exception) or a hang (no answer within the time limit).

Two engines that both answer or both flag agree. Otherwise the difference is classified against
the differences the project documents (:data:`DOCUMENTED`, each naming where it is written
down); a difference that matches none of them is *undocumented* and counts as a failure.
"""

from __future__ import annotations

import re
import signal
import threading
from dataclasses import dataclass
from typing import Optional

from xpfilt.hwspec.contract import Errors, name_hash
from xpfilt.software.events import (
    DocumentError,
    MalformedDocumentError,
    document_depth,
    parse_events,
)

__all__ = ["Outcome", "run_engine", "Hang", "classify", "DOCUMENTED", "signature"]


class Hang(Exception):
    """An engine call ran past the time limit."""


@dataclass(frozen=True)
class Outcome:
    kind: str  # "answer" | "flag" | "crash" | "hang"
    answer: Optional[frozenset] = None  # query numbers, for "answer"
    error: str = ""  # the message, for the others
    exc_type: str = ""
    flags: int = 0  # hardware engines' error flags, for "flag"
    reason: str = ""  # a parser's reason, for "flag" (when known)
    offset: int = -1  # byte offset of a parser error (when known)

    def short(self) -> str:
        if self.kind == "answer":
            return "answers " + (" ".join(map(str, sorted(self.answer))) or "(no match)")
        if self.kind == "flag":
            return f"flags: {self.error}"
        return f"{self.kind}: {self.exc_type}: {self.error}"


def _on_alarm(signum, frame):
    raise Hang()


class _Spy:
    """Wraps an engine: remembers the DocumentError its ``filter`` raised (for the flags and
    the parser's position), so :func:`run_engine` can go through the CLI's own batch loop."""

    def __init__(self, engine):
        self.engine, self.queries, self.error = engine, engine.queries, None
        if hasattr(engine, "filter_ordered"):  # the batch loop prefers it: keep it so
            self.filter_ordered = self._ordered

    def filter(self, document):
        return self._watched(self.engine.filter, document)

    def _ordered(self, document):
        return self._watched(self.engine.filter_ordered, document)

    def _watched(self, method, document):
        try:
            return method(document)
        except DocumentError as exc:
            self.error = (exc, document.data)
            raise


def run_engine(engine, document, timeout: float = 10.0) -> Outcome:
    """What ``xpfilt filter`` answers for ``document`` with ``engine`` (through
    :func:`xpfilt.engines.filter_batch`, encoding policy included), as an :class:`Outcome`.
    ``timeout`` (seconds) applies in the main thread only."""
    from xpfilt.engines import filter_batch

    spy = _Spy(engine)
    use_alarm = timeout and threading.current_thread() is threading.main_thread()
    if use_alarm:
        old = signal.signal(signal.SIGALRM, _on_alarm)
        signal.setitimer(signal.ITIMER_REAL, timeout)
    try:
        result = next(iter(filter_batch(spy, [document])))
    except Hang:
        return Outcome("hang", error=f"no answer within {timeout:g} s", exc_type="Hang")
    except Exception as exc:  # noqa: BLE001 -- any other exception is what we count
        return Outcome("crash", error=str(exc)[:300], exc_type=type(exc).__name__)
    finally:
        if use_alarm:
            signal.setitimer(signal.ITIMER_REAL, 0)
            signal.signal(signal.SIGALRM, old)
    if result.ok:
        return Outcome("answer", answer=frozenset(result.matches))
    flags, reason, offset, exc_type = 0, "", -1, "DocumentError"
    if spy.error is not None:
        exc, data = spy.error
        exc_type = type(exc).__name__
        flags = int(getattr(exc, "errors", 0))
        reason = getattr(exc, "reason", "")
        if isinstance(exc, MalformedDocumentError):
            offset = _offset(data, exc)
    else:
        m = re.search(r"malformed XML: (.*)", result.error)
        reason = m.group(1) if m else result.error
    return Outcome(
        "flag", error=result.error, exc_type=exc_type, flags=flags, reason=reason, offset=offset
    )


def _offset(data: bytes, exc: MalformedDocumentError) -> int:
    """Byte offset of a parser error from its 1-based line and column (column in bytes)."""
    line_start = 0
    breaks = [m.end() for m in re.finditer(rb"\r\n|\r|\n", data)]  # expat's line ends
    if 1 < exc.line <= len(breaks) + 1:
        line_start = breaks[exc.line - 2]
    # expat counts columns in characters: walk them in UTF-8 (a bad byte is one character)
    line = data[line_start : line_start + 1_000_000]
    text = line.decode("utf-8", "surrogateescape")[: max(exc.column - 1, 0)]
    return min(len(data), line_start + len(text.encode("utf-8", "surrogateescape")))


_DIGITS = re.compile(r"\d+")
#: An "&" that begins no predefined entity's and no character reference: the hardware flags
#: ``entity`` for one in content or an attribute value.
_UNDECIDED_REFERENCE = re.compile(rb"&(?!(?:lt|gt|amp|apos|quot);|#)")
_QUOTED = re.compile(r"'[^']*'|\"[^\"]*\"")


def signature(text: str) -> str:
    """A message with numbers and quoted parts blanked, so one class collects its cases."""
    text = _QUOTED.sub("'…'", text)
    text = _DIGITS.sub("N", text)
    return text[:90]


#: Differences the project documents: class -> where it is written down.
DOCUMENTED = {
    "hardware: depth limit": "hdl/frontend.py (depth_overflow), README (--max-depth)",
    "hardware: name length limit": "hdl/frontend.py (name_too_long)",
    "hardware: UTF-8 byte order mark is malformed": "hdl/frontend.py (Not checked ...)",
    "hardware: an entity reference it cannot decide is flagged (entity)": "hdl/frontend.py (entity), docs/boards.md (xpfilt host answers it in software)",
    "hardware: character references and entity declarations not checked": "hdl/frontend.py (Not checked ...)",
    "hardware: duplicate attributes not checked": "hdl/frontend.py (Not checked ...)",
    "hardware: ']]>' in text not checked": "hdl/frontend.py (Not checked ...)",
    "hardware: control characters and invalid UTF-8 not checked": "hdl/frontend.py (Not checked ...)",
    "hardware: processing instruction position and target not checked": "hdl/frontend.py (Not checked ...)",
    "hardware: internal subset grammar not checked": "hdl/frontend.py (Not checked ...)",
    "hardware: non-ASCII name characters not validated": "hdl/frontend.py (NAME_START: bytes >= 0x80, not validated further)",
    "hardware: repeated DOCTYPE not checked": "hdl/frontend.py (Not checked ...)",
    "hardware: DOCTYPE name not checked": "docs/correctness.md (Documented differences between the engines), hdl/frontend.py (Not checked ...)",
    "hardware: unknown end-tag name with a colliding hash": "hdl/frontend.py (Not checked ...)",
    "lxml: namespaces (the reference matches names as written)": "docs/correctness.md (Documented differences between the engines), xpfilt/software/events.py",
    **{
        f"lxml: {what}": "docs/correctness.md (Documented differences between the engines)"
        for what in (
            "XML versions other than 1.x refused",
            "entity expansion limits (libxml2's are lower than expat's)",
            "nesting deeper than 2,048 levels refused (libxml2's limit)",
            "encoding names only Python's codecs know (UTF, U8) refused",
            "XML 1.0 fifth-edition name characters accepted",
            "entity expansion differs from expat's",
            "external and parameter entities not loaded (a reference fails)",
            "an empty CDATA section is an empty text node",
        )
    },
}


def _has(document: bytes, *needles: bytes) -> bool:
    return any(n in document for n in needles)


def _declared_encoding(data: bytes) -> str:
    m = re.match(rb"\s*<\?xml[^>]*encoding\s*=\s*[\"']([^\"']*)[\"']", data)
    return m.group(1).decode("ascii", "replace").lower() if m else ""


def _not_utf8(data: bytes) -> bool:
    enc = _declared_encoding(data)
    return (
        data[:2] in (b"\xff\xfe", b"\xfe\xff")
        or data[:4] == b"\x00\x00\xfe\xff"
        or (enc not in ("", "utf-8", "utf8"))
    )


def _window(data: bytes, offset: int, before: int = 2, after: int = 3) -> bytes:
    if offset < 0:
        return b""
    return data[max(0, offset - before) : offset + after]


def _in_prolog_subset(data: bytes, offset: int) -> bool:
    start = data.find(b"<!DOCTYPE")
    return 0 <= start < offset and b"[" in data[start:offset]


def _in_pi(data: bytes, offset: int) -> bool:
    """Is ``offset`` inside a processing instruction (after ``<?``, before its ``?>``)?"""
    start = data.rfind(b"<?", 0, offset + 1)
    return (
        start >= 0
        and data.find(b"?>", start + 2) in (-1,) + tuple(range(offset - 1, len(data)))
        and b"?>" not in data[start + 2 : offset]
    )


def _longest_name(data: bytes) -> int:
    names = re.findall(rb"</?([^\s/>!?=\"'<]+)", data)
    return max((len(n) for n in names), default=0)


def _colliding_end_tag(data: bytes) -> bool:
    """An end tag whose name differs from the open element's but has the same hardware hash."""
    stack = []
    for m in re.finditer(rb"<(/?)([^\s/>!?=\"'<]+)[^>]*?(/?)>", data):
        close, name, empty = m.groups()
        if close:
            if stack:
                top = stack.pop()
                if top != name and name_hash(top) == name_hash(name):
                    return True
        elif not empty:
            stack.append(name)
    return False


def classify(
    engine: str, data: bytes, ref: Outcome, other: Outcome, *, max_depth: int = 0, max_name: int = 0
) -> tuple[bool, str]:
    """(documented, class) of a difference between the reference and ``engine`` (both answered
    differently, or exactly one flagged)."""
    hardware = engine != "lxml"
    if engine == "lxml":
        if ref.kind == "answer" and other.kind == "flag":
            if re.search(r"[Nn]amespace|xmlns|QName", other.error):
                return True, "lxml: namespaces (the reference matches names as written)"
            version = re.match(rb"\s*<\?xml\s+version\s*=\s*[\"']([^\"']*)", data)
            if version and not re.fullmatch(rb"1\.[0-9]+", version.group(1)):
                return True, "lxml: XML versions other than 1.x refused"
            if "amplification" in other.error:
                return True, "lxml: entity expansion limits (libxml2's are lower than expat's)"
            if "not defined" in other.error and _has(data, b"SYSTEM", b"PUBLIC", b"<!ENTITY %"):
                return True, "lxml: external and parameter entities not loaded (a reference fails)"
            if "Excessive depth" in other.error:
                return True, "lxml: nesting deeper than 2,048 levels refused (libxml2's limit)"
            if "Unsupported encoding" in other.error:
                return True, "lxml: encoding names only Python's codecs know (UTF, U8) refused"
            if _not_utf8(data) or "ncoding" in other.error:
                return False, "encodings: lxml flags, the reference answers"
            return (
                False,
                f"lxml flags, the reference answers: {signature(other.reason or other.error)}",
            )
        if ref.kind == "flag" and other.kind == "answer":
            if _not_utf8(data) or "encoding" in ref.reason:
                return False, "encodings: the reference flags, lxml answers"
            if "invalid token" in ref.reason and re.search(
                rb"[\x80-\xff]", _window(data, ref.offset, 1, 3)
            ):
                return True, "lxml: XML 1.0 fifth-edition name characters accepted"
            return False, f"the reference flags, lxml answers: {signature(ref.reason)}"
        if _has(data, b"xmlns"):
            return True, "lxml: namespaces (the reference matches names as written)"
        if _has(data, b"<!ENTITY"):
            return True, "lxml: entity expansion differs from expat's"
        if _has(data, b"<!ATTLIST"):
            return False, "DTD attribute defaults: the reference applies them, lxml does not"
        if _has(data, b"<![CDATA[]]>"):
            return True, "lxml: an empty CDATA section is an empty text node"
        return False, "lxml and the reference answer differently"
    assert hardware
    if ref.kind == "answer" and other.kind == "flag":
        flags = Errors(other.flags)
        if flags & Errors.DEPTH_OVERFLOW and max_depth and _depth(data) > max_depth:
            return True, "hardware: depth limit"
        if flags & Errors.NAME_TOO_LONG and max_name and _longest_name(data) > max_name:
            return True, "hardware: name length limit"
        if flags & Errors.MALFORMED and data.startswith(b"\xef\xbb\xbf"):
            return True, "hardware: UTF-8 byte order mark is malformed"
        if flags & Errors.ENTITY and _UNDECIDED_REFERENCE.search(data):
            return True, "hardware: an entity reference it cannot decide is flagged (entity)"
        if _not_utf8(data):
            return False, "encodings: the hardware flags a document the reference answers"
        return False, f"{engine} flags ({_flag_names(flags)}), the reference answers"
    if ref.kind == "flag" and other.kind == "answer":
        return _hardware_accepts(engine, data, ref)
    # both answered, differently: never documented (an entity the hardware cannot expand is
    # flagged, issue 35 #7)
    if _not_utf8(data):
        return False, "encodings: the hardware and the reference answer differently"
    if _has(data, b"<!ATTLIST"):
        return False, f"{engine} and the reference answer differently (DTD in the document)"
    return False, f"{engine} and the reference answer differently"


def _depth(data: bytes) -> int:
    try:
        return document_depth(parse_events(data))
    except Exception:  # noqa: BLE001
        return 0


def _flag_names(flags: Errors) -> str:
    return ", ".join(f.name.lower() for f in Errors if f in flags) or "no flags"


def _hardware_accepts(engine: str, data: bytes, ref: Outcome) -> tuple[bool, str]:
    """The hardware answers a document the reference (expat) flags: why."""
    reason, off = ref.reason, ref.offset
    near = _window(data, off, 3, 4)
    if "duplicate attribute" in reason:
        return True, "hardware: duplicate attributes not checked"
    if (
        "XML or text declaration not at start" in reason
        or "XML declaration not well-formed" in reason
    ):
        return True, "hardware: processing instruction position and target not checked"
    if re.search(r"entity|character number|amplification", reason):
        return True, "hardware: character references and entity declarations not checked"
    if b"]]>" in _window(data, off, 3, 3):
        return True, "hardware: ']]>' in text not checked"
    amp = data.rfind(b"&", 0, off + 1)
    if b"&" in near or 0 <= amp and off - amp <= 12 and b";" not in data[amp:off]:
        return True, "hardware: character references and entity declarations not checked"
    if _in_pi(data, off):
        return True, "hardware: processing instruction position and target not checked"
    if re.search(rb"[\x00-\x08\x0b\x0c\x0e-\x1f]", _window(data, off, 1, 2)):
        return True, "hardware: control characters and invalid UTF-8 not checked"
    if re.search(rb"[\x80-\xff]", _window(data, off, 1, 2)):
        try:
            data.decode("utf-8")
        except UnicodeDecodeError:
            return True, "hardware: control characters and invalid UTF-8 not checked"
        return True, "hardware: non-ASCII name characters not validated"
    dt = data.find(b"<!DOCTYPE")
    ends = [i for i in (data.find(b"[", dt), data.find(b">", dt)) if i >= 0]
    if 0 <= dt <= off <= min(ends, default=len(data)) + 1:
        return True, "hardware: DOCTYPE name not checked"
    if "mismatched tag" in reason and _colliding_end_tag(data):
        return True, "hardware: unknown end-tag name with a colliding hash"
    if _in_prolog_subset(data, off):
        return True, "hardware: internal subset grammar not checked"
    if data.count(b"<!DOCTYPE") > 1:
        return True, "hardware: repeated DOCTYPE not checked"
    if re.search(rb"<\?xml", data[1:]) or re.search(rb"<\?[xX][mM][lL][\s?]", data):
        return True, "hardware: processing instruction position and target not checked"
    if "encoding" in reason or _not_utf8(data):
        return False, f"encodings: the reference flags, {engine} answers: {signature(reason)}"
    return False, f"the reference flags ({signature(reason)}), {engine} answers"
