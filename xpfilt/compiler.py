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
(:class:`xpfilt.hwdefs.AttrCondition`: attribute, operator, literal; ``[@a]`` is one too); the
front end evaluates them on every start tag and sends their bits with the push. A step with
predicates has a *guard*, its predicates' And/Or/Not over condition indices (nested tuples:
``("c", i)``, ``("and", g, ...)``, ``("or", g, ...)``, ``("not", g)``; ``()``: none), and fires
only when its guard holds: ``fires[k] = accepts and source and guard``. A guard is part of a
node's identity in prefix sharing (a guarded step never merges with an unguarded one), and a
guarded first step keeps its column (optimization (2) reads the parent's tag, which says
nothing about its guard). Column sharing (3) stays exact: a member's bit is set only when that
member fired, guard included.

``text()`` predicates (issue 14 part 2). A text condition (:data:`xpfilt.hwdefs.TEXT` as the
attribute) is known only when its element closes: the front end sends the closing element's text
condition bits with its pop. A step's predicates are split at their top-level ``and``s into an
attribute guard (checked on the push, as above) and a *text guard* (checked on the pop); a part
that mixes text() and attributes under ``or``/``not`` is refused (:data:`TEXT_REFUSED`). A query
whose step ``j`` is the first with a text guard becomes a *chain* (``QueryPlan.chain``: per step
``j..n``, its column, its text guard, and whether the next step is reached by ``//``):

* steps ``1..j`` are ordinary nodes (prefix sharing included); node ``j`` gets a column of its own
  (no self loop, not shared, kept by (1) and (2)): its bit at level ``L`` says that the element at
  ``L`` fired step ``j`` (attribute guards included);
* each step ``k > j`` is a node of its own with source ``any`` and a column of its own: its bit at
  level ``L`` says that the element there passes step ``k``'s name test and attribute guard;
* the stacks evaluate the chain bottom up on pops (see :mod:`xpfilt.hdl.stacks`), so a match
  below step ``j``'s element waits (a *pending* bit of that element) until it closes and its text
  is known -- ``/a/b[text()=15]//c`` matches when ``b`` closes, whether the text came before or
  after ``c``.

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
from dataclasses import asdict, dataclass, field
from typing import Optional, Sequence

from .hwdefs import TEXT, AttrCondition, number_digits
from .readout import check_readout
from .xpath import (And, AttributeTarget, Axis, Exists, Not, Or, PositionTarget, Predicate, Query,
                    TextTarget, leaves)

__all__ = ["EngineMode", "CompileOptions", "SourceKind", "Source", "Node", "Column", "QueryPlan", "Cluster", "Plan",
           "compile_queries", "cluster_order", "UnsupportedQueryError", "PLAN_VERSION", "MAX_NAME", "DEEPEST",
           "hardware_queries", "hardware_refusal", "PREDICATES_REFUSED", "TWIGS_REFUSED",
           "COMBINATIONS_REFUSED", "TEXT_REFUSED", "POSITION_REFUSED", "guard_holds"]

PLAN_VERSION = 4


class EngineMode(str, enum.Enum):
    """The two kinds of hardware engine: one generated for a query set (``custom``, a plan) or
    generic columns loaded with any set (``programmable``, a :class:`HardwareSpec`). A ``str``
    enum: the value is what files and the command line say."""
    CUSTOM = "custom"
    PROGRAMMABLE = "programmable"
#: Longest element name (bytes) the front end accepts unless told otherwise (``--max-name``).
MAX_NAME = 32
#: Deepest document level any engine's stacks may hold: every stack memory has this many rows.
DEEPEST = 4096


class UnsupportedQueryError(ValueError):
    """A query the hardware engines cannot evaluate (:func:`hardware_refusal`)."""


@dataclass(frozen=True)
class CompileOptions:
    """Knobs of the custom engine. ``cluster_size`` None: 256 queries if every query has at most
    4 steps, else 128 (the paper's choice)."""
    cluster_size: Optional[int] = None
    max_depth: int = 16
    opt_last: bool = True        # (1) no column for the last node
    opt_root: bool = True        # (2) no column for the root node, read the global stack
    opt_share: bool = True       # (3) nodes with different tags share a column
    prefix_sharing: bool = True  # common prefixes share nodes within a cluster
    prefix_clustering: bool = True  # clusters gather queries in text order (see cluster_order)
    share_limit: int = 8         # most nodes in one shared column (bounds the OR per column)
    readout: str = "serial"      # a xpfilt.readout.ReadoutKind value: "serial" or "sparse"

    def __post_init__(self):
        if self.cluster_size is not None and self.cluster_size < 1:
            raise ValueError(f"cluster size must be at least 1, not {self.cluster_size!r}")
        if self.max_depth < 1:
            raise ValueError(f"maximum depth must be at least 1, not {self.max_depth!r}")
        if self.max_depth > DEEPEST:
            raise ValueError(f"maximum depth must be at most {DEEPEST} (the rows of every stack "
                             f"memory), not {self.max_depth!r}")
        if self.share_limit < 1:
            raise ValueError(f"share limit must be at least 1, not {self.share_limit!r}")
        check_readout(self.readout)


class SourceKind(str, enum.Enum):
    """What a node's predecessor requires of the parent level (see the module docstring)."""
    LEVEL1 = "level1"            # first step ``/x``: the new element is the root
    ANY = "any"                  # first step ``//x``: always
    COLUMN = "column"            # the predecessor's column on the row below
    PARENT = "parent"            # optimization (2): the parent's tag on the global stack


@dataclass(frozen=True)
class Source:
    kind: SourceKind
    column: int = -1             # kind "column"
    tag: int = 0                 # kind "column": parent tag check (0: none); kind "parent": tag
    level2: bool = False         # kind "parent": also require L == 2


@dataclass(frozen=True)
class Node:
    tag: int                     # tag id in the plan's dictionary (global), 0 for '*'
    source: Source
    column: int = -1             # -1: the node has no column
    guard: tuple = ()            # its step's predicates over the plan's conditions (() = none)


@dataclass(frozen=True)
class Column:
    members: tuple[int, ...]     # node indices
    self_loop: bool              # the node is followed by '//': its 1 also moves down


@dataclass(frozen=True)
class QueryPlan:
    number: int                  # 1-based query number (line in the query file)
    text: str
    node: int                    # the cluster node whose firing means a match
    steps: int
    # text() predicates: (column, text guard, '//' to the next step) for the query's first step
    # with a text() predicate and each step after it, checked when elements close (see the
    # module docstring); () for a query matched on a push
    chain: tuple = ()


@dataclass(frozen=True)
class Cluster:
    nodes: tuple[Node, ...]
    columns: tuple[Column, ...]
    queries: tuple[QueryPlan, ...]


@dataclass(frozen=True)
class Plan:
    version: int
    mode: str
    options: CompileOptions
    tags: tuple[str, ...]        # CAM contents; tag id of tags[i] is i + 1
    clusters: tuple[Cluster, ...]
    stats: dict = field(default_factory=dict, compare=False)
    conditions: tuple[AttrCondition, ...] = ()   # condition i's bit is bit i of a push's conds

    @property
    def query_numbers(self) -> list[int]:
        """Readout order: bit ``i`` of a document's readout belongs to query ``query_numbers[i]``."""
        return [q.number for cluster in self.clusters for q in cluster.queries]

    def to_json(self) -> str:
        return json.dumps(asdict(self), indent=1)

    @classmethod
    def from_json(cls, text: str) -> "Plan":
        raw = json.loads(text)
        if raw.get("version") != PLAN_VERSION:
            raise ValueError(f"plan version must be {PLAN_VERSION}, not {raw.get('version')!r}")
        clusters = tuple(cls.cluster_from_dict(c) for c in raw["clusters"])
        return cls(raw["version"], raw["mode"], CompileOptions(**raw["options"]),
                   tuple(raw["tags"]), clusters, raw.get("stats", {}),
                   tuple(AttrCondition(**c) for c in raw.get("conditions", ())))

    @staticmethod
    def cluster_from_dict(c: dict) -> Cluster:
        """A :class:`Cluster` from its ``dataclasses.asdict`` form."""
        return Cluster(
            tuple(Node(n["tag"], Source(**{**n["source"],
                                            "kind": SourceKind(n["source"]["kind"])}),
                       n["column"], _tuples(n.get("guard", ()))) for n in c["nodes"]),
            tuple(Column(tuple(col["members"]), col["self_loop"]) for col in c["columns"]),
            tuple(QueryPlan(**{**q, "chain": _tuples(q.get("chain", ()))})
                  for q in c["queries"]))


def _tuples(value):
    """A guard read back from JSON (lists) as nested tuples."""
    return tuple(_tuples(v) for v in value) if isinstance(value, list) else value


def guard_holds(guard: tuple, bits: int) -> bool:
    """Whether a node's guard holds for a push whose condition bits are ``bits``."""
    if not guard:
        return True
    op = guard[0]
    if op == "c":
        return bool(bits >> guard[1] & 1)
    if op == "and":
        return all(guard_holds(g, bits) for g in guard[1:])
    if op == "or":
        return any(guard_holds(g, bits) for g in guard[1:])
    return not guard_holds(guard[1], bits)


#: Why the programmable engine refuses a query with value predicates (the one wording).
PREDICATES_REFUSED = "value predicates are not supported by the programmable engine yet"
#: Why the custom engine refuses a predicate that mixes text() and attributes under or/not.
TEXT_REFUSED = ("a predicate that combines text() and attributes with or/not is not supported by "
                "the hardware engines yet")
POSITION_REFUSED = "position() predicates are not supported by the hardware engines"
#: ... a profile with nested paths (a twig), and one that combines paths with and/or/not.
TWIGS_REFUSED = "nested paths (twig profiles) are not supported by the hardware engines yet"
COMBINATIONS_REFUSED = "boolean combinations of paths are not supported by the hardware engines yet"


def hardware_refusal(query: Query, mode: EngineMode = EngineMode.CUSTOM) -> Optional[str]:
    """Why the hardware engine of ``mode`` cannot take ``query`` whatever its sizes (None: it
    can). The custom engine takes paths whose predicates test attributes and text() (comparisons
    with numbers of at most :data:`xpfilt.hwdefs.NUMBER_DIGITS` digits, strings, existence, and
    and/or/not; text() and attributes meet only in top-level ``and``s); the programmable engine
    takes plain paths."""
    if not query.is_path:
        return COMBINATIONS_REFUSED
    if query.has_nested_paths:
        return TWIGS_REFUSED
    if not query.has_predicates:
        return None
    if EngineMode(mode) is EngineMode.PROGRAMMABLE:
        return PREDICATES_REFUSED
    for step in query.steps:
        for predicate in step.predicates:
            for leaf in leaves(predicate):
                if isinstance(getattr(leaf, "target", None), PositionTarget):
                    return POSITION_REFUSED
            for part in _conjuncts(predicate):
                if len({isinstance(getattr(leaf, "target", None), TextTarget)
                        for leaf in leaves(part)}) > 1:
                    return TEXT_REFUSED
    for condition in _conditions_of(query):
        if condition.kind == "number" and number_digits(condition.number) is None:
            return (f"number {condition.literal!r} has more than 15 digits, which the hardware "
                    f"engines cannot compare")
    return None


def _condition(leaf) -> AttrCondition:
    name = TEXT if isinstance(leaf.target, TextTarget) else leaf.target.name
    if isinstance(leaf, Exists):
        return AttrCondition(name, "exists")
    return AttrCondition(name, leaf.op, leaf.literal)


def _conditions_of(query: Query) -> list[AttrCondition]:
    return [_condition(leaf) for step in query.steps for p in step.predicates
            for leaf in leaves(p)
            if isinstance(getattr(leaf, "target", None), (AttributeTarget, TextTarget))]


def _conjuncts(predicate) -> list:
    """``predicate`` split at its top-level ``and``s."""
    if isinstance(predicate, And):
        return [c for o in predicate.operands for c in _conjuncts(o)]
    return [predicate]


def _is_text(predicate) -> bool:
    return any(isinstance(getattr(leaf, "target", None), TextTarget)
               for leaf in leaves(predicate))


def _guard(step, index: dict, text: bool = False) -> tuple:
    """The guard of ``step`` over the condition indices ``index`` (() for no predicate): of its
    attribute predicates, or (``text``) of its text() predicates."""
    def build(node):
        if isinstance(node, And):
            return ("and", *(build(o) for o in node.operands))
        if isinstance(node, Or):
            return ("or", *(build(o) for o in node.operands))
        if isinstance(node, Not):
            return ("not", build(node.operand))
        if isinstance(node, (Predicate, Exists)):
            return ("c", index[_condition(node)])
        raise TypeError(f"not a condition: {node!r}")
    parts = [build(c) for p in step.predicates for c in _conjuncts(p) if _is_text(c) == text]
    if not parts:
        return ()
    return parts[0] if len(parts) == 1 else ("and", *parts)


def hardware_queries(queries: Sequence[Query], max_name: Optional[int] = MAX_NAME,
                     mode: EngineMode = EngineMode.CUSTOM) -> tuple[list[Query], list[str]]:
    """The queries a hardware engine can take, and a message for each other one: a query with
    value predicates or a combination of paths (:func:`hardware_refusal`), or one with a name longer than the front
    end's ``max_name`` bytes (it could never be decoded, so never match; None: not checked)."""
    ok, refused = [], []
    for q in queries:
        long_names = [s.name for s in q.steps
                      if max_name is not None and len(s.name.encode()) > max_name]
        why = hardware_refusal(q, mode)
        if why:
            refused.append(f"query {q.number} ({q}): {why}")
        elif long_names:
            refused.append(f"query {q.number} ({q}): tag {long_names[0]!r} is longer than the "
                           f"hardware's max name {max_name}")
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
            f"the custom engine supports paths with attribute and text() predicates, not query "
            f"{listing}{more} ({bad[0][1]})")
    conditions = tuple(dict.fromkeys(c for q in queries for c in _conditions_of(q)))
    index = {c: i for i, c in enumerate(conditions)}
    size = _cluster_size(queries, options)
    tags = tuple(sorted({s.name for q in queries for s in q.steps if not s.is_wildcard}))
    tag_id = {name: i + 1 for i, name in enumerate(tags)}
    ordered = cluster_order(queries, options)
    clusters = tuple(_compile_cluster(ordered[i:i + size], options, tag_id, index)
                     for i in range(0, len(ordered), size))
    stats = {
        "queries": len(queries),
        "query_nodes": sum(len(q) for q in queries),
        "nodes": sum(len(c.nodes) for c in clusters),
        "columns": sum(len(c.columns) for c in clusters),
        "clusters": len(clusters),
        "cluster_size": size,
        "tags": len(tags),
        "conditions": len(conditions),
    }
    return Plan(PLAN_VERSION, EngineMode.CUSTOM.value, options, tags, clusters, stats,
                conditions)


