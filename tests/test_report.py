"""xpfilt report: plots and summaries from sweep rows; xpfilt sweep/report on the command line."""

import dataclasses

from click.testing import CliRunner

from xpfilt.cli import main
from xpfilt.scale.report import write_report
from xpfilt.scale.store import SweepStore
from xpfilt.scale.sweep import DesignPoint


def _row(engine, queries, cluster, **results):
    point = DesignPoint(
        engine=engine, queries=queries, cluster_size=cluster, device="ecp5", depth=4
    )
    return {
        **dataclasses.asdict(point),
        "key": point.key(),
        "status": "ok",
        "query_nodes": queries * 3,
        **results,
    }


def _fill(folder, with_pnr=True):
    store = SweepStore(folder)
    for engine, scale in (("custom", 1), ("programmable", 4)):
        for queries in (16, 64):
            for cluster in (8, 32):
                extra = dict(
                    luts=scale * 25 * queries * 3,
                    ffs=5 * queries,
                    bytes_per_cycle=0.99,
                    columns=queries * 2,
                )
                if with_pnr:
                    extra.update(
                        fmax_mhz=120 - cluster / 2 - queries / 8,
                        throughput_MBps=0.99 * (120 - cluster / 2 - queries / 8),
                    )
                store.write(_row(engine, queries, cluster, **extra))
    store.write(
        {**_row("custom", 256, 8), "status": "timeout", "reason": "nextpnr timed out after 900 s"}
    )


def test_report_draws_the_three_figures_and_lists_failures(tmp_path):
    _fill(tmp_path)
    report = write_report(tmp_path)
    names = {p.name for p in report.files}
    assert {
        "fmax_vs_cluster_size.png",
        "resources_vs_query_nodes.png",
        "throughput_vs_queries.png",
        "columns_vs_query_nodes.png",
        "summary.md",
        "index.html",
        "rows.csv",
    } <= names
    for p in report.files:
        if p.suffix == ".png":
            assert p.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and p.stat().st_size > 10_000
    text = (tmp_path / "_report" / "summary.md").read_text()
    assert report.rows == 9 and report.ok == 8
    assert "9 design points: 8 ok, 1 timeout." in text
    # medians over queries; a cluster size names its engine's unit
    assert "| custom d4 ecp5 all on (queries per cluster) | 8: 111.0, 32: 99.0 |" in text
    assert "| programmable d4 ecp5 all on (columns per cluster) | 8: 111.0, 32: 99.0 |" in text
    assert "| custom | ecp5 | 16 | 4 | 8 queries | all on |" in text
    assert "| programmable | ecp5 | 64 | 4 | 32 columns | all on |" in text
    assert "| custom | ecp5 | all on | 25 | 4 |" in text
    assert "| programmable | ecp5 | all on | 100 | 4 |" in text
    assert "nextpnr timed out after 900 s" in text
    html = (tmp_path / "_report" / "index.html").read_text()
    assert "<img src='throughput_vs_queries.png'" in html and "<table>" in html


def test_report_plots_throughput_against_the_input_width(tmp_path):
    store = SweepStore(tmp_path)
    for width in (1, 2, 4):
        point = DesignPoint(queries=64, depth=4, device="ecp5", beat_bytes=width)
        store.write(
            {
                **dataclasses.asdict(point),
                "key": point.key(),
                "status": "ok",
                "query_nodes": 192,
                "bytes_per_cycle": 0.99 * width,
                "fmax_mhz": 150 - 20 * width,
                "throughput_MBps": 0.99 * width * (150 - 20 * width),
            }
        )
    report = write_report(tmp_path)
    assert "throughput_vs_bytes_per_cycle.png" in {p.name for p in report.files}
    text = (tmp_path / "_report" / "summary.md").read_text()
    assert "| custom ecp5 64 queries d4 | 4 | 3.96 | 70 | 277 |" in text


def test_report_says_which_option_gives_a_missing_metric(tmp_path):
    _fill(tmp_path, with_pnr=False)
    report = write_report(tmp_path, tmp_path / "elsewhere")
    assert report.folder == tmp_path / "elsewhere"
    text = (report.folder / "summary.md").read_text()
    assert "No point has an Fmax: run the sweep with `place_and_route: true`" in text
    assert (report.folder / "resources_vs_query_nodes.png").exists()
    assert not (report.folder / "fmax_vs_cluster_size.png").exists()


