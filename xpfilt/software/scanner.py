"""What the fast engine needs of its compiled loop without importing Numba: the constants the
loop (:mod:`xpfilt.software.compiled`) and :mod:`xpfilt.software.fast` share, the name table,
and the hash of ``compiled.py`` that stamps its ahead-of-time build (see
:func:`xpfilt.software.fast.compiled_loop`).
"""

from __future__ import annotations

import hashlib
from pathlib import Path

import numpy as np

__all__ = [
    "ACCEPTED",
    "DEFERRED",
    "DONE",
    "MISS",
    "MAX_DEPTH",
    "MAX_ATTRIBUTES",
    "CTX_SIZE",
    "name_table",
    "source_hash",
    "cpu_runs_aot",
]

#: A document's verdict in the loop's ``status``: 0 not scanned yet.
ACCEPTED, DEFERRED = 1, 2
#: What the loop's ``scan`` returns.
DONE, MISS = 0, 1
#: Element nesting the scanner follows (deeper documents are deferred).
MAX_DEPTH = 1024
#: Attributes per element the duplicate check follows (more are deferred).
MAX_ATTRIBUTES = 64
#: ctx slots: where a call stopped, and the document state to resume with.
CTX_DOC, CTX_POS, CTX_DEPTH, CTX_ROOT_DONE, CTX_VISITED, CTX_STAMP, CTX_MISS_STATE, CTX_MISS_TAG = (
    range(8)
)
CTX_SIZE = 8

_SOURCE = Path(__file__).with_name("compiled.py")


def cpu_runs_aot() -> bool:
    """Whether this CPU runs the ahead-of-time build (its ``answers`` is built for x86-64-v2,
    :data:`xpfilt.software.compiled.AOT_CPU`): not an x86-64 one without POPCNT (before 2009),
    as far as Linux's ``/proc/cpuinfo`` tells; elsewhere assumed."""
    try:
        with open("/proc/cpuinfo") as info:
            text = info.read(1 << 16)
    except OSError:
        return True
    return " popcnt" in text or "flags" not in text


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


def source_hash() -> int:
    """A 62-bit hash of ``compiled.py``: the ahead-of-time module answers it when it was built
    from this very source."""
    return int.from_bytes(hashlib.sha256(_SOURCE.read_bytes()).digest()[:8], "little") >> 2
