# amaranth: UnusedElaboratable=no
"""Issue 15: twig profiles (nested paths in predicates) in the custom engine. The anchor step
is fired through the shared trie, the steps below it are twig entries checked bottom up on
pops (see :mod:`xpfilt.hdl.stacks`). Checked: the cycle-accurate model against the reference on
hypothesis-generated twigs (recursion, repeated names, branches matched before and after the
trunk goes on, nested to any depth, mixed with attribute and text() conditions), the RTL
against the model every cycle under flow control at its extremes, and (``make regress``) the
Verilog in Verilator on a twig set generated from the NITF DTD over the shared documents."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from xpfilt.compiler.custom import CompileOptions, TwigChecks, compile_queries
from xpfilt.hdl.frontend import Errors
from xpfilt.lang.xpath import parse_query
from xpfilt.model.custom import ModelEngine, collect_readout
from xpfilt.paths import shared_data
from xpfilt.software.events import Document, document_depth, parse_events
from xpfilt.verify.regress import RegressionConfig, run_regression
from xpfilt.workloads import PredicateGenConfig, QueryGenConfig, generate_queries

from .conftest import examples
from .rtl_compare import compare_engine_with_model
from .strategies import TAGS, documents
from .test_engine_rtl import bits_of
from .test_profile_language import conditions
from .test_text_conditions import check_text_model_against_reference
from .test_workloads import schema

#: Twigs with what the hardware must tell apart: branch before / after the trunk goes on,
#: recursion (an outer and an inner element with the same name), a branch below a trunk step,
#: nested branches, negation, attributes and text() under or/not with a branch.
TWIGS = [
    "/a[b]/c",
    "//a[b]/c",
    "//a[b]//c",
    "/a[.//b]/c",
    "/a[b/c and b/d]",
    "/a[b[c and d]]",
    "/a[b[c[d]]]",
    "/a[not(b)]",
    "/a[@x=1 or b]/c",
    "//b[text()=5 or c]",
    "/a/b[c = 5][not(.//d)]",
    "/*[*[@x = 1]/c]",
    "//a[b or text()]//c[d]",
    "/a[b][c]",
    "//*[a and not(*/b)]",
]
DOCS = [
    b"<a><b/><c/></a>",
    b"<a><c/><b/></a>",
    b"<a><c><b/></c></a>",
    b"<a><a><c/></a><b/></a>",
    b"<a><b><c/></b><b><d/></b></a>",
    b"<a><b><c/><d/></b></a>",
    b"<a><b><c><d/></c></b></a>",
    b'<a x="1"><c/></a>',
    b"<a><b>5</b><c>5</c></a>",
    b"<a><b><c>5</c><e><d/></e></b></a>",
    b'<a><z x="1"><c/></z></a>',
    b"<a>t<b/><c><d/></c></a>",
    b"<b><a><b/></a><a/></b>",
]


@st.composite
def twigs(draw) -> str:
    """A path of 1-4 steps over the test tags, 0-2 predicates per step: nested paths (to any
    depth) and attribute / text() conditions combined with and/or/not, no position()."""
    text = ""
    for _ in range(draw(st.integers(1, 4))):
        text += draw(st.sampled_from(["/", "//"])) + draw(st.sampled_from(TAGS + ["*"]))
        for _ in range(draw(st.sampled_from([0, 1, 1, 2]))):
            text += f"[{draw(conditions(position=False))}]"
    return text


def test_twig_cases_model_equals_reference():
    for options in (
        CompileOptions(),
        CompileOptions(prefix_sharing=False, opt_share=False, opt_root=False, opt_last=False),
        CompileOptions(cluster_size=1),
    ):
        assert check_text_model_against_reference(TWIGS, DOCS, options) == len(DOCS)
    model = ModelEngine([parse_query(t, i + 1) for i, t in enumerate(TWIGS)])
    assert 0 in model.filter(DOCS[1])  # /a[b]/c: the branch after the trunk
    assert 1 not in model.filter(DOCS[3])  # //a[b]/c: c's parent has no b


@given(
    st.lists(twigs(), min_size=1, max_size=6),
    st.lists(documents(), min_size=1, max_size=3),
    st.sampled_from([None, 1, 2]),
    st.booleans(),
)
@examples(ci=300)
def test_model_equals_reference_on_generated_twigs(texts, docs, cluster_size, share):
    options = CompileOptions(
        cluster_size=cluster_size, prefix_sharing=share, opt_share=share, max_depth=8
    )
    check_text_model_against_reference(texts, docs, options)


def test_twigs_share_the_prefix_with_path_profiles():
    """A twig's steps above its anchor are nodes of the cluster's trie: ``/a/b[c]/d`` adds only
    its anchor ``b`` (and the entries' columns) to ``/a/b/e``'s nodes."""
    paths = compile_queries([parse_query("/a/b/e", 1), parse_query("//x/y/z", 2)])
    both = compile_queries(
        [
            parse_query("/a/b/e", 1),
            parse_query("//x/y/z", 2),
            parse_query("/a/b[c]/d", 3),
            parse_query("/a/b[d]/c", 4),
        ]
    )
    # new: the anchor b (one for both twigs) and the free columns c and d (shared)
    assert both.stats["nodes"] == paths.stats["nodes"] + 3
    assert both.stats["columns"] == paths.stats["columns"] + 3


def test_equal_twig_entries_share_their_pending_bit():
    """Entries with the same column, axis and condition over the same entries hold at the same
    elements: ``head`` under ``/nitf``'s anchor is one pending bit for all three twigs, ``title``
    under it another; ``//title`` and ``[x]`` are bits of their own."""
    texts = [
        "/nitf[head]/a",
        "/nitf[head]/b",
        "/nitf[head[title]]",
        "/nitf[head[.//title]]",
        "/nitf[head/title]/x",
    ]
    plan = compile_queries([parse_query(t, i + 1) for i, t in enumerate(texts)])
    checks = TwigChecks.of(plan.clusters[0])
    # head, a, b, title, head[title], //title, head[//title], x
    assert len(checks.pending) == 8 and len(checks.anchors) == 5
    assert sum(len(q.chain) - 1 for q in plan.clusters[0].queries) == 11


@pytest.mark.parametrize("p_valid, p_ready, seed", [(1.0, 1.0, 0), (0.6, 0.7, 1)])
def test_twig_engine_rtl_equals_model_on_back_to_back_short_documents(p_valid, p_ready, seed):
    """Twigs under flow control at its extremes: 1-3 byte documents between twig documents,
    valid and ready always 1 or random, clusters of 2; RTL = model every cycle, and each readout
    = the reference (or a flag for a malformed one)."""
    queries = [parse_query(t, i + 1) for i, t in enumerate(TWIGS)]
    plan = compile_queries(queries, CompileOptions(cluster_size=2, max_depth=8))
    short = [b"x", b"<a", b"<a/", b"<a/>", b"<b>"]
    docs = [d for i in range(len(DOCS)) for d in (DOCS[i], short[i % len(short)])]
    result = compare_engine_with_model(
        plan, docs, seed=seed, p_valid=p_valid, p_ready=p_ready, extra_cycles=80
    )
    assert result["mismatch"] is None, result["mismatch"]
    readouts = collect_readout(result["beats"], len(queries))
    assert [r.doc for r in readouts] == list(range(len(docs)))
    matched = 0
    for doc, readout in zip(docs, readouts):
        if doc in short and doc != b"<a/>":
            assert readout.errors & Errors.MALFORMED
        else:
            assert readout.errors == Errors(0) and readout.bits == bits_of(plan, queries, doc), doc
            matched |= readout.bits
    assert bin(matched).count("1") >= len(TWIGS) - 2  # nearly every twig matched once


@pytest.mark.parametrize(
    "options",
    [
        CompileOptions(cluster_size=1, max_depth=1),
        CompileOptions(
            cluster_size=4,
            max_depth=3,
            opt_last=False,
            opt_root=False,
            opt_share=False,
            prefix_sharing=False,
        ),
        CompileOptions(cluster_size=64, max_depth=4),
    ],
)
def test_twig_engine_rtl_equals_model_at_parameter_edges(options):
    """One query per cluster and depth 1 (every twig document overflows), sharing off, one
    cluster: RTL = model every cycle; the decided readouts = the reference."""
    queries = [parse_query(t, i + 1) for i, t in enumerate(TWIGS)]
    plan = compile_queries(queries, options)
    docs = DOCS + [b"<a>" * 5 + b"</a>" * 5]
    result = compare_engine_with_model(plan, docs, seed=3, extra_cycles=80)
    assert result["mismatch"] is None, result["mismatch"]
    readouts = collect_readout(result["beats"], len(queries))
    assert len(readouts) == len(docs)
    for doc, readout in zip(docs, readouts):
        if document_depth(parse_events(doc)) > options.max_depth:
            assert readout.errors == Errors.DEPTH_OVERFLOW, doc
        else:
            assert readout.errors == Errors(0) and readout.bits == bits_of(plan, queries, doc), doc


def nitf_twigs(count: int, seed: int) -> list[str]:
    """Twigs generated from the NITF DTD: one or two nested paths of 1-3 steps per query,
    half of them with a value predicate (attribute or text(), clauses)."""
    axes = PredicateGenConfig(
        count=1,
        nested_paths=2,
        nested_depth=3,
        p_text=0.3,
        operators=("=", "!=", "<", ">="),
        p_clause=0.3,
    )
    return generate_queries(schema("nitf"), QueryGenConfig(count, 6, seed=seed, predicates=axes))


@pytest.mark.regress
def test_regress_nitf_twigs_on_verilator(build_dir, tmp_path):
    """1,024 twigs from the NITF DTD over the 100 shared NITF documents: Verilator = model every
    cycle, answers = the reference."""
    summary = run_regression(
        RegressionConfig(
            queries=nitf_twigs(1024, seed=15),
            documents=[shared_data() / "nitf/docs"],
            build_dir=build_dir,
            seed=1,
            replay_dir=tmp_path / "replays",
        )
    )
    print(summary.format())
    assert summary.ok, summary.format()
    assert sum(map(len, summary.answers.values())) > 1000


@pytest.mark.regress
@examples(ci=3, derandomize=True)
@given(
    texts=st.lists(twigs(), min_size=30, max_size=40),
    docs=st.lists(documents(), min_size=8, max_size=12),
    seed=st.integers(0, 1000),
)
def test_regress_generated_twigs_on_verilator(texts, docs, seed, build_dir):
    """Hypothesis twigs (recursion, repeated names, branches before and after the trunk goes
    on) and documents over the same small alphabet, in clusters of 8: Verilator = model every
    cycle, answers = the reference."""
    documents_ = [Document(f"doc{i}.xml", d) for i, d in enumerate(docs)]
    summary = run_regression(
        RegressionConfig(
            queries=texts,
            documents=documents_,
            options=CompileOptions(cluster_size=8, max_depth=8),
            seed=seed,
            p_valid=0.85,
            p_ready=0.6,
            build_dir=build_dir,
        ),
        write_replay=False,
    )
    assert summary.ok, summary.format()
