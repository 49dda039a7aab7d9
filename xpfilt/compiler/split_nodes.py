"""Split nodes of the programmable engine: the columns of a twig that XPath does not let be
rewritten into paths and combinations (:func:`xpfilt.compiler.custom.without_nested_paths`), such as
``//a[b]/c`` or ``/a/b[c]/d``, on hardware with a twig width (``HardwareSpec.twig_width``).

A twig's path is cut at its *anchor*, the first step with a nested path or a ``text()``
comparison. The steps before it take columns as a path's steps do (matched top down). The
anchor and every step below it (the rest of the path and every nested path, to any depth) take
one *closing* column each, decided bottom up when its element closes, as the ``text()``
columns are: a closing column holds at an element it named when its slot chain holds and every
one of its *children* (the next step of its path, the first step of each of its nested paths)
held below that element (any descendant for a ``//`` child), and every *negated* child (a
nested path under ``not``) held below it nowhere; the anchor holding is the match.
The subtree below a column takes the columns right after it, its children's subtrees one
after the other, the smallest first (so the children stay close), and a column's children
are a mask over the next ``twig_width`` columns. As on a path, the ``descendant`` flag of the
column before a step says that step's axis is ``//``.

Nested paths are taken under ``and`` and ``not`` (``/a/b[c and not(.//d)]/e``); an ``or`` is
first moved out of the step (:func:`or_distributed`: ``/a/b[c or @x=1]/e`` is ``/a/b[c]/e or
/a/b[@x=1]/e``, a combination of paths, and ``not(c or d)`` is ``not(c) and not(d)``). Children
spread over more columns than the twig width are refused with that reason."""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from typing import Optional

from xpfilt.compiler.custom import _conjuncts, _query_steps
from xpfilt.hwspec.slots import step_chain
from xpfilt.lang.xpath import And, Not, Or, Query, RelativePath, Step, leaves

__all__ = [
    "TwigNode",
    "twig_nodes",
    "twig_anchor",
    "children_span",
    "or_distributed",
    "fits_as_written",
    "MAX_ALTERNATIVES",
]

#: The most paths :func:`or_distributed` spreads one path of a profile into.
MAX_ALTERNATIVES = 16


@dataclass(frozen=True)
class TwigNode:
    """One column of a twig: its ``step`` (name test, axis, the predicates a slot chain
    decides) and its ``children``, as offsets from its own column (empty above the anchor),
    ``negated`` those of them under a ``not``."""

    step: Step
    children: tuple[int, ...] = ()
    negated: tuple[int, ...] = ()

    @property
    def mask(self) -> int:
        """The children as a mask over the next columns: bit ``i`` for offset ``i + 1``."""
        return sum(1 << (offset - 1) for offset in self.children)

    @property
    def negated_mask(self) -> int:
        """The negated children, as :attr:`mask`."""
        return sum(1 << (offset - 1) for offset in self.negated)


def twig_nodes(path: Query) -> tuple[TwigNode, ...]:
    """The columns of twig ``path``, in column order (:func:`twig_anchor` is the anchor's);
    ValueError saying why it cannot take split nodes."""
    return _nodes(path)[0]


def twig_anchor(path: Query) -> int:
    """The column of twig ``path``'s anchor (its readout column)."""
    return _nodes(path)[1]


def children_span(path: Query) -> int:
    """The most columns a column's children of twig ``path`` spread over (the twig width it
    needs)."""
    return max((max(n.children) for n in twig_nodes(path) if n.children), default=0)


@lru_cache(maxsize=4096)
def _nodes(path: Query) -> tuple[tuple[TwigNode, ...], int]:
    trunk = []
    for j, step in enumerate(path.steps):
        kept, branches = _split(step)
        chain = step_chain(Step(step.axis, step.name, kept))
        if branches or chain and chain.closes:
            return tuple(trunk) + _subtree(path.steps[j:]), j
        trunk.append(TwigNode(step))
    raise ValueError("a twig must have a nested path")


def _subtree(steps: tuple) -> tuple[TwigNode, ...]:
    """The closing columns of ``steps[0]`` and below it: the continuation ``steps[1:]`` and
    ``steps[0]``'s nested paths, each a subtree."""
    kept, branches = _split(steps[0])
    if len(steps) > 1:
        branches = [(steps[1:], False), *branches]
    subtrees = sorted(((_subtree(b), negated) for b, negated in branches), key=lambda s: len(s[0]))
    offsets, negated, at = [], [], 1
    for subtree, is_negated in subtrees:
        offsets.append(at)
        if is_negated:
            negated.append(at)
        at += len(subtree)
    root = TwigNode(Step(steps[0].axis, steps[0].name, kept), tuple(offsets), tuple(negated))
    return (root, *(node for subtree, _ in subtrees for node in subtree))


def _split(step: Step) -> tuple[tuple, list[tuple]]:
    """A step's predicates as (the conditions without nested paths, the nested paths' (steps,
    negated)); ValueError for a nested path under ``or`` (:func:`or_distributed` moves those
    out first)."""
    kept, branches = [], []
    for condition in (c for p in step.predicates for c in _conjuncts(p)):
        if nested := _nested(condition):
            branches.append(nested)
        elif any(isinstance(leaf, RelativePath) for leaf in leaves(condition)):
            raise ValueError(
                f"step {step.name!r}: split nodes take nested paths under 'and' "
                f"and 'not', not under 'or' (spread it: or_distributed)"
            )
        else:
            kept.append(condition)
    return tuple(kept), branches


def _nested(condition) -> Optional[tuple]:
    """(steps, negated) of a nested path or the ``not`` of one; None for anything else."""
    if isinstance(condition, RelativePath):
        return condition.steps, False
    if isinstance(condition, Not) and isinstance(condition.operand, RelativePath):
        return condition.operand.steps, True
    return None


