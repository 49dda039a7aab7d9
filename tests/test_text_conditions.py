# amaranth: UnusedElaboratable=no
"""Issue 14 part 2, first stage: the front end evaluates ``text()`` conditions. Each text node
(character data between markup; comments and processing instructions split nodes, CDATA sections
do not) is compared as it streams, the results are ORed per element and travel with the
element's pop (``events.conds``). Checked: the model's bits against XPath (lxml) per element on
generated documents (whitespace, signs, decimals, exponents, comments splitting text, CDATA,
references; a document the hardware cannot decide carries ``value_undecided`` and must hold an
undecidable text node), and the front end's RTL against its model every cycle."""

from __future__ import annotations

import random

import pytest
from hypothesis import given
from hypothesis import strategies as st
from lxml import etree

from xpfilt.hwspec.contract import TEXT, AttrCondition, Errors, condition_value_holds
from xpfilt.model.frontend import FrontEndModel

from .conftest import examples
from .strategies import predicate_paths
from .test_attr_predicates import OPS, _literal
from .test_frontend import assert_rtl_matches_model, byte_stream

TAGS = ["a", "b", "c"]
#: Text pieces: numbers with whitespace, signs, decimals, exponents, leading zeros, too many
#: digits; words; empty-looking whitespace; tab and newline inside a string.
PIECES = [
    "1",
    "2",
    " 2 ",
    "-1",
    "+1",
    "1.50",
    "1.5",
    "1e2",
    ".5",
    "5.",
    "-0",
    "007",
    "x",
    " ",
    "\t3\n",
    "q r",
    "q\tr",
    "-.5",
    ".",
    "12345678901234567",
    "100",
    "99.99",
    "0",
    "1 2",
    "]",
    "a]b",
]
#: Pieces the hardware cannot decide when compared: references, a carriage return.
HARD = ["&#50;", "1&amp;2", "&lt;", "3\r"]
LITERALS = [
    "1",
    "2",
    "-1",
    "1.5",
    "0.5",
    "100",
    "0",
    "99.99",
    "'x'",
    "' 2 '",
    "'2'",
    "'q r'",
    "'q\tr'",
    "'1'",
    "'1e2'",
    "' '",
]


def text_conditions() -> list[AttrCondition]:
    conds = [
        AttrCondition(TEXT, op, _literal(lit))
        for op in OPS
        for lit in LITERALS
        if not (lit.startswith("'") and op not in ("=", "!="))
    ]
    return conds + [AttrCondition(TEXT, "exists"), AttrCondition(TEXT, "<", "'7'")]


def random_document(rng: random.Random, hard: bool) -> tuple[bytes, bool]:
    """A document of TAGS with text, comments, PIs and CDATA sections between the children;
    (its bytes, whether it holds a text node the hardware cannot decide)."""
    undecidable = False

    def content(depth: int) -> str:
        nonlocal undecidable
        parts = []
        for _ in range(rng.randint(0, 4)):
            kind = rng.random()
            if kind < 0.45:
                piece = rng.choice(PIECES + (HARD if hard else []))
                parts.append(
                    piece.replace("&", "\0").replace("<", "&lt;").replace("\0", "&")
                    if piece not in HARD
                    else piece
                )
            elif kind < 0.55:
                parts.append("<!-- c -->")
            elif kind < 0.6:
                parts.append("<?p x?>")
            elif kind < 0.75:
                parts.append(f"<![CDATA[{rng.choice(PIECES)}]]>")
            elif depth < 3:
                name = rng.choice(TAGS)
                parts.append(f"<{name}>{content(depth + 1)}</{name}>")
        return "".join(parts)

    body = content(0)
    doc = f"<a>{body}</a>".encode()
    # an undecidable node: a reference, a CR, or a "]" inside a CDATA section
    undecidable = (
        any(h in body for h in ("&", "\r"))
        or "[]]" in body
        or any(f"<![CDATA[{p}]]>" in body for p in PIECES if "]" in p)
    )
    return doc, undecidable


