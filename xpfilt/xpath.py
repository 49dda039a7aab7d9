"""The XPath fragment xpfilt filters with, parsed into a typed AST.

Grammar (one query per line; query number = line number, from 1)::

    Path      := Step+
    Step      := ('/' | '//') (NAME | '*') Predicate*
    Predicate := '[' ('@' NAME | 'text()') OP Literal ']'
    OP        := '=' | '!=' | '<' | '<=' | '>' | '>='
    Literal   := NUMBER | "'" chars "'" | '"' chars '"'

NAME is an XML qualified name as written in the document: ``local`` or ``prefix:local``, each part
letters, digits, ``.``, ``-``, ``_``, not starting with a digit, ``.`` or ``-``. It matches the name
literally, prefix included (the engines do not resolve namespaces). Anything else (other axes, functions, unions, relative
paths, empty steps) raises :class:`XPathSyntaxError`, which names the query, the column and what
was expected. Predicates parse; engines that cannot evaluate them say so.

Most profiles are plain paths (no predicate). Those are recognised by one regular expression over
the whole query and cut into steps without the step-by-step parser, whose objects they equal
(100,000 generated NITF queries: 0.2 s instead of 0.85 s); anything else -- predicates, and every
query the fragment rejects -- goes through the parser, so it alone words the errors.
"""

from __future__ import annotations

import enum
import math
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable, Optional, Union

__all__ = [
    "Axis", "AttributeTarget", "TextTarget", "Predicate", "Step", "Query", "XPathSyntaxError",
    "QueryLoadResult", "QueryFileError", "parse_query", "read_query_file", "load_queries",
    "xpath_number",
]


class Axis(enum.Enum):
    """How a step relates to the step before it (or to the document root)."""
    CHILD = "/"
    DESCENDANT = "//"


@dataclass(frozen=True)
class AttributeTarget:
    """``@name`` in a predicate: the value of that attribute of the context element."""
    name: str

    def __str__(self) -> str:
        return f"@{self.name}"


@dataclass(frozen=True)
class TextTarget:
    """``text()`` in a predicate: each text node child of the context element."""

    def __str__(self) -> str:
        return "text()"


@dataclass(frozen=True)
class Predicate:
    """``[target op literal]``. ``literal`` is a float for an unquoted number, else a str."""
    target: Union[AttributeTarget, TextTarget]
    op: str
    literal: Union[float, str]

    def __str__(self) -> str:
        if isinstance(self.literal, float):
            lit = repr(int(self.literal)) if self.literal.is_integer() else repr(self.literal)
        else:
            quote = '"' if "'" in self.literal else "'"
            lit = f"{quote}{self.literal}{quote}"
        return f"[{self.target}{self.op}{lit}]"

    def holds(self, values: Iterable[str]) -> bool:
        """XPath 1.0 comparison of a node-set (given as its string values) with the literal."""
        return any(_compare(value, self.op, self.literal) for value in values)


@dataclass(frozen=True)
class Step:
    """One location step: its axis, its name test (``'*'`` for any element), its predicates."""
    axis: Axis
    name: str
    predicates: tuple[Predicate, ...] = ()

    @property
    def is_wildcard(self) -> bool:
        return self.name == "*"

    def matches_name(self, tag: str) -> bool:
        return self.name == "*" or self.name == tag

    def __str__(self) -> str:
        return self.axis.value + self.name + "".join(map(str, self.predicates))


@dataclass(frozen=True)
class Query:
    """A parsed path query. ``number`` is its 1-based line number in the query file (0 if none)."""
    steps: tuple[Step, ...]
    number: int = 0

    @property
    def has_predicates(self) -> bool:
        return any(step.predicates for step in self.steps)

    def __len__(self) -> int:
        return len(self.steps)

    def __str__(self) -> str:
        return "".join(map(str, self.steps))


class XPathSyntaxError(ValueError):
    """A query outside the supported fragment. ``column`` is 1-based."""

    def __init__(self, text: str, column: int, expected: str, found: str, number: int = 0):
        self.text, self.column, self.expected, self.found, self.number = (
            text, column, expected, found, number)
        where = f"query {number}" if number else "query"
        super().__init__(
            f"{where} {text!r}, column {column}: expected {expected}, not {found}")


