"""xpfilt filter --spark: documents partitioned over Spark, answers as Parquet, resumable."""

import shutil

import pytest
from click.testing import CliRunner

from xpfilt.cli import main
from xpfilt.engines import filter_batch, make_engine
from xpfilt.spark_filter import expand_documents, read_results, spark_filter
from xpfilt.xpath import load_queries

QUERIES = "nitf-d6-p15-pred1-n1000.txt"     # paths and value predicates


def _documents(data, tmp_path):
    folder = tmp_path / "docs"
    folder.mkdir()
    for name in ("outFile1.xml", "outFile2.xml", "outFile10.xml", "outFile57.xml",
                 "outFile99.xml"):
        shutil.copy(data / "nitf" / "docs" / name, folder)
    (folder / "broken.xml").write_bytes(b"<nitf><head></nitf>")
    return folder


def test_spark_answers_equal_the_serial_engine_and_a_rerun_resumes(data, tmp_path):
    docs = _documents(data, tmp_path)
    queries = data / "queries" / QUERIES
    out = tmp_path / "results"
    summary = spark_filter(queries, [docs], out, master="local[1]", batch_size=2)
    assert (summary.documents, summary.batches, summary.computed) == (6, 3, 3)
    assert summary.answered == 5 and [d for d, _ in summary.errors] == ["broken.xml"]

    serial = filter_batch(make_engine("fast", load_queries(queries).queries),
                          expand_documents([docs]))
    expected = {r.name: (list(r.matches) if r.ok else None, r.error) for r in serial}
    rows = read_results(out)
    assert {r["document"]: (r["matches"], r["error"]) for r in rows} == expected
    assert len(rows) == 6 and expected["broken.xml"][1].startswith("broken.xml:1:")

    again = spark_filter(queries, [docs], out, master="local[1]", batch_size=2)
    assert (again.skipped, again.computed, len(again.errors)) == (3, 0, 1)
    (out / sorted(p.name for p in out.glob("batch-*.parquet"))[0]).unlink()
    resumed = spark_filter(queries, [docs], out, master="local[1]", batch_size=2)
    assert (resumed.skipped, resumed.computed) == (2, 1)
    assert {r["document"]: (r["matches"], r["error"]) for r in read_results(out)} == expected

    with pytest.raises(ValueError, match="holds answers for another query file"):
        spark_filter(data / "queries" / "nitf-d4-p05-n2000.txt", [docs], out, master="local[1]")


def test_documents_expand_like_the_serial_command_and_from_globs(data, tmp_path):
    docs = _documents(data, tmp_path)
    names = [p.rsplit("/", 1)[1] for p in expand_documents([docs])]
    assert names == ["broken.xml", "outFile1.xml", "outFile10.xml", "outFile2.xml",
                     "outFile57.xml", "outFile99.xml"]
    assert expand_documents([str(docs / "outFile1*.xml")]) == [str(docs / "outFile1.xml"),
                                                              str(docs / "outFile10.xml")]


def test_cli_spark_options_need_each_other(data, tmp_path):
    queries = str(data / "queries" / QUERIES)
    runner = CliRunner()
    result = runner.invoke(main, ["filter", "-q", queries, "--spark", str(tmp_path)])
    assert result.exit_code == 2 and "--spark needs --out FOLDER" in result.output
    result = runner.invoke(main, ["filter", "-q", queries, "--spark", "--out", str(tmp_path / "o"),
                                  "--engine", "model", str(tmp_path)])
    assert result.exit_code == 2 and "--spark runs the software engines" in result.output
