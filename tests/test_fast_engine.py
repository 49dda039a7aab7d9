"""The fast engine (shared NFA, lazy DFA) against the reference filter and the shared answers.

The engine keeps its memo across documents, so the property tests run one engine over several
documents in turn: a wrong memo entry shows up as a wrong answer for a later document.
"""

import random
import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from xpfilt.engines import ENGINES, filter_batch, make_engine
from xpfilt.lang.xpath import load_queries, parse_query
from xpfilt.software.events import Document, DocumentError, load_documents, parse_events
from xpfilt.software.fast import FastFilter
from xpfilt.software.reference import ReferenceFilter
from xpfilt.software.results import read_expected

from .conftest import examples, expected_cases
from .strategies import documents, queries


@pytest.mark.parametrize(
    "name, queries_path, folder, tsv", expected_cases(), ids=[c[0] for c in expected_cases()]
)
def test_fast_reproduces_shared_expected(name, queries_path, folder, tsv):
    loaded = load_queries(queries_path)
    engine = FastFilter(loaded.queries)
    docs = load_documents([folder])
    expected = read_expected(tsv)
    for _ in range(2):  # cold, then from the memo
        assert {r.name: r.matches for r in filter_batch(engine, docs)} == expected


def _agree(texts, docs, **options):
    parsed = [parse_query(t, i + 1) for i, t in enumerate(texts)]
    ref = ReferenceFilter(parsed)
    # the compiled loop where it applies, and the Python path (the fallback) always
    fast, python = FastFilter(parsed, **options), FastFilter(parsed, compiled=False, **options)
    assert python.stats["engine"] == "python"
    for doc in docs + docs[:1]:
        expected = ref.filter(doc)
        for engine in (fast, python):
            assert engine.filter(doc) == expected
            assert engine.filter_ordered(doc) == sorted(expected)
            assert engine.filter_events(parse_events(doc)) == expected
    batch = docs + docs[:1]
    assert [found.tolist() for found in fast.filter_many(batch)] == [
        sorted(ref.filter(doc)) for doc in batch
    ]


@examples(ci=300)
@given(
    docs=st.lists(documents(), min_size=1, max_size=3),
    texts=st.lists(queries(), min_size=1, max_size=12),
)
def test_fast_agrees_with_reference_on_paths(docs, texts):
    _agree(texts, docs)


@examples(ci=300)
@given(
    docs=st.lists(documents(), min_size=1, max_size=3),
    texts=st.lists(queries(predicates=True), min_size=1, max_size=12),
)
def test_fast_agrees_with_reference_on_predicates(docs, texts):
    _agree(texts, docs)


@examples(ci=100)
@given(
    docs=st.lists(documents(), min_size=2, max_size=4),
    texts=st.lists(queries(predicates=True), min_size=1, max_size=8),
)
def test_fast_agrees_when_the_memo_is_dropped_after_every_document(docs, texts):
    _agree(texts, docs, cache_bytes=0)


@pytest.mark.parametrize(
    "query, xml, matches",
    [
        ("//a//a", b"<a><b><a/></b></a>", True),
        ("//a/a", b"<a><b><a/></b></a>", False),
        ("/a/*/c", b"<a><c/></a>", False),
        ("/a//*//c", b"<a><b><c/></b></a>", True),
        ("/a//*//c", b"<a><c/></a>", False),
        ("/a/b", b"<a><c/><b/></a>", True),
        ("/a[@x=1]/b", b'<a x="1.0"><b/></a>', True),
        ("/a[@x=1]/b", b'<a x="2"><b/></a>', False),
        ("/a[text()=2]", b"<a>1<b/> 2 </a>", True),
        ("//b[@n='x']", b"<a><b n='y'/><c><b n='x'/></c></a>", True),
    ],
)
def test_fast_cases(query, xml, matches):
    assert FastFilter([parse_query(query)]).filter(xml) == (
        frozenset({0}) if matches else frozenset()
    )


