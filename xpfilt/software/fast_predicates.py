"""Step predicates compiled for the fast engine (:mod:`xpfilt.software.fast`): the same answers as
:func:`xpfilt.software.predicates.condition_holds` (the oracle), computed with less work.

Each distinct predicate list (equal lists share one) becomes one *test*, a closure
``test(attrs, texts, node) -> bool`` built once from the condition tree, so an element pays no
tree walk or type dispatch. A comparison leaf remembers its outcome per string value (documents
repeat their values: ``@class='x'``, ``text() > 5``) and asks
:meth:`xpfilt.lang.xpath.Predicate.holds` only for a value it has not seen, so the XPath comparison
rules keep their one definition. A nested path (a twig branch) is decided by existence with an
early exit, never building the node-sets the reference's :func:`xpfilt.software.predicates._select`
lists; one whose steps call ``position()`` is left to the reference evaluation, which counts
siblings.
"""

from __future__ import annotations

from typing import Callable, Optional, Sequence

from xpfilt.lang.xpath import (
    And,
    AttributeTarget,
    Axis,
    Exists,
    Not,
    Or,
    Predicate,
    RelativePath,
    TextTarget,
)
from xpfilt.software.predicates import Node, _branch_holds

__all__ = ["Test", "PredicateTests", "VALUE_MEMO_SIZE", "TEXT", "CHILDREN", "CHILD", "needed"]

#: ``test(attrs, texts, node)``: all predicates of a step hold for the element.
Test = Callable[[dict, Sequence[str], Node], bool]

#: Comparison outcomes remembered by default, all leaves together (and per value table of the
#: engine): past it they are all forgotten, which bounds memory on documents whose values
#: never repeat, whatever the number of queries.
VALUE_MEMO_SIZE = 1 << 16


#: What :func:`needed` answers besides an attribute name (none is a valid XML name): a text
#: child, an element child, and (``CHILD + name``) a child element named ``name``.
TEXT, CHILDREN, CHILD = "text()", "*", "/"


def needed(predicates: tuple) -> Optional[str]:
    """Something an element must have for all of ``predicates`` to hold (so an element without
    it fails them unevaluated): an attribute name, :data:`TEXT` (a text child),
    :data:`CHILDREN` (an element child) or ``CHILD + name`` (a child named ``name``); None if
    nothing is. An attribute is preferred, then a named child (the rarer things)."""
    return _needed(And(tuple(predicates)))


def _needed(condition) -> Optional[str]:
    if isinstance(condition, And):
        found = [n for n in map(_needed, condition.operands) if n is not None]
        return min(found, key=_rarity, default=None)
    if isinstance(condition, Or):
        found = {_needed(o) for o in condition.operands}
        return found.pop() if len(found) == 1 else None
    if isinstance(condition, RelativePath):
        first = condition.steps[0]
        if first.axis is Axis.CHILD and not first.is_wildcard:
            return CHILD + first.name
        return CHILDREN
    if isinstance(condition, (Predicate, Exists)):
        target = condition.target
        if isinstance(target, AttributeTarget):
            return target.name
        if isinstance(target, TextTarget):
            return TEXT
    return None  # not(...), position()


def _rarity(need: str) -> int:
    if need in (TEXT, CHILDREN):
        return 2 + (need == CHILDREN)
    return need.startswith(CHILD)


def _always(_attrs, _texts, _node) -> bool:
    return True


