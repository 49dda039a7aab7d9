"""The sparse readout: RTL (Amaranth simulator) against its register model, cycle by cycle, and
both against the flags they were given; then whole engines with the sparse readout."""

import random

import pytest

from xpfilt.hdl.readout import SparseReadout
from xpfilt.compiler import CompileOptions, compile_queries
from xpfilt.hwdefs import distribution_depth
from xpfilt.model.engine import EngineModel, run_documents
from xpfilt.model.readout import SparseReadoutModel
from xpfilt.readout import (ReadoutKind, SparseBeat, collect_readout, readout_cycles,
                            sparse_latency, sparse_levels)
from xpfilt.xpath import parse_query

from .rtl_compare import compare_engine_with_model, compare_readout_with_model


def random_flags(rng, width):
    kind = rng.random()
    if kind < 0.15:
        return 0
    if kind < 0.3:
        return (1 << width) - 1
    if kind < 0.5:
        return 1 << rng.randrange(width)
    density = rng.choice([0.01, 0.1, 0.5])
    return sum(1 << i for i in range(width) if rng.random() < density)


def run_sparse(width, documents, *, seed, p_ready):
    """Capture ``documents`` (flags) as soon as the readout is free, with random ready; return
    the RTL's beats and the first cycle where RTL and model differ."""
    return compare_readout_with_model(SparseReadout(width), SparseReadoutModel(width),
                                      documents, seed=seed, p_ready=p_ready)


@pytest.mark.parametrize("width", [1, 2, 3, 8, 9, 63, 64, 65, 200, 520, 700,
                                   1025,     # the leaves' fetch select spread over 2 registers
                                   pytest.param(4100, marks=pytest.mark.regress)])   # 3 (50 s)
def test_rtl_equals_model_and_every_set_flag_is_read_out_once(width):
    rng = random.Random(width)
    documents = [random_flags(rng, width) for _ in range(12)]
    result = run_sparse(width, documents, seed=width, p_ready=0.7)
    assert result["mismatch"] is None, result["mismatch"]
    readouts = collect_readout(result["beats"], width)
    assert [r.bits for r in readouts] == documents
    assert [r.doc for r in readouts] == list(range(len(documents)))


def test_ids_come_in_increasing_order_one_per_cycle():
    width = 300
    flags = sum(1 << i for i in (0, 5, 63, 64, 65, 127, 128, 200, 299))
    model = SparseReadoutModel(width)
    model.step(True, flags, 0, True)
    beats = []
    for _ in range(30):
        beat = model.beat()
        if beat is not None:
            beats.append(beat)
        model.step(False, 0, 0, True)
    assert beats[0] == SparseBeat(1, 0, 0, 0, 0, 0)
    ids = [b.id for b in beats[1:]]
    assert ids == [0, 5, 63, 64, 65, 127, 128, 200, 299]
    assert beats[-1].last and beats[-1].count == 9
    assert not model.busy


@pytest.mark.parametrize("width", [5, 64, 1000, 1024, 5000])
@pytest.mark.parametrize("matches", [0, 1, 2, 7, 64, 65, 300])
def test_a_document_takes_readout_cycles(width, matches):
    """Ready always 1: busy for exactly :func:`readout_cycles` cycles after the capture, the
    ids one per cycle without a gap, however the matches fall on the tree."""
    matches = min(matches, width)
    rng = random.Random(matches * width)
    for trial in range(4):
        spread = rng.sample(range(width), matches)
        packed = range(rng.randrange(width - matches + 1), width)[:matches]
        flags = sum(1 << i for i in (spread if trial % 2 else packed))
        model = SparseReadoutModel(width)
        model.step(True, flags, 0, True)
        cycles, shown = 0, []
        while model.busy:
            beat = model.beat()
            if beat is not None and not beat.header:
                shown.append(cycles)
            model.step(False, 0, 0, True)
            cycles += 1
        assert cycles == readout_cycles(ReadoutKind.SPARSE, width, matches)
        assert shown == list(range(shown[0], shown[0] + matches)) if matches else not shown
        if matches:
            assert shown[0] == len(sparse_levels(width)) + 1 + sparse_latency(width)


def sparse_plan(texts, **options):
    queries = [parse_query(t, i + 1) for i, t in enumerate(texts)]
    return queries, compile_queries(queries, CompileOptions(readout="sparse", **options))


def test_engine_with_sparse_readout_rtl_equals_model_and_reference():
    from .test_engine_rtl import BAD, QUERIES, TRICKY, bits_of
    queries = QUERIES
    plan = compile_queries(queries, CompileOptions(cluster_size=4, max_depth=6,
                                                   readout="sparse"))
    docs = TRICKY + BAD + TRICKY + [b"x", b"<a/>", b"y"] * 4
    result = compare_engine_with_model(plan, docs, seed=7, p_valid=0.9, p_ready=0.6)
    assert result["mismatch"] is None, result["mismatch"]
    readouts = collect_readout(result["beats"], len(queries))
    assert len(readouts) == len(docs)
    for doc, readout in zip(docs, readouts):
        if not readout.errors:
            assert readout.bits == bits_of(plan, queries, doc), doc


def _stalls(plan, doc, times=20):
    model = EngineModel(plan)
    stalls = 0
    for data in [doc] * times:
        for i, byte in enumerate(data):
            while True:
                ready, _ = model.step(True, byte, i == len(data) - 1)
                if ready:
                    break
                stalls += 1
    return stalls


def test_sparse_readout_keeps_one_byte_per_cycle_with_thousands_of_queries():
    """The serial readout needs a document longer than the query count; the sparse one only
    longer than the previous document's readout (its matches plus the latency) plus the
    pipeline to the clusters, ``9 + ceil(log4(clusters))`` (the README's rule, exactly)."""
    texts = [f"//x{i}" for i in range(3000)] + ["/a", "//b"]
    queries, plan = sparse_plan(texts)
    clusters = len(plan.clusters)
    need = readout_cycles(ReadoutKind.SPARSE, len(texts), 2) + 9 + distribution_depth(clusters)
    assert need == 35                        # 24 readout (5 of them spread) + 9 + 2 (12 clusters)
    for size, stalls in ((need, 0), (need - 1, None)):
        doc = b"<a>" + b" " * (size - 11) + b"<b/></a>"      # 2 matches
        assert len(doc) == size
        if stalls == 0:
            assert _stalls(plan, doc) == 0
        else:
            assert _stalls(plan, doc) > 0
    readouts = run_documents(EngineModel(plan), [doc])
    bits = readouts[0].bits
    assert {n for b, n in enumerate(plan.query_numbers) if bits >> b & 1} == {3001, 3002}
