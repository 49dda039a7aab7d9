"""The README cannot drift from the code: its CLI tour runs, its headline table is generated,
and every bench table is rendered from its JSON.

The tour test reads the first ``sh`` block under "## Using it" from README.md itself, so editing
the README changes what is tested. The README's variable lines (``Q=...``) are replaced by tiny
inputs (a few queries, three documents, a one-point sweep spec without synthesis) and the sizes
in :data:`SHRINK` by small ones; every other line runs as written, in order, in a scratch folder, through the venv's ``xpfilt``, and must exit
with 0 (the README promises that a failing command exits with 1). Lines that need a simulator,
Spark (Java) or a sweep run in the ``rtl`` tier; the rest in the quick tier.
"""

from __future__ import annotations

import importlib.util
import json
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from xpfilt.paths import repo_root, shared_data

ROOT = repo_root()
DATA = shared_data()
QUERIES = DATA / "queries/nitf-d8-p15-n2000.txt"


def _bench_module(name: str):
    """``bench/NAME.py`` as a module (bench/ is a folder of scripts, not a package)."""
    spec = importlib.util.spec_from_file_location(f"bench_{name}", ROOT / "bench" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up
    sys.path.insert(0, str(ROOT / "bench"))  # the scripts import their sibling `common`
    try:
        spec.loader.exec_module(module)
    finally:
        sys.path.remove(str(ROOT / "bench"))
    return module


# --- the CLI tour -----------------------------------------------------------------------------


def tour_lines(readme: str) -> list[str]:
    """The commands of the first ``sh`` block under "## Using it": continuations joined,
    comments and blank lines dropped."""
    section = readme[readme.index("## Using it") :]
    block = re.search(r"```sh\n(.*?)```", section, re.S).group(1)
    lines, pending = [], ""
    for raw in block.splitlines():
        line = _without_comment(raw).rstrip()
        if line.endswith("\\"):
            pending += line[:-1] + " "
            continue
        line = (pending + line).strip()
        pending = ""
        if line:
            lines.append(" ".join(line.split()))
    return lines


def _without_comment(line: str) -> str:
    """``line`` up to its first ``#`` outside quotes that starts a word."""
    quote = None
    for i, ch in enumerate(line):
        if quote:
            quote = None if ch == quote else quote
        elif ch in "'\"":
            quote = ch
        elif ch == "#" and (i == 0 or line[i - 1].isspace()):
            return line[:i]
    return line


ASSIGNMENT = re.compile(r"^([A-Z][A-Z0-9_]*)=\S+$")

#: Sizes in the tour that are inputs too: made small as the query and document sets are (the
#: programmable engine for 2,000 profiles has 12,288 columns, minutes of Verilator build).
SHRINK = {
    "--clusters 24 --columns 512": "--clusters 2 --columns 32",
    "gen-docs --dtd $DTD -n 5 --size 2.2M": "gen-docs --dtd $DTD -n 2 --size 20K",
}


def needs_tools(line: str) -> bool:
    """A tour line for the ``rtl`` tier: a simulator (regress), Spark (--spark, sweep) or a
    sweep's output (report)."""
    words = shlex.split(line)
    return words[:2] in (["xpfilt", "regress"], ["xpfilt", "sweep"], ["xpfilt", "report"]) or (
        "--spark" in words
    )


def test_tour_lines_are_read_from_the_readme():
    """The parser sees what a reader sees: joined continuations, no comments, the variables."""
    lines = tour_lines((ROOT / "README.md").read_text())
    assert lines[0] == ". .venv/bin/activate"
    assert "xpfilt filter -q $Q $D > out.tsv" in lines
    assert any(line.startswith("xpfilt compile --mode programmable") for line in lines)
    assert not any(" #" in line for line in lines)
    assert not any(re.search(r"\[--", line) for line in lines), "options in brackets do not run"


def _tiny_inputs(tmp: Path) -> dict[str, str]:
    """A value for each of the README's variables: 5 and 5 queries, 3 NITF documents, their
    expected answers (from the shared expected file), a one-point sweep spec without tools."""
    tiny = tmp / "_inputs"
    docs = tiny / "docs"
    docs.mkdir(parents=True)
    lines = QUERIES.read_text().splitlines()
    (tiny / "q.txt").write_text("\n".join(lines[:5]) + "\n")
    (tiny / "q2.txt").write_text("\n".join(lines[3:8]) + "\n")
    names = sorted(p.name for p in (DATA / "nitf/docs").glob("*.xml"))[:3]
    for name in names:
        (docs / name).write_bytes((DATA / "nitf/docs" / name).read_bytes())
    expected = []
    for row in (DATA / "expected/nitf-docs--nitf-d8-p15-n2000.tsv").read_text().splitlines():
        name, _, numbers = row.partition("\t")
        if name in names:
            kept = [n for n in numbers.split() if int(n) <= 5]
            expected.append(f"{name}\t{' '.join(kept)}")
    (tiny / "expected.tsv").write_text("\n".join(expected) + "\n")
    (tiny / "spec.yaml").write_text(
        "grid:\n  engine: [custom]\n  queries: 4\n  depth: 4\n  cluster_size: 4\n"
        "  device: ecp5\n  documents: 1\n  document_bytes: 2000\n"
        "synthesize: false\nplace_and_route: false\ntimeout: 300\n"
    )
    return {
        "Q": str(tiny / "q.txt"),
        "Q2": str(tiny / "q2.txt"),
        "D": str(docs),
        "E": str(tiny / "expected.tsv"),
        "X": str(docs),
        "DTD": str(DATA / "nitf/nitf-2-5.dtd"),
        "SPEC": str(tiny / "spec.yaml"),
    }


def _run_tour(tmp: Path, *, with_tools: bool, readme: str | None = None) -> list[str]:
    readme_vars, commands = set(), []
    lines = tour_lines(readme or (ROOT / "README.md").read_text())
    for big, small in SHRINK.items():
        assert any(big in line for line in lines), f"the tour no longer says {big!r}"
        lines = [line.replace(big, small) for line in lines]
    for line in lines:
        if line == ". .venv/bin/activate":
            continue
        match = ASSIGNMENT.match(line)
        if match:
            readme_vars.add(match.group(1))
        elif with_tools or not needs_tools(line):
            commands.append(line)
    env_vars = _tiny_inputs(tmp)
    assert readme_vars <= set(env_vars), f"no tiny input for {readme_vars - set(env_vars)}"
    bin_dir = Path(sys.executable).parent
    env = {
        **os.environ,
        **env_vars,
        "PATH": f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}",
        "SPARK_LOCAL_IP": os.environ.get("SPARK_LOCAL_IP", "127.0.0.1"),
        "PYSPARK_PYTHON": os.environ.get("PYSPARK_PYTHON", sys.executable),
    }
    for command in commands:
        done = subprocess.run(
            ["bash", "-c", command], cwd=tmp, env=env, capture_output=True, text=True
        )
        assert done.returncode == 0, (
            f"README tour line exited with {done.returncode}: {command}\n"
            f"{done.stdout[-2000:]}\n{done.stderr[-2000:]}"
        )
    return commands


