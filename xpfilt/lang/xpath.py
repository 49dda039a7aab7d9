"""The profile language xpfilt filters with (an XPath 1.0 fragment), parsed into a typed AST.

Grammar (one profile per line; profile number = line number, from 1; spaces are allowed between
the tokens of a clause and of a predicate, not inside a path)::

    Profile   := Clause
    Clause    := Conj ('or' Conj)*                  a boolean combination of paths
    Conj      := Term ('and' Term)*
    Term      := 'not' '(' Clause ')' | '(' Clause ')' | Path (OP Literal)?
    Path      := Step+
    Step      := ('/' | '//') (NAME | '*') Predicate*
    Predicate := '[' Cond ']' | '[' NUMBER ']'       [N] is [position() = N]
    Cond      := CondConj ('or' CondConj)*
    CondConj  := CondTerm ('and' CondTerm)*
    CondTerm  := 'not' '(' Cond ')' | '(' Cond ')' | Value (OP Literal)?
    Value     := '@' NAME | 'text()' | 'position()' | RelPath
                                                    alone: the attribute / a text child / a
                                                    node the relative path selects exists
    RelPath   := ('./' | './/')? RelStep (('/' | '//') RelStep)*     a nested path (twig)
    RelStep   := (NAME | '*') Predicate*
    OP        := '=' | '!=' | '<' | '<=' | '>' | '>='
    Literal   := NUMBER | "'" chars "'" | '"' chars '"'      NUMBER: -?digits(.digits)?

``PATH op literal`` is the shorthand of ``PATH[text() op literal]`` (YFilter's), for a relative
path too (``[c/d = 5]`` is ``[c/d[text() = 5]]``). A path is true when it selects a node; a
relative path in a predicate starts at the step's element (``[c]``: a child ``c``; ``[.//c]``:
a descendant ``c``) and may hold predicates of its own, nested to any depth. Comparisons follow XPath 1.0: with a number literal both sides compare
as numbers (``number()`` of the text: NaN unless a plain decimal, see :func:`xpath_number`),
``=``/``!=`` with a string literal compare strings, ``<``/``<=``/``>``/``>=`` always compare numbers; ``text()`` and an
attribute are node-sets: a comparison holds if *any* text-node child satisfies it.
``position()`` is the element's position among its siblings that pass the step's name test and
its earlier predicates (so ``a[@x][2]`` is the second ``a`` with an ``x``).

NAME is an XML qualified name as written in the document: ``local`` or ``prefix:local``, each part
letters, digits, ``.``, ``-``, ``_``, not starting with a digit, ``.`` or ``-``. It matches the name
literally, prefix included (the engines do not resolve namespaces). Anything else (other axes,
functions, unions, relative paths, empty steps) raises :class:`XPathSyntaxError`, which names the
query, the column and what was expected. Engines that cannot evaluate a profile say so.

Most profiles are plain paths (no predicate). Those are recognised by one regular expression over
the whole query and cut into steps without the step-by-step parser, whose objects they equal
(100,000 generated NITF queries: 0.2 s instead of 0.85 s); anything else -- predicates, clauses,
and every query the language rejects -- goes through the parser, so it alone words the errors.
"""

from __future__ import annotations

import enum
import math
import re
from dataclasses import dataclass
from functools import cached_property, lru_cache
from itertools import islice
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Iterable, Iterator, Optional, Union

__all__ = [
    "Axis",
    "AttributeTarget",
    "TextTarget",
    "PositionTarget",
    "Predicate",
    "Exists",
    "And",
    "Or",
    "Not",
    "RelativePath",
    "Condition",
    "Step",
    "Query",
    "XPathSyntaxError",
    "QueryLoadResult",
    "QueryFileError",
    "parse_query",
    "read_query_file",
    "load_queries",
    "xpath_number",
    "leaves",
    "QName",
]

#: How a renderer writes a name: ``(name as written, "element" or "attribute") -> text``.
QName = Callable[[str, str], str]


def _as_written(name: str, _kind: str) -> str:
    return name


class _Written:
    """A node of the AST: ``str()`` is its text in the language (:meth:`render` with every name
    as written)."""

    if TYPE_CHECKING:  # each node class defines it

        def render(self, qname: QName) -> str: ...

    def __str__(self) -> str:
        return self.render(_as_written)


