"""The xpfilt command line: TSV output byte for byte, bad documents and bad queries in a batch."""

import os
import shutil

import pytest
from click.testing import CliRunner

from xpfilt.cli import main
from xpfilt.hwspec.contract import queue_depth_for

from .conftest import expected_cases


def run(*args):
    return CliRunner().invoke(main, [str(a) for a in args], catch_exceptions=False)


@pytest.mark.parametrize(
    "name, queries_path, folder, tsv", expected_cases(), ids=[c[0] for c in expected_cases()]
)
def test_filter_reproduces_expected_byte_for_byte(name, queries_path, folder, tsv):
    result = run("filter", "-q", queries_path, folder)
    assert result.exit_code == 0, result.output
    assert result.stdout == tsv.read_text()


def test_lxml_engine_agrees_on_a_few_documents(data, tmp_path):
    for i in (1, 2, 3):
        shutil.copy(data / f"nitf/docs/outFile{i}.xml", tmp_path)
    queries = data / "queries/nitf-d8-p25-n2000.txt"
    ref = run("filter", "-q", queries, tmp_path)
    lx = run("filter", "-q", queries, "--engine", "lxml", tmp_path)
    assert ref.exit_code == lx.exit_code == 0
    assert ref.stdout == lx.stdout and ref.stdout.count("\n") == 3


def test_malformed_document_is_reported_and_the_rest_answered(data, tmp_path):
    good = data / "nitf/docs/outFile1.xml"
    bad = tmp_path / "broken.xml"
    bad.write_bytes(b"<nitf>\n<head></nitf>")
    queries = data / "queries/yfilter-suite-simple-paths.txt"
    expected_line = [
        line
        for line in (data / "expected/nitf-docs--yfilter-suite-simple-paths.tsv")
        .read_text()
        .splitlines()
        if line.startswith("outFile1.xml\t")
    ][0]
    result = run("filter", "-q", queries, bad, good, tmp_path / "missing.xml")
    assert result.exit_code == 1
    assert result.stdout == expected_line + "\n"
    assert "xpfilt: broken.xml:2:9: malformed XML: mismatched tag" in result.stderr
    assert "missing.xml: cannot read" in result.stderr


def test_bad_query_is_reported_and_others_keep_their_numbers(tmp_path):
    queries = tmp_path / "q.txt"
    queries.write_text("/a\n/a/following::b\n//b\n")
    doc = tmp_path / "d.xml"
    doc.write_text("<a><b/></a>")
    result = run("filter", "-q", queries, doc)
    assert result.exit_code == 1
    assert result.stdout == "d.xml\t1 3\n"
    assert "line 2: skipped: query 2 '/a/following::b', column 13" in result.stderr


def test_help_everywhere():
    for command in ([], ["filter"], ["gen-queries"], ["gen-docs"]):
        result = run(*command, "--help")
        assert result.exit_code == 0 and "Usage:" in result.output


def test_compile_writes_plan_verilog_and_report(data, tmp_path, monkeypatch):
    monkeypatch.setenv("XPFILT_CACHE", str(tmp_path / "cache"))
    queries = tmp_path / "q.txt"
    queries.write_text(
        "".join(
            line + "\n"
            for line in (data / "queries/nitf-d4-p15-n2000.txt").read_text().splitlines()[:40]
        )
    )
    out = tmp_path / "out"
    result = run("compile", queries, "--cluster-size", 16, "-o", out)
    assert result.exit_code == 0, result.output
    assert "stack columns:" in result.stdout and "| + (3) shared columns |" in result.stdout
    verilog = (out / "xpfilt_engine.v").read_text()
    assert verilog.count("module xpfilt_cluster_") == 3  # 40 queries, 16 per cluster
    assert "module xpfilt_engine(" in verilog
    from xpfilt.compiler.custom import Plan

    assert len(Plan.from_json((out / "plan.json").read_text()).clusters) == 3
    again = run("compile", queries, "--cluster-size", 16, "-o", out)  # from the cache
    assert (out / "xpfilt_engine.v").read_text() == verilog and again.exit_code == 0