def test_duplicate_and_no_queries():
    texts = ["/a", "//b", "/a", "/a/b", "//b", "/a", "/c"]
    engine = FastFilter([parse_query(t) for t in texts])
    assert engine.filter(b"<a><b/></a>") == {0, 1, 2, 3, 4, 5}
    assert FastFilter([]).filter(b"<a/>") == frozenset()


def test_same_guarded_step_decided_per_element():
    # one memo entry (state after /a, tag b) must give different answers for different attributes
    engine = FastFilter([parse_query("/a/b[@n=1]/c", 1), parse_query("/a/b/d", 2)])
    assert engine.filter(b'<a><b n="2"><c/><d/></b></a>') == {1}
    assert engine.filter(b'<a><b n="1"><c/></b></a>') == {0}
    assert engine.filter(b'<a><b n="2"><c/></b><b n="1"><d/></b></a>') == {1}


def test_repeated_paths_are_memoized(data):
    engine = FastFilter(load_queries(data / "queries" / "nitf-d8-p15-n2000.txt").queries)
    doc = Document.from_path(data / "nitf" / "docs" / "outFile1.xml")
    first = engine.filter(doc)
    misses = engine.stats["misses"]
    assert misses > 0
    assert engine.filter(doc) == first and engine.stats["misses"] == misses


def test_compiled_misses_intern_the_sets_the_python_path_does(data):
    # the compiled misses (xpfilt.software.compiled_dfa) hash each set in no particular order:
    # a set met again must be the same DFA state, and two sets never one; past the tables'
    # first sizes (64 states), so that they grow and the hash table is rebuilt
    queries = load_queries(data / "queries" / "nitf-d8-p15-n2000.txt").queries
    docs = [Document.from_path(p) for p in load_documents([data / "nitf" / "docs"])][:40]
    compiled, python = FastFilter(queries), FastFilter(queries, compiled=False)
    assert compiled.stats["engine"] == "compiled"
    misses = []
    for _ in range(2):
        assert [a.tolist() for a in compiled.filter_many(docs)] == [
            python.filter_ordered(doc) for doc in docs
        ]
        misses.append(compiled.stats["misses"])
    assert misses[0] == misses[1]  # the second pass finds every transition
    states = python.stats["dfa_states"]
    assert compiled.stats["dfa_states"] == states > 64
    for number in range(states):  # the same sets, numbered alike, each in some order
        assert sorted(compiled._states(number)) == python._states(number).tolist()


def test_the_memo_is_dropped_when_distinct_names_outgrow_its_budget():
    # the Python path memoizes per name; the compiled loop per query name (others are one tag)
    queries = [parse_query("/r/*", 1), parse_query("//n7", 2)]
    engine = FastFilter(queries, cache_bytes=100_000, compiled=False)
    many = ("<r>" + "".join(f"<n{i}/>" for i in range(2000)) + "</r>").encode()
    assert engine.filter(many) == {0, 1}
    assert engine.stats["resets"] == 1 and engine.stats["memo_bytes"] > 100_000
    assert engine.filter(b"<r><n7/></r>") == {0, 1} and engine.stats["resets"] == 1
    compiled = FastFilter(queries, cache_bytes=100_000)
    assert compiled.stats["engine"] == "compiled"
    assert compiled.filter(many) == {0, 1} and compiled.stats["memo_bytes"] < 10_000
    compiled = FastFilter(queries, cache_bytes=0)  # dropped after every batch
    for _ in range(3):
        assert compiled.filter(many) == {0, 1}
    assert compiled.stats["resets"] == 3


