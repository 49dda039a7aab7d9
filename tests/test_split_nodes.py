# amaranth: UnusedElaboratable=no
"""Issue 14 in the programmable engine: twigs that cannot be rewritten into combinations of
paths (``//a[b]/c``, ``/a/b[c]/d``) on hardware with a twig width (split nodes,
:mod:`xpfilt.compiler.split_nodes`). Twig width 0 is the hardware before split nodes (same fingerprint,
same stream); the model = the reference on the twig cases and on hypothesis twigs; the RTL =
the model every cycle, decoded readouts = the reference."""

from __future__ import annotations

import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

from xpfilt.compiler.custom import TWIGS_REFUSED
from xpfilt.compiler.programmable import HardwareSpec, configure, read_stream
from xpfilt.compiler.split_nodes import or_distributed, twig_anchor, twig_nodes
from xpfilt.hwspec.conditions import AnyOf, Bit
from xpfilt.lang.xpath import parse_query
from xpfilt.model.programmable import ProgrammableModelEngine
from xpfilt.software.events import Document
from xpfilt.software.reference import ReferenceFilter
from xpfilt.verify.regress import RegressionConfig, run_regression

from .conftest import examples
from .strategies import documents
from .test_attr_predicates import count_agreeing
from .test_programmable_combinations import check_rtl
from .test_programmable_predicates import check_cli, queries_of
from .test_twigs import DOCS, TWIGS, twigs

SPEC = HardwareSpec(
    clusters=3, columns=16, max_tag_len=4, max_depth=6, max_name=8, tags=4, slots=8, twig_width=4
)


def test_twig_width_zero_is_the_hardware_before_split_nodes():
    """Fingerprints (hence the RTL's header check) and hardware.json as without split nodes
    (values of stream format 10; format 7's: 0x2921aedb, 0xc8ee4b3b)."""
    assert HardwareSpec().fingerprint == 0xDB1EF532
    assert (
        HardwareSpec(
            clusters=2, columns=12, max_tag_len=4, max_depth=5, max_name=8, tags=4, slots=12
        ).fingerprint
        == 0xFB9771E6
    )
    assert "twig_width" not in HardwareSpec(slots=8).to_json()
    wide = HardwareSpec(twig_width=4)
    assert HardwareSpec.from_json(wide.to_json()) == wide
    assert wide.column_flag_bits == HardwareSpec(slots=0).column_flag_bits + 2 + 4 + 4
    assert HardwareSpec(slots=3, twig_width=2).column_flag_bits == 2 + 2 + 2 + 2 + 2
    stream = configure(queries_of("//a[b]/c"), wide).stream()
    assert stream[2] == 11  # stream format 11
    with pytest.raises(ValueError, match="must be configuration stream format 10, not 11"):
        read_stream(HardwareSpec(), stream)
    with pytest.raises(ValueError, match="twig width must be 0 to 16, not 17"):
        HardwareSpec(twig_width=17)


def test_a_twig_takes_its_steps_then_a_column_per_step_below_its_anchor():
    def layout(text):
        q = parse_query(text, 1)
        return [(str(n.step), n.children) for n in twig_nodes(q)], twig_anchor(q)

    assert layout("/a/b[c]/d") == ([("/a", ()), ("/b", (1, 2)), ("/d", ()), ("/c", ())], 1)
    assert layout("//a[b]/c") == ([("//a", (1, 2)), ("/c", ()), ("/b", ())], 0)
    # subtrees one after the other, the smallest first; predicates without nested paths stay
    assert layout("/r/a[@x=1][c/e and .//f]/d[text()=2]") == (
        [
            ("/r", ()),
            ("/a[@x=1]", (1, 2, 3)),
            ("/d[text()=2]", ()),
            ("//f", ()),
            ("/c", (1,)),
            ("/e", ()),
        ],
        1,
    )
    # a nested path under 'not': a negated child
    assert layout("//a[c][not(.//b)]/d") == (
        [("//a", (1, 2, 3)), ("/d", ()), ("/c", ()), ("//b", ())],
        0,
    )
    assert [n.negated for n in twig_nodes(parse_query("//a[c][not(.//b)]/d"))] == [(3,), (), (), ()]
    # a text() comparison before the first nested path is the anchor
    assert layout("/a[text()=1]/b[c]") == ([("/a[text()=1]", (1,)), ("/b", (1,)), ("/c", ())], 0)
    columns = configure(queries_of("/a/b[c]/d"), SPEC).columns[0]
    assert [(c.tag, c.closes, c.anchor, c.children) for c in columns[:4]] == [
        (b"a", False, False, 0),
        (b"b", True, True, 0b11),
        (b"d", True, False, 0),
        (b"c", True, False, 0),
    ]


