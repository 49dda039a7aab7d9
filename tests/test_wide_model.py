"""The W-byte front end's model (issue 18): the same events and answers as the one-byte front
end at every W, only faster, and flow control at its extremes."""

import random

import pytest
from hypothesis import given
from hypothesis import strategies as st

from xpfilt.compiler.custom import CompileOptions, compile_queries
from xpfilt.engines import filter_batch
from xpfilt.hwspec.contract import Errors, down_sweep_stages, queue_depth_for, wide_parser_stages
from xpfilt.lang.xpath import load_queries, parse_query
from xpfilt.model.custom import EngineModel, ModelEngine, document_beats, run_documents
from xpfilt.model.frontend import NO_EVENT, FrontEndModel
from xpfilt.model.wide_frontend import WideFrontEndModel
from xpfilt.software.events import load_documents
from xpfilt.software.results import read_expected

from . import strategies
from .conftest import examples, expected_cases
from .test_model import run_with_gaps

WIDTHS = (2, 4, 8)
STRUCTURAL = [c for c in expected_cases() if "pred" not in c[0]]
TAGS = strategies.TAGS


def wide_events(model: WideFrontEndModel, docs, gaps=None):
    """Every event of ``docs`` streamed back to back through ``model`` (beats offered whenever
    it has room, or with ``gaps`` a random.Random that leaves some cycles idle)."""
    beats = [b for d in docs for b in document_beats(d, model.width)]
    out, i, incoming, current = [], 0, False, (b"", False)
    while (
        i < len(beats)
        or model.queue
        or model.d1
        or model.d2
        or incoming
        or any(beat is not None for beat in model.stages)
        or model.e is not NO_EVENT
        or model.f is not NO_EVENT
    ):
        assert len(model.queue) <= model.queue_depth
        offer = i < len(beats) and model.room(incoming) and not (gaps and gaps.random() < 0.3)
        ev = model.step(incoming, *(current if incoming else (b"", False)))
        if offer:
            current, incoming = beats[i], True
            i += 1
        else:
            incoming = False
        if ev is not NO_EVENT:
            out.append(ev)
    return out


def byte_events(model: FrontEndModel, docs):
    out = []
    for d in docs:
        for i, c in enumerate(d):
            ev = model.step(True, c, i == len(d) - 1)
            if ev is not NO_EVENT:
                out.append(ev)
    for _ in range(8):
        ev = model.step(False, 0, False)
        if ev is not NO_EVENT:
            out.append(ev)
    return out


BAD = [
    b"<a><b></a>",
    b"<a>" * 9 + b"</a>" * 9,
    b"<" + b"a" * 40 + b"/>",
    b"<a>",
    b"x",
    b"<",
    b"<a/>",
    b"<a></a>  ",
    b"<!-- -->",
]


@examples(ci=60)
@given(
    docs=st.lists(st.one_of(strategies.documents(), st.sampled_from(BAD)), min_size=1, max_size=4),
    width=st.sampled_from(WIDTHS),
    seed=st.integers(0, 3),
)
def test_wide_front_end_makes_the_one_byte_front_ends_events(docs, width, seed):
    tags = TAGS + ["a" * 32]
    want = byte_events(FrontEndModel(tags, max_depth=8), docs)
    got = wide_events(
        WideFrontEndModel(tags, width=width, max_depth=8),
        docs,
        random.Random(seed) if seed else None,
    )
    assert got == want


@pytest.mark.parametrize("width", WIDTHS)
def test_events_of_back_to_back_one_to_three_byte_documents(width):
    docs = [b"<a/>"[:n] for n in (1, 2, 3)] * 3 + [b"<a/>", b"x", b"  ", b"<b/>"]
    want = byte_events(FrontEndModel(TAGS, max_depth=8), docs)
    assert wide_events(WideFrontEndModel(TAGS, width=width, max_depth=8), docs) == want
    assert sum(ev.doc_end for ev in want) == len(docs)


@pytest.mark.parametrize("width", WIDTHS)
def test_the_queue_is_never_over_full_on_the_densest_input(width):
    docs = [b"<r>" + b"<a/>" * 300 + b"</r>"]
    model = WideFrontEndModel(TAGS, width=width, max_depth=8)
    events = wide_events(model, docs)  # asserts the queue depth every cycle
    assert sum(ev.push for ev in events) == 301


