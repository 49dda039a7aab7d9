"""Board builds cluster queries with common prefixes together (issue 13, capacity)."""

from xpfilt.boards.build import custom_design, prefix_order
from xpfilt.compiler import CompileOptions, Plan, compile_queries
from xpfilt.xpath import parse_query


def interleaved():
    texts = []
    for i in range(8):
        texts += [f"/a/b/c/x{i}", f"//p/q/r/y{i}"]
    return [parse_query(t, i + 1) for i, t in enumerate(texts)]


def test_a_board_design_clusters_queries_with_common_prefixes():
    queries = interleaved()
    options = CompileOptions(cluster_size=8, max_depth=8)
    plan = Plan.from_json(custom_design(queries, options).files["plan.json"])
    given = compile_queries(queries, options)
    assert plan.stats["nodes"] < given.stats["nodes"]
    # every cluster holds one family, every query is still read out once
    assert sorted(plan.query_numbers) == list(range(1, 17))
    assert [q.number for q in prefix_order(queries)][:8] == [2, 4, 6, 8, 10, 12, 14, 16]
