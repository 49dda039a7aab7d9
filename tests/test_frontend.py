# amaranth: UnusedElaboratable=no
"""The XML front end: the RTL (Amaranth simulator) against the cycle-accurate model, cycle by
cycle on every output, and the model against expat on real documents."""

from __future__ import annotations

import itertools
import random

import pytest
from amaranth.back import verilog
from amaranth.hdl import Const, Fragment, Signal
from amaranth.lib import data
from amaranth.sim import Simulator
from hypothesis import given

from xpfilt.hdl.frontend import (
    LATENCY,
    ByteTests,
    ErrorFlags,
    Errors,
    FrontEnd,
    first_branch_states,
    name_hash,
    parser_table,
    tag_width_for,
)
from xpfilt.hwspec.contract import AttrCondition, State
from xpfilt.model.frontend import NO_EVENT, FrontEndEvent, FrontEndModel, decode_event
from xpfilt.software.events import EventKind, MalformedDocumentError, parse_events

from .conftest import DATA, examples
from .strategies import documents

NITF = sorted((DATA / "nitf" / "docs").glob("*.xml"))
XMARK = sorted((DATA / "xmark").glob("*.xml"))
OK = Errors(0)
MALFORMED = Errors.MALFORMED


# --- helpers ----------------------------------------------------------------------------------


def element_names(doc: bytes) -> list[str]:
    """The distinct element names of a well-formed document, in order of first appearance."""
    return list(dict.fromkeys(e.name for e in parse_events(doc) if e.kind is EventKind.OPEN))


def expat_events(doc: bytes, tags) -> list[tuple]:
    """expat's open/close sequence as the front end must report it: ("push", level, tag,
    parent) and ("pop", level), tag ids from ``tags`` (0 for other names)."""
    ids = {t: i + 1 for i, t in enumerate(tags)}
    out, stack = [], [0]
    for e in parse_events(doc):
        if e.kind is EventKind.OPEN:
            tag = ids.get(e.name, 0)
            out.append(("push", len(stack), tag, stack[-1]))
            stack.append(tag)
        elif e.kind is EventKind.CLOSE:
            stack.pop()
            out.append(("pop", len(stack)))
    return out


def model_events(doc: bytes, tags, **params) -> tuple[list[tuple], Errors]:
    """The model's push/pop sequence (same form as :func:`expat_events`) and the doc's errors."""
    events = FrontEndModel(tags, **params).events_of(doc)
    assert events[-1].kind == "doc_end" and events[-1].offset == len(doc) - 1
    assert sum(e.kind == "doc_end" for e in events) == 1
    seq = [
        ("push", e.level, e.tag, e.parent) if e.kind == "push" else ("pop", e.level)
        for e in events[:-1]
    ]
    return seq, events[-1].errors


def byte_stream(docs, gap_seed=None, gap_rate=0.3) -> list[tuple[int, int, int]]:
    """(valid, data, last) per cycle for documents back to back, with random idle cycles."""
    rng = random.Random(gap_seed)
    items = []
    for doc in docs:
        for i, b in enumerate(doc):
            while gap_seed is not None and rng.random() < gap_rate:
                items.append((0, rng.randrange(256), rng.randrange(2)))  # junk while not valid
            items.append((1, b, int(i == len(doc) - 1)))
    items += [(0, 0, 0)] * (LATENCY + 1)
    return items


def run_model(model: FrontEndModel, items) -> list[FrontEndEvent]:
    return [model.step(*item) for item in items]


def run_rtl(tags, items, **params) -> list[tuple[FrontEndEvent, int]]:
    """Simulate ``FrontEnd`` on ``items``; per cycle the ``events`` port and ``tos`` after the
    clock edge (the cycle that shows the item's event)."""
    dut = FrontEnd(tags, **params)
    out = []

    async def bench(ctx):
        assert ctx.get(dut.bytes_in.ready) == 1
        for valid, byte, last in items:
            ctx.set(dut.bytes_in.valid, valid)
            ctx.set(dut.bytes_in.payload.as_value(), byte | last << 8)
            await ctx.tick()
            assert ctx.get(dut.bytes_in.ready) == 1
            out.append(
                (decode_event(ctx.get(dut.events.as_value()), dut.event_layout), ctx.get(dut.tos))
            )

    sim = Simulator(dut)
    sim.add_clock(1e-6)
    sim.add_testbench(bench)
    sim.run()
    return out


