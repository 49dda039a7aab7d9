"""The programmable engine's comparator slots (issue 14 part 3): how an attribute condition
(attribute name, operator, constant) is held in a slot of the configuration stream.

A slot is part of the engine-wide dictionary payload (after the tag entries): ``slot_rows(L)``
rows of one byte per slot (row ``r`` byte ``s`` = slot ``s``; ``L`` = ``max_tag_len``):

* rows ``0 .. L-1``: the attribute name, zero-padded (all zeros: a free slot);
* rows ``L .. 2L-1``: a string constant, zero-padded (``=``/``!=`` with a string; the front
  end compares names and strings with one comparator: a name and a value never stream
  together);
* rows ``2L .. 2L+15``: the integer digits of a number constant (without leading zeros), one
  per row in the low nibble; rows ``2L+16 .. 2L+31``: its fraction digits (without trailing
  zeros), zero beyond them;

then :data:`SLOT_FLAG_BITS` per slot (slot 0 first, LSB first): the kind (2 bits, :data:`KINDS`),
the outcomes the operator accepts (4 bits, :data:`OUTCOMES`: a number below, equal to, above the
constant, not a number; a string: equal, or "lt" for not equal), the number's sign (1), its
count of integer digits (4) and of fraction digits (4), then the slot's *link* (3 bits): the
comparison is negated, the next slot continues this one's chain, the chain is an ``or`` (else an
``and``); last the *text* bit: the slot compares the element's text nodes (``[text() op v]``,
``[text()]``; its name rows are zeros) instead of an attribute value. A comparison with a
constant that is not a number (``[@a < 'x']``) is a string slot accepting both outcomes
(``!=``) or none. A free slot has a zero name and a zero text bit.

A step's predicates are one *chain* of up to :data:`MAX_CHAIN` consecutive slots: the ``and`` (or
the ``or``) of comparisons, each possibly negated (``[@a=1][@b]``, ``[@a=1 and not(@b)]``,
``[@a=1 or @a=2]``, ``[not(@a=1 or @b)]``: De Morgan). A chain's bit (:func:`chain_bits`) is
taken when the element's start tag ends, from its slots' bits (a slot of an absent attribute is
0, so ``not(...)`` of it holds); the step's column selects the chain's first slot. A chain may
mix attribute and ``text()`` comparisons under ``and`` (an ``or`` takes one kind): it is taken
twice, in two *phases* (:data:`PHASES`): at the push over the attribute comparisons (the text
ones read as holding), at the pop over the text ones (the attribute ones read as holding:
the column's bit says they held at the push). A text slot's bit at the pop says that some
text node child of the closing element satisfies it (XPath's ``text() op v``). The front end (:class:`xpfilt.hdl.frontend.FrontEnd` with ``slots``)
decides every slot on every attribute value, as it decides the custom engine's conditions
(:func:`xpfilt.hwspec.contract.condition_value_holds`).
"""

from __future__ import annotations

from decimal import Decimal
from typing import NamedTuple, Optional, Sequence, cast

from xpfilt.hwspec.contract import (
    NUMBER_DIGITS,
    POSITION_REFUSED,
    TEXT,
    AttrCondition,
    number_digits,
)
from xpfilt.lang.xpath import And, AttributeTarget, Exists, Not, Or, Predicate, TextTarget

__all__ = [
    "SLOT_FLAG_BITS",
    "DIGIT_ROWS",
    "KINDS",
    "OUTCOMES",
    "NUMBER_ACCEPTS",
    "MAX_CHAIN",
    "SlotLink",
    "Chain",
    "slot_rows",
    "slot_key",
    "slot_refusal",
    "step_chain",
    "chains_of",
    "chain_bits",
    "encode_slots",
    "decode_slots",
    "PHASES",
    "text_mask",
]

DIGIT_ROWS = NUMBER_DIGITS + 1  # integer digit positions (and fraction positions)
KINDS = ("exists", "string", "number")
OUTCOMES = ("lt", "eq", "gt", "nan")
#: The outcomes each operator accepts, for numbers.
NUMBER_ACCEPTS = {
    "=": ("eq",),
    "!=": ("lt", "gt", "nan"),
    "<": ("lt",),
    "<=": ("lt", "eq"),
    ">": ("gt",),
    ">=": ("gt", "eq"),
}
#: kind 2, outcomes 4, negative 1, integer 4, fraction 4, link 3 (negated, continues, or),
#: text 1
SLOT_FLAG_BITS = 19
#: Bit of a slot's flags: it compares text nodes (else an attribute value).
TEXT_FLAG = 18
#: When a chain is taken: at the element's push (attribute slots) or at its pop (text slots).
PHASES = ("push", "pop")
#: Most comparisons in a step's chain (the front end combines that many slots' bits).
MAX_CHAIN = 4


class SlotLink(NamedTuple):
    """What a slot holds: its comparison and its place in a chain."""

    condition: AttrCondition
    negated: bool = False
    continues: bool = False  # the next slot is the next comparison of this chain
    any: bool = False  # the chain is an ``or`` (read on its first slot)


