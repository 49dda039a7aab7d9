"""Issue 14 in the custom engine's hardware: profiles that combine paths with and/or/not
(``/a/b[@x > 2] and not(/a/c)``; each path an internal column, the paths' match flags combined
at the readout's capture), here with paths whose predicates mix text() with attributes under
or/not. The model = the reference on hypothesis workloads; the RTL = the model every cycle (both
readouts) with readouts = the reference; the Verilator regression in ``make regress``."""

from __future__ import annotations

import random

import pytest
from hypothesis import given
from hypothesis import strategies as st

from xpfilt.compiler.custom import (
    POSITION_REFUSED,
    CompileOptions,
    Plan,
    compile_queries,
    hardware_queries,
)
from xpfilt.hwspec.conditions import AllOf, AnyOf, Bit, Negation, Row
from xpfilt.lang.xpath import parse_query
from xpfilt.model.custom import EngineError, ModelEngine
from xpfilt.paths import shared_data
from xpfilt.software.events import Document
from xpfilt.software.reference import ReferenceFilter
from xpfilt.verify.regress import RegressionConfig, run_regression

from .conftest import examples
from .rtl_compare import compare_engine_with_model
from .strategies import documents, path_combinations, predicate_paths
from .test_text_conditions import (
    TAGS,
    check_text_model_against_reference,
    text_element,
    text_predicate,
)
from .test_twigs import DOCS as TWIG_DOCS
from .test_twigs import TWIGS, twigs

#: Paths with attribute, text() and mixed predicates, some combined.
PROFILES = [
    "/a/b[@id > 1] and not(/a/c)",
    "//b[@id=1 or text()=15]",
    "/a/b",
    "/a/c or //b[text()=' 15 ' or not(@id)]",
    "/a[not(@id = 2 and text() = 7)]/b",
    "not(/a)",
    "(//c or //b[text()=15]//c) and not(/a[@id=2])",
    "//*[@n or text()!=7]",
]
DOCUMENTS = [
    b'<a><b id="3"/></a>',
    b'<a><b id="3"/><c/></a>',
    b'<a><b id="1"/></a>',
    b"<a><b>15</b></a>",
    b'<a><b id="2">15<c/></b><b> 15 </b></a>',
    b'<a id="2">7<b/></a>',
    b'<a id="2">4<b n="x"/></a>',
    b"<b/>",
    b"<c><b>15<c/></b></c>",
    b"<a><b>1<!-- -->5</b></a>",
    b"<a><b>1<![CDATA[5]]><c/></b></a>",
]


def generated_profiles():
    path = predicate_paths(TAGS, text_predicate(), max_steps=3, per_step=(0, 0, 1, 2))
    return st.one_of(path, path_combinations(path))


def test_combinations_and_mixed_predicates_match_the_reference():
    for options in (
        CompileOptions(cluster_size=2, max_depth=4),
        CompileOptions(prefix_sharing=False, opt_share=False, opt_root=False, opt_last=False),
    ):
        assert check_text_model_against_reference(PROFILES, DOCUMENTS, options) == len(DOCUMENTS)
    model = ModelEngine([parse_query(t, i + 1) for i, t in enumerate(PROFILES)])
    assert sorted(model.filter(DOCUMENTS[0])) == [0, 2, 4]  # not(/a/c) holds
    assert 0 not in model.filter(DOCUMENTS[1])  # ... not here
    assert 5 in model.filter(b"<b/>") and 5 not in model.filter(b"<a/>")
    assert 4 not in model.filter(DOCUMENTS[5])  # /a[not(@id=2 and text()=7)]/b: both hold


def test_only_position_is_refused():
    ok, refused = hardware_queries(
        [parse_query("/a[@x=1 or text()=2] and not(//b[@y])", 1), parse_query("/a/b[2] or /c", 2)]
    )
    assert [q.number for q in ok] == [1]
    assert refused == [f"query 2 (/a/b[position()=2] or /c): {POSITION_REFUSED}"]


def test_a_combination_compiles_to_internal_paths():
    plan = compile_queries(
        [parse_query("/a/b[@x > 2] and not(/a/c)", 1), parse_query("//b[@x=1 or text()=5]", 2)]
    )
    (cluster,) = plan.clusters
    combined, mixed = cluster.queries
    assert combined.node == -1 and combined.combine == AllOf((Bit(0), Negation(Bit(1))))
    assert [p.text for p in cluster.paths] == ["/a/b[@x>2]", "/a/c"]
    assert plan.query_numbers == [1, 2]  # one readout bit per profile
    (memo,) = [
        n
        for n in cluster.nodes
        if n.guard
        == Bit(
            plan.conditions.index(
                next(c for c in plan.conditions if c.attribute == "x" and c.op == "=")
            )
        )
    ]
    assert mixed.chain[0][1] == AnyOf(
        (Row(memo.column), Bit([c.attribute for c in plan.conditions].index("text()")))
    )
    assert Plan.from_json(plan.to_json()) == plan


@given(
    st.lists(generated_profiles(), min_size=1, max_size=6),
    st.lists(text_element(), min_size=1, max_size=4),
    st.sampled_from([None, 2]),
    st.booleans(),
)
@examples(ci=300)
def test_model_equals_reference_on_generated_combinations(texts, docs, cluster_size, share):
    options = CompileOptions(
        cluster_size=cluster_size, prefix_sharing=share, opt_share=share, max_depth=4
    )
    check_text_model_against_reference(texts, [d.encode() for d in docs], options)