class Axis(enum.Enum):
    """How a step relates to the step before it (or to the document root)."""

    CHILD = "/"
    DESCENDANT = "//"


@dataclass(frozen=True)
class AttributeTarget(_Written):
    """``@name`` in a predicate: the value of that attribute of the context element."""

    name: str

    def render(self, qname: QName) -> str:
        return "@" + qname(self.name, "attribute")


@dataclass(frozen=True)
class TextTarget(_Written):
    """``text()`` in a predicate: each text node child of the context element."""

    def render(self, _qname: QName) -> str:
        return "text()"


@dataclass(frozen=True)
class PositionTarget(_Written):
    """``position()`` in a predicate: the element's position among the siblings the step's name
    test and earlier predicates select (1 for the first)."""

    def render(self, _qname: QName) -> str:
        return "position()"


Target = Union[AttributeTarget, TextTarget, PositionTarget]


def _literal_text(literal: Union[float, str]) -> str:
    if isinstance(literal, float):
        return repr(int(literal)) if literal.is_integer() else repr(literal)
    quote = '"' if "'" in literal else "'"
    return f"{quote}{literal}{quote}"


@dataclass(frozen=True)
class Predicate(_Written):
    """A comparison ``target op literal``. ``literal`` is a float for an unquoted number, else a
    str."""

    target: Target
    op: str
    literal: Union[float, str]

    def render(self, qname: QName) -> str:
        return f"{self.target.render(qname)}{self.op}{_literal_text(self.literal)}"

    def holds(self, values: Iterable[str]) -> bool:
        """XPath 1.0 comparison of a node-set (given as its string values) with the literal."""
        return any(_compare(value, self.op, self.literal) for value in values)

    def holds_number(self, number: float) -> bool:
        """XPath 1.0 comparison of a number (``position()``) with the literal."""
        literal = self.literal if isinstance(self.literal, float) else xpath_number(self.literal)
        return _compare_numbers(number, self.op, literal)


@dataclass(frozen=True)
class Exists(_Written):
    """``@name`` or ``text()`` alone: the attribute exists / the element has a text child."""

    target: Union[AttributeTarget, TextTarget]

    def render(self, qname: QName) -> str:
        return self.target.render(qname)


@dataclass(frozen=True)
class RelativePath(_Written):
    """A nested path in a predicate (a twig branch): it holds when it selects a node, starting
    from the step's element; its first step's axis says child (``c``) or descendant
    (``.//c``)."""

    steps: tuple

    def render(self, qname: QName) -> str:
        first, rest = self.steps[0], self.steps[1:]
        text = first.render(qname)
        text = "." + text if first.axis is Axis.DESCENDANT else text[1:]
        return text + "".join(step.render(qname) for step in rest)


@dataclass(frozen=True)
class And(_Written):
    """Every operand holds (in a predicate: conditions; in a profile: paths)."""

    operands: tuple

    def render(self, qname: QName) -> str:
        return " and ".join(
            f"({o.render(qname)})" if isinstance(o, Or) else o.render(qname) for o in self.operands
        )


@dataclass(frozen=True)
class Or(_Written):
    """Some operand holds."""

    operands: tuple

    def render(self, qname: QName) -> str:
        return " or ".join(o.render(qname) for o in self.operands)


@dataclass(frozen=True)
class Not(_Written):
    """The operand does not hold."""

    operand: Any  # a condition or a path (in a profile's clauses: a path's index)

    def render(self, qname: QName) -> str:
        return f"not({self.operand.render(qname)})"


#: What a step's predicate holds: a comparison, an existence test, a nested path, or a boolean
#: combination of them.
Condition = Union[Predicate, Exists, RelativePath, And, Or, Not]


def leaves(node) -> Iterator:
    """The leaves of a boolean combination (comparisons and existence tests of a condition, the
    paths of a profile), left to right."""
    if isinstance(node, (And, Or)):
        for operand in node.operands:
            yield from leaves(operand)
    elif isinstance(node, Not):
        yield from leaves(node.operand)
    else:
        yield node