_NCNAME = re.compile(r"[A-Za-z_][A-Za-z0-9_.\-]*")
_NUMBER = re.compile(r"-?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)")
_OPS = ("!=", "<=", ">=", "=", "<", ">")


class _Parser:
    def __init__(self, text: str, number: int):
        self.text, self.number, self.pos = text, number, 0

    def error(self, expected: str) -> XPathSyntaxError:
        if self.pos >= len(self.text):
            found = "the end of the query"
        else:
            found = repr(self.text[self.pos])
        return XPathSyntaxError(self.text, self.pos + 1, expected, found, self.number)

    def peek(self, s: str) -> bool:
        return self.text.startswith(s, self.pos)

    def name(self, expected: str, after: str) -> str:
        """A name (``local`` or ``prefix:local``) here; ``after``: what may follow it."""
        start = self.pos
        m = _NCNAME.match(self.text, self.pos)
        if not m:
            raise self.error(expected)
        self.pos = m.end()
        if self.peek(":") and not self.peek("::"):
            self.pos += 1
            m = _NCNAME.match(self.text, self.pos)
            if not m:
                raise self.error(f"a local name after {self.text[start:self.pos]!r}")
            self.pos = m.end()
            if self.peek(":"):
                raise self.error(f"{after} (a name has at most one ':')")
        return self.text[start:self.pos]

    def skip_spaces(self) -> None:
        while self.pos < len(self.text) and self.text[self.pos] in " \t":
            self.pos += 1

    def query(self) -> Query:
        if not self.text:
            raise XPathSyntaxError(self.text, 1, "a path starting with '/' or '//'",
                                   "an empty query", self.number)
        steps = []
        while self.pos < len(self.text):
            steps.append(self.step())
        if not steps:
            raise self.error("a path starting with '/' or '//'")
        return Query(tuple(steps), self.number)

    def step(self) -> Step:
        if self.peek("//"):
            axis, self.pos = Axis.DESCENDANT, self.pos + 2
        elif self.peek("/"):
            axis, self.pos = Axis.CHILD, self.pos + 1
        else:
            raise self.error("'/' or '//'" if self.pos else "a path starting with '/' or '//'")
        if self.peek("*"):
            name, self.pos = "*", self.pos + 1
        else:
            name = self.name("an element name or '*'", "'/', '//', '[' or the end of the query")
            if self.peek("::"):
                raise self.error("'/', '//', '[' or the end of the query (axes such as "
                                 f"'{name}::' are not supported)")
            if self.peek("("):
                raise self.error("'/', '//', '[' or the end of the query (functions such as "
                                 f"'{name}()' are not supported)")
        predicates = []
        while self.peek("["):
            predicates.append(self.predicate())
        if self.pos < len(self.text) and not self.peek("/"):
            raise self.error("'/', '//', '[' or the end of the query")
        return Step(axis, name, tuple(predicates))

    def predicate(self) -> Predicate:
        self.pos += 1
        self.skip_spaces()
        target: Union[AttributeTarget, TextTarget]
        if self.peek("@"):
            self.pos += 1
            target = AttributeTarget(self.name(
                "an attribute name", "a comparison operator (=, !=, <, <=, >, >=)"))
        elif self.peek("text()"):
            target, self.pos = TextTarget(), self.pos + 6
        else:
            raise self.error("'@name' or 'text()' in a predicate")
        self.skip_spaces()
        for op in _OPS:
            if self.peek(op):
                self.pos += len(op)
                break
        else:
            raise self.error("a comparison operator (=, !=, <, <=, >, >=)")
        self.skip_spaces()
        literal: Union[float, str]
        if self.peek("'") or self.peek('"'):
            quote = self.text[self.pos]
            end = self.text.find(quote, self.pos + 1)
            if end < 0:
                self.pos = len(self.text)
                raise self.error(f"a closing {quote}")
            literal, self.pos = self.text[self.pos + 1:end], end + 1
        else:
            m = _NUMBER.match(self.text, self.pos)
            if not m:
                raise self.error("a number or a quoted string")
            literal, self.pos = float(m.group()), m.end()
        self.skip_spaces()
        if not self.peek("]"):
            raise self.error("']'")
        self.pos += 1
        return Predicate(target, op, literal)