def assert_rtl_matches_model(tags, items, **params) -> list[FrontEndEvent]:
    """Cycle by cycle: every field of ``events`` and the ``tos`` pointer. Returns the events."""
    rtl = run_rtl(tags, items, **params)
    model = FrontEndModel(tags, **params)
    events = []
    for cycle, (item, (got, tos)) in enumerate(zip(items, rtl)):
        want = model.step(*item)
        assert (got, tos) == (want, model.tos), (
            f"cycle {cycle} after input {item}: RTL {got} tos={tos}, model {want} tos={model.tos}"
        )
        events.append(want)
    return events


def split_documents(events) -> list[tuple[list[tuple], Errors]]:
    """Per document (split at doc_end): the push/pop sequence and the errors."""
    docs, seq = [], []
    for e in events:
        if e.push:
            seq.append(("push", e.level, e.tag, e.parent))
        if e.pop:
            seq.append(("pop", e.level))
        if e.doc_end:
            docs.append((seq, Errors(e.errors)))
            seq = []
    assert not seq
    return docs


# --- documents --------------------------------------------------------------------------------

TRICKY_TAGS = ["r", "a", "b", "x", "ns:x-y.z_1", "\u00e9t\u00e9", "nitf"]

TRICKY = [
    # XML declaration, DOCTYPE with an internal subset: entities with quoted ">" and "]",
    # a parameter entity, a comment and a PI inside the subset; attribute values with ">" and "/"
    # (no reference to a declared entity: that sets ``entity``, see ENTITY_DOCS).
    b'<?xml version="1.0" encoding="UTF-8"?>\n'
    b"<!DOCTYPE r [\n  <!ENTITY e \"a>b']c\">\n  <!ENTITY f 'x\"y>'>\n"
    b'  <!ENTITY % p "<!ELEMENT q ANY>">\n  <!-- a comment ] > in the subset -->\n'
    b'  <?pi in the subset > ?>\n  <!ELEMENT r ANY>\n  <!ATTLIST r x CDATA "d>/">\n]>\n'
    b'<r x=\'1>2\' y="a/b" z = "q" \n w\n=\n"/>">text &amp; &#60;&#x3C; > more'
    b'<a/><a /><a  k="/>" j=\'"\'/><b><b><b>deep</b></b></b></r >\n'
    b"<!-- trailing - comment -->\n<?pi tail??>\r\n",
    # CDATA sections, including "]]]>" and "]]]]>", ">" and "<" and "]]" inside.
    b"<r><![CDATA[ <not> a </tag> ]] ] ]> ]]]><x>y</x><![CDATA[]]><![CDATA[]]]]><a/></r>",
    # nested same names, self-closing roots of subtrees, end tags with whitespace
    b"<a><a><a/><a></a ><a\t></a\n\r\t ></a></a>",
    # names: namespaces, punctuation, digits, UTF-8; prefixes and extensions of a known name
    "<ns:x-y.z_1 a-b.c=\"1\" _:d='2'><\u00e9t\u00e9>\u00e9</\u00e9t\u00e9><nit/><nitfx/>"
    "<nitf/><unknown><x/></unknown></ns:x-y.z_1>".encode(),
    # comments and PIs everywhere, with "-" and "?" inside
    b"<!----><!-- - --><?p ??><r><!-- a - b - --><?q a?b??>t<!-- -->t</r><!-- x - -->",
    # DOCTYPE with an external id (quoted ">") and no subset; a single self-closing root
    b"<!DOCTYPE r PUBLIC \"-//x//EN\" 'y>.dtd'><r/>",
    # DOCTYPE with an empty subset and whitespace after "]"
    b'<!DOCTYPE r SYSTEM "r.dtd" [ ] >\n<r>\n  <b a="&lt;">&gt;</b>\n</r>\n',
]

GOOD = b"<r><a>t</a><b/></r>"
GOOD_EVENTS = [
    ("push", 1, 1, 0),
    ("push", 2, 2, 1),
    ("pop", 2),
    ("push", 2, 3, 1),
    ("pop", 2),
    ("pop", 1),
]


def hash_collision() -> tuple[str, str]:
    """Two distinct two-letter names with the same name hash."""
    seen = {}
    for a, b in itertools.product("abcdefghijklmnopqrstuvwxyz", repeat=2):
        h = name_hash((a + b).encode())
        if h in seen:
            return seen[h], a + b
        seen[h] = a + b
    raise AssertionError("no collision")