def evaluate(node, leaf: Callable[[object], bool]) -> bool:
    """The truth of a boolean combination whose leaves ``leaf`` decides."""
    if isinstance(node, And):
        return all(evaluate(o, leaf) for o in node.operands)
    if isinstance(node, Or):
        return any(evaluate(o, leaf) for o in node.operands)
    if isinstance(node, Not):
        return not evaluate(node.operand, leaf)
    return leaf(node)


@dataclass(frozen=True)
class Step(_Written):
    """One location step: its axis, its name test (``'*'`` for any element), its predicates."""

    axis: Axis
    name: str
    predicates: tuple[Condition, ...] = ()

    @property
    def is_wildcard(self) -> bool:
        return self.name == "*"

    @cached_property
    def has_nested_paths(self) -> bool:
        """Some predicate holds a relative path (the profile is a twig)."""
        return any(isinstance(leaf, RelativePath) for p in self.predicates for leaf in leaves(p))

    @cached_property
    def uses_position(self) -> bool:
        """Some predicate calls ``position()`` (the step needs its sibling counts)."""
        return any(
            isinstance(leaf, Predicate) and isinstance(leaf.target, PositionTarget)
            for p in self.predicates
            for leaf in leaves(p)
        )

    def matches_name(self, tag: str) -> bool:
        return self.name == "*" or self.name == tag

    def render(self, qname: QName) -> str:
        name = "*" if self.is_wildcard else qname(self.name, "element")
        return self.axis.value + name + "".join(f"[{p.render(qname)}]" for p in self.predicates)


@dataclass(frozen=True)
class Query(_Written):
    """A parsed profile. ``number`` is its 1-based line number in the query file (0 if none).

    A path profile has its ``steps``; a boolean combination of paths has ``clause`` (an
    :class:`And`, :class:`Or` or :class:`Not` over path :class:`Query` objects with the same
    number) and no steps."""

    steps: tuple[Step, ...]
    number: int = 0
    clause: Optional[Union[And, Or, Not]] = None

    @property
    def is_path(self) -> bool:
        return self.clause is None

    @property
    def paths(self) -> tuple[Query, ...]:
        """The paths the profile is made of (itself, for a path)."""
        return (self,) if self.clause is None else tuple(leaves(self.clause))

    @cached_property
    def has_predicates(self) -> bool:
        return any(step.predicates for path in self.paths for step in path.steps)

    @property
    def has_nested_paths(self) -> bool:
        """Some step's predicate holds a relative path (a twig profile)."""
        return self.has_predicates and any(
            step.has_nested_paths for path in self.paths for step in path.steps
        )

    @property
    def is_structural(self) -> bool:
        """A path without predicates (what the paper's engines filter)."""
        return self.clause is None and not any(step.predicates for step in self.steps)

    def __len__(self) -> int:
        return len(self.steps)

    def render(self, qname: QName) -> str:
        if self.clause is not None:
            return self.clause.render(qname)
        return "".join(step.render(qname) for step in self.steps)


class XPathSyntaxError(ValueError):
    """A query outside the supported language. ``column`` is 1-based."""

    def __init__(self, text: str, column: int, expected: str, found: str, number: int = 0):
        self.text, self.column, self.expected, self.found, self.number = (
            text,
            column,
            expected,
            found,
            number,
        )
        where = f"query {number}" if number else "query"
        super().__init__(f"{where} {text!r}, column {column}: expected {expected}, not {found}")


_NCNAME = re.compile(r"[A-Za-z_][A-Za-z0-9_.\-]*")
_NUMBER = re.compile(r"-?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)")
_NAME_CHAR = re.compile(r"[A-Za-z0-9_.\-:]")
_OPS = ("!=", "<=", ">=", "=", "<", ">")
_OPS_TEXT = "a comparison operator (=, !=, <, <=, >, >=)"
_AFTER_PATH = "'/', '//', '[', 'and', 'or', a comparison or the end of the query"
_AFTER_NESTED = "'/', '//', '[', ']', 'and', 'or' or a comparison"  # inside a predicate
_VALUE = "'@name', 'text()', 'position()', a relative path, a number, 'not(' or '(' in a predicate"


