"""The XPath fragment parser: what it accepts, and the exact errors for what it rejects."""

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from xpfilt.lang.xpath import (
    AttributeTarget,
    Axis,
    Predicate,
    Query,
    Step,
    TextTarget,
    XPathSyntaxError,
    _Parser,
    _plain_steps,
    _Steps,
    load_queries,
    parse_query,
    read_query_file,
    xpath_number,
)
from xpfilt.paths import shared_data

from .conftest import examples
from .strategies import queries, query_texts

DATA = shared_data()


@pytest.mark.parametrize(
    "text, steps",
    [
        ("/a", [("/", "a")]),
        ("//a", [("//", "a")]),
        ("/*", [("/", "*")]),
        (
            "/nitf/body//body.content/*",
            [("/", "nitf"), ("/", "body"), ("//", "body.content"), ("/", "*")],
        ),
        ("//x-y/_z/ns:tag/a1.b-c", [("//", "x-y"), ("/", "_z"), ("/", "ns:tag"), ("/", "a1.b-c")]),
        ("  /a/b  ", [("/", "a"), ("/", "b")]),
    ],
)
def test_accepts_paths(text, steps):
    query = parse_query(text, 7)
    assert [(s.axis.value, s.name) for s in query.steps] == steps
    assert query.number == 7
    assert str(query) == text.strip()


def test_parses_predicates():
    query = parse_query("/a[@id=13]//b[ text() != 'x y' ][@n>=2.5]")
    assert query.steps[0] == Step(Axis.CHILD, "a", (Predicate(AttributeTarget("id"), "=", 13.0),))
    assert query.steps[1].predicates == (
        Predicate(TextTarget(), "!=", "x y"),
        Predicate(AttributeTarget("n"), ">=", 2.5),
    )
    assert query.has_predicates
    assert str(query) == "/a[@id=13]//b[text()!='x y'][@n>=2.5]"


@pytest.mark.parametrize(
    "text, message",
    [
        ("a/b", "query 3 'a/b', column 1: expected a path starting with '/' or '//', not 'a'"),
        ("", "query 3 '', column 1: expected a path starting with '/' or '//', not an empty query"),
        ("//", "query 3 '//', column 3: expected an element name or '*', not the end of the query"),
        (
            "/a//",
            "query 3 '/a//', column 5: expected an element name or '*', not the end of the query",
        ),
        ("/a///b", "query 3 '/a///b', column 5: expected an element name or '*', not '/'"),
        (
            "/a|/b",
            "query 3 '/a|/b', column 3: expected '/', '//', '[', 'and', 'or', a comparison or the end of the query, "
            "not '|'",
        ),
        (
            "/a/child::b",
            "query 3 '/a/child::b', column 9: expected '/', '//', '[', 'and', 'or', a comparison or the end of the query "
            "(axes such as 'child::' are not supported), not ':'",
        ),
        (
            "/a/count()",
            "query 3 '/a/count()', column 9: expected '/', '//', '[', 'and', 'or', a comparison or the end of the query "
            "(functions such as 'count()' are not supported), not '('",
        ),
        ("/a/../b", "query 3 '/a/../b', column 4: expected an element name or '*', not '.'"),
        ("/a/@b", "query 3 '/a/@b', column 4: expected an element name or '*', not '@'"),
        ("/1a", "query 3 '/1a', column 2: expected an element name or '*', not '1'"),
        (
            "/a[last()]",
            "query 3 '/a[last()]', column 8: expected '/', '//', '[', ']', 'and', 'or' or "
            "a comparison (functions such as 'last()' are not supported), not '('",
        ),
        (
            "/a[/b]",
            "query 3 '/a[/b]', column 4: expected '@name', 'text()', 'position()', a "
            "relative path, a number, 'not(' or '(' in a predicate, not '/'",
        ),
        (
            "/a[.]",
            "query 3 '/a[.]', column 4: expected './' or './/' (a relative path starts at the "
            "element), not '.'",
        ),
        (
            "/a[position()]",
            "query 3 '/a[position()]', column 14: expected a comparison operator "
            "(=, !=, <, <=, >, >=) after 'position()', not ']'",
        ),
        (
            "/a[@x=1",
            "query 3 '/a[@x=1', column 8: expected ']', 'and', 'or' or a comparison "
            "operator, not the end of the query",
        ),
        ("/a[1.5.1]", "query 3 '/a[1.5.1]', column 7: expected ']', not '.'"),
        (
            "/a and",
            "query 3 '/a and', column 7: expected a path starting with '/' or '//', 'not(' or "
            "'(', not the end of the query",
        ),
        ("not(/a", "query 3 'not(/a', column 7: expected ')', not the end of the query"),
        (
            "/a or or /b",
            "query 3 '/a or or /b', column 7: expected a path starting with '/' or '//', "
            "'not(' or '(', not 'o'",
        ),
        (
            "/a = ",
            "query 3 '/a =', column 5: expected a number or a quoted string, "
            "not the end of the query",
        ),
        (
            '/a[@x="y]',
            "query 3 '/a[@x=\"y]', column 10: expected a closing \", not the end of the query",
        ),
        ("/a[@x=y]", "query 3 '/a[@x=y]', column 7: expected a number or a quoted string, not 'y'"),
    ],
)
def test_rejects_with_pinned_message(text, message):
    with pytest.raises(XPathSyntaxError) as info:
        parse_query(text, 3)
    assert str(info.value) == message


