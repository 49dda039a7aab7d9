"""The programmable engine's comparator slots (issue 14 part 3): how an attribute condition
(attribute name, operator, constant) is held in a slot of the configuration stream.

A slot is part of the engine-wide dictionary payload (after the tag entries): ``slot_rows(L)``
rows of one byte per slot (row ``r`` byte ``s`` = slot ``s``; ``L`` = ``max_tag_len``):

* rows ``0 .. L-1``: the attribute name, zero-padded (all zeros: a free slot);
* rows ``L .. 2L-1``: a string constant, zero-padded (``=``/``!=`` with a string; the front
  end reads names and strings from one memory: a name and a value never stream together);
* rows ``2L .. 2L+15``: the integer digits of a number constant (without leading zeros), one
  per row in the low nibble; rows ``2L+16 .. 2L+31``: its fraction digits (without trailing
  zeros), zero beyond them;

then :data:`SLOT_FLAG_BITS` per slot (slot 0 first, LSB first): the kind (2 bits, :data:`KINDS`),
the outcomes the operator accepts (4 bits, :data:`OUTCOMES`: a number below, equal to, above the
constant, not a number; a string: equal, or "lt" for not equal), the number's sign (1), its
count of integer digits (4) and of fraction digits (4). A comparison with a constant that is not
a number (``[@a < 'x']``) is a string slot accepting both outcomes (``!=``) or none. The front end (:class:`xpfilt.hdl.frontend.FrontEnd` with ``slots``)
decides every slot on every attribute value, as it decides the custom engine's conditions
(:func:`xpfilt.hwdefs.condition_value_holds`).
"""

from __future__ import annotations

from decimal import Decimal
from typing import Optional, Sequence

from .hwdefs import NUMBER_DIGITS, AttrCondition, number_digits

__all__ = ["SLOT_FLAG_BITS", "DIGIT_ROWS", "KINDS", "OUTCOMES", "NUMBER_ACCEPTS", "slot_rows",
           "slot_key", "slot_refusal", "encode_slots", "decode_slots"]

DIGIT_ROWS = NUMBER_DIGITS + 1          # integer digit positions (and fraction positions)
KINDS = ("exists", "string", "number")
OUTCOMES = ("lt", "eq", "gt", "nan")
#: The outcomes each operator accepts, for numbers.
NUMBER_ACCEPTS = {"=": ("eq",), "!=": ("lt", "gt", "nan"), "<": ("lt",), "<=": ("lt", "eq"),
                  ">": ("gt",), ">=": ("gt", "eq")}
SLOT_FLAG_BITS = 15                     # kind 2, outcomes 4, negative 1, integer 4, fraction 4


def slot_rows(max_tag_len: int) -> int:
    """Rows of the slot table: attribute names, string constants, integer and fraction digits."""
    return 2 * max_tag_len + 2 * DIGIT_ROWS


def slot_key(cond: AttrCondition) -> tuple:
    """What a slot holds of ``cond``: equal keys, one slot (and the same condition read back)."""
    kind = cond.kind
    if kind == "exists":
        return cond.attribute, kind
    if kind == "string":
        return cond.attribute, kind, cond.op, cond.literal
    if kind == "nan":                    # only "!=" holds, whatever the value
        return cond.attribute, kind, cond.op == "!="
    return cond.attribute, kind, cond.op, number_digits(cond.number)


def slot_refusal(cond: AttrCondition, max_tag_len: int) -> str:
    """Why a slot of this hardware cannot hold ``cond`` ("" if it can)."""
    if cond.is_text:
        return "text() predicates are not supported by the programmable engine yet"
    if len(cond.attribute.encode("utf-8")) > max_tag_len:
        return (f"attribute name {cond.attribute!r} is longer than the hardware's max tag "
                f"length {max_tag_len}")
    if cond.kind == "string" and len(cond.literal.encode("utf-8")) > max_tag_len:
        return (f"string {cond.literal!r} is longer than the hardware's max tag length "
                f"{max_tag_len}")
    if cond.kind == "number" and number_digits(cond.number) is None:
        return f"number {cond.literal!r} has more than {NUMBER_DIGITS} digits"
    return ""


