"""The lazy DFA's misses in compiled code (Numba): the next active set of a DFA state on a tag,
interned, with the queries it accepts, in one call.

:class:`xpfilt.software.fast.FastFilter` keeps the DFA of its compiled loop as arrays
(:class:`xpfilt.software.fast._DfaArrays`); when the loop meets a transition it has not
computed, :func:`miss` computes it from the shared NFA kept as arrays too
(:meth:`xpfilt.software.fast._Nfa.arrays`): the descendant states of the set stay, the states
whose source is in the set are entered by the tag's transitions and by ``*``, and the states
entered add their epsilon moves. The new set, each state once in no particular order, is
looked up in an open-addressing table of the sets met so far by the sum of its states' keys
(then compared through a byte mark per NFA state), and, if new, appended with the 64-query
words of the queries it accepts.

10,000 NITF queries make 1,421 misses over 15 MB, on sets of ~280 states. In NumPy (a dozen
calls on small arrays each) a miss cost ~45 µs; a first compiled version, a bisection per
state for its transition on the tag, ~25 µs: not the arithmetic but the NFA rows, random reads
that miss the caches, each behind a mispredicted branch. Now the tag's transitions are read in
order against marks, and the loops over the set do not branch on what they read (every value
is written, the count moves on by 0 or 1), so the processor overlaps the reads: ~3 µs, and
~10 µs as called from Python between scans.

The caller makes room first (:meth:`xpfilt.software.fast._DfaArrays.room`): nothing here
allocates, so the ahead-of-time module (``_dfa_aot``, built with the scanner's by ``python -m
xpfilt.software.compiled``, stamped with the same source hash) runs without Numba's reference
counting.

Array layouts (the column numbers are in :mod:`xpfilt.software.scanner`): ``nfa``, int32 rows
per NFA state and one past the last: ``N_WILD`` its target on ``*`` (-1: none), ``N_EPS`` its
descendant state (-1: none), ``N_ACCEPT`` the internal numbers of the queries it accepts are
``accept_rank[a:b]`` (``a, b`` this row's and the next's), ``N_LOOP`` 1 for a descendant
state; ``edges``, the named unguarded transitions as rows (source, target), sorted by tag id
then source, tag id ``t``'s at ``tag_start[t]:tag_start[t + 1]``. The DFA: ``rows`` int64 per
DFA state, ``D_START`` where its set starts in ``pool`` (the next row's: where it ends),
``D_HASH`` its hash; ``slots`` the open-addressing table (-1: empty; a power of two, at most
half full); ``accept_*`` as :func:`xpfilt.software.compiled.answers` reads them; ``meta`` the
counts (``META_*``).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
from numba import njit

from xpfilt.software.scanner import (
    D_HASH,
    D_START,
    META_ACCEPT,
    META_POOL,
    META_STATES,
    N_ACCEPT,
    N_EPS,
    N_LOOP,
    N_WILD,
    source_hash,
)

__all__ = ["miss", "intern", "rehash", "build_aot"]


@njit(cache=True, inline="always", _nrt=False)
def _mix(s):
    """A 64-bit key of NFA state ``s`` (splitmix64's finalizer); a set's hash is the sum of its
    states' keys, whatever their order."""
    x = np.uint64(s) * np.uint64(0x9E3779B97F4A7C15)
    x = (x ^ (x >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    x = (x ^ (x >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return x ^ (x >> np.uint64(31))


@njit(cache=True, inline="always", _nrt=False)
def _insertion_sort(a, lo, hi):
    for i in range(lo + 1, hi):
        x = a[i]
        j = i - 1
        while j >= lo and a[j] > x:
            a[j + 1] = a[j]
            j -= 1
        a[j + 1] = x


@njit(cache=True, _nrt=False)
def _intern(
    h,
    entered,
    ne,
    nfa,
    accept_rank,
    rows,
    pool,
    slots,
    accept_start,
    accept_count,
    words,
    masks,
    meta,
    scratch,
    marks,
):
    """The DFA state of the set ``pool[p:q]`` (``p = meta[META_POOL]``, ``q =
    rows[meta[META_STATES] + 1, D_START]``; each state once, in any order; ``h`` the sum of
    their keys), found, or made the next one with the queries ``entered[:ne]`` accept.
    ``marks`` is all zero, and left so."""
    number = meta[META_STATES]
    p = meta[META_POOL]
    q = rows[number + 1, D_START]
    n = q - p
    key = np.int64(h >> np.uint64(1))
    mask = len(slots) - 1
    i = key & mask
    marked = False
    found = -1
    while True:
        s = slots[i]
        if s < 0:
            break
        if rows[s, D_HASH] == key:
            a = rows[s, D_START]
            if rows[s + 1, D_START] - a == n:  # the same states? (any order)
                if not marked:
                    for k in range(p, q):
                        marks[pool[k]] = 1
                    marked = True
                same = True
                for k in range(a, a + n):
                    if marks[pool[k]] == 0:
                        same = False
                        break
                if same:
                    found = s
                    break
        i = (i + 1) & mask
    if marked:
        for k in range(p, q):
            marks[pool[k]] = 0
    if found >= 0:
        rows[number + 1, D_START] = p  # the candidate is dropped
        return found
    slots[i] = number
    rows[number, D_HASH] = key
    meta[META_STATES] = number + 1
    meta[META_POOL] = q
    # the queries it accepts (only entered states accept), as 64-query words of internal
    # numbers: the masks gathered in ``marks`` read as words, the words touched in scratch
    used = meta[META_ACCEPT]
    accept_start[number] = used
    wordmasks = marks.view(np.uint64)
    c = 0
    one = np.uint64(1)
    for k in range(ne):
        t = entered[k]
        for r in range(nfa[t, N_ACCEPT], nfa[t + 1, N_ACCEPT]):
            x = accept_rank[r]
            w = x >> 6
            if wordmasks[w] == 0:
                scratch[c] = w
                c += 1
            wordmasks[w] |= one << np.uint64(x & 63)
    _insertion_sort(scratch, 0, c)
    for k in range(c):
        w = scratch[k]
        words[used + k] = w
        masks[used + k] = wordmasks[w]
        wordmasks[w] = 0
    accept_count[number] = c
    meta[META_ACCEPT] = used + c
    return number


@njit(cache=True, _nrt=False)
def miss(
    top,
    tag,
    nfa,
    edges,
    tag_start,
    accept_rank,
    rows,
    pool,
    slots,
    table,
    accept_start,
    accept_count,
    words,
    masks,
    meta,
    scratch,
    marks,
):
    """Fills ``table[top, tag]`` with the DFA state reached from ``top`` on tag id ``tag`` (0:
    a name no query has) by the unguarded transitions, and returns it. The caller made room
    for one more state, one more set of any size and one more state's words; ``scratch``
    holds a number per NFA state and per query word, ``marks`` a byte per NFA state and per
    8 queries (all zero, and left so)."""
    a = rows[top, D_START]
    b = rows[top + 1, D_START]
    ne = 0  # the states entered: scratch[:ne]
    if tag > 0 and tag_start[tag] < tag_start[tag + 1]:
        # the transitions on the tag whose source is in the set: the set marked, the tag's
        # transitions read in order (a search per state was 10 times slower: its branches)
        for k in range(a, b):
            marks[pool[k]] = 1
        for e in range(tag_start[tag], tag_start[tag + 1]):
            scratch[ne] = edges[e, 1]
            ne += marks[edges[e, 0]]
        for k in range(a, b):
            marks[pool[k]] = 0
    p = meta[META_POOL]
    q = p  # the next set: pool[p:q]
    # Without branches on what the NFA rows hold: the rows are random reads (cache misses),
    # which the processor overlaps only when no mispredicted branch waits on one; every
    # value is written, and the count moves on by 0 or 1.
    for k in range(a, b):
        s = pool[k]
        pool[q] = s  # a descendant state stays
        q += nfa[s, N_LOOP]
        t = nfa[s, N_WILD]
        scratch[ne] = t
        ne += t >= 0
    # the states entered (each once: a trie state has one parent), then their epsilon moves
    # (descendant states, each once: one may be kept already)
    for k in range(p, q):
        marks[pool[k]] = 1
    for k in range(ne):
        t = scratch[k]
        pool[q] = t
        q += 1
    for k in range(ne):
        e = nfa[scratch[k], N_EPS]
        if e >= 0:
            pool[q] = e
            q += 1 - marks[e]
            marks[e] = 1
    h = np.uint64(0)
    for k in range(p, q):
        s = pool[k]
        marks[s] = 0
        h += _mix(s)
    rows[meta[META_STATES] + 1, D_START] = q
    nxt = _intern(
        h,
        scratch,
        ne,
        nfa,
        accept_rank,
        rows,
        pool,
        slots,
        accept_start,
        accept_count,
        words,
        masks,
        meta,
        scratch[ne:],
        marks,
    )
    table[top, tag] = nxt
    return nxt


@njit(cache=True, _nrt=False)
def intern(
    states,
    entered,
    nfa,
    _edges,
    _tag_start,
    accept_rank,
    rows,
    pool,
    slots,
    _table,
    accept_start,
    accept_count,
    words,
    masks,
    meta,
    scratch,
    marks,
):
    """The DFA state of the NFA states ``states`` (each once), found or made, with the queries
    ``entered`` (a part) accept: the start state and the transitions the Python side
    computes (guarded steps). The caller made room as for :func:`miss`; the arguments after
    ``entered`` are :func:`miss`'s (some unused here)."""
    p = meta[META_POOL]
    h = np.uint64(0)
    for k in range(len(states)):
        pool[p + k] = states[k]
        h += _mix(states[k])
    rows[meta[META_STATES] + 1, D_START] = p + len(states)
    return _intern(
        h,
        entered,
        len(entered),
        nfa,
        accept_rank,
        rows,
        pool,
        slots,
        accept_start,
        accept_count,
        words,
        masks,
        meta,
        scratch,
        marks,
    )


@njit(cache=True, _nrt=False)
def rehash(rows, count, slots):
    """Enters DFA states ``0..count - 1`` into the empty table ``slots`` (after it grew)."""
    mask = len(slots) - 1
    for s in range(count):
        i = rows[s, D_HASH] & mask
        while slots[i] >= 0:
            i = (i + 1) & mask
        slots[i] = s
    return 0


#: The exported signatures of the ahead-of-time build.
_MISS = (
    "i8(i8, i8, i4[:, ::1], i4[:, ::1], i4[::1], i4[::1], i8[:, ::1], i4[::1], i4[::1], "
    "i4[:, ::1], i8[::1], i4[::1], i4[::1], u8[::1], i8[::1], i4[::1], u1[::1])"
)
_INTERN = (
    "i8(i4[::1], i4[::1], i4[:, ::1], i4[:, ::1], i4[::1], i4[::1], i8[:, ::1], i4[::1], "
    "i4[::1], i4[:, ::1], i8[::1], i4[::1], i4[::1], u8[::1], i8[::1], i4[::1], u1[::1])"
)
_REHASH = "i8(i8[:, ::1], i8, i4[::1])"


def build_aot(folder: Path = Path(__file__).parent) -> list[Path]:
    """Compiles :func:`miss`, :func:`intern` and :func:`rehash` ahead of time (Numba's
    ``pycc``) into the extension module ``_dfa_aot`` in ``folder``, stamped with
    :func:`xpfilt.software.scanner.source_hash` as the scanner's modules are (without NRT:
    they allocate nothing)."""
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # pycc is deprecated, and still the AOT route
        from numba.pycc import CC

    stamp = source_hash()

    def stamped():
        return stamp

    cc = CC("_dfa_aot")
    cc.output_dir = str(folder)
    cc.verbose = False
    cc.use_nrt = False
    for export, signature, function in (
        ("miss", _MISS, miss),
        ("intern", _INTERN, intern),
        ("rehash", _REHASH, rehash),
    ):
        cc.export(export, signature)(function.py_func)
    cc.export("source_hash", "i8()")(stamped)
    cc.compile()
    return [next(folder.glob("_dfa_aot.*"))]


if __name__ == "__main__":
    for path in build_aot():
        print(path)
