"""The query compiler: a query set becomes a *plan*, the contract between RTL, model and reports.

A plan has one tag dictionary (the tag decoder's CAM contents; tag ``tags[i]`` has id ``i + 1``,
0 is any other name) and a list of clusters. Each cluster has a list of *nodes* (query steps,
shared between queries of the cluster when they have a common prefix) and a list of *columns*
(the bits of one row of the cluster's packed stack memory).

Every node ``k`` has an accept test (its tag id, 0 for ``*``) and a *source*, the condition its
predecessor puts on the parent level. On a push of an element with tag ``t`` at level ``L``::

    fires[k] = (node k accepts t) and source[k]
    new[c]   = OR of fires[k] over the members k of column c   or   (self_loop[c] and top[c])

where ``top`` is the row of level ``L - 1``. Sources (see :class:`Source`):

* ``level1``   -- first step ``/x``: the new element is the root element (``L == 1``);
* ``any``      -- first step ``//x``: always;
* ``column``   -- ``top[column]``, and when that column is shared by several nodes, also
  ``parent tag == parent_tag`` (which member set the bit is told by its tag);
* ``parent``   -- optimization (2): the predecessor is a first step without a column; read it from
  the global stack: ``parent tag == tag`` (tag 0: any element, i.e. ``L >= 2``), and ``L == 2``
  when the first step is ``/``.

A query matches when its last node fires; its flag is read out at the end of the document.

Attribute predicates (issue 14). The plan lists the distinct attribute conditions of its queries
(:class:`xpfilt.hwspec.contract.AttrCondition`: attribute, operator, literal; ``[@a]`` is one too); the
front end evaluates them on every start tag and sends their bits with the push. A step with
predicates has a *guard*, its predicates' And/Or/Not over condition indices (a
:class:`xpfilt.hwspec.conditions.Condition`: :class:`Bit` ``i`` leaves, :class:`AllOf`,
:class:`AnyOf`, :class:`Negation`; :data:`ALWAYS`: none), and fires
only when its guard holds: ``fires[k] = accepts and source and guard``. A guard is part of a
node's identity in prefix sharing (a guarded step never merges with an unguarded one), and a
guarded first step keeps its column (optimization (2) reads the parent's tag, which says
nothing about its guard). Column sharing (3) stays exact: a member's bit is set only when that
member fired, guard included.

Conditions known when the element closes: ``text()`` predicates (issue 14 part 2) and nested
paths (twigs, issue 15). A text condition (:data:`xpfilt.hwspec.contract.TEXT` as the attribute) is known
only at the close: the front end sends the closing element's text condition bits with its pop.
A nested path ``[b]`` on step ``a`` holds when, below that ``a``, an element held ``b``'s last step
-- known at the latest when ``a`` closes. A step's predicates are split at their top-level
``and``s into the parts that test attributes only (its guard, checked on the push, as above) and
the rest (checked on the pop). A query whose step ``j`` is the first with a pop part is a *twig*
(``QueryPlan.chain``: its *entries*, one per step from ``j`` on, branches included, each
``(column, condition, parent entry, reached by '//')``; entry 0 is step ``j``, the *anchor*):

* steps ``1..j`` are ordinary nodes (prefix sharing with path profiles included); the anchor gets
  a column of its own (no self loop, not shared, kept by (1) and (2)): its bit at level ``L``
  says that the element at ``L`` fired step ``j`` (attribute guards included);
* every other step (the trunk below ``j`` and every branch step, to any depth) reads a *free*
  column, fired by a node with source ``any``: its bit at level ``L`` says that the element there
  passes the step's name test and attribute guard. Free columns are shared by every entry of the
  cluster with the same name and guard (a ``*`` without a guard needs none: column -1);
* an entry's condition is its pop parts and, unless it is the last step of its path, the next
  step: ``Bit(i)`` a text condition bit of the pop, ``Pending(e)`` entry ``e`` held below this
  element (a pending bit), ``Row(c)`` an attribute part under or/not (column ``c``, a free
  ``*`` node guarded by that part, written on the push), with and/or/not;
* the stacks evaluate the entries bottom up on pops (see :mod:`xpfilt.hdl.stacks`), so a match
  waits (pending bits of the open elements) until the anchor closes -- ``/a/b[text()=15]//c``
  matches when ``b`` closes, whether the text came before or after ``c``, and
  ``/nitf[head//title]/body//hl2`` when ``nitf`` closes, whichever branch came first.

This is the ICDE 2011 twig scheme (Moussalli et al.: a push stack per root-to-leaf path updated
on opens, a pop stack per path updated on closes, joined at the split nodes) with two savings:
the part above the first split node is matched once, top down, in the shared trie (no pop
stack, shared with path profiles), and below it each twig node costs one pending bit (the pop
stack, shared by equal entries of other queries: :class:`TwigChecks`) plus a name-test column
shared by all twig nodes of the cluster with that name, not a push column of its own -- top-down context below the anchor is not needed, because every entry
is anchored bottom up at exactly one element of its parent entry.

Boolean combinations of paths (``/a/b[@x > 2] and not(/a/c)``, issue 14). Each path of a
combination is compiled like a query of the same cluster, as an internal path
(``Cluster.paths``: a :class:`QueryPlan` each, not read out); the profile's own entry in
``Cluster.queries`` has no node and a ``combine`` expression over the paths' positions in
``Cluster.paths`` (a guard's shape: ``Bit(p)`` leaves, and/or/not). The stacks keep a sticky
match flag per path, and the cluster's match output for the profile is the expression over
those flags, evaluated when the readout captures them at the document's end (so ``not`` means
"no match in the whole document").

Column optimizations (each switchable): (1) the last node gets no column; (2) a first step whose
children are all ``/`` steps gets no column (the global stack knows the parent's tag); (3) nodes
that are not ``*`` and not followed by ``//`` share columns when their tags differ (the tag on the
global stack tells which member a 1 belongs to). Prefix sharing merges equal leading steps of the
queries of a cluster into one node; prefix clustering (:func:`cluster_order`, on by default) fills
the clusters in text order so that such queries meet in one cluster.
"""

