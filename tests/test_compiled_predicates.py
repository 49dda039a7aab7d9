"""The compiled loop on query sets with predicates (xpfilt/software/compiled.py ``scan_tree``,
xpfilt/software/fast_guards.py): the same answers as the reference and as the Python path,
on values written with references, CDATA, comments and line ends, and on twigs."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from xpfilt.lang.xpath import parse_query
from xpfilt.software.events import DocumentError
from xpfilt.software.fast import FastFilter
from xpfilt.software.reference import ReferenceFilter

from .conftest import examples
from .strategies import TAGS, elements, serialize

pytest.importorskip("numba")

#: Values as written in the documents: references, tabs and line ends that expat normalizes.
RAW_VALUES = ["1", "&#49;", " 2 ", "x&amp;y", "a\tb", "a\r\nb", "&lt;", "2&#x20;", "", "x"]
LITERALS = ["1", "2", "'x&y'", "'a b'", "'<'", "' 2 '", "''", "'x'", "'a\nb'"]
OPS = ["=", "!=", "<", ">="]


def _engines(texts):
    parsed = [parse_query(t, i + 1) for i, t in enumerate(texts)]
    compiled = FastFilter(parsed)
    assert compiled.stats["engine"] == "compiled"
    return compiled, FastFilter(parsed, compiled=False), ReferenceFilter(parsed)


def _check(texts, docs, **options):
    """Compiled loop, Python path and reference agree, one by one and as one batch (twice:
    cold, then from the memo)."""
    compiled, python, reference = _engines(texts)
    if options:
        compiled = FastFilter(compiled.queries, **options)
    expected = []
    for doc in docs:
        try:
            expected.append(sorted(reference.filter(doc)))
        except DocumentError:
            expected.append(None)
    for _ in range(2):
        found = compiled.filter_many(docs)
        assert [None if isinstance(f, DocumentError) else f.tolist() for f in found] == expected
    for doc, answer in zip(docs, expected):
        if answer is not None:
            assert sorted(compiled.filter(doc)) == answer
            assert sorted(python.filter(doc)) == answer
    return compiled


CASES = [
    # attribute values: references and normalized white space
    ("/a[@x=1]", b'<a x="&#49;"/>', True),
    ("/a[@x='x&y']", b'<a x="x&amp;y"/>', True),
    ("/a[@x='a b']", b'<a x="a\tb"/>', True),
    ("/a[@x='a b']", b'<a x="a\r\nb"/>', True),
    ("/a[@x='a b']", b'<a x="a&#9;b"/>', False),  # a character reference is not normalized
    ("/a[@x='\"']", b"<a x='\"'/>", True),
    ("/a[@x='']", b'<a x=""/>', True),
    ("/a[@x='']", b"<a/>", False),
    ("/a[not(@x)]", b"<a y='1'/>", True),
    ("/a[@x]", b"<a y='1' x=''/>", True),
    ("/a[@x=1 and @y=2]/b", b"<a y='2' x='1'><b/></a>", True),
    ("/a[@x=1 and @y=2]/b", b"<a y='2' x='2'><b/></a>", False),
    # text children: CDATA joins the text, a comment or an element splits it
    ("/a[text()='hi']", b"<a>h<![CDATA[i]]></a>", True),
    ("/a[text()='hi']", b"<a>h<!-- c -->i</a>", False),
    ("/a[text()='i']", b"<a>h<!-- c -->i</a>", True),
    ("/a[text()='hi']", b"<a>h<b/>i</a>", False),
    ("/a[text()='h']", b"<a>h<?p x?>i</a>", True),
    ("/a[text()='<&']", b"<a>&lt;&amp;</a>", True),
    ("/a[text()='<&']", b"<a><![CDATA[<&]]></a>", True),
    ("/a[text()]", b"<a><![CDATA[]]></a>", False),  # an empty CDATA section is no text node
    ("/a[text()]", b"<a><![CDATA[]]>x</a>", True),
    ("/a[text()='a\nb']", b"<a>a\r\nb</a>", True),
    ("/a[text()='a\nb']", b"<a>a\rb</a>", True),
    ("/a[text()=' ']", b"<a> <b/></a>", True),
    ("/a/b[text()=2]", b"<a><b>1<c>2</c></b></a>", False),  # text children, not descendants
    # twigs: child and descendant steps, wildcards, names no query has
    ("/a[b/c]", b"<a><b/><b><c/></b></a>", True),
    ("/a[b/c]", b"<a><b/><d><c/></d></a>", False),
    ("/a[.//c]", b"<a><x><y><c/></y></x></a>", True),
    ("/a[.//c]", b"<a><x><y/></x><c2/></a>", False),
    ("/a[*/c]", b"<a><zz><c/></zz></a>", True),
    ("/a[b//c]", b"<a><b><x><c/></x></b></a>", True),
    ("/a[b//c]", b"<a><b/><x><c/></x></a>", False),
    ("/a[.//b/c]", b"<a><b><x><c/></x></b></a>", False),
    ("/a[.//b/c]", b"<a><x><b><c/></b></x></a>", True),
    ("//b[c]", b"<a><b><c/></b><b/></a>", True),
    ("/a[not(b)]", b"<a><c><b/></c></a>", True),
    ("/a[b or @x=1]", b"<a x='1'/>", True),
    ("/a[b][@x=1]/c", b"<a x='1'><c/><b/></a>", True),
    ("/a[.//*]", b"<a>t</a>", False),
    ("/a[b]//b[c]", b"<a><b><c/></b></a>", True),
    # profiles combining paths
    ("/a[@x=1] and not(//b[c])", b"<a x='1'><b/></a>", True),
    ("/a[@x=1] and not(//b[c])", b"<a x='1'><b><c/></b></a>", False),
    ("//b[text()=2] or /a[.//c]", b"<a><b>2</b></a>", True),
]


@pytest.mark.parametrize("query, xml, matches", CASES)
def test_compiled_cases(query, xml, matches):
    compiled = _check([query], [xml])
    assert compiled.stats["compiled_documents"] == 3  # two batches of one, then one alone
    assert compiled.filter(xml) == (frozenset({0}) if matches else frozenset())


def test_predicate_sets_take_the_compiled_loop_unless_positions_or_nested_predicates():
    assert FastFilter([parse_query("/a[@x=1]//b[c][text()=2]")]).stats["engine"] == "compiled"
    for text in ("/a[position()=1]", "/a[b[@x=1]]", "/a[b=2]", "/a[c/b[1]]"):
        engine = FastFilter([parse_query(text)])
        assert engine.stats["engine"] == "python", text
        assert engine.filter(b"<a x='1'><b x='1'>2</b></a>") == ReferenceFilter(
            [parse_query(text)]
        ).filter(b"<a x='1'><b x='1'>2</b></a>")


def test_a_guard_key_per_value_and_the_memo_reused():
    compiled, _, _ = _engines(["//b[@x=1]", "//b[@x=2]"])
    docs = [b"<a><b x='1'/><b x='2'/><b x='1'/></a>", b"<a><b x='&#50;'/></a>"]
    assert [f.tolist() for f in compiled.filter_many(docs)] == [[0, 1], [1]]
    misses = compiled.stats["guard_misses"]
    assert misses == 3  # '1', '2', '&#50;': raw keys
    assert [f.tolist() for f in compiled.filter_many(docs)] == [[0, 1], [1]]
    assert compiled.stats["guard_misses"] == misses


def test_deferred_documents_and_errors_in_a_batch():
    compiled = _check(
        ["/a[@x=1]/b", "//b[text()='t']", "/a[b]"],
        [
            b"<a x='1'><b>t</b></a>",
            b'<!DOCTYPE a [<!ENTITY e "t">]><a x="1"><b>&e;</b></a>',  # expat's
            b"<a x='1'><b>t</a>",  # malformed
            b"<a x='1'><b>t</b></a>",
        ],
    )
    # two batches (2 + 2 documents each way), then the well-formed ones alone (2 + 1)
    assert compiled.stats["compiled_documents"] == 6 and compiled.stats["expat_documents"] == 5


@st.composite
def nested(draw) -> str:
    """A nested path without predicates: ``c``, ``./c``, ``.//c``, up to three steps."""
    text = draw(st.sampled_from(["", "./", ".//"]))
    for i in range(draw(st.integers(1, 3))):
        if i:
            text += draw(st.sampled_from(["/", "//"]))
        text += draw(st.sampled_from(TAGS + ["*"]))
    return text


