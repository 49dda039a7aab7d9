"""The stacks of one cluster of a plan, evaluated per push/pop event (no clock).

:class:`ClusterStacks` keeps the cluster's packed stack rows as Python integers (bit ``c`` =
column ``c``) and applies the plan's node equations (see :mod:`xpfilt.compiler.custom`) on each push.
The cycle-accurate model calls it on the cycles where the front end emits an event; the plan
checks in the tests call it on expat's events. Only set bits are visited, so a push costs about
the number of active columns and firing nodes, not the size of the cluster.
Queries checked on pops (text() predicates, nested paths: ``QueryPlan.chain``) are checked by
:meth:`ClusterStacks.close` on each pop, with pending bits per open element, as
:mod:`xpfilt.hdl.stacks` describes; only the entries whose column the closing row holds (or
that need none) are evaluated. Combinations of paths: ``matches`` holds a flag per query and
per internal path (``Cluster.matchers``); :meth:`ClusterStacks.flags` combines them as the
hardware's capture sees them.
"""

from __future__ import annotations

from collections import defaultdict

from xpfilt.compiler.custom import Cluster, SourceKind, TwigChecks
from xpfilt.hwspec.conditions import Condition

__all__ = ["ClusterStacks"]


def _bits(x: int):
    while x:
        low = x & -x
        yield low.bit_length() - 1
        x ^= low


