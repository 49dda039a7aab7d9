"""Bad input to every command ends with exit code != 0, one pinned line naming what and where,
and no traceback (issue 11); `--debug` shows the traceback. The whole table of bad inputs
tried is bench/results/bad_inputs.md (bench/bad_inputs.py)."""

import json

import pytest
from click.testing import CliRunner

from xpfilt.cli import main

HW = {
    "mode": "programmable",
    "clusters": 1,
    "columns": 4,
    "max_tag_len": 4,
    "max_depth": 4,
    "max_name": 8,
}
FILES = {
    "q.txt": "//a\n/a/b\n",
    "empty.txt": "",
    "blank.txt": "\n  \n",
    "latin1.txt": b"//a\n//caf\xe9\n",
    "binary.bin": bytes(range(256)),
    "longtag.txt": "//a\n//" + "x" * 40 + "\n",
    "onlybad.txt": "/a[1]\n",
    "colon.txt": "/:a\n//a:b:c\n//a\n",
    "a.xml": "<a><b/></a>",
    "empty.xml": "",
    "zlib.xml": '<?xml version="1.0" encoding="zlib"?><a/>',
    "file": "a regular file\n",
    "notdtd.dtd": "hello\n",
    "tiny.dtd": "<!ELEMENT a (b?)>\n<!ELEMENT b EMPTY>\n",
    "dir/a.xml": "<a/>",
    "emptydir/.keep": "",
    "hw/hardware.json": json.dumps(HW),
    "hw-str/hardware.json": json.dumps({**HW, "clusters": "2"}),
    "hw-list/hardware.json": json.dumps({**HW, "columns": [4]}),
    "hw-null/hardware.json": json.dumps({**HW, "max_depth": None}),
    "hw-bool/hardware.json": json.dumps({**HW, "clusters": True}),
    "hw-array/hardware.json": "[1, 2]",
    "hw-missing/hardware.json": json.dumps({"mode": "programmable", "clusters": 1}),
    "hw-huge/hardware.json": json.dumps({**HW, "clusters": 100000, "columns": 100000}),
    "spec-type.yaml": "grid: {queries: abc}\n",
    "spec-neg.yaml": "grid: {queries: -5}\n",
    "spec-timeout.yaml": "grid: {queries: 8}\ntimeout: soon\n",
    "spec-list.yaml": "grid: {queries: 8}\ntarget_mhz: [1]\n",
    "spec-binary.yaml": b"\xff\xfe\x00",
    "spec-yaml.yaml": "grid: [unclosed\n",
    "report/engine=custom/device=ecp5/part.parquet": b"not parquet",
    "board-str/board.json": json.dumps("icebreaker"),
}