def test_compile_refuses_predicates_naming_the_query(data, tmp_path):
    queries = tmp_path / "q.txt"
    queries.write_text("/a/b\n/a[b[position()=1] or @x]\n/a[text()=1 or b]\n")
    result = run("compile", queries, "-o", tmp_path / "out")
    assert result.exit_code == 1  # the query is skipped, named; the others are compiled
    assert (
        "skipped: query 2 (/a[b[position()=1] or @x]): position() predicates are not "
        "supported by the hardware engines"
    ) in result.output
    from xpfilt.compiler.custom import Plan

    assert Plan.from_json((tmp_path / "out" / "plan.json").read_text()).query_numbers == [1, 3]


def test_model_engine_matches_expected_with_predicates(data):
    result = run(
        "filter",
        "-e",
        "model",
        "-q",
        data / "queries/nitf-d6-p15-pred1-n1000.txt",
        data / "nitf/docs/outFile1.xml",
    )
    assert result.exit_code == 0, result.stderr  # attribute and text() predicates run
    assert "skipped" not in result.stderr
    expected = [
        line
        for line in (data / "expected/nitf-docs--nitf-d6-p15-pred1-n1000.tsv")
        .read_text()
        .splitlines()
        if line.startswith("outFile1.xml\t")
    ]
    assert result.stdout.splitlines() == expected


def test_compile_at_four_bytes_per_cycle_takes_value_predicates(tmp_path, monkeypatch):
    monkeypatch.setenv("XPFILT_CACHE", str(tmp_path / "cache"))
    queries = tmp_path / "q.txt"
    queries.write_text('/a/b\n/a[@x="1"]/b\n//c[text()=2]\n')
    out = tmp_path / "out"
    result = run("compile", queries, "--bytes-per-cycle", 4, "-o", out)
    assert result.exit_code == 0, result.output
    assert "skipped" not in result.output
    assert (
        "* input: 4 bytes per cycle (beats with a byte count on the last; events queue "
        f"for the stacks, {queue_depth_for(4)} entries)" in result.stdout
    )
    verilog = (out / "xpfilt_engine.v").read_text()
    assert "bytes_in__payload" in verilog and "queue_bank3" in verilog
    one = run("compile", queries, "-o", tmp_path / "one")
    assert (
        "* input:" not in one.stdout
        and "queue0" not in (tmp_path / "one" / "xpfilt_engine.v").read_text()
    )
    bad = run("compile", "--mode", "programmable", "--bytes-per-cycle", 2, "-o", out)
    assert bad.exit_code == 2
    assert (
        "--bytes-per-cycle must be 1 with --mode programmable (its W-byte front end is not "
        "built yet), not 2"
    ) in bad.output


def test_programmable_compile_configure_filter_round_trip(data, tmp_path):
    hw = tmp_path / "hw"
    result = run(
        "compile",
        "--mode",
        "programmable",
        "--clusters",
        2,
        "--columns",
        64,
        "--max-tag-len",
        20,
        "-o",
        hw,
    )
    assert result.exit_code == 0, result.output
    assert (hw / "hardware.json").exists() and "module xpfilt_prog_cluster(" in (
        hw / "xpfilt_engine.v"
    ).read_text()
    lines = (data / "queries/nitf-d4-p15-n2000.txt").read_text().splitlines()
    queries = tmp_path / "q.txt"
    queries.write_text("".join(line + "\n" for line in lines[:60]))
    result = run("configure", queries, "--hw", hw, "-o", tmp_path / "config.bin")
    assert result.exit_code == 1  # 60 queries need more than 128 columns
    assert "queries are not configured:" in result.stderr
    assert "more columns would be needed (the hardware has 128)" in result.stderr
    mapped = (tmp_path / "config.bin.map.tsv").read_text().splitlines()
    assert 20 < len(mapped) < 60
    few = tmp_path / "few.txt"
    few.write_text("".join(line + "\n" for line in lines[:25]))
    result = run(
        "filter",
        "-e",
        "model",
        "--mode",
        "programmable",
        "--hw",
        hw,
        "-q",
        few,
        data / "nitf/docs/outFile3.xml",
        data / "nitf/docs/outFile4.xml",
    )
    reference = run(
        "filter", "-q", few, data / "nitf/docs/outFile3.xml", data / "nitf/docs/outFile4.xml"
    )
    assert result.exit_code == reference.exit_code == 0, result.stderr
    assert result.stdout == reference.stdout