from __future__ import annotations

import enum
import json
from dataclasses import dataclass, field, fields, is_dataclass
from typing import Optional, Sequence

from xpfilt.compiler.options import DEEPEST, MAX_NAME, CompileOptions, EngineMode
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
from xpfilt.hwspec.contract import POSITION_REFUSED, TEXT, AttrCondition, number_digits
from xpfilt.lang.xpath import (
    And,
    AttributeTarget,
    Axis,
    Exists,
    Not,
    Or,
    Predicate,
    Query,
    RelativePath,
    Step,
    TextTarget,
    leaves,
)

__all__ = [
    "EngineMode",
    "CompileOptions",
    "SourceKind",
    "Source",
    "Node",
    "Column",
    "QueryPlan",
    "Cluster",
    "Plan",
    "compile_queries",
    "cluster_order",
    "UnsupportedQueryError",
    "PLAN_VERSION",
    "MAX_NAME",
    "DEEPEST",
    "hardware_queries",
    "hardware_refusal",
    "PREDICATES_REFUSED",
    "TWIGS_REFUSED",
    "POSITION_REFUSED",
    "clause_expression",
    "without_nested_paths",
    "TwigChecks",
]

PLAN_VERSION = 6


class UnsupportedQueryError(ValueError):
    """A query the hardware engines cannot evaluate (:func:`hardware_refusal`)."""


class SourceKind(str, enum.Enum):
    """What a node's predecessor requires of the parent level (see the module docstring)."""

    LEVEL1 = "level1"  # first step ``/x``: the new element is the root
    ANY = "any"  # first step ``//x``: always
    COLUMN = "column"  # the predecessor's column on the row below
    PARENT = "parent"  # optimization (2): the parent's tag on the global stack


@dataclass(frozen=True)
class Source:
    kind: SourceKind
    column: int = -1  # kind "column"
    tag: int = 0  # kind "column": parent tag check (0: none); kind "parent": tag
    level2: bool = False  # kind "parent": also require L == 2


@dataclass(frozen=True)
class Node:
    tag: int  # tag id in the plan's dictionary (global), 0 for '*'
    source: Source
    column: int = -1  # -1: the node has no column
    guard: Condition = ALWAYS  # its step's predicates over the plan's conditions


@dataclass(frozen=True)
class Column:
    members: tuple[int, ...]  # node indices
    self_loop: bool  # the node is followed by '//': its 1 also moves down


@dataclass(frozen=True)
class QueryPlan:
    number: int  # 1-based query number (line in the query file)
    text: str
    node: int  # the cluster node whose firing means a match
    steps: int
    # a query checked when elements close (text() predicates, nested paths): its twig entries
    # (column, condition, parent entry, reached by '//'), entry 0 its anchor (see the module
    # docstring); () for a query matched on a push
    chain: tuple = ()
    # a boolean combination of paths: its expression over the cluster's paths (Cluster.paths),
    # node -1; None for a path (JSON: [])
    combine: Optional[Condition] = None

    def to_dict(self) -> dict:
        """The JSON-ready form (:meth:`Plan.to_dict`)."""
        return {
            **{f.name: _plain(getattr(self, f.name)) for f in fields(self)},
            "combine": [] if self.combine is None else self.combine.to_json(),
        }


