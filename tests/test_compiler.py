"""The compiler's plans: answers equal the reference under every optimization setting."""

import itertools

import pytest
from hypothesis import given
from hypothesis import strategies as st

from xpfilt.compiler.custom import CompileOptions, Plan, UnsupportedQueryError, compile_queries
from xpfilt.hwspec.conditions import ALWAYS, AllOf, AnyOf, Bit, Negation, Pending, Row
from xpfilt.lang.xpath import load_queries, parse_query
from xpfilt.software.events import load_documents, parse_events
from xpfilt.software.reference import ReferenceFilter
from xpfilt.software.results import read_expected

from .conftest import examples, expected_cases, shared_cases
from .plan_eval import plan_matches
from .strategies import documents, queries

STRUCTURAL = [c for c in expected_cases() if "pred" not in c[0]]
ALL_OPTIONS = [
    CompileOptions(opt_last=a, opt_root=b, opt_share=c, prefix_sharing=d)
    for a, b, c, d in itertools.product([True, False], repeat=4)
]


@pytest.mark.parametrize("name, queries_path, folder, tsv", shared_cases(STRUCTURAL))
@pytest.mark.parametrize("options", [ALL_OPTIONS[0], ALL_OPTIONS[-1]], ids=["all-opts", "no-opts"])
def test_plan_reproduces_shared_expected(name, queries_path, folder, tsv, options):
    plan = compile_queries(load_queries(queries_path).queries, options)
    expected = read_expected(tsv)
    for path in load_documents([folder]):
        assert plan_matches(plan, parse_events(path.read_bytes())) == expected[path.name], path


@examples(ci=200)
@given(
    document=documents(),
    texts=st.lists(queries(), min_size=1, max_size=16),
    options=st.sampled_from(ALL_OPTIONS),
    cluster_size=st.integers(1, 6),
    share_limit=st.integers(1, 4),
)
def test_plan_agrees_with_reference(document, texts, options, cluster_size, share_limit):
    parsed = [parse_query(t, i + 1) for i, t in enumerate(texts)]
    options = CompileOptions(
        **{**options.__dict__, "cluster_size": cluster_size, "share_limit": share_limit}
    )
    plan = compile_queries(parsed, options)
    expected = tuple(sorted(parsed[i].number for i in ReferenceFilter(parsed).filter(document)))
    assert plan_matches(plan, parse_events(document)) == expected


def test_plan_json_round_trip(data):
    queries = load_queries(data / "queries/nitf-d8-p25-n2000.txt").queries[:300]
    plan = compile_queries(queries, CompileOptions(cluster_size=100))
    again = Plan.from_json(plan.to_json())
    assert again == plan and len(again.clusters) == 3
    assert sorted(again.query_numbers) == list(range(1, 301))


def test_plan_version_is_checked():
    with pytest.raises(ValueError, match="plan version must be 6, not 99"):
        Plan.from_json('{"version": 99}')


def test_each_optimization_saves_columns(data):
    queries = load_queries(data / "queries/nitf-d8-p15-n2000.txt").queries[:256]
    columns = {}
    for name in ("opt_last", "opt_root", "opt_share", "prefix_sharing"):
        columns[name] = compile_queries(queries, CompileOptions(**{name: False})).stats["columns"]
    full = compile_queries(queries).stats["columns"]
    assert all(full < n for n in columns.values()), (full, columns)


def test_default_cluster_size_follows_query_length():
    short = [parse_query("/a/b", i) for i in range(1, 301)]
    long_ = [parse_query("/a/b/c/d/e", i) for i in range(1, 301)]
    assert compile_queries(short).stats["cluster_size"] == 256
    assert compile_queries(long_).stats["cluster_size"] == 128
    assert len(compile_queries(long_).clusters) == 3


