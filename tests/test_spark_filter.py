"""xpfilt filter --spark: documents partitioned over Spark, answers as Parquet, resumable."""

import json
import shutil

import pytest
from click.testing import CliRunner

from xpfilt.cli import main
from xpfilt.engines import filter_batch, make_engine
from xpfilt.lang.xpath import load_queries
from xpfilt.scale.filter import (
    _FilterTask,
    auto_query_shards,
    expand_documents,
    plan_query_shards,
    read_results,
    spark_filter,
)

QUERIES = "nitf-d6-p15-pred1-n1000.txt"  # paths and value predicates


def _documents(data, tmp_path):
    folder = tmp_path / "docs"
    folder.mkdir()
    for name in ("outFile1.xml", "outFile2.xml", "outFile10.xml", "outFile57.xml", "outFile99.xml"):
        shutil.copy(data / "nitf" / "docs" / name, folder)
    (folder / "broken.xml").write_bytes(b"<nitf><head></nitf>")
    return folder


@pytest.mark.slow
def test_spark_answers_equal_the_serial_engine_and_a_rerun_resumes(data, tmp_path):
    docs = _documents(data, tmp_path)
    queries = data / "queries" / QUERIES
    out = tmp_path / "results"
    summary = spark_filter(queries, [docs], out, master="local[1]", batch_size=2)
    assert (summary.documents, summary.batches, summary.computed) == (6, 3, 3)
    assert summary.answered == 5 and [d for d, _ in summary.errors] == ["broken.xml"]

    serial = filter_batch(
        make_engine("fast", load_queries(queries).queries), expand_documents([docs])
    )
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


@pytest.mark.slow
def test_documents_expand_like_the_serial_command_and_from_globs(data, tmp_path):
    docs = _documents(data, tmp_path)
    names = [p.rsplit("/", 1)[1] for p in expand_documents([docs])]
    assert names == [
        "broken.xml",
        "outFile1.xml",
        "outFile10.xml",
        "outFile2.xml",
        "outFile57.xml",
        "outFile99.xml",
    ]
    assert expand_documents([str(docs / "outFile1*.xml")]) == [
        str(docs / "outFile1.xml"),
        str(docs / "outFile10.xml"),
    ]


def test_cli_spark_options_need_each_other(data, tmp_path):
    queries = str(data / "queries" / QUERIES)
    runner = CliRunner()
    result = runner.invoke(main, ["filter", "-q", queries, "--spark", str(tmp_path)])
    assert result.exit_code == 2 and "--spark needs --out FOLDER" in result.output
    result = runner.invoke(
        main,
        [
            "filter",
            "-q",
            queries,
            "--spark",
            "--out",
            str(tmp_path / "o"),
            "--engine",
            "model",
            str(tmp_path),
        ],
    )
    assert result.exit_code == 2 and "--spark runs the software engines" in result.output
    table = tmp_path / "docs.jsonl"
    table.write_text('{"xml": "<nitf><head/></nitf>"}\n{"xml": "<nitf>"}\n')
    for argv, message in [
        (
            ["--column", "xml", str(table)],
            "--column, --name-column and --query-shards need --spark",
        ),
        (
            ["--spark", "--out", str(tmp_path / "o"), str(table)],
            f"{table}: a Parquet or JSON-lines table of documents needs --column NAME",
        ),
        (
            ["--spark", "--out", str(tmp_path / "o"), "--name-column", "n", str(table)],
            "--name-column needs --column",
        ),
    ]:
        result = runner.invoke(main, ["filter", "-q", queries, *argv])
        assert result.exit_code == 2 and message in " ".join(result.output.split()), argv