@dataclass(frozen=True)
class Cluster:
    nodes: tuple[Node, ...]
    columns: tuple[Column, ...]
    queries: tuple[QueryPlan, ...]  # one per readout bit, in readout order
    paths: tuple[QueryPlan, ...] = ()  # the paths of the combinations (not read out)

    def to_dict(self) -> dict:
        """The JSON-ready form (:meth:`Plan.to_dict`); :meth:`Plan.cluster_from_dict` reads it."""
        return {f.name: _plain(getattr(self, f.name)) for f in fields(self)}

    @property
    def matchers(self) -> tuple[QueryPlan, ...]:
        """What has a sticky match flag: the queries (a combination's entry never matches by
        itself), then the paths; flag ``len(queries) + p`` is path ``p``'s."""
        return self.queries + self.paths


@dataclass(frozen=True)
class Plan:
    version: int
    mode: str
    options: CompileOptions
    tags: tuple[str, ...]  # CAM contents; tag id of tags[i] is i + 1
    clusters: tuple[Cluster, ...]
    stats: dict = field(default_factory=dict, compare=False)
    conditions: tuple[AttrCondition, ...] = ()  # condition i's bit is bit i of a push's conds

    @property
    def query_numbers(self) -> list[int]:
        """Readout order: bit ``i`` of a document's readout belongs to query ``query_numbers[i]``."""
        return [q.number for cluster in self.clusters for q in cluster.queries]

    def to_dict(self) -> dict:
        """The plan as JSON-ready dicts and lists (what ``dataclasses.asdict`` gave before the
        condition IR: conditions in their JSON form), :meth:`to_json`'s and the board
        identity's input."""
        return {f.name: _plain(getattr(self, f.name)) for f in fields(self)}

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), indent=1)

    @classmethod
    def from_json(cls, text: str) -> "Plan":
        raw = json.loads(text)
        if raw.get("version") != PLAN_VERSION:
            raise ValueError(f"plan version must be {PLAN_VERSION}, not {raw.get('version')!r}")
        clusters = tuple(cls.cluster_from_dict(c) for c in raw["clusters"])
        return cls(
            raw["version"],
            raw["mode"],
            CompileOptions(**raw["options"]),
            tuple(raw["tags"]),
            clusters,
            raw.get("stats", {}),
            tuple(AttrCondition(**c) for c in raw.get("conditions", ())),
        )

    @staticmethod
    def cluster_from_dict(c: dict) -> Cluster:
        """A :class:`Cluster` from its :meth:`Cluster.to_dict` form."""
        return Cluster(
            tuple(
                Node(
                    n["tag"],
                    Source(**{**n["source"], "kind": SourceKind(n["source"]["kind"])}),
                    n["column"],
                    Condition.from_json(n.get("guard", [])),
                )
                for n in c["nodes"]
            ),
            tuple(Column(tuple(col["members"]), col["self_loop"]) for col in c["columns"]),
            tuple(_query_plan(q) for q in c["queries"]),
            tuple(_query_plan(q) for q in c.get("paths", ())),
        )


def _query_plan(q: dict) -> QueryPlan:
    combine = q.get("combine", [])
    return QueryPlan(
        **{
            **q,
            "chain": tuple(
                (column, Condition.from_json(cond), up, descendant)
                for column, cond, up, descendant in q.get("chain", ())
            ),
            "combine": Condition.from_json(combine) if combine else None,
        }
    )


def _plain(value):
    """``value`` as JSON-ready data: dataclasses as dicts of their fields (``to_dict`` where
    they have one), conditions in their JSON form, tuples as lists."""
    if isinstance(value, Condition):
        return value.to_json()
    if isinstance(value, (QueryPlan, Cluster)):
        return value.to_dict()
    if is_dataclass(value) and not isinstance(value, type):
        return {f.name: _plain(getattr(value, f.name)) for f in fields(value)}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    return value


