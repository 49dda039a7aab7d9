"""The fast software engine: one shared NFA over all queries, run as a lazily built DFA.

The queries become one nondeterministic automaton, YFilter's (Diao & Franklin 2003): a trie of
location steps shared by every query with the same leading steps. A step ``/x`` is a transition
on ``x`` (``*``: on any name); a step ``//x`` first takes an epsilon move to a *descendant state*
that loops on every name, then the transition on ``x``. So ``/a/b``, ``/a/c`` and ``/a//d`` share
the state after ``/a``: 100,000 generated NITF queries of depth <= 6 make 135,000 states, where
the reference filter has 590,000 stack columns, all updated on every tag.

Filtering keeps a stack of *active state sets*, one per open element: ``open(tag)`` pushes the set
reached from the top set on ``tag`` (every trie transition on ``tag`` or ``*``, every descendant
state kept, and the epsilon moves of the states reached), ``close`` pops. The sets are the states
of a DFA that is built lazily: each set is interned once (as the bytes of its sorted state
numbers) and gets a small dict ``tag -> next set``, so a path seen before costs one dict lookup
per element, whatever the number of queries. Only a miss (a set and tag never seen together)
touches the NFA, with a few NumPy operations over the set and the tag's transitions, so its
cost follows the active states, not the query nodes. Each set knows, once, which queries it accepts;
a document's answer is the union over the sets it visited.

Predicates are transitions of their own, never shared with an unguarded step. A set whose
transition on a tag passes through guarded steps is not memoized as one entry: the guarded
steps are tested on the element and the outcome picks the memoized next set. The tests are
:mod:`xpfilt.software.fast_predicates` closures, compiled once per distinct predicate list, which ask
:meth:`xpfilt.lang.xpath.Predicate.holds` (the one definition of XPath comparisons) once per distinct
value; each distinct test runs once per element, and only on an element that has what it needs
(the attribute, a text child, a child of the name its nested path starts with): single
comparisons are read from a per-transition table, value -> the tests it satisfies. ``text()`` needs the element's text children, ``position()`` its
earlier siblings and a nested path (twig) its subtree, so on this Python path a query set with
any of them runs over :func:`xpfilt.software.events.parse_events` and the predicates' first
pass, as the reference does. Profiles that combine paths with ``and``/``or``/``not`` are answered from their
paths' answers (:class:`xpfilt.lang.profiles.ProfilePaths`).

Query sets run through the compiled loop (:mod:`xpfilt.software.compiled`, see
:func:`compiled_loop`): it scans whole batches of documents (:meth:`FastFilter.filter_many`),
steps the same DFA kept as arrays (:class:`_DfaArrays`: there the sets are interned by the
compiled side, not as bytes), and comes back here only on a miss, which
:mod:`xpfilt.software.compiled_dfa` computes in one call. With predicates it makes
two passes per document and decides a guarded transition by the element's key (the raw values
its predicates read, its nested-path bits: :mod:`xpfilt.software.fast_guards`), so it comes
back here only for a key it has not met; ``position()`` and nested paths with predicates of
their own keep the Python path. It decides only the common
case of XML; every other document it defers to the Python path below (``stats`` counts
``compiled_documents`` and ``expat_documents``). On that path documents are made UTF-8 by
:func:`xpfilt.software.events.utf8_document` (the one encoding policy) and parsed by expat
directly, without building event objects; a document expat rejects is parsed again by
:func:`xpfilt.software.events.iter_events`, which raises the error every other engine raises.

The memo is bounded: when its sets, accepted queries and transitions grow past ``cache_bytes``
it is dropped between two documents and rebuilt on demand (``stats['resets']`` counts it).
"""

from __future__ import annotations

import gc
import os
from collections import defaultdict
from contextlib import contextmanager
from types import SimpleNamespace
from typing import Iterable, Iterator, Optional, Sequence, Union
from xml.parsers import expat

import numpy as np

from xpfilt.lang.profiles import ProfilePaths
from xpfilt.lang.xpath import Axis, Query
from xpfilt.software.events import (
    Document,
    DocumentError,
    Event,
    EventKind,
    iter_events,
    parse_events,
    utf8_document,
)
from xpfilt.software.fast_guards import GuardTables, compilable, nested_paths
from xpfilt.software.fast_predicates import (
    CHILD,
    CHILDREN,
    TEXT,
    VALUE_MEMO_SIZE,
    PredicateTests,
    Test,
    needed,
)
from xpfilt.software.predicates import Positions, first_pass, needs_text, needs_tree

__all__ = ["FastFilter", "DEFAULT_CACHE_BYTES", "gc_paused", "compiled_loop"]

#: Memo size before it is dropped: interned sets and their accepted queries (4 bytes per number)
#: and the transition entries (a document with a million distinct names cannot grow it unseen).
DEFAULT_CACHE_BYTES = 256 << 20

#: What one memo dict entry costs, besides its key (a CPython dict slot, the key string, an int).
_ENTRY_BYTES = 100

_STATE = np.int32  # NFA state numbers as stored in the interned sets
_INDEX = np.intp  # ... and while a miss computes with them (NumPy indexes with intp)