class _Parser:
    def __init__(self, text: str, number: int):
        self.text, self.number, self.pos = text, number, 0
        self.depth = 0  # how many predicates are open here

    def error(self, expected: str) -> XPathSyntaxError:
        if self.pos >= len(self.text):
            found = "the end of the query"
        else:
            found = repr(self.text[self.pos])
        return XPathSyntaxError(self.text, self.pos + 1, expected, found, self.number)

    def peek(self, s: str) -> bool:
        return self.text.startswith(s, self.pos)

    def keyword(self, word: str) -> bool:
        """The operator ``word`` (``and``/``or``: a whole word) here; consumed if so."""
        end = self.pos + len(word)
        if self.peek(word) and not _NAME_CHAR.match(self.text, end):
            self.pos = end
            self.skip_spaces()
            return True
        return False

    def function(self, name: str) -> bool:
        """``name(`` here (spaces allowed before the parenthesis); consumed if so."""
        m = re.compile(re.escape(name) + r"[ \t]*\(").match(self.text, self.pos)
        if m:
            self.pos = m.end()
            self.skip_spaces()
        return m is not None

    def close_paren(self) -> None:
        self.skip_spaces()
        if not self.peek(")"):
            raise self.error("')'")
        self.pos += 1
        self.skip_spaces()

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
                raise self.error(f"a local name after {self.text[start : self.pos]!r}")
            self.pos = m.end()
            if self.peek(":"):
                raise self.error(f"{after} (a name has at most one ':')")
        return self.text[start : self.pos]

    def skip_spaces(self) -> None:
        while self.pos < len(self.text) and self.text[self.pos] in " \t":
            self.pos += 1

    # -- profiles: boolean combinations of paths ---------------------------------------------
    def query(self) -> Query:
        if not self.text:
            raise XPathSyntaxError(
                self.text, 1, "a path starting with '/' or '//'", "an empty query", self.number
            )
        clause = self.boolean(self.path_term)
        if self.pos < len(self.text):
            raise self.error(_AFTER_PATH)
        if isinstance(clause, Query):
            return clause
        return Query((), self.number, clause)

    def boolean(self, leaf: Callable[[], object]):
        """``or`` of ``and`` of terms (``and`` binds tighter), a term being ``not(...)``, a
        parenthesised combination or ``leaf()``: the grammar of profiles (leaves: paths) and of
        predicates (leaves: conditions on the element)."""

        def term():
            if self.function("not"):
                operand = self.boolean(leaf)
                self.close_paren()
                return Not(operand)
            if self.peek("("):
                self.pos += 1
                self.skip_spaces()
                inner = self.boolean(leaf)
                self.close_paren()
                return inner
            return leaf()

        def conjunction():
            operands = [term()]
            while self.keyword("and"):
                operands.append(term())
            return operands[0] if len(operands) == 1 else And(tuple(operands))

        operands = [conjunction()]
        while self.keyword("or"):
            operands.append(conjunction())
        return operands[0] if len(operands) == 1 else Or(tuple(operands))

    def path_term(self) -> Query:
        """A path, with the shorthand ``PATH op literal``."""
        steps = self.path().steps
        return Query(self.shorthand(steps), self.number)

    def shorthand(self, steps: tuple[Step, ...]) -> tuple[Step, ...]:
        """``steps`` followed by an optional ``op literal``: a ``text()`` comparison on the
        last step."""
        self.skip_spaces()
        op = self.operator()
        if op is None:
            return steps
        self.skip_spaces()
        literal = self.literal()
        self.skip_spaces()
        last = steps[-1]
        compared = Predicate(TextTarget(), op, literal)
        return steps[:-1] + (Step(last.axis, last.name, last.predicates + (compared,)),)

    def path(self) -> Query:
        if not self.peek("/"):
            raise self.error(
                "a path starting with '/' or '//'"
                if not self.pos
                else "a path starting with '/' or '//', 'not(' or '('"
            )
        steps = []
        while self.peek("/"):
            steps.append(self.step())
        return Query(tuple(steps), self.number)

    def step(self, axis: Optional[Axis] = None) -> Step:
        """A step here (``axis``: already read, as for a relative path's first step)."""
        if axis is not None:
            pass
        elif self.peek("//"):
            axis, self.pos = Axis.DESCENDANT, self.pos + 2
        else:
            axis, self.pos = Axis.CHILD, self.pos + 1
        after = _AFTER_NESTED if self.depth else _AFTER_PATH
        if self.peek("*"):
            name, self.pos = "*", self.pos + 1
        else:
            name = self.name("an element name or '*'", after)
            if self.peek("::"):
                raise self.error(f"{after} (axes such as '{name}::' are not supported)")
            if self.peek("("):
                raise self.error(f"{after} (functions such as '{name}()' are not supported)")
        predicates = []
        while self.peek("["):
            predicates.append(self.predicate())
        if self.pos < len(self.text) and not (
            self.peek("/")
            or self.text[self.pos] in " \t)"
            or self.text[self.pos] in "=!<>"
            or (self.depth and self.peek("]"))
        ):
            raise self.error(after)
        return Step(axis, name, tuple(predicates))

    # -- predicates: boolean combinations of conditions on the element ------------------------
    def predicate(self) -> Condition:
        self.pos += 1
        self.depth += 1
        self.skip_spaces()
        m = _NUMBER.match(self.text, self.pos)
        if m:
            self.pos = m.end()
            condition: Condition = Predicate(PositionTarget(), "=", float(m.group()))
        else:
            condition = self.boolean(self.condition_leaf)
        self.skip_spaces()
        if not self.peek("]"):
            raise self.error("']'" if m else "']', 'and', 'or' or a comparison operator")
        self.pos += 1
        self.depth -= 1
        return condition

    def condition_leaf(self) -> Condition:
        """A comparison, an existence test or a nested path."""
        target: Target
        if self.peek("@"):
            self.pos += 1
            target = AttributeTarget(self.name("an attribute name", f"{_OPS_TEXT} or ']'"))
        elif self.function("text"):
            self.close_paren()
            target = TextTarget()
        elif self.function("position"):
            self.close_paren()
            target = PositionTarget()
        elif self.peek(".") or self.peek("*") or _NCNAME.match(self.text, self.pos):
            return self.relative_path()
        else:
            raise self.error(_VALUE)
        self.skip_spaces()
        op = self.operator()
        if op is None:
            if isinstance(target, PositionTarget):
                raise self.error(f"{_OPS_TEXT} after 'position()'")
            self.skip_spaces()
            return Exists(target)
        self.skip_spaces()
        literal = self.literal()
        self.skip_spaces()
        return Predicate(target, op, literal)

    def relative_path(self) -> Condition:
        """A nested path (``c/d``, ``./c``, ``.//c[...]``), with an optional comparison (the
        shorthand of a ``text()`` predicate on its last step)."""
        if self.peek(".//"):
            axis, self.pos = Axis.DESCENDANT, self.pos + 3
        elif self.peek("./"):
            axis, self.pos = Axis.CHILD, self.pos + 2
        elif self.peek("."):
            raise self.error("'./' or './/' (a relative path starts at the element)")
        else:
            axis = Axis.CHILD
        steps = [self.step(axis)]
        while self.peek("/"):
            steps.append(self.step())
        return RelativePath(self.shorthand(tuple(steps)))

    def operator(self) -> Optional[str]:
        for op in _OPS:
            if self.peek(op):
                self.pos += len(op)
                return op
        return None

    def literal(self) -> Union[float, str]:
        if self.peek("'") or self.peek('"'):
            quote = self.text[self.pos]
            end = self.text.find(quote, self.pos + 1)
            if end < 0:
                self.pos = len(self.text)
                raise self.error(f"a closing {quote}")
            literal, self.pos = self.text[self.pos + 1 : end], end + 1
            return literal
        m = _NUMBER.match(self.text, self.pos)
        if not m:
            raise self.error("a number or a quoted string")
        self.pos = m.end()
        return float(m.group())