def test_configure_reports_the_twigs_split_nodes_do_not_take():
    texts = [
        "/a/b[c or d]/e",
        "/a/b[not(c)]/d",
        "/a/b[c/d/e/f and g/h/i/j]/k",
        "//a[b][2]/c",
        "/a/b[c]/d",
        "//a[(@a=1 or @b=2) and (@c=1 or @d=2) and (@e=1 or b) and "
        "(@g=1 or c) and (@i=1 or @j=1)]/x",
    ]
    config = configure(
        queries_of(*texts), HardwareSpec(columns=16, max_tag_len=4, twig_width=4, slots=8)
    )
    assert [why for _, why in config.rejected] == [
        "query 3 (/a/b[c/d/e/f and g/h/i/j]/k): a split node's children spread over 6 "
        "columns, more than the hardware's twig width 4",
        "query 4 (//a[b][position()=2]/c): position() predicates are not supported by the hardware "
        "engines",
        f"query 6 ({parse_query(texts[5])}): its 'or's spread a path into more than 16 paths "
        f"(the programmable engine takes an 'or' of comparisons per step, and nested paths "
        f"under 'and')",
    ]
    assert sorted(config.readout_bit) == [2, 5]
    assert config.combined[1] == AnyOf((Bit(9), Bit(13)))  # /a/b[c]/e or /a/b[d]/e
    # without a twig width: refused as before
    assert configure(queries_of("/a/b[c]/d"), HardwareSpec()).rejected == (
        (1, f"query 1 (/a/b[c]/d): {TWIGS_REFUSED}"),
    )


#: Steps that do not fit as written: nested paths under 'or' (and under 'not' over an 'or'),
#: 'and' mixed with 'or', an 'or' of attribute and text() comparisons.
SPREAD = {
    "/a/b[c or d]/e": "/a/b[c]/e or /a/b[d]/e",
    "/a[b[c or d]]/e": "/a[b[c]]/e or /a[b[d]]/e",
    "//a[not(b[c or @x=1])]": "//a[not(b[c])][not(b[@x=1])]",
    "/a/b[@x=1 and (@y=2 or text()=3)]/c": "/a/b[@x=1 and @y=2]/c or /a/b[@x=1 and text()=3]/c",
    "//b[text()=5 or c]": "//b[text()=5] or //b[c]",
    "/a[b or c] and //x[y or z]": "(/a[b] or /a[c]) and (//x[y] or //x[z])",
    "/a/b[@x=1 or @y=2]": "/a/b[@x=1 or @y=2]",  # one chain: kept
    "/a/b[c][d]": "/a/b[c][d]",
}


def test_or_distributed_moves_the_ors_a_step_cannot_take_out_to_the_profile():
    for text, want in SPREAD.items():
        assert str(or_distributed(parse_query(text, 1))) == want
    assert or_distributed(parse_query("//a[b or c][1]", 1)) == parse_query("//a[b or c][1]", 1)


@given(st.lists(twigs(), min_size=1, max_size=5), st.lists(documents(), min_size=1, max_size=3))
@examples(ci=300)
def test_or_distributed_answers_as_written(texts, docs):
    """The reference answers a profile and its spread form alike (hypothesis twigs: nested
    paths and conditions under and/or/not to any depth)."""
    queries = queries_of(*texts)
    spread = [s for s in (or_distributed(q) for q in queries) if s is not None]
    assume(spread)
    kept = [q for q in queries if or_distributed(q) is not None]
    for doc in docs:
        assert ReferenceFilter(kept).filter(doc) == ReferenceFilter(spread).filter(doc), (
            [str(q) for q in kept],
            doc,
        )


def test_model_answers_every_twig_case_as_the_reference():
    spec = HardwareSpec(
        clusters=6,
        columns=16,
        max_tag_len=4,
        max_depth=6,
        max_name=8,
        tags=4,
        slots=8,
        twig_width=4,
    )
    config = configure(queries_of(*TWIGS), spec)
    assert not config.rejected
    queries = queries_of(*(t for i, t in enumerate(TWIGS) if i + 1 in config.answers))
    assert count_agreeing(ProgrammableModelEngine(queries, spec), queries, DOCS) == len(DOCS)


