"""The fast engine's compiled predicates (:mod:`xpfilt.software.fast_predicates`) against the oracle,
:func:`xpfilt.software.predicates.condition_holds`, on every element of generated documents (one compiled
set over several documents, so remembered outcomes are reused; a memo of one value, so they are
also forgotten), and the fast engine on twigs over documents in turn."""

import pytest
from hypothesis import given
from hypothesis import strategies as st

from xpfilt.lang.xpath import parse_query
from xpfilt.software.events import parse_events
from xpfilt.software.fast import FastFilter
from xpfilt.software.fast_predicates import CHILD, CHILDREN, TEXT, PredicateTests, needed
from xpfilt.software.predicates import condition_holds, element_nodes
from xpfilt.software.reference import ReferenceFilter

from .conftest import examples
from .test_profile_language import conditions, documents
from .test_twigs import twigs


def _nodes(document: bytes):
    return list(element_nodes(list(parse_events(document))).values())


@examples(ci=300)
@given(
    texts=st.lists(conditions(position=False), min_size=1, max_size=4),
    docs=st.lists(documents(), min_size=1, max_size=3),
)
def test_compiled_predicates_equal_the_reference_on_every_element(texts, docs):
    steps = [parse_query(f"//*[{text}]").steps[-1] for text in texts]
    compiled = [PredicateTests(), PredicateTests(value_memo_size=1)]
    for doc in docs + docs[:1]:
        nodes = _nodes(doc)
        for step in steps:
            for node in nodes:
                expected = all(
                    condition_holds(p, node.attrs, node.texts, None, node) for p in step.predicates
                )
                node.branches.clear()  # each side decides its nested paths itself
                for tests in compiled:
                    assert tests.test(step.predicates)(node.attrs, node.texts, node) == expected
                    node.branches.clear()


def _has(node, need) -> bool:
    if need == TEXT:
        return bool(node.texts)
    if need == CHILDREN:
        return bool(node.children)
    if need.startswith(CHILD):
        return any(child.name == need[len(CHILD) :] for child in node.children)
    return need in node.attrs


@examples(ci=300)
@given(texts=st.lists(conditions(), min_size=1, max_size=3), doc=documents())
def test_an_element_without_what_predicates_need_fails_them(texts, doc):
    """The engine skips a test on an element that lacks what :func:`needed` names."""
    step = parse_query("//*" + "".join(f"[{t}]" for t in texts)).steps[-1]
    need = needed(step.predicates)
    for position, node in enumerate(_nodes(doc), start=1):
        if need is not None and not _has(node, need):
            assert not all(
                condition_holds(p, node.attrs, node.texts, position, node) for p in step.predicates
            )


@pytest.mark.parametrize(
    "predicates, need",
    [
        ("[@a > 1]", "a"),
        ("[@a]", "a"),
        ("[text() = 'x']", TEXT),
        ("[text()]", TEXT),
        ("[b/c]", "/b"),
        ("[*/c]", CHILDREN),
        ("[.//c]", CHILDREN),
        ("[@a][b]", "a"),
        ("[text()][b]", "/b"),
        ("[not(@a)]", None),
        ("[position() = 1]", None),
        ("[2]", None),
        ("[text() = 1 and @a = 2]", "a"),
        ("[@a = 1 or @a = 2]", "a"),
        ("[@a = 1 or @b = 2]", None),
        ("[@a or b]", None),
        ("[not(@a)][@b]", "b"),
        ("[b][text()]", "/b"),
        ("[*][text()]", TEXT),
        ("[(@a)]", "a"),
    ],
)
def test_what_predicates_need(predicates, need):
    assert needed(parse_query("/x" + predicates).steps[0].predicates) == need


def test_equal_predicate_lists_share_one_test():
    a, b = (parse_query("/x[@n > 1 and c]").steps[0], parse_query("/y[@n > 1 and c]").steps[0])
    tests = PredicateTests()
    assert a.predicates is not b.predicates
    assert tests.test(a.predicates) is tests.test(b.predicates)


@pytest.mark.parametrize(
    "query, xml, matches",
    [
        ("/a[b[2]]", b"<a><b/></a>", False),  # a nested step with position():
        ("/a[b[2]]", b"<a><b/><c/><b/></a>", True),  # the reference's node-sets decide
        ("/a[.//b[position() = 1]/c]", b"<a><d><b/><b><c/></b></d></a>", False),
        ("/a[.//b[position() = 1]/c]", b"<a><d><b><c/></b><b/></d></a>", True),
    ],
)
def test_nested_paths_with_positions(query, xml, matches):
    parsed = [parse_query(query)]
    expected = frozenset({0}) if matches else frozenset()
    assert ReferenceFilter(parsed).filter(xml) == expected
    assert FastFilter(parsed).filter(xml) == expected


def test_a_nested_path_without_the_tree_is_refused():
    test = PredicateTests().test(parse_query("/a[b]").steps[0].predicates)
    with pytest.raises(ValueError, match="subtree"):
        test({}, (), None)


@examples(ci=150)
@given(
    texts=st.lists(twigs(), min_size=1, max_size=8),
    docs=st.lists(documents(), min_size=2, max_size=4),
)
def test_fast_equals_reference_on_twigs_over_documents_in_turn(texts, docs):
    parsed = [parse_query(t, i + 1) for i, t in enumerate(texts)]
    fast, ref = FastFilter(parsed), ReferenceFilter(parsed)
    for doc in docs + docs[:1]:
        assert fast.filter(doc) == ref.filter(doc)


@examples(ci=100)
@given(
    docs=st.lists(documents(), min_size=2, max_size=4),
    texts=st.lists(conditions(), min_size=1, max_size=10),
)
def test_fast_equals_reference_when_values_are_forgotten_after_each(docs, texts):
    """Value tables and comparison memos of one value: every value is judged again."""
    parsed = [parse_query(f"//*[{t}]", i + 1) for i, t in enumerate(texts)]
    fast, small, ref = (
        FastFilter(parsed),
        FastFilter(parsed, value_memo_size=1),
        ReferenceFilter(parsed),
    )
    for doc in docs + docs[:1]:
        expected = ref.filter(doc)
        assert fast.filter(doc) == expected
        assert small.filter(doc) == expected


def test_remembered_comparisons_stay_within_one_budget_for_all_leaves():
    tests = PredicateTests(value_memo_size=3)
    step = parse_query("/x[@a > 1 or text() = 'v']").steps[0]
    test = tests.test(step.predicates)
    for i in range(20):
        value = str(i)
        assert test({"a": value}, [value, "v" if i % 2 else "w"], None) == (i > 1 or i % 2 == 1)
        assert sum(map(len, tests._memos)) <= 3