def test_configure_previous_writes_a_delta_of_the_changed_clusters(data, tmp_path):
    """Issue 16: `configure --previous OLD.bin` keeps OLD's queries in place and writes
    OUTPUT.delta (and its map); a delta is no --previous."""
    from xpfilt.compiler.programmable import read_stream

    hw = tmp_path / "hw"
    assert (
        run(
            "compile", "--mode", "programmable", "--clusters", 4, "--columns", 32, "-o", hw
        ).exit_code
        == 0
    )
    lines = (data / "queries/nitf-d4-p15-n2000.txt").read_text().splitlines()[:20]
    (tmp_path / "a.txt").write_text("".join(line + "\n" for line in lines))
    (tmp_path / "b.txt").write_text("".join(line + "\n" for line in lines[1:] + ["/nitf/x"]))
    assert run("configure", tmp_path / "a.txt", "--hw", hw, "-o", tmp_path / "a.bin").exit_code == 0
    result = run(
        "configure",
        tmp_path / "b.txt",
        "--hw",
        hw,
        "-o",
        tmp_path / "b.bin",
        "--previous",
        tmp_path / "a.bin",
    )
    assert result.exit_code == 0, result.stderr
    assert f"bits written to {tmp_path / 'b.bin.delta'}" in result.stderr
    old = dict(line.split("\t") for line in (tmp_path / "a.bin.map.tsv").read_text().splitlines())
    new = dict(line.split("\t") for line in (tmp_path / "b.bin.map.tsv").read_text().splitlines())
    assert all(new[str(n - 1)] == old[str(n)] for n in range(2, 21) if str(n) in old)
    assert (tmp_path / "b.bin.delta.map.tsv").read_text() == (
        tmp_path / "b.bin.map.tsv"
    ).read_text()
    from xpfilt.compiler.programmable import HardwareSpec

    spec = HardwareSpec.load(hw)
    delta = read_stream(spec, (tmp_path / "b.bin.delta").read_bytes())
    assert (
        not delta.full
        and delta.base_id == read_stream(spec, (tmp_path / "a.bin").read_bytes()).new_id
    )
    result = run(
        "configure",
        tmp_path / "b.txt",
        "--hw",
        hw,
        "-o",
        tmp_path / "c.bin",
        "--previous",
        tmp_path / "b.bin.delta",
    )
    assert result.exit_code == 1
    assert result.stderr.strip().splitlines()[-1] == (
        f"xpfilt configure: {tmp_path / 'b.bin.delta'} must be a full configuration stream "
        f"(`xpfilt configure` writes one beside every delta), not a delta"
    )


def test_verilog_cache_key_follows_the_loaded_rtl_code(monkeypatch):
    """A process that loaded other RTL code than the files on disk must not reuse (or poison)
    cache entries of that code: the key hashes the code as loaded."""
    import xpfilt.hdl.stacks
    from xpfilt.hdl.verilog import _hdl_fingerprint

    before = _hdl_fingerprint()
    assert _hdl_fingerprint() == before

    def elaborate(self, platform):  # pragma: no cover - never elaborated
        return None

    monkeypatch.setattr(xpfilt.hdl.stacks.StackBank, "elaborate", elaborate)
    assert _hdl_fingerprint() != before


