"""The tables that let the compiled loop run query sets with predicates
(:func:`xpfilt.software.compiled.scan_tree`), kept by :class:`xpfilt.software.fast.FastFilter`.

A DFA transition through guarded steps (``trans[state, tag] = -2 - g``) is *guard* ``g``: the
candidate steps whose predicates decide it, and what those predicates read of an element --
the attributes they name, its text children if they read ``text()``, the nested paths (twig
branches) they hold. The loop writes an element's *key* (those raw attribute values and
texts, one bit per nested path) and looks it up in a hash table of keys seen before -> next
DFA state. A key not there comes back here: :meth:`GuardTables.decode` turns it into the
values expat would give (by parsing them with expat, so references, CDATA and line ends mean
the same), the engine decides the transition with the same tests as its Python path, and
:meth:`GuardTables.insert` adds the key.

Nested paths are evaluated by the loop's first pass, bottom-up: one bit per step of each
distinct nested path (a *slot*), per element (see ``_close_element``). So only nested paths
whose steps have no predicates of their own are compiled; :func:`compilable` says whether a
query set's guards are all of that kind (and none calls ``position()``, which needs sibling
counts): else the engine keeps the Python path.
"""

from __future__ import annotations

from typing import Sequence

import numpy as np

from xpfilt.lang.xpath import (
    AttributeTarget,
    Axis,
    Exists,
    Predicate,
    RelativePath,
    Step,
    TextTarget,
    leaves,
)
from xpfilt.software.events import Document, EventKind, parse_events
from xpfilt.software.predicates import Node, step_holds

__all__ = ["compilable", "nested_paths", "GuardTables", "Guard"]


def nested_paths(steps: Sequence[Step]) -> list[RelativePath]:
    """The nested paths the predicates of ``steps`` hold (as leaves), in order, repeated."""
    return [
        leaf
        for step in steps
        for predicate in step.predicates
        for leaf in leaves(predicate)
        if isinstance(leaf, RelativePath)
    ]


def compilable(steps: Sequence[Step]) -> bool:
    """Whether the compiled loop can decide the guarded steps ``steps``: none calls
    ``position()``, and no step of a nested path has predicates."""
    if any(step.uses_position for step in steps):
        return False
    return not any(s.predicates for path in nested_paths(steps) for s in path.steps)


class Guard:
    """One guarded transition of the DFA: from ``top`` on tag id ``tag`` (element ``name``),
    its unguarded part (``kept``, ``targets``), the ``candidates`` (step, target), what their
    predicates read (``attributes``, ``text``, ``paths``: nested path numbers and, per path
    object, its number) and the outcomes seen (which candidates passed -> DFA state)."""

    __slots__ = (
        "top",
        "tag",
        "name",
        "kept",
        "targets",
        "candidates",
        "attributes",
        "text",
        "paths",
        "path_of",
        "outcomes",
    )

    def __init__(self, top, tag, name, kept, targets, candidates, path_number: dict):
        self.top, self.tag, self.name = top, tag, name
        self.kept, self.targets, self.candidates = kept, targets, candidates
        attributes: dict[str, None] = {}
        self.text = False
        objects = []
        for step, _ in candidates:
            for predicate in step.predicates:
                for leaf in leaves(predicate):
                    target = getattr(leaf, "target", None)
                    if isinstance(leaf, (Predicate, Exists)):
                        if isinstance(target, AttributeTarget):
                            attributes[target.name] = None
                        elif isinstance(target, TextTarget):
                            self.text = True
                    elif isinstance(leaf, RelativePath):
                        objects.append(leaf)
        self.attributes = list(attributes)
        numbers = list(dict.fromkeys(path_number[path] for path in objects))
        self.paths = numbers
        index = {number: i for i, number in enumerate(numbers)}
        # _branch_holds reads a node's known branches by the path object's identity
        self.path_of = [(id(path), index[path_number[path]]) for path in objects]
        self.outcomes: dict[tuple, int] = {}

    def decide(self, attrs: dict, texts: list, bits: bytes) -> tuple:
        """Which candidates pass on an element with ``attrs``, ``texts`` and nested-path bits
        ``bits`` (one byte per :attr:`paths`): the reference's :func:`step_holds`, its
        nested paths answered from the bits."""
        node = Node(self.name, attrs)
        node.texts = texts
        node.branches = {key: bits[i] == 17 for key, i in self.path_of}
        return tuple(step_holds(step, attrs, texts, node) for step, _ in self.candidates)


