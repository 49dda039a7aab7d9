"""The condition IR (xpfilt.hwspec.conditions): its one evaluator, its JSON form (the nested
lists plans and readout maps have always held) and what it refuses to read."""

import pytest
from hypothesis import given
from hypothesis import strategies as st

from xpfilt.hwspec.conditions import (
    ALWAYS,
    AllOf,
    AnyOf,
    Bit,
    Condition,
    Negation,
    Pending,
    Row,
    all_of,
)

leaves = st.builds(Bit, st.integers(0, 5)) | st.builds(Row, st.integers(0, 5))
leaves = leaves | st.builds(Pending, st.integers(0, 5))
conditions = st.recursive(
    leaves,
    lambda inner: (
        st.builds(AllOf, st.tuples(inner, inner))
        | st.builds(AnyOf, st.tuples(inner, inner, inner))
        | st.builds(Negation, inner)
    ),
    max_leaves=8,
)


def by_hand(cond, bits: int, row: int, pending: int) -> bool:
    """The tuple evaluator the compiler had before the IR, on the JSON form."""
    value = cond.to_json()

    def holds(v):
        if not v:
            return True
        op = v[0]
        word = {"c": bits, "r": row, "n": pending}.get(op)
        if word is not None:
            return bool(word >> v[1] & 1)
        if op == "and":
            return all(holds(g) for g in v[1:])
        if op == "or":
            return any(holds(g) for g in v[1:])
        return not holds(v[1])

    return holds(value)


@given(conditions, st.integers(0, 63), st.integers(0, 63), st.integers(0, 63))
def test_holds_is_the_old_tuple_evaluator_and_json_round_trips(cond, bits, row, pending):
    assert cond.holds(bits, row, pending) == by_hand(cond, bits, row, pending)
    again = Condition.from_json(cond.to_json())
    assert again == cond and hash(again) == hash(cond)
    assert Condition.from_json(cond.to_tuple()) == cond


def test_the_json_form_is_the_old_tuple_form():
    cond = AllOf((Bit(3), Negation(AnyOf((Row(2), Pending(0))))))
    assert cond.to_json() == ["and", ["c", 3], ["not", ["or", ["r", 2], ["n", 0]]]]
    assert cond.to_tuple() == ("and", ("c", 3), ("not", ("or", ("r", 2), ("n", 0))))
    assert ALWAYS.to_json() == [] and Condition.from_json([]) is ALWAYS
    assert [leaf.to_json() for leaf in cond.leaves()] == [["c", 3], ["r", 2], ["n", 0]]


def test_always_holds_and_all_of_collapses():
    assert ALWAYS.holds() and ALWAYS.always and not Bit(0).always
    assert all_of([]) is ALWAYS and all_of([Bit(1)]) == Bit(1)
    assert all_of([Bit(1), Bit(2)]) == AllOf((Bit(1), Bit(2)))
    assert AllOf((Bit(1), Bit(2))) != AnyOf((Bit(1), Bit(2)))


def test_fold_builds_any_algebra_and_with_leaves_maps():
    cond = AnyOf((Bit(0), Negation(Row(1))))
    text = cond.fold(
        lambda leaf: f"{leaf.kind}{leaf.index}",
        all_=" & ".join,
        any_=lambda parts: "(" + " | ".join(parts) + ")",
        not_=lambda x: "~" + x,
    )
    assert text == "(c0 | ~r1)"
    moved = cond.with_leaves(lambda leaf: Bit(leaf.index + 5) if isinstance(leaf, Bit) else leaf)
    assert moved == AnyOf((Bit(5), Negation(Row(1))))


@pytest.mark.parametrize(
    "value",
    [["x", 1], ["c", -1], ["c", True], ["c"], [["c", 1]], ["and"], ["not", []], ["not", 3], 4],
)
def test_from_json_refuses_what_is_not_a_condition(value):
    with pytest.raises(ValueError, match="condition must be a leaf or and/or/not"):
        Condition.from_json(value)


def test_from_json_takes_only_the_leaf_kinds_asked_for():
    assert Condition.from_json(["c", 1], kinds="c") == Bit(1)
    with pytest.raises(ValueError):
        Condition.from_json(["and", ["c", 1], ["r", 2]], kinds="c")