def xpath_bits(doc: bytes, conditions) -> list[int]:
    """Per element in the order the elements close, the condition bits XPath gives."""
    root = etree.fromstring(doc)
    closing = []

    def walk(element):
        for child in element:
            if isinstance(child.tag, str):
                walk(child)
        closing.append(element)

    walk(root)
    out = []
    for element in closing:
        bits = 0
        for i, c in enumerate(conditions):
            if c.op == "exists":
                expr = "boolean(text())"
            else:
                lit = (
                    (f"'{c.literal}'" if "'" not in c.literal else f'"{c.literal}"')
                    if isinstance(c.literal, str)
                    else repr(c.literal)
                )
                expr = f"boolean(text() {c.op} {lit})"
            bits |= bool(element.xpath(expr)) << i
        out.append(bits)
    return out


def model_pops(doc: bytes, conditions) -> tuple[list[int], Errors]:
    model = FrontEndModel(TAGS, max_depth=8, conditions=conditions)
    pops, errors = [], None
    for valid, data, last in byte_stream([doc]):
        ev = model.step(valid, data, last)
        if ev.pop:
            pops.append(ev.conds)
        if ev.doc_end:
            errors = Errors(ev.errors)
    return pops, errors


@given(
    st.text(alphabet="0123456789 -+.eE\t\nx", min_size=1, max_size=8) | st.sampled_from(PIECES),
    st.sampled_from(OPS),
    st.sampled_from(LITERALS),
)
@examples(ci=300)
def test_text_node_semantics_match_xpath(value, op, literal):
    """One text node: :func:`condition_value_holds` on its bytes = XPath's text() comparison."""
    if literal.startswith("'") and op not in ("=", "!="):
        return
    cond = AttrCondition(TEXT, op, _literal(literal))
    escaped = value.replace("&", "&amp;").replace("<", "&lt;")
    got = condition_value_holds(cond, value.encode())
    root = etree.fromstring(f"<a>{escaped}</a>".encode())
    want = bool(root.xpath(f"boolean(text() {op} {literal})"))
    if got is None:
        assert "e" in value.lower() or sum(ch.isdigit() for ch in value) > 15
    else:
        assert got == want, (value, op, literal)


@pytest.mark.parametrize("seed", range(6))
def test_model_text_bits_equal_xpath_per_element(seed):
    rng = random.Random(seed)
    conditions = text_conditions()
    decided = undecided = 0
    for _ in range(40):
        doc, hard = random_document(rng, hard=rng.random() < 0.3)
        pops, errors = model_pops(doc, conditions)
        assert not errors & Errors.MALFORMED, doc
        if errors & Errors.VALUE_UNDECIDED:
            undecided += 1
            assert (
                hard
                or b"e" in doc.lower()
                or any(sum(ch.isdigit() for ch in p) > 15 for p in doc.decode().split("<"))
            ), doc
            continue
        decided += 1
        assert pops == xpath_bits(doc, conditions), doc
    assert decided > 20


def test_text_nodes_are_split_by_comments_not_by_cdata():
    eq12 = AttrCondition(TEXT, "=", 12.0)
    conds = [eq12]
    assert model_pops(b"<a>1<![CDATA[2]]></a>", conds)[0] == [1]
    assert model_pops(b"<a>1<!-- -->2</a>", conds)[0] == [0]
    assert model_pops(b"<a>1<?p?>2</a>", conds)[0] == [0]
    assert model_pops(b"<a>1<b/>2</a>", conds)[0] == [0, 0]
    assert model_pops(b"<a>12<b>7</b></a>", conds)[0] == [0, 1]  # inner pops first
    assert model_pops(b"<a><b>7</b> 12 </a>", conds)[0] == [0, 1]
    assert model_pops(b"<a></a>", [AttrCondition(TEXT, "exists")])[0] == [0]
    assert model_pops(b"<a><![CDATA[]]></a>", [AttrCondition(TEXT, "exists")])[0] == [0]
    pops, errors = model_pops(b"<a>1&#50;</a>", conds)
    assert (pops, errors) == ([0], Errors.VALUE_UNDECIDED)
    pops, errors = model_pops(b"<a><![CDATA[1]2]]></a>", conds)
    assert (pops, errors) == ([0], Errors.VALUE_UNDECIDED)


