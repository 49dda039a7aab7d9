"""A small seeded slice of every fuzz category (``make fuzz`` runs the full counts), and proof
that the harness notices a planted failure in each kind of check."""

import json
import random

import pytest

from xpfilt.model.programmable import load_configuration
from xpfilt.software.reference import ReferenceFilter
from xpfilt.verify.fuzz import FuzzConfig, run_fuzz
from xpfilt.verify.fuzz.outcomes import DOCUMENTED
from xpfilt.verify.fuzz.report import Recorder, known_defect
from xpfilt.verify.fuzz.rtl import Segment, StreamRun, run_stream
from xpfilt.verify.fuzz.run import _check_readouts, fuzz_config, fuzz_hostile, fuzz_wellformed

SLICE = {"wellformed": 0.01, "hostile": 0.01, "config": 0.15, "rtl": 0.01, "scanner": 0.01}


#: The configuration slice (~14 s: streams through the programmable engine's model and RTL) runs
#: in make test-rtl.
@pytest.mark.parametrize(
    "category",
    [pytest.param(c, marks=pytest.mark.rtl) if c == "config" else c for c in SLICE],
)
def test_seeded_slice_finds_nothing(category, tmp_path):
    summary = run_fuzz(
        FuzzConfig(
            seed=11,
            cases_scale=SLICE[category],
            out=tmp_path,
            replay_dir=tmp_path / "replay",
            categories=(category,),
            progress=False,
        )
    )
    counts = summary["categories"][category]
    assert counts["cases"] >= (3 if category == "rtl" else 200)
    assert sum(counts["checks"].values()) >= counts["cases"]
    assert (
        json.loads((tmp_path / "fuzz.json").read_text())["categories"][category]["cases"]
        == counts["cases"]
    )
    failures = {f["class"]: f["detail"] for f in summary["failure_classes"]}
    assert failures == {}, json.dumps(failures, indent=1)


# --- the harness can fail ------------------------------------------------------------------


class WrongEngine:
    """Answers like the reference but drops query 1 from every answer, and crashes on
    documents containing 'c'."""

    def __init__(self, queries, setting=None):
        self.queries = tuple(queries)
        self.ref = ReferenceFilter(self.queries)

    def filter(self, document):
        if b"<c" in document.data:
            raise RuntimeError("planted crash")
        return self.ref.filter(document) - {0}


FACTORIES = {"wrong": (WrongEngine, False)}


def test_planted_wrong_engine_is_caught(tmp_path):
    rec = Recorder(tmp_path)
    fuzz_wellformed(
        random.Random(3), 200, rec, engines=("wrong",), factories=FACTORIES, progress=False
    )
    failures = rec.categories["wellformed"].failures
    assert failures["crash wrong: RuntimeError: planted crash"] > 0
    assert failures["disagreement: wrong and the reference answer differently"] > 0
    assert rec.categories["wellformed"].failed_cases > 0
    folder = next((tmp_path / "wellformed").iterdir())
    what = (folder / "what.txt").read_text()
    assert "replay (in this folder):" in what and "xpfilt filter -q queries.txt" in what
    assert (folder / "queries.txt").exists() and (folder / "2-case.xml").exists()


def test_planted_crash_on_hostile_documents_is_caught(tmp_path):
    rec = Recorder(None)
    fuzz_hostile(
        random.Random(4), 200, rec, engines=("wrong",), factories=FACTORIES, progress=False
    )
    assert rec.categories["hostile"].failures["crash wrong: RuntimeError: planted crash"] > 0


def test_planted_loader_that_accepts_corrupt_streams_is_caught():
    def careless(model, stream):
        load_configuration(model, stream)
        model.rejected = 0  # pretend every stream is fine

    rec = Recorder(None)
    fuzz_config(random.Random(5), 20, rec, loader=careless, progress=False)
    assert any(k.startswith("corrupted stream accepted") for k in rec.categories["config"].failures)


def test_lost_and_wrong_readouts_are_caught():
    from xpfilt.compiler.custom import compile_queries
    from xpfilt.lang.xpath import parse_query

    plan = compile_queries([parse_query("//a", 1), parse_query("//b", 2)])
    docs = [b"<a/>", b"x", b"<b/>"]
    segments = [Segment(documents=docs)]
    good = run_stream("custom", plan, segments, rtl=False, p_valid=1.0, p_ready=1.0)
    expect = [("bits", 1), ("flag",), ("bits", 2)]
    rec = Recorder(None)
    assert not _check_readouts(
        "rtl", "custom", plan, segments, good, rec, expect, "", {}, rtl=False
    )
    lost = StreamRun(model_beats=good.model_beats[:-2])  # the last readout lost
    assert _check_readouts("rtl", "custom", plan, segments, lost, rec, expect, "", {}, rtl=False)
    wrong = [("bits", 2), ("flag",), ("bits", 2)]
    assert _check_readouts("rtl", "custom", plan, segments, good, rec, wrong, "", {}, rtl=False)
    failures = rec.categories["rtl"].failures
    assert failures["lost readouts (model, custom)"] == 1
    assert failures["wrong answer (model, custom)"] == 1


