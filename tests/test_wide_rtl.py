"""The W-byte engine's RTL (issue 18, Amaranth simulator) against its cycle-accurate model every
cycle (ready and readout beat) and against the reference per document, at W = 2, 4, 8."""

import pytest
from hypothesis import given
from hypothesis import strategies as st

from xpfilt.compiler.custom import CompileOptions, compile_queries
from xpfilt.hwspec.contract import Errors, queue_depth_for, wide_latency
from xpfilt.lang.xpath import load_queries, parse_query
from xpfilt.model.custom import collect_readout
from xpfilt.paths import shared_data

from .conftest import examples
from .rtl_compare import compare_engine_with_model
from .strategies import documents, queries
from .test_engine_rtl import BAD, QUERIES, TRICKY, bits_of, check_tricky_and_bad

WIDTHS = (2, 4, 8)


def widths(*quick):
    """WIDTHS as parameters, those not in ``quick`` marked for make test-rtl (elaborating the
    engine takes ~3 s at W = 2, ~9 s at W = 4, ~26 s at W = 8)."""
    return [w if w in quick else pytest.param(w, marks=pytest.mark.rtl) for w in WIDTHS]


def check(plan, queries, docs, **kwargs):
    """RTL = model every cycle; every document answered as the reference says, or flagged."""
    result = compare_engine_with_model(plan, docs, **kwargs)
    assert result["mismatch"] is None, result["mismatch"]
    readouts = collect_readout(result["beats"], len(queries))
    assert [r.doc for r in readouts] == list(range(len(docs)))
    return readouts


@pytest.mark.parametrize("width", widths(2, 4))
@pytest.mark.parametrize("p_valid, p_ready, seed", [(1.0, 1.0, 0), (0.7, 0.6, 1)])
def test_tricky_and_bad_documents(width, p_valid, p_ready, seed):
    plan = compile_queries(QUERIES, CompileOptions(cluster_size=4, max_depth=6))
    docs = TRICKY + BAD[:3] + TRICKY[:1] + BAD[3:] + TRICKY[1:2]
    readouts = check(
        plan, QUERIES, docs, seed=seed, p_valid=p_valid, p_ready=p_ready, bytes_per_cycle=width
    )
    check_tricky_and_bad(plan, docs, readouts)


@pytest.mark.parametrize("width", widths(2))
@pytest.mark.parametrize("p_valid, p_ready, seed", [(1.0, 1.0, 0), (0.6, 0.7, 2)])
def test_back_to_back_one_to_three_byte_documents(width, p_valid, p_ready, seed):
    queries = [parse_query("//a", 1), parse_query("//b", 2)]
    plan = compile_queries(queries)
    docs = [b"x", b"<a", b"<a/", b"<a/>", b"  ", b"<b/>", b"<a/> ", b"<a><b/></a>"] * 3
    readouts = check(
        plan,
        queries,
        docs,
        seed=seed,
        p_valid=p_valid,
        p_ready=p_ready,
        extra_cycles=40,
        bytes_per_cycle=width,
    )
    for doc, readout in zip(docs, readouts):
        if doc.strip() in (b"<a/>", b"<b/>", b"<a><b/></a>"):
            assert readout.errors == Errors(0) and readout.bits == bits_of(plan, queries, doc)
        else:
            assert readout.errors & Errors.MALFORMED, doc


