"""The sparse readout: RTL (Amaranth simulator) against its register model, cycle by cycle, and
both against the flags they were given; then whole engines with the sparse readout."""

import random
import re

import pytest
from amaranth.back import rtlil

from xpfilt.compiler.custom import CompileOptions, compile_queries
from xpfilt.hdl.readout import SparseReadout
from xpfilt.hwspec.contract import distribution_depth
from xpfilt.hwspec.readout import (
    SPARSE_QUEUE_BANK_WORDS,
    SPARSE_QUEUE_LUT_RAM_WORDS,
    ReadoutKind,
    SparseBeat,
    collect_readout,
    readout_cycles,
    sparse_latency,
    sparse_levels,
    sparse_queue_depth,
)
from xpfilt.hwspec.readout import (
    SPARSE_SHOW_DELAY as SHOW_DELAY,
)
from xpfilt.lang.xpath import parse_query
from xpfilt.model.custom import EngineModel, run_documents
from xpfilt.model.readout import SparseReadoutModel

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
    return compare_readout_with_model(
        SparseReadout(width), SparseReadoutModel(width), documents, seed=seed, p_ready=p_ready
    )


@pytest.mark.parametrize(
    "width",
    [
        1,
        2,
        3,
        8,
        9,
        63,
        64,
        65,
        200,
        520,
        700,
        1025,  # the leaves' fetch select spread over 2 registers
        pytest.param(4100, marks=pytest.mark.regress),
    ],
)  # 3 (50 s)
def test_rtl_equals_model_and_every_set_flag_is_read_out_once(width):
    rng = random.Random(width)
    documents = [random_flags(rng, width) for _ in range(12)]
    result = run_sparse(width, documents, seed=width, p_ready=0.7)
    assert result["mismatch"] is None, result["mismatch"]
    readouts = collect_readout(result["beats"], width)
    assert [r.bits for r in readouts] == documents
    assert [r.doc for r in readouts] == list(range(len(documents)))


@pytest.mark.parametrize("width", [1, 8, 64, 200])
@pytest.mark.parametrize("p_ready, p_capture", [(1.0, 1.0), (0.2, 1.0), (0.5, 0.3)])
def test_rtl_equals_model_at_the_flow_control_extremes(width, p_ready, p_capture):
    """Captures as soon as the readout is free, ready always 1 or almost never (the output
    queue fills: the tree and then the captures wait for its room), dense documents back to
    back: RTL = model every cycle, every document read out once, in order."""
    rng = random.Random(width + int(100 * p_ready))
    full = (1 << width) - 1
    documents = [full, full, 0, full] + [random_flags(rng, width) for _ in range(8)] + [full] * 4
    dut, model = SparseReadout(width), SparseReadoutModel(width)
    result = compare_readout_with_model(
        dut, model, documents, seed=width, p_ready=p_ready, p_capture=p_capture
    )
    assert result["mismatch"] is None, result["mismatch"]
    readouts = collect_readout(result["beats"], width)
    assert [r.bits for r in readouts] == documents
    assert [r.doc for r in readouts] == list(range(len(documents)))
    if p_ready < 0.3 and width > 1:
        assert result["queue_filled"], "the test must fill the output queue"