SMALL_TAGS = ["r", "a", "b", "x"]
SMALL = dict(max_depth=3, max_name=8)

# (document, the errors of the front end with SMALL_TAGS and SMALL parameters)
MALFORMED_DOCS = [
    (b"<r><1x/></r>", MALFORMED),  # name starts with a digit
    (b"<r>< a/></r>", MALFORMED),  # bad character after "<"
    (b"<r></ a></r>", MALFORMED),  # bad character after "</"
    (b"<r><a;b/></r>", MALFORMED),  # bad character in a name
    (b'<r x="1"y="2"/>', MALFORMED),  # junk in a tag: no space between attrs
    (b"<r x=1/>", MALFORMED),  # unquoted attribute value
    (b"<r x></r>", MALFORMED),  # attribute without a value
    (b'<r x="<"/>', MALFORMED),  # "<" in an attribute value
    (b"<r><a/ ></r>", MALFORMED),  # junk after "/" in a tag
    (b"<r></r x>", MALFORMED),  # junk in an end tag
    (b"<r>text</r", MALFORMED),  # EOF inside a tag
    (b'<r a="1>', MALFORMED),  # EOF inside an attribute value
    (b"<r><a></b></r>", MALFORMED),  # end tag mismatch (known names)
    (b"<r><xx></xy></r>", MALFORMED),  # end tag mismatch (unknown names)
    (b"<r><ab></abc></r>", MALFORMED),  # end tag mismatch (prefix)
    (b"<r></r></r>", MALFORMED),  # depth underflow
    (b"</r>", MALFORMED),  # underflow, no root
    (b"<r><a>", MALFORMED),  # elements left open
    (b" \n\t", MALFORMED),  # no root element
    (b"<!-- only a comment -->", MALFORMED),  # no root element
    (b"x<r/>", MALFORMED),  # text before the root
    (b"<r/>&amp;", MALFORMED),  # text after the root
    (b"<r/><a/>", MALFORMED),  # a second root element
    (b"<r><!-- a -- b --></r>", MALFORMED),  # "--" inside a comment
    (b"<r/><!-- x", MALFORMED),  # EOF inside a comment
    (b"<![CDATA[x]]><r/>", MALFORMED),  # CDATA outside the root
    (b"<r><![CDATA[x]]></r", MALFORMED),  # EOF inside a tag after CDATA
    (b"<r><![CDATA[x]></r>", MALFORMED),  # EOF inside CDATA
    (b"<r><![CDAT[x]]></r>", MALFORMED),  # bad CDATA keyword
    (b"<r/><!DOCTYPE r>", MALFORMED),  # DOCTYPE after the root
    (b"<!DOCTYPX r><r/>", MALFORMED),  # bad DOCTYPE keyword
    (b"<!DOCTYPE r [ <x> ]><r/>", MALFORMED),  # junk in the internal subset
    (b"<!DOCTYPE r [ ] x><r/>", MALFORMED),  # junk after the internal subset
    (b"<r><!x></r>", MALFORMED),  # bad character after "<!"
    (b"<r><!-x--></r>", MALFORMED),  # "<!-" not followed by "-"
    (b"<r><?pi</r>", MALFORMED),  # EOF inside a PI
    (b"<r><a><b><x><a/></x></b></a></r>", Errors.DEPTH_OVERFLOW),
    (b"<r><a><b><x><a><b></b></a></x></b></a></r>", Errors.DEPTH_OVERFLOW),
    (b"<r><abcdefghi/></r>", Errors.NAME_TOO_LONG),
    (b"<r><abcdefghijklmnop></abcdefghijklmnop></r>", Errors.NAME_TOO_LONG),
    (b"<r><abcdefghi></abcdefghj></r>", Errors.NAME_TOO_LONG | MALFORMED),
    (b"<r><a><b><x><abcdefghi>", Errors.NAME_TOO_LONG | Errors.DEPTH_OVERFLOW | MALFORMED),
]

