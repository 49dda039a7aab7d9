"""The custom engine's RTL (Amaranth simulator) against its cycle-accurate model and the
reference: every cycle's ready and readout beat, every document's answer."""

import pytest
from hypothesis import given
from hypothesis import strategies as st

from xpfilt.compiler.custom import CompileOptions, compile_queries
from xpfilt.hdl.frontend import Errors
from xpfilt.lang.xpath import load_queries, parse_query
from xpfilt.model.custom import collect_readout
from xpfilt.paths import shared_data
from xpfilt.software.reference import ReferenceFilter

from .conftest import examples
from .rtl_compare import compare_engine_with_model
from .strategies import documents, queries


def bits_of(plan, queries, document):
    ref = ReferenceFilter(queries).filter(document)
    position = {q.number: i for i, q in enumerate(queries)}
    return sum(1 << i for i, n in enumerate(plan.query_numbers) if position[n] in ref)


TRICKY = [
    b'<?xml version="1.0"?>\n<!DOCTYPE a [<!ENTITY e "x>y">]>\n<a k="v>/" j=\'q\'><b/><!-- -->'
    b"<![CDATA[<b>]]]><c>&amp;</c><?pi ?></a>",
    b"<a><a><b><a><b/></a></b></a></a>",
    b"<a>\n<b\n>t</b\n></a>",
]
BAD = [
    b"<a><b></a>",
    b"<a>" * 7 + b"</a>" * 7,
    b"<aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa/>",
    b"<a>",
    b"<a/><b/>",
    b"\x00\xff<a/>",
    # an entity with markup (issue 35 #7): flagged, never answered
    b'<!DOCTYPE a [<!ENTITY m "<b/>">]><a>&m;<c/></a>',
]
QUERIES = [
    parse_query(t, i + 1)
    for i, t in enumerate(
        ["/a/b", "//b", "/a//c", "/*/b/c", "//c/*", "/a/a//b", "/a/b/a", "//a/b", "/*"]
    )
]


@pytest.mark.parametrize(
    "options",
    [
        CompileOptions(cluster_size=4, max_depth=6),
        CompileOptions(
            cluster_size=16,
            max_depth=6,
            opt_last=False,
            opt_root=False,
            opt_share=False,
            prefix_sharing=False,
        ),
    ],
    ids=["3-clusters-all-opts", "1-cluster-no-opts"],
)
def test_rtl_equals_model_on_tricky_and_bad_documents(options):
    plan = compile_queries(QUERIES, options)
    docs = TRICKY + BAD[:3] + TRICKY[:1] + BAD[3:] + TRICKY[1:2]
    result = compare_engine_with_model(plan, docs, seed=1, p_valid=0.8, p_ready=0.6)
    assert result["mismatch"] is None, result["mismatch"]
    readouts = collect_readout(result["beats"], len(QUERIES))
    assert len(readouts) == len(docs)
    check_tricky_and_bad(plan, docs, readouts)


def check_tricky_and_bad(plan, docs, readouts) -> None:
    """Each TRICKY document answered as the reference says, each other one flagged."""
    for doc, readout in zip(docs, readouts):
        if doc in TRICKY:
            assert readout.errors == Errors(0)
            assert readout.bits == bits_of(plan, QUERIES, doc), doc
        elif b"&m;" in doc:
            assert readout.errors == Errors.ENTITY, doc
        else:
            assert readout.errors != Errors(0), doc


@pytest.mark.rtl
@examples(ci=15)
@given(
    docs=st.lists(documents(), min_size=1, max_size=3),
    texts=st.lists(queries(), min_size=1, max_size=8),
    cluster_size=st.integers(1, 4),
    seed=st.integers(0, 1000),
)
def test_rtl_equals_model_and_reference_on_random_cases(docs, texts, cluster_size, seed):
    parsed = [parse_query(t, i + 1) for i, t in enumerate(texts)]
    plan = compile_queries(parsed, CompileOptions(cluster_size=cluster_size, max_depth=10))
    result = compare_engine_with_model(
        plan, docs, seed=seed, p_valid=0.9, p_ready=0.9, extra_cycles=len(parsed) * 3 + 10
    )
    assert result["mismatch"] is None, result["mismatch"]
    readouts = collect_readout(result["beats"], len(parsed))
    assert [r.bits for r in readouts] == [bits_of(plan, parsed, d) for d in docs]