class Chain(NamedTuple):
    """A step's predicates as slots: the ``and`` (``any``: the ``or``) of ``links`` ((condition,
    negated) pairs)."""

    any: bool
    links: tuple

    @property
    def closes(self) -> bool:
        """The chain compares text: its step is decided when its element closes."""
        return any(c.is_text for c, _ in self.links)

    @property
    def key(self) -> tuple:
        """Equal keys, one run of slots (and the same chain read back from a stream)."""
        return (
            self.any and len(self.links) > 1,
            tuple((slot_key(c), neg) for c, neg in self.links),
        )

    def slot_links(self) -> list[SlotLink]:
        """The chain's slots, first to last."""
        n = len(self.links)
        return [
            SlotLink(c, neg, k + 1 < n, self.any and n > 1) for k, (c, neg) in enumerate(self.links)
        ]


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
    if kind == "nan":  # only "!=" holds, whatever the value
        return cond.attribute, kind, cond.op == "!="
    return cond.attribute, kind, cond.op, number_digits(cond.number)


def slot_refusal(cond: AttrCondition, max_tag_len: int) -> str:
    """Why a slot of this hardware cannot hold ``cond`` ("" if it can)."""
    if not cond.is_text and len(cond.attribute.encode("utf-8")) > max_tag_len:
        return (
            f"attribute name {cond.attribute!r} is longer than the hardware's max tag "
            f"length {max_tag_len}"
        )
    if cond.kind == "string" and len(cast(str, cond.literal).encode("utf-8")) > max_tag_len:
        return f"string {cond.literal!r} is longer than the hardware's max tag length {max_tag_len}"
    if cond.kind == "number" and number_digits(cond.number) is None:
        return f"number {cond.literal!r} has more than {NUMBER_DIGITS} digits"
    return ""


def step_chain(step) -> Optional[Chain]:
    """The chain of slots a step's predicates take (None: no predicate); ValueError saying why
    they do not fit one (``position()``, a nested path, ``and`` mixed with ``or``, an ``or`` of
    attribute and ``text()`` comparisons, more than :data:`MAX_CHAIN` comparisons)."""
    if not step.predicates:
        return None
    mixed = (
        f"step {step.name!r}: the programmable engine takes an 'and' or an 'or' of "
        f"comparisons per step, not both"
    )
    try:
        parts = [_chain_of(p, False) for p in step.predicates]
    except _Mixed:
        raise ValueError(mixed) from None
    if len(parts) == 1:
        chain = parts[0]
    elif any(any_ and len(links) > 1 for any_, links in parts):
        raise ValueError(mixed)
    else:
        chain = (False, tuple(link for _, links in parts for link in links))
    if chain[0] and len({c.is_text for c, _ in chain[1]}) > 1:
        raise ValueError(
            f"step {step.name!r}: the programmable engine takes an 'or' of "
            f"attribute comparisons or of text() comparisons per step, not of both"
        )
    if len(chain[1]) > MAX_CHAIN:
        raise ValueError(
            f"step {step.name!r}: the programmable engine takes at most "
            f"{MAX_CHAIN} comparisons per step, not {len(chain[1])}"
        )
    return Chain(chain[0] and len(chain[1]) > 1, chain[1])


class _Mixed(ValueError):
    """``and`` and ``or`` in one step's predicates."""


def _chain_of(node, negated: bool) -> tuple[bool, tuple]:
    """(is an ``or``, ((condition, negated), ...)) of a predicate, ``not`` pushed to the
    comparisons (De Morgan); ValueError when it is not one ``and`` or one ``or``."""
    if isinstance(node, Not):
        return _chain_of(node.operand, not negated)
    if isinstance(node, (And, Or)):
        any_ = isinstance(node, Or) != negated
        links: list[tuple[AttrCondition, bool]] = []
        for operand in node.operands:
            inner_any, inner = _chain_of(operand, negated)
            if len(inner) > 1 and inner_any != any_:
                raise _Mixed()
            links += inner
        return any_, tuple(links)
    if isinstance(node, (Predicate, Exists)) and isinstance(
        node.target, (AttributeTarget, TextTarget)
    ):
        name = TEXT if isinstance(node.target, TextTarget) else node.target.name
        if isinstance(node, Exists):
            return False, ((AttrCondition(name, "exists"), negated),)
        return False, ((AttrCondition(name, node.op, node.literal), negated),)
    if isinstance(node, (Predicate, Exists)):
        raise ValueError(POSITION_REFUSED)
    raise ValueError(
        "nested paths (twig profiles) are not supported by the programmable engine yet"
    )


def chains_of(links: Sequence[Optional[SlotLink]]) -> dict[int, Chain]:
    """The chains a slot table holds: first slot -> chain (a slot not continued from the one
    before starts one; at most :data:`MAX_CHAIN` slots, as the front end reads them)."""
    out = {}
    s = 0
    while s < len(links):
        first = links[s]
        if first is None:
            s += 1
            continue
        run = [first]
        while run[-1].continues and len(run) < MAX_CHAIN and s + len(run) < len(links):
            following = links[s + len(run)]
            if following is None:
                break
            run.append(following)
        out[s] = Chain(first.any, tuple((l.condition, l.negated) for l in run))
        s += len(run)
    return out