def encode_slots(conditions: Sequence[AttrCondition], slots: int,
                 max_tag_len: int) -> tuple[list[int], int]:
    """The slot table of ``conditions`` (slot ``s`` = ``conditions[s]``; None and the rest:
    free): its
    rows (``8 * slots`` bits each) and its flags (``SLOT_FLAG_BITS * slots`` bits)."""
    L = max_tag_len
    rows = [bytearray(slots) for _ in range(slot_rows(L))]
    flags = 0
    for s, cond in enumerate(conditions):
        if cond is None:
            continue
        kind = cond.kind
        neg, whole, frac = False, "", ""
        for p, b in enumerate(cond.attribute.encode("utf-8")):
            rows[p][s] = b
        if kind == "string":
            for p, b in enumerate(cond.literal.encode("utf-8")):
                rows[L + p][s] = b
        elif kind == "number":
            neg, whole, frac = number_digits(cond.number)
            for p, d in enumerate(whole):
                rows[2 * L + p][s] = int(d)
            for p, d in enumerate(frac):
                rows[2 * L + DIGIT_ROWS + p][s] = int(d)
        if kind == "number":
            accepts = NUMBER_ACCEPTS[cond.op]
        elif kind == "string":
            accepts = ("eq",) if cond.op == "=" else ("lt",)
        elif kind == "nan":
            accepts, kind = (("eq", "lt") if cond.op == "!=" else ()), "string"
        else:
            accepts = ()
        mask = sum(1 << OUTCOMES.index(a) for a in accepts)
        flags |= (KINDS.index(kind) | mask << 2 | neg << 6 | len(whole) << 7
                  | len(frac) << 11) << (SLOT_FLAG_BITS * s)
    return [int.from_bytes(r, "little") for r in rows], flags


def decode_slots(rows: Sequence[int], flags: int, slots: int,
                 max_tag_len: int) -> list[Optional[AttrCondition]]:
    """The conditions a slot table holds (None: a free slot), slot 0 first."""
    L = max_tag_len
    out: list[Optional[AttrCondition]] = []

    def text(first: int, s: int, count: int) -> bytes:
        return bytes(rows[first + p] >> (8 * s) & 0xFF for p in range(count))

    for s in range(slots):
        name = text(0, s, L).split(b"\0", 1)[0]
        if not name:
            out.append(None)
            continue
        f = flags >> (SLOT_FLAG_BITS * s)
        kind = KINDS[min(f & 3, len(KINDS) - 1)]
        accepts = tuple(a for k, a in enumerate(OUTCOMES) if f >> (2 + k) & 1)
        attribute = name.decode("utf-8", "replace")
        if kind == "exists":
            out.append(AttrCondition(attribute, "exists"))
        elif kind == "string" and accepts in (("eq",), ("lt",)):
            out.append(AttrCondition(attribute, "=" if accepts == ("eq",) else "!=",
                                     text(L, s, L).split(b"\0", 1)[0]
                                     .decode("utf-8", "replace")))
        elif kind == "string":           # a constant that is not a number: only != holds
            out.append(AttrCondition(attribute, "!=" if accepts else "=", float("nan")))
        else:
            op = next((o for o, a in NUMBER_ACCEPTS.items() if set(a) == set(accepts)), "=")
            whole = "".join(str(rows[2 * L + p] >> (8 * s) & 15) for p in range(f >> 7 & 15))
            frac = "".join(str(rows[2 * L + DIGIT_ROWS + p] >> (8 * s) & 15)
                           for p in range(f >> 11 & 15))
            number = float(Decimal(f"{'-' if f >> 6 & 1 else ''}{whole or '0'}.{frac or '0'}"))
            out.append(AttrCondition(attribute, op, number))
    return out