@given(
    st.lists(twigs(), min_size=1, max_size=5),
    st.lists(documents(), min_size=1, max_size=3),
    st.sampled_from([1, 3, 8]),
)
@examples(ci=300)
def test_model_equals_reference_on_generated_twigs(texts, docs, width):
    """Hypothesis twigs (nested paths to any depth, attribute and text() conditions): those
    the hardware takes answer as the reference."""
    spec = HardwareSpec(
        clusters=4,
        columns=24,
        max_tag_len=4,
        max_depth=8,
        max_name=8,
        tags=4,
        slots=24,
        twig_width=width,
    )
    queries = queries_of(*texts)
    config = configure(queries, spec)
    taken = [q for q in queries if q.number in config.answers]
    assume(taken)
    count_agreeing(ProgrammableModelEngine(taken, spec), taken, docs)


#: Twigs only split nodes take (the nested path on an inner or a '//' first step).
SPLIT = [
    "//a[b]/c",
    "//a[b]//c",
    "/a[.//b]/c",
    "/a/b[c]/d",
    "//b[c and .//d]",
    "/*/b[c][d]",
    "//a[b/c][text()=5]",
    "/a//b[@x=1][c]",
]
SPLIT_DOCS = [
    *DOCS,
    b"<a><b><c/><d/></b></a>",
    b"<a><b x='1'><c/></b><b><d/></b></a>",
    b"<a><a><b><c/></b>5</a></a>",
    b"<r><a><b><d/><c/></b></a></r>",
    b"<a><b/><c/><b><c/></b></a>",
]


def test_model_answers_combinations_of_split_node_twigs_as_the_reference():
    spec = HardwareSpec(
        clusters=2,
        columns=16,
        max_tag_len=4,
        max_depth=6,
        max_name=8,
        tags=6,
        slots=4,
        twig_width=3,
    )
    queries = queries_of("/a/c and //a[b]/c", "not(/a/b[c]/d) or //b[d]", "/a[b]/c and //a[b]//c")
    engine = ProgrammableModelEngine(queries, spec)
    assert len(engine.configuration.combined) == 3
    assert count_agreeing(engine, queries, SPLIT_DOCS) == len(SPLIT_DOCS)


@pytest.mark.parametrize(
    "slots, width, seed", [(4, 4, 1), (0, 2, 2), pytest.param(4, 16, 3, marks=pytest.mark.rtl)]
)
def test_rtl_equals_model_on_split_node_twigs(slots, width, seed):
    spec = HardwareSpec(
        clusters=2,
        columns=18,
        max_tag_len=4,
        max_depth=5,
        max_name=8,
        tags=5,
        slots=slots,
        twig_width=width,
    )
    texts = [t for t in SPLIT if slots or "[@" not in t and "text()" not in t]
    assert check_rtl(spec, texts, SPLIT_DOCS, seed=seed) >= len(SPLIT_DOCS) - 1


#: Twigs with their 'or's moved out (or_distributed), steps whose and/or mix one chain does
#: not take, nested paths under 'not' (negated children).
SPREAD_RTL = [
    "//a[b or c]/c",
    "/a/b[c or @x=1]",
    "//b[text()=5 or c]",
    "//a[b or text()]//c[d]",
    "/*[@x=1 and (@y=2 or c)]",
    "//a[not(b or .//d)]/c",
    "//b[not(c)]",
    "/a//b[not(.//d)][c]",
    "//*[a and not(*/b)]",
]


def test_rtl_equals_model_on_twigs_with_or_and_not():
    spec = HardwareSpec(
        clusters=2,
        columns=24,
        max_tag_len=4,
        max_depth=4,
        max_name=8,
        tags=5,
        slots=8,
        twig_width=4,
    )  # a power of two: a folded stack
    docs = [
        *SPLIT_DOCS,
        b"<a x='1'><b y='2'/><c/></a>",
        b"<a><b>5</b><b><c/></b></a>",
        b"<a><b><c><d/></c></b><b><c><d>5</d></c><c/></b></a>",
        b"<a><b><c><d><e/></d></c></b></a>",
        b"<b><c/><d><a><b/></a></d></b>",
    ]
    assert check_rtl(spec, SPREAD_RTL, docs, seed=7) >= len(docs) - 1


def test_rtl_equals_model_with_split_nodes_at_the_smallest_parameters():
    """Every split twig has a column with two children: twig width 2, 4 columns."""
    spec = HardwareSpec(
        clusters=1, columns=4, max_tag_len=1, max_depth=2, max_name=1, tags=3, twig_width=2
    )
    docs = [
        b"<a><b/><c/></a>",
        b"<a/>",
        b"<a><c/></a>",
        b"<a><c/><b/></a>",
        b"<b><c/></b>",
        b"<a><a/></a>",
    ]
    assert check_rtl(spec, ["//a[b]/c"], docs, seed=4, p_valid=1.0, p_ready=1.0) == len(docs)