@pytest.mark.parametrize("width", [64, 1000, 8000])
def test_the_tree_drains_a_leaf_per_cycle_into_the_output_queue(width):
    """Busy (the shadow held) for one cycle per non-empty leaf of 8 flags, not per match: a
    document whose flags are all set frees the shadow after ``width / 8`` leaf cycles, while
    the output queue goes on sending its ids one per cycle."""
    flags = (1 << width) - 1
    model = SparseReadoutModel(width)
    model.step(True, flags, 0, True)
    cycles, freed, beats = 0, 0, []
    while model.busy or model.holds_beats:
        beat = model.beat()
        if beat is not None:
            beats.append(beat)
        model.step(False, 0, 0, True)
        cycles += 1
        if not model.busy and not freed:
            freed = cycles
    assert freed == readout_cycles(ReadoutKind.SPARSE, width, flags)
    assert freed == len(sparse_levels(width)) + sparse_latency(width) + -(-width // 8)
    assert cycles == freed - -(-width // 8) + SHOW_DELAY + width
    readouts = collect_readout(beats, width)
    assert [r.bits for r in readouts] == [flags]


def test_ids_come_in_increasing_order_one_per_cycle():
    width = 300
    flags = sum(1 << i for i in (0, 5, 63, 64, 65, 127, 128, 200, 299))
    model = SparseReadoutModel(width)
    model.step(True, flags, 0, True)
    beats = []
    for _ in range(40):
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
    """Ready always 1: busy for exactly :func:`readout_cycles` cycles after the capture (one
    per non-empty leaf, after the latency), the ids one per cycle without a gap, however the
    matches fall on the tree."""
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
        assert cycles == readout_cycles(ReadoutKind.SPARSE, width, flags)
        while model.beat() is not None or model.holds_beats:
            beat = model.beat()
            if beat is not None and not beat.header:
                shown.append(cycles)
            model.step(False, 0, 0, True)
            cycles += 1
        assert shown == list(range(shown[0], shown[0] + matches)) if matches else not shown
        if matches:
            assert shown[0] == len(sparse_levels(width)) + sparse_latency(width) + SHOW_DELAY


def sparse_plan(texts, **options):
    queries = [parse_query(t, i + 1) for i, t in enumerate(texts)]
    return queries, compile_queries(queries, CompileOptions(readout="sparse", **options))


def test_engine_with_sparse_readout_rtl_equals_model_and_reference():
    from .test_engine_rtl import BAD, QUERIES, TRICKY, bits_of

    queries = QUERIES
    plan = compile_queries(queries, CompileOptions(cluster_size=4, max_depth=6, readout="sparse"))
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


NEED_3002 = 34


def test_sparse_readout_keeps_one_byte_per_cycle_with_thousands_of_queries():
    """The serial readout needs a document longer than the query count; the sparse one only
    longer than the previous document's readout (its non-empty leaves plus the latency) plus
    the pipeline to the clusters, ``9 + ceil(log4(clusters))`` (the README's rule, exactly)."""
    texts = [f"//x{i}" for i in range(3000)] + ["/a", "//b"]
    queries, plan = sparse_plan(texts)
    clusters = len(plan.clusters)
    matched = sum(1 << b for b, n in enumerate(plan.query_numbers) if n in (3001, 3002))
    need = (
        readout_cycles(ReadoutKind.SPARSE, len(texts), matched) + 9 + distribution_depth(clusters)
    )
    assert need == NEED_3002  # the readout (5 of it spread) + 9 + 2 (12 clusters)
    for size, stalls in ((need, 0), (need - 1, None)):
        doc = b"<a>" + b" " * (size - 11) + b"<b/></a>"  # 2 matches
        assert len(doc) == size
        if stalls == 0:
            assert _stalls(plan, doc) == 0
        else:
            assert _stalls(plan, doc) > 0
    readouts = run_documents(EngineModel(plan), [doc])
    bits = readouts[0].bits
    assert {n for b, n in enumerate(plan.query_numbers) if bits >> b & 1} == {3001, 3002}


@pytest.mark.parametrize("p_valid, p_ready", [(1.0, 1.0), (1.0, 0.1), (0.7, 0.7)])
def test_engine_short_documents_with_many_matches_back_to_back(p_valid, p_ready):
    """1-3 byte documents back to back, each matching most queries (many ids per document):
    RTL = model every cycle, both = the reference, every document read out once, in order."""
    from .test_engine_rtl import bits_of

    texts = ["/a", "//a", "/*", "//*", "/b", "//b"] * 6 + ["/a/b", "//c"]
    queries, plan = sparse_plan(texts, cluster_size=8, max_depth=4)
    docs = [b"<a/>", b"<b/>", b"x", b"<a>", b"ab", b"<b/>", b"<a/>"] * 3
    result = compare_engine_with_model(plan, docs, seed=3, p_valid=p_valid, p_ready=p_ready)
    assert result["mismatch"] is None, result["mismatch"]
    readouts = collect_readout(result["beats"], len(queries))
    assert [r.doc for r in readouts] == list(range(len(docs)))
    for doc, readout in zip(docs, readouts):
        if not readout.errors:
            assert readout.bits == bits_of(plan, queries, doc), doc


@pytest.mark.parametrize("width", [1024, 2048, 8000])
def test_output_queue_memory_kind(width):
    """The output queue asks synthesis for LUT RAM up to SPARSE_QUEUE_LUT_RAM_WORDS words (a
    block RAM's unregistered clock-to-out limited 1,024 sparse to 130.8 MHz), block RAM above."""
    text = rtlil.convert(SparseReadout(width))
    small = sparse_queue_depth(width) <= SPARSE_QUEUE_LUT_RAM_WORDS
    assert ('attribute \\ram_style "distributed"' in text) == small
    assert ('attribute \\ram_style "block"' in text) == (not small)


@pytest.mark.parametrize("width", [64, 1024, 8000])
def test_lut_ram_output_queue_in_banks(width):
    """A LUT-RAM output queue is read from banks of SPARSE_QUEUE_BANK_WORDS words, each into
    its own register, the word chosen among those registers after them (one 256-word memory's
    16-to-1 read multiplexer before its register limited 1,024 sparse to 145.1 MHz); a
    block-RAM queue is one memory."""
    text = rtlil.convert(SparseReadout(width))
    sizes = [int(n) for n in re.findall(r"memory width \d+ size (\d+) \\out_queue", text)]
    depth = sparse_queue_depth(width)
    if depth > SPARSE_QUEUE_LUT_RAM_WORDS:
        assert sizes == [depth]
    else:
        bank = min(depth, SPARSE_QUEUE_BANK_WORDS)
        assert sizes == [bank] * (depth // bank)