@pytest.mark.parametrize("width", widths(2, 4))
def test_dense_events_fill_the_queue_and_stall_the_input(width):
    """Two events every four bytes: the queue fills and ``room`` holds the input back."""
    queries = [parse_query("/r/a", 1), parse_query("//b", 2)]
    plan = compile_queries(queries)
    docs = [b"<r>" + b"<a/>" * 40 + b"<b/></r>", b"<r/>"]
    result = compare_engine_with_model(
        plan, docs, p_valid=1.0, p_ready=1.0, extra_cycles=100, bytes_per_cycle=width
    )
    assert result["mismatch"] is None, result["mismatch"]
    assert [r.bits for r in collect_readout(result["beats"], 2)] == [3, 0]
    streaming = result["cycles"] - 100  # until the last beat was accepted
    events = 1 + 80 + 2 + 1 + 2  # pushes and pops of both documents
    assert streaming > -(-len(docs[0]) // width)  # the input stalled ...
    assert streaming >= events - queue_depth_for(width)  # ... as one event per cycle needs


@pytest.mark.rtl
@examples(ci=12)
@given(
    docs=st.lists(documents(), min_size=1, max_size=3),
    texts=st.lists(queries(), min_size=1, max_size=8),
    cluster_size=st.integers(1, 4),
    seed=st.integers(0, 1000),
    width=st.sampled_from(WIDTHS),
)
def test_random_cases(docs, texts, cluster_size, seed, width):
    parsed = [parse_query(t, i + 1) for i, t in enumerate(texts)]
    plan = compile_queries(parsed, CompileOptions(cluster_size=cluster_size, max_depth=10))
    readouts = check(
        plan,
        parsed,
        docs,
        seed=seed,
        p_valid=0.9,
        p_ready=0.9,
        extra_cycles=len(parsed) * 3 + 80,
        bytes_per_cycle=width,
    )
    assert [r.bits for r in readouts] == [bits_of(plan, parsed, d) for d in docs]


@pytest.fixture(scope="module")
def fixed_plan():
    """One design for the random documents of make test: elaborated once per width and
    process (rtl_compare's bench cache), not once per example as test_random_cases does."""
    return compile_queries(QUERIES, CompileOptions(cluster_size=4, max_depth=6))


@examples(ci=50)
@given(
    docs=st.lists(documents(), min_size=1, max_size=3),
    seed=st.integers(0, 1000),
    width=st.sampled_from([2, 4]),
)
def test_random_documents_on_one_design(fixed_plan, docs, seed, width):
    readouts = check(
        fixed_plan,
        QUERIES,
        docs,
        seed=seed,
        p_valid=0.9,
        p_ready=0.8,
        extra_cycles=len(QUERIES) * 3 + 80,
        bytes_per_cycle=width,
    )
    for doc, readout in zip(docs, readouts):
        if not readout.errors:
            assert readout.bits == bits_of(fixed_plan, QUERIES, doc), doc


@pytest.mark.rtl
@pytest.mark.parametrize("width", (4,))
@pytest.mark.parametrize("max_depth, max_name", [(1, 1), (2, 2), (3, 5), (16, 32)])
def test_parameter_edges(width, max_depth, max_name):
    long_tag = "t" * max_name
    queries = [
        parse_query(t, i + 1)
        for i, t in enumerate(
            ["/a", "//b", f"//{long_tag}", "/a/b", "/*//a", f"/a//{long_tag}", "//*", "/a/*/b"]
        )
    ]
    plan = compile_queries(queries, CompileOptions(cluster_size=3, max_depth=max_depth))
    docs = [
        b"<a/>",
        b"<b/>",
        f"<{long_tag}/>".encode(),
        b"x",
        b"<a>" * max_depth + b"</a>" * max_depth,
        b"<a>" * (max_depth + 1) + b"</a>" * (max_depth + 1),
        b"<a>" + b"<b>" * (max_depth - 1) + b"</b>" * (max_depth - 1) + b"</a>",
        f"<{long_tag}t/>".encode(),
        f"<a><{long_tag}/></a>".encode(),
        b"<b/>",
    ]
    # idle cycles after the last beat: its way to the stacks, then the readout
    readouts = check(
        plan,
        queries,
        docs,
        seed=max_depth,
        p_valid=0.9,
        p_ready=0.9,
        extra_cycles=wide_latency(width) + len(queries) * 3 + 20,
        max_name=max_name,
        bytes_per_cycle=width,
    )
    for doc, readout in zip(docs, readouts):
        if not readout.errors:
            assert readout.bits == bits_of(plan, queries, doc), doc
    assert readouts[5].errors & Errors.DEPTH_OVERFLOW
    assert readouts[7].errors & Errors.NAME_TOO_LONG


@pytest.mark.rtl
def test_real_nitf_documents_at_four_bytes_per_cycle():
    data = shared_data()
    queries = load_queries(data / "queries/nitf-d8-p15-n2000.txt").queries[:24]
    plan = compile_queries(queries, CompileOptions(cluster_size=8))
    docs = [(data / f"nitf/docs/outFile{i}.xml").read_bytes() for i in (7, 42)]
    readouts = check(
        plan, queries, docs, seed=3, p_valid=0.95, p_ready=1.0, extra_cycles=60, bytes_per_cycle=4
    )
    assert [r.bits for r in readouts] == [bits_of(plan, queries, d) for d in docs]


@pytest.mark.rtl
def test_twigs_and_combinations_at_four_bytes_per_cycle():
    texts = ["/a[b]/c", "//a[c/d]//b", "/a/b and not(//d)", "//c or //a[b/c]"]
    queries = [parse_query(t, i + 1) for i, t in enumerate(texts)]
    plan = compile_queries(queries, CompileOptions(cluster_size=2, max_depth=8))
    docs = [
        b"<a><b/><c/></a>",
        b"<a><c><d/></c><b/></a>",
        b"<a><b><c/></b></a>",
        b"x",
        b"<a><b/></a>",
        b"<a><b/><d/></a>",
    ] * 2
    readouts = check(
        plan, queries, docs, seed=4, p_valid=0.8, p_ready=0.7, extra_cycles=40, bytes_per_cycle=4
    )
    for doc, readout in zip(docs, readouts):
        if doc != b"x":
            assert readout.errors == Errors(0) and readout.bits == bits_of(plan, queries, doc)


@pytest.mark.rtl
def test_one_byte_per_cycle_is_the_one_byte_engine():
    """W = 1 builds exactly the engine of before issue 18 (the same Verilog as without the
    parameter, no event queue, the one-byte ``bytes_in`` layout); W = 2 adds the queue."""
    from amaranth.back import verilog

    from xpfilt.hdl.custom import CustomEngine

    plan = compile_queries(QUERIES, CompileOptions(cluster_size=4, max_depth=6))
    default = verilog.convert(CustomEngine(plan), name="top")
    one = verilog.convert(CustomEngine(plan, bytes_per_cycle=1), name="top")
    assert one == default and "queue0" not in one
    assert "input [8:0] bytes_in__payload;" in one  # data, last
    two = verilog.convert(CustomEngine(plan, bytes_per_cycle=2), name="top")
    assert "queue_bank1" in two and "queue_bank2" not in two
    assert "input [18:0] bytes_in__payload;" in two  # 2 x data, count, last


def test_a_beat_holds_at_most_one_tag_event_per_three_bytes():
    """The shared tag decoders' count: tag events (pushes, end tags' pops) are at least 3
    bytes apart on every path of the parser table, and ``<a>`` repeated meets that bound."""
    from xpfilt.hdl.wide_frontend import tag_decoders, tag_event_gap
    from xpfilt.model.frontend import FrontEndModel

    assert tag_event_gap() == 3
    assert [tag_decoders(w) for w in WIDTHS] == [1, 2, 3]
    parser = FrontEndModel(["a"], max_depth=8)
    pushes = [i for i, c in enumerate(b" <a><a><a>") if parser._send((1, c, False)).push]
    assert pushes == [3, 6, 9]


@pytest.mark.parametrize("width", widths(2))
def test_names_ending_in_every_lane(width):
    """Tags that are prefixes of each other, names held across beats by attributes and
    spaces, end tags that differ from their start tag only in length: every name ends in
    every lane (the documents shifted by 0..W-1 spaces)."""
    texts = ["//a", "//ab", "/r/abc", "//abc/a", "//b//bc", "/r/*/ab"]
    queries = [parse_query(t, i + 1) for i, t in enumerate(texts)]
    plan = compile_queries(queries, CompileOptions(cluster_size=3, max_depth=8))
    good = [
        b"<r><a><ab><abc></abc></ab></a><abc x='1'><ab  y=\"22\" ><a/></ab ></abc  ></r>",
        b"<r><abcd/><ab/><b><bc>t</bc><a/><bcd/><bc/></b><abc><a/></abc></r>",
    ]
    bad = [b"<r><ab></a></r>", b"<r><a></ab><abc></abcd></r>"]
    docs = [b" " * shift + doc for shift in range(width) for doc in good + bad]
    readouts = check(
        plan, queries, docs, seed=width, p_valid=0.9, p_ready=0.8, bytes_per_cycle=width
    )
    for doc, readout in zip(docs, readouts):
        if doc.strip() in good:
            assert readout.errors == Errors(0) and readout.bits == bits_of(plan, queries, doc)
        else:
            assert readout.errors & Errors.MALFORMED, doc


#: Attribute values that end in every lane (shifted by 0..W-1 bytes), split over beats,
#: undecided (an exponent, a reference, too many digits), tiny documents back to back, a value
#: at the end.
ATTR_DOCS = [
    b'<a id="1"><b/></a>',
    b"<a id='1' n=\"\"><b id='q r'/></a>",
    b'<a   id = "-0.25"  n="x"><c n="x"/><b n="3" id="1.5"/></a>',
    b'<a id="1e0"><b/></a>',
    b'<a n="&amp;"><b/></a>',
    b'<a id="12345678901234567"><b/></a>',
    b"<c idx=''/>",
    b'<a id="1"',
    b'<a id="1"/>',
    b'<a n=" 2 "><x/></a>',
    b"<b n='2'/>",
]


#: One of the six runs stays in make test (~30 s), one in make test-rtl (~90 s); all six in make
#: regress.
PREDICATE_RUNS = [
    pytest.param(
        width,
        *flow,
        marks={(2, 0.6): (), (4, 1.0): pytest.mark.rtl}.get((width, flow[0]), pytest.mark.regress),
        id=f"W{width}-{flow[0]}",
    )
    for width in WIDTHS
    for flow in ((1.0, 1.0, 5), (0.6, 0.7, 6))
]


@pytest.mark.parametrize("width, p_valid, p_ready, seed", PREDICATE_RUNS)
def test_value_predicates(width, p_valid, p_ready, seed):
    """RTL = model every cycle at W = 2, 4, 8 with attribute and text() predicates (every
    document shifted by 0..W-1 bytes, so that values and text nodes end in every lane); every
    decided document answered as the reference says, the undecided ones flagged."""
    from .test_attr_predicates import TIGHT_DOCUMENTS, frontend_documents
    from .test_wide_model import PREDICATE_DOCS, PREDICATE_TEXTS

    queries = [parse_query(t, i + 1) for i, t in enumerate(PREDICATE_TEXTS)]
    plan = compile_queries(queries, CompileOptions(cluster_size=3, max_depth=5))
    docs = [
        b" " * shift + doc
        for shift in range(width)
        for doc in ATTR_DOCS + PREDICATE_DOCS + TIGHT_DOCUMENTS
    ]
    docs += frontend_documents(seed, 6)
    readouts = check(
        plan,
        queries,
        docs,
        seed=seed,
        p_valid=p_valid,
        p_ready=p_ready,
        extra_cycles=len(queries) * 3 + 80,
        bytes_per_cycle=width,
    )
    flags = [r.errors for r in readouts]
    assert any(f & Errors.VALUE_UNDECIDED for f in flags)
    assert any(f & Errors.DEPTH_OVERFLOW for f in flags)
    text_bits = sum(1 << i for i, n in enumerate(plan.query_numbers) if n > 7)
    assert any(r.bits & text_bits for r in readouts if not r.errors)  # text() queries matched
    for doc, readout in zip(docs, readouts):
        if not readout.errors:
            assert readout.bits == bits_of(plan, queries, doc), doc


#: References in content and attribute values (issue 35 #7): (bytes, decided)
REFERENCES = [
    (b"&amp;", True),
    (b"&quot;", True),
    (b"&apos;", True),
    (b"&#60;", True),
    (b"&m;", False),
    (b"&quo;", False),
    (b"&ampx;", False),
    (b"&lt&gt;", False),
]


@pytest.mark.parametrize("width", widths(2, 4))
@pytest.mark.parametrize("p_valid, p_ready, seed", [(1.0, 1.0, 0), (0.7, 0.6, 3)])
def test_references_in_every_lane(width, p_valid, p_ready, seed):
    """``entity`` at W bytes per cycle exactly as one byte at a time (RTL = model every
    cycle): every reference shifted by 0..W-1 bytes so that it begins, and is decided, in
    every lane and across beats; a document that ends inside a reference leaves nothing to
    the next one."""
    queries = [parse_query("//b", 1), parse_query("/a/c", 2)]
    plan = compile_queries(queries)
    dtd = b'<!DOCTYPE a [<!ENTITY m "<c/>">]>'
    docs, want = [], []
    for shift in range(width):
        for ref, decided in REFERENCES:
            docs.append(dtd + b"<a>" + b"x" * shift + ref + b"<b/></a>")
            want.append(Errors(0) if decided else Errors.ENTITY)
            docs.append(b"<a v='" + b"y" * shift + ref + b"'/>")
            want.append(Errors(0) if decided else Errors.ENTITY)
        docs += [b"<a>" + b"x" * shift + b"&am", b"<a/>"]
        want += [Errors.MALFORMED, Errors(0)]
    readouts = check(
        plan,
        queries,
        docs,
        seed=seed,
        p_valid=p_valid,
        p_ready=p_ready,
        extra_cycles=40,
        bytes_per_cycle=width,
    )
    assert [r.errors for r in readouts] == want
    for doc, readout in zip(docs, readouts):
        if not readout.errors:
            assert readout.bits == bits_of(plan, queries, doc), doc


@pytest.mark.parametrize("width", widths(2))
def test_an_attribute_list_declaration_makes_values_undecided(width):
    """With attribute predicates, ``<!ATTLIST`` in the internal subset (its defaults add
    attributes: the reference's ``//a[@b]`` matches ``<a/>``) flags ``value_undecided`` at W
    bytes per cycle as one byte at a time, in every lane; elsewhere (a comment, a literal)
    it does not."""
    queries = [parse_query("//a[@b]", 1), parse_query("//a", 2)]
    plan = compile_queries(queries)
    docs, want = [], []
    for shift in range(width):
        pad = b" " * shift
        docs += [
            b"<!DOCTYPE a [" + pad + b'<!ATTLIST a b CDATA "x">]><a/>',
            b"<!DOCTYPE a [" + pad + b"<!-- <!ATTLIST --><!ENTITY e '<!ATTLIST'>]><a b='1'/>",
        ]
        want += [Errors.VALUE_UNDECIDED, Errors(0)]
    readouts = check(plan, queries, docs, extra_cycles=40, bytes_per_cycle=width)
    assert [r.errors for r in readouts] == want
    assert [r.bits for r in readouts if not r.errors] == [
        bits_of(plan, queries, d) for d in docs[1::2]
    ]