@pytest.mark.parametrize("seed", [1, 2])
def test_frontend_rtl_equals_model_with_text_conditions(seed):
    rng = random.Random(seed)
    conditions = (
        [AttrCondition("id", "=", 1.0)]
        + text_conditions()[::3]
        + [AttrCondition(TEXT, "exists"), AttrCondition("id", "exists")]
    )
    docs = [random_document(rng, hard=i % 3 == 0)[0] for i in range(20)]
    docs += [
        b'<a id="1">12<b id="1"/>x</a>',
        b"<a><![CDATA[1]]]>2</a>",
        b"<a>1<b>2<c>3<a>4<b>5<c>6<a>7<b>8<c>9 10</c></b></a></c></b></a></c></b>0</a>",
        b"<a>1&#50;<b",
    ]  # ends after "<": no text node decision at the last byte
    events = assert_rtl_matches_model(
        TAGS, byte_stream(docs, gap_seed=seed), max_depth=4, conditions=conditions
    )
    assert any(e.pop and e.conds for e in events)
    assert any(e.push and e.conds for e in events)
    assert any(e.doc_end and e.errors & Errors.VALUE_UNDECIDED for e in events)
    assert any(e.doc_end and e.errors & Errors.DEPTH_OVERFLOW for e in events)


# --- the engine: text() chains checked at the close ---------------------------------------------

from xpfilt.compiler.custom import CompileOptions, compile_queries, hardware_queries  # noqa: E402
from xpfilt.lang.xpath import parse_query  # noqa: E402
from xpfilt.model.custom import EngineError, ModelEngine  # noqa: E402
from xpfilt.software.reference import ReferenceFilter  # noqa: E402

from .rtl_compare import compare_engine_with_model  # noqa: E402

TEXT_PIECES = ["15", " 15 ", "7", "-3", "3.0", "x", " ", "1e1", "", "&#49;5"]
TEXT_LITERALS = ["15", "7", "-3", "3", "'x'", "' 15 '", "10"]


@st.composite
def text_element(draw, depth=0):
    name = draw(st.sampled_from(TAGS))
    attr = draw(st.sampled_from(["", ' id="1"', ' id="2"']))
    parts = []
    for _ in range(draw(st.integers(0, 3 if depth < 3 else 1))):
        kind = draw(st.integers(0, 5))
        if kind <= 1:
            parts.append(draw(st.sampled_from(TEXT_PIECES)))
        elif kind == 2:
            parts.append(draw(st.sampled_from(["<!--c-->", "<![CDATA[5]]>", "<?p?>"])))
        elif depth < 3:
            parts.append(draw(text_element(depth + 1)))
    return f"<{name}{attr}>{''.join(parts)}</{name}>"


@st.composite
def text_predicate(draw, depth=0):
    kind = draw(st.integers(0, 5 if depth < 1 else 3))
    if kind <= 1:
        literal = draw(st.sampled_from(TEXT_LITERALS))
        ops = ("=", "!=") if literal.startswith("'") else OPS
        return f"text() {draw(st.sampled_from(ops))} {literal}"
    if kind == 2:
        return "text()"
    if kind == 3:
        return "@id = 1"
    if kind == 4:
        return f"not({draw(text_predicate(depth + 1))})"
    joiner = draw(st.sampled_from([" and ", " or "]))
    return f"({draw(text_predicate(depth + 1))}{joiner}{draw(text_predicate(depth + 1))})"


def text_path():
    return predicate_paths(TAGS, text_predicate(), max_steps=4, per_step=(0, 0, 1, 2))