def test_cli_compiles_a_twig_width_and_filters_split_node_twigs(tmp_path):
    """`xpfilt compile --mode programmable --twig-width N`, `configure` refuses the twigs split
    nodes do not take with the reason, and the model engine answers the others as the
    reference does."""
    out = check_cli(
        tmp_path,
        ["--columns", 16, "--max-tag-len", 4, "--tags", 5, "--twig-width", 3],
        "//a[b]/c\n//a[b][1]/c\n/a/b[c or d]/e\n//b[not(c)]/e\n",
        [
            "xpfilt: 1 queries are not configured:",
            "  query 2 (//a[b][position()=1]/c): position() predicates are not "
            "supported by the hardware engines",
        ],
        [
            b"<a><b><c/><d/></b></a>",
            b"<a><a><c/></a><b/></a>",
            b"<x><a><b/><c/></a></x>",
            b"<a><b><d/><e/></b></a>",
        ],
        "//a[b]/c\n/a/b[c or d]/e\n//b[not(c)]/e\n",
    )
    assert HardwareSpec.load(tmp_path / "hw").twig_width == 3
    assert "\t1" in out and "\t2" in out


def test_reconfigure_keeps_split_node_twigs_in_place_and_never_reads_them_as_paths():
    """``configure --previous`` keeps a twig on its columns; a path that reads like its columns
    (``/a/b/d/c`` beside ``/a/b[c]/d``) gets columns of its own."""
    from xpfilt.compiler.programmable import reconfigure

    spec = HardwareSpec(
        clusters=2,
        columns=12,
        max_tag_len=4,
        max_depth=6,
        max_name=8,
        tags=6,
        slots=2,
        twig_width=3,
    )
    old = configure(queries_of("//a[b]/c", "/a/b", "/a/b[c]/d", "/a/b[text()=1]/c"), spec)
    new = queries_of("//a[b]/c", "/a/b[c]/d", "/a/b/d/c", "/a/b[text()=1]/c")
    update = reconfigure(new, old.stream(), spec)
    assert update.readout_bit == {
        1: old.readout_bit[1],
        2: old.readout_bit[3],
        3: 15,
        4: old.readout_bit[4],
    }
    assert not reconfigure(new, update.stream(), spec).changed
    path = queries_of("/a/b/d/c")
    alone = reconfigure(path, old.stream(), spec)
    assert alone.readout_bit != {1: old.readout_bit[3] + 2}  # not on the twig's columns
    from xpfilt.model.custom import filter_with_model, readout_positions
    from xpfilt.model.programmable import ProgrammableModel, load_configuration

    for queries, stream, answers in (
        (new, update.stream(), update.answers),
        (path, alone.stream(), alone.answers),
    ):
        model = ProgrammableModel(spec)
        load_configuration(model, stream)
        bits = readout_positions(((w, n) for n, w in answers.items()), queries)
        reference = ReferenceFilter(queries)
        for doc in [
            b"<a><b><d/><c/></b></a>",
            b"<a><b><d><c/></d></b></a>",
            b"<a><b>1<c/></b></a>",
        ]:
            assert filter_with_model(model, doc, bits) == reference.filter(doc), doc


@pytest.mark.regress
@examples(ci=3, derandomize=True)
@given(
    texts=st.lists(twigs(), min_size=30, max_size=40),
    docs=st.lists(documents(), min_size=8, max_size=12),
    seed=st.integers(0, 1000),
)
def test_regress_split_node_twigs_on_verilator(texts, docs, seed, build_dir):
    """Hypothesis twigs (those split nodes take, the rewritten ones beside them) and
    documents on 2 x 64 columns with twig width 4 and 16 slots in Verilator (built once):
    every cycle = the model, every answer = the reference."""
    spec = HardwareSpec(
        clusters=2,
        columns=64,
        max_tag_len=4,
        max_depth=8,
        max_name=8,
        tags=4,
        slots=16,
        twig_width=4,
    )
    streamed = [Document(f"doc{i}.xml", d) for i, d in enumerate([*SPLIT_DOCS, *docs])]
    summary = run_regression(
        RegressionConfig(
            queries=[*SPLIT, *texts],
            documents=streamed,
            mode="programmable",
            hardware=spec,
            seed=seed,
            p_valid=0.85,
            p_ready=0.6,
            build_dir=build_dir,
        ),
        write_replay=False,
    )
    assert summary.ok, summary.format()