@st.composite
def condition(draw, depth: int = 0) -> str:
    kind = draw(st.integers(0, 7 if depth < 2 else 4))
    if kind <= 1:
        return draw(nested())
    if kind <= 3:
        target = draw(st.sampled_from(["@id", "@n", "text()"]))
        return f"{target} {draw(st.sampled_from(OPS))} {draw(st.sampled_from(LITERALS))}"
    if kind == 4:
        return draw(st.sampled_from(["@id", "@n", "text()"]))
    if kind == 5:
        return f"not({draw(condition(depth + 1))})"
    joiner = " and " if kind == 6 else " or "
    return joiner.join(draw(st.lists(condition(depth + 1), min_size=2, max_size=3)))


@st.composite
def path(draw) -> str:
    text = ""
    for _ in range(draw(st.integers(1, 4))):
        text += draw(st.sampled_from(["/", "//"])) + draw(st.sampled_from(TAGS + ["*"]))
        for _ in range(draw(st.sampled_from([0, 1, 1, 2]))):
            text += f"[{draw(condition())}]"
    return text


@st.composite
def profiles(draw) -> str:
    """A path, sometimes combined with another (``and``, ``or not``)."""
    first = draw(path())
    kind = draw(st.integers(0, 5))
    if kind == 0:
        return f"{first} and {draw(path())}"
    if kind == 1:
        return f"{first} or not({draw(path())})"
    return first


@st.composite
def raw_documents(draw) -> bytes:
    root = draw(elements(max_depth=5, values=tuple(RAW_VALUES)))
    style = draw(st.integers(0, 11))
    prolog = ['<?xml version="1.0"?>\n', "", "<?pi x?>", "<!-- c -->"][style % 4]
    return (prolog + serialize(root, style)).encode()


@examples(ci=200)
@given(
    texts=st.lists(profiles(), min_size=1, max_size=10),
    docs=st.lists(raw_documents(), min_size=1, max_size=4),
)
def test_compiled_equals_python_and_reference_on_generated_profiles(texts, docs):
    compiled = _check(texts, docs)
    assert compiled.stats["compiled_documents"] == 3 * len(docs)


@examples(ci=100)
@given(
    texts=st.lists(profiles(), min_size=1, max_size=6),
    docs=st.lists(raw_documents(), min_size=2, max_size=4),
)
def test_compiled_equals_reference_when_the_memo_is_dropped_after_every_batch(texts, docs):
    _check(texts, docs, cache_bytes=0)
