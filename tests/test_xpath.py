"""The XPath fragment parser: what it accepts, and the exact errors for what it rejects."""

import math

import pytest

from xpfilt.xpath import (Axis, AttributeTarget, Predicate, Step, TextTarget, XPathSyntaxError,
                          load_queries, parse_query, xpath_number)


@pytest.mark.parametrize("text, steps", [
    ("/a", [("/", "a")]),
    ("//a", [("//", "a")]),
    ("/*", [("/", "*")]),
    ("/nitf/body//body.content/*", [("/", "nitf"), ("/", "body"), ("//", "body.content"),
                                    ("/", "*")]),
    ("//x-y/_z/ns:tag/a1.b-c", [("//", "x-y"), ("/", "_z"), ("/", "ns:tag"), ("/", "a1.b-c")]),
    ("  /a/b  ", [("/", "a"), ("/", "b")]),
])
def test_accepts_paths(text, steps):
    query = parse_query(text, 7)
    assert [(s.axis.value, s.name) for s in query.steps] == steps
    assert query.number == 7
    assert str(query) == text.strip()


def test_parses_predicates():
    query = parse_query("/a[@id=13]//b[ text() != 'x y' ][@n>=2.5]")
    assert query.steps[0] == Step(Axis.CHILD, "a", (Predicate(AttributeTarget("id"), "=", 13.0),))
    assert query.steps[1].predicates == (Predicate(TextTarget(), "!=", "x y"),
                                         Predicate(AttributeTarget("n"), ">=", 2.5))
    assert query.has_predicates
    assert str(query) == "/a[@id=13]//b[text()!='x y'][@n>=2.5]"


@pytest.mark.parametrize("text, message", [
    ("a/b", "query 3 'a/b', column 1: expected a path starting with '/' or '//', not 'a'"),
    ("", "query 3 '', column 1: expected a path starting with '/' or '//', not an empty query"),
    ("//", "query 3 '//', column 3: expected an element name or '*', not the end of the query"),
    ("/a//", "query 3 '/a//', column 5: expected an element name or '*', "
             "not the end of the query"),
    ("/a///b", "query 3 '/a///b', column 5: expected an element name or '*', not '/'"),
    ("/a|/b", "query 3 '/a|/b', column 3: expected '/', '//', '[' or the end of the query, "
              "not '|'"),
    ("/a/child::b", "query 3 '/a/child::b', column 9: expected '/', '//', '[' or the end of the "
                    "query (axes such as 'child::' are not supported), not ':'"),
    ("/a/count()", "query 3 '/a/count()', column 9: expected '/', '//', '[' or the end of the "
                   "query (functions such as 'count()' are not supported), not '('"),
    ("/a/../b", "query 3 '/a/../b', column 4: expected an element name or '*', not '.'"),
    ("/a/@b", "query 3 '/a/@b', column 4: expected an element name or '*', not '@'"),
    ("/1a", "query 3 '/1a', column 2: expected an element name or '*', not '1'"),
    ("/a[1]", "query 3 '/a[1]', column 4: expected '@name' or 'text()' in a predicate, not '1'"),
    ("/a[@x]", "query 3 '/a[@x]', column 6: expected a comparison operator "
               "(=, !=, <, <=, >, >=), not ']'"),
    ("/a[@x=1", "query 3 '/a[@x=1', column 8: expected ']', not the end of the query"),
    ('/a[@x="y]', "query 3 '/a[@x=\"y]', column 10: expected a closing \", "
                  "not the end of the query"),
    ("/a[@x=y]", "query 3 '/a[@x=y]', column 7: expected a number or a quoted string, not 'y'"),
])
def test_rejects_with_pinned_message(text, message):
    with pytest.raises(XPathSyntaxError) as info:
        parse_query(text, 3)
    assert str(info.value) == message


def test_load_queries_keeps_line_numbers_past_bad_lines():
    loaded = load_queries(["/a", "/b/child::c", "//d"])
    assert [(q.number, str(q)) for q in loaded.queries] == [(1, "/a"), (3, "//d")]
    assert [e.number for e in loaded.errors] == [2]


@pytest.mark.parametrize("text, value", [
    ("13", 13.0), (" 13\n", 13.0), ("-2.5", -2.5), (".5", 0.5), ("1.", 1.0),
])
def test_xpath_number(text, value):
    assert xpath_number(text) == value


@pytest.mark.parametrize("text", ["", "abc", "1e3", "+1", "1 2", "0x10"])
def test_xpath_number_nan(text):
    assert math.isnan(xpath_number(text))


@pytest.mark.parametrize("op, literal, values, holds", [
    ("=", 13.0, ["13"], True),
    ("=", 13.0, [" 13 "], True),
    ("=", 13.0, ["x"], False),
    ("!=", 13.0, ["x"], True),        # NaN != 13
    ("=", "13", [" 13 "], False),     # string comparison
    ("<", 13.0, ["12"], True),
    (">=", "5", ["5"], True),         # relational ops compare numbers
    ("=", 1.0, [], False),            # empty node-set
    ("=", 1.0, ["2", "1"], True),     # any node
])
def test_predicate_comparisons(op, literal, values, holds):
    assert Predicate(AttributeTarget("a"), op, literal).holds(values) is holds
