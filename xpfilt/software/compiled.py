"""The fast engine's compiled inner loop (Numba): tokenize a batch of documents and step the
lazy DFA of :mod:`xpfilt.software.fast` with array lookups, in one call per batch.

:func:`scan` reads the documents of a batch (one byte array, document ``i`` at
``offsets[i]:offsets[i + 1]``) and, for each, either *accepts* it -- it is well-formed and the
DFA states its elements reach are recorded -- or *defers* it to the expat path. It accepts only
what it can decide exactly as expat would, the common case:

* UTF-8 without a byte order mark, an optional XML declaration of version 1.0 whose encoding,
  if named, is UTF-8 (any letter case) and whose ``standalone`` is ``yes`` or ``no``;
* no DOCTYPE, elements with ASCII names, attribute values and character data of valid UTF-8
  XML characters (no C0 or C1 control but tab, LF and CR; no DEL), references ``&lt;``
  ``&gt;`` ``&amp;`` ``&apos;`` ``&quot;`` and character references to XML characters;
* comments, processing instructions (ASCII targets other than ``xml`` in any case, no colon),
  CDATA sections inside the root element, and whitespace before and after the root element.

Everything else -- anything malformed, other encodings, entity declarations, non-ASCII names,
deeper than :data:`MAX_DEPTH` -- is deferred: the expat path decides it, errors included, so
the scanner never has to reproduce expat's error messages, only never accept what expat
rejects (``xpfilt.verify.fuzz``'s ``scanner`` category compares the verdicts).

A DFA transition that is not yet in the table (``trans[state, tag] < 0``) ends the call with
:data:`MISS` and where it stopped (``ctx``); the caller computes the next state in Python,
extends the tables and calls again, which resumes at that start tag. Tag ids come from an
open-addressing hash table over the names the queries use (every other name is tag 0).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
from llvmlite import ir
from numba import njit
from numba.core.extending import intrinsic

from xpfilt.software.scanner import (
    ACCEPTED,
    AOT_LEVEL_FILE,
    CTX_DEPTH,
    CTX_DOC,
    CTX_ELEMENTS,
    CTX_HASH,
    CTX_KEY,
    CTX_MISS_STATE,
    CTX_MISS_TAG,
    CTX_POS,
    CTX_ROOT_DONE,
    CTX_STAMP,
    CTX_VISITED,
    DEFERRED,
    DONE,
    E_HASH,
    E_LENGTH,
    E_NEXT,
    E_OFFSET,
    EL_LAST,
    EL_PARENT,
    EL_POS,
    EL_STATE,
    EL_TAG,
    EL_TEXT,
    G_ATTR0,
    G_ATTR1,
    G_PATH0,
    G_PATH1,
    G_TEXT,
    GUARD,
    MAX_ATTRIBUTES,
    MAX_DEPTH,
    MISS,
    cpu_level,
    source_hash,
)

__all__ = [
    "scan",
    "scan_tree",
    "answers",
    "format_numbers",
    "build_aot",
    "DONE",
    "MISS",
    "DEFERRED",
]

_DOC, _POS, _DEPTH, _ROOT_DONE = CTX_DOC, CTX_POS, CTX_DEPTH, CTX_ROOT_DONE
_VISITED, _STAMP, _MISS_STATE, _MISS_TAG = CTX_VISITED, CTX_STAMP, CTX_MISS_STATE, CTX_MISS_TAG
_ELEMENTS, _KEY, _KEY_HASH = CTX_ELEMENTS, CTX_KEY, CTX_HASH

_LT, _GT, _AMP, _SLASH, _BANG, _QUEST, _EQ = 60, 62, 38, 47, 33, 63, 61
_DASH, _RSQB, _HASH, _SEMI, _QUOT, _APOS = 45, 93, 35, 59, 34, 39


@njit(cache=True, inline="always", _nrt=False)
def _u(p):
    """An index as unsigned: Numba guards every signed index against wrapping around (a
    compare and an add per byte read), and positions here are never negative."""
    return np.uint64(p)


@njit(cache=True, inline="always", _nrt=False)
def _space(b):
    return b == 32 or b == 10 or b == 9 or b == 13


#: Per byte: 1 if it may be in an ASCII name, 3 if it may also start one (one load instead of
#: seven compares per name byte).
_NAME_BYTES = np.zeros(256, np.uint8)
_NAME_BYTES[np.frombuffer(b"0123456789-.", np.uint8)] = 1
_NAME_BYTES[np.frombuffer(b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ_:", np.uint8)] = 3


@njit(cache=True, inline="always", _nrt=False)
def _name_start(b):
    return _NAME_BYTES[b] >= 2


@njit(cache=True, inline="always", _nrt=False)
def _name_char(b):
    return _NAME_BYTES[b] != 0


@njit(cache=True, inline="always", _nrt=False)
def _char(data, p, end):
    """Length of the XML character at ``p`` (0: not one the scanner accepts)."""
    b = data[_u(p)]
    if b < 0x80:
        if b >= 0x20:
            return 0 if b == 0x7F else 1
        return 1 if (b == 9 or b == 10 or b == 13) else 0
    if b < 0xC2:
        return 0
    if b < 0xE0:
        if p + 1 >= end:
            return 0
        c = data[_u(p + 1)]
        if c & 0xC0 != 0x80 or (b == 0xC2 and c < 0xA0):  # no C1 controls
            return 0
        return 2
    if b < 0xF0:
        if p + 2 >= end:
            return 0
        c1 = data[_u(p + 1)]
        c2 = data[_u(p + 2)]
        if c1 & 0xC0 != 0x80 or c2 & 0xC0 != 0x80:
            return 0
        if b == 0xE0 and c1 < 0xA0:  # overlong
            return 0
        if b == 0xED and c1 >= 0xA0:  # surrogates
            return 0
        if b == 0xEF and c1 == 0xBF and c2 >= 0xBE:  # U+FFFE, U+FFFF
            return 0
        return 3
    if b < 0xF5:
        if p + 3 >= end:
            return 0
        c1 = data[_u(p + 1)]
        if c1 & 0xC0 != 0x80 or data[_u(p + 2)] & 0xC0 != 0x80 or data[_u(p + 3)] & 0xC0 != 0x80:
            return 0
        if (b == 0xF0 and c1 < 0x90) or (b == 0xF4 and c1 >= 0x90):
            return 0
        return 4
    return 0


@njit(cache=True, _nrt=False)
def _reference(data, p, end):
    """The position after the reference starting at ``p`` (``&``); -1 if it is not a
    predefined entity or a character reference to an XML character."""
    q = p + 1
    if q >= end:
        return -1
    if data[_u(q)] == _HASH:
        q += 1
        value = 0
        digits = 0
        if q < end and data[_u(q)] == 120:  # 'x' (expat takes no 'X')
            q += 1
            while q < end:
                b = data[_u(q)]
                if 48 <= b <= 57:
                    d = b - 48
                elif 97 <= b <= 102:
                    d = b - 87
                elif 65 <= b <= 70:
                    d = b - 55
                else:
                    break
                value = value * 16 + d
                if value >= 0x110000:
                    return -1
                digits += 1
                q += 1
        else:
            while q < end and 48 <= data[_u(q)] <= 57:
                value = value * 10 + (data[_u(q)] - 48)
                if value >= 0x110000:
                    return -1
                digits += 1
                q += 1
        if digits == 0 or q >= end or data[_u(q)] != _SEMI:
            return -1
        if value == 9 or value == 10 or value == 13:
            return q + 1
        if 0x20 <= value <= 0xD7FF or 0xE000 <= value <= 0xFFFD or 0x10000 <= value <= 0x10FFFF:
            return q + 1
        return -1
    # lt gt amp apos quot
    n = end - q
    b = data[_u(q)]
    if n >= 3 and (b == 108 or b == 103) and data[_u(q + 1)] == 116 and data[_u(q + 2)] == _SEMI:
        return q + 3
    if (
        n >= 4
        and b == 97
        and data[_u(q + 1)] == 109
        and data[_u(q + 2)] == 112
        and data[_u(q + 3)] == _SEMI
    ):
        return q + 4
    if n >= 5 and data[_u(q + 4)] == _SEMI:
        if b == 97 and data[_u(q + 1)] == 112 and data[_u(q + 2)] == 111 and data[_u(q + 3)] == 115:
            return q + 5
        if (
            b == 113
            and data[_u(q + 1)] == 117
            and data[_u(q + 2)] == 111
            and data[_u(q + 3)] == 116
        ):
            return q + 5
    return -1


_ONES = np.uint64(0x0101010101010101)
_HIGHS = np.uint64(0x8080808080808080)


@njit(cache=True, inline="always", _nrt=False)
def _load8(data, p):
    """The eight bytes at ``p`` as a little-endian word (``p + 8 <= len(data)``)."""
    w = np.uint64(0)
    for t in range(8):
        w |= np.uint64(data[_u(p + t)]) << np.uint64(8 * t)
    return w


@njit(cache=True, inline="always", _nrt=False)
def _same(x, a, y, b, n, y_end):
    """Whether ``x[a:a + n]`` and ``y[b:b + n]`` hold the same bytes, compared eight at a time
    where both arrays have eight to read (``y`` up to ``y_end``)."""
    k = 0
    while k + 8 <= n:
        if _load8(x, a + k) != _load8(y, b + k):
            return False
        k += 8
    if k == n:
        return True
    if a + k + 8 <= len(x) and b + k + 8 <= y_end:  # the rest, as the low bytes of one word
        keep = ~np.uint64(0) >> np.uint64(64 - 8 * (n - k))
        return ((_load8(x, a + k) ^ _load8(y, b + k)) & keep) == 0
    for i in range(k, n):
        if x[_u(a + i)] != y[_u(b + i)]:
            return False
    return True


@njit(cache=True, inline="always", _nrt=False)
def _zero_bytes(w):
    """High bit of each byte of ``w`` that is 0; the lowest is exact (a borrow only marks bytes
    above a zero byte)."""
    return (w - _ONES) & ~w & _HIGHS


@njit(cache=True, inline="always", _nrt=False)
def _special_bytes(w, quote):
    """The bytes of ``w`` that end a plain attribute value: ``quote``, ``<``, ``&``, controls,
    DEL and non-ASCII bytes (high bit of each; the lowest is exact)."""
    return (
        _zero_bytes(w ^ (_ONES * np.uint64(quote)))
        | _zero_bytes(w ^ (_ONES * np.uint64(_LT)))
        | _zero_bytes(w ^ (_ONES * np.uint64(_AMP)))
        | _zero_bytes(w ^ (_ONES * np.uint64(0x7F)))
        | ((w - _ONES * np.uint64(0x20)) & ~w & _HIGHS)
        | (w & _HIGHS)
    )


@njit(cache=True, _nrt=False)
def _comment(data, p, end):
    """The position after the comment whose text starts at ``p``; -1 unless its first ``--``
    is followed by ``>`` and its characters are ones the scanner accepts."""
    dashes = _ONES * np.uint64(_DASH)
    while p + 1 < end:
        if p + 8 <= end:  # eight bytes at a time up to a dash, a control or non-ASCII byte
            w = _load8(data, p)
            special = (
                _zero_bytes(w ^ dashes)
                | _zero_bytes(w ^ (_ONES * np.uint64(0x7F)))
                | ((w - _ONES * np.uint64(0x20)) & ~w & _HIGHS)
                | (w & _HIGHS)
            )
            if special == 0:
                p += 8
                continue
            p += np.int64(_low_bit(special)) >> 3
            if p + 1 >= end:
                break
        if data[_u(p)] == _DASH and data[_u(p + 1)] == _DASH:
            if p + 2 < end and data[_u(p + 2)] == _GT:
                return p + 3
            return -1
        n = _char(data, p, end)
        if n == 0:
            return -1
        p += n
    return -1


@njit(cache=True, _nrt=False)
def _until(data, p, end, a, b, c):
    """Scan characters from ``p`` to the three bytes ``a b c``; the position after them, or -1
    on a character the scanner does not accept or the end of the document."""
    while p + 2 < end:
        x = data[_u(p)]
        if x == a and data[_u(p + 1)] == b and data[_u(p + 2)] == c:
            return p + 3
        n = _char(data, p, end)
        if n == 0:
            return -1
        p += n
    return -1


@njit(cache=True, inline="always", _nrt=False)
def _hash(data, p, n):
    h = np.uint32(2166136261)
    for i in range(n):
        h = (h ^ np.uint32(data[_u(p + i)])) * np.uint32(16777619)
    return h


@njit(cache=True, inline="always", _nrt=False)
def _tag(data, p, n, table, names, name_offsets, name_tags):
    """The tag id of the name ``data[p:p + n]`` (0: none of the queries' names)."""
    mask = len(table) - 1
    h = _hash(data, p, n) & mask
    while True:
        k = table[_u(h)]
        if k < 0:
            return 0
        a = name_offsets[_u(k)]
        if name_offsets[_u(k + 1)] - a == n and _same(names, a, data, p, n, len(data)):
            return name_tags[_u(k)]
        h = (h + 1) & mask


@njit(cache=True, inline="always", _nrt=False)
def _name_end(data, p, end):
    """The end of the ASCII name at ``p`` (``p``: no name); -1 if a non-ASCII byte follows."""
    if p >= end or not _name_start(data[_u(p)]):
        return p
    q = p + 1
    while q + 8 <= end:  # eight bytes at a time: no branch per byte
        m = np.uint64(0)
        for t in range(8):
            m |= np.uint64(_NAME_BYTES[data[_u(q + t)]] == 0) << np.uint64(t)
        if m != 0:
            q += np.int64(_low_bit(m))
            if data[_u(q)] >= 0x80:
                return -1
            return q
        q += 8
    while q < end and _name_char(data[_u(q)]):
        q += 1
    if q < end and data[_u(q)] >= 0x80:
        return -1
    return q


@njit(cache=True, _nrt=False)
def _xml_declaration(data, p, end):
    """The position after the XML declaration at ``p`` (``<?xml`` and a space); -1 unless it is
    version 1.0 with, optionally, encoding UTF-8 and standalone yes or no."""
    q = p + 5
    if q >= end or not _space(data[_u(q)]):
        return -1
    field = 0  # 0 version, 1 encoding, 2 standalone: in this order
    while True:
        spaced = False
        while q < end and _space(data[_u(q)]):
            q += 1
            spaced = True
        if q + 1 < end and data[_u(q)] == _QUEST and data[_u(q + 1)] == _GT:
            return q + 2 if field > 0 else -1
        if not spaced:
            return -1
        e = _name_end(data, q, end)
        if e <= q:
            return -1
        n = e - q
        if n == 7 and field == 0 and data[_u(q)] == 118:  # version
            which = 0
        elif n == 8 and field == 1 and data[_u(q)] == 101:  # encoding
            which = 1
        elif n == 10 and (field == 1 or field == 2) and data[_u(q)] == 115:  # standalone
            which = 2
        else:
            return -1
        # the whole keyword
        word = (118, 101, 114, 115, 105, 111, 110)  # version
        if which == 1:
            word2 = (101, 110, 99, 111, 100, 105, 110, 103)
            for i in range(8):
                if data[_u(q + i)] != word2[i]:
                    return -1
        elif which == 2:
            word3 = (115, 116, 97, 110, 100, 97, 108, 111, 110, 101)
            for i in range(10):
                if data[_u(q + i)] != word3[i]:
                    return -1
        else:
            for i in range(7):
                if data[_u(q + i)] != word[i]:
                    return -1
        q = e
        while q < end and _space(data[_u(q)]):
            q += 1
        if q >= end or data[_u(q)] != _EQ:
            return -1
        q += 1
        while q < end and _space(data[_u(q)]):
            q += 1
        if q >= end or (data[_u(q)] != _QUOT and data[_u(q)] != _APOS):
            return -1
        quote = data[_u(q)]
        v = q + 1
        w = v
        while w < end and data[_u(w)] != quote:
            w += 1
        if w >= end:
            return -1
        n = w - v
        ok = False
        if which == 0:
            ok = n == 3 and data[_u(v)] == 49 and data[_u(v + 1)] == 46 and data[_u(v + 2)] == 48
        elif which == 1:
            ok = (
                n == 5
                and (data[_u(v)] | 32) == 117
                and (data[_u(v + 1)] | 32) == 116
                and (data[_u(v + 2)] | 32) == 102
                and data[_u(v + 3)] == _DASH
                and data[_u(v + 4)] == 56
            )
        else:
            ok = (
                n == 3 and data[_u(v)] == 121 and data[_u(v + 1)] == 101 and data[_u(v + 2)] == 115
            ) or (n == 2 and data[_u(v)] == 110 and data[_u(v + 1)] == 111)
        if not ok:
            return -1
        q = w + 1
        field = which + 1


@njit(cache=True, inline="always", _nrt=False)
def _start_tag(data, p, end, attributes):
    """Checks the start tag at ``p`` (``<`` and a name start); returns (position after it,
    name end, empty-element tag, attribute count), position -1 if the scanner does not accept
    it. ``attributes``: offset and length of each attribute's name (``2 * k``; the length in
    the low 32 bits, its first and last bytes above) and of its raw value (``2 *
    MAX_ATTRIBUTES + 2 * k``)."""
    name_end = _name_end(data, p + 1, end)
    if name_end < 0:
        return -1, 0, False, 0
    q = name_end
    count = 0
    while True:
        spaced = False
        while q < end and _space(data[_u(q)]):
            q += 1
            spaced = True
        if q >= end:
            return -1, 0, False, 0
        b = data[_u(q)]
        if b == _GT:
            return q + 1, name_end, False, count
        if b == _SLASH:
            if q + 1 < end and data[_u(q + 1)] == _GT:
                return q + 2, name_end, True, count
            return -1, 0, False, 0
        if not spaced:
            return -1, 0, False, 0
        a = q
        e = _name_end(data, q, end)
        if e <= q:
            return -1, 0, False, 0
        n = e - a
        if count >= MAX_ATTRIBUTES:
            return -1, 0, False, 0
        # the name's length with its first and last bytes: names that differ there are
        # told apart without comparing them
        sig = n | (np.int64(data[_u(a)]) << 32) | (np.int64(data[_u(e - 1)]) << 40)
        for k in range(count):  # a repeated attribute is an error
            if attributes[_u(2 * k + 1)] == sig:
                o = attributes[_u(2 * k)]
                same = True
                for i in range(n):
                    if data[_u(o + i)] != data[_u(a + i)]:
                        same = False
                        break
                if same:
                    return -1, 0, False, 0
        attributes[_u(2 * count)] = a
        attributes[_u(2 * count + 1)] = sig
        count += 1
        q = e
        while q < end and _space(data[_u(q)]):
            q += 1
        if q >= end or data[_u(q)] != _EQ:
            return -1, 0, False, 0
        q += 1
        while q < end and _space(data[_u(q)]):
            q += 1
        if q >= end:
            return -1, 0, False, 0
        quote = data[_u(q)]
        if quote != _QUOT and quote != _APOS:
            return -1, 0, False, 0
        q += 1
        v = q
        if q + 8 <= end:  # a short value without references: its eight bytes at once
            w = _load8(data, q)
            special = _special_bytes(w, quote)
            if special != 0:
                first = np.int64(_low_bit(special)) >> 3
                if data[_u(q + first)] == quote:
                    q += first
        while True:
            if q >= end:
                return -1, 0, False, 0
            b = data[_u(q)]
            if b == quote:
                attributes[_u(2 * MAX_ATTRIBUTES + 2 * count - 2)] = v
                attributes[_u(2 * MAX_ATTRIBUTES + 2 * count - 1)] = q - v
                q += 1
                break
            if b == _LT:
                return -1, 0, False, 0
            if b == _AMP:
                q = _reference(data, q, end)
                if q < 0:
                    return -1, 0, False, 0
                continue
            if 0x20 <= b < 0x7F:
                q += 1
                continue
            n = _char(data, q, end)
            if n == 0:
                return -1, 0, False, 0
            q += n


@njit(cache=True, nogil=True, _nrt=False)
def _end_tag(data, p, end, name_stack, depth):
    """The end of the end tag at ``p`` (``</``) if it closes the open element ``depth``
    (``name_stack``: its name's offset and length), else -1."""
    a = name_stack[_u(2 * depth)]
    n = name_stack[_u(2 * depth + 1)]
    q = p + 2
    if q + n >= end:
        return -1
    if not _same(data, a, data, q, n, end):
        return -1
    q += n
    if _name_char(data[_u(q)]) or data[_u(q)] >= 0x80:
        return -1
    while q < end and _space(data[_u(q)]):
        q += 1
    if q >= end or data[_u(q)] != _GT:
        return -1
    return q + 1


@njit(cache=True, nogil=True, _nrt=False)
def _markup_declaration(data, p, end, depth):
    """The end of the comment or (inside the root element) CDATA section at ``p`` (``<!``),
    else -1: a DOCTYPE or anything else is expat's to judge."""
    if p + 3 < end and data[_u(p + 2)] == _DASH and data[_u(p + 3)] == _DASH:
        return _comment(data, p + 4, end)
    if (
        depth > 0
        and p + 8 < end
        and data[_u(p + 2)] == 91  # [CDATA[
        and data[_u(p + 3)] == 67
        and data[_u(p + 4)] == 68
        and data[_u(p + 5)] == 65
        and data[_u(p + 6)] == 84
        and data[_u(p + 7)] == 65
        and data[_u(p + 8)] == 91
    ):
        return _until(data, p + 9, end, _RSQB, _RSQB, _GT)
    return -1


@njit(cache=True, nogil=True, _nrt=False)
def _processing_instruction(data, p, end):
    """The end of the processing instruction at ``p`` (``<?``), else -1 (no target, a target
    named xml in any case or with a colon, or no ``?>``)."""
    e = _name_end(data, p + 2, end)
    if e <= p + 2 or e >= end:
        return -1
    if e - p - 2 == 3 and (
        (data[_u(p + 2)] | 32) == 120
        and (data[_u(p + 3)] | 32) == 109
        and (data[_u(p + 4)] | 32) == 108
    ):
        return -1
    for k in range(p + 2, e):
        if data[_u(k)] == 58:  # a colon
            return -1
    if data[_u(e)] == _QUEST and e + 1 < end and data[_u(e + 1)] == _GT:
        return e + 2
    if not _space(data[_u(e)]):
        return -1
    q = e + 1
    while q + 1 < end:
        if data[_u(q)] == _QUEST and data[_u(q + 1)] == _GT:
            return q + 2
        n = _char(data, q, end)
        if n == 0:
            return -1
        q += n
    return -1


@njit(cache=True, inline="always", _nrt=False)
def _prolog(data, p, end):
    """Where the document at ``p`` goes on after its XML declaration if it has one (-1: one
    the scanner does not accept)."""
    if (
        p + 5 < end
        and data[_u(p)] == _LT
        and data[_u(p + 1)] == _QUEST
        and data[_u(p + 2)] == 120
        and data[_u(p + 3)] == 109
        and data[_u(p + 4)] == 108
        and _space(data[_u(p + 5)])
    ):
        return _xml_declaration(data, p, end)
    return p


@njit(cache=True, inline="always", _nrt=False)
def _content(data, p, end, b, depth):
    """The position after the byte ``b`` at ``p`` outside markup: whitespace outside the root
    element (``depth`` 0), a character or a reference of character data inside it; -1 if the
    scanner does not accept it there."""
    if depth == 0:
        return p + 1 if _space(b) else -1
    if b == _AMP:
        return _reference(data, p, end)
    if b == _RSQB and p + 2 < end and data[_u(p + 1)] == _RSQB and data[_u(p + 2)] == _GT:
        return -1
    if 0x20 <= b < 0x7F or b == 10:
        return p + 1
    n = _char(data, p, end)
    return p + n if n > 0 else -1


@njit(cache=True, inline="always", _nrt=False)
def _other_markup(data, p, end, b, depth):
    """The end of the comment or CDATA section (``b``: ``!``) or processing instruction
    (``?``) at ``p``; -1 for anything else (a DOCTYPE and the rest are expat's)."""
    if b == _BANG:
        return _markup_declaration(data, p, end, depth)
    if b == _QUEST:
        return _processing_instruction(data, p, end)
    return -1


@njit(cache=True, nogil=True, _nrt=False)
def scan(
    data,
    offsets,
    status,
    visited_start,
    visited_end,
    visited,
    ctx,
    trans,
    seen,
    table,
    names,
    name_offsets,
    name_tags,
    start_state,
    stack,
    name_stack,
    attributes,
):
    """Scans documents ``ctx[_DOC]`` on (see the module docstring); returns :data:`DONE` or
    :data:`MISS` (``ctx``: the state and tag to compute; the call after resumes there).

    ``visited[visited_start[i]:visited_end[i]]``: the distinct DFA states the elements of an
    accepted document ``i`` reached. ``seen``: per DFA state, the last document stamp that
    recorded it."""
    ndocs = len(offsets) - 1
    i = ctx[_DOC]
    nv = ctx[_VISITED]
    while i < ndocs:
        end = offsets[_u(i + 1)]
        if ctx[_POS] < 0:  # a new document
            p = offsets[_u(i)]
            ctx[_STAMP] += 1
            visited_start[_u(i)] = nv
            depth = 0
            root_done = False
            stack[_u(0)] = start_state
            if p >= end:
                status[_u(i)] = DEFERRED
                visited_end[_u(i)] = nv
                i += 1
                continue
            p = _prolog(data, p, end)
        else:  # resuming after a miss
            p = ctx[_POS]
            depth = ctx[_DEPTH]
            root_done = ctx[_ROOT_DONE] != 0
        stamp = ctx[_STAMP]
        ok = p >= 0
        while ok and p < end:
            b = data[_u(p)]
            if b != _LT:
                p = _content(data, p, end, b, depth)
                ok = p >= 0
                continue
            if p + 1 >= end:
                ok = False
                continue
            b = data[_u(p + 1)]
            if _name_start(b):  # a start tag
                if root_done or depth + 1 >= MAX_DEPTH:
                    ok = False
                    continue
                q, name_end, empty, _count = _start_tag(data, p, end, attributes)
                if q < 0:
                    ok = False
                    continue
                tag = _tag(data, p + 1, name_end - p - 1, table, names, name_offsets, name_tags)
                top = stack[_u(depth)]
                nxt = trans[_u(top), _u(tag)]
                if nxt < 0:  # a miss: back to Python, then again from this tag
                    ctx[_DOC] = i
                    ctx[_POS] = p
                    ctx[_DEPTH] = depth
                    ctx[_ROOT_DONE] = root_done
                    ctx[_VISITED] = nv
                    ctx[_MISS_STATE] = top
                    ctx[_MISS_TAG] = tag
                    return MISS
                if seen[_u(nxt)] != stamp:
                    seen[_u(nxt)] = stamp
                    visited[_u(nv)] = nxt
                    nv += 1
                if empty:
                    if depth == 0:
                        root_done = True
                else:
                    depth += 1
                    stack[_u(depth)] = nxt
                    name_stack[_u(2 * depth)] = p + 1
                    name_stack[_u(2 * depth + 1)] = name_end - p - 1
                p = q
            elif b == _SLASH:  # an end tag: the open element's name
                q = -1 if depth == 0 else _end_tag(data, p, end, name_stack, depth)
                if q < 0:
                    ok = False
                    continue
                depth -= 1
                if depth == 0:
                    root_done = True
                p = q
            else:
                p = _other_markup(data, p, end, b, depth)
                ok = p >= 0
        if ok and root_done and depth == 0:
            status[_u(i)] = ACCEPTED
            visited_end[_u(i)] = nv
        else:
            status[_u(i)] = DEFERRED
            nv = visited_start[_u(i)]
            visited_end[_u(i)] = nv
        ctx[_POS] = -1
        i += 1
    ctx[_DOC] = i
    ctx[_VISITED] = nv
    return DONE


@intrinsic
def _popcount(typingctx, src):
    """The number of bits set in an integer (LLVM's ctpop)."""

    def codegen(context, builder, signature, args):
        return builder.ctpop(args[0])

    return src(src), codegen


@intrinsic
def _low_bit(typingctx, src):
    """The index of the lowest bit set in ``src``, undefined for 0 (LLVM's cttz with
    ``is_zero_undef``: one BSF on the ahead-of-time build's x86-64-v2, without the branch or
    move trailing_zeros adds to define 0)."""

    def codegen(context, builder, signature, args):
        return builder.cttz(args[0], ir.Constant(ir.IntType(1), 1))

    return src(src), codegen


# -- query sets with predicates: two passes per document --------------------------------------


@njit(cache=True, inline="always")
def _close_element(e, tag, depth, el, bits, acc, masks):
    """Element ``e`` (``tag``, open at ``depth``) ends: its nested-path bits from what its
    children and descendants reported (``acc`` rows ``2 * depth``, ``2 * depth + 1``), and what
    it reports to its parent's rows. Slot ``i`` is one step of a nested path, ``i + 1`` the
    step after it: bit ``i`` of an element says the path's steps from ``i`` on select some
    node from it (a child, or with a descendant axis a descendant, named like step ``i`` from
    which the steps after ``i`` select some node; ``masks``: per tag id the slots whose name it
    matches, then the child-axis slots, the descendant-axis slots and the last steps)."""
    words = bits.shape[1]
    width = masks.shape[0] - 3
    c = 2 * depth
    for w in range(words):
        bits[e, w] = (acc[c, w] & masks[width, w]) | (acc[c + 1, w] & masks[width + 1, w])
    one = np.uint64(1)
    for w in range(words):
        after = bits[e, w] >> one
        if w + 1 < words:
            after |= bits[e, w + 1] << np.uint64(63)
        selected = masks[tag, w] & (after | masks[width + 2, w])
        acc[c - 2, w] |= selected
        acc[c - 1, w] |= selected | acc[c + 1, w]


@njit(cache=True)
def _tree_pass(
    data,
    p,
    end,
    table,
    names,
    name_offsets,
    name_tags,
    stack,
    name_stack,
    attributes,
    el,
    tx,
    bits,
    acc,
    masks,
):
    """The first pass over one document (``data[p:end]``) for :func:`scan_tree`: checks it as
    :func:`scan` does and records its elements in document order (``el`` rows), their text
    children (``tx`` rows: offsets of the raw bytes between two tags, comments or processing
    instructions, CDATA sections included) and their nested-path bits (:func:`_close_element`).
    Returns the number of elements, or -1: the document is deferred."""
    words = bits.shape[1]
    p = _prolog(data, p, end)
    if p < 0:
        return -1
    n = 0
    nt = 0
    depth = 0
    root_done = False
    text_from = -1
    zero = np.uint64(0)
    while p < end:
        b = data[_u(p)]
        if b != _LT:
            if depth > 0 and text_from < 0:
                text_from = p
            p = _content(data, p, end, b, depth)
            if p < 0:
                return -1
            continue
        if p + 1 >= end:
            return -1
        b = data[_u(p + 1)]
        cdata = b == _BANG and p + 2 < end and data[_u(p + 2)] == 91
        if text_from >= 0 and not cdata:  # a text child ends
            owner = stack[_u(depth)]
            tx[nt, 0] = text_from
            tx[nt, 1] = p
            tx[nt, 2] = -1
            if el[owner, EL_TEXT] < 0:
                el[owner, EL_TEXT] = nt
            else:
                tx[el[owner, EL_LAST], 2] = nt
            el[owner, EL_LAST] = nt
            nt += 1
            text_from = -1
        if _name_start(b):  # a start tag
            if root_done or depth + 1 >= MAX_DEPTH:
                return -1
            q, name_end, empty, _count = _start_tag(data, p, end, attributes)
            if q < 0:
                return -1
            tag = _tag(data, p + 1, name_end - p - 1, table, names, name_offsets, name_tags)
            el[n, EL_TAG] = tag
            el[n, EL_PARENT] = stack[_u(depth)] if depth > 0 else -1
            el[n, EL_POS] = p
            el[n, EL_TEXT] = -1
            el[n, EL_LAST] = -1
            c = 2 * (depth + 1)
            for w in range(words):
                acc[c, w] = zero
                acc[c + 1, w] = zero
            if empty:
                if words:
                    _close_element(n, tag, depth + 1, el, bits, acc, masks)
                if depth == 0:
                    root_done = True
            else:
                depth += 1
                stack[_u(depth)] = n
                name_stack[_u(2 * depth)] = p + 1
                name_stack[_u(2 * depth + 1)] = name_end - p - 1
            n += 1
            p = q
        elif b == _SLASH:  # an end tag: the open element's name
            q = -1 if depth == 0 else _end_tag(data, p, end, name_stack, depth)
            if q < 0:
                return -1
            if words:
                e = stack[_u(depth)]
                _close_element(e, el[e, EL_TAG], depth, el, bits, acc, masks)
            depth -= 1
            if depth == 0:
                root_done = True
            p = q
        else:  # a CDATA section is part of the text
            if cdata and text_from < 0:
                text_from = p
            p = _other_markup(data, p, end, b, depth)
            if p < 0:
                return -1
    if root_done and depth == 0:
        return n
    return -1


@njit(cache=True, inline="always")
def _copy(key, k, data, a, b):
    for x in range(a, b):
        key[k] = data[_u(x)]
        k += 1
    return k


@njit(cache=True)
def _guard_key(data, end, e, g, el, tx, bits, attributes, guards, gattr, gattr_names, gpath, key):
    """The memo key of element ``e`` on guard ``g`` into ``key``; returns its length: the guard
    (4 bytes), then per attribute name of the guard 1, its raw value, 0 or, if absent, 2; if
    the guard reads text children, 3, the raw text, 0 for each and a closing 4; a byte 16 or
    17 per nested path (0 occurs in no document the scanner accepts)."""
    key[0] = g & 255
    key[1] = (g >> 8) & 255
    key[2] = (g >> 16) & 255
    key[3] = (g >> 24) & 255
    k = 4
    a0 = guards[g, G_ATTR0]
    a1 = guards[g, G_ATTR1]
    if a1 > a0:
        _q, _name_end, _empty, count = _start_tag(data, el[e, EL_POS], end, attributes)
        for j in range(a0, a1):
            o = gattr[j, 0]
            n = gattr[j, 1]
            found = -1
            for a in range(count):
                if attributes[_u(2 * a + 1)] & 0xFFFFFFFF == n:  # the name's length
                    s = attributes[_u(2 * a)]
                    same = True
                    for x in range(n):
                        if data[_u(s + x)] != gattr_names[o + x]:
                            same = False
                            break
                    if same:
                        found = a
                        break
            if found < 0:
                key[k] = 2
                k += 1
            else:
                key[k] = 1
                v = attributes[_u(2 * MAX_ATTRIBUTES + 2 * found)]
                k = _copy(
                    key, k + 1, data, v, v + attributes[_u(2 * MAX_ATTRIBUTES + 2 * found + 1)]
                )
                key[k] = 0
                k += 1
    if guards[g, G_TEXT]:
        s = el[e, EL_TEXT]
        while s >= 0:
            key[k] = 3
            k = _copy(key, k + 1, data, tx[s, 0], tx[s, 1])
            key[k] = 0
            k += 1
            s = tx[s, 2]
        key[k] = 4
        k += 1
    one = np.uint64(1)
    for j in range(guards[g, G_PATH0], guards[g, G_PATH1]):
        slot = gpath[j]
        key[k] = 16 + np.uint8((bits[e, slot >> 6] >> np.uint64(slot & 63)) & one)
        k += 1
    return k


@njit(cache=True, inline="always")
def _key_hash(key, k):
    """FNV-1a (64 bits) of ``key[:k]``, halved to fit an int64."""
    h = np.uint64(14695981039346656037)
    prime = np.uint64(1099511628211)
    for x in range(k):
        h = (h ^ np.uint64(key[x])) * prime
    return np.int64(h >> np.uint64(1))


@njit(cache=True, inline="always")
def _key_lookup(key, k, h, gslots, ents, keys):
    """The next DFA state memoized for ``key[:k]`` (hash ``h``), -1 if none is."""
    mask = len(gslots) - 1
    s = h & mask
    while True:
        j = gslots[s]
        if j < 0:
            return -1
        if ents[j, E_HASH] == h and ents[j, E_LENGTH] == k:
            o = ents[j, E_OFFSET]
            same = True
            for x in range(k):
                if keys[o + x] != key[x]:
                    same = False
                    break
            if same:
                return ents[j, E_NEXT]
        s = (s + 1) & mask


@njit(cache=True, nogil=True)
def scan_tree(
    data,
    offsets,
    status,
    visited_start,
    visited_end,
    visited,
    ctx,
    trans,
    seen,
    table,
    names,
    name_offsets,
    name_tags,
    start_state,
    stack,
    name_stack,
    attributes,
    el,
    tx,
    bits,
    acc,
    masks,
    guards,
    gattr,
    gattr_names,
    gpath,
    gslots,
    ents,
    keys,
    key,
):
    """:func:`scan` for query sets with predicates: a first pass records a document's elements
    (:func:`_tree_pass`), a second steps the DFA over them. A guarded transition
    (``trans[state, tag] <= -2``: guard ``-2 - value``) is decided by the element's key
    (:func:`_guard_key`: the raw values of the attributes its predicates read, its text
    children if they read ``text()``, its nested-path bits) looked up in a hash table
    (``gslots``, ``ents``, ``keys``); a key not there ends the call with :data:`GUARD` (the
    caller decides it in Python and adds it). Returns :data:`DONE`, :data:`MISS` or
    :data:`GUARD`; the call after resumes at the element it stopped at."""
    ndocs = len(offsets) - 1
    i = ctx[_DOC]
    nv = ctx[_VISITED]
    while i < ndocs:
        start = offsets[_u(i)]
        end = offsets[_u(i + 1)]
        if ctx[_POS] < 0:  # a new document
            ctx[_STAMP] += 1
            visited_start[_u(i)] = nv
            count = -1
            if start < end:
                count = _tree_pass(
                    data,
                    start,
                    end,
                    table,
                    names,
                    name_offsets,
                    name_tags,
                    stack,
                    name_stack,
                    attributes,
                    el,
                    tx,
                    bits,
                    acc,
                    masks,
                )
            if count < 0:
                status[_u(i)] = DEFERRED
                visited_end[_u(i)] = nv
                i += 1
                continue
            first = 0
        else:  # resuming after a miss: the first pass's rows are still there
            count = ctx[_ELEMENTS]
            first = ctx[_POS]
        stamp = ctx[_STAMP]
        for e in range(first, count):
            parent = el[e, EL_PARENT]
            top = start_state if parent < 0 else el[parent, EL_STATE]
            tag = el[e, EL_TAG]
            nxt = trans[_u(top), _u(tag)]
            if nxt < 0:
                h = 0
                k = 0
                if nxt < -1:  # guarded: the element's key decides
                    g = -2 - nxt
                    k = _guard_key(
                        data,
                        end,
                        e,
                        g,
                        el,
                        tx,
                        bits,
                        attributes,
                        guards,
                        gattr,
                        gattr_names,
                        gpath,
                        key,
                    )
                    h = _key_hash(key, k)
                    nxt = _key_lookup(key, k, h, gslots, ents, keys)
                if nxt < 0:  # back to Python, then again from this element
                    ctx[_DOC] = i
                    ctx[_POS] = e
                    ctx[_ELEMENTS] = count
                    ctx[_VISITED] = nv
                    ctx[_MISS_STATE] = top
                    ctx[_MISS_TAG] = tag
                    ctx[_KEY] = k
                    ctx[_KEY_HASH] = h
                    return GUARD if k > 0 else MISS
            el[e, EL_STATE] = nxt
            if seen[_u(nxt)] != stamp:
                seen[_u(nxt)] = stamp
                visited[_u(nv)] = nxt
                nv += 1
        status[_u(i)] = ACCEPTED
        visited_end[_u(i)] = nv
        ctx[_POS] = -1
        i += 1
    ctx[_DOC] = i
    ctx[_VISITED] = nv
    return DONE


@njit(cache=True, nogil=True, inline="always")
def _union(
    i,
    visited_start,
    visited_end,
    visited,
    accept_start,
    accept_count,
    accept_words,
    accept_masks,
    inner,
):
    """ORs into ``inner`` the words of the states document ``i`` visited; returns the lowest and
    the highest word written (-1: none) and the number of words ORed."""
    low = len(inner)
    high = -1
    entries = 0
    for k in range(visited_start[_u(i)], visited_end[_u(i)]):
        s = visited[_u(k)]
        c = accept_count[_u(s)]
        if c == 0:
            continue
        a = accept_start[_u(s)]
        entries += c
        low = min(low, accept_words[_u(a)])  # each state's words are sorted
        high = max(high, accept_words[_u(a + c - 1)])
        for j in range(_u(a), _u(a + c)):
            inner[_u(accept_words[j])] |= accept_masks[j]
    return low, high, entries


@njit(cache=True, nogil=True, inline="always")
def _positions(out, n, bits, first, last):
    """Writes the positions of the bits set in ``bits[first:last + 1]`` (cleared) to ``out``
    from ``n`` on, in order; returns the new end. Eight positions are written at a time,
    whatever the word holds (the ones past its bits, unspecified as ``_low_bit(0)`` is, are
    overwritten by the next word's or left past the end): no branch per bit. ``out`` has room
    for 8 more than the bits."""
    one = np.uint64(1)
    six = np.uint64(6)
    for w in range(first, last + one):
        x = bits[w]
        bits[w] = 0
        base = np.int32(w << six)
        m = np.uint64(n)
        n += np.int64(_popcount(x))
        while True:
            for t in range(8):  # unrolled by the compiler
                out[m + np.uint64(t)] = base + np.int32(_low_bit(x))
                x &= x - one
            if x == 0:
                break
            m += np.uint64(8)
    return n


@njit(cache=True, nogil=True)
def answers(
    status,
    visited_start,
    visited_end,
    visited,
    accept_start,
    accept_count,
    accept_words,
    accept_masks,
    order,
    inner,
    outer,
    room,
):
    """Per accepted document, the sorted union of the query positions its visited DFA states
    accept: ``out[bounds[i]:bounds[i + 1]]`` (``out`` may be longer).

    A state's queries are words of a bit set over internal numbers
    (``accept_words[a:a + c]``, ``accept_masks[a:a + c]``; ``a, c = accept_start[s],
    accept_count[s]``), numbered so that the queries states accept together are close
    (:meth:`xpfilt.software.fast._Nfa.accept_order`): the union is one OR per word
    (``inner``). Each internal number found is mapped once to its position (``order``) into
    a second bit set (``outer``), read back in order: no sort. Both bit sets (one bit per
    query) are all zero, and left so. ``room``: the size ``out`` starts with (it grows if
    need be; growing is a copy)."""
    ndocs = len(status)
    bounds = np.zeros(ndocs + 1, np.int64)
    out = np.empty(max(1024, room), np.int32)
    n = 0
    # unsigned indices where it counts: Numba checks a signed index for wraparound
    one = np.uint64(1)
    six = np.uint64(6)
    bit = np.uint64(63)
    for i in range(ndocs):
        bounds[i] = n
        if status[_u(i)] != ACCEPTED:
            continue
        low, high, entries = _union(
            i,
            visited_start,
            visited_end,
            visited,
            accept_start,
            accept_count,
            accept_words,
            accept_masks,
            inner,
        )
        if high < 0:
            continue
        count = 0
        # a large answer spans the second bit set: read it all rather than follow where
        # each position falls (100,000 NITF queries: ~1,450 words ORed, 1,563 in the set)
        spread = 4 * entries >= len(outer)
        first = np.uint64(0) if spread else np.uint64(len(outer))
        last = np.uint64(len(outer) - 1) if spread else np.uint64(0)
        for w in range(_u(low), _u(high) + one):
            x = inner[w]
            if x == 0:
                continue
            inner[w] = 0
            count += np.int64(_popcount(x))
            base = w << six
            while x:
                position = np.uint64(order[base + np.uint64(_low_bit(x))])
                x &= x - one
                word = position >> six
                outer[word] |= one << (position & bit)
                if not spread:
                    first = min(first, word)
                    last = max(last, word)
        if count == 0:
            continue
        if n + count + 8 > len(out):
            grown = np.empty(2 * (n + count + 8), np.int32)
            grown[:n] = out[:n]
            out = grown
        n = _positions(out, n, outer, first, last)
    bounds[ndocs] = n
    return bounds, out


@njit(cache=True, nogil=True)
def format_numbers(found, bounds, strings, lengths, text):
    """The TSV text of each document's answer: the numbers of the positions ``found[j]`` for
    ``j`` in ``bounds[i]:bounds[i + 1]``, separated by spaces, as ``text[lines[i]:lines[i +
    1]]`` (ASCII bytes). ``strings[q]``, ``lengths[q]``: position ``q``'s number in decimal and
    a space, in 64-bit words (:func:`xpfilt.software.scanner.number_strings`), copied whole
    and the text advanced by its length: no division per number (at 100,000 queries a NITF
    document's answer is ~7,600 numbers: 2.7 ns each instead of 6). Written into ``text`` if it
    is large enough, else into a new buffer (returned either way): a caller that copies the
    lines out reuses it, no fresh pages per batch (15 MB a batch at 100,000 queries)."""
    ndocs = len(bounds) - 1
    lines = np.zeros(ndocs + 1, np.int64)
    words = strings.shape[1]
    size = max(16, 8 * words * (bounds[ndocs] - bounds[0] + 1))
    if len(text) < size:
        text = np.empty(size + size // 4, np.uint8)
    n = np.uint64(0)
    eight = np.uint64(8)
    byte = np.uint64(255)
    for i in range(ndocs):
        lines[i] = n
        for j in range(bounds[i], bounds[i + 1]):
            q = _u(found[j])
            for w in range(words):
                v = strings[q, w]
                k = n + eight * _u(w)
                text[k] = np.uint8(v & byte)
                text[k + np.uint64(1)] = np.uint8((v >> np.uint64(8)) & byte)
                text[k + np.uint64(2)] = np.uint8((v >> np.uint64(16)) & byte)
                text[k + np.uint64(3)] = np.uint8((v >> np.uint64(24)) & byte)
                text[k + np.uint64(4)] = np.uint8((v >> np.uint64(32)) & byte)
                text[k + np.uint64(5)] = np.uint8((v >> np.uint64(40)) & byte)
                text[k + np.uint64(6)] = np.uint8((v >> np.uint64(48)) & byte)
                text[k + np.uint64(7)] = np.uint8(v >> np.uint64(56))
            n += _u(lengths[q])
        if bounds[i + 1] > bounds[i]:
            n -= np.uint64(1)  # no space after the last number
    lines[ndocs] = n
    return lines, text


#: The exported signatures of the ahead-of-time build.
_SCAN = (
    "i8(u1[::1], i8[::1], i1[::1], i8[::1], i8[::1], i4[::1], i8[::1], i4[:, ::1], i8[::1], "
    "i4[::1], u1[::1], i8[::1], i4[::1], i8, i4[::1], i8[::1], i8[::1])"
)
_SCAN_TREE = (
    "i8(u1[::1], i8[::1], i1[::1], i8[::1], i8[::1], i4[::1], i8[::1], i4[:, ::1], i8[::1], "
    "i4[::1], u1[::1], i8[::1], i4[::1], i8, i4[::1], i8[::1], i8[::1], i8[:, ::1], i8[:, ::1], "
    "u8[:, ::1], u8[:, ::1], u8[:, ::1], i8[:, ::1], i8[:, ::1], u1[::1], i8[::1], i8[::1], "
    "i8[:, ::1], u1[::1], u1[::1])"
)
_FORMAT = "Tuple((i8[::1], u1[::1]))(i4[::1], i8[::1], u8[:, ::1], i8[::1], u1[::1])"
_ANSWERS = (
    "Tuple((i8[::1], i4[::1]))(i1[::1], i8[::1], i8[::1], i4[::1], i8[::1], i4[::1], i4[::1], "
    "u8[::1], i4[::1], u8[::1], u8[::1], i8)"
)


def build_aot(folder: Path = Path(__file__).parent) -> list[Path]:
    """Compiles :func:`scan`, :func:`scan_tree`, :func:`answers` and :func:`format_numbers` ahead of time (Numba's
    ``pycc``, a C compiler links them) into two extension modules in ``folder``, each stamped
    with :func:`xpfilt.software.scanner.source_hash`: ``_scanner_aot_scan`` without Numba's
    reference counting (NRT), as :func:`scan` is compiled just in time too (``_nrt=False``: it
    allocates nothing, and the atomic increments and decrements around every array its helpers
    take were half its time), and ``_scanner_aot`` for :func:`scan_tree` and the two that allocate their answers.
    pycc chooses NRT per module, hence two."""
    import platform
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # pycc is deprecated, and still the AOT route
        from numba.pycc import CC

    stamp = source_hash()

    def stamped():
        return stamp

    # answers() counts bits: the POPCNT instruction of every x86-64 CPU since 2009
    # (x86-64-v2) instead of pycc's generic target's bit twiddling, 24.5 -> 20.7 us per
    # document at 100,000 queries; on a CPU with x86-64-v3 (TZCNT, BLSR, SHLX) 24.1 -> 22.9.
    # The level is written beside the build, and xpfilt.software.fast loads it only on a CPU
    # that has it (scanner.cpu_runs_aot)
    x86 = platform.machine().lower() in ("x86_64", "amd64")
    level = cpu_level() if x86 else ""
    marker = folder / AOT_LEVEL_FILE
    if level:
        marker.write_text(level + "\n")
    elif marker.exists():
        marker.unlink()
    built = []
    for name, nrt, cpu, exports in (
        ("_scanner_aot_scan", False, "", (("scan", _SCAN, scan),)),
        (
            "_scanner_aot",
            True,
            level,
            (
                ("scan_tree", _SCAN_TREE, scan_tree),
                ("answers", _ANSWERS, answers),
                ("format_numbers", _FORMAT, format_numbers),
            ),
        ),
    ):
        cc = CC(name)
        cc.output_dir = str(folder)
        cc.verbose = False
        cc.use_nrt = nrt
        cc.target_cpu = cpu
        for export, signature, function in exports:
            cc.export(export, signature)(function.py_func)
        cc.export("source_hash", "i8()")(stamped)
        cc.compile()
        built.append(next(folder.glob(f"{name}.*")))
    return built


if __name__ == "__main__":
    from xpfilt.software import compiled_dfa  # the lazy DFA's misses: their own module

    for path in [*build_aot(), *compiled_dfa.build_aot()]:
        print(path)
