"""bench/results: each Markdown table is rendered from its JSON, rows carry their provenance,
and a result file holds the current row per configuration with the history kept apart."""

from __future__ import annotations

import json

import pytest

from tests.test_readme import _bench_module
from xpfilt.paths import repo_root

RESULTS = repo_root() / "bench" / "results"


@pytest.fixture()
def common(tmp_path, monkeypatch):
    module = _bench_module("common")
    monkeypatch.setattr(module, "RESULTS", tmp_path)
    monkeypatch.setattr(module, "HISTORY", tmp_path / "history")
    return module


def _saved_tables() -> list[str]:
    names = []
    for path in sorted(RESULTS.glob("*.json")):
        doc = json.loads(path.read_text())
        if isinstance(doc, dict) and "rows" in doc:
            names.append(path.stem)
    return names


@pytest.mark.parametrize("name", _saved_tables())
def test_markdown_is_rendered_from_the_json(name):
    """`python bench/common.py render` would not change results/NAME.md."""
    common = _bench_module("common")
    doc = json.loads((RESULTS / f"{name}.json").read_text())
    assert "table" in doc, f"{name}.json keeps no table: save it through bench/common.save"
    assert common.render(doc) == (RESULTS / f"{name}.md").read_text()


def test_new_rows_carry_commit_tools_and_load(common):
    common.save("t", [{"a": 1}], [("a", "A")], "T")
    (row,) = json.loads((common.RESULTS / "t.json").read_text())["rows"]
    assert row["a"] == 1
    assert row["commit"] is None or len(row["commit"].split("-")[0]) == 12
    assert row["tools"]["python"] and "amaranth" in row["tools"]
    assert len(row["load"]) == 3


def test_saved_rows_keep_their_provenance_and_replaced_rows_go_to_history(common):
    old = {"cfg": "x", "v": 1, "commit": "0123456789ab", "tools": {}, "load": [9, 9, 9]}
    other = {"cfg": "y", "v": 2, "commit": None}
    common.save("t", [old, other], [("cfg", "cfg"), ("v", "v")], "T")
    common.save(
        "t",
        [other, old, {"cfg": "x", "v": 3}],
        [("cfg", "cfg"), ("v", "v")],
        "T",
        key=lambda r: r["cfg"],
    )
    doc = json.loads((common.RESULTS / "t.json").read_text())
    assert [(r["cfg"], r["v"]) for r in doc["rows"]] == [("y", 2), ("x", 3)]
    assert doc["rows"][0] == other  # kept as saved, not stamped again
    history = [json.loads(line) for line in (common.HISTORY / "t.jsonl").read_text().splitlines()]
    assert [(r["v"], r["commit"]) for r in history] == [(1, "0123456789ab")]
    assert history[0]["superseded"]
    md = (common.RESULTS / "t.md").read_text()
    assert md == common.render(doc) and "| y | 2 |" in md and "| x | 1 |" not in md