def test_a_reader_that_goes_away_ends_the_command_quietly(data):
    """`xpfilt filter ... | head -1`: no "Broken pipe" line, exit code 0 (fails on the old
    code: "xpfilt filter: [Errno 32] Broken pipe", exit 1)."""
    import subprocess
    import sys

    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "xpfilt.cli",
            "filter",
            "-q",
            str(data / "queries" / "nitf-d8-p15-n2000.txt"),
            str(data / "nitf" / "docs"),
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    process.stdout.close()  # the reader is gone before the first line
    _out, err = process.communicate(timeout=120)
    assert (process.returncode, err.decode()) == (0, "")


def test_fast_filtering_imports_neither_lxml_nor_the_other_engines(data, tmp_path):
    """`xpfilt filter` pays its imports on every run: lxml (~6 ms) and the reference are for
    their own engines (-e lxml, -e reference) only."""
    import subprocess
    import sys

    script = (
        "import sys\n"
        "from xpfilt.cli import main\n"
        "try:\n"
        f"    main([ 'filter', '-q', {str(data / 'queries/nitf-d8-p25-n2000.txt')!r},\n"
        f"           '-o', {str(tmp_path / 'out.tsv')!r}, {str(data / 'nitf/docs')!r}])\n"
        "except SystemExit as exit:\n"
        "    assert exit.code == 0, exit.code\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] == 'lxml'\n"
        "             or m in ('xpfilt.software.reference', 'xpfilt.software.lxml_filter')))\n"
    )
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
    assert (tmp_path / "out.tsv").read_text().startswith("outFile1.xml\t")


@pytest.mark.skipif(not os.path.isdir("/proc/self/task"), reason="counts threads in /proc")
def test_filtering_starts_no_blas_thread_pool(data, tmp_path):
    """NumPy's OpenBLAS starts a thread per core, spinning, when it loads: ~45 ms of CPU of
    every `xpfilt filter` run, for no linear algebra. The user's own setting stays."""
    import subprocess
    import sys

    script = (
        "import os, sys\n"
        "from xpfilt.cli import main\n"
        "try:\n"
        f"    main([ 'filter', '-q', {str(data / 'queries/nitf-d8-p25-n2000.txt')!r},\n"
        f"           '-o', {str(tmp_path / 'out.tsv')!r}, {str(data / 'nitf/docs/outFile1.xml')!r}])\n"
        "except SystemExit as exit:\n"
        "    assert exit.code == 0, exit.code\n"
        "print(len(os.listdir('/proc/self/task')), os.environ.get('OPENBLAS_NUM_THREADS'))\n"
    )
    env = {k: v for k, v in os.environ.items() if k != "OPENBLAS_NUM_THREADS"}
    run = [sys.executable, "-c", script]
    out = subprocess.run(run, capture_output=True, text=True, check=True, env=env)
    assert out.stdout.split() == ["1", "1"]
    out = subprocess.run(
        run, capture_output=True, text=True, check=True, env={**env, "OPENBLAS_NUM_THREADS": "2"}
    )
    assert out.stdout.split()[1] == "2"


def test_software_filtering_does_not_import_the_hardware_toolchain(data, tmp_path):
    """`xpfilt filter` with a software engine pays Python start-up on every run: Amaranth (~0.1
    s to import) is for the hardware commands only."""
    import subprocess
    import sys

    script = (
        "import sys\n"
        "from xpfilt.cli import main\n"
        "try:\n"
        f"    main([ 'filter', '-q', {str(data / 'queries/nitf-d8-p25-n2000.txt')!r},\n"
        f"           '-o', {str(tmp_path / 'out.tsv')!r}, {str(data / 'nitf/docs/outFile1.xml')!r}])\n"
        "except SystemExit as exit:\n"
        "    assert exit.code == 0, exit.code\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] == 'amaranth'))\n"
    )
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
    assert (tmp_path / "out.tsv").read_text().startswith("outFile1.xml\t")
