"""What the fast engine needs of its compiled loop without importing Numba: the constants the
loop (:mod:`xpfilt.software.compiled`) and :mod:`xpfilt.software.fast` share, the name table,
and the hash of ``compiled.py`` that stamps its ahead-of-time build (see
:func:`xpfilt.software.fast.compiled_loop`).
"""

from __future__ import annotations

import pkgutil
import zlib
from typing import Optional

import numpy as np

__all__ = [
    "ACCEPTED",
    "DEFERRED",
    "DONE",
    "MISS",
    "GUARD",
    "MAX_DEPTH",
    "MAX_ATTRIBUTES",
    "CTX_SIZE",
    "name_table",
    "number_strings",
    "source_hash",
    "cpu_runs_aot",
]

#: A document's verdict in the loop's ``status``: 0 not scanned yet.
ACCEPTED, DEFERRED = 1, 2
#: What the loop's ``scan`` returns (``scan_tree`` also ``GUARD``: a guarded transition's key
#: is not in the table yet).
DONE, MISS, GUARD = 0, 1, 2
#: Element nesting the scanner follows (deeper documents are deferred).
MAX_DEPTH = 1024
#: Attributes per element the duplicate check follows (more are deferred).
MAX_ATTRIBUTES = 64
#: ctx slots: where a call stopped, and the document state to resume with.
CTX_DOC, CTX_POS, CTX_DEPTH, CTX_ROOT_DONE, CTX_VISITED, CTX_STAMP, CTX_MISS_STATE, CTX_MISS_TAG = (
    range(8)
)
CTX_SIZE = 8
#: ``scan_tree``'s further ctx slots: the elements of the document it stopped in, and on
#: ``GUARD`` the length and the hash of the key it did not find.
CTX_ELEMENTS, CTX_KEY, CTX_HASH = range(8, 11)
TREE_CTX_SIZE = 11
#: Columns of ``scan_tree``'s element rows: tag id, parent element (-1: the root), offset of
#: its ``<``, DFA state, first and last of its text children (``tx`` rows, linked; -1: none).
EL_TAG, EL_PARENT, EL_POS, EL_STATE, EL_TEXT, EL_LAST = range(6)
#: Columns of its guard rows: its attribute names ``gattr[a0:a1]``, whether it reads the text
#: children, its nested paths ``gpath[p0:p1]``; of its memo entries: key offset and length in
#: ``keys``, next DFA state, key hash.
G_ATTR0, G_ATTR1, G_TEXT, G_PATH0, G_PATH1 = range(5)
E_OFFSET, E_LENGTH, E_NEXT, E_HASH = range(4)

#: The lazy DFA's misses (:mod:`xpfilt.software.compiled_dfa`): columns of its NFA rows (the
#: target on ``*``, the descendant state, where the accepted queries start, whether it is a
#: descendant state), of its DFA rows (where the set starts, its hash), its ``meta`` counts.
N_WILD, N_EPS, N_ACCEPT, N_LOOP = range(4)
N_COLUMNS = 4
D_START, D_HASH = range(2)
META_STATES, META_POOL, META_ACCEPT = range(3)
META_SIZE = 3

#: The files the ahead-of-time build is stamped with (read through the package's loader: a Spark
#: executor imports this package from a zip file).
_SOURCES = ("compiled.py", "compiled_dfa.py", "scanner.py")


#: The x86-64 levels the ahead-of-time ``_scanner_aot`` may be built for, with the flags of
#: Linux's ``/proc/cpuinfo`` each needs (x86-64-v3: Intel since 2013, AMD since 2015).
AOT_LEVELS = {
    "x86-64-v2": ("popcnt",),
    "x86-64-v3": ("popcnt", "avx", "avx2", "bmi1", "bmi2", "fma", "f16c", "movbe", "abm", "xsave"),
}
#: The file beside the build that names its level (none: x86-64-v2).
AOT_LEVEL_FILE = "_scanner_aot.cpu"