class GuardTables:
    """The nested-path slots of a query set (``masks``, per tag id of ``tag_ids``), the guards
    met so far and the memo of keys, as the arrays :func:`scan_tree` reads."""

    def __init__(self, guarded_steps: Sequence[Step], tag_ids: dict, width: int):
        paths = list(dict.fromkeys(nested_paths(guarded_steps)))
        self.path_number = {path: i for i, path in enumerate(paths)}
        self.first_slot = []
        slots: list[Step] = []
        last = []
        for path in paths:
            self.first_slot.append(len(slots))
            slots.extend(path.steps)
            last.append(len(slots) - 1)
        self.words = (len(slots) + 63) // 64
        masks = np.zeros((width + 3, self.words), np.uint64)
        for i, step in enumerate(slots):
            word, bit = divmod(i, 64)
            one = np.uint64(1 << bit)
            if step.is_wildcard:
                masks[:width, word] |= one
            elif step.name in tag_ids:
                masks[tag_ids[step.name], word] |= one
            masks[width if step.axis is Axis.CHILD else width + 1, word] |= one
        for i in last:
            masks[width + 2, i // 64] |= np.uint64(1 << (i % 64))
        self.masks = masks
        self.reset()

    def reset(self) -> None:
        """Forgets the guards and the keys (the engine's memo is dropped)."""
        self.guards: list[Guard] = []
        # the guard arrays the loop reads, grown in place as guards come (doubling: a query
        # set meets thousands of guards one miss at a time, and rebuilding them all at each
        # made the misses quadratic), and how much of each is used
        self._guard_rows = np.zeros((64, 5), np.int64)
        self._gattr = np.zeros((64, 2), np.int64)
        self._names = np.zeros(256, np.uint8)
        self._gpath = np.zeros(64, np.int64)
        self._used = [0, 0, 0, 0]  # guards, attributes, name bytes, path slots
        self.gslots = np.full(1024, -1, np.int64)
        self.ents = np.zeros((256, 4), np.int64)
        self.keys = np.zeros(4096, np.uint8)
        self.entries = 0
        self.key_bytes = 0
        #: the longest part of a key besides the raw bytes (attribute and path markers)
        self.key_overhead = 0

    def add(self, top: int, tag: int, name: str, kept, targets, candidates) -> int:
        """A new guard; returns its number."""
        guard = Guard(top, tag, name, kept, targets, candidates, self.path_number)
        self.guards.append(guard)
        self._append_arrays(guard)
        self.key_overhead = max(self.key_overhead, 8 + 2 * len(guard.attributes) + len(guard.paths))
        return len(self.guards) - 1

    def _append_arrays(self, guard: Guard) -> None:
        g, attributes, name_bytes, paths = self._used
        names = [attribute.encode() for attribute in guard.attributes]
        slots = [self.first_slot[number] for number in guard.paths]
        self._guard_rows = _room(self._guard_rows, g + 1)
        self._gattr = _room(self._gattr, attributes + len(names))
        self._names = _room(self._names, name_bytes + sum(map(len, names)))
        self._gpath = _room(self._gpath, paths + len(slots))
        row = self._guard_rows[g]
        row[0], row[2], row[3] = attributes, guard.text, paths
        for encoded in names:
            self._gattr[attributes] = (name_bytes, len(encoded))
            self._names[name_bytes : name_bytes + len(encoded)] = np.frombuffer(encoded, np.uint8)
            attributes += 1
            name_bytes += len(encoded)
        self._gpath[paths : paths + len(slots)] = slots
        paths += len(slots)
        row[1], row[4] = attributes, paths
        self._used = [g + 1, attributes, name_bytes, paths]

    def arrays(self) -> tuple:
        """``(guards, gattr, gattr_names, gpath)`` for the loop: views of the arrays in use
        (at least one entry each, zeros while there is none)."""
        g, attributes, name_bytes, paths = (max(1, n) for n in self._used)
        return (
            self._guard_rows[:g],
            self._gattr[:attributes],
            self._names[:name_bytes],
            self._gpath[:paths],
        )

    def decode(self, guard: Guard, key: bytes) -> tuple[dict, list, bytes]:
        """The attributes, text children and nested-path bits a key holds (see
        ``_guard_key``), the values as expat gives them."""
        at = 4
        attrs = {}
        for name in guard.attributes:
            if key[at] == 1:
                end = key.index(0, at + 1)
                attrs[name] = _attribute_value(key[at + 1 : end])
                at = end + 1
            else:
                at += 1
        texts: list[str] = []
        if guard.text:
            while key[at] == 3:
                end = key.index(0, at + 1)
                texts.extend(_text_values(key[at + 1 : end]))
                at = end + 1
            at += 1
        return attrs, texts, key[at:]

    def insert(self, key: bytes, h: int, nxt: int) -> None:
        """Adds the key ``key`` (hash ``h``, as the loop computed it) -> DFA state ``nxt``."""
        n, used = self.entries, self.key_bytes
        if used + len(key) > len(self.keys):
            grown = np.zeros(2 * (used + len(key)), np.uint8)
            grown[:used] = self.keys[:used]
            self.keys = grown
        self.keys[used : used + len(key)] = np.frombuffer(key, np.uint8)
        if n == len(self.ents):
            grown = np.zeros((2 * n, 4), np.int64)
            grown[:n] = self.ents
            self.ents = grown
        self.ents[n] = (used, len(key), nxt, h)
        self.entries, self.key_bytes = n + 1, used + len(key)
        if 2 * self.entries > len(self.gslots):
            self.gslots = np.full(2 * len(self.gslots), -1, np.int64)
            for j in range(n + 1):
                self._place(j)
        else:
            self._place(n)

    def _place(self, j: int) -> None:
        slots = self.gslots
        mask = len(slots) - 1
        s = int(self.ents[j, 3]) & mask
        while slots[s] >= 0:
            s = (s + 1) & mask
        slots[s] = j


def _attribute_value(raw: bytes) -> str:
    """An attribute's value from its raw bytes, as expat normalizes it."""
    quote = b"'" if b'"' in raw else b'"'
    events = parse_events(Document("<key>", b"<a a=" + quote + raw + quote + b"/>"))
    return events[0].value["a"]


def _text_values(raw: bytes) -> list[str]:
    """The text node(s) of one raw run of character data (none if it has no character)."""
    events = parse_events(Document("<key>", b"<a>" + raw + b"</a>"))
    return [value for kind, _, value in events if kind is EventKind.TEXT]


def _room(array: np.ndarray, needed: int) -> np.ndarray:
    """``array``, or a copy twice as long (or as ``needed``) when it holds fewer than
    ``needed`` rows."""
    if len(array) >= needed:
        return array
    grown = np.zeros((max(needed, 2 * len(array)),) + array.shape[1:], array.dtype)
    grown[: len(array)] = array
    return grown