def or_distributed(query: Query) -> Optional[Query]:
    """``query`` with each step whose predicates do not fit the programmable engine as written
    (a nested path under ``or``; ``and`` mixed with ``or``, or an ``or`` of attribute and
    ``text()`` comparisons, which one slot chain does not take) rewritten into its
    disjunctive form, each ``or`` moved out to the profile: a path selects a node when some
    choice of its steps' disjuncts does (``/a/b[c or @x=1]/e`` = ``/a/b[c]/e or
    /a/b[@x=1]/e``; ``not`` is pushed to the comparisons and nested paths, and ``not`` over a
    nested path's ``or`` becomes an ``and`` of ``not``s). Steps that fit are kept as written.
    The same answers on every document; ``query`` itself when nothing changes (or it calls
    ``position()``); None when a path would spread into more than :data:`MAX_ALTERNATIVES`."""
    if any(s.uses_position for p in query.paths for s in p.steps):
        return query
    try:
        if query.clause is None:
            return _spread(query)
        clause = _clause_spread(query.clause)
    except _TooMany:
        return None
    return query if clause == query.clause else Query((), query.number, clause)


class _TooMany(ValueError):
    """A path spreads into more than MAX_ALTERNATIVES."""


def _clause_spread(node):
    if isinstance(node, (And, Or)):
        return type(node)(tuple(_clause_spread(o) for o in node.operands))
    if isinstance(node, Not):
        return Not(_clause_spread(node.operand))
    spread = _spread(node)
    return spread if spread.is_path else spread.clause


def _spread(path: Query) -> Query:
    """A path as a path (unchanged) or an ``or`` of paths."""
    alternatives = _path_alternatives(path.steps)
    if alternatives == [path.steps]:
        return path
    if len(alternatives) == 1:
        return Query(alternatives[0], path.number)
    return Query((), path.number, Or(tuple(Query(a, path.number) for a in alternatives)))


def _product(choices: list[list[tuple]]) -> list[tuple]:
    out = [()]
    for choice in choices:
        out = [a + b for a in out for b in choice]
        if len(out) > MAX_ALTERNATIVES:
            raise _TooMany()
    return out


def _path_alternatives(steps: tuple) -> list[tuple]:
    return _product([[(s,) for s in _step_alternatives(step)] for step in steps])


def fits_as_written(query: Query) -> bool:
    """Whether every step of ``query`` (nested paths' included) fits split nodes and one slot
    chain as written (:func:`or_distributed` keeps such a profile as it is)."""
    try:
        return all(_fits(s) for s in _query_steps(query))
    except _TooMany:
        return False


def _fits(step: Step) -> bool:
    """Whether split nodes and a slot chain take ``step``'s predicates as written (nested
    paths, or the ``not`` of ones that do not spread, as conjuncts; the rest one chain)."""
    kept = []
    for condition in (c for p in step.predicates for c in _conjuncts(p)):
        if any(isinstance(leaf, RelativePath) for leaf in leaves(condition)):
            nested = _nested(condition)
            if nested is None or nested[1] and _path_alternatives(nested[0]) != [nested[0]]:
                return False  # under 'or', or 'not' over a path that spreads
        else:
            kept.append(condition)
    try:
        step_chain(Step(step.axis, step.name, tuple(kept)))
    except ValueError:
        return False
    return True


def _step_alternatives(step: Step) -> list[Step]:
    if not step.predicates:
        return [step]
    if _fits(step):  # its nested paths may still spread
        conjuncts = [c for p in step.predicates for c in _conjuncts(p)]
        nested = [c for c in conjuncts if isinstance(c, RelativePath)]
        spread = [[RelativePath(a) for a in _path_alternatives(c.steps)] for c in nested]
        if all(len(a) == 1 and a[0] == c for a, c in zip(spread, nested)):
            return [step]
        kept = tuple(c for c in conjuncts if not isinstance(c, RelativePath))
        return [
            Step(step.axis, step.name, kept + chosen)
            for chosen in _product([[(a,) for a in alts] for alts in spread])
        ]
    whole = step.predicates[0] if len(step.predicates) == 1 else And(step.predicates)
    out = []
    for disjunct in _dnf(whole, False):
        literals = list(dict.fromkeys(Not(leaf) if negated else leaf for leaf, negated in disjunct))
        conditions = [
            c
            for c in literals
            if not isinstance(c.operand if isinstance(c, Not) else c, RelativePath)
        ]
        nested = tuple(c for c in literals if c not in conditions)
        chain = (And(tuple(conditions)),) if len(conditions) > 1 else tuple(conditions)
        out.append(Step(step.axis, step.name, chain + nested))
    return list(dict.fromkeys(out))


def _dnf(node, negated: bool) -> list[tuple]:
    """``node`` (``negated``) as disjuncts, each a tuple of (leaf, negated) literals: ``not``
    pushed to the leaves, a positive nested path spread into its alternatives (disjuncts), a
    negated one into the ``and`` of their negations."""
    if isinstance(node, Not):
        return _dnf(node.operand, not negated)
    if isinstance(node, (And, Or)):
        parts = [_dnf(o, negated) for o in node.operands]
        if isinstance(node, And) != negated:
            return _product(parts)
        out = [d for part in parts for d in part]
        if len(out) > MAX_ALTERNATIVES:
            raise _TooMany()
        return out
    if isinstance(node, RelativePath):
        alternatives = [RelativePath(a) for a in _path_alternatives(node.steps)]
        if negated:
            return [tuple((a, True) for a in alternatives)]
        return [((a, False),) for a in alternatives]
    return [((node, negated),)]
