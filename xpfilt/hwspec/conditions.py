"""Boolean conditions over bits: the one condition IR of the compiler, the RTL and the model.

The custom compiler (:mod:`xpfilt.compiler.custom`) gives a guarded step its attribute
condition (:class:`Bit` leaves: the push's condition bits), a twig entry its pop-time
condition (:class:`Bit`: the pop's text condition bits, :class:`Row`: a column of the closing
element's row, :class:`Pending`: a pending bit of the element) and a boolean combination of
paths its expression over the paths' match flags (:class:`Bit`: a path's flag); the
programmable placement (:mod:`xpfilt.compiler.programmable`) gives a combination its
expression over readout bits (:class:`Bit`). Inner nodes are :class:`AllOf` (and),
:class:`AnyOf` (or) and :class:`Negation` (not); :data:`ALWAYS` is no condition (it holds).

:meth:`Condition.fold` is the one evaluator: :meth:`Condition.holds` folds a condition over
integers (the model, the compiler's checks, the readout decoding), :func:`xpfilt.hdl.stacks.
boolean` over Amaranth values (the RTL). The JSON form (plans, readout maps) is the nested
lists the earlier tuple form serialised to: ``["c", 3]``, ``["r", 2]``, ``["n", 0]``,
``["and", a, b, ...]``, ``["or", a, b, ...]``, ``["not", a]``, ``[]`` for :data:`ALWAYS`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, ClassVar, Iterator, TypeVar, overload

__all__ = [
    "Condition",
    "Always",
    "ALWAYS",
    "Leaf",
    "Bit",
    "Row",
    "Pending",
    "AllOf",
    "AnyOf",
    "Negation",
    "all_of",
]

T = TypeVar("T")


class Condition:
    """A boolean condition over bits (see the module docstring). Frozen dataclasses: equal
    conditions compare and hash equal, so they key dictionaries (shared twig entries)."""

    @overload
    def fold(self, leaf: Callable[["Leaf"], bool]) -> bool: ...

    @overload
    def fold(
        self,
        leaf: Callable[["Leaf"], T],
        *,
        all_: Callable[[list[T]], T] = ...,
        any_: Callable[[list[T]], T] = ...,
        not_: Callable[[T], T] = ...,
        true: Callable[[], T] = ...,
    ) -> T: ...

    def fold(self, leaf, *, all_=all, any_=any, not_=lambda x: not x, true=lambda: True):
        """The condition evaluated with ``leaf`` for the leaves and ``all_``/``any_``/``not_``
        for and/or/not (``true()``: :data:`ALWAYS`); Python's booleans by default."""
        raise NotImplementedError

    #: Whether this is :data:`ALWAYS` (no condition; not merely one that always holds).
    always: ClassVar[bool] = False

    def holds(self, bits: int = 0, row: int = 0, pending: int = 0) -> bool:
        """Whether the condition holds: a :class:`Bit` leaf reads ``bits``, a :class:`Row`
        ``row``, a :class:`Pending` ``pending`` (bit ``index`` of each)."""
        words = {"c": bits, "r": row, "n": pending}
        return self.fold(lambda leaf: bool(words[leaf.kind] >> leaf.index & 1))

    def leaves(self) -> Iterator["Leaf"]:
        """The leaves, left to right."""
        raise NotImplementedError

    def with_leaves(self, new: Callable[["Leaf"], "Condition"]) -> "Condition":
        """The condition with each leaf replaced by ``new(leaf)``."""
        raise NotImplementedError

    def to_json(self) -> list:
        """The JSON form (see the module docstring)."""
        raise NotImplementedError

    def to_tuple(self) -> tuple:
        """The JSON form as nested tuples (the compiler's form before the IR; its ``repr``
        orders :func:`xpfilt.hdl.stacks.tag_pairs` as it always did)."""
        return _tupled(self.to_json())

    @staticmethod
    def from_json(value, kinds: str = "crn") -> "Condition":
        """A condition from its JSON form (lists or tuples), its leaves of ``kinds`` only;
        ValueError naming what is wrong."""
        if isinstance(value, (list, tuple)):
            if not value:
                return ALWAYS
            op, args = value[0], value[1:]
            if not isinstance(op, str):
                op = None
            if op in _LEAVES and op in kinds and len(args) == 1 and _is_index(args[0]):
                return _LEAVES[op](args[0])
            if op in ("and", "or") and args:
                operands = tuple(_operand(v, kinds) for v in args)
                return AllOf(operands) if op == "and" else AnyOf(operands)
            if op == "not" and len(args) == 1:
                return Negation(_operand(args[0], kinds))
        raise ValueError(f"condition must be a leaf or and/or/not over conditions, not {value!r}")