#: A whole query of steps without predicates, each name as :meth:`_Parser.name` reads it.
_PLAIN_PATH = re.compile(r"(?://?(?:\*|[A-Za-z_][A-Za-z0-9_.\-]*"
                         r"(?::[A-Za-z_][A-Za-z0-9_.\-]*)?))+")
_PLAIN_STEP = re.compile(r"//?[^/]+")      # one step of a query _PLAIN_PATH matched


def _parse(text: str, number: int, steps: dict[str, Step]) -> Query:
    """:func:`parse_query`, with ``steps`` caching the :class:`Step` of each plain step's text
    (steps are immutable: queries may share them)."""
    text = text.strip()
    if _PLAIN_PATH.fullmatch(text) is None:
        return _Parser(text, number).query()
    parsed = []
    for token in _PLAIN_STEP.findall(text):
        step = steps.get(token)
        if step is None:
            step = steps[token] = (Step(Axis.DESCENDANT, token[2:]) if token[1] == "/"
                                   else Step(Axis.CHILD, token[1:]))
        parsed.append(step)
    return Query(tuple(parsed), number)


def parse_query(text: str, number: int = 0) -> Query:
    """Parse one query; raise :class:`XPathSyntaxError` if it is outside the fragment."""
    return _parse(text, number, {})


@dataclass(frozen=True)
class QueryLoadResult:
    """Queries of a file that parsed, and the errors of those that did not.

    Each parsed :class:`Query` keeps its line number, so a bad line never renumbers the others.
    """
    queries: tuple[Query, ...]
    errors: tuple[XPathSyntaxError, ...]


class QueryFileError(ValueError):
    """A query file that cannot be read as queries at all (not UTF-8 text, or empty)."""


def read_query_file(path: Union[str, Path]) -> list[str]:
    """The lines of a query file; :class:`QueryFileError` names the file, and the line and
    column of the first byte that is not UTF-8."""
    data = Path(path).read_bytes()
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        column = exc.start - data.rfind(b"\n", 0, exc.start)
        raise QueryFileError(f"{path}: line {line}, column {column}: a query file must be "
                             f"UTF-8 text, not byte 0x{data[exc.start]:02x}") from None
    if not text.strip():
        raise QueryFileError(f"{path}: a query file must hold at least one query, not "
                             f"{'an empty file' if not text else 'only blank lines'}")
    return text.splitlines()


def load_queries(source: Union[str, Path, Iterable[str]],
                 numbers: Optional[Iterable[int]] = None) -> QueryLoadResult:
    """Read one query per line (a path, or an iterable of lines). Bad lines become errors; a
    file that is not UTF-8 or holds no query raises :class:`QueryFileError`. ``numbers``: the
    lines' query numbers, when they are not 1, 2, 3, ... (some lines of a file)."""
    if isinstance(source, (str, Path)):
        lines = read_query_file(source)
    else:
        lines = [line.rstrip("\n") for line in source]
    queries, errors, steps = [], [], {}
    for number, line in zip(range(1, len(lines) + 1) if numbers is None else numbers, lines,
                            strict=True):
        try:
            queries.append(_parse(line, number, steps))
        except XPathSyntaxError as exc:
            errors.append(exc)
    return QueryLoadResult(tuple(queries), tuple(errors))


_XPATH_NUMBER = re.compile(r"[ \t\r\n]*(-?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+))[ \t\r\n]*\Z")


def xpath_number(s: str) -> float:
    """XPath 1.0 ``number()`` of a string: NaN unless it is a plain decimal number."""
    m = _XPATH_NUMBER.match(s)
    return float(m.group(1)) if m else math.nan


def _compare(value: str, op: str, literal: Union[float, str]) -> bool:
    if isinstance(literal, str) and op in ("=", "!="):
        return (value == literal) == (op == "=")
    a = xpath_number(value)
    b = literal if isinstance(literal, float) else xpath_number(literal)
    if op == "=":
        return a == b
    if op == "!=":
        return a != b
    if op == "<":
        return a < b
    if op == "<=":
        return a <= b
    if op == ">":
        return a > b
    return a >= b