def _cpu_flags() -> Optional[frozenset]:
    """The CPU's flags as Linux's ``/proc/cpuinfo`` lists them; None where it does not."""
    try:
        with open("/proc/cpuinfo") as info:
            text = info.read(1 << 16)
    except OSError:
        return None
    for line in text.splitlines():
        if line.startswith("flags"):
            return frozenset(line.partition(":")[2].split())
    return None


def aot_level() -> str:
    """The x86-64 level the ahead-of-time build was made for (:data:`AOT_LEVEL_FILE`)."""
    try:
        data = pkgutil.get_data(__package__, AOT_LEVEL_FILE)
    except OSError:
        data = None
    return data.decode().strip() if data else "x86-64-v2"


def cpu_level() -> str:
    """The highest level of :data:`AOT_LEVELS` this CPU runs (x86-64-v2 if it cannot tell)."""
    flags = _cpu_flags() or frozenset()
    return "x86-64-v3" if flags.issuperset(AOT_LEVELS["x86-64-v3"]) else "x86-64-v2"


def cpu_runs_aot() -> bool:
    """Whether this CPU runs the ahead-of-time build: on x86-64 its ``answers`` is built for the
    level of the CPU that built it (:func:`aot_level`; x86-64-v3's BMI instructions count the
    bits ~5 % faster at 100,000 queries), and this CPU needs that level's flags (x86-64-v2:
    POPCNT, every x86-64 CPU since 2009), as far as Linux's ``/proc/cpuinfo`` tells; elsewhere
    assumed."""
    flags = _cpu_flags()
    if flags is None:
        return True
    return flags.issuperset(AOT_LEVELS.get(aot_level(), AOT_LEVELS["x86-64-v3"]))


def fnv1a(name: bytes) -> int:
    """The name hash of the loop's table (32-bit FNV-1a)."""
    h = 2166136261
    for b in name:
        h = ((h ^ b) * 16777619) & 0xFFFFFFFF
    return h


def name_table(tag_ids: dict) -> tuple:
    """The open-addressing hash table of the query names for the loop: (table, names,
    name_offsets, name_tags). Names that are not ASCII are left out (the scanner defers
    documents with such names)."""
    items = [(name.encode(), tag) for name, tag in tag_ids.items() if name.isascii()]
    size = 16
    while size < 2 * len(items) + 1:
        size *= 2
    table = np.full(size, -1, np.int32)
    names = np.frombuffer(b"".join(name for name, _ in items) or b"\0", np.uint8)
    offsets = np.zeros(len(items) + 1, np.int64)
    offsets[1:] = np.cumsum([len(name) for name, _ in items])
    tags = np.array([tag for _, tag in items], np.int32)
    for k, (name, _) in enumerate(items):
        h = fnv1a(name) & (size - 1)
        while table[h] >= 0:
            h = (h + 1) & (size - 1)
        table[h] = k
    return table, names, offsets, tags


def number_strings(numbers) -> tuple:
    """The loop's ``format_numbers`` table of the query numbers: each number in decimal and a
    space, NUL-padded to a multiple of 8 bytes (uint64 words, one row per position), and the
    length of each with its space."""
    values = np.asarray(numbers, np.int64)
    digits = max(len(str(int(values.min()))), len(str(int(values.max())))) if len(values) else 1
    width = (digits + 8) // 8 * 8  # and the space
    texts = values.astype(f"S{width}")  # decimal, NUL-padded
    lengths = np.char.str_len(texts).astype(np.int64)
    slots = np.frombuffer(texts.tobytes(), np.uint8).reshape(len(values), width).copy()
    slots[np.arange(len(values)), lengths] = ord(" ")
    return slots.view("<u8").astype(np.uint64), lengths + 1


def source_hash() -> int:
    """A 62-bit hash of ``compiled.py``, ``compiled_dfa.py`` and of this module (its
    constants): the ahead-of-time modules answer it when they were built from this very
    source."""
    text = b"".join(pkgutil.get_data(__package__, name) or b"" for name in _SOURCES)
    # two 32-bit checksums, not a cryptographic digest: they tell a build from a stale one,
    # and hashlib (OpenSSL) took 3 ms of every run's start-up to load
    return (zlib.crc32(text) << 30) ^ zlib.adler32(text)
