"""The reference filter: the paper's event-level stack algorithm (§4), the oracle for every engine.

Each query ``q`` with ``n`` steps owns a *path-specific stack* of ``n + 1`` binary columns: column 0
is the virtual root column, column ``j`` stands for step ``j``. Row ``L`` of the stack belongs to
document level ``L`` (level 0 is the document itself, the root element is level 1). Bit ``j`` of row
``L`` says: steps ``1..j`` match a chain of elements ending at level ``L``, or, if step ``j + 1`` is
``//``, ending at some level ``<= L`` on the current path.

On ``open(tag)`` a new row is pushed, computed from the row below it::

    new[j] = old[j-1] and step j accepts tag          (the 1 moves diagonally)
           or old[j] and step j+1 is '//'             (the 1 also moves vertically)

``close`` pops a row. A 1 in the last column means the query matched the document.

Here every query's row is a bit field in one Python integer, so one push computes every column of
every query at once, as the hardware does. This module shares no code with the compiler or the
model: it is built directly from the parsed queries, without any column optimization.

Predicates are evaluated when the step's element is opened (:mod:`xpfilt.software.predicates`): attribute
conditions from its attributes, ``text()`` from its text node children, which the filter looks up
in a first pass over the document (it is an oracle, not a streaming engine), ``position()`` from
its earlier siblings, nested paths (twigs) from its subtree. A profile that combines paths with ``and``/``or``/``not`` is the
combination of its paths' answers (:class:`xpfilt.lang.profiles.ProfilePaths`).
"""

from __future__ import annotations

from collections import defaultdict
from typing import Iterable, Sequence, Union

from xpfilt.lang.profiles import ProfilePaths
from xpfilt.lang.xpath import Axis, Query
from xpfilt.software.events import Document, Event, EventKind, parse_events
from xpfilt.software.predicates import Positions, first_pass, needs_text, needs_tree

__all__ = ["ReferenceFilter", "reference_filter"]


class ReferenceFilter:
    """Filters documents against a fixed list of queries; results are 0-based query positions."""

    def __init__(self, queries: Sequence[Query]):
        self.queries = tuple(queries)
        self._profiles = ProfilePaths(self.queries)
        self._init = 0  # row for level 0: column 0 of every query
        self._descend = 0  # bit j set when step j+1 is '//'
        self._wild = 0  # bits of '*' steps
        self._final = 0  # last column of every query
        self._final_bits: list[tuple[int, int]] = []  # (bit, query position)
        named: dict[str, int] = defaultdict(int)
        # tag (or '*') -> [(bit, step)] for steps with predicates
        self._guarded: dict[str, list] = defaultdict(list)
        offset = 0
        for position, query in enumerate(self._profiles.paths):
            self._init |= 1 << offset
            for j, step in enumerate(query.steps, start=1):
                bit = 1 << (offset + j)
                if step.axis is Axis.DESCENDANT:
                    self._descend |= bit >> 1
                if step.is_wildcard:
                    self._wild |= bit
                else:
                    named[step.name] |= bit
                if step.predicates:
                    self._guarded[step.name].append((bit, step))
            last = offset + len(query.steps)
            self._final |= 1 << last
            self._final_bits.append((last, position))
            offset = last + 1
        # what a tag lets through: its own steps plus every wildcard step
        self._accept = {tag: bits | self._wild for tag, bits in named.items()}
        guarded_steps = [step for steps in self._guarded.values() for _bit, step in steps]
        self._needs_text = needs_text(guarded_steps)
        self._needs_tree = needs_tree(guarded_steps)
        self._positional = [step for step in guarded_steps if step.uses_position]

    def filter_events(self, events: Iterable[Event]) -> frozenset[int]:
        """Positions (0-based) of the queries that select at least one node of the document."""
        events, texts, nodes = first_pass(events, self._needs_text, self._needs_tree)
        positions = Positions(self._positional)
        stack = [self._init]
        matched = 0
        descend, wild, accept, guarded = self._descend, self._wild, self._accept, self._guarded
        for index, (kind, name, value) in enumerate(events):
            if kind is EventKind.OPEN:
                mask = accept.get(name, wild)
                if guarded:
                    element_texts, node = texts.get(index, ()), nodes.get(index)
                    if positions:
                        positions.open(name, value, element_texts, node)
                    mask = self._apply_predicates(mask, name, value, element_texts, node, positions)
                top = stack[-1]
                row = ((top << 1) & mask) | (top & descend)
                stack.append(row)
                matched |= row
            elif kind is EventKind.CLOSE:
                stack.pop()
                if positions:
                    positions.close()
        matched &= self._final
        return frozenset(
            self._profiles.answer(
                position for bit, position in self._final_bits if matched >> bit & 1
            )
        )

    def filter(self, document: Union[Document, bytes]) -> frozenset[int]:
        return self.filter_events(parse_events(document))

    def _apply_predicates(self, mask, name, attrs, texts, node, positions: Positions) -> int:
        outcome: dict = {}  # this element's answer per predicate list (by identity)
        for tag in (name, "*"):
            for bit, step in self._guarded.get(tag, ()):
                if mask & bit:
                    key = id(step) if step.uses_position else id(step.predicates)
                    holds = outcome.get(key)
                    if holds is None:
                        holds = outcome[key] = positions.holds(step, attrs, texts, node)
                    if not holds:
                        mask &= ~bit
        return mask


def reference_filter(queries: Sequence[Query], document: Union[Document, bytes]) -> frozenset[int]:
    """Positions of ``queries`` that match ``document`` (see :class:`ReferenceFilter`)."""
    return ReferenceFilter(queries).filter(document)