HW_ERR = "xpfilt {cmd}: {d}/{hw}: not a programmable hardware directory ({why})"
# what the shared checks say, whichever command meets the input
EMPTY_QUERIES = "{d}/empty.txt: a query file must hold at least one query, not an empty file"
LATIN1_QUERIES = "{d}/latin1.txt: line 2, column 6: a query file must be UTF-8 text, not byte 0xe9"
BINARY_QUERIES = (
    "{d}/binary.bin: line 2, column 118: a query file must be UTF-8 text, not byte 0x80"
)
HUGE_ENGINE = (
    "clusters x columns must be at most 65,536, not 12,800,000: that engine would need "
    "a 12,800,000-bit readout per document and a 106 MB configuration stream"
)
NO_DIRECTORY = "{d}/file/{out}: Not a directory"
CASES = [
    # (id, argv, exit code, the line standard error must hold)
    (
        "filter-empty-queries",
        ["filter", "-q", "{d}/empty.txt", "{d}/a.xml"],
        1,
        "xpfilt filter: " + EMPTY_QUERIES,
    ),
    (
        "filter-blank-queries",
        ["filter", "-q", "{d}/blank.txt", "{d}/a.xml"],
        1,
        "xpfilt filter: {d}/blank.txt: a query file must hold at least one query, not only blank "
        "lines",
    ),
    (
        "filter-latin1-queries",
        ["filter", "-q", "{d}/latin1.txt", "{d}/a.xml"],
        1,
        "xpfilt filter: " + LATIN1_QUERIES,
    ),
    (
        "filter-binary-queries",
        ["filter", "-q", "{d}/binary.bin", "{d}/a.xml"],
        1,
        "xpfilt filter: " + BINARY_QUERIES,
    ),
    (
        "filter-queries-dir",
        ["filter", "-q", "{d}/dir", "{d}/a.xml"],
        2,
        "Error: Invalid value for '-q' / '--queries': File '{d}/dir' is a directory.",
    ),
    (
        "filter-lxml-bad-colons",
        ["filter", "-e", "lxml", "-q", "{d}/colon.txt", "{d}/a.xml"],
        1,
        "xpfilt: {d}/colon.txt: line 2: skipped: query 2 '//a:b:c', column 6: expected '/', '//', "
        "'[', 'and', 'or', a comparison or the end of the query (a name has at most one ':'), "
        "not ':'",
    ),
    (
        "filter-model-empty-doc",
        ["filter", "-e", "model", "-q", "{d}/q.txt", "{d}/empty.xml", "{d}/a.xml"],
        1,
        "xpfilt: empty.xml:1:1: malformed XML: no element found",
    ),
    (
        "filter-reference-zlib",
        ["filter", "-e", "reference", "-q", "{d}/q.txt", "{d}/zlib.xml"],
        1,
        "xpfilt: zlib.xml: the declared encoding must be a known text encoding, not 'zlib'",
    ),
    (
        "filter-model-zlib",
        ["filter", "-e", "model", "-q", "{d}/q.txt", "{d}/zlib.xml"],
        1,
        "xpfilt: zlib.xml: the declared encoding must be a known text encoding, not 'zlib'",
    ),
    (
        "filter-model-long-tag",
        ["filter", "-e", "model", "-q", "{d}/longtag.txt", "{d}/a.xml"],
        1,
        "xpfilt: {d}/longtag.txt: skipped: query 2 (//"
        + "x" * 40
        + "): tag '"
        + "x" * 40
        + "' is longer than the hardware's max name 32",
    ),
    *[
        (
            f"filter-{name}",
            [
                "filter",
                "-e",
                "model",
                "--mode",
                "programmable",
                "--hw",
                f"{{d}}/{hw}",
                "-q",
                "{d}/q.txt",
                "{d}/a.xml",
            ],
            1,
            HW_ERR.format(cmd="filter", d="{d}", hw=hw, why=why),
        )
        for name, hw, why in [
            ("hw-string", "hw-str", "clusters must be an integer, not '2'"),
            ("hw-list", "hw-list", "columns must be an integer, not [4]"),
            ("hw-null", "hw-null", "max depth must be an integer, not None"),
            ("hw-bool", "hw-bool", "clusters must be an integer, not True"),
            ("hw-array", "hw-array", "hardware must be a JSON object, not list"),
            (
                "hw-huge",
                "hw-huge",
                "columns must be at most 4,096 per cluster (use more clusters), not 100,000",
            ),
        ]
    ],
    (
        "filter-output-missing-dir",
        ["filter", "-q", "{d}/q.txt", "-o", "{d}/missing/o.tsv", "{d}/a.xml"],
        1,
        "xpfilt filter: Could not open file '{d}/missing/o.tsv': No such file or directory",
    ),
    (
        "compile-empty",
        ["compile", "{d}/empty.txt", "-o", "{d}/out"],
        1,
        "xpfilt compile: " + EMPTY_QUERIES,
    ),
    (
        "compile-latin1",
        ["compile", "{d}/latin1.txt", "-o", "{d}/out"],
        1,
        "xpfilt compile: " + LATIN1_QUERIES,
    ),
    (
        "compile-only-bad",
        ["compile", "{d}/onlybad.txt", "-o", "{d}/out"],
        1,
        "xpfilt compile: {d}/onlybad.txt: no query left to build hardware for",
    ),
    (
        "compile-below-file",
        ["compile", "{d}/q.txt", "-o", "{d}/file/out"],
        1,
        "xpfilt compile: " + NO_DIRECTORY.format(d="{d}", out="out"),
    ),
    (
        "compile-depth",
        ["compile", "{d}/q.txt", "--max-depth", "100000000", "-o", "{d}/out"],
        1,
        "xpfilt compile: maximum depth must be at most 4096 (the rows of every stack memory), not "
        "100000000",
    ),
    (
        "compile-prog-clusters",
        ["compile", "--mode", "programmable", "--clusters", "100000", "-o", "{d}/out"],
        1,
        "xpfilt compile: " + HUGE_ENGINE,
    ),
    (
        "compile-prog-columns",
        ["compile", "--mode", "programmable", "--columns", "100000", "-o", "{d}/out"],
        1,
        "xpfilt compile: columns must be at most 4,096 per cluster (use more clusters), not "
        "100,000",
    ),
    (
        "compile-prog-depth",
        ["compile", "--mode", "programmable", "--max-depth", "100000000", "-o", "{d}/out"],
        1,
        "xpfilt compile: max depth must be at most 4096 (the rows of every stack memory), not "
        "100000000",
    ),
    (
        "compile-prog-below-file",
        ["compile", "--mode", "programmable", "--columns", "2", "-o", "{d}/file/out"],
        1,
        "xpfilt compile: " + NO_DIRECTORY.format(d="{d}", out="out"),
    ),
    (
        "configure-missing-dir",
        ["configure", "{d}/q.txt", "--hw", "{d}/hw", "-o", "{d}/missing/c.bin"],
        1,
        "xpfilt configure: {d}/missing/c.bin: No such file or directory",
    ),
    (
        "configure-empty",
        ["configure", "{d}/empty.txt", "--hw", "{d}/hw", "-o", "{d}/c.bin"],
        1,
        "xpfilt configure: " + EMPTY_QUERIES,
    ),
    (
        "configure-binary",
        ["configure", "{d}/binary.bin", "--hw", "{d}/hw", "-o", "{d}/c.bin"],
        1,
        "xpfilt configure: " + BINARY_QUERIES,
    ),
    (
        "configure-hw-missing-keys",
        ["configure", "{d}/q.txt", "--hw", "{d}/hw-missing", "-o", "{d}/c.bin"],
        1,
        HW_ERR.format(
            cmd="configure",
            d="{d}",
            hw="hw-missing",
            why="hardware must give columns, max_tag_len, max_depth, max_name",
        ),
    ),
    (
        "configure-previous-not-a-stream",
        ["configure", "{d}/q.txt", "--hw", "{d}/hw", "-o", "{d}/c.bin", "--previous", "{d}/a.xml"],
        1,
        "xpfilt configure: {d}/a.xml must be a configuration stream of at least 23 bytes, not 11",
    ),
    (
        "gen-queries-from-empty-dir",
        ["gen-queries", "--from-docs", "{d}/emptydir", "-n", "3"],
        1,
        "xpfilt gen-queries: --from-docs {d}/emptydir: no document there (folders give their *.xml "
        "files)",
    ),
    (
        "gen-queries-from-missing",
        ["gen-queries", "--from-docs", "{d}/nope.xml", "-n", "3"],
        1,
        "xpfilt gen-queries: {d}/nope.xml: No such file or directory",
    ),
    (
        "gen-queries-not-dtd",
        ["gen-queries", "--dtd", "{d}/notdtd.dtd", "-n", "3"],
        1,
        "xpfilt gen-queries: {d}/notdtd.dtd: not a DTD: Content error in the external subset, "
        "line 1, column 1",
    ),
    (
        "gen-queries-too-many",
        ["gen-queries", "--dtd", "{d}/tiny.dtd", "-n", "1000000"],
        1,
        "xpfilt gen-queries: only 21 distinct queries of the 1000000 asked for could be drawn from "
        "the DTD rooted at 'a' in 8982 attempts (the last 4101 found nothing new)",
    ),
    (
        "gen-docs-not-dtd",
        ["gen-docs", "--dtd", "{d}/notdtd.dtd", "-o", "{d}/docs"],
        1,
        "xpfilt gen-docs: {d}/notdtd.dtd: not a DTD: Content error in the external subset, line 1, "
        "column 1",
    ),
    (
        "gen-docs-depth-1",
        ["gen-docs", "--dtd", "{nitf}", "-d", "1", "-n", "1", "-o", "{d}/docs"],
        1,
        "xpfilt gen-docs: no valid 'nitf' document fits in max_depth=1: it needs 2 levels",
    ),
    (
        "gen-docs-root",
        ["gen-docs", "--dtd", "{d}/tiny.dtd", "--root", "zzz", "-o", "{d}/docs"],
        1,
        "xpfilt gen-docs: root element 'zzz' is not declared in the DTD",
    ),
    (
        "gen-docs-below-file",
        ["gen-docs", "--dtd", "{d}/tiny.dtd", "-n", "1", "--size", "100", "-o", "{d}/file/docs"],
        1,
        "xpfilt gen-docs: " + NO_DIRECTORY.format(d="{d}", out="docs"),
    ),
    (
        "regress-latin1",
        ["regress", "{d}/latin1.txt", "{d}/a.xml"],
        1,
        "xpfilt regress: " + LATIN1_QUERIES,
    ),
    (
        "regress-hw-string",
        ["regress", "{d}/q.txt", "{d}/a.xml", "--mode", "programmable", "--hw", "{d}/hw-str"],
        1,
        HW_ERR.format(
            cmd="regress", d="{d}", hw="hw-str", why="clusters must be an integer, not '2'"
        ),
    ),
    (
        "sweep-string-for-int",
        ["sweep", "{d}/spec-type.yaml", "-o", "{d}/sw"],
        1,
        "xpfilt sweep: {d}/spec-type.yaml: grid 1: queries must be int, not 'abc'",
    ),
    (
        "sweep-negative",
        ["sweep", "{d}/spec-neg.yaml", "-o", "{d}/sw"],
        1,
        "xpfilt sweep: {d}/spec-neg.yaml: grid 1: queries must be at least 1, not -5",
    ),
    (
        "sweep-timeout",
        ["sweep", "{d}/spec-timeout.yaml", "-o", "{d}/sw"],
        1,
        "xpfilt sweep: {d}/spec-timeout.yaml: timeout must be a positive number, not 'soon'",
    ),
    (
        "sweep-target-list",
        ["sweep", "{d}/spec-list.yaml", "-o", "{d}/sw"],
        1,
        "xpfilt sweep: {d}/spec-list.yaml: target_mhz must be a positive number, not [1]",
    ),
    (
        "sweep-binary",
        ["sweep", "{d}/spec-binary.yaml", "-o", "{d}/sw"],
        1,
        "xpfilt sweep: {d}/spec-binary.yaml: not valid YAML: 'utf-8' codec can't decode byte 0xff "
        "in position 0: invalid start byte",
    ),
    ("report-not-parquet", ["report", "{d}/report"], 1, None),
    (
        "build-latin1",
        ["build", "--board", "icebreaker", "-q", "{d}/latin1.txt", "--no-toolchain", "-o", "{d}/b"],
        1,
        "xpfilt build: " + LATIN1_QUERIES,
    ),
    (
        "build-prog-huge",
        [
            "build",
            "--board",
            "icebreaker",
            "--mode",
            "programmable",
            "--clusters",
            "100000",
            "--no-toolchain",
            "-o",
            "{d}/b",
        ],
        1,
        "xpfilt build: " + HUGE_ENGINE,
    ),
    (
        "host-board-json-string",
        ["host", "--port", "socket://127.0.0.1:1", "--build", "{d}/board-str", "{d}/a.xml"],
        1,
        None,
    ),
    (
        "host-latin1",
        ["host", "--port", "socket://127.0.0.1:1", "-q", "{d}/latin1.txt", "{d}/a.xml"],
        1,
        "xpfilt host: " + LATIN1_QUERIES,
    ),
    (
        "filter-no-documents",
        ["filter", "-q", "{d}/q.txt", "{d}/emptydir"],
        1,
        "xpfilt filter: {d}/emptydir: no document there (folders give their *.xml files)",
    ),
    (
        "sim-board-bind",
        [
            "sim-board",
            "--board",
            "icebreaker",
            "-q",
            "{d}/q.txt",
            "-o",
            "{d}/sb",
            "--bind",
            "203.0.113.7",
        ],
        1,
        "xpfilt sim-board: --bind 203.0.113.7 --port 0: Cannot assign requested address (while "
        "attempting to bind on address ('203.0.113.7', 0))",
    ),
    ("unknown-command", ["frobnicate"], 2, "Error: No such command 'frobnicate'."),
]