def test_stats_say_which_path_each_document_took():
    engine = FastFilter([parse_query("/a/b", 1)])
    docs = [
        b"<a><b/></a>",
        b'<?xml version="1.0" encoding="utf-8"?><!-- c --><a x="&lt;&#233;"><b>t&amp;</b></a>',
        b'<!DOCTYPE a [<!ENTITY e "x">]><a><b>&e;</b></a>',  # an internal subset: expat
        b"<a><b></a>",  # malformed: expat decides, and says why
        '<?xml version="1.0" encoding="latin-1"?><a><b>\xe9</b></a>'.encode("latin-1"),
    ]
    found = engine.filter_many(docs)
    assert [f.tolist() for f in found[:3]] + [str(found[3])[:10], found[4].tolist()] == [
        [0],
        [0],
        [0],
        "<bytes>:1:",
        [0],
    ]
    assert engine.stats["compiled_documents"] == 2 and engine.stats["expat_documents"] == 3
    predicates = FastFilter([parse_query("/a[@x=1]", 1)])
    assert predicates.stats["engine"] == "compiled"  # value predicates: the compiled loop too
    assert predicates.filter(b'<a x="1"/>') == {0} and predicates.stats["compiled_documents"] == 1
    positional = FastFilter([parse_query("/a[position()=1]", 1)])
    assert positional.stats["engine"] == "python"  # sibling counts keep the Python path
    assert positional.filter(b"<a/>") == {0} and positional.stats["expat_documents"] == 1


def test_malformed_and_encoded_documents_answer_like_the_reference():
    queries = [parse_query("/a/b", 1), parse_query("//c", 2)]
    docs = [
        Document("bad.xml", b"<a><b></a>"),
        Document("empty.xml", b""),
        Document(
            "latin.xml",
            '<?xml version="1.0" encoding="ISO-8859-1"?><a><b>é</b></a>'.encode("latin-1"),
        ),
        Document("utf16.xml", "<a><c/></a>".encode("utf-16")),
        Document("ok.xml", b"<a><b/><c/></a>"),
    ]
    fast = list(filter_batch(FastFilter(queries), docs))
    assert fast == list(filter_batch(ReferenceFilter(queries), docs))
    assert fast[0].error.startswith("bad.xml:1:")
    assert fast[-1].matches == (1, 2)


def test_batch_answers_are_sorted_numbers_whatever_the_query_order():
    texts = ["//b", "/a", "//c", "/a/b"]
    doc = Document("d.xml", b"<a><b/><c/></a>")
    for numbers in ([1, 2, 3, 4], [7, 3, 9, 1]):  # ascending: filter_ordered; else a set
        queries = [parse_query(t, n) for t, n in zip(texts, numbers)]
        [result] = filter_batch(FastFilter(queries), [doc])
        [expected] = filter_batch(ReferenceFilter(queries), [doc])
        assert result == expected and result.matches == tuple(sorted(numbers))


def test_fast_is_the_registered_default_engine():
    assert list(ENGINES)[0] == "fast"
    assert isinstance(make_engine("fast", [parse_query("/a")]), FastFilter)


def test_tsv_lines_are_the_numbers_in_order_whatever_their_range():
    from xpfilt.software.results import format_tsv_line

    for numbers in ([], [3, 1, 2], [0, 5, 10**7], [-1, 5], list(range(70_000, 0, -7))):
        assert format_tsv_line("d.xml", numbers) == "d.xml\t" + " ".join(
            str(n) for n in sorted(numbers)
        )


def test_lines_are_the_batch_results_formatted(data, tmp_path):
    from xpfilt.engines import filter_lines
    from xpfilt.software.results import format_tsv_line

    queries = load_queries(data / "queries" / "nitf-d8-p15-n2000.txt").queries
    docs = load_documents([data / "nitf" / "docs"])[:30] + [tmp_path / "missing.xml"]
    docs.insert(3, Document("bad.xml", b"<a><b></a>"))
    for engine in (
        FastFilter(queries),
        FastFilter(queries, compiled=False),
        ReferenceFilter(queries),
    ):
        lines = list(filter_lines(engine, docs))
        expected = [
            (r.name, format_tsv_line(r.name, r.matches) if r.ok else None, r.error)
            for r in filter_batch(ReferenceFilter(queries), docs)
        ]
        assert lines == expected
    assert lines[3][2].startswith("bad.xml:1:") and "cannot read" in lines[-1][2]


