"""The cycle-accurate engine model: answers, flow control and error flags."""

import random

import pytest

from xpfilt.compiler.custom import CompileOptions, compile_queries
from xpfilt.engines import filter_batch
from xpfilt.hdl.frontend import Errors
from xpfilt.lang.xpath import load_queries, parse_query
from xpfilt.model.custom import (
    EngineModel,
    ModelEngine,
    collect_readout,
    document_beats,
    run_documents,
)
from xpfilt.software.events import load_documents
from xpfilt.software.reference import ReferenceFilter
from xpfilt.software.results import read_expected

from .conftest import expected_cases, shared_cases

STRUCTURAL = [c for c in expected_cases() if "pred" not in c[0]]


#: The quick sets in make test (the same 100 NITF documents, and XMark: depth 8, '*' and '//',
#: several clusters), the six 2,000-query NITF sets (~2-4 s each) in make test-slow, as for
#: the compiler and the programmable model.
@pytest.mark.parametrize("name, queries_path, folder, tsv", shared_cases(STRUCTURAL))
def test_model_reproduces_shared_expected(name, queries_path, folder, tsv):
    engine = ModelEngine(load_queries(queries_path).queries)
    results = {r.name: r.matches for r in filter_batch(engine, load_documents([folder]))}
    assert results == read_expected(tsv)


def queries_of(*texts):
    return [parse_query(t, i + 1) for i, t in enumerate(texts)]


QUERIES = queries_of("/a/b", "//b", "/a//c", "/*/b/c", "//c/*", "/a/c/d", "/a/b/c", "//d")
DOCS = [
    b"<a><b><c/></b><c><d/></c></a>",
    b"<?xml version='1.0'?><a x='>'><!-- c --><b>t</b></a>",
    b"<c><x/></c>",
    b"<a>" + b"<c>" * 3 + b"</c>" * 3 + b"</a>",
]


def expected_bits(plan, queries, document):
    ref = ReferenceFilter(queries).filter(document)
    position = {q.number: i for i, q in enumerate(queries)}
    return sum(1 << i for i, n in enumerate(plan.query_numbers) if position[n] in ref)


def run_with_gaps(model, docs, rng, p_valid: float = 0.7, p_ready: float = 0.3):
    """The readouts of ``docs`` streamed through an engine model with random input gaps
    (``valid``) and readout stalls (``ready``), beats of ``model.bytes_per_cycle`` bytes."""
    stream = [b for d in docs for b in document_beats(d, model.bytes_per_cycle)]
    idle = (0, False) if model.bytes_per_cycle == 1 else (b"", False)
    beats, i = [], 0
    while len(beats) < len(docs) * model.width:
        valid = i < len(stream) and rng.random() < p_valid
        data, last = stream[i] if i < len(stream) else idle
        out_ready = rng.random() < p_ready
        ready, beat = model.step(valid, data, last, out_ready)
        if beat is not None and out_ready:
            beats.append(beat)
        i += valid and ready
        assert model.cycle < 20000
    return collect_readout(beats, model.width)


@pytest.mark.parametrize("seed", range(4))
def test_random_valid_and_ready_patterns_lose_nothing(seed):
    rng = random.Random(seed)
    plan = compile_queries(QUERIES, CompileOptions(cluster_size=3, max_depth=8))
    model = EngineModel(plan)
    docs = [rng.choice(DOCS) for _ in range(12)]
    readouts = run_with_gaps(model, docs, rng)
    assert [r.doc for r in readouts] == list(range(len(docs)))
    assert [r.bits for r in readouts] == [expected_bits(plan, QUERIES, d) for d in docs]
    assert all(r.errors == Errors(0) for r in readouts)


def test_one_byte_per_cycle_when_documents_outlast_the_readout():
    plan = compile_queries(QUERIES)
    model = EngineModel(plan)
    doc = b"<a>" + b"<b><c/></b>" * 20 + b"</a>"  # 226 bytes > 8 readout bits
    docs = [doc] * 10
    stalls = 0
    for data in docs:
        for i, byte in enumerate(data):
            ready, _ = model.step(True, byte, i == len(data) - 1)
            stalls += not ready
            assert ready
    assert stalls == 0


def test_short_documents_stall_the_input_instead_of_losing_answers():
    queries = queries_of(*[f"//x{i}" for i in range(40)], "/a")
    plan = compile_queries(queries)
    model = EngineModel(plan)
    readouts = run_documents(model, [b"<a/>", b"<b/>", b"<a/>"])
    assert [r.bits >> 40 for r in readouts] == [1, 0, 1]
    assert model.cycle > 3 * 41  # the readout, not the 12 input bytes, set the pace


@pytest.mark.parametrize(
    "document, flag",
    [
        (b"<a><b></a>", Errors.MALFORMED),
        (b"<a>" * 9 + b"</a>" * 9, Errors.DEPTH_OVERFLOW),
        (b"<" + b"a" * 40 + b"/>", Errors.NAME_TOO_LONG),
        (b"<a>", Errors.MALFORMED),
    ],
)
def test_bad_documents_raise_flags_and_the_next_is_answered(document, flag):
    plan = compile_queries(QUERIES, CompileOptions(max_depth=8))
    model = EngineModel(plan)
    good = DOCS[0]
    readouts = run_documents(model, [good, document, good])
    assert readouts[1].errors & flag
    assert readouts[0].errors == readouts[2].errors == Errors(0)
    assert readouts[0].bits == readouts[2].bits == expected_bits(plan, QUERIES, good)


def test_model_engine_reports_flagged_documents_by_name():
    from xpfilt.software.events import Document

    results = list(
        filter_batch(
            ModelEngine(QUERIES), [Document("bad.xml", b"<a></b>"), Document("ok.xml", DOCS[0])]
        )
    )
    assert results[0].error == "bad.xml: the engine flagged the document: malformed"
    assert results[1].ok


def back_to_back_short_documents():
    """``<a/>`` and five one-byte documents, ten times, then ``<b/>`` (issue 11, defect 1)."""
    return ([b"<a/>"] + [b"x"] * 5) * 10 + [b"<b/>"]


def test_back_to_back_short_documents_each_get_exactly_one_readout():
    queries = queries_of("//a", "//b")
    plan = compile_queries(queries)
    model = EngineModel(plan)
    docs = back_to_back_short_documents()
    readouts = run_documents(model, docs)
    assert [r.doc for r in readouts] == list(range(len(docs)))
    for doc, readout in zip(docs, readouts):
        if doc == b"x":
            assert readout.errors & Errors.MALFORMED
        else:
            assert readout.errors == Errors(0)
            assert readout.bits == expected_bits(plan, queries, doc), doc
    assert model.pending == 0


def test_the_models_do_not_import_the_rtl():
    """What the RTL and the model share lives in xpfilt.hwspec.contract: the models import no xpfilt.hdl
    module (no Amaranth elaboration code)."""
    import subprocess
    import sys

    code = (
        "import sys, xpfilt.model.custom, xpfilt.model.programmable, xpfilt.hwspec.readout; "
        "print(sorted(m for m in sys.modules if m.startswith('xpfilt.hdl')))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