def test_every_documented_class_names_where_it_is_written():
    assert all(where for where in DOCUMENTED.values())
    assert known_defect("disagreement: something nobody has seen") is None


def test_a_hanging_engine_counts_as_a_hang(tmp_path):
    import time

    class Slow(WrongEngine):
        def filter(self, document):
            time.sleep(5)
            return frozenset()

    from xpfilt.verify.fuzz.run import EngineSet, compare_document

    es = EngineSet(["//a"], ["slow"], random.Random(0), {"slow": (Slow, False)})
    rec = Recorder(None)
    assert compare_document("hostile", es, b"<a/>", rec, timeout=0.2)
    assert rec.categories["hostile"].failures["hang slow: Hang: no answer within N.N s"] == 1


def test_rtl_and_config_cases_replay_from_their_folders(tmp_path, capsys):
    from xpfilt.compiler.custom import compile_queries
    from xpfilt.compiler.programmable import HardwareSpec, configure
    from xpfilt.lang.xpath import parse_query
    from xpfilt.verify.fuzz.replay import replay
    from xpfilt.verify.fuzz.run import _config_files, _rtl_files

    plan = compile_queries([parse_query("//a", 1), parse_query("//b", 2)])
    segments = [Segment(documents=[b"<a/>", b"x", b"<b/>"])]
    meta = {
        "kind": "custom",
        "seed": 3,
        "p_valid": 0.7,
        "p_ready": 0.5,
        "rtl": True,
        "segments": [[3, False, 0]],
    }
    folder = tmp_path / "rtl"
    folder.mkdir()
    for name, data in _rtl_files([["//a", "//b"]], plan, segments, meta).items():
        (folder / name).write_bytes(data)
    assert replay(folder) == 0
    assert "RTL: 3 readouts for 3 documents" in capsys.readouterr().out

    spec = HardwareSpec(clusters=1, columns=4, max_tag_len=2, max_depth=4, max_name=8)
    a, b = (configure([parse_query(t, 1)], spec).stream() for t in ("//a", "/b"))
    folder = tmp_path / "config"
    folder.mkdir()
    for name, data in _config_files(spec, ["//a"], ["/b"], a, b[:-1], [b"<a/>"], b).items():
        (folder / name).write_bytes(data)
    assert replay(folder) == 0
    assert capsys.readouterr().out.strip().endswith("OK")


def test_an_entity_with_markup_is_flagged_and_a_wrong_answer_is_a_failure():
    """Issue 35 #7: the hardware engines flag a reference to an entity they cannot expand
    (a documented difference: ``xpfilt host`` answers it in software); answering such a
    document differently from the reference, without the flag, is a failure."""
    from xpfilt.hwspec.contract import Errors
    from xpfilt.lang.xpath import parse_query
    from xpfilt.model.custom import ModelEngine
    from xpfilt.model.programmable import ProgrammableModelEngine
    from xpfilt.software.events import Document
    from xpfilt.verify.fuzz.outcomes import Outcome, classify, run_engine
    from xpfilt.verify.fuzz.run import EngineSet

    queries = [parse_query("//b", 1), parse_query("/a/c", 2)]
    data = b'<!DOCTYPE a [<!ENTITY m "<b/><c/>">]><a>&m;</a>'
    ref = run_engine(ReferenceFilter(queries), Document("case.xml", data))
    assert ref.kind == "answer" and ref.answer == {1, 2}  # query numbers
    programmable = EngineSet(["//b", "/a/c"], ["programmable"], random.Random(1)).slots[0]
    for name, engine in (("model", ModelEngine(queries)), ("programmable", programmable.engine)):
        assert isinstance(engine, (ModelEngine, ProgrammableModelEngine))
        out = run_engine(engine, Document("case.xml", data))
        assert out.kind == "flag" and out.flags == Errors.ENTITY, name
        assert classify(name, data, ref, out) == (
            True,
            "hardware: an entity reference it cannot decide is flagged (entity)",
        )
        documented, klass = classify(name, data, ref, Outcome("answer", answer=frozenset()))
        assert not documented, klass