#: Every shared structural set at every W is a long run (make regress); one stays in make test.
SHARED = [
    pytest.param(
        *case,
        width,
        id=f"{case[0]}-W{width}",
        marks=() if (case is STRUCTURAL[0] and width == 4) else pytest.mark.regress,
    )
    for case in STRUCTURAL
    for width in WIDTHS
]


@pytest.mark.parametrize("name, queries_path, folder, tsv, width", SHARED)
def test_wide_model_reproduces_shared_expected(name, queries_path, folder, tsv, width):
    engine = ModelEngine(load_queries(queries_path).queries, bytes_per_cycle=width)
    results = {r.name: r.matches for r in filter_batch(engine, load_documents([folder]))}
    assert results == read_expected(tsv)


QUERIES = [
    parse_query(t, i + 1)
    for i, t in enumerate(("/a/b", "//b", "/a//c", "/*/b/c", "//c/*", "/a/c/d", "/a/b/c", "//d"))
]


@pytest.mark.parametrize("width", WIDTHS)
@pytest.mark.parametrize("seed", range(3))
def test_random_gaps_and_readout_stalls_give_the_one_byte_answers(width, seed):
    rng = random.Random(seed)
    plan = compile_queries(QUERIES, CompileOptions(cluster_size=3, max_depth=8))
    docs = [
        rng.choice(
            [
                b"<a><b><c/></b><c><d/></c></a>",
                b"<c><x/></c>",
                b"<a/>",
                b"x",
                b"<a>",
                b"<a><b/>\n</a>",
                b"<d/> ",
            ]
        )
        for _ in range(20)
    ]
    want = run_documents(EngineModel(plan), docs)
    got = run_with_gaps(EngineModel(plan, bytes_per_cycle=width), docs, rng)
    assert [(r.bits, r.errors) for r in got] == [(r.bits, r.errors) for r in want]


@pytest.mark.parametrize("width", WIDTHS)
def test_w_bytes_per_cycle_when_documents_outlast_the_readout(width):
    model = EngineModel(compile_queries(QUERIES), bytes_per_cycle=width)
    doc = b"<a>" + (b"<b>" + b"text, " * 8 + b"<c/></b>") * 20 + b"</a>"
    for data, last in document_beats(doc, width) * 3:
        ready, _ = model.step(True, data, last)
        assert ready


def test_a_beat_must_be_full_unless_last():
    model = WideFrontEndModel(TAGS, width=4)
    model.step(True, b"<a/", True)
    with pytest.raises(ValueError, match=r"^beat must have 4 bytes \(1 to 4 with last\), not 3$"):
        model.step(True, b"<a/", False)


def test_parser_stages_are_the_up_sweep_the_down_sweep_and_ten_more():
    """log2(W) up-sweep levels, log2(W) - 1 down-sweep stages, and S, O, N, N2, L, L2, L3, L4
    (the CAM result), M, M2, P2."""
    assert [down_sweep_stages(w) for w in (2, 4, 8)] == [0, 1, 2]
    assert [wide_parser_stages(w) for w in (2, 4, 8)] == [11, 13, 15]


def test_queue_depth_and_bad_widths():
    assert [queue_depth_for(w) for w in (2, 4, 8)] == [36, 76, 168]
    with pytest.raises(ValueError, match=r"^bytes per cycle must be one of 1, 2, 4, 8, not 3$"):
        EngineModel(compile_queries(QUERIES), bytes_per_cycle=3)