def check_text_model_against_reference(texts, docs, options=CompileOptions()):
    """Model = reference (the hardware takes every query here, text() and attributes mixed
    under or/not included)."""
    queries, refused = hardware_queries([parse_query(t, i + 1) for i, t in enumerate(texts)])
    assert not refused
    if not queries:
        return len(docs)
    model, ref = ModelEngine(queries, options), ReferenceFilter(queries)
    decided = 0
    for doc in docs:
        try:
            got = sorted(model.filter(doc))
        except EngineError as exc:
            assert exc.errors == Errors.VALUE_UNDECIDED, doc
            continue
        decided += 1
        assert got == sorted(ref.filter(doc)), (texts, doc)
    return decided


@given(
    st.lists(text_path(), min_size=1, max_size=6),
    st.lists(text_element(), min_size=1, max_size=4),
    st.sampled_from([None, 2]),
    st.booleans(),
)
@examples(ci=300)
def test_model_equals_reference_on_generated_text_predicates(texts, docs, cluster_size, share):
    options = CompileOptions(
        cluster_size=cluster_size, prefix_sharing=share, opt_share=share, max_depth=4
    )
    check_text_model_against_reference(texts, [d.encode() for d in docs], options)


def test_text_on_an_inner_step_waits_for_the_close():
    texts = [
        "/a/b[text()=15]//c",
        "//b[text()=15]/c",
        "//b[text()=15]//c",
        "/a[text()=1]",
        "/a/b[text()=15]/c[text()=3]",
        "/*[@id=1]/b[text()!=2]//*[text()]",
        "//b[not(text()=15)]//c",
    ]
    docs = [
        b"<a><b><c/>15</b></a>",  # the text comes after c
        b"<a><b>15<b>7<c/></b></b></a>",  # c under the inner b only
        b"<a><b>15<b><c/>7</b></b></a>",
        b"<a>1<b>16<c>3</c></b></a>",
        b'<a id="1"><b>15<c>3</c><d>x</d></b></a>',
        b"<a>1<!-- -->5</a>",
        b"<a><b>1<![CDATA[5]]><c/></b></a>",
    ]
    for options in (
        CompileOptions(),
        CompileOptions(prefix_sharing=False, opt_share=False, opt_root=False, opt_last=False),
    ):
        assert check_text_model_against_reference(texts, docs, options) == len(docs)
    model = ModelEngine([parse_query(t, i + 1) for i, t in enumerate(texts)])
    assert 0 in model.filter(docs[0])  # /a/b[text()=15]//c with c before the text
    assert 1 not in model.filter(docs[1])  # //b[text()=15]/c: c's parent says 7


@pytest.mark.parametrize("seed", [5, 6])
def test_engine_rtl_equals_model_and_reference_with_text(seed):
    rng = random.Random(seed)
    texts = [
        "/a/b[text()=15]//c",
        "//b[text()=15]/c",
        "/a[text()]",
        "//*[text() != 7]",
        "/a[@id=1]/b[text()=' 15 ']",
        "//b[not(text()=15)]//c",
        "/a/b",
        "//c[@id=2]",
    ]
    queries = [parse_query(t, i + 1) for i, t in enumerate(texts)]
    plan = compile_queries(queries, CompileOptions(cluster_size=3, max_depth=4))
    docs = [random_document(rng, hard=False)[0] for _ in range(6)]
    docs += [
        b"<a><b><c/>15</b></a>",
        b"<a><b>15<b>7<c/></b></b></a>",
        b'<a id="1"><b> 15 <c id="2"/></b>x</a>',
        b"<a><b><c><a><b>15<c/></b></a></c></b></a>",  # beyond max_depth 4
        b"<a><b><c><a>15</a></c></b></a>",
    ]
    result = compare_engine_with_model(plan, docs, seed=seed)
    assert result["mismatch"] is None, result["mismatch"]
    model, ref = (
        ModelEngine(queries, CompileOptions(cluster_size=3, max_depth=4)),
        ReferenceFilter(queries),
    )
    matched = set()
    for doc in docs[:-2]:
        try:
            got = sorted(model.filter(doc))
        except EngineError:
            continue
        assert got == sorted(ref.filter(doc)), doc
        matched.update(got)
    assert {0, 2, 3, 4} <= matched  # chains on an inner step and on the last one