@dataclass(frozen=True)
class TwigChecks:
    """What a cluster checks on pops (derived from its queries' twig entries, the one
    definition the RTL and the model share): ``pending[p]`` = ``(column, condition, '//')`` of
    pending bit ``p``, one per distinct entry below an anchor -- entries with the same column,
    axis and condition over the same distinct entries hold at the same elements, so queries
    share them (``/nitf[head]/x`` and ``/nitf[head]/y`` share ``head``'s bit); ``anchors`` =
    ``(flag position, column, condition)`` per twig query or path (:attr:`Cluster.matchers`).
    Conditions read ``Pending(p)`` as pending bit ``p`` (in a query's chain it names an
    entry)."""

    pending: tuple
    anchors: tuple

    @staticmethod
    def of(cluster: "Cluster") -> "TwigChecks":
        index: dict[tuple, int] = {}
        anchors = []
        for i, q in enumerate(cluster.matchers):
            bit: dict[int, int] = {}

            def shared(cond: Condition) -> Condition:
                return cond.with_leaves(
                    lambda leaf: Pending(bit[leaf.index]) if isinstance(leaf, Pending) else leaf
                )

            for e in reversed(range(1, len(q.chain))):  # an entry's children come after it
                column, cond, _up, descendant = q.chain[e]
                bit[e] = index.setdefault((column, shared(cond), descendant), len(index))
            if q.chain:
                column, cond, _up, _d = q.chain[0]
                anchors.append((i, column, shared(cond)))
        return TwigChecks(tuple(index), tuple(anchors))


#: Why the programmable engine refuses a query with value predicates (the one wording).
PREDICATES_REFUSED = "value predicates are not supported by the programmable engine yet"
#: ... a profile with nested paths (a twig) that :func:`without_nested_paths` cannot rewrite.
TWIGS_REFUSED = (
    "nested paths (twig profiles) are supported by the programmable engine only on "
    "the first step of a path from the root (/a[b]/c) and as the one nested path "
    "of a last step (/a/b[c]), not elsewhere yet"
)


def hardware_refusal(query: Query, mode: EngineMode = EngineMode.CUSTOM) -> Optional[str]:
    """Why the hardware engine of ``mode`` cannot take ``query`` whatever its sizes (None: it
    can). The custom engine takes paths whose predicates test attributes, text() (comparisons
    with numbers of at most :data:`xpfilt.hwspec.contract.NUMBER_DIGITS` digits, strings, existence) and
    nested paths (twigs), combined with and/or/not to any depth, and boolean combinations of
    such paths; the programmable engine takes paths and boolean combinations of them, twigs
    where :func:`without_nested_paths` rewrites them into those (whether their predicates fit
    its comparator slots is :func:`xpfilt.compiler.programmable.configure`'s to say)."""
    programmable = EngineMode(mode) is EngineMode.PROGRAMMABLE
    if not query.has_predicates:
        return None
    if programmable:
        if query.has_nested_paths and without_nested_paths(query) is None:
            return TWIGS_REFUSED
        return PREDICATES_REFUSED
    for step in _query_steps(query):
        if step.uses_position:
            return POSITION_REFUSED
    for condition in _conditions_of(query):
        if condition.kind == "number" and number_digits(condition.number) is None:
            return (
                f"number {condition.literal!r} has more than 15 digits, which the hardware "
                f"engines cannot compare"
            )
    return None


def without_nested_paths(query: Query) -> Optional[Query]:
    """``query`` with its nested paths rewritten into paths and boolean combinations of paths
    (the same answers on every document), where XPath's meaning allows it; None where it does
    not (those twigs need split nodes in hardware). Two rules, applied until no nested path is
    left:

    * on the first step of a path from the root (``/a[P]/rest``): a document has one root
      element, so every path starting ``/a`` speaks of the same element, and
      ``/a[P]/rest`` = ``/a/rest and P'``, P' being P with each nested path ``r`` as the path
      ``/a/r`` and each other condition ``c`` as ``/a[c]`` (and/or/not kept);
    * a last step whose conjuncts hold one nested path ``r``, not under or/not
      (``/p/x[c][r]``): = ``/p/x[c]/r`` (``.//r``: ``//r``).

    A query that calls ``position()`` is left alone (the conditions' order counts there)."""
    if not query.has_nested_paths:
        return query
    if any(s.uses_position for s in _query_steps(query)):
        return None
    lowered = _lowered(query.clause if query.clause is not None else query)
    if lowered is None or isinstance(lowered, Query):
        return lowered
    return Query((), query.number, lowered)