ENTITY = Errors.ENTITY
# (document, its errors with SMALL_TAGS and SMALL): references the front end cannot decide
# (issue 35 #7: an entity's text may hold markup; every reference but the five predefined
# entities' and character references sets ``entity``), and those it can
ENTITY_DOCS = [
    (b'<!DOCTYPE r [<!ENTITY m "<b/>">]><r>&m;</r>', ENTITY),  # markup in an entity
    (b"<!DOCTYPE r [<!ENTITY m '<a>x</a>'>]><r><b>&m;</b></r>", ENTITY),
    (b'<!DOCTYPE r [<!ENTITY e "x">]><r a="&e;"/>', ENTITY),  # in an attribute value
    (b"<r b='x&e;'><a/></r>", ENTITY),
    (b"<r>&amp;&lt;&gt;&apos;&quot;&#60;&#x3c;</r>", OK),  # predefined and character refs
    (b"<r a='&amp;&quot;&#38;' b=\"&apos;&lt;&gt;\">&gt;</r>", OK),
    (b"<r><![CDATA[&m;]]><!-- &m; --><?pi &m;?></r>", OK),  # not references
    (b"<!DOCTYPE r [<!ENTITY m '&n;'><!ENTITY n 'x'>]><r/>", OK),  # in the subset only
    (b"<r>&ampx;</r>", ENTITY),  # names that begin as a predefined one
    (b"<r>&am;</r>", ENTITY),
    (b"<r>&quo;</r>", ENTITY),
    (b"<r>&apo</r>", ENTITY),
    (b"<r>&quot</r>", ENTITY),  # no ";": not well-formed, undecided all the same
    (b"<r>& </r>", ENTITY),
    (b"<r>&;</r>", ENTITY),
    (b"<r>&&amp;</r>", ENTITY),
    (b"<r>&lt;&x;</r>", ENTITY),
    (b"<r>&l", MALFORMED),  # the document ends inside the reference
    (b"<r/>&m;", MALFORMED | ENTITY),  # text after the root
    (b"<r>&", MALFORMED),  # an "&" on the last byte starts nothing
]


# --- the model against expat ------------------------------------------------------------------


@pytest.mark.parametrize("doc", TRICKY, ids=range(len(TRICKY)))
def test_model_tricky_documents_match_expat(doc):
    seq, errors = model_events(doc, TRICKY_TAGS)
    assert errors == OK
    assert seq == expat_events(doc, TRICKY_TAGS)
    assert seq  # the document has elements


def test_model_nitf_and_xmark_match_expat():
    assert len(NITF) == 100 and len(XMARK) == 2
    for path in NITF + XMARK:
        doc = path.read_bytes()
        tags = element_names(doc)
        seq, errors = model_events(doc, tags, max_depth=16, max_name=32)
        assert errors == OK, path.name
        assert seq == expat_events(doc, tags), path.name


def test_model_partial_dictionary_decodes_unknown_names_to_zero():
    doc = NITF[0].read_bytes()
    tags = element_names(doc)[::2]
    seq, errors = model_events(doc, tags)
    assert errors == OK
    assert seq == expat_events(doc, tags)
    assert any(e[0] == "push" and e[2] == 0 for e in seq)
    assert any(e[0] == "push" and e[3] == 0 and e[1] > 1 for e in seq)


@examples(ci=150)
@given(documents())
def test_model_random_documents_match_expat(doc):
    tags = ["a", "b", "c", "d.e"]
    seq, errors = model_events(doc, tags, max_depth=10)
    assert errors == OK
    assert seq == expat_events(doc, tags)


@pytest.mark.parametrize("doc,errors", MALFORMED_DOCS, ids=range(len(MALFORMED_DOCS)))
def test_model_error_flags(doc, errors):
    seq, got = model_events(doc, SMALL_TAGS, **SMALL)
    assert got == errors
    if MALFORMED in errors:
        with pytest.raises(Exception):
            parse_events(doc)
    else:
        # well-formed: pushes and pops still line up, levels beyond max_depth are left out
        depth = 0
        for e in seq:
            if e[0] == "push":
                assert e[1] == depth + 1 <= SMALL["max_depth"]
                depth += 1
            else:
                assert e[1] == depth
                depth -= 1
        assert depth == 0


@pytest.mark.parametrize("doc,errors", ENTITY_DOCS, ids=range(len(ENTITY_DOCS)))
def test_model_flags_references_it_cannot_decide(doc, errors):
    assert model_events(doc, SMALL_TAGS, **SMALL)[1] == errors
    if errors == OK:
        parse_events(doc)  # well-formed