class PredicateTests:
    """Compiles step predicate lists into :data:`Test` closures, one per distinct list and one
    per distinct comparison leaf (:meth:`test`). Positional predicates are not compiled (the
    engine asks :class:`xpfilt.software.predicates.Positions`). ``value_memo_size``: outcomes the
    comparison leaves remember together before they forget them all."""

    def __init__(self, value_memo_size: int = VALUE_MEMO_SIZE) -> None:
        self.value_memo_size = value_memo_size
        self._lists: dict[tuple, Test] = {}
        self._leaves: dict[object, Test] = {}
        self._paths: dict[RelativePath, Test] = {}
        self._values: dict[Predicate, Callable[[str], bool]] = {}  # comparison -> value test
        self._names_of: Node = None  # the last node :meth:`_names` was asked about
        self._known_names: tuple = ()
        self._memos: list[dict] = []  # each comparison leaf's value -> outcome
        self._remembered = 0  # outcomes in them

    def test(self, predicates: tuple) -> Test:
        """The test of a step's predicate list (none may call ``position()``)."""
        found = self._lists.get(predicates)
        if found is None:
            found = self._lists[predicates] = self._all([self._condition(p) for p in predicates])
        return found

    def comparison(self, predicates: tuple) -> Optional[Callable[[str], bool]]:
        """If ``predicates`` is one comparison of an attribute or of ``text()``: whether one
        value (the attribute's, or one text child's) satisfies it. Else None."""
        if len(predicates) != 1:
            return None
        self.test(predicates)
        return self._values.get(predicates[0])

    @staticmethod
    def _all(tests: list) -> Test:
        if not tests:
            return _always
        if len(tests) == 1:
            return tests[0]
        if len(tests) == 2:
            first, second = tests

            def both(attrs, texts, node):
                return first(attrs, texts, node) and second(attrs, texts, node)

            return both
        tests = tuple(tests)

        def every(attrs, texts, node):
            for t in tests:
                if not t(attrs, texts, node):
                    return False
            return True

        return every

    def _condition(self, condition) -> Test:
        if isinstance(condition, And):
            return self._all([self._condition(o) for o in condition.operands])
        if isinstance(condition, Or):
            operands = tuple(self._condition(o) for o in condition.operands)

            def some(attrs, texts, node):
                for t in operands:
                    if t(attrs, texts, node):
                        return True
                return False

            return some
        if isinstance(condition, Not):
            operand = self._condition(condition.operand)
            return lambda attrs, texts, node: not operand(attrs, texts, node)
        if isinstance(condition, RelativePath):
            found = self._paths.get(condition)
            if found is None:
                found = self._paths[condition] = self._path(condition)
            return found
        found = self._leaves.get(condition)
        if found is None:
            found = self._leaves[condition] = self._leaf(condition)
        return found

    def _leaf(self, leaf) -> Test:
        target = leaf.target
        if isinstance(leaf, Exists):
            if isinstance(target, AttributeTarget):
                name = target.name
                return lambda attrs, texts, node: name in attrs
            return lambda attrs, texts, node: bool(texts)
        if not isinstance(leaf, Predicate) or not isinstance(target, (AttributeTarget, TextTarget)):
            raise TypeError(f"not a compilable predicate leaf: {leaf!r}")
        memo: dict[str, bool] = {}
        self._memos.append(memo)
        holds = leaf.holds

        def value_holds(value: str) -> bool:
            known = memo.get(value)
            if known is None:
                self._remember()
                known = memo[value] = holds((value,))
            return known

        self._values[leaf] = value_holds

        if isinstance(target, AttributeTarget):
            name = target.name

            def attribute(attrs, texts, node):
                value = attrs.get(name)
                return value is not None and value_holds(value)

            return attribute

        def text(attrs, texts, node):
            for value in texts:
                if value_holds(value):
                    return True
            return False

        return text

    def _remember(self) -> None:
        """Counts one more remembered outcome; past the budget, forgets them all."""
        self._remembered += 1
        if self._remembered > self.value_memo_size:
            for memo in self._memos:
                memo.clear()
            self._remembered = 1

    def _path(self, path: RelativePath) -> Test:
        """A nested path: some node it selects from the element exists. Before any walk, the
        names its steps test must be among the element's descendants' (and the first step's,
        if a child step, among its children's): :meth:`_names`, once per element."""
        if any(step.uses_position for step in path.steps):
            # sibling positions need the node-sets: the reference evaluation
            return lambda attrs, texts, node: _branch_holds(path, node)
        steps = tuple(
            (
                step.axis is Axis.DESCENDANT,
                None if step.is_wildcard else step.name,
                self.test(step.predicates) if step.predicates else None,
            )
            for step in path.steps
        )
        last = len(steps) - 1
        first_descendant, first_name, _ = steps[0]
        first_child = None if first_descendant else first_name
        required = frozenset(name for _, name, _ in steps if name is not None)
        # one step without predicates: the names decide (``c``, ``.//c``, ``*``)
        decided_by_names = len(steps) == 1 and steps[0][2] is None
        names = self._names

        def exists(index: int, context: Node) -> bool:
            descendant, name, test = steps[index]
            todo = list(context.children)
            while todo:
                child = todo.pop()
                if (
                    (name is None or child.name == name)
                    and (test is None or test(child.attrs, child.texts, child))
                    and (index == last or exists(index + 1, child))
                ):
                    return True
                if descendant:
                    todo.extend(child.children)
            return False

        def holds(attrs, texts, node):
            if node is None:
                raise ValueError("a nested path needs the element's subtree (see element_nodes)")
            if not node.children:
                return False
            children, descendants = names(node)
            if first_child is not None and first_child not in children:
                return False
            return required <= descendants and (decided_by_names or exists(0, node))

        return holds

    def _names(self, node: Node) -> tuple[set, set]:
        """The names of ``node``'s children and of its descendants (kept for the last node
        asked: an element's tests are run one after another)."""
        if self._names_of is not node:
            children = {child.name for child in node.children}
            descendants = set(children)
            todo = [child for child in node.children if child.children]
            while todo:
                current = todo.pop()
                for child in current.children:
                    descendants.add(child.name)
                    if child.children:
                        todo.append(child)
            self._names_of, self._known_names = node, (children, descendants)
        return self._known_names