def _lowered(node):
    """A profile's clause (or path) with every path's nested paths rewritten; None if one
    cannot be."""
    if isinstance(node, (And, Or)):
        operands = [_lowered(o) for o in node.operands]
        return None if None in operands else type(node)(tuple(operands))
    if isinstance(node, Not):
        operand = _lowered(node.operand)
        return None if operand is None else Not(operand)
    if not node.has_nested_paths:
        return node
    first, last = node.steps[0], node.steps[-1]
    if first.axis is Axis.CHILD and first.has_nested_paths:
        kept = tuple(p for p in first.predicates if not _has_nested_path(p))
        trunk = Query((Step(Axis.CHILD, first.name, kept), *node.steps[1:]), node.number)
        return _lowered(
            And(
                (
                    trunk,
                    *(
                        _lifted(p, first.name, node.number)
                        for p in first.predicates
                        if _has_nested_path(p)
                    ),
                )
            )
        )
    if any(s.has_nested_paths for s in node.steps[:-1]):
        return None
    parts = [c for p in last.predicates for c in _conjuncts(p)]
    nested = [c for c in parts if _has_nested_path(c)]
    if len(nested) != 1 or not isinstance(nested[0], RelativePath):
        return None
    step = Step(last.axis, last.name, tuple(c for c in parts if c is not nested[0]))
    return _lowered(Query((*node.steps[:-1], step, *nested[0].steps), node.number))


def _lifted(condition, root: str, number: int):
    """A condition on the root element ``root`` as a combination of paths from the root."""
    if isinstance(condition, (And, Or)):
        return type(condition)(tuple(_lifted(o, root, number) for o in condition.operands))
    if isinstance(condition, Not):
        return Not(_lifted(condition.operand, root, number))
    if isinstance(condition, RelativePath):
        return Query((Step(Axis.CHILD, root), *condition.steps), number)
    return Query((Step(Axis.CHILD, root, (condition,)),), number)


def _has_nested_path(condition) -> bool:
    return any(isinstance(leaf, RelativePath) for leaf in leaves(condition))


def _query_steps(query: Query):
    """Every step of ``query``: of each of its paths (a combination has several), branches
    included."""
    for path in query.paths:
        yield from _all_steps(path.steps)


def _all_steps(steps):
    """``steps`` and the steps of the nested paths in their predicates, to any depth."""
    for step in steps:
        yield step
        for p in step.predicates:
            for leaf in leaves(p):
                if isinstance(leaf, RelativePath):
                    yield from _all_steps(leaf.steps)


def _condition(leaf) -> AttrCondition:
    name = TEXT if isinstance(leaf.target, TextTarget) else leaf.target.name
    if isinstance(leaf, Exists):
        return AttrCondition(name, "exists")
    return AttrCondition(name, leaf.op, leaf.literal)


def _conditions_of(query: Query) -> list[AttrCondition]:
    """The attribute and text() conditions of every step of ``query``, branches included."""
    return [
        _condition(leaf)
        for step in _query_steps(query)
        for p in step.predicates
        for leaf in leaves(p)
        if isinstance(getattr(leaf, "target", None), (AttributeTarget, TextTarget))
    ]


def _conjuncts(predicate) -> list:
    """``predicate`` split at its top-level ``and``s."""
    if isinstance(predicate, And):
        return [c for o in predicate.operands for c in _conjuncts(o)]
    return [predicate]


def _on_push(predicate) -> bool:
    """Whether ``predicate`` tests attributes only (known when its element opens)."""
    return all(
        isinstance(getattr(leaf, "target", None), AttributeTarget) for leaf in leaves(predicate)
    )


def _condition_tree(node, index: dict) -> Condition:
    """An attribute/text condition tree as a guard over the condition indices ``index``."""
    if isinstance(node, (And, Or)):
        operands = tuple(_condition_tree(o, index) for o in node.operands)
        return AllOf(operands) if isinstance(node, And) else AnyOf(operands)
    if isinstance(node, Not):
        return Negation(_condition_tree(node.operand, index))
    if isinstance(node, (Predicate, Exists)):
        return Bit(index[_condition(node)])
    raise TypeError(f"not a condition: {node!r}")


def _push_guard(step, index: dict) -> Condition:
    """The guard of ``step``'s predicates checked on the push: the conjuncts (top-level
    ``and`` parts) that test attributes only; :data:`ALWAYS` for none."""
    return all_of(
        _condition_tree(c, index) for p in step.predicates for c in _conjuncts(p) if _on_push(c)
    )


def _pop_conjuncts(step) -> list:
    """``step``'s predicate conjuncts known only when its element closes (text(), nested
    paths, and what they are combined with)."""
    return [c for p in step.predicates for c in _conjuncts(p) if not _on_push(c)]