def test_model_entity_is_per_document():
    """A reference left open by a document's end does not reach into the next one, nor does
    a flag: the next document starts with "<"."""
    model = FrontEndModel(SMALL_TAGS, **SMALL)
    docs = [doc for doc, _ in ENTITY_DOCS for doc in (doc, GOOD)]
    got = split_documents(run_model(model, byte_stream(docs)))
    assert [errors for _, errors in got] == [e for _, e in ENTITY_DOCS for e in (e, OK)]


def corruptions(doc: bytes, rng: random.Random):
    """Structural corruptions of a well-formed document (some may stay well-formed)."""
    root_end = doc.rindex(b">")
    yield doc[: rng.randrange(doc.index(b"<"), root_end)]  # truncated
    gts = [i for i, b in enumerate(doc) if b == ord(">")]
    i = rng.choice(gts)
    yield doc[:i] + doc[i + 1 :]  # a ">" deleted
    ends = [i + 2 for i in range(len(doc)) if doc[i : i + 2] == b"</"]
    i = rng.choice(ends) + 1 if rng.random() < 0.5 else rng.choice(ends)
    yield doc[:i] + (b"Q" if doc[i] != ord("Q") else b"R") + doc[i + 1 :]  # an end tag renamed
    lts = [i for i, b in enumerate(doc) if b == ord("<") and doc[i + 1] not in b"!?"]
    i = rng.choice(lts)
    yield doc[: i + 1] + rng.choice([b" ", b"1", b"<", b"=", b'"']) + doc[i + 1 :]  # junk after <
    yield doc + doc[doc.index(b"<", doc.index(b"-->") if b"-->" in doc else 0) :]  # second root


def test_model_corrupted_nitf_documents_are_malformed():
    rng = random.Random(11)
    checked = 0
    for path in NITF[:40]:
        doc = path.read_bytes()
        tags = element_names(doc)
        for bad in corruptions(doc, rng):
            try:
                parse_events(bad)
            except MalformedDocumentError:
                seq, errors = model_events(bad, tags)
                assert MALFORMED in errors, (path.name, bad)
                checked += 1
    assert checked >= 190


def test_model_depth_overflow_skips_deep_levels():
    doc = b"<r><a><b><x><a><b/></a></x><a/></b></a><b/></r>"
    seq, errors = model_events(doc, SMALL_TAGS, **SMALL)
    assert errors == Errors.DEPTH_OVERFLOW
    assert seq == [
        ("push", 1, 1, 0),
        ("push", 2, 2, 1),
        ("push", 3, 3, 2),
        ("pop", 3),
        ("pop", 2),
        ("push", 2, 3, 1),
        ("pop", 2),
        ("pop", 1),
    ]


def test_model_long_names():
    tags = ["abcdefgh"]
    seq, errors = model_events(b"<abcdefgh><abcdefghi/></abcdefgh>", tags, max_name=8)
    assert errors == Errors.NAME_TOO_LONG
    assert seq == [("push", 1, 1, 0), ("push", 2, 0, 1), ("pop", 2), ("pop", 1)]
    # any length streams through; the hash still tells end tags apart
    long = b"n" * 1000
    assert (
        model_events(b"<" + long + b"></" + long + b">", tags, max_name=8)[1]
        == Errors.NAME_TOO_LONG
    )
    assert (
        model_events(b"<" + long + b"></" + long + b"m>", tags, max_name=8)[1]
        == Errors.NAME_TOO_LONG | MALFORMED
    )


def test_model_recovers_after_errors():
    model = FrontEndModel(SMALL_TAGS, **SMALL)
    docs = []
    for doc, _ in MALFORMED_DOCS:
        docs += [doc, GOOD]
    results = split_documents(run_model(model, byte_stream(docs, gap_seed=1)))
    assert len(results) == len(docs)
    for (doc, errors), bad, good in zip(MALFORMED_DOCS, results[::2], results[1::2]):
        assert bad[1] == errors, doc
        assert good == (GOOD_EVENTS, OK), doc


def test_model_timing():
    model = FrontEndModel(["r", "a"])
    items = (
        [(1, b, 0) for b in b"<r><a/"]
        + [(0, 0, 1)]
        + [(1, b, 0) for b in b"></r"]
        + [(1, ord(">"), 1)]
        + [(0, 0, 0)] * LATENCY
    )
    got = run_model(model, items)
    d = LATENCY - 1  # the event of the byte of step i is returned by step i + d
    assert got[2 + d] == FrontEndEvent(push=1, tag=1, parent=0, level=1)  # on the ">" of <r>
    assert got[5 + d] == FrontEndEvent(push=1, tag=2, parent=1, level=2)  # on the "/" of <a/>
    assert got[7 + d] == FrontEndEvent(pop=1, level=2)  # on its ">"
    assert got[11 + d] == FrontEndEvent(pop=1, level=1, doc_end=1)  # the last byte
    assert [i - d for i, e in enumerate(got) if e != NO_EVENT] == [2, 5, 7, 11]
    assert model.tos == 0