@pytest.fixture(scope="module")
def fixed_plan():
    """One design for the random documents of make test: elaborated once per process
    (rtl_compare's bench cache), not once per example as the test above does."""
    return compile_queries(QUERIES, CompileOptions(cluster_size=4, max_depth=6))


@examples(ci=100)
@given(
    docs=st.lists(documents(), min_size=1, max_size=3),
    seed=st.integers(0, 1000),
    flow=st.sampled_from([(1.0, 1.0), (0.9, 0.9), (0.6, 0.5)]),
)
def test_rtl_equals_model_and_reference_on_random_documents_of_one_design(
    fixed_plan, docs, seed, flow
):
    result = compare_engine_with_model(
        fixed_plan, docs, seed=seed, p_valid=flow[0], p_ready=flow[1], extra_cycles=40
    )
    assert result["mismatch"] is None, result["mismatch"]
    readouts = collect_readout(result["beats"], len(QUERIES))
    assert len(readouts) == len(docs)
    for doc, readout in zip(docs, readouts):
        if not readout.errors:
            assert readout.bits == bits_of(fixed_plan, QUERIES, doc), doc


def test_rtl_on_real_nitf_documents():
    data = shared_data()
    queries = load_queries(data / "queries/nitf-d8-p15-n2000.txt").queries[:24]
    plan = compile_queries(queries, CompileOptions(cluster_size=8))
    docs = [(data / f"nitf/docs/outFile{i}.xml").read_bytes() for i in (7, 42)]
    result = compare_engine_with_model(
        plan, docs, seed=3, p_valid=0.95, p_ready=1.0, extra_cycles=60
    )
    assert result["mismatch"] is None, result["mismatch"]
    readouts = collect_readout(result["beats"], len(queries))
    assert [r.bits for r in readouts] == [bits_of(plan, queries, d) for d in docs]


def test_back_to_back_short_documents_with_valid_and_ready_always_1():
    """Issue 11, defect 1: document ends that reach a busy readout must not merge."""
    from .test_model import back_to_back_short_documents

    queries = [parse_query("//a", 1), parse_query("//b", 2)]
    plan = compile_queries(queries)
    docs = back_to_back_short_documents()
    result = compare_engine_with_model(plan, docs, p_valid=1.0, p_ready=1.0, extra_cycles=40)
    assert result["mismatch"] is None, result["mismatch"]
    readouts = collect_readout(result["beats"], len(queries))
    assert [r.doc for r in readouts] == list(range(len(docs)))
    for doc, readout in zip(docs, readouts):
        if doc == b"x":
            assert readout.errors & Errors.MALFORMED
        else:
            assert readout.errors == Errors(0) and readout.bits == bits_of(plan, queries, doc)