class ClusterStacks:
    """Push/pop/match state of one cluster. Tag ids are the plan's (0 = an unknown name)."""

    def __init__(self, cluster: Cluster, n_tags: int):
        """``n_tags``: the size of the plan's tag dictionary (ids 1..n_tags, 0 = unknown)."""
        self.cluster = cluster
        wild = 0
        accept = [0] * (n_tags + 1)
        self._from_column: dict[int, int] = defaultdict(int)  # column -> nodes
        self._from_column_tag: dict[tuple, int] = defaultdict(int)  # (column, tag) -> nodes
        self._level1 = self._any = 0
        self._parent_any: list[int] = [0] * (n_tags + 1)  # parent tag (0: any element)
        self._parent_l2: list[int] = [0] * (n_tags + 1)
        self._column_bit = []
        self._guards: dict[int, Condition] = {}  # node -> its guard (guarded nodes only)
        for k, node in enumerate(cluster.nodes):
            bit = 1 << k
            if not node.guard.always:
                self._guards[k] = node.guard
            if node.tag:
                accept[node.tag] |= bit
            else:
                wild |= bit
            src = node.source
            match src.kind:
                case SourceKind.LEVEL1:
                    self._level1 |= bit
                case SourceKind.ANY:
                    self._any |= bit
                case SourceKind.COLUMN if src.tag:
                    self._from_column_tag[(src.column, src.tag)] |= bit
                case SourceKind.COLUMN:
                    self._from_column[src.column] |= bit
                case SourceKind.PARENT:
                    (self._parent_l2 if src.level2 else self._parent_any)[src.tag] |= bit
                case _:
                    raise AssertionError(f"source kind must be a SourceKind, not {src.kind!r}")
            self._column_bit.append(1 << node.column if node.column >= 0 else 0)
        self._accept = [a | wild for a in accept]
        self._guarded = sum(1 << k for k in self._guards)
        self._self_loop = sum(1 << c for c, col in enumerate(cluster.columns) if col.self_loop)
        self._match_nodes = defaultdict(list)  # node -> flag positions in this cluster
        # twig checks on pops (TwigChecks): (readout position or -1, condition, pending bit or
        # -1), by their column (-1: every element)
        checks = TwigChecks.of(cluster)
        self._chains = bool(checks.anchors)
        self._entries: dict[int, list] = defaultdict(list)
        self._descendants = 0  # pending bits that pass on to the parent
        for p, (column, cond, descendant) in enumerate(checks.pending):
            self._entries[column].append((-1, cond, p))
            self._descendants |= descendant << p
        for i, column, cond in checks.anchors:
            self._entries[column].append((i, cond, -1))
        for i, q in enumerate(cluster.matchers):
            if q.combine is not None:
                continue
            if not q.chain:
                self._match_nodes[q.node].append(i)
        self._match_mask = sum(1 << k for k in self._match_nodes)
        # a combination's readout flag: its expression over its paths' flags (after the queries')
        self._combined = [
            (i, q.combine) for i, q in enumerate(cluster.queries) if q.combine is not None
        ]
        self._plain = sum(1 << i for i, q in enumerate(cluster.queries) if q.combine is None)
        self.reset()

    def reset(self) -> None:
        """Start a document: empty stacks, no matches."""
        self.stack = [0]  # stack[L] = row of level L; stack[0] is all zeros
        self.pending = [0]  # pending[L]: the text() chains' pending bits of level L
        self.matches = 0  # bit i: matcher i of the cluster (Cluster.matchers) matched

    def push(self, tag: int, parent: int, level: int, conds: int = 0) -> None:
        """An element with ``tag`` opens at ``level``; ``parent`` is its parent's tag (0 at the
        root or for an unknown name); ``conds``: its attribute condition bits (a guarded node
        fires only if its guard holds on them)."""
        top = self.stack[-1]
        source = self._any
        if level == 1:
            source |= self._level1
        else:
            source |= (
                self._parent_any[parent] | self._parent_any[0] if parent else self._parent_any[0]
            )
            if level == 2:
                source |= (
                    self._parent_l2[parent] | self._parent_l2[0] if parent else self._parent_l2[0]
                )
        for c in _bits(top):
            source |= self._from_column.get(c, 0)
            if parent:
                source |= self._from_column_tag.get((c, parent), 0)
        fires = self._accept[tag] & source
        if fires & self._guarded:
            for k in _bits(fires & self._guarded):
                if not self._guards[k].holds(conds):
                    fires &= ~(1 << k)
        row = top & self._self_loop
        column_bit = self._column_bit
        for k in _bits(fires):
            row |= column_bit[k]
        self.stack.append(row)
        if self._chains:
            self.pending.append(0)
        hits = fires & self._match_mask
        if hits:
            for k in _bits(hits):
                for i in self._match_nodes[k]:
                    self.matches |= 1 << i

    def close(self, conds: int = 0) -> None:
        """The element on top closes (before :meth:`pop`, or before a document end that shares
        the cycle); ``conds``: its text condition bits. Each twig entry holds at the closing
        element when its column is set in the element's row (or it has none) and its
        condition holds on ``conds``, the row and the element's pending bits (what held below
        it); the anchor's holding is a match, another entry's sets its pending bit in the
        parent, and a '//' entry's pending bit passes on to the parent too (see
        :mod:`xpfilt.hdl.stacks`)."""
        if not self._chains or len(self.stack) < 2:
            return
        row, mine = self.stack[-1], self.pending[-1]
        up = mine & self._descendants
        entries = self._entries
        for column in (-1, *_bits(row)):
            for i, cond, own in entries.get(column, ()):
                if cond.holds(conds, row, mine):
                    if own < 0:
                        self.matches |= 1 << i
                    else:
                        up |= 1 << own
        self.pending[-2] |= up

    def pop(self) -> None:
        self.stack.pop()
        if self._chains:
            self.pending.pop()

    def flags(self) -> int:
        """The readout flags (bit i: query i of the cluster), a combination's from its paths'
        flags, as the cluster's match output shows them at a capture."""
        flags = self.matches & self._plain
        if self._combined:
            paths = self.matches >> len(self.cluster.queries)
            for i, expr in self._combined:
                if expr.holds(paths):
                    flags |= 1 << i
        return flags

    def matched_queries(self) -> list[int]:
        """Positions (in the cluster) of the queries that matched so far."""
        return list(_bits(self.flags()))
