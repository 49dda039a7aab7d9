"""xpfilt regress --spark: shards of (query set x document batch), one summary."""

import os

import pytest
from click.testing import CliRunner

from xpfilt import engines
from xpfilt.cli import main
from xpfilt.paths import repo_root, shared_data
from xpfilt.verify.regress import RegressionConfig
from xpfilt.verify.regress_sharded import make_shards, run_sharded

DATA = shared_data()
DOCS = sorted((DATA / "nitf/docs").glob("*.xml"))[:4]


@pytest.fixture
def query_sets(tmp_path):
    lines4 = (DATA / "queries/nitf-d4-p15-n2000.txt").read_text().splitlines()
    lines8 = (DATA / "queries/nitf-d8-p15-n2000.txt").read_text().splitlines()
    a, b = tmp_path / "a.txt", tmp_path / "b.txt"
    a.write_text("\n".join(lines4[:8]) + "\n")
    b.write_text("\n".join(lines8[:8]) + "\n")
    return a, b


def test_shards_are_every_query_set_times_every_batch(query_sets):
    config = RegressionConfig(queries=str(query_sets[0]), documents=[])
    shards = make_shards(config, query_sets, [DATA / "nitf/docs"], batch_size=40)
    assert len(shards) == 2 * 3  # 100 documents: 40 + 40 + 20
    assert [len(s.documents) for s in shards[:3]] == [40, 40, 20]
    assert shards[4].config.queries == str(query_sets[1])
    assert list(shards[4].config.documents) == list(shards[4].documents)
    with pytest.raises(ValueError, match="batch size must be at least 1"):
        make_shards(config, query_sets, DOCS, batch_size=0)


def test_model_only_shards_agree_with_the_reference_and_can_fail(query_sets, monkeypatch):
    config = RegressionConfig(queries=str(query_sets[0]), documents=[])
    shards = make_shards(config, query_sets, DOCS, batch_size=3, rtl=False)
    summary = run_sharded(shards, master="serial", progress=False)
    assert summary.ok and len(summary.results) == 4, summary.format()
    assert "result:      PASS" in summary.format()

    real = engines.make_engine

    class DropsQueryOne:
        def __init__(self, inner):
            self.inner, self.queries = inner, inner.queries

        def filter(self, document):
            return frozenset(p for p in self.inner.filter(document) if p != 0)

    monkeypatch.setattr(
        engines,
        "make_engine",
        lambda name, queries, options=None: (
            DropsQueryOne(real(name, queries, options))
            if name == "model"
            else real(name, queries, options)
        ),
    )
    broken = run_sharded(shards, master="serial", progress=False)
    assert not broken.ok and "result:      FAIL" in broken.format()
    assert "MISMATCH:    shard" in broken.format() and "model misses [1]" in broken.format()


def test_model_only_shards_at_four_bytes_per_cycle(query_sets):
    config = RegressionConfig(queries=str(query_sets[0]), documents=[], bytes_per_cycle=4)
    shards = make_shards(config, query_sets, DOCS, batch_size=3, rtl=False)
    assert all(s.config.bytes_per_cycle == 4 for s in shards)
    summary = run_sharded(shards, master="serial", progress=False)
    assert summary.ok and len(summary.results) == 4, summary.format()


@pytest.mark.slow
def test_cli_regress_spark_runs_rtl_shards_and_reports_a_fault(query_sets, tmp_path):
    build = os.environ.get("XPFILT_SIM_BUILD") or str(repo_root() / "build" / "sim")
    args = [
        "regress",
        str(query_sets[0]),
        *map(str, DOCS),
        "--spark",
        "--master",
        "local[2]",
        "--batch-size",
        "2",
        "--build-dir",
        build,
        "--replay-dir",
        str(tmp_path / "r"),
        "--no-verify-replay",
    ]
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 0, result.output
    assert "shards:      2 (2 finished, 0 failed or timed out)" in result.output
    assert "rtl:         0 mismatches" in result.output and "result:      PASS" in result.output

    result = CliRunner().invoke(main, args + ["--fault", "model"])
    assert result.exit_code == 1, result.output
    assert "rtl: " in result.output and "result:      FAIL" in result.output

    result = CliRunner().invoke(
        main, ["regress", str(query_sets[0]), str(DOCS[0]), "--also", str(query_sets[1])]
    )
    assert result.exit_code == 2 and "need --spark" in result.output