def test_model_timing_with_attributes():
    # a start tag with attributes pushes on the byte that ends the tag (">" or the "/" of "/>"),
    # with the element's name, so that its attribute conditions can travel with the push
    doc = b'<r x="1" y=\'2\'><a  b="3"/></r>'
    model = FrontEndModel(["r", "a"])
    events = model.events_of(doc)
    assert [(e.kind, e.offset, e.tag, e.level) for e in events] == [
        ("push", doc.index(b">"), 1, 1),
        ("push", doc.index(b"/>"), 2, 2),
        ("pop", doc.index(b"/>") + 1, 0, 2),
        ("pop", len(doc) - 1, 0, 1),
        ("doc_end", len(doc) - 1, 0, 0),
    ]
    # a malformed start tag never pushes
    events = model.events_of(b'<r><a x="1" $></a></r>')
    assert [e.kind for e in events if e.kind == "push"] == ["push"]


def test_parameters_are_checked():
    with pytest.raises(ValueError, match=r"^max_depth must be a positive integer, not 0$"):
        FrontEnd(["a"], max_depth=0)
    with pytest.raises(ValueError, match=r"^max_name must be a positive integer, not 0$"):
        FrontEndModel(["a"], max_name=0)
    with pytest.raises(ValueError, match=r"^tags must be distinct, not 'a' twice$"):
        FrontEnd(["a", "b", "a"])
    with pytest.raises(ValueError, match=r"^tag must be an XML element name, not '1a'$"):
        FrontEndModel(["1a"])
    with pytest.raises(
        ValueError, match=r"^tag must be at most max_name=3 bytes long, not 'abcd'$"
    ):
        FrontEnd(["abcd"], max_name=3)


def test_name_byte_is_raised_by_first_branches():
    """The trie's step reads ``name_byte`` as (group register AND byte class): exact only while
    every branch raising it is its state's first, unconditional one."""
    tests = ByteTests(
        ch=lambda text: Const(0, 1),
        eq=lambda b: Const(0, 1),
        ws=Signal(),
        nstart=Signal(),
        nchar=Signal(),
        upper=Signal(),
    )
    table = parser_table(
        tests, level=Signal(4), root_seen=Signal(), in_subset=Signal(), kw=Signal(3)
    )
    groups = {id(test): set(states) for test, states in first_branch_states(table, "name_byte")}
    assert groups == {
        id(tests.nstart): {State.LT, State.END_LT},
        id(tests.nchar): {State.START_NAME, State.END_NAME},
    }
    table[State.TEXT] = [(tests.ws, None, ()), (tests.nchar, None, ("name_byte",))]
    with pytest.raises(
        ValueError,
        match=r"^name_byte must be raised by first branches only, "
        r"not by branch 1 of TEXT$",
    ):
        first_branch_states(table, "name_byte")


# --- the RTL against the model ----------------------------------------------------------------


def test_interface():
    fe = FrontEnd(["a", "b", "c"], max_depth=16)
    Fragment.get(fe, None)
    assert fe.tag_width == 2
    layout = data.Layout.cast(fe.event_layout)
    assert [(name, f.offset, f.width) for name, f in layout] == [
        ("push", 0, 1),
        ("pop", 1, 1),
        ("tag", 2, 2),
        ("parent", 4, 2),
        ("level", 6, 5),
        ("doc_end", 11, 1),
        ("errors", 12, 5),
    ]
    assert [(name, f.offset) for name, f in data.Layout.cast(ErrorFlags)] == [
        ("malformed", 0),
        ("depth_overflow", 1),
        ("name_too_long", 2),
        ("value_undecided", 3),
        ("entity", 4),
    ]
    assert [e.name for e in Errors] == [
        "MALFORMED",
        "DEPTH_OVERFLOW",
        "NAME_TOO_LONG",
        "VALUE_UNDECIDED",
        "ENTITY",
    ]
    members = dict(fe.signature.members)
    assert set(members) == {"bytes_in", "events", "tos", "name_tap"}
    assert members["bytes_in"].flow.name == "In"
    assert members["events"].flow.name == "Out"
    assert [tag_width_for(n) for n in (0, 1, 2, 3, 4, 7, 8, 255, 256)] == [
        1,
        1,
        2,
        2,
        3,
        3,
        4,
        8,
        9,
    ]
    assert FrontEndModel(list("abcdefgh")).tag_width == 4