def hardware_queries(
    queries: Sequence[Query],
    max_name: Optional[int] = MAX_NAME,
    mode: EngineMode = EngineMode.CUSTOM,
) -> tuple[list[Query], list[str]]:
    """The queries a hardware engine can take, and a message for each other one: a query
    :func:`hardware_refusal` refuses, or one with a name longer than the front
    end's ``max_name`` bytes (it could never be decoded, so never match; None: not checked)."""
    ok, refused = [], []
    for q in queries:
        long_names = [
            s.name
            for s in _query_steps(q)
            if max_name is not None and len(s.name.encode()) > max_name
        ]
        why = hardware_refusal(q, mode)
        if why:
            refused.append(f"query {q.number} ({q}): {why}")
        elif long_names:
            refused.append(
                f"query {q.number} ({q}): tag {long_names[0]!r} is longer than the "
                f"hardware's max name {max_name}"
            )
        else:
            ok.append(q)
    return ok, refused


def compile_queries(queries: Sequence[Query], options: CompileOptions = CompileOptions()) -> Plan:
    """Compile parsed queries into a custom-engine plan. Raises :class:`UnsupportedQueryError`
    naming every query the custom engine cannot take (:func:`hardware_refusal`)."""
    bad = [(q, why) for q in queries for why in [hardware_refusal(q)] if why]
    if bad:
        listing = ", ".join(f"{q.number} ({q})" for q, _why in bad[:5])
        more = f" and {len(bad) - 5} more" if len(bad) > 5 else ""
        raise UnsupportedQueryError(
            f"the custom engine supports paths and their combinations with attribute, text() "
            f"and nested-path predicates, not query "
            f"{listing}{more} ({bad[0][1]})"
        )
    conditions = tuple(dict.fromkeys(c for q in queries for c in _conditions_of(q)))
    index = {c: i for i, c in enumerate(conditions)}
    size = _cluster_size(queries, options)
    tags = tuple(sorted({s.name for q in queries for s in _query_steps(q) if not s.is_wildcard}))
    tag_id = {name: i + 1 for i, name in enumerate(tags)}
    ordered = cluster_order(queries, options)
    clusters = tuple(
        _compile_cluster(ordered[i : i + size], options, tag_id, index)
        for i in range(0, len(ordered), size)
    )
    stats = {
        "queries": len(queries),
        "query_nodes": sum(1 for q in queries for _ in _query_steps(q)),
        "nodes": sum(len(c.nodes) for c in clusters),
        "columns": sum(len(c.columns) for c in clusters),
        "clusters": len(clusters),
        "cluster_size": size,
        "tags": len(tags),
        "conditions": len(conditions),
        "twigs": sum(1 for c in clusters for q in c.queries if q.chain),
        "pending_bits": sum(len(TwigChecks.of(c).pending) for c in clusters),
    }
    return Plan(PLAN_VERSION, EngineMode.CUSTOM.value, options, tags, clusters, stats, conditions)


def _cluster_size(queries: Sequence[Query], options: CompileOptions) -> int:
    """Queries per cluster: ``options.cluster_size``, or by default 256 if every query has at
    most 4 steps, else 128."""
    if options.cluster_size is not None:
        return options.cluster_size
    return 256 if all(len(p) <= 4 for q in queries for p in q.paths) else 128


def cluster_order(queries: Sequence[Query], options: CompileOptions) -> list[Query]:
    """The order in which ``queries`` fill the clusters (consecutive runs of
    :func:`_cluster_size`). With ``options.prefix_clustering`` and more than one cluster: by
    text (then number), so that queries with common leading steps land in one cluster and share
    nodes and columns there (§6.2), and each cluster uses fewer tags; else as given (one
    cluster holds them all in any order). Every readout bit keeps its query's number
    (:attr:`Plan.query_numbers`), so the order never changes an answer. On 12,000 generated
    depth-8 NITF queries: 21,012 nodes and 4,463 stack columns instead of 37,797 and 10,910 in
    file order (issue 13: the design fits the ECP5-85F)."""
    if not options.prefix_clustering or len(queries) <= _cluster_size(queries, options):
        return list(queries)
    return sorted(queries, key=lambda q: (str(q), q.number))


def clause_expression(clause, paths: list) -> Condition:
    """A combination's clause as an expression over path positions (:class:`Bit` ``p``
    leaves), each leaf path appended to ``paths``."""
    if isinstance(clause, (And, Or)):
        operands = tuple(clause_expression(o, paths) for o in clause.operands)
        return AllOf(operands) if isinstance(clause, And) else AnyOf(operands)
    if isinstance(clause, Not):
        return Negation(clause_expression(clause.operand, paths))
    paths.append(clause)
    return Bit(len(paths) - 1)


