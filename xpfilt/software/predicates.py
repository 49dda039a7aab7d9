"""Step predicates evaluated on a streamed element: the one definition the software engines
(:mod:`xpfilt.software.reference`, :mod:`xpfilt.software.fast`) share.

An element is judged when it opens, from its attributes and its text-node children (which a first
pass over the document finds: :func:`first_pass`). ``position()`` also needs the element's
earlier siblings: :class:`Positions` counts them as the document streams, per step and per
predicate (the k-th predicate of a step counts the siblings that passed the step's name test and
its predicates before the k-th, as XPath 1.0 does). The first pass builds the document's
:class:`Node` tree (:func:`element_nodes`): ``text()`` reads a node's text children, a nested
path (a twig branch) is evaluated on its subtree.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Iterable, Optional, Sequence

from xpfilt.lang.xpath import (
    AttributeTarget,
    Axis,
    Exists,
    PositionTarget,
    Predicate,
    RelativePath,
    Step,
    TextTarget,
    evaluate,
    leaves,
)
from xpfilt.software.events import Event, EventKind

__all__ = [
    "condition_holds",
    "step_holds",
    "needs_text",
    "needs_tree",
    "Positions",
    "Node",
    "element_nodes",
    "first_pass",
]


class Node:
    """An element of the document tree: name, attributes, text-node children, element
    children (in document order), and the nested paths already decided from it."""

    __slots__ = ("name", "attrs", "texts", "children", "branches")

    def __init__(self, name: str, attrs: dict):
        self.name, self.attrs = name, attrs
        self.texts: list[str] = []
        self.children: list[Node] = []
        self.branches: dict[int, bool] = {}  # id of a RelativePath -> it holds here


def element_nodes(events: Sequence[Event]) -> dict[int, Node]:
    """The document's tree, as the :class:`Node` of each OPEN event index."""
    nodes: dict[int, Node] = {}
    stack: list[Node] = []
    for index, (kind, name, value) in enumerate(events):
        if kind is EventKind.OPEN:
            node = nodes[index] = Node(name, value)
            if stack:
                stack[-1].children.append(node)
            stack.append(node)
        elif kind is EventKind.CLOSE:
            stack.pop()
        elif stack:
            stack[-1].texts.append(value)
    return nodes


def first_pass(
    events: Iterable[Event], text: bool, tree: bool
) -> tuple[Iterable[Event], dict[int, list[str]], dict[int, Node]]:
    """What the predicates must know before the stream: the events (a list if read twice), the
    text children of each OPEN index (if ``text`` or ``tree``) and its :class:`Node` (if
    ``tree``)."""
    if not (text or tree):
        return events, {}, {}
    events = list(events)
    nodes = element_nodes(events)
    return events, {index: node.texts for index, node in nodes.items()}, nodes if tree else {}


def needs_tree(steps: Iterable[Step]) -> bool:
    """Some predicate of ``steps`` holds a nested path (the document needs its tree)."""
    return any(step.has_nested_paths for step in steps)


def _select(contexts: list[Node], step: Step) -> list[Node]:
    """The nodes ``step`` selects from ``contexts`` (XPath's node-set, in document order)."""
    out: list[Node] = []
    seen: set[int] = set()
    for context in contexts:
        parents = [context] if step.axis is Axis.CHILD else _self_and_descendants(context)
        for parent in parents:
            chosen = [c for c in parent.children if step.matches_name(c.name)]
            for predicate in step.predicates:
                chosen = [
                    c
                    for position, c in enumerate(chosen, start=1)
                    if condition_holds(predicate, c.attrs, c.texts, position, c)
                ]
            for node in chosen:
                if id(node) not in seen:
                    seen.add(id(node))
                    out.append(node)
    return out


def _self_and_descendants(node: Node) -> list[Node]:
    out, todo = [], [node]
    while todo:
        current = todo.pop()
        out.append(current)
        todo.extend(reversed(current.children))
    return out


def _branch_holds(path: RelativePath, node: Node) -> bool:
    known = node.branches.get(id(path))  # by identity: hashing a nested path is costly
    if known is None:
        contexts = [node]
        for step in path.steps:
            contexts = _select(contexts, step)
            if not contexts:
                break
        known = node.branches[id(path)] = bool(contexts)
    return known


def needs_text(steps: Iterable[Step]) -> bool:
    """Some predicate of ``steps`` reads ``text()`` (the document needs a first pass)."""
    return any(
        isinstance(getattr(leaf, "target", None), TextTarget)
        for step in steps
        for p in step.predicates
        for leaf in leaves(p)
    )


def condition_holds(
    condition,
    attrs: dict,
    texts: Sequence[str],
    position: Optional[int] = None,
    element: Optional[Node] = None,
) -> bool:
    """Whether ``condition`` (a step predicate) holds for an element with attributes ``attrs``,
    text children ``texts``, sibling position ``position`` and tree node ``element`` (needed
    by nested paths only)."""
    if type(condition) is Predicate and type(condition.target) is AttributeTarget:
        value = attrs.get(condition.target.name)  # the common case, without a closure
        return value is not None and condition.holds((value,))

    def leaf(node) -> bool:
        if isinstance(node, RelativePath):
            if element is None:
                raise ValueError("a nested path needs the element's subtree (see element_nodes)")
            return _branch_holds(node, element)
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


def step_holds(
    step: Step, attrs: dict, texts: Sequence[str], element: Optional[Node] = None
) -> bool:
    """All predicates of ``step`` (one without ``position()``) hold for the element."""
    return all(condition_holds(p, attrs, texts, None, element) for p in step.predicates)


class Positions:
    """The predicates of the steps that call ``position()``, judged on each element as it opens
    (:meth:`open`; :meth:`close` at its end): :meth:`holds` then answers for every step."""

    def __init__(self, steps: Iterable[Step]):
        self.by_name: dict[str, list[Step]] = defaultdict(list)
        for step in dict.fromkeys(s for s in steps if s.uses_position):
            self.by_name[step.name].append(step)
        self.levels: list[dict] = [{}]  # per open element: {(step, k): children counted}
        self.passed: dict[Step, bool] = {}  # the element just opened

    def __bool__(self) -> bool:
        return bool(self.by_name)

    def open(
        self, name: str, attrs: dict, texts: Sequence[str], element: Optional[Node] = None
    ) -> None:
        counts = self.levels[-1]
        passed = {}
        for step in (*self.by_name.get(name, ()), *self.by_name.get("*", ())):
            ok = True
            for k, predicate in enumerate(step.predicates):
                key = (step, k)
                counts[key] = position = counts.get(key, 0) + 1
                if not condition_holds(predicate, attrs, texts, position, element):
                    ok = False
                    break
            passed[step] = ok
        self.passed = passed
        self.levels.append({})

    def close(self) -> None:
        self.levels.pop()

    def holds(
        self, step: Step, attrs: dict, texts: Sequence[str], element: Optional[Node] = None
    ) -> bool:
        """Whether ``step``'s predicates hold for the element opened last."""
        if step.uses_position:
            return self.passed[step]
        return step_holds(step, attrs, texts, element)
