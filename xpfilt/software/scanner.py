"""What the fast engine needs of its compiled loop, without importing Numba: the constants the
loop and :mod:`xpfilt.software.fast` share, the name table, and :func:`load`.

The loop itself is :mod:`xpfilt.software.compiled` (Numba). :func:`load` prefers its
ahead-of-time build, the extension module ``_scanner_aot`` beside this file, made by
``python -m xpfilt.software.compiled`` (``make setup`` runs it): it loads in a millisecond and
needs neither Numba nor LLVM at run time. Without it (or when it was built from another version
of ``compiled.py``) the loop is compiled just in time by Numba and cached on disk
(``cache=True``): ~10 CPU-s once, then ~0.8 s per process to import Numba and load the cache.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path
from types import SimpleNamespace
from typing import Optional

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
    "load",
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


def load() -> Optional[SimpleNamespace]:
    """The loop's ``scan`` and ``answers`` and how they were obtained (``kind``: ``aot`` or
    ``jit``), or None when ``XPFILT_COMPILED=0`` or Numba is not installed and no current
    ahead-of-time build exists. ``XPFILT_COMPILED=jit`` skips the ahead-of-time build."""
    mode = os.environ.get("XPFILT_COMPILED", "1")
    if mode == "0":
        return None
    if mode != "jit":
        try:
            from xpfilt.software import _scanner_aot as aot  # type: ignore[attr-defined]
        except ImportError:
            aot = None
        if aot is not None and aot.source_hash() == source_hash():
            return SimpleNamespace(scan=aot.scan, answers=aot.answers, kind="aot")
    try:
        from xpfilt.software import compiled
    except ImportError:  # Numba missing: the Python path answers alone
        return None
    return SimpleNamespace(scan=compiled.scan, answers=compiled.answers, kind="jit")