def _cluster_size(queries: Sequence[Query], options: CompileOptions) -> int:
    """Queries per cluster: ``options.cluster_size``, or by default 256 if every query has at
    most 4 steps, else 128."""
    if options.cluster_size is not None:
        return options.cluster_size
    return 256 if all(len(q) <= 4 for q in queries) else 128


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


def _compile_cluster(queries: Sequence[Query], options: CompileOptions,
                     tag_id: dict[str, int], index: dict) -> Cluster:
    # 1. nodes: a trie of steps (with prefix sharing) or a chain per query (without).
    #    A node's identity includes whether it is followed by '//' (its column's self loop).
    keys: dict[tuple, int] = {}
    parent_of: list[int] = []       # -1: a first step
    steps_of: list = []             # (axis, name, followed_by_descendant)
    guard_of: list = []
    children: list[list[int]] = []
    query_node: list[int] = []
    fixed: set[int] = set()         # nodes of text() chains: own column, no self loop
    free: set[int] = set()          # ... after the chain's first step: fire on tag and guard
    chain_nodes: list = []          # per query: (node, text guard, '//' next) of its chain
    for qi, query in enumerate(queries):
        parent = -1
        texts = [_guard(step, index, text=True) for step in query.steps]
        first = next((j for j, t in enumerate(texts) if t), None)
        chain = []
        for j, step in enumerate(query.steps):
            followed = j + 1 < len(query.steps) and query.steps[j + 1].axis is Axis.DESCENDANT
            guard = _guard(step, index)
            if first is not None and j >= first:
                followed = False            # the chain's steps are checked at the close
                key = (parent, step.axis, step.name, "text", guard, texts[j]) if j == first \
                    else ("free", qi, j)
                if not options.prefix_sharing:
                    key = (qi, j)
            else:
                key = (parent, step.axis, step.name, followed, guard) \
                    if options.prefix_sharing else (qi, j)
            node = keys.get(key)
            if node is None:
                node = keys[key] = len(parent_of)
                parent_of.append(parent if first is None or j <= first else -1)
                steps_of.append((step.axis, step.name, followed))
                guard_of.append(guard)
                children.append([])
                if parent >= 0 and (first is None or j <= first):
                    children[parent].append(node)
            if first is not None and j >= first:
                fixed.add(node)
                if j > first:
                    free.add(node)
                nxt = j + 1 < len(query.steps) and query.steps[j + 1].axis is Axis.DESCENDANT
                chain.append((node, texts[j], nxt))
            if first is None or j <= first:
                parent = node
        query_node.append(parent)
        chain_nodes.append(chain)

    # 2. which nodes need a column
    count = len(parent_of)
    needs_column = []
    for k in range(count):
        axis, name, followed = steps_of[k]
        if k in fixed:
            needs_column.append(True)         # read when the element closes
        elif options.opt_last and not children[k]:
            needs_column.append(False)        # (1): only ever a last node
        elif options.opt_root and parent_of[k] < 0 and not followed and not guard_of[k]:
            needs_column.append(False)        # (2): children read the global stack
        else:
            needs_column.append(True)

    # 3. columns: shared (3) when the tag tells members apart, else one per node
    column_of = [-1] * count
    columns: list[tuple[list[int], bool]] = []
    open_groups: list[tuple[int, set]] = []   # (column index, tags in it)
    for k in range(count):
        if not needs_column[k]:
            continue
        axis, name, followed = steps_of[k]
        shareable = options.opt_share and name != "*" and not followed and k not in fixed
        placed = False
        if shareable:
            for index, used in open_groups:
                if name not in used and len(columns[index][0]) < options.share_limit:
                    used.add(name)
                    columns[index][0].append(k)
                    column_of[k] = index
                    placed = True
                    break
        if not placed:
            column_of[k] = len(columns)
            columns.append(([k], followed))
            if shareable:
                open_groups.append((column_of[k], {name}))

    # 4. sources
    nodes = []
    for k in range(count):
        axis, name, followed = steps_of[k]
        parent = parent_of[k]
        if k in free:
            source = Source(SourceKind.ANY)
        elif parent < 0:
            source = Source(SourceKind.LEVEL1 if axis is Axis.CHILD else SourceKind.ANY)
        elif column_of[parent] >= 0:
            shared = len(columns[column_of[parent]][0]) > 1
            parent_name = steps_of[parent][1]
            source = Source(SourceKind.COLUMN, column=column_of[parent],
                            tag=tag_id[parent_name] if shared else 0)
        else:  # (2): the parent is a first step without a column; only '/' children here
            p_axis, p_name, _ = steps_of[parent]
            source = Source(SourceKind.PARENT, tag=tag_id.get(p_name, 0),
                            level2=p_axis is Axis.CHILD)
        nodes.append(Node(tag_id.get(name, 0), source, column_of[k], guard_of[k]))

    return Cluster(
        tuple(nodes),
        tuple(Column(tuple(members), loop) for members, loop in columns),
        tuple(QueryPlan(q.number, str(q), query_node[i], len(q),
                        tuple((column_of[k], t, d) for k, t, d in chain_nodes[i]))
              for i, q in enumerate(queries)))