#: Value predicates of every kind: attribute strings, numbers, existence, and/or/not, several
#: per step; text() comparisons and existence, nested paths with predicates.
PREDICATE_TEXTS = [
    "/a[@id=1]/b",
    "/a/b",
    "//b[@n != 2 and not(@id < 1.5)]",
    "/*[@id]//c[@n='x']",
    "//a[@id >= -0.5 or @n = ' 2 ']/*",
    "/a[@id=1][@n]/b[@id='q r']",
    "//c[@idx]",
    "//b[text()='x y']",
    "/a[text() > 1.5]",
    "//*[c[text()]]",
    "/a[b[text()=2]]//c",
    "//*[text()='q' or @n='x']",
]
#: Text nodes split by comments and elements, continued by CDATA, undecided (a reference, a
#: "]" inside CDATA, an exponent), text beyond the depth limit, values in attributes.
PREDICATE_DOCS = [
    b"<a>2<b>x y</b><c>t</c></a>",
    b"<a>1<!-- -->.6<b>x<![CDATA[ y]]></b></a>",
    b"<a><b>2</b><c/><b>x y</b></a>",
    b"<a>q<b><c>q</c></b>3</a>",
    b"<a><b>x &amp; y</b></a>",
    b"<a><b><![CDATA[x]y]]></b></a>",
    b"<a>1e2</a>",
    b"<a><b><c><b><c><b><c>q</c></b></c></b></c></b></a>",
    b'<a id="1" n="x">7<b id="q r" n="1">x y</b></a>',
    b"<a>  1.75 </a>",
    b"<a><?p ?>2<b>2</b></a>",
    b"<a>x<b>x y</b>y</a>",
]


def test_value_predicates_at_every_width_give_the_reference_answers():
    """Value predicates (attribute and text(), see :data:`PREDICATE_TEXTS`) at W = 2, 4, 8:
    the model's answers are the reference's, document by document, and a value the
    comparators cannot decide flags its document at every W as at W = 1."""
    from xpfilt.software.reference import ReferenceFilter

    from .test_attr_predicates import frontend_documents

    queries = [parse_query(t, i + 1) for i, t in enumerate(PREDICATE_TEXTS)]
    docs = frontend_documents(5, 40) + PREDICATE_DOCS + [b'<a id="1e0"><b/></a>']
    reference = ReferenceFilter(queries)
    one = ModelEngine(queries)
    want = []
    for doc in docs:
        try:
            want.append(sorted(one.filter(doc)))
        except Exception as exc:  # flagged (malformed, undecided)
            want.append(type(exc).__name__ + str(getattr(exc, "errors", "")))
    decided = [doc for doc, w in zip(docs, want) if isinstance(w, list)]
    assert len(decided) > 20 and any(w for w in want if isinstance(w, list))
    assert {p for w in want if isinstance(w, list) for p in w} >= set(range(7, 12))  # text()
    for doc, w in zip(docs, want):
        if isinstance(w, list):
            assert w == sorted(reference.filter(doc)), doc
    for width in WIDTHS:
        engine = ModelEngine(queries, bytes_per_cycle=width)
        got = []
        for doc in docs:
            try:
                got.append(sorted(engine.filter(doc)))
            except Exception as exc:
                got.append(type(exc).__name__ + str(getattr(exc, "errors", "")))
        assert got == want, width


def test_bad_documents_raise_the_same_flags_at_every_width():
    plan = compile_queries(QUERIES, CompileOptions(max_depth=8))
    want = run_documents(EngineModel(plan), BAD)
    assert any(r.errors & Errors.DEPTH_OVERFLOW for r in want)
    for width in WIDTHS:
        got = run_documents(EngineModel(plan, bytes_per_cycle=width), BAD)
        assert [(r.bits, r.errors) for r in got] == [(r.bits, r.errors) for r in want]


def test_twigs_and_combinations_without_value_predicates_run_at_every_width(data):
    """Nested paths and boolean combinations live in the stacks: the W-byte front end serves
    them as it is (only value predicates are refused)."""
    from xpfilt.software.events import Document
    from xpfilt.software.reference import ReferenceFilter

    texts = [
        "/nitf[head]/body",
        "//body.head[hedline/hl1]//p",
        "/nitf/head and not(/nitf/body//table)",
        "//p or //block[p]",
        "/nitf[head/title]//*[p]",
    ]
    queries = [parse_query(t, i + 1) for i, t in enumerate(texts)]
    docs = [Document.from_path(p) for p in load_documents([data / "nitf/docs"])][:20]
    reference = ReferenceFilter(queries)
    want = [reference.filter(d.data) for d in docs]
    assert any(want)
    for width in WIDTHS:
        engine = ModelEngine(queries, bytes_per_cycle=width)
        assert [engine.filter(d) for d in docs] == want