@given(
    st.lists(path_combinations(twigs()), min_size=1, max_size=5),
    st.lists(documents(), min_size=1, max_size=3),
    st.sampled_from([None, 1, 2]),
)
@examples(ci=200)
def test_model_equals_reference_on_combinations_of_twigs(texts, docs, cluster_size):
    """Combinations whose paths are twigs (nested paths, text() and attributes under or/not):
    the paths' pop-time checks set the internal flags the combination reads."""
    check_text_model_against_reference(
        texts, docs, CompileOptions(cluster_size=cluster_size, max_depth=8)
    )


def test_engine_rtl_equals_model_on_combinations_of_twigs():
    rng = random.Random(3)
    texts = [
        f"{a} and not({b})" if k % 2 else f"{a} or not({b})"
        for k, (a, b) in enumerate(zip(TWIGS, rng.sample(TWIGS, len(TWIGS))))
    ]
    check_rtl(texts, TWIG_DOCS, CompileOptions(cluster_size=4, max_depth=8), 3)


def check_rtl(texts, docs, options, seed, p_valid=0.8, p_ready=0.8):
    """RTL = model every cycle; every readout = the reference or a flagged document."""
    queries = [parse_query(t, i + 1) for i, t in enumerate(texts)]
    plan = compile_queries(queries, options)
    result = compare_engine_with_model(plan, docs, seed=seed, p_valid=p_valid, p_ready=p_ready)
    assert result["mismatch"] is None, (texts, result["mismatch"])
    model, ref = ModelEngine(queries, options), ReferenceFilter(queries)
    for doc in docs:
        try:
            assert sorted(model.filter(doc)) == sorted(ref.filter(doc)), (texts, doc)
        except EngineError:
            pass


@pytest.mark.parametrize("readout", ["serial", "sparse"])
def test_engine_rtl_equals_model_and_reference(readout):
    rng = random.Random(7)
    docs = DOCUMENTS + [bytes([b]) for b in rng.choices(b"<a/>", k=3)] + [b"<a/>", b"<b/>"]
    check_rtl(PROFILES, docs, CompileOptions(cluster_size=3, max_depth=4, readout=readout), 7)
    check_rtl(
        PROFILES,
        docs,
        CompileOptions(cluster_size=1, max_depth=1, readout=readout),
        8,
        p_valid=1.0,
        p_ready=1.0,
    )


@pytest.mark.rtl
@given(
    st.lists(generated_profiles(), min_size=1, max_size=5),
    st.lists(text_element(), min_size=1, max_size=3),
    st.sampled_from(["serial", "sparse"]),
    st.integers(0, 1000),
)
@examples(ci=12)
def test_engine_rtl_equals_model_on_generated_combinations(texts, docs, readout, seed):
    check_rtl(
        texts,
        [d.encode() for d in docs],
        CompileOptions(cluster_size=2, max_depth=4, readout=readout),
        seed,
    )


@pytest.mark.regress
@examples(ci=8)
@given(
    docs=st.lists(
        text_element().filter(lambda d: "e1" not in d and "&" not in d), min_size=1, max_size=6
    ),
    seed=st.integers(0, 1000),
)
def test_regress_combinations_on_verilator(docs, seed, build_dir):
    """The profiles above in Verilator (one build, every example reuses it) on hypothesis
    documents (none with a value the hardware flags as undecided: the regression counts that
    as a mismatch) and the fixed ones: every cycle = the model, every document = the
    reference."""
    streamed = [
        Document(f"doc{i}.xml", d) for i, d in enumerate(DOCUMENTS + [d.encode() for d in docs])
    ]
    summary = run_regression(
        RegressionConfig(
            queries=PROFILES,
            documents=streamed,
            options=CompileOptions(cluster_size=3, max_depth=4),
            seed=seed,
            p_valid=0.85,
            p_ready=0.6,
            build_dir=build_dir,
        ),
        write_replay=False,
    )
    assert summary.ok, summary.format()


def nitf_combinations(count: int, seed: int) -> list[str]:
    """``count`` combinations of the shared predicate set's paths (attribute and text()
    predicates): ``A and not(B)``, ``A or B``, ``not(A)``, ``(A or B) and not(C)``,
    ``A and B or C``."""
    rng = random.Random(seed)
    paths = (shared_data() / "queries" / "nitf-d6-p15-pred1-n1000.txt").read_text().split("\n")
    paths = [p for p in paths if p]
    forms = [
        "{a} and not({b})",
        "{a} or {b}",
        "not({a})",
        "({a} or {b}) and not({c})",
        "{a} and {b} or {c}",
    ]
    return [
        rng.choice(forms).format(**dict(zip("abc", rng.sample(paths, 3)))) for _ in range(count)
    ]


@pytest.mark.regress
def test_regress_nitf_combinations_on_verilator(build_dir, tmp_path):
    """300 combinations of NITF paths with predicates over the 100 shared NITF documents:
    Verilator = model every cycle, answers = the reference (documents with a value the
    hardware cannot decide must be flagged)."""
    summary = run_regression(
        RegressionConfig(
            queries=nitf_combinations(300, 14),
            documents=[shared_data() / "nitf" / "docs"],
            options=CompileOptions(max_depth=8),
            build_dir=build_dir,
            seed=1,
            replay_dir=tmp_path / "replays",
        )
    )
    print(summary.format())
    assert summary.ok, summary.format()
    assert summary.matches > 1000