@pytest.fixture(scope="module")
def inputs(tmp_path_factory):
    d = tmp_path_factory.mktemp("bad")
    for name, content in FILES.items():
        path = d / name
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, str):
            path.write_text(content)
        else:
            path.write_bytes(content)
    return d


@pytest.mark.parametrize("argv, code, line", [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_bad_input_is_one_line_and_a_nonzero_exit(inputs, data, argv, code, line, monkeypatch):
    monkeypatch.setenv("XPFILT_CACHE", str(inputs / "cache"))
    args = [a.format(d=inputs, nitf=data / "nitf/nitf-2-5.dtd") for a in argv]
    result = CliRunner().invoke(main, args)
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exception
    assert result.exit_code == code, result.output
    assert "Traceback" not in result.output
    if line is None:  # the reason comes from a library: one line starting with the command
        last = result.stderr.strip().splitlines()[-1]
        assert last.startswith(f"xpfilt {argv[0]}: ") and str(inputs) in last, last
    else:
        assert line.format(d=inputs) in result.stderr.splitlines(), result.stderr


def test_debug_shows_the_traceback(inputs):
    result = CliRunner().invoke(
        main, ["--debug", "compile", str(inputs / "empty.txt"), "-o", str(inputs / "out")]
    )
    assert result.exit_code == 1
    assert type(result.exception).__name__ == "QueryFileError"