def test_rtl_tricky_documents():
    docs = TRICKY + [GOOD]
    events = assert_rtl_matches_model(TRICKY_TAGS, byte_stream(docs))
    results = split_documents(events)
    assert results == [(expat_events(doc, TRICKY_TAGS), OK) for doc in docs]


def test_rtl_tricky_documents_with_gaps():
    docs = TRICKY[:4]
    events = assert_rtl_matches_model(TRICKY_TAGS, byte_stream(docs, gap_seed=7, gap_rate=0.4))
    assert split_documents(events) == [(expat_events(doc, TRICKY_TAGS), OK) for doc in docs]


def test_rtl_nitf_documents():
    docs = [p.read_bytes() for p in NITF if p.name in ("outFile98.xml", "outFile90.xml")]
    tags = list(dict.fromkeys(itertools.chain.from_iterable(map(element_names, docs))))
    events = assert_rtl_matches_model(tags, byte_stream(docs, gap_seed=3, gap_rate=0.1))
    assert split_documents(events) == [(expat_events(doc, tags), OK) for doc in docs]


def test_rtl_malformed_documents_and_recovery():
    a, b = hash_collision()
    collision = f"<r><{a}></{b}></r>".encode()
    cases = MALFORMED_DOCS + [(collision, OK)]  # an 8-bit hash collision goes unnoticed
    docs = []
    for doc, _ in cases:
        docs += [doc, GOOD]
    events = assert_rtl_matches_model(
        SMALL_TAGS, byte_stream(docs, gap_seed=5, gap_rate=0.1), **SMALL
    )
    results = split_documents(events)
    assert [r[1] for r in results[::2]] == [errors for _, errors in cases]
    assert results[1::2] == [(GOOD_EVENTS, OK)] * len(cases)


def test_rtl_flags_references_it_cannot_decide():
    """The RTL raises ``entity`` exactly as the model does, cycle by cycle, with idle cycles
    inside the references, and each document after a flagged one starts clean."""
    docs = [doc for doc, _ in ENTITY_DOCS for doc in (doc, GOOD)]
    for gaps in (None, 4):
        events = assert_rtl_matches_model(
            SMALL_TAGS, byte_stream(docs, gap_seed=gaps, gap_rate=0.3), **SMALL
        )
        assert [r[1] for r in split_documents(events)] == [
            e for _, e in ENTITY_DOCS for e in (e, OK)
        ]


#: (document, its errors with an attribute condition): an attribute-list declaration in the
#: internal subset (defaults add attributes, types normalise values) makes the values undecided
ATTLIST_DOCS = [
    (b'<!DOCTYPE r [<!ATTLIST a b CDATA "x">]><r><a/></r>', Errors.VALUE_UNDECIDED),
    (b"<!DOCTYPE r [<!ELEMENT r ANY><!ATTLIST a b NMTOKEN #IMPLIED>]><r/>", Errors.VALUE_UNDECIDED),
    (b'<!DOCTYPE r [<!ELEMENT r ANY><!-- <!ATTLIST --><?p <!A?>]><r><a b="x"/></r>', OK),
    (b"<!DOCTYPE r [<!ENTITY e \"<!ATTLIST a b CDATA 'x'>\">]><r/>", OK),  # in a literal
]


@pytest.mark.parametrize("with_conditions", [True, False])
def test_rtl_an_attribute_list_declaration_makes_values_undecided(with_conditions):
    """Issue 35 #7: with attribute conditions, ``<!ATTLIST`` in the internal subset sets
    ``value_undecided`` (the reference applies its defaults: ``//a[@b]`` matches ``<a/>``),
    in the RTL as in the model; without attribute conditions it changes nothing."""
    conditions = [AttrCondition("b", "exists")] if with_conditions else []
    docs = [doc for doc, _ in ATTLIST_DOCS for doc in (doc, GOOD)]
    events = assert_rtl_matches_model(
        SMALL_TAGS, byte_stream(docs, gap_seed=2), **SMALL, conditions=conditions
    )
    want = [errors if with_conditions else OK for _, errors in ATTLIST_DOCS]
    assert [r[1] for r in split_documents(events)] == [e for e in want for e in (e, OK)]


