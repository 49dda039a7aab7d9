"""Step predicates evaluated on a streamed element: the one definition the software engines
(:mod:`xpfilt.reference`, :mod:`xpfilt.fast`) share.

An element is judged when it opens, from its attributes and its text-node children (which a first
pass over the document finds: :func:`child_texts`). ``position()`` also needs the element's
earlier siblings: :class:`Positions` counts them as the document streams, per step and per
predicate (the k-th predicate of a step counts the siblings that passed the step's name test and
its predicates before the k-th, as XPath 1.0 does).
"""

from __future__ import annotations

from collections import defaultdict
from typing import Iterable, Optional, Sequence

from .events import Event, EventKind
from .xpath import (AttributeTarget, Exists, PositionTarget, Predicate, Step, TextTarget,
                    evaluate, leaves)

__all__ = ["child_texts", "condition_holds", "step_holds", "needs_text", "Positions"]


def child_texts(events: Sequence[Event]) -> dict[int, list[str]]:
    """For each OPEN event index, the text nodes that are direct children of that element."""
    texts: dict[int, list[str]] = defaultdict(list)
    open_indices: list[int] = []
    for index, (kind, _name, value) in enumerate(events):
        if kind is EventKind.OPEN:
            open_indices.append(index)
        elif kind is EventKind.CLOSE:
            open_indices.pop()
        elif open_indices:
            texts[open_indices[-1]].append(value)
    return texts


def needs_text(steps: Iterable[Step]) -> bool:
    """Some predicate of ``steps`` reads ``text()`` (the document needs a first pass)."""
    return any(isinstance(leaf.target, TextTarget)
               for step in steps for p in step.predicates for leaf in leaves(p))


def condition_holds(condition, attrs: dict, texts: Sequence[str],
                    position: Optional[int] = None) -> bool:
    """Whether ``condition`` (a step predicate) holds for an element with attributes ``attrs``,
    text children ``texts`` and sibling position ``position``."""
    def leaf(node) -> bool:
        target = node.target
        if isinstance(target, AttributeTarget):
            value = attrs.get(target.name)
            if isinstance(node, Exists):
                return value is not None
            return node.holds(() if value is None else (value,))
        if isinstance(target, TextTarget):
            return bool(texts) if isinstance(node, Exists) else node.holds(texts)
        if isinstance(target, PositionTarget) and isinstance(node, Predicate):
            if position is None:
                raise ValueError("position() needs the element's position (see Positions)")
            return node.holds_number(position)
        raise TypeError(f"not a predicate leaf: {node!r}")
    return evaluate(condition, leaf)


def step_holds(step: Step, attrs: dict, texts: Sequence[str]) -> bool:
    """All predicates of ``step`` (one without ``position()``) hold for the element."""
    return all(condition_holds(p, attrs, texts) for p in step.predicates)


class Positions:
    """The predicates of the steps that call ``position()``, judged on each element as it opens
    (:meth:`open`; :meth:`close` at its end): :meth:`holds` then answers for every step."""

    def __init__(self, steps: Iterable[Step]):
        self.by_name: dict[str, list[Step]] = defaultdict(list)
        for step in dict.fromkeys(s for s in steps if s.uses_position):
            self.by_name[step.name].append(step)
        self.levels: list[dict] = [{}]     # per open element: {(step, k): children counted}
        self.passed: dict[Step, bool] = {}  # the element just opened

    def __bool__(self) -> bool:
        return bool(self.by_name)

    def open(self, name: str, attrs: dict, texts: Sequence[str]) -> None:
        counts = self.levels[-1]
        passed = {}
        for step in (*self.by_name.get(name, ()), *self.by_name.get("*", ())):
            ok = True
            for k, predicate in enumerate(step.predicates):
                key = (step, k)
                counts[key] = position = counts.get(key, 0) + 1
                if not condition_holds(predicate, attrs, texts, position):
                    ok = False
                    break
            passed[step] = ok
        self.passed = passed
        self.levels.append({})

    def close(self) -> None:
        self.levels.pop()

    def holds(self, step: Step, attrs: dict, texts: Sequence[str]) -> bool:
        """Whether ``step``'s predicates hold for the element opened last."""
        if step.uses_position:
            return self.passed[step]
        return step_holds(step, attrs, texts)