def compiled_loop() -> Optional[SimpleNamespace]:
    """The compiled inner loop's ``scan`` and ``answers`` with the constants and name table of
    :mod:`xpfilt.software.scanner`, and ``kind``: how it was had. None when ``XPFILT_COMPILED=0``,
    or when Numba is not installed and no current ahead-of-time build exists.

    The ahead-of-time build, the extension modules ``_scanner_aot*`` and ``_dfa_aot`` (the
    misses, :mod:`xpfilt.software.compiled_dfa`) beside this file made by
    ``python -m xpfilt.software.compiled`` (``make setup`` runs it), loads in a millisecond
    without Numba or LLVM (``kind`` ``aot``). Without it, or when it was built from another
    version of ``compiled.py``, Numba compiles the loop just in time and caches it on disk
    (``kind`` ``jit``: ~10 CPU-s once, then ~0.8 s per process to import Numba and load the
    cache). ``XPFILT_COMPILED=jit`` skips the ahead-of-time build. Loaded on first use: a
    command that filters nothing pays nothing."""
    from xpfilt.software import scanner

    mode = os.environ.get("XPFILT_COMPILED", "1")
    if mode == "0":
        return None
    found = None
    if mode != "jit" and scanner.cpu_runs_aot():
        try:
            from xpfilt.software import _dfa_aot as aot_dfa  # type: ignore[attr-defined]
            from xpfilt.software import _scanner_aot as aot  # type: ignore[attr-defined]
            from xpfilt.software import _scanner_aot_scan as aot_scan  # type: ignore[attr-defined]
        except ImportError:
            aot = aot_scan = aot_dfa = None
        stamp = scanner.source_hash()
        if aot is not None and all(m.source_hash() == stamp for m in (aot, aot_scan, aot_dfa)):
            found = SimpleNamespace(
                scan=aot_scan.scan,
                scan_tree=aot.scan_tree,
                answers=aot.answers,
                format_numbers=aot.format_numbers,
                miss=aot_dfa.miss,
                intern=aot_dfa.intern,
                rehash=aot_dfa.rehash,
                kind="aot",
            )
    if found is None:
        try:
            from xpfilt.software import compiled, compiled_dfa
        except ImportError:  # Numba missing: the Python path answers alone
            return None
        found = SimpleNamespace(
            scan=compiled.scan,
            scan_tree=compiled.scan_tree,
            answers=compiled.answers,
            format_numbers=compiled.format_numbers,
            miss=compiled_dfa.miss,
            intern=compiled_dfa.intern,
            rehash=compiled_dfa.rehash,
            kind="jit",
        )
    for name in (
        "ACCEPTED",
        "MISS",
        "GUARD",
        "MAX_DEPTH",
        "MAX_ATTRIBUTES",
        "CTX_SIZE",
        "TREE_CTX_SIZE",
        "name_table",
        "number_strings",
    ):
        setattr(found, name, getattr(scanner, name))
    return found