@pytest.mark.slow
def test_cli_filters_a_table_in_query_shards_on_spark(data, tmp_path):
    table = tmp_path / "docs.jsonl"
    table.write_text('{"xml": "<nitf><head/></nitf>"}\n{"xml": "<nitf>"}\n')
    queries = tmp_path / "q.txt"
    queries.write_text("/nitf\n//head\n/head\n")
    result = CliRunner().invoke(
        main,
        [
            "filter",
            "-q",
            str(queries),
            "--spark",
            "--master",
            "local[1]",
            "--out",
            str(tmp_path / "o"),
            "--column",
            "xml",
            "--query-shards",
            "2",
            str(table),
        ],
    )
    assert result.exit_code == 1  # a malformed document
    assert "2 query shards: 2 tasks" in result.output
    assert sorted((r["document"], r["matches"]) for r in read_results(tmp_path / "o")) == [
        ("docs.jsonl[0]", [1, 2]),
        ("docs.jsonl[1]", None),
    ]


def _serial_answers(queries, paths):
    engine = make_engine("fast", load_queries(queries).queries)
    return {
        r.name: (list(r.matches) if r.ok else None, r.error) for r in filter_batch(engine, paths)
    }


LATIN = '<?xml version="1.0" encoding="ISO-8859-1"?>\n<nitf><head><title>café</title></head></nitf>'