def _compile_cluster(
    queries: Sequence[Query], options: CompileOptions, tag_id: dict[str, int], index: dict
) -> Cluster:
    # 0. what gets a match flag: the path queries, then the paths of the combinations (None
    #    stands for a combination's own entry, which has no node)
    internal: list[Query] = []
    combine = [None if q.is_path else clause_expression(q.clause, internal) for q in queries]
    walk = [q if q.is_path else None for q in queries] + internal
    # 1. nodes (a trie of steps) and twig entries
    trie = _Trie(options, index)
    for qi, query in enumerate(walk):
        trie.add(qi, query)
    # 2. which nodes need a column; 3. the columns; 4. the nodes' sources
    column_of, columns = _columns(trie, options)
    nodes = _nodes(trie, column_of, columns, tag_id)

    # 5. the twig entries' node references become columns (-1 stays: every element)
    def columns_in(cond: Condition) -> Condition:
        return cond.with_leaves(
            lambda leaf: Row(column_of[leaf.index]) if isinstance(leaf, Row) else leaf
        )

    def plan_of(i: int, q: Query) -> QueryPlan:
        if not q.is_path:
            return QueryPlan(q.number, str(q), -1, sum(len(p) for p in q.paths), (), combine[i])
        return QueryPlan(
            q.number,
            str(q),
            trie.query_node[i],
            len(q),
            tuple(
                (column_of[node] if node >= 0 else -1, columns_in(cond), up, descendant)
                for node, cond, up, descendant in trie.twigs[i]
            ),
        )

    return Cluster(
        tuple(nodes),
        tuple(Column(tuple(members), loop) for members, loop in columns),
        tuple(plan_of(i, q) for i, q in enumerate(queries)),
        tuple(plan_of(len(queries) + j, p) for j, p in enumerate(internal)),
    )


class _Trie:
    """Step 1 of compiling a cluster: its nodes, a trie of steps (with prefix sharing) or a
    chain per query (without). A node's identity includes whether it is followed by '//' (its
    column's self loop). A query checked on pops (a twig, see the module docstring) ends its
    trie at its anchor step; the steps below it are twig entries whose columns come from free
    nodes."""

    def __init__(self, options: CompileOptions, index: dict):
        self.options, self.index = options, index
        self.keys: dict[tuple, int] = {}
        self.parent_of: list[int] = []  # -1: a first step or a free node
        self.steps_of: list = []  # (axis, name, followed_by_descendant)
        self.guard_of: list = []
        self.children: list[list[int]] = []
        self.query_node: list[int] = []  # per query: the node whose firing is its match
        self.fixed: set[int] = set()  # anchors and free nodes: own column, no self loop
        self.free: set[int] = set()  # free nodes: fire on their tag and guard (source any)
        self.twigs: list = []  # per query: its entries with node references (or ())

    def new_node(self, key, parent: int, step_key: tuple, guard: Condition) -> int:
        node = self.keys.get(key)
        if node is None:
            node = self.keys[key] = len(self.parent_of)
            self.parent_of.append(parent)
            self.steps_of.append(step_key)
            self.guard_of.append(guard)
            self.children.append([])
            if parent >= 0:
                self.children[parent].append(node)
        return node

    def free_node(self, qi: int, name: str, guard: Condition) -> int:
        """A node whose column says: this element passes ``name`` and ``guard`` (-1: every
        element does, no column)."""
        if name == "*" and guard.always:
            return -1
        if self.options.prefix_sharing:
            key = ("free", name, guard)
        else:
            key = ("free", qi, len(self.keys))
        node = self.new_node(key, -1, (Axis.DESCENDANT, name, False), guard)
        self.fixed.add(node)
        self.free.add(node)
        return node

    def add(self, qi: int, query: Optional[Query]) -> None:
        """Query ``qi`` (None: a combination's own entry, no node)."""
        if query is None:
            self.query_node.append(-1)
            self.twigs.append(())
            return
        first = next((j for j, step in enumerate(query.steps) if _pop_conjuncts(step)), None)
        parent = self._trunk(qi, query, first)
        self.query_node.append(parent)
        if first is None:
            self.twigs.append(())
            return
        self.fixed.add(parent)
        entries: list = []
        self._entry(qi, entries, query.steps[first:], -1, parent)
        self.twigs.append(entries)

    def _trunk(self, qi: int, query: Query, first: Optional[int]) -> int:
        """The nodes of ``query``'s steps up to its anchor ``first`` (all: None); the last."""
        parent = -1
        trunk = query.steps if first is None else query.steps[: first + 1]
        for j, step in enumerate(trunk):
            guard = _push_guard(step, self.index)
            if j == first:  # the anchor: fired through the trie, read when it closes
                key = (parent, step.axis, step.name, "anchor", guard)
                followed = False
            else:
                followed = j + 1 < len(query.steps) and query.steps[j + 1].axis is Axis.DESCENDANT
                key = (parent, step.axis, step.name, followed, guard)
            parent = self.new_node(
                key if self.options.prefix_sharing else (qi, j),
                parent,
                (step.axis, step.name, followed),
                guard,
            )
        return parent

    def _entry(self, qi: int, entries: list, steps, up: int, node: int) -> int:
        """Twig entry of ``steps[0]`` (the rest of its path below it), under entry ``up``,
        appended to ``entries`` (its branches' after it); its index."""
        e = len(entries)
        entries.append(None)
        step = steps[0]
        parts = [self._pop_tree(qi, entries, e, c) for c in _pop_conjuncts(step)]
        if len(steps) > 1:
            nxt = steps[1]
            below = self.free_node(qi, nxt.name, _push_guard(nxt, self.index))
            parts.append(Pending(self._entry(qi, entries, steps[1:], e, below)))
        entries[e] = (node, all_of(parts), up, step.axis is Axis.DESCENDANT)
        return e

    def _pop_tree(self, qi: int, entries: list, e: int, c) -> Condition:
        """Pop-time condition ``c`` of entry ``e`` as a condition (a nested path: an entry)."""
        if _on_push(c):  # attributes inside a pop-time condition: a column
            return Row(self.free_node(qi, "*", _condition_tree(c, self.index)))
        if isinstance(c, (And, Or)):
            operands = tuple(self._pop_tree(qi, entries, e, o) for o in c.operands)
            return AllOf(operands) if isinstance(c, And) else AnyOf(operands)
        if isinstance(c, Not):
            return Negation(self._pop_tree(qi, entries, e, c.operand))
        if isinstance(c, RelativePath):
            head = c.steps[0]
            node = self.free_node(qi, head.name, _push_guard(head, self.index))
            return Pending(self._entry(qi, entries, c.steps, e, node))
        return _condition_tree(c, self.index)  # a text() condition