def text_mask(links: Sequence[Optional[SlotLink]]) -> int:
    """The slots that compare text (bit ``s``: slot ``s``)."""
    return sum(1 << s for s, link in enumerate(links) if link and link.condition.is_text)


def chain_bits(links: Sequence[Optional[SlotLink]], bits: int, phase: str = "push") -> int:
    """Each slot's chain bit from the slots' comparison ``bits`` (the front end's: at the
    push, a start tag's; at the pop, the closing element's text bits): slot ``s``'s is the
    ``and`` (its ``any``: the ``or``) of the comparisons, each negated as its link says, of
    slot ``s`` and the next ones it continues into (at most :data:`MAX_CHAIN`), where the
    comparisons of the other ``phase`` (text ones at the push, attribute ones at the pop) read
    as holding; a free slot's is its bit (or 1 at the pop, as an attribute slot's)."""
    texts = text_mask(links)
    force = texts if phase == "push" else ~texts
    out = 0
    for s, link in enumerate(links):
        lits = []
        t = s
        while True:
            here = links[t]
            lits.append((bits >> t & 1) ^ (here.negated if here else 0) | force >> t & 1)
            if not (here and here.continues) or len(lits) == MAX_CHAIN or t + 1 == len(links):
                break
            t += 1
        out |= int(any(lits) if link and link.any else all(lits)) << s
    return out


def encode_slots(
    links: Sequence[Optional[SlotLink]], slots: int, max_tag_len: int
) -> tuple[list[int], int]:
    """The slot table of ``links`` (slot ``s`` = ``links[s]``; None and the rest: free): its
    rows (``8 * slots`` bits each) and its flags (``SLOT_FLAG_BITS * slots`` bits)."""
    L = max_tag_len
    rows = [bytearray(slots) for _ in range(slot_rows(L))]
    flags = 0
    for s, link in enumerate(links):
        if link is None:
            continue
        cond = link.condition
        kind = cond.kind
        neg, whole, frac = False, "", ""
        for p, b in enumerate(b"" if cond.is_text else cond.attribute.encode("utf-8")):
            rows[p][s] = b
        if kind == "string":
            for p, b in enumerate(cast(str, cond.literal).encode("utf-8")):
                rows[L + p][s] = b
        elif kind == "number":
            digits = number_digits(cond.number)
            assert digits is not None, "a caller refuses it first (slot_refusal)"
            neg, whole, frac = digits
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
        flags |= (
            KINDS.index(kind)
            | mask << 2
            | neg << 6
            | len(whole) << 7
            | len(frac) << 11
            | link.negated << 15
            | link.continues << 16
            | link.any << 17
            | cond.is_text << TEXT_FLAG
        ) << (SLOT_FLAG_BITS * s)
    return [int.from_bytes(r, "little") for r in rows], flags


def decode_slots(
    rows: Sequence[int], flags: int, slots: int, max_tag_len: int
) -> list[Optional[SlotLink]]:
    """What a slot table holds (None: a free slot), slot 0 first."""
    L = max_tag_len
    out: list = []

    def text(first: int, s: int, count: int) -> bytes:
        return bytes(rows[first + p] >> (8 * s) & 0xFF for p in range(count))

    for s in range(slots):
        name = text(0, s, L).split(b"\0", 1)[0]
        f = flags >> (SLOT_FLAG_BITS * s)
        if not name and not f >> TEXT_FLAG & 1:
            out.append(None)
            continue
        kind = KINDS[min(f & 3, len(KINDS) - 1)]
        accepts = tuple(a for k, a in enumerate(OUTCOMES) if f >> (2 + k) & 1)
        attribute = TEXT if f >> TEXT_FLAG & 1 else name.decode("utf-8", "replace")
        if kind == "exists":
            out.append(AttrCondition(attribute, "exists"))
        elif kind == "string" and accepts in (("eq",), ("lt",)):
            out.append(
                AttrCondition(
                    attribute,
                    "=" if accepts == ("eq",) else "!=",
                    text(L, s, L).split(b"\0", 1)[0].decode("utf-8", "replace"),
                )
            )
        elif kind == "string":  # a constant that is not a number: only != holds
            out.append(AttrCondition(attribute, "!=" if accepts else "=", float("nan")))
        else:
            op = next((o for o, a in NUMBER_ACCEPTS.items() if set(a) == set(accepts)), "=")
            whole = "".join(str(rows[2 * L + p] >> (8 * s) & 15) for p in range(f >> 7 & 15))
            frac = "".join(
                str(rows[2 * L + DIGIT_ROWS + p] >> (8 * s) & 15) for p in range(f >> 11 & 15)
            )
            number = float(Decimal(f"{'-' if f >> 6 & 1 else ''}{whole or '0'}.{frac or '0'}"))
            out.append(AttrCondition(attribute, op, number))
        out[-1] = SlotLink(out[-1], bool(f >> 15 & 1), bool(f >> 16 & 1), bool(f >> 17 & 1))
    return out