def test_cli_sweep_then_report(tmp_path):
    spec = tmp_path / "spec.yaml"
    spec.write_text(
        "grid:\n  engine: custom\n  queries: 5\n  depth: 3\n  cluster_size: [4, 8]\n"
        "  documents: 1\n  document_bytes: 1500\n"
    )
    runner = CliRunner()
    out = tmp_path / "out"
    result = runner.invoke(
        main, ["sweep", str(spec), "-o", str(out), "--master", "serial", "--limit", "1"]
    )
    assert result.exit_code == 0, result.output
    assert "2 points: 0 already done, 1 computed (1 ok)" in result.output
    result = runner.invoke(
        main, ["sweep", str(spec), "-o", str(out), "--master", "serial", "--no-report"]
    )
    assert "2 points: 1 already done, 1 computed (1 ok)" in result.output
    result = runner.invoke(main, ["report", str(out)])
    assert result.exit_code == 0 and "2 rows (2 ok); wrote:" in result.output
    assert (out / "_report" / "index.html").exists()

    empty = tmp_path / "empty"
    empty.mkdir()
    result = runner.invoke(main, ["report", str(empty)])
    assert result.exit_code == 1 and "no sweep rows" in result.output
    spec.write_text("grid:\n  depht: 3\n")
    result = runner.invoke(main, ["sweep", str(spec), "-o", str(out)])
    assert result.exit_code == 1 and "grid 1: sweep fields must be among" in result.output


def test_a_sweep_folder_with_its_report_reads_as_one_parquet_table(tmp_path):
    """The README's promise: `pyarrow.dataset` (and Spark, which skips `_` folders alike)
    read OUT as one table although the report is written inside it."""
    import pyarrow.dataset as ds

    _fill(tmp_path)
    write_report(tmp_path)
    table = ds.dataset(tmp_path, format="parquet", partitioning="hive").to_table()
    assert table.num_rows == 9
    assert set(table.column("engine").to_pylist()) == {"custom", "programmable"}


def test_pareto_front_keeps_only_points_no_other_beats():
    from xpfilt.scale.report import pareto_front

    points = [(100, 50.0), (80, 40.0), (120, 45.0), (300, 90.0), (300, 70.0), (80, 30.0)]
    assert pareto_front(points) == [(80, 40.0), (100, 50.0), (300, 90.0)]
    assert pareto_front([]) == []


def test_report_names_the_best_point_per_device_beside_a_pareto_plot(tmp_path):
    """Issue 38: MB/s against LUTs per device and engine, and the best point per device."""
    _fill(tmp_path)
    store = SweepStore(tmp_path)
    store.write(
        {
            **_row(
                "custom", 16, 8, luts=900, fmax_mhz=60.0, throughput_MBps=59.4, bytes_per_cycle=0.99
            ),
            "device": "ice40",
            "key": "ice",
        }
    )
    report = write_report(tmp_path)
    assert "pareto_throughput_vs_luts.png" in {p.name for p in report.files}
    text = (tmp_path / "_report" / "summary.md").read_text()
    section = text[text.index("## Best point per device") :]
    # ecp5: the custom engine, 16 queries, cluster size 8 (114 MHz x 0.99) at 1,200 LUTs
    assert "| ecp5 | custom | 16 | 4 | 8 queries | all on | 1 | 1200 | 114 | 113 |" in section
    assert "| ice40 | custom | 16 | 4 | 8 queries | all on | 1 | 900 | 60 | 59.4 |" in section


def test_software_baselines_come_from_the_caller_not_the_repository(tmp_path):
    """Library code does not read bench/results: without ``baselines`` the report draws no
    software lines (even though the repository has bench/results/reference_throughput.json);
    given a result file, it draws its NITF rows and names the file."""
    import json

    _fill(tmp_path / "sweep")
    plain = write_report(tmp_path / "sweep", tmp_path / "plain")
    assert "Dashed lines" not in (plain.folder / "summary.md").read_text()

    measured = tmp_path / "software.json"
    measured.write_text(
        json.dumps(
            {
                "rows": [
                    {"workload": "NITF (100 docs)", "queries": 100, "reference_MBps": 16.0},
                    {"workload": "NITF (100 docs)", "queries": 1000, "reference_MBps": 10.0},
                    {"workload": "XMark", "queries": 100, "reference_MBps": 99.0},
                ]
            }
        )
    )
    drawn = write_report(tmp_path / "sweep", tmp_path / "drawn", baselines=measured)
    summary = (drawn.folder / "summary.md").read_text()
    assert "Dashed lines: software filters (software.json)" in summary


def test_report_command_takes_a_baselines_file(tmp_path):
    import json

    _fill(tmp_path / "sweep")
    measured = tmp_path / "software.json"
    measured.write_text(
        json.dumps({"rows": [{"workload": "NITF", "queries": 10, "lxml_MBps": 1.0}]})
    )
    result = CliRunner().invoke(
        main, ["report", str(tmp_path / "sweep"), "--baselines", str(measured)]
    )
    assert result.exit_code == 0, result.output
    summary = (tmp_path / "sweep" / "_report" / "summary.md").read_text()
    assert "software.json" in summary