def _every_path(names=("a", "b", "*"), depth=3) -> list[str]:
    paths = [""]
    out = []
    for _ in range(depth):
        paths = [p + axis + name for p in paths for axis in ("/", "//") for name in names]
        out.extend(paths)
    return out


def test_accept_order_reads_the_paths_backwards():
    from xpfilt.software.fast import _Nfa

    texts = _every_path()
    random.Random(5).shuffle(texts)
    nfa = _Nfa([parse_query(t, i + 1) for i, t in enumerate(texts)])
    tag = {"a": 1, "b": 2, "*": 3}  # names, then '*', then '//' (the descendant state)

    def backwards(text):
        steps = re.findall(r"(//|/)([^/]+)", text)
        return [
            code for axis, name in reversed(steps) for code in [tag[name]] + [4] * (axis == "//")
        ]

    assert nfa.accept_order().tolist() == sorted(
        range(len(texts)), key=lambda i: (backwards(texts[i]), i)
    )


def test_compiled_answers_span_many_words_in_any_query_order():
    # 1,092 queries in shuffled order: the answers cross 64-query words, internal numbers
    # (accept_order) differ from positions, and some words hold more than eight answers
    texts = _every_path(("a", "b", "c", "*"), 3)
    random.Random(7).shuffle(texts)
    queries = [parse_query(t, i + 1) for i, t in enumerate(texts)]
    rng = random.Random(11)

    def tree(depth):
        name = rng.choice("abcd")
        kids = "".join(tree(depth + 1) for _ in range(rng.randint(0, 3) if depth < 5 else 0))
        return f"<{name}>{kids}</{name}>"

    datas = [tree(0).encode() for _ in range(60)] + [b"<d/>", b"<a><b><c/></b></a>"]
    # deferred to expat: the Python path expands the same DFA states' words (_accepted)
    datas += [b"<!DOCTYPE a>" + d for d in datas[:20:2]]
    engine, reference = FastFilter(queries), ReferenceFilter(queries)
    assert engine.stats["engine"] == "compiled"
    for _ in range(2):  # cold, then from the memo
        found = engine.filter_many(datas)
        assert [f.tolist() for f in found] == [sorted(reference.filter(d)) for d in datas]
    assert max(len(f) for f in found) > 300
    assert engine.stats["expat_documents"] == 20 and engine.stats["resets"] == 0


def test_batch_text_is_every_number_in_decimal():
    numbers = [-12, -1, 0, 7, 9, 10, 99, 100, 101, 9999, 10**5, 10**11 + 7, 2**62]
    texts = ["/a", "//b", "/a/b", "//*", "/a/*"] * 3
    queries = [parse_query(t, i) for i, t in enumerate(texts[: len(numbers)])]
    datas = [b"<a><b/></a>", b"<b/>", b"<a>", b"<c/>"]
    for engine in (FastFilter(queries), FastFilter(queries, compiled=False)):
        found = engine.filter_many(datas)
        lines = engine.filter_many_text(datas, numbers)
        assert isinstance(found[2], DocumentError) and str(lines[2]) == str(found[2])
        for f, line in zip(found[:2] + found[3:], lines[:2] + lines[3:]):
            assert line == " ".join(str(numbers[p]) for p in f.tolist())
        assert lines[0].startswith("-12 -1 0 7 9 10 99 100 101 9999 100000")
        # the text buffer is kept between batches: a shorter batch, then a longer one
        assert engine.filter_many_text(datas[3:], numbers) == lines[3:]
        longer = engine.filter_many_text(datas * 40, numbers)
        assert list(map(str, longer)) == list(map(str, lines)) * 40
