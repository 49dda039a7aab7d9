"""Prefix clustering: the compiler fills clusters in text order so that common prefixes share
nodes (issue 13, capacity); the answers are those of file order."""

from click.testing import CliRunner

from xpfilt.boards.build import custom_design
from xpfilt.cli import main
from xpfilt.compiler.custom import CompileOptions, Plan, cluster_order, compile_queries
from xpfilt.engines import filter_batch
from xpfilt.lang.xpath import load_queries, parse_query
from xpfilt.model.custom import ModelEngine
from xpfilt.software.events import load_documents
from xpfilt.software.results import read_expected


def interleaved():
    texts = []
    for i in range(8):
        texts += [f"/a/b/c/x{i}", f"//p/q/r/y{i}"]
    return [parse_query(t, i + 1) for i, t in enumerate(texts)]


def test_clusters_gather_queries_with_common_prefixes():
    queries = interleaved()
    options = CompileOptions(cluster_size=8, max_depth=8)
    plan = compile_queries(queries, options)
    given = compile_queries(
        queries, CompileOptions(cluster_size=8, max_depth=8, prefix_clustering=False)
    )
    assert plan.stats["nodes"] < given.stats["nodes"]
    # every cluster holds one family, every query is still read out once, under its number
    assert [q.number for q in plan.clusters[0].queries] == [2, 4, 6, 8, 10, 12, 14, 16]
    assert sorted(plan.query_numbers) == list(range(1, 17))
    assert given.query_numbers == list(range(1, 17))
    assert cluster_order(queries, given.options) == queries


def test_a_board_design_clusters_by_prefix():
    queries = interleaved()
    plan = Plan.from_json(
        custom_design(queries, CompileOptions(cluster_size=8, max_depth=8)).files["plan.json"]
    )
    assert plan.options.prefix_clustering and plan.query_numbers[:2] == [2, 4]


def test_answers_do_not_depend_on_the_cluster_order(data):
    """Many small clusters of shared NITF queries, both readouts: the model's answers in text
    order are the shared expected answers, as in file order."""
    name = "nitf-d8-p15-n2000"
    queries = load_queries(data / f"queries/{name}.txt").queries[:400]
    documents = load_documents([data / "nitf/docs"])[:12]
    expected = {
        d: tuple(n for n in m if n <= 400)
        for d, m in read_expected(data / f"expected/nitf-docs--{name}.tsv").items()
    }
    for readout in ("serial", "sparse"):
        answers = {}
        for by_prefix in (True, False):
            options = CompileOptions(cluster_size=32, prefix_clustering=by_prefix, readout=readout)
            engine = ModelEngine(queries, options)
            assert (engine.plan.query_numbers != sorted(engine.plan.query_numbers)) == by_prefix
            answers[by_prefix] = {r.name: r.matches for r in filter_batch(engine, documents)}
        assert answers[True] == answers[False] == {d.name: expected[d.name] for d in documents}
        assert any(answers[True].values())


def test_compile_file_order_flag(tmp_path):
    queries = tmp_path / "q.txt"
    queries.write_text("/z/a\n/b/c\n/z/d\n")
    for flags, numbers in (((), [2, 1, 3]), (("--file-order",), [1, 2, 3])):
        out = tmp_path / f"out{len(flags)}"
        result = CliRunner().invoke(
            main, ["compile", str(queries), "-o", str(out), "--cluster-size", "2", *flags]
        )
        assert result.exit_code == 0, result.output
        assert Plan.from_json((out / "plan.json").read_text()).query_numbers == numbers