#: The name test of a step without predicates, as :meth:`_Parser.name` reads a name.
_PLAIN_NAME = re.compile(r"\*|[A-Za-z_][A-Za-z0-9_.\-]*(?::[A-Za-z_][A-Za-z0-9_.\-]*)?")


class _Steps(dict):
    """(descendant axis?, text between slashes) -> its :class:`Step` when the text is a name
    test, else None; made when first asked for (steps are immutable: queries may share
    them)."""

    def __missing__(self, key: tuple[bool, str]) -> Optional[Step]:
        descendant, name = key
        step = self[key] = (
            Step(Axis.DESCENDANT if descendant else Axis.CHILD, name)
            if _PLAIN_NAME.fullmatch(name)
            else None
        )
        return step


def _plain_steps(text: str, steps: _Steps) -> Optional[tuple[Step, ...]]:
    """The steps of a plain query (steps without predicates, the common case; ``text``
    stripped), read by splitting it at its slashes, each name tested once per query file
    (``steps``); None for any other text."""
    parts = text.split("/")
    if parts[0] or len(parts) < 2:
        return None
    parsed = []
    descendant = False
    for part in islice(parts, 1, None):
        if not part:  # the empty text between the slashes of '//'
            if descendant:
                return None
            descendant = True
            continue
        step = steps[descendant, part]
        if step is None:
            return None
        parsed.append(step)
        descendant = False
    return None if descendant else tuple(parsed)