def test_readme_tour_runs(tmp_path):
    """Every tour line that needs no simulator, Spark or sweep exits with 0 on tiny inputs."""
    ran = _run_tour(tmp_path, with_tools=False)
    assert any(line.startswith("diff out.tsv") for line in ran)
    assert (tmp_path / "build/prog/hardware.json").exists()
    assert (tmp_path / "new.bin.delta").exists()


@pytest.mark.rtl
def test_readme_tour_runs_with_tools(tmp_path):
    """The whole tour, the regressions (Verilator), `filter --spark` and a sweep included."""
    ran = _run_tour(tmp_path, with_tools=True)
    assert any(needs_tools(line) for line in ran)
    assert (tmp_path / "out/quick/_report").is_dir()


def test_a_failing_tour_line_fails_the_test(tmp_path):
    """The tour test can fail: a README line with a bad option is caught."""
    readme = (ROOT / "README.md").read_text()
    start = readme.index("## Using it")
    broken = readme[:start] + readme[start:].replace(
        "xpfilt filter -q $Q $D > out.tsv",
        "xpfilt filter -q $Q --no-such-option $D > out.tsv\nxpfilt filter -q $Q $D > out.tsv",
        1,
    )
    with pytest.raises(AssertionError, match="no-such-option"):
        _run_tour(tmp_path, with_tools=False, readme=broken)


# --- generated tables ---------------------------------------------------------------------------


def test_readme_headline_table_is_generated():
    """The README's headline table is exactly what bench/headline.py writes from the results."""
    headline = _bench_module("headline")
    readme = (ROOT / "README.md").read_text()
    assert headline.with_table(readme) == readme, "run: python bench/headline.py"
    assert len(headline.HEADLINES) == 10


def test_readme_link_table_says_what_hostlink_measured():
    """The README's two links (board section) carry bench/results/hostlink.json's numbers:
    Ethernet (RGMII) at 1,024 and 12,000 queries, the UART on all its documents."""
    rows = json.loads((ROOT / "bench/results/hostlink.json").read_text())["rows"]

    def ethernet(queries):
        (row,) = [
            r
            for r in rows
            if r["queries"] == queries and r["phy"].startswith("RGMII") and r["beat_bytes"] == 1
        ]
        return f"{row['mb_per_s']:g}"

    uart = max((r for r in rows if r["link"].startswith("UART")), key=lambda r: r["documents"])
    readme = (ROOT / "README.md").read_text()
    assert (
        f"| Gigabit Ethernet, UDP (LiteEth, RGMII) | {ethernet(1024)} "
        f"(12,000 queries: {ethernet(12000)}) |" in readme
    )
    assert f"| UART, 115,200 baud | {uart['mb_per_s']:g} |" in readme


def test_headline_reads_the_current_row(tmp_path, monkeypatch):
    """A configuration's last row is the one the headline shows."""
    headline = _bench_module("headline")
    (tmp_path / "x.json").write_text(
        json.dumps({"rows": [{"k": 1, "v": "old"}, {"k": 2, "v": "other"}, {"k": 1, "v": "new"}]})
    )
    monkeypatch.setattr(headline, "RESULTS", tmp_path)
    assert headline.current("x", k=1)["v"] == "new"
    with pytest.raises(LookupError):
        headline.current("x", k=3)