@pytest.mark.slow
def test_tables_of_xml_strings_answer_as_the_files(data, tmp_path):
    """Parquet (strings, and bytes) and JSON lines: the serial engine's answers on the same
    documents as files; a null cell or a bad line is an error row; a null name gives FILE[row]."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    docs = _documents(data, tmp_path)
    (docs / "latin.xml").write_bytes(LATIN.encode("latin-1"))
    paths = expand_documents([docs])
    queries = tmp_path / "queries.txt"  # and one query on the text's encoding
    queries.write_text((data / "queries" / QUERIES).read_text() + "//title[text()='café']\n")
    expected = _serial_answers(queries, paths)
    names = [p.rsplit("/", 1)[1] for p in paths]
    raw = [open(p, "rb").read() for p in paths]
    texts = [b.decode("latin-1" if n == "latin.xml" else "utf-8") for n, b in zip(names, raw)]

    tables = tmp_path / "tables"
    tables.mkdir()
    pq.write_table(
        pa.table({"name": names + ["missing"], "xml": texts + [None]}),
        tables / "text.parquet",
        row_group_size=3,
    )
    pq.write_table(
        pa.table({"xml": raw, "name": names[:1] + [None] + names[2:]}), tables / "bytes.parquet"
    )
    lines = [json.dumps({"name": n, "xml": t}) for n, t in zip(names, texts)]
    lines[3:3] = ["", "not json", "[1]", '{"name": "no-xml"}', '{"xml": 7}']
    (tables / "docs.jsonl").write_text("\n".join(lines) + "\n")

    out = tmp_path / "results"
    summary = spark_filter(
        queries, [tables], out, master="local[1]", batch_size=2, column="xml", name_column="name"
    )
    # text.parquet: 8 rows in groups of 3, 3, 2 -> 2 + 2 + 1 batches; bytes.parquet: 7 rows
    # -> 4; docs.jsonl: 12 lines, one blank -> 6 batches, 11 rows
    assert (summary.documents, summary.batches, summary.computed) == (8 + 7 + 11, 15, 15)
    got = {
        (r["path"].rsplit("/", 1)[1], r["row"]): (r["document"], r["matches"], r["error"])
        for r in read_results(out)
    }
    assert len(got) == 26
    for i, name in enumerate(names):
        assert got["text.parquet", i] == (name, *expected[name])
        json_row = i if i < 3 else i + 5
        assert got["docs.jsonl", json_row] == (name, *expected[name])
        if i != 1:
            assert got["bytes.parquet", i] == (name, *expected[name])
    assert got["bytes.parquet", 1] == ("bytes.parquet[1]", *expected[names[1]])
    assert got["text.parquet", 7] == (
        "missing",
        None,
        "missing: the 'xml' value must be an XML string, not null",
    )
    assert got["docs.jsonl", 4][0] == "docs.jsonl[4]" and got["docs.jsonl", 4][2].startswith(
        "docs.jsonl[4]: not a JSON object: Expecting value"
    )
    assert got["docs.jsonl", 5] == (
        "docs.jsonl[5]",
        None,
        "docs.jsonl[5]: a line must be a JSON object, not list",
    )
    assert got["docs.jsonl", 6] == ("no-xml", None, "no-xml: the object has no 'xml' field")
    assert got["docs.jsonl", 7] == (
        "docs.jsonl[7]",
        None,
        "docs.jsonl[7]: the 'xml' value must be an XML string, not a int",
    )
    assert expected["latin.xml"] == ([1001], None)
    assert expected["broken.xml"][1].startswith("broken.xml:1:")

    with pytest.raises(ValueError, match=r"the column must be one of xml, name, not 'doc'"):
        spark_filter(queries, [tables / "bytes.parquet"], tmp_path / "o2", column="doc")


def test_query_shards_plan_and_estimate():
    lines = ["/b/c", "", "/a/x", "//z", "/a/b", "/b/a", "/a/c", "   "]
    # in text order: //z 4, /a/b 5 | /a/c 7, /a/x 3 | /b/a 6, /b/c 1; blank lines in none
    assert plan_query_shards(lines, 3) == [[4, 5], [3, 7], [1, 6]]
    assert plan_query_shards(lines, 1) == [[1, 3, 4, 5, 6, 7]]
    # no more shards than queries
    assert plan_query_shards(lines, 50) == [[n] for n in (4, 5, 7, 3, 6, 1)]
    assert auto_query_shards(100_000) == 1
    assert auto_query_shards(10_000_000, "1g") == 20
    assert auto_query_shards(10_000_000, "4096m") == 5
    with pytest.raises(ValueError, match="a Spark memory setting must be a size such as"):
        auto_query_shards(1, "lots")


@pytest.mark.slow
def test_query_shards_answer_as_one_engine_on_spark(data, tmp_path):
    docs = _documents(data, tmp_path)
    queries = tmp_path / "queries.txt"  # a query file no other Spark test uses
    queries.write_text((data / "queries" / "nitf-d8-p15-n2000.txt").read_text())
    spark_filter(
        queries, [docs], tmp_path / "whole", master="local[1]", batch_size=2, query_shards=1
    )
    sharded = spark_filter(
        queries, [docs], tmp_path / "sharded", master="local[1]", batch_size=2, query_shards=3
    )
    assert (sharded.shards, sharded.tasks, sharded.computed) == (3, 9, 3)
    assert 3 <= sharded.builds <= 9  # each shard's own engine, reused from task to task
    assert [d for d, _ in sharded.errors] == ["broken.xml"]

    def answers(out):
        return sorted((r["document"], r["matches"], r["error"]) for r in read_results(out))

    assert answers(tmp_path / "sharded") == answers(tmp_path / "whole")
    assert sum(len(m or ()) for _, m, _ in answers(tmp_path / "whole")) > 100
    assert not (tmp_path / "sharded" / "_shards").exists()


def test_a_failed_shard_is_retried_by_a_rerun(data, tmp_path, monkeypatch):
    docs = _documents(data, tmp_path)
    queries = data / "queries" / QUERIES
    out = tmp_path / "results"
    task = _FilterTask.__call__

    def fail_one(self, item):
        batch, shard = item
        if shard == 2 and "outFile10.xml" in str(batch.source):
            raise RuntimeError("lost executor")
        return task(self, item)

    monkeypatch.setattr(_FilterTask, "__call__", fail_one)
    first = spark_filter(queries, [docs], out, master="serial", batch_size=2, query_shards=3)
    assert (first.tasks, first.computed, len(first.failed)) == (9, 2, 1)
    assert first.failed[0][1:] == ("failed", "RuntimeError: lost executor")
    assert len(list((out / "_shards").glob("*.parquet"))) == 2
    monkeypatch.setattr(_FilterTask, "__call__", task)
    again = spark_filter(queries, [docs], out, master="serial", batch_size=2, query_shards=3)
    assert (again.skipped, again.tasks, again.computed, again.failed) == (2, 1, 1, [])
    assert not (out / "_shards").exists()
    expected = _serial_answers(queries, expand_documents([docs]))
    assert {r["document"]: (r["matches"], r["error"]) for r in read_results(out)} == expected