def test_position_predicates_are_refused_with_the_query_named():
    queries = [parse_query("/a", 1), parse_query("/a[@x=1]/b[c[2]]", 2)]
    with pytest.raises(UnsupportedQueryError) as info:
        compile_queries(queries)
    assert str(info.value) == (
        "the custom engine supports paths and their combinations with attribute, text() and "
        "nested-path predicates, not query 2 (/a[@x=1]/b[c[position()=2]]) (position() "
        "predicates are not supported by the hardware engines)"
    )


def test_twig_entries_round_trip_through_json():
    queries = [
        parse_query("/a[@x=1]/b[text()=1 and @y]//c[text()]", 1),
        parse_query("/a/b", 2),
        parse_query("/a[b[@x=1 or .//c] and not(d)]/e", 3),
    ]
    plan = compile_queries(queries)
    again = Plan.from_json(plan.to_json())
    assert again == plan
    chain = plan.clusters[0].queries[0].chain
    assert [(g, up, d) for _c, g, up, d in chain] == [
        (AllOf((Bit(1), Pending(1))), -1, False),
        (Bit(3), 0, True),
    ]
    assert [c.attribute for c in plan.conditions] == ["x", "text()", "y", "text()"]
    twig = plan.clusters[0].queries[2].chain  # a: b (c), d, e
    assert [(up, d) for _c, _g, up, d in twig] == [
        (-1, False),
        (0, False),
        (1, True),
        (0, False),
        (0, False),
    ]
    read, below = twig[1][1].operands
    assert isinstance(twig[1][1], AnyOf) and isinstance(read, Row)  # b's @x=1: a column
    assert below == Pending(2)  # read on the pop
    assert not plan.clusters[0].nodes[plan.clusters[0].columns[read.index].members[0]].guard.always
    assert twig[0][1] == AllOf((Pending(1), Negation(Pending(3)), Pending(4)))
    assert twig[0][1].to_json() == ["and", ["n", 1], ["not", ["n", 3]], ["n", 4]]  # plan.json


def test_attribute_predicates_compile_to_conditions_and_guards():
    queries = [parse_query("/a[@x=1]/b", 1), parse_query("/a/b[@y or not(@x = 'q')]", 2)]
    plan = compile_queries(queries)
    assert [(c.attribute, c.op, c.literal) for c in plan.conditions] == [
        ("x", "=", 1.0),
        ("y", "exists", None),
        ("x", "=", "q"),
    ]
    assert [n.guard for n in plan.clusters[0].nodes] == [
        Bit(0),
        ALWAYS,
        ALWAYS,
        AnyOf((Bit(1), Negation(Bit(2)))),
    ]
    assert Plan.from_json(plan.to_json()) == plan


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"cluster_size": 0}, "cluster size must be at least 1, not 0"),
        ({"max_depth": 0}, "maximum depth must be at least 1, not 0"),
    ],
)
def test_options_are_validated(kwargs, message):
    with pytest.raises(ValueError) as info:
        CompileOptions(**kwargs)
    assert str(info.value) == message


@pytest.mark.parametrize(
    "texts, xml, expected",
    [
        # b and c share a column (3); only the parent's tag tells whether the 1 below is b's or c's
        (["/a/b/c", "/a/c/d"], b"<a><c><c/></c></a>", ()),
        (["/a/b/c", "/a/c/d"], b"<a><c><d/></c><b><c/></b></a>", (1, 2)),
        # a root step followed by '//' keeps its column (self loop); (2) applies to '/' children only
        (["/a//c", "/a/c"], b"<a><b><c/></b></a>", (1,)),
        (["//a/b", "/*/b"], b"<x><a><b/></a></x>", (1,)),
        (["/*/b"], b"<x><y><b/></y></x>", ()),
    ],
)
def test_plan_cases(texts, xml, expected):
    parsed = [parse_query(t, i + 1) for i, t in enumerate(texts)]
    for options in ALL_OPTIONS:
        assert plan_matches(compile_queries(parsed, options), parse_events(xml)) == expected
