"""Split nodes of the programmable engine: the columns of a twig that XPath does not let be
rewritten into paths and combinations (:func:`xpfilt.compiler.without_nested_paths`), such as
``//a[b]/c`` or ``/a/b[c]/d``, on hardware with a twig width (``HardwareSpec.twig_width``).

A twig's path is cut at its *anchor*, the first step with a nested path or a ``text()``
comparison. The steps before it take columns as a path's steps do (matched top down). The
anchor and every step below it (the rest of the path and every nested path, to any depth) take
one *closing* column each, decided bottom up when its element closes, as the ``text()``
columns are: a closing column holds at an element it named when its slot chain holds and every
one of its *children* (the next step of its path, the first step of each of its nested paths)
held below that element (any descendant for a ``//`` child); the anchor holding is the match.
The subtree below a column takes the columns right after it, its children's subtrees one
after the other, the smallest first (so the children stay close), and a column's children
are a mask over the next ``twig_width`` columns. As on a path, the ``descendant`` flag of the
column before a step says that step's axis is ``//``.

Nested paths are taken under ``and`` only (``/a/b[c and .//d]/e``); an ``or`` or ``not`` over a
nested path is refused with that reason, as are children spread over more columns than the
twig width."""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

from .compiler import _conjuncts
from .slots import step_chain
from .xpath import Query, RelativePath, Step, leaves

__all__ = ["TwigNode", "twig_nodes", "twig_anchor", "children_span"]


@dataclass(frozen=True)
class TwigNode:
    """One column of a twig: its ``step`` (name test, axis, the predicates a slot chain
    decides) and its ``children``, as offsets from its own column (empty above the anchor)."""
    step: Step
    children: tuple[int, ...] = ()

    @property
    def mask(self) -> int:
        """The children as a mask over the next columns: bit ``i`` for offset ``i + 1``."""
        return sum(1 << (offset - 1) for offset in self.children)


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
        branches = [steps[1:], *branches]
    subtrees = sorted((_subtree(b) for b in branches), key=len)
    offsets, at = [], 1
    for subtree in subtrees:
        offsets.append(at)
        at += len(subtree)
    root = TwigNode(Step(steps[0].axis, steps[0].name, kept), tuple(offsets))
    return (root, *(node for subtree in subtrees for node in subtree))


def _split(step: Step) -> tuple[tuple, list[tuple]]:
    """A step's predicates as (the conditions without nested paths, the nested paths' steps);
    ValueError for a nested path under ``or`` or ``not``."""
    kept, branches = [], []
    for condition in (c for p in step.predicates for c in _conjuncts(p)):
        if isinstance(condition, RelativePath):
            branches.append(condition.steps)
        elif any(isinstance(leaf, RelativePath) for leaf in leaves(condition)):
            raise ValueError(f"step {step.name!r}: split nodes take nested paths under 'and' "
                             f"only, not under 'or' or 'not'")
        else:
            kept.append(condition)
    return tuple(kept), branches