@contextmanager
def gc_paused() -> Iterator[None]:
    """Pause the cyclic garbage collector, and restore its state after. Loading 100,000 queries
    and building their automaton allocate about a million objects that form no cycle, and the
    collections they trigger cost more than the work itself (measured: parsing 100,000 queries
    2.0 s -> 0.9 s, building the NFA 1.1 s -> 0.35 s)."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


class _Nfa:
    """The shared automaton of a query list (built once, read-only while filtering).

    State 0 is the document (level 0). ``eps[s]``: the descendant state of ``s`` (-1: none);
    ``loop[s]``: ``s`` is a descendant state (stays active below its element). Unguarded
    transitions ``(s, tag id) -> t`` are two arrays per tag id (sources, targets), the ``*`` ones
    (tag id 0) also one dense array ``wild[s]``; a step marks its states in a scratch array and
    reads each source's mark, so its cost follows the active states and the tag's transitions.
    Guarded transitions are listed per ``(s, tag id)`` with the step whose predicates guard them.
    """

    def __init__(self, queries: Sequence[Query]):
        eps: list[int] = [-1]  # state -> its descendant state (-1: none)
        children: list = [None]  # state -> {name or '*': target} (or None)
        loops: list[int] = []  # the descendant states
        guarded_index: dict[tuple, int] = {}
        guarded: dict[tuple[int, str], list] = defaultdict(list)
        final_of: list[int] = []  # query position -> its accepting state
        edge_sources: list[int] = []  # unguarded transitions, in creation order
        edge_names: list[str] = []
        edge_targets: list[int] = []
        parent: list[int] = [-1]  # state -> the state it was entered from (trie order)
        label: list[str] = [""]  # state -> the name entering it, "//" for a descendant state
        descendant = Axis.DESCENDANT
        for query in queries:
            state = 0
            for step in query.steps:
                if step.axis is descendant:
                    target = eps[state]
                    if target < 0:
                        target = eps[state] = len(eps)
                        eps.append(-1)
                        children.append(None)
                        parent.append(state)
                        label.append("//")
                        loops.append(target)
                    state = target
                if step.predicates:
                    key = (state, step.name, step.predicates)
                    target = guarded_index.get(key)
                    if target is None:
                        target = guarded_index[key] = len(eps)
                        eps.append(-1)
                        children.append(None)
                        parent.append(state)
                        label.append(step.name)
                        guarded[(state, step.name)].append((step, target))
                else:
                    kids = children[state]
                    if kids is None:
                        kids = children[state] = {}
                    target = kids.get(step.name)
                    if target is None:
                        target = kids[step.name] = len(eps)
                        eps.append(-1)
                        children.append(None)
                        parent.append(state)
                        label.append(step.name)
                        edge_sources.append(state)
                        edge_names.append(step.name)
                        edge_targets.append(target)
                state = target
            final_of.append(state)

        count = len(eps)
        guarded_steps = [step for targets in guarded.values() for step, _ in targets]
        # the names of nested paths too: the compiled loop's first pass matches them by tag id
        nested = {step.name for path in nested_paths(guarded_steps) for step in path.steps}
        names = sorted((set(edge_names) | {name for _, name in guarded} | nested) - {"*"})
        self.tag_ids = tag_ids = {name: i for i, name in enumerate(names, start=1)}
        tag_ids_or_wild = {**tag_ids, "*": 0}
        self.guarded = {
            (s, tag_ids_or_wild[name]): targets for (s, name), targets in guarded.items()
        }
        self.guarded_steps = guarded_steps
        self.needs_text = needs_text(guarded_steps)
        self.needs_tree = needs_tree(guarded_steps)
        #: the steps whose predicates call position(): every element's siblings are counted
        self.positional = [step for step in guarded_steps if step.uses_position]
        #: the documents go through xpfilt.software.events (text children, sibling positions)
        self.needs_events = self.needs_text or self.needs_tree or bool(self.positional)
        self.states = count
        self.width = width = len(tag_ids) + 1
        self.edges = len(edge_targets) + sum(map(len, guarded.values()))
        # unguarded transitions grouped by tag id: (sources, targets)
        sources = np.array(edge_sources, _INDEX)
        tags = np.array([tag_ids_or_wild[name] for name in edge_names], _INDEX)
        targets = np.array(edge_targets, _INDEX)
        order = np.lexsort((sources, tags))
        sources, tags, targets = sources[order], tags[order], targets[order]
        bounds = np.searchsorted(tags, np.arange(width + 1))
        self.by_tag = [(sources[a:b], targets[a:b]) for a, b in zip(bounds[:-1], bounds[1:])]
        self._named = (sources[bounds[1] :], tags[bounds[1] :], targets[bounds[1] :])
        self.member = np.zeros(count, bool)  # scratch: the states of one step
        # '*' transitions are looked up on every miss: one dense array (-1: none)
        self.wild = np.full(count, -1, _INDEX)
        wild_sources, wild_targets = self.by_tag[0]
        self.wild[wild_sources] = wild_targets
        self.eps = np.array(eps, _INDEX)
        self.loop = np.zeros(count, bool)
        self.loop[loops] = True
        self.has_guard = np.zeros(count, bool)
        self.has_guard[[s for s, _ in self.guarded]] = True
        # the queries state s accepts: positions[accept_start[s]:][:accept_count[s]]
        final_of_array = np.array(final_of, _INDEX)
        self.positions = np.argsort(final_of_array, kind="stable").astype(_STATE)
        self.accept_count = np.bincount(final_of_array, minlength=count).astype(_STATE)
        self.accept_start = np.cumsum(self.accept_count, dtype=_INDEX) - self.accept_count
        self._final_of = final_of_array
        self._parent = np.array(parent, _INDEX)
        codes = {**tag_ids, "*": width, "//": width + 1}
        self._label = np.array([codes.get(name, 0) for name in label], _INDEX)

    def accept_order(self) -> np.ndarray:
        """The query positions in the order of their paths read backwards (last step first,
        ``*`` after the names, then ``//``), ties in position order: the order in which the
        queries a DFA state accepts lie close together (int32, internal number -> position).

        A DFA state entered on ``x`` accepts the queries whose last step is ``x`` or ``*`` from
        a state of its active set, and the states active together share the ends of their
        paths. 100,000 NITF queries: the ~50 states a document visits accept 21,000 (state,
        query) pairs, 1,450 (state, 64-query word) pairs in this order (17,000 in position
        order). The ranks of the reversed paths come from prefix doubling over the trie's
        parent links (NumPy sorts, no Python per state)."""
        rank = self._label
        up = self._parent  # the ancestor 2**k steps up (-1: beyond the document state)
        count = len(rank)
        while (up >= 0).any():
            above = np.where(up >= 0, rank[up], -1)
            # the pair (rank, rank 2**k above) as one number: one sort, not lexsort's two
            # stable ones (10,000 queries: 7.2 -> 2.4 ms); ties get one rank in any order
            key = rank * (count + 1) + (above + 1)
            order = np.argsort(key)
            key = key[order]
            fresh = np.empty(count, bool)
            fresh[0] = True
            np.not_equal(key[1:], key[:-1], out=fresh[1:])
            rank = np.empty_like(rank)
            rank[order] = np.cumsum(fresh) - 1
            up = np.where(up >= 0, up[up], -1)
        return np.argsort(rank[self._final_of], kind="stable").astype(_STATE)

    def arrays(self, order: np.ndarray) -> tuple[np.ndarray, ...]:
        """The automaton as :func:`xpfilt.software.compiled_dfa.miss` reads it: ``(nfa,
        edges, tag_start, accept_rank)``, the accepted queries as internal numbers of
        ``order`` (see :meth:`accept_order`). Guarded transitions are not in them (the Python
        side decides those)."""
        from xpfilt.software import scanner as layout

        count = self.states
        nfa = np.zeros((count + 1, layout.N_COLUMNS), np.int32)
        nfa[:count, layout.N_WILD] = self.wild
        nfa[:count, layout.N_EPS] = self.eps
        nfa[:count, layout.N_LOOP] = self.loop
        nfa[:count, layout.N_ACCEPT] = self.accept_start
        nfa[count, layout.N_ACCEPT] = len(self._final_of)
        sources, tags, targets = self._named  # sorted by tag, then source
        edges = np.stack([sources, targets], 1).astype(np.int32)
        tag_start = np.searchsorted(tags, np.arange(self.width + 1)).astype(np.int32)
        # internal numbers grouped by the state accepting them, increasing within a group
        accept_rank = np.argsort(self._final_of[order], kind="stable").astype(np.int32)
        return nfa, edges, tag_start, accept_rank

    def step(self, states: np.ndarray, tag: int) -> tuple[np.ndarray, np.ndarray]:
        """The descendant states ``states`` keep, and the targets of their unguarded transitions
        on tag id ``tag`` (-1: a name no query has) and on ``*``."""
        states = states.astype(_INDEX)
        kept = states[self.loop[states]]
        targets = self.wild[states]
        targets = targets[targets >= 0]
        if tag > 0:
            sources, named = self.by_tag[tag]
            member = self.member  # all False between calls
            member[states] = True
            targets = np.concatenate([targets, named[member[sources]]])
            member[states] = False
        return kept, targets

    def close(self, kept: np.ndarray, targets: np.ndarray) -> np.ndarray:
        """The next active set: ``kept``, ``targets`` and their epsilon moves, sorted, unique."""
        moves = self.eps[targets]
        moves = moves[moves >= 0]
        out = np.concatenate([kept, targets, moves])
        out.sort()
        if len(moves):  # a descendant state may be both kept and entered again
            out = out[np.concatenate([[True], out[1:] != out[:-1]])]
        return out

    def guarded_candidates(self, states: np.ndarray, tag: int) -> list:
        """(step, target) of every guarded transition from ``states`` on ``tag`` or ``*``."""
        out = []
        for s in states[self.has_guard[states]].tolist():
            out.extend(self.guarded.get((s, 0), ()))
            if tag > 0:
                out.extend(self.guarded.get((s, tag), ()))
        return out

    def accepted(self, states: np.ndarray):
        """Positions of the queries ``states`` accept (int32 array), None if there are none."""
        counts = self.accept_count[states]
        accepting = counts > 0
        if not accepting.any():
            return None
        counts = counts[accepting]
        starts = self.accept_start[states[accepting]]
        if (counts == 1).all():
            return self.positions[starts]
        ends = np.cumsum(counts)
        index = np.arange(ends[-1]) - np.repeat(ends - counts - starts, counts)
        return self.positions[index]


def _documents(documents: Sequence[Union[Document, bytes]]) -> list[Document]:
    return [
        Document("<bytes>", bytes(d)) if isinstance(d, (bytes, bytearray)) else d for d in documents
    ]


class _DfaArrays:
    """The lazy DFA of the compiled loop as arrays (see :mod:`xpfilt.software.compiled_dfa`
    for their layout): the transition table and per-state stamp the loop reads, the queries
    each state accepts as :func:`xpfilt.software.compiled.answers` reads them, and the interned
    sets. The compiled code allocates nothing: :meth:`room` grows the arrays (by doubling)
    before each call that may add a state."""

    def __init__(self, width: int, nfa_states: int, words: int):
        from xpfilt.software.scanner import META_SIZE

        size = 64
        self.table = np.full((size, width), -1, np.int32)
        self.seen = np.zeros(size, np.int64)
        self.accept_start = np.zeros(size, np.int64)
        self.accept_count = np.zeros(size, np.int32)
        self.rows = np.zeros((size, 2), np.int64)  # set start, hash; row n + 1: the end
        self.slots = np.full(2 * size, -1, np.int32)
        self.pool = np.zeros(2 * nfa_states + 1024, np.int32)
        self.accept_words = np.zeros(2 * words + 1024, np.int32)
        self.accept_masks = np.zeros(2 * words + 1024, np.uint64)
        self.meta = np.zeros(META_SIZE, np.int64)
        self.states = 0  # as meta[META_STATES]
        self._set_room = nfa_states  # the largest set
        self._word_room = words  # the most words a state accepts

    def room(self, rehash) -> bool:
        """Room for one more state, set and words (``rehash``: the compiled one); whether
        some array was replaced to make it."""
        size = len(self.seen)
        grew = False
        if self.states + 2 > size:
            grew = True
            grown = 2 * size
            table = np.full((grown, self.table.shape[1]), -1, np.int32)
            table[:size] = self.table
            self.table = table
            for name in ("seen", "accept_start", "accept_count", "rows"):
                old = getattr(self, name)
                new = np.zeros((grown, *old.shape[1:]), old.dtype)
                new[:size] = old
                setattr(self, name, new)
            self.slots = np.full(2 * grown, -1, np.int32)
            rehash(self.rows, self.states, self.slots)
        _, pool_used, words_used = self.meta.tolist()
        if pool_used + self._set_room > len(self.pool):
            self.pool = np.concatenate([self.pool, np.zeros_like(self.pool)])
            grew = True
        if words_used + self._word_room > len(self.accept_words):
            self.accept_words = np.concatenate([self.accept_words, self.accept_words])
            self.accept_masks = np.concatenate([self.accept_masks, self.accept_masks])
            grew = True
        return grew

    def set_of(self, number: int) -> np.ndarray:
        """The NFA states of DFA state ``number`` (int32, in no particular order)."""
        start, end = self.rows[number : number + 2, 0].tolist()
        return self.pool[start:end]

    def memo_bytes(self) -> int:
        """What the memo counts of these tables: per state its set (4 bytes a number), its
        table row and its words (12 bytes each), as the Python path's memo counts its own."""
        _, pool_used, words_used = self.meta.tolist()
        return 4 * pool_used + 12 * words_used + self.states * (4 * self.table.shape[1] + 20)


class FastFilter:
    """Filters documents against a fixed list of queries; results are 0-based query positions
    (the same as :class:`xpfilt.software.reference.ReferenceFilter`, which it must always agree with)."""

    def __init__(
        self,
        queries: Sequence[Query],
        cache_bytes: int = DEFAULT_CACHE_BYTES,
        value_memo_size: int = VALUE_MEMO_SIZE,
        compiled: Optional[bool] = None,
    ):
        """``compiled``: run structural query sets through the compiled loop (None: when
        Numba is there, see :func:`compiled_loop`; False: the Python path only)."""
        self.queries = tuple(queries)
        self.cache_bytes = cache_bytes
        self._profiles = ProfilePaths(self.queries)
        with gc_paused():
            self._nfa = _Nfa(self._profiles.paths)
        self._hits = np.zeros(len(self._profiles.paths), bool)
        self._predicate_tests = PredicateTests(value_memo_size)
        self._positional_tests: dict = {}
        self._step_tests: dict[int, tuple] = {}  # id of a guarded NFA step -> _step_test
        self._positions = Positions(())  # the sibling counts of the document being filtered
        self.stats = {
            "nfa_states": self._nfa.states,
            "nfa_transitions": self._nfa.edges,
            "dfa_states": 0,
            "misses": 0,
            "resets": 0,
            "memo_bytes": 0,
            # which path each document took: the compiled scanner, or expat's (deferred by the
            # scanner, or every document when the queries have predicates or Numba is absent)
            "compiled_documents": 0,
            "expat_documents": 0,
        }
        nfa = self._nfa
        self._loop = None
        #: query sets with predicates: the compiled loop's guards (None: no predicates)
        self._guards: Optional[GuardTables] = None
        if compiled is not False and (not nfa.guarded or compilable(nfa.guarded_steps)):
            self._loop = compiled_loop()
        if self._loop is not None and nfa.guarded:
            self._guards = GuardTables(nfa.guarded_steps, nfa.tag_ids, nfa.width)
            self._tag_names = {tag: name for name, tag in nfa.tag_ids.items()}
            self.stats["guard_misses"] = 0
        self.stats["engine"] = "compiled" if self._loop is not None else "python"
        self.stats["loop"] = self._loop.kind if self._loop is not None else None
        if self._loop is not None:
            self._names = self._loop.name_table(nfa.tag_ids)
            # the queries a DFA state accepts, as 64-bit words of a bit set in accept_order
            # (internal numbers), mapped back to positions once per answer (see answers())
            self._order = nfa.accept_order()
            words = len(self._order) // 64 + 1
            self._bits = (np.zeros(words, np.uint64), np.zeros(words, np.uint64))
            depth = self._loop.MAX_DEPTH + 1
            self._scratch = (
                np.zeros(depth, np.int32),  # DFA state per open element
                np.zeros(2 * depth, np.int64),  # name offset and length per open element
                np.zeros(4 * self._loop.MAX_ATTRIBUTES, np.int64),
            )
            self._stamp = 0
            self._answer_rate = 4.0  # positions per document answers() makes room for
            self._numbers_table = None  # filter_many_text's numbers, and as text (number_strings)
            self._text = np.zeros(0, np.uint8)  # ... and its buffer (see format_numbers)
            self._tree_scratch: Optional[tuple] = None  # scan_tree's rows, sized per batch
            self._key = np.zeros(0, np.uint8)
            self._automaton = nfa.arrays(self._order)
            words = len(self._order) // 64 + 1
            #: compiled_dfa's scratch: a number per NFA state and per query word, and a
            #: byte per NFA state and per 8 queries (all zero between calls)
            self._miss_scratch = np.zeros(nfa.states + words + 16, np.int32)
            self._miss_marks = np.zeros(8 * (max(nfa.states // 8, words) + 1), np.uint8)
            self._miss_args: tuple = (None, ())  # (the tables they are for, the arguments)
        self._reset()

    # -- the lazy DFA ---------------------------------------------------------------------
    def _reset(self) -> None:
        self._sets: list[bytes] = []  # DFA state -> its NFA states (sorted int32 bytes)
        self._ids: dict[bytes, int] = {}  # the inverse
        self._trans: list[dict] = []  # DFA state -> {tag name: next DFA state}
        self._accepts: list = []  # DFA state -> positions it accepts, or None
        self._guarded: dict = {}  # (DFA state, name) -> (base set, candidates)
        self._memo_bytes = 0
        if self._guards is not None:
            self._guards.reset()
        if self._loop is not None:  # the same DFA as arrays: transitions, accepted queries
            nfa = self._nfa
            self._dfa = _DfaArrays(nfa.width, nfa.states, len(self._order) // 64 + 1)
        empty = np.zeros(0, _INDEX)
        document = np.zeros(1, _INDEX)
        self._start = self._intern(self._nfa.close(empty, document), document)

    def _intern(self, states: np.ndarray, entered: np.ndarray) -> int:
        """The DFA state of the NFA states ``states``, which ``entered`` (a part) were entered
        by the transition into it (accepting states are only ever entered, never kept; with the
        compiled loop the compiled side interns the set, see :meth:`_new_states`)."""
        if self._loop is not None:
            number = self._loop.intern(
                np.ascontiguousarray(states, np.int32),
                np.ascontiguousarray(entered, np.int32),
                *self._miss_arguments(),
            )
            self._new_states(number)
            return number
        key = states.astype(_STATE).tobytes()
        found = self._ids.get(key)
        if found is not None:
            return found
        number = self._ids[key] = len(self._sets)
        self._sets.append(key)
        self._trans.append({})
        accepts = self._nfa.accepted(entered)
        self._accepts.append(accepts)
        self._memo_bytes += len(key) + (0 if accepts is None else accepts.nbytes)
        self.stats["dfa_states"] += 1
        return number

    def _miss_arguments(self) -> tuple:
        """What :func:`xpfilt.software.compiled_dfa.miss` and ``intern`` take after their
        first two arguments, once the tables have room for one more state (the same tuple
        until an array is replaced)."""
        dfa = self._dfa
        if not dfa.room(self._loop.rehash) and self._miss_args[0] is dfa:
            return self._miss_args[1]
        self._miss_args = (
            dfa,
            (
                *self._automaton,
                dfa.rows,
                dfa.pool,
                dfa.slots,
                dfa.table,
                dfa.accept_start,
                dfa.accept_count,
                dfa.accept_words,
                dfa.accept_masks,
                dfa.meta,
                self._miss_scratch,
                self._miss_marks,
            ),
        )
        return self._miss_args[1]

    def _new_states(self, number: int) -> None:
        """After the compiled side returned DFA state ``number``: if it is a new one, the
        Python path's transitions get its (empty) dict."""
        dfa = self._dfa
        if number == dfa.states:
            dfa.states += 1
            self._trans.append({})
            self.stats["dfa_states"] += 1

    def _states(self, number: int) -> np.ndarray:
        if self._loop is not None:
            return self._dfa.set_of(number)
        return np.frombuffer(self._sets[number], _STATE)

    def _memo(self) -> int:
        """The memo's size in bytes (see ``cache_bytes``)."""
        if self._loop is not None:
            return self._memo_bytes + self._dfa.memo_bytes()
        return self._memo_bytes

    def _miss(self, top: int, name: str, attrs: dict, texts, node) -> int:
        """The next DFA state from ``top`` on element ``name``; memoized unless guarded steps
        decide it, in which case only the outcome of their predicates is looked up."""
        entry = self._guarded.get((top, name))
        if entry is None:
            self.stats["misses"] += 1
            nfa = self._nfa
            states = self._states(top)
            tag = nfa.tag_ids.get(name, -1)
            kept, targets = nfa.step(states, tag)
            candidates = nfa.guarded_candidates(states, tag) if nfa.guarded else None
            if not candidates:
                nxt = self._trans[top][name] = self._intern(nfa.close(kept, targets), targets)
                self._memo_bytes += _ENTRY_BYTES + len(name)
                return nxt
            tests, slots = self._tests(candidates)
            entry = self._guarded[(top, name)] = (kept, targets, candidates, tests, slots, {})
            self._memo_bytes += kept.nbytes + targets.nbytes
        kept, targets, candidates, tests, slots, outcomes = entry
        always, by_need, by_child = tests
        passed = [False] * len(slots)
        for slot, test in always:
            passed[slot] = test(attrs, texts, node)
        if by_need or by_child:
            for need, value in attrs.items():
                group = by_need.get(need)
                if group is not None:
                    self._run(group, (value,), passed, attrs, texts, node)
            if texts:
                group = by_need.get(TEXT)
                if group is not None:
                    self._run(group, texts, passed, attrs, texts, node)
            if node is not None and node.children:
                for slot, test in by_need.get(CHILDREN, ((), (), {}))[0]:
                    passed[slot] = test(attrs, texts, node)
                if by_child:
                    for name in {child.name for child in node.children}:
                        for slot, test in by_child.get(name, ()):
                            passed[slot] = test(attrs, texts, node)
        passed = tuple(passed)
        nxt = outcomes.get(passed)
        if nxt is None:
            entered = np.concatenate(
                [
                    targets,
                    np.array(
                        [t for (_, t), slot in zip(candidates, slots) if passed[slot]], _INDEX
                    ),
                ]
            )
            nxt = outcomes[passed] = self._intern(self._nfa.close(kept, entered), entered)
            self._memo_bytes += _ENTRY_BYTES + len(passed) * 8
        return nxt

    def _run(self, group: tuple, values: Sequence[str], passed: list, attrs, texts, node) -> None:
        """Runs the tests of one :func:`needed` group on an element that has the thing needed
        (``values``: the attribute's value, or the text children). The group's single
        comparisons are read from its table: value -> the slots of those it satisfies."""
        others, comparisons, table = group
        for slot, test in others:
            passed[slot] = test(attrs, texts, node)
        if comparisons:
            for value in values:
                holding = table.get(value)
                if holding is None:
                    if len(table) >= self._predicate_tests.value_memo_size:
                        table.clear()
                    holding = table[value] = tuple(
                        slot for slot, value_holds in comparisons if value_holds(value)
                    )
                    self._memo_bytes += _ENTRY_BYTES + len(value) + 8 * len(holding)
                for slot in holding:
                    passed[slot] = True

    def _tests(self, candidates: list) -> tuple[tuple, list[int]]:
        """The distinct tests of guarded transitions ``candidates`` (each evaluated once per
        element), as ``(always, by_need, by_child)``: (slot, test) pairs to run on every
        element; per :func:`needed` thing a group to run only on an element that has it (see
        :meth:`_run`); per child name the (slot, test) pairs to run only on an element with
        such a child; and the slot of each candidate's test."""
        always: list = []
        by_need: dict = {}
        by_child: dict = defaultdict(list)
        slot_of: dict = {}
        slots = []
        for step, _target in candidates:
            test, need, value_holds = self._step_test(step)
            slot = slot_of.get(test)
            if slot is None:
                slot = slot_of[test] = len(slot_of)
                if need is None:
                    always.append((slot, test))
                elif need.startswith(CHILD):
                    by_child[need[len(CHILD) :]].append((slot, test))
                else:
                    others, comparisons, _table = by_need.setdefault(need, ([], [], {}))
                    if value_holds is None:
                        others.append((slot, test))
                    else:
                        comparisons.append((slot, value_holds))
            slots.append(slot)
        return (always, by_need, dict(by_child)), slots

    def _step_test(self, step) -> tuple:
        """A guarded step's test, what it :func:`needed`, and its value test if it is one
        comparison (:meth:`PredicateTests.comparison`); once per step of the NFA (by identity:
        hashing predicate trees is costly and 10,000 queries put hundreds of steps on one
        transition)."""
        found = self._step_tests.get(id(step))
        if found is None:
            if step.uses_position:
                found = (self._positional(step), None, None)
            else:
                tests = self._predicate_tests
                need = needed(step.predicates)
                found = (
                    tests.test(step.predicates),
                    need,
                    None
                    if need in (None, CHILDREN) or need.startswith(CHILD)
                    else tests.comparison(step.predicates),
                )
            self._step_tests[id(step)] = found
        return found

    def _positional(self, step) -> Test:
        """The test of a step whose predicates call position(): the document's sibling counts
        (:class:`Positions`, set per document) decided it when the element opened."""
        test = self._positional_tests.get(step)
        if test is None:

            def test(_attrs, _texts, _node):
                return self._positions.passed[step]

            self._positional_tests[step] = test
        return test

    def _accepted(self, number: int) -> Optional[np.ndarray]:
        """The positions DFA state ``number`` accepts (None: none). With the compiled loop
        they are kept only as its words (the queries in accept_order, 64 to a mask), and
        expanded here for a document the loop deferred: 100,000 queries over large documents
        made 29,000 DFA states accepting 17 million (state, query) pairs, 70 MB as positions,
        14 MB as words."""
        if self._loop is None:
            return self._accepts[number]
        dfa = self._dfa
        start, count = int(dfa.accept_start[number]), int(dfa.accept_count[number])
        if count == 0:
            return None
        masks = dfa.accept_masks[start : start + count]
        bits = np.unpackbits(masks.astype("<u8").view(np.uint8), bitorder="little").reshape(
            count, 64
        )
        rows, columns = np.nonzero(bits)
        words = dfa.accept_words[start : start + count].astype(np.int64)
        return self._order[words[rows] * 64 + columns]

    def _answer(self, visited: set) -> list[int]:
        found = [a for a in map(self._accepted, visited) if a is not None]
        self.stats["memo_bytes"] = memo = self._memo()
        if memo > self.cache_bytes:
            self._reset()
            self.stats["resets"] += 1
        if not found:
            return self._profiles.answer(()) if self._profiles.combined else []
        hits = self._hits  # all False between documents
        hits[np.concatenate(found)] = True
        positions = np.flatnonzero(hits)
        hits[positions] = False
        if self._profiles.combined:  # the paths' answers into the profiles'
            return self._profiles.answer(positions.tolist())
        return positions.tolist()

    # -- drivers --------------------------------------------------------------------------
    def filter(self, document: Union[Document, bytes]) -> frozenset[int]:
        """Positions (0-based) of the queries that select at least one node of the document."""
        return frozenset(self.filter_ordered(document))

    def filter_ordered(self, document: Union[Document, bytes]) -> list[int]:
        """The same positions in increasing order (no set to build: see
        :func:`xpfilt.engines.filter_batch`)."""
        if isinstance(document, (bytes, bytearray)):
            document = Document("<bytes>", bytes(document))
        if self._loop is not None:
            (found,) = self.filter_many([document])
            if isinstance(found, DocumentError):
                raise found
            return found.tolist()
        return self._filter_python(document)

    def _filter_python(self, document: Document) -> list[int]:
        self.stats["expat_documents"] += 1
        with gc_paused():  # a document's events and tree form no cycle; the memo is large
            if self._nfa.needs_events:
                return self._filter_events(parse_events(document))
            return self._filter_expat(document)

    def filter_many(
        self, documents: Sequence[Union[Document, bytes]]
    ) -> list[Union[np.ndarray, DocumentError]]:
        """The positions of :meth:`filter_ordered` for each document, as an int32 array, or
        the :class:`DocumentError` it raises, in one call: the compiled loop scans the whole
        batch, and only the documents it defers (see :mod:`xpfilt.software.compiled`) or all
        of them when it is not used (``stats['engine']``) go through expat one by one."""
        documents = _documents(documents)
        if self._loop is None:
            return [self._guarded_python(d) for d in documents]
        with gc_paused():
            status, bounds, found = self._scan([d.data for d in documents])
        combined = self._profiles.combined
        bounds = bounds.tolist()  # Python ints slice faster than NumPy scalars

        def compiled(i: int) -> np.ndarray:
            positions = found[bounds[i] : bounds[i + 1]]
            if combined:  # the paths' answers into the profiles'
                positions = np.array(self._profiles.answer(positions.tolist()), np.int32)
            return positions

        return self._assemble(documents, status, compiled, self._guarded_python)

    def _assemble(self, documents: list[Document], status, compiled, deferred) -> list:
        """Each document's answer: ``compiled(i)`` for one the loop accepted, else
        ``deferred(document)`` (the Python path); then the batch's statistics, and the memo
        dropped if it outgrew its budget."""
        accepted = (status == self._loop.ACCEPTED).tolist()
        out = [
            compiled(i) if accepted[i] else deferred(document)
            for i, document in enumerate(documents)
        ]
        self.stats["compiled_documents"] += sum(accepted)
        self.stats["memo_bytes"] = memo = self._memo()
        if memo > self.cache_bytes:
            self._reset()
            self.stats["resets"] += 1
        return out

    def filter_many_text(
        self, documents: Sequence[Union[Document, bytes]], numbers: Sequence[int]
    ) -> list[Union[str, DocumentError]]:
        """:meth:`filter_many`'s answers as text: the numbers ``numbers[position]`` of the
        matching queries, separated by spaces (in increasing order when ``numbers`` increase),
        formatted by the compiled loop straight from the batch's answers; ``xpfilt filter``
        writes them as they are."""

        def joined(found) -> Union[str, DocumentError]:
            if isinstance(found, DocumentError):
                return found
            return " ".join(str(numbers[p]) for p in found.tolist())

        if self._loop is None or self._profiles.combined:
            return [joined(found) for found in self.filter_many(documents)]
        documents = _documents(documents)
        with gc_paused():
            status, bounds, found = self._scan([d.data for d in documents])
        table = self._numbers_table
        if table is None or table[0] is not numbers:  # xpfilt filter passes the same list
            table = self._numbers_table = (numbers, *self._loop.number_strings(numbers))
        lines, text = self._loop.format_numbers(found, bounds, table[1], table[2], self._text)
        self._text = text  # reused by the next batch: each line is decoded (copied) from it
        text = memoryview(text)
        lines = lines.tolist()
        return self._assemble(
            documents,
            status,
            lambda i: str(text[lines[i] : lines[i + 1]], "ascii"),
            lambda document: joined(self._guarded_python(document)),
        )

    def compiled_verdicts(self, datas: Sequence[bytes]) -> list[bool]:
        """Whether the compiled loop accepts each document (False: it defers it to expat, or it
        is not used), from its scan alone (no answers): for the fuzz harness, which compares
        the verdicts with expat's, and ``xpfilt host``'s well-formedness check."""
        if self._loop is None:
            return [False] * len(datas)
        status = self._scan_documents(list(datas))[0]
        return (status == self._loop.ACCEPTED).tolist()

    def _guarded_python(self, document: Document) -> Union[np.ndarray, DocumentError]:
        try:
            return np.array(self._filter_python(document), np.int32)
        except DocumentError as exc:
            return exc

    def _scan(self, datas: list[bytes]) -> tuple:
        """Runs the compiled loop over one batch; returns each document's status and the
        accepted documents' answers (``found[bounds[i]:bounds[i + 1]]``)."""
        loop = self._loop
        count = len(datas)
        status, visited_start, visited_end, visited = self._scan_documents(datas)
        dfa = self._dfa
        bounds, found = loop.answers(
            status,
            visited_start,
            visited_end,
            visited,
            dfa.accept_start,
            dfa.accept_count,
            dfa.accept_words,
            dfa.accept_masks,
            self._order,
            *self._bits,
            int(self._answer_rate * count) + 1024,
        )
        # the next batch's room: a quarter more per document than this one needed
        self._answer_rate = 1.25 * int(bounds[-1]) / max(count, 1)
        return status, bounds, found[: bounds[-1]]

    def _scan_documents(self, datas: list[bytes]) -> tuple:
        """The compiled loop's scan of one batch, without its answers: each document's status
        and the DFA states it visited (``visited[visited_start[i]:visited_end[i]]``)."""
        count = len(datas)
        data = np.frombuffer(b"".join(datas), np.uint8)
        offsets = np.zeros(count + 1, np.int64)
        offsets[1:] = np.cumsum([len(d) for d in datas])
        status = np.zeros(count, np.int8)
        visited_start = np.zeros(count, np.int64)
        visited_end = np.zeros(count, np.int64)
        visited = np.empty(len(data) // 3 + 1, np.int32)
        self._scan_batch(datas, data, offsets, status, visited_start, visited_end, visited)
        return status, visited_start, visited_end, visited

    def _scan_batch(self, datas, data, offsets, status, visited_start, visited_end, visited):
        """:meth:`_scan`'s loop: ``scan`` for query sets without predicates, ``scan_tree``
        with them; each call runs until the end of the batch or a transition the tables do not
        have: a miss (:meth:`_array_miss`), or with predicates a guard's key not met yet
        (:meth:`_guard_miss`), and the next call resumes there."""
        loop, guards = self._loop, self._guards
        ctx = np.zeros(loop.CTX_SIZE if guards is None else loop.TREE_CTX_SIZE, np.int64)
        ctx[1] = -1  # no document begun
        ctx[5] = self._stamp
        head = (data, offsets, status, visited_start, visited_end, visited, ctx)
        tail = (*self._names, self._start, *self._scratch)
        longest = max(map(len, datas), default=0)
        while True:
            dfa = self._dfa  # the miss before may have grown the tables
            if guards is None:
                found = loop.scan(*head, dfa.table, dfa.seen, *tail)
            else:
                found = loop.scan_tree(
                    *head, dfa.table, dfa.seen, *tail, *self._tree_arguments(longest)
                )
            if found == loop.MISS:
                self._array_miss(int(ctx[6]), int(ctx[7]))
            elif found == loop.GUARD:
                key = self._key
                self._guard_miss(int(ctx[6]), int(ctx[7]), bytes(key[: ctx[9]]), int(ctx[10]))
            else:
                break
        self._stamp = int(ctx[5])

    def _tree_arguments(self, longest: int) -> tuple:
        """``scan_tree``'s arguments after the ones ``scan`` takes too, for a batch whose
        longest document has ``longest`` bytes: its scratch rows, and the guard tables as they
        are now (a guard miss grows them)."""
        loop, guards = self._loop, self._guards
        elements = longest // 4 + 2  # the shortest element is <a/>
        if self._tree_scratch is None or len(self._tree_scratch[0]) < elements:
            self._tree_scratch = (
                np.zeros((elements, 6), np.int64),  # element rows (scanner.EL_*)
                np.zeros((elements, 3), np.int64),  # text children: start, end, next
                np.zeros((elements, guards.words), np.uint64),  # nested-path bits
                np.zeros((2 * (loop.MAX_DEPTH + 1), guards.words), np.uint64),
            )
        if len(self._key) < 2 * longest + guards.key_overhead:
            self._key = np.zeros(2 * (2 * longest + guards.key_overhead), np.uint8)
        return (
            *self._tree_scratch,
            guards.masks,
            *guards.arrays(),
            guards.gslots,
            guards.ents,
            guards.keys,
            self._key,
        )

    def _array_miss(self, top: int, tag: int) -> None:
        """Fills ``table[top, tag]``: the compiled loop met it (tag 0: a name no query has).
        The compiled side computes it (:func:`xpfilt.software.compiled_dfa.miss`), unless it
        passes through guarded steps: then it becomes a guard (:mod:`.fast_guards`)."""
        self.stats["misses"] += 1
        nfa = self._nfa
        if nfa.guarded:
            states = self._states(top)
            candidates = nfa.guarded_candidates(states, tag)
            if candidates:
                kept, targets = nfa.step(states, tag)
                name = self._tag_names.get(tag, "")  # "": a name no query has
                g = self._guards.add(top, tag, name, kept, targets, candidates)
                self._memo_bytes += kept.nbytes + targets.nbytes
                self._dfa.table[top, tag] = -2 - g
                return
        nxt = self._loop.miss(top, tag, *self._miss_arguments())
        self._new_states(nxt)

    def _guard_miss(self, top: int, tag: int, key: bytes, h: int) -> None:
        """Decides the guarded transition ``table[top, tag]`` for an element whose key (see
        :mod:`.fast_guards`) the loop has not met, and adds the key. Without nested paths the
        Python path's :meth:`_miss` decides it (its per-value tables, same tests); with them,
        the reference's step test with the loop's nested-path bits."""
        self.stats["guard_misses"] += 1
        guards = self._guards
        guard = guards.guards[-2 - int(self._dfa.table[top, tag])]
        attrs, texts, bits = guards.decode(guard, key)
        if not guard.paths:
            nxt = self._miss(top, guard.name, attrs, texts, None)
        else:
            passed = guard.decide(attrs, texts, bits)
            nxt = guard.outcomes.get(passed)
            if nxt is None:
                chosen = [t for (_, t), ok in zip(guard.candidates, passed) if ok]
                entered = np.concatenate([guard.targets, np.array(chosen, _INDEX)])
                nxt = self._intern(self._nfa.close(guard.kept, entered), entered)
                guard.outcomes[passed] = nxt
                self._memo_bytes += _ENTRY_BYTES + len(passed) * 8
        guards.insert(key, h, nxt)
        self._memo_bytes += len(key) + 40

    def _filter_expat(self, document: Document) -> list[int]:
        """Structural paths only: expat's callbacks step the DFA, no event objects."""
        document = utf8_document(document)  # the one encoding policy (raises like iter_events)
        trans, miss = self._trans, self._miss
        stack = [self._start]
        visited: set[int] = set()
        push, pop, visit = stack.append, stack.pop, visited.add

        def start(name, attrs):
            top = stack[-1]
            nxt = trans[top].get(name)
            if nxt is None:
                nxt = miss(top, name, attrs, (), None)
            push(nxt)
            visit(nxt)

        def end(_name):
            pop()

        parser = expat.ParserCreate()
        parser.StartElementHandler = start
        parser.EndElementHandler = end
        try:
            parser.Parse(document.data, True)
        except expat.ExpatError:
            # malformed: xpfilt.software.events parses it again and raises the error every engine raises
            return self._filter_events(iter_events(document))
        return self._answer(visited)

    def filter_events(self, events: Iterable[Event]) -> frozenset[int]:
        """The same answer from parse events (as :meth:`ReferenceFilter.filter_events`)."""
        return frozenset(self._filter_events(events))

    def _filter_events(self, events: Iterable[Event]) -> list[int]:
        nfa = self._nfa
        events, texts, nodes = first_pass(events, nfa.needs_text, nfa.needs_tree)
        positions = self._positions = Positions(self._nfa.positional)
        trans, miss = self._trans, self._miss
        stack = [self._start]
        visited: set[int] = set()
        push, pop, visit = stack.append, stack.pop, visited.add
        open_kind, close_kind = EventKind.OPEN, EventKind.CLOSE
        for index, (kind, name, value) in enumerate(events):
            if kind is open_kind:
                if positions:
                    positions.open(name, value, texts.get(index, ()), nodes.get(index))
                top = stack[-1]
                nxt = trans[top].get(name)
                if nxt is None:  # only guarded steps or a miss read the texts and the node
                    nxt = miss(top, name, value, texts.get(index, ()), nodes.get(index))
                push(nxt)
                visit(nxt)
            elif kind is close_kind:
                pop()
                if positions:
                    positions.close()
        return self._answer(visited)