def test_load_queries_keeps_line_numbers_past_bad_lines():
    loaded = load_queries(["/a", "/b/child::c", "//d"])
    assert [(q.number, str(q)) for q in loaded.queries] == [(1, "/a"), (3, "//d")]
    assert [e.number for e in loaded.errors] == [2]


@pytest.mark.parametrize(
    "text, value",
    [
        ("13", 13.0),
        (" 13\n", 13.0),
        ("-2.5", -2.5),
        (".5", 0.5),
        ("1.", 1.0),
        ("1e3", 1000.0),
        ("1E-2", 0.01),
        ("5.e1", 50.0),
        ("1e", 1.0),
        ("1e+", 1.0),  # as libxml2
    ],
)
def test_xpath_number(text, value):
    assert xpath_number(text) == value


@pytest.mark.parametrize("text", ["", "abc", "e3", "+1", "1 2", "0x10", "1e2.5", ".", "- 1"])
def test_xpath_number_nan(text):
    assert math.isnan(xpath_number(text))


@pytest.mark.parametrize(
    "op, literal, values, holds",
    [
        ("=", 13.0, ["13"], True),
        ("=", 13.0, [" 13 "], True),
        ("=", 13.0, ["x"], False),
        ("!=", 13.0, ["x"], True),  # NaN != 13
        ("=", "13", [" 13 "], False),  # string comparison
        ("<", 13.0, ["12"], True),
        (">=", "5", ["5"], True),  # relational ops compare numbers
        ("=", 1.0, [], False),  # empty node-set
        ("=", 1.0, ["2", "1"], True),  # any node
    ],
)
def test_predicate_comparisons(op, literal, values, holds):
    assert Predicate(AttributeTarget("a"), op, literal).holds(values) is holds


def _error(exc):
    return ("error", str(exc), exc.text, exc.column, exc.expected, exc.found, exc.number)


def _outcome(parse, text, number):
    """A query, or its error's message and fields."""
    try:
        return parse(text, number)
    except XPathSyntaxError as exc:
        return _error(exc)


def _full_parser(text, number):
    return _Parser(text.strip(), number).query()


@examples(ci=2000)
@given(query_texts(), st.integers(0, 10**6))
def test_plain_path_shortcut_equals_the_parser(text, number):
    assert _outcome(parse_query, text, number) == _outcome(_full_parser, text, number)


@given(queries())
def test_plain_queries_take_the_shortcut(text):
    assert _plain_steps(text, _Steps()) == parse_query(text).steps


def _garbled(line, number):
    """A near miss of a good query line: a character put in, dropped or doubled."""
    pos = number % (len(line) + 1)
    return [
        line[:pos] + "/:*@[( "[number % 7] + line[pos:],
        line[:pos] + line[pos + 1 :],
        line[:pos] + line[pos : pos + 1] * 2 + line[pos + 1 :],
    ]


@pytest.mark.parametrize("name", sorted(p.name for p in (DATA / "queries").glob("*.txt")))
def test_shared_query_files_parse_as_the_parser_parses_them(name):
    lines = read_query_file(DATA / "queries" / name)
    loaded = load_queries(DATA / "queries" / name)
    outcomes = [_outcome(_full_parser, line, n) for n, line in enumerate(lines, 1)]
    assert list(loaded.queries) == [o for o in outcomes if isinstance(o, Query)]
    assert list(map(_error, loaded.errors)) == [o for o in outcomes if not isinstance(o, Query)]
    steps = _Steps()
    plain = sum(1 for line in lines if _plain_steps(line.strip(), steps) is not None)
    assert plain == sum(1 for q in loaded.queries if not q.has_predicates)
    for n, line in enumerate(lines[:300], 1):
        for text in _garbled(line, n):
            assert _outcome(parse_query, text, n) == _outcome(_full_parser, text, n)
