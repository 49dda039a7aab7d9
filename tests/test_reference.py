"""The reference filter against lxml (XPath 1.0) and against every shared expected file."""

import pytest
from hypothesis import given
from hypothesis import strategies as st

from xpfilt.engines import filter_batch
from xpfilt.lang.xpath import load_queries, parse_query
from xpfilt.software.events import load_documents
from xpfilt.software.lxml_filter import LxmlFilter
from xpfilt.software.reference import ReferenceFilter, reference_filter
from xpfilt.software.results import read_expected

from .conftest import examples, expected_cases
from .strategies import documents, queries


@pytest.mark.parametrize(
    "name, queries_path, folder, tsv", expected_cases(), ids=[c[0] for c in expected_cases()]
)
def test_reference_reproduces_shared_expected(name, queries_path, folder, tsv):
    loaded = load_queries(queries_path)
    assert not loaded.errors
    results = list(filter_batch(ReferenceFilter(loaded.queries), load_documents([folder])))
    assert {r.name: r.matches for r in results} == read_expected(tsv)


@examples(ci=300)
@given(document=documents(), texts=st.lists(queries(), min_size=1, max_size=12))
def test_reference_agrees_with_lxml_on_paths(document, texts):
    parsed = [parse_query(t, i + 1) for i, t in enumerate(texts)]
    assert ReferenceFilter(parsed).filter(document) == LxmlFilter(parsed).filter(document)


@examples(ci=300)
@given(document=documents(), texts=st.lists(queries(predicates=True), min_size=1, max_size=12))
def test_reference_agrees_with_lxml_on_predicates(document, texts):
    parsed = [parse_query(t, i + 1) for i, t in enumerate(texts)]
    assert ReferenceFilter(parsed).filter(document) == LxmlFilter(parsed).filter(document)


@pytest.mark.parametrize(
    "query, xml, matches",
    [
        ("/a", b"<a/>", True),
        ("/b", b"<a><b/></a>", False),  # '/' anchors at the document root
        ("//b", b"<a><b/></a>", True),
        ("/a/*/c", b"<a><b><c/></b></a>", True),
        ("/a/*/c", b"<a><c/></a>", False),  # '*' needs exactly one level
        ("/a//c", b"<a><b><b><c/></b></b></a>", True),
        ("//a/a", b"<a><b><a/></b></a>", False),  # recursion: no a directly under a
        ("//a//a", b"<a><b><a/></b></a>", True),
        ("/a/b", b"<a><c><b/></c></a>", False),  # a close restores the parent's state
        ("/a/b", b"<a><c/><b/></a>", True),
        ("/a[@x=1]/b", b'<a x="1.0"><b/></a>', True),
        ("/a[text()=2]", b"<a>1<b/> 2 </a>", True),  # any text node child; decided after <b/>
    ],
)
def test_reference_cases(query, xml, matches):
    assert reference_filter([parse_query(query)], xml) == (
        frozenset({0}) if matches else frozenset()
    )