def _parse(text: str, number: int, steps: _Steps) -> Query:
    """:func:`parse_query`, with ``steps`` caching the steps of plain queries (10,000
    queries: 29 -> 22 ms, against a regular expression matched twice); the parser reads
    every other query, and says what is wrong with it."""
    text = text.strip()
    plain = _plain_steps(text, steps)
    if plain is None:
        return _Parser(text, number).query()
    return Query(plain, number)


def parse_query(text: str, number: int = 0) -> Query:
    """Parse one query; raise :class:`XPathSyntaxError` if it is outside the fragment."""
    return _parse(text, number, _Steps())


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
        raise QueryFileError(
            f"{path}: line {line}, column {column}: a query file must be "
            f"UTF-8 text, not byte 0x{data[exc.start]:02x}"
        ) from None
    if not text.strip():
        raise QueryFileError(
            f"{path}: a query file must hold at least one query, not "
            f"{'an empty file' if not text else 'only blank lines'}"
        )
    return text.splitlines()


def load_queries(
    source: Union[str, Path, Iterable[str]], numbers: Optional[Iterable[int]] = None
) -> QueryLoadResult:
    """Read one query per line (a path, or an iterable of lines). Bad lines become errors; a
    file that is not UTF-8 or holds no query raises :class:`QueryFileError`. ``numbers``: the
    lines' query numbers, when they are not 1, 2, 3, ... (some lines of a file)."""
    if isinstance(source, (str, Path)):
        lines = read_query_file(source)
    else:
        lines = [line.rstrip("\n") for line in source]
    queries: list[Query] = []
    errors: list[XPathSyntaxError] = []
    steps = _Steps()
    for number, line in zip(
        range(1, len(lines) + 1) if numbers is None else numbers, lines, strict=True
    ):
        try:
            queries.append(_parse(line, number, steps))
        except XPathSyntaxError as exc:
            errors.append(exc)
    return QueryLoadResult(tuple(queries), tuple(errors))


_XPATH_NUMBER = re.compile(
    r"[ \t\r\n]*(-?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+))"
    r"(?:[eE]([+-]?)([0-9]*))?[ \t\r\n]*\Z"
)


@lru_cache(maxsize=4096)
def xpath_number(s: str) -> float:
    """``number()`` of a string: NaN unless it is a plain decimal number (XPath 1.0), which may
    carry an exponent (``1e2``, ``1e`` = 1), as libxml2 (lxml) and YFilter's Java parse it."""
    m = _XPATH_NUMBER.match(s)
    if not m:
        return math.nan
    mantissa, sign, exponent = m.groups()
    return float(f"{mantissa}e{sign or ''}{exponent or 0}")


def _compare(value: str, op: str, literal: Union[float, str]) -> bool:
    if isinstance(literal, str) and op in ("=", "!="):
        return (value == literal) == (op == "=")
    b = literal if isinstance(literal, float) else xpath_number(literal)
    return _compare_numbers(xpath_number(value), op, b)


def _compare_numbers(a: float, op: str, b: float) -> bool:
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