def _columns(trie: _Trie, options: CompileOptions) -> tuple[list[int], list]:
    """Steps 2 and 3 of compiling a cluster: which nodes need a column, and the columns,
    shared (3) when the tag tells members apart, else one per node; (column of each node or
    -1, (members, self loop) per column)."""
    count = len(trie.parent_of)
    needs_column = []
    for k in range(count):
        axis, name, followed = trie.steps_of[k]
        if k in trie.fixed:
            needs_column.append(True)  # read when the element closes
        elif options.opt_last and not trie.children[k]:
            needs_column.append(False)  # (1): only ever a last node
        elif (
            options.opt_root and trie.parent_of[k] < 0 and not followed and trie.guard_of[k].always
        ):
            needs_column.append(False)  # (2): children read the global stack
        else:
            needs_column.append(True)
    column_of = [-1] * count
    columns: list[tuple[list[int], bool]] = []
    open_groups: list[tuple[int, set]] = []  # (column index, tags in it)
    for k in range(count):
        if not needs_column[k]:
            continue
        axis, name, followed = trie.steps_of[k]
        shareable = options.opt_share and name != "*" and not followed and k not in trie.fixed
        placed = False
        if shareable:
            for group, used in open_groups:
                if name not in used and len(columns[group][0]) < options.share_limit:
                    used.add(name)
                    columns[group][0].append(k)
                    column_of[k] = group
                    placed = True
                    break
        if not placed:
            column_of[k] = len(columns)
            columns.append(([k], followed))
            if shareable:
                open_groups.append((column_of[k], {name}))
    return column_of, columns


def _nodes(trie: _Trie, column_of: list[int], columns: list, tag_id: dict) -> list[Node]:
    """Step 4 of compiling a cluster: the nodes with their sources."""
    nodes = []
    for k, (axis, name, _followed) in enumerate(trie.steps_of):
        parent = trie.parent_of[k]
        if k in trie.free:
            source = Source(SourceKind.ANY)
        elif parent < 0:
            source = Source(SourceKind.LEVEL1 if axis is Axis.CHILD else SourceKind.ANY)
        elif column_of[parent] >= 0:
            shared = len(columns[column_of[parent]][0]) > 1
            parent_name = trie.steps_of[parent][1]
            source = Source(
                SourceKind.COLUMN,
                column=column_of[parent],
                tag=tag_id[parent_name] if shared else 0,
            )
        else:  # (2): the parent is a first step without a column; only '/' children here
            p_axis, p_name, _ = trie.steps_of[parent]
            source = Source(
                SourceKind.PARENT, tag=tag_id.get(p_name, 0), level2=p_axis is Axis.CHILD
            )
        nodes.append(Node(tag_id.get(name, 0), source, column_of[k], trie.guard_of[k]))
    return nodes