def _operand(value, kinds: str) -> Condition:
    out = Condition.from_json(value, kinds)
    if out is ALWAYS:
        raise ValueError(f"condition must be a leaf or and/or/not over conditions, not {value!r}")
    return out


def _is_index(value) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


def _tupled(value):
    return tuple(_tupled(v) for v in value) if isinstance(value, list) else value


@dataclass(frozen=True)
class Always(Condition):
    """No condition: it holds (a step without predicates, an entry with nothing to check)."""

    always: ClassVar[bool] = True

    def fold(self, leaf, *, all_=all, any_=any, not_=lambda x: not x, true=lambda: True):
        return true()

    def leaves(self):
        return iter(())

    def with_leaves(self, new):
        return self

    def to_json(self) -> list:
        return []


#: The condition that always holds (JSON ``[]``).
ALWAYS = Always()


@dataclass(frozen=True)
class Leaf(Condition):
    """Bit ``index`` of one of the words a condition is evaluated on (:attr:`kind`)."""

    index: int
    kind: ClassVar[str] = ""

    def fold(self, leaf, *, all_=all, any_=any, not_=lambda x: not x, true=lambda: True):
        return leaf(self)

    def leaves(self):
        yield self

    def with_leaves(self, new):
        return new(self)

    def to_json(self) -> list:
        return [self.kind, self.index]


@dataclass(frozen=True)
class Bit(Leaf):
    """A condition bit: of a push (guards), of a pop's text (twig entries), a path's match
    flag (combinations in a plan), a readout bit (combinations on the programmable engine)."""

    kind: ClassVar[str] = "c"


@dataclass(frozen=True)
class Row(Leaf):
    """Column ``index`` of the closing element's stack row (a twig entry's attribute part
    under or/not; in the compiler, before columns are assigned, a node index)."""

    kind: ClassVar[str] = "r"


@dataclass(frozen=True)
class Pending(Leaf):
    """Pending bit ``index`` of the closing element (a twig entry held below it; in a query's
    chain, the entry's index)."""

    kind: ClassVar[str] = "n"


_LEAVES = {cls.kind: cls for cls in (Bit, Row, Pending)}


@dataclass(frozen=True)
class _Junction(Condition):
    """And or or over ``operands`` (at least one)."""

    operands: tuple[Condition, ...]
    op: ClassVar[str] = ""

    def fold(self, leaf, *, all_=all, any_=any, not_=lambda x: not x, true=lambda: True):
        parts = [o.fold(leaf, all_=all_, any_=any_, not_=not_, true=true) for o in self.operands]
        return all_(parts) if self.op == "and" else any_(parts)

    def leaves(self):
        for o in self.operands:
            yield from o.leaves()

    def with_leaves(self, new):
        return type(self)(tuple(o.with_leaves(new) for o in self.operands))

    def to_json(self) -> list:
        return [self.op, *(o.to_json() for o in self.operands)]


@dataclass(frozen=True)
class AllOf(_Junction):
    """And: every operand holds."""

    op: ClassVar[str] = "and"


@dataclass(frozen=True)
class AnyOf(_Junction):
    """Or: some operand holds."""

    op: ClassVar[str] = "or"


@dataclass(frozen=True)
class Negation(Condition):
    """Not: the operand does not hold."""

    operand: Condition

    def fold(self, leaf, *, all_=all, any_=any, not_=lambda x: not x, true=lambda: True):
        return not_(self.operand.fold(leaf, all_=all_, any_=any_, not_=not_, true=true))

    def leaves(self):
        return self.operand.leaves()

    def with_leaves(self, new):
        return Negation(self.operand.with_leaves(new))

    def to_json(self) -> list:
        return ["not", self.operand.to_json()]


def all_of(parts) -> Condition:
    """The and of ``parts``: :data:`ALWAYS` for none, the one part for one."""
    parts = list(parts)
    if not parts:
        return ALWAYS
    return parts[0] if len(parts) == 1 else AllOf(tuple(parts))