@pytest.mark.parametrize(
    "cluster_size, max_depth, max_name",
    [(1, 1, 1), (1, 2, 2), (2, 4, 4), (3, 3, 5), (4, 8, 8), (8, 16, 32), (256, 5, 7)],
)
def test_rtl_equals_model_and_reference_at_every_parameter_edge(cluster_size, max_depth, max_name):
    """Cluster size, depth and name length at 1, at powers of two, at odd sizes and at the
    largest useful value; documents at and one beyond each limit."""
    long_tag = "t" * max_name
    queries = [
        parse_query(t, i + 1)
        for i, t in enumerate(
            ["/a", "//b", f"//{long_tag}", "/a/b", "/*//a", f"/a//{long_tag}", "//*", "/a/*/b"]
        )
    ]
    plan = compile_queries(queries, CompileOptions(cluster_size=cluster_size, max_depth=max_depth))
    docs = [
        b"<a/>",
        b"<b/>",
        f"<{long_tag}/>".encode(),
        b"x",
        b"<a>" * max_depth + b"</a>" * max_depth,
        b"<a>" * (max_depth + 1) + b"</a>" * (max_depth + 1),
        b"<a>" + b"<b>" * (max_depth - 1) + b"</b>" * (max_depth - 1) + b"</a>",
        f"<{long_tag}t/>".encode(),
        f"<a><{long_tag}/></a>".encode(),
        b"<b/>",
    ]
    result = compare_engine_with_model(
        plan,
        docs,
        seed=cluster_size,
        p_valid=0.9,
        p_ready=0.9,
        extra_cycles=len(queries) * 3 + 20,
        max_name=max_name,
    )
    assert result["mismatch"] is None, result["mismatch"]
    readouts = collect_readout(result["beats"], len(queries))
    assert len(readouts) == len(docs)
    answered = [(doc, r) for doc, r in zip(docs, readouts) if not r.errors]
    assert len(answered) >= 5 and any(r.bits for _, r in answered)
    for doc, readout in answered:
        assert readout.bits == bits_of(plan, queries, doc), doc
    assert readouts[5].errors & Errors.DEPTH_OVERFLOW
    assert readouts[7].errors & Errors.NAME_TOO_LONG


@pytest.mark.parametrize("p_valid, p_ready, seed", [(1.0, 1.0, 0), (0.6, 0.7, 1)])
def test_predicate_engine_on_back_to_back_short_documents(p_valid, p_ready, seed):
    """Attribute and text() predicates (issue 14) under flow control at its extremes: documents
    of 1-3 bytes between short ones with predicates, valid and ready always 1 or random; RTL =
    model every cycle, and each readout = the reference (or a flag for a malformed one)."""
    texts = ["/a[@x=1]", "//b[text()=5]", "/a[@x != 'y']/b[text() > 2]", "//*[@x]", "/a//b"]
    queries = [parse_query(t, i + 1) for i, t in enumerate(texts)]
    plan = compile_queries(queries, CompileOptions(cluster_size=2, max_depth=8))
    short = [b"x", b"<a", b"<a/", b"<a/>", b"<b>"]
    full = [b'<a x="1"/>', b"<b>5</b>", b'<a x="z"><b>7</b></a>', b'<a x="1"><b> 5 </b></a>']
    docs = [d for i in range(12) for d in (full[i % len(full)], short[i % len(short)])]
    result = compare_engine_with_model(
        plan, docs, seed=seed, p_valid=p_valid, p_ready=p_ready, extra_cycles=60
    )
    assert result["mismatch"] is None, result["mismatch"]
    readouts = collect_readout(result["beats"], len(queries))
    assert [r.doc for r in readouts] == list(range(len(docs)))
    for doc, readout in zip(docs, readouts):
        if doc in short and doc != b"<a/>":
            assert readout.errors & Errors.MALFORMED
        else:
            assert readout.errors == Errors(0) and readout.bits == bits_of(plan, queries, doc), doc


@pytest.mark.parametrize("readout", ["serial", "sparse"])
def test_each_cluster_is_cleared_by_its_own_register(readout):
    """The capture reaches the clusters' flags (and their shadow segments) through one register
    per cluster, not one net for all: at 8,000 queries that net had ~16,000 loads."""
    import re

    from xpfilt.hdl.verilog import emit_verilog

    qs = [parse_query(t, i + 1) for i, t in enumerate(["/a/b", "//c", "/a/d", "//e/f"])]
    verilog = emit_verilog(compile_queries(qs, CompileOptions(cluster_size=1, readout=readout)))
    clears = re.findall(r"\.clear\((cluster_\d+__clear)\)", verilog)
    assert len(set(clears)) == 4
    assert all(f"reg {name} " in verilog for name in clears)
    assert re.search(
        r"assign load = \{ cluster_3__clear, cluster_2__clear, cluster_1__clear, "
        r"cluster_0__clear \}",
        verilog,
    )