def test_rtl_excess_levels_saturate_as_the_model(monkeypatch):
    """Levels beyond ``max_depth`` are counted (``excess``) up to the counter's maximum: with
    the counter narrowed to 2 bits in both the RTL and the model, documents open and close
    around 0, 1, max - 1 and max excess levels (and past it), back to back and with gaps."""
    import xpfilt.hdl.frontend
    import xpfilt.model.frontend

    monkeypatch.setattr(xpfilt.hdl.frontend, "EXCESS_WIDTH", 2)
    monkeypatch.setattr(xpfilt.model.frontend, "_EXCESS_MAX", 3)
    docs = [b"<a>" * n + b"</a>" * k for n in range(1, 9) for k in (n - 1, n, n + 1)]
    docs += [b"<a>" * 7 + b"<b/>" * 2 + b"</a>" * 7, b"<a><a><a>x</a></a></a>"]
    for gaps in (None, 11):
        events = assert_rtl_matches_model(
            SMALL_TAGS, byte_stream(docs, gap_seed=gaps), max_depth=2, max_name=8
        )
        assert sum(e.errors & Errors.DEPTH_OVERFLOW != 0 for e in events if e.doc_end) > 10


FUZZ_TOKENS = [
    "<",
    ">",
    "/",
    "/>",
    "</",
    "!",
    "?",
    "-",
    "--",
    "[",
    "]",
    "]]",
    "]]>",
    '"',
    "'",
    "=",
    " ",
    "\n",
    "r",
    "a",
    "b",
    "ab",
    "abcdefgh",
    "abcdefghi",
    "x1",
    "1",
    "&amp;",
    "\u00e9",
    "<r>",
    "</r>",
    "<a>",
    "</a>",
    "<b/>",
    '<a x="1">',
    "<!--",
    "-->",
    "<?",
    "?>",
    "<![CDATA[",
    "<!DOCTYPE r [",
    '<!ENTITY e "x>">',
    "<!",
    "CDATA[",
    "DOCTYPE",
    "OCTYPE",
    '<a x="1e2">',
    "<b x='q' y=''/>",
    ' x="&amp;"',
    ' x="-1.5 "',
    "&e;",
    "&lt;",
    "&#38;",
    "&quo",
    "t;",
] + ["<r>", "</r>", "<a>", "</a>", "<b>", "</b>", "<abcdefgh>", "</abcdefgh>", "<x/>"] * 3


def test_rtl_fuzz():
    """Random token soup, random document ends and gaps: every path of the parser."""
    rng = random.Random(2025)
    items = []
    while len(items) < 15000:
        token = rng.choice(FUZZ_TOKENS).encode()
        for i, b in enumerate(token):
            if rng.random() < 0.1:
                items.append((0, rng.randrange(256), rng.randrange(2)))
            items.append((1, b, int(i == len(token) - 1 and rng.random() < 0.03)))
    items += [(1, ord(" "), 1)]  # end the soup's last document
    items += byte_stream([b"<r><a>t</a></r>"])  # and a good one
    conditions = [
        AttrCondition("x", "=", 1.0),
        AttrCondition("x", "<", -1.0),
        AttrCondition("x", "=", "q"),
        AttrCondition("y", "exists"),
    ]
    events = assert_rtl_matches_model(
        ["r", "a", "b", "abcdefgh"], items, **SMALL, conditions=conditions
    )
    # the soup must have exercised every kind of output
    assert sum(e.push for e in events) > 100 and sum(e.pop for e in events) > 50
    docs = [e for e in events if e.doc_end]
    assert len(docs) > 50
    for flag in Errors:
        assert any(e.errors & flag for e in docs), flag
    assert any(e.errors == 0 for e in docs)
    assert any(e.push and e.tag == 4 for e in events)
    assert any(e.push and e.tag == 0 for e in events)
    assert docs[-1].errors == 0
    assert any(e.conds for e in events)


def test_verilog():
    text = verilog.convert(
        FrontEnd(["a", "b", "nitf"], max_depth=8, max_name=8), name="xpfilt_frontend"
    )
    assert "module xpfilt_frontend(" in text
    for port in ("bytes_in__valid", "bytes_in__ready", "bytes_in__payload", "events", "tos"):
        assert port in text
