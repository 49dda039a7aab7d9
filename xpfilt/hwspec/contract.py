"""What the hardware (:mod:`hdl`) and its cycle-accurate model (:mod:`xpfilt.model`) must
agree on, defined once and imported by both, so that the model needs none of the RTL's
elaboration code: the front end's byte classes, keywords, name hash, latency and parser states,
the error flags, the parameters' checks, the event distribution tree's shape and the
configuration stream's CRC polynomial.

(No ``from __future__ import annotations`` here: ``data.Struct`` needs real annotations.)
"""

import enum as py_enum
import math
from dataclasses import dataclass
from decimal import Decimal
from typing import Optional, Sequence, Union, cast

from amaranth.lib import data, enum

__all__ = [
    "WHITESPACE",
    "NAME_START",
    "NAME_CHAR",
    "CDATA_KEYWORD",
    "DOCTYPE_KEYWORD",
    "HASH_WIDTH",
    "HASH_POLY",
    "HASH_INIT",
    "EXCESS_WIDTH",
    "LATENCY",
    "hash_byte",
    "name_hash",
    "ErrorFlags",
    "Errors",
    "PREDEFINED_ENTITIES",
    "REFERENCE_STATES",
    "reference_steps",
    "index_width",
    "tag_width_for",
    "State",
    "check_parameters",
    "EVENT_FANOUT",
    "distribution_depth",
    "CRC32_POLY",
    "AttrCondition",
    "NUMBER_DIGITS",
    "number_digits",
    "value_number",
    "condition_value_holds",
    "CONDITION_OPS",
    "TEXT",
    "BYTES_PER_CYCLE",
    "wide_latency",
    "wide_parser_stages",
    "down_sweep_stages",
    "check_bytes_per_cycle",
    "queue_depth_for",
]


# --- byte classes -----------------------------------------------------------------------------

#: XML whitespace (S).
WHITESPACE = frozenset(b" \t\r\n")
#: Bytes that may start an element or attribute name: ASCII letters, ``_``, ``:`` and any byte
#: of a multi-byte UTF-8 sequence (>= 0x80; not validated further).
NAME_START = frozenset(
    [
        *range(ord("A"), ord("Z") + 1),
        *range(ord("a"), ord("z") + 1),
        ord("_"),
        ord(":"),
        *range(0x80, 0x100),
    ]
)
#: Bytes allowed after the first one of a name.
NAME_CHAR = NAME_START | frozenset([*range(ord("0"), ord("9") + 1), ord("."), ord("-")])

#: After ``<![``, the bytes that must follow for a CDATA section.
CDATA_KEYWORD = b"CDATA["
#: After ``<!D``, the bytes that must follow for a document type declaration.
DOCTYPE_KEYWORD = b"OCTYPE"


# --- the name hash (CRC-8, polynomial x^8 + x^2 + x + 1, not reflected) ------------------------

HASH_WIDTH = 8
HASH_POLY = 0x07
HASH_INIT = 0x00

#: Width of the counter of levels opened beyond ``max_depth`` (saturating).
EXCESS_WIDTH = 16

#: Cycles from a byte on ``bytes_in`` to its event on ``events`` (stages D1, D2, P, E, F).
LATENCY = 5

#: The widths a front end may take, in bytes per cycle (issue 18; 1 is the one-byte front end).
BYTES_PER_CYCLE = (1, 2, 4, 8)


def down_sweep_stages(width: int) -> int:
    """Registered stages of a W-byte front end's down-sweep (after stage S): the control state
    after each lane whose block of the parallel-prefix up-sweep does not begin at lane 0, from
    the state before that block, one apply a stage (W = 2: 0, 4: 1, 8: 2)."""
    return max(check_bytes_per_cycle(width).bit_length() - 2, 0)


def wide_parser_stages(width: int) -> int:
    """Registered stages a beat of a W-byte front end passes from its byte classes (D2) to the
    event queue: the log2(W) levels of the parallel-prefix parser's up-sweep (X1..Xk), then S
    (the control state after each lane of a block from lane 0), :func:`down_sweep_stages`
    (the state after every other lane), O (each lane's requests), N (the lanes' depth, name
    and hash prefixes), N2 (their bounds on the depth before the beat), L (the depth after the
    beat, the name position and hash before each lane), L2 (the depth before each lane; the
    CAM's block RAM read), L3 (the CAM rows, each lane's depth flags), L4 (each lane's CAM
    result: its rows ANDed), M (the shared tag
    decoders' candidate tags, the lanes' events without their tags), M2 (each tag event's tag
    id from its decoder) and P2 (the lanes' events)."""
    return check_bytes_per_cycle(width).bit_length() - 1 + down_sweep_stages(width) + 10


def wide_latency(width: int) -> int:
    """Cycles from a beat on a W-byte front end's ``bytes_in`` to its first event on ``events``
    when its event queue is empty (D1, D2, the parser stages, the queue, E, F, ``events``)."""
    return 2 + wide_parser_stages(width) + 4


def check_bytes_per_cycle(width: int) -> int:
    """``width`` if it is one of :data:`BYTES_PER_CYCLE`, else a ValueError."""
    if width not in BYTES_PER_CYCLE:
        raise ValueError(f"bytes per cycle must be one of 1, 2, 4, 8, not {width!r}")
    return width


def queue_depth_for(width: int) -> int:
    """Entries of a W-byte front end's event queue, a multiple of W (W banks): W for each beat
    before the queue (on ``bytes_in``, in D1, D2 and the :func:`wide_parser_stages`), for the
    one being accepted and for the beat whose events the ``room`` flags, judged from the cycle
    before, may count twice (in P2 and in the queue), and 4 more (rounded up to W) so that a
    few queued events do not stall the input."""
    return (3 + wide_parser_stages(width) + 2) * width + -(-4 // width) * width


def hash_byte(h: int, byte: int) -> int:
    """The name hash after one more byte. Linear over GF(2) in ``h ^ byte``."""
    x = (h ^ byte) & 0xFF
    for _ in range(8):
        x = ((x << 1) ^ HASH_POLY) & 0xFF if x & 0x80 else (x << 1) & 0xFF
    return x


def name_hash(name: bytes) -> int:
    """The hash the hardware computes over a whole name."""
    h = HASH_INIT
    for b in name:
        h = hash_byte(h, b)
    return h


# --- the error flags ----------------------------------------------------------------------------


class ErrorFlags(data.Struct):
    """Per-document error flags (bit 0 = ``malformed``): what the front end cannot answer
    (:mod:`xpfilt.hdl.frontend` says when each is raised). ``entity``: a reference to an
    entity other than the five predefined ones (:func:`reference_steps`), whose text may hold
    markup; the host answers a flagged document in software (``xpfilt host``)."""

    malformed: 1  # type: ignore[valid-type]  # an Amaranth shape
    depth_overflow: 1  # type: ignore[valid-type]  # an Amaranth shape
    name_too_long: 1  # type: ignore[valid-type]  # an Amaranth shape
    value_undecided: 1  # type: ignore[valid-type]  # an Amaranth shape
    entity: 1  # type: ignore[valid-type]  # an Amaranth shape


#: The same flags as a Python :class:`enum.IntFlag` for software, derived from :class:`ErrorFlags`.
Errors = py_enum.IntFlag(  # type: ignore[misc]  # members derived at run time
    "Errors", {name.upper(): 1 << field.offset for name, field in data.Layout.cast(ErrorFlags)}
)
Errors.__doc__ = "Error flags of a document, as reported in ``events.errors`` on ``doc_end``."


#: The entity references the front end decides (XML's predefined entities): any other
#: reference (an entity the DTD declares: its text may hold markup) sets ``entity``.
PREDEFINED_ENTITIES = (b"lt", b"gt", b"amp", b"apos", b"quot")


def reference_steps() -> dict[bytes, dict[int, Optional[bytes]]]:
    """What the front end accepts after an ``&`` in content or in an attribute value: for each
    prefix read so far (``b""`` right after the ``&``), the bytes that may follow it, each
    with the prefix it makes, or None when the reference is complete (``#`` right after the
    ``&``: a character reference, not checked further; ``;`` after a name of
    :data:`PREDEFINED_ENTITIES`). Any other byte after one of these prefixes sets ``entity``
    (a reference to another entity, or a bare ``&``: the front end cannot decide it)."""
    steps: dict[bytes, dict[int, Optional[bytes]]] = {b"": {ord("#"): None}}
    for name in PREDEFINED_ENTITIES:
        for k in range(len(name)):
            steps.setdefault(name[:k], {})[name[k]] = name[: k + 1]
        steps.setdefault(name, {})[ord(";")] = None
    return steps


def index_width(n: int) -> int:
    """Bits of an index over ``n`` things (0..n-1), at least 1."""
    return max(1, (n - 1).bit_length())


def tag_width_for(n_tags: int) -> int:
    """Bits of a tag id for a dictionary of ``n_tags`` names (ids 0..n_tags)."""
    return max(1, n_tags.bit_length())


class State(enum.Enum, shape=6):  # type: ignore[call-arg]  # Amaranth's enum
    """Byte parser states (what the next byte is read as)."""

    TEXT = 0  # character data in content, or the prolog/epilog (whitespace only)
    LT = 1  # after "<"
    START_NAME = 2  # in a start-tag name
    IN_TAG = 3  # in a start tag after whitespace: an attribute name, "/" or ">"
    ATTR_NAME = 4  # in an attribute name
    ATTR_EQ = 5  # after an attribute name and whitespace: "="
    ATTR_VALUE = 6  # after "=": whitespace or an opening quote
    AVAL_DQ = 7  # in a "..." attribute value
    AVAL_SQ = 8  # in a '...' attribute value
    AFTER_AVAL = 9  # after an attribute value: whitespace, "/" or ">"
    EMPTY_SLASH = 10  # after "/" in a start tag: ">"
    END_LT = 11  # after "</": a name
    END_NAME = 12  # in an end-tag name
    END_WS = 13  # after an end-tag name and whitespace: ">"
    BANG = 14  # after "<!": "-", "[" or "D"
    BANG_DASH = 15  # after "<!-": "-"
    COMMENT = 16  # in a comment
    COMMENT_D1 = 17  # in a comment after "-"
    COMMENT_D2 = 18  # in a comment after "--": ">"
    PI = 19  # in a processing instruction / XML declaration
    PI_Q = 20  # in a processing instruction after "?"
    CDATA_KW = 21  # matching CDATA_KEYWORD after "<!["
    CDATA = 22  # in a CDATA section
    CDATA_B1 = 23  # in a CDATA section after "]"
    CDATA_B2 = 24  # in a CDATA section after "]]"
    DOCTYPE_KW = 25  # matching DOCTYPE_KEYWORD after "<!D"
    DOCTYPE = 26  # in a DOCTYPE declaration, outside the internal subset
    DT_DQ = 27  # in a "..." literal of the DOCTYPE declaration
    DT_SQ = 28  # in a '...' literal of the DOCTYPE declaration
    SUBSET = 29  # in the internal subset, between declarations
    SUB_LT = 30  # in the internal subset after "<"
    SUB_BANG = 31  # in the internal subset after "<!"
    DECL = 32  # in a markup declaration (<!ENTITY ...>, <!ELEMENT ...>, ...)
    DECL_DQ = 33  # in a "..." literal of a markup declaration
    DECL_SQ = 34  # in a '...' literal of a markup declaration
    DT_AFTER = 35  # after the internal subset's "]": whitespace, ">"


#: The states in which an ``&`` begins an entity or character reference (content, and an
#: attribute value): the front end checks it against :func:`reference_steps`.
REFERENCE_STATES = (State.TEXT, State.AVAL_DQ, State.AVAL_SQ)


def check_parameters(tags: Sequence[str], max_depth: int, max_name: int) -> list[bytes]:
    """Validate front-end parameters; return the tag names as UTF-8 bytes (``tags[i]`` = i+1)."""
    if not isinstance(max_depth, int) or max_depth < 1:
        raise ValueError(f"max_depth must be a positive integer, not {max_depth!r}")
    if not isinstance(max_name, int) or max_name < 1:
        raise ValueError(f"max_name must be a positive integer, not {max_name!r}")
    if isinstance(tags, (str, bytes)):
        raise TypeError(f"tags must be a sequence of names, not {tags!r}")
    out: list[bytes] = []
    seen: set[bytes] = set()
    for tag in tags:
        if not isinstance(tag, str):
            raise TypeError(f"tag must be a str, not {tag!r}")
        raw = tag.encode("utf-8")
        if not raw or raw[0] not in NAME_START or any(b not in NAME_CHAR for b in raw):
            raise ValueError(f"tag must be an XML element name, not {tag!r}")
        if len(raw) > max_name:
            raise ValueError(f"tag must be at most max_name={max_name} bytes long, not {tag!r}")
        if raw in seen:
            raise ValueError(f"tags must be distinct, not {tag!r} twice")
        seen.add(raw)
        out.append(raw)
    return out


# --- the registered distribution trees (xpfilt.hdl.cluster.distribute) ----------------------------------

#: At most this many registers (clusters, or tree registers) load from one register of the
#: event distribution tree.
EVENT_FANOUT = 4


def distribution_depth(leaves: int) -> int:
    """Register levels of the event distribution tree in front of ``leaves`` clusters: the
    smallest d with ``EVENT_FANOUT ** d >= leaves`` (0 for one cluster)."""
    depth = 0
    while EVENT_FANOUT**depth < leaves:
        depth += 1
    return depth


#: Register stages of the programmable engine's tag decoder between the front end's name tap and
#: its tag index (:class:`xpfilt.hdl.programmable.TagDecoder`): the tap's copies, the dictionary's
#: nibble rows' synchronous read (block RAMs), their output registers, the entries' "name so far"
#: and "name ends here" flags, the index. (6 before stream format 10: a stage compared each
#: entry's byte.)
DECODER_STAGES = 5

#: Cycles a programmable cluster's tag matrix (a block RAM) takes from the index to the tag hits:
#: the read address register and the output register (on the ECP5 the DP16KD's own, REGMODE
#: OUTREG: :class:`xpfilt.hdl.bram.RegisteredRAM`; without it the data shows 5.8 ns after the
#: clock).
MATRIX_READ_CYCLES = 2


#: Cycles from a configuration bit's transfer on the programmable engine's ``config`` port to
#: the loader's checking it (its input register, :class:`xpfilt.hdl.programmable.ConfigLoader`):
#: the status shows a stream's verdict ``CONFIG_INPUT_CYCLES + 1`` cycles after its last bit.
CONFIG_INPUT_CYCLES = 1


def programmable_event_delay(clusters: int) -> int:
    """Registers between the front end's events register and a programmable cluster's copy of
    them, beyond the one a cluster had when its decoder had one stage and its tag matrix read
    in one cycle: the events wait for the decoder's later stages and the matrix read, then
    cross the distribution tree (:func:`distribution_depth`) into the cluster's copy, as the
    index does."""
    return DECODER_STAGES - 1 + MATRIX_READ_CYCLES + distribution_depth(clusters)


# --- configuration streams ------------------------------------------------------------------------

CRC32_POLY = 0xEDB88320  # reflected IEEE polynomial: bit-serial CRC-32 equal to zlib.crc32


# --- attribute conditions (issue 14: value predicates in the custom engine's front end) -----------

#: Comparison operators of an attribute condition, and ``exists`` (``[@a]``).
CONDITION_OPS = ("exists", "=", "!=", "<", "<=", ">", ">=")
#: Most digits a number may have for the hardware to compare it (the attribute value's digits
#: after the integer part's leading zeros, fraction digits included; a number literal's too).
#: Up to 15 digits, every decimal is told apart from every other by its nearest double
#: (DBL_DIG), so comparing the decimals exactly gives what XPath's double comparison gives.
NUMBER_DIGITS = 15


#: The ``attribute`` of a condition on an element's text nodes (``text()``; not an XML name).
TEXT = "text()"

#: Why a hardware engine (custom or programmable) refuses a query with a position() predicate.
POSITION_REFUSED = "position() predicates are not supported by the hardware engines"


@dataclass(frozen=True)
class AttrCondition:
    """One condition the front end evaluates on a start tag's attributes: the element has
    attribute ``attribute`` and (unless ``op`` is ``exists``) its value compares with
    ``literal`` (a float: number; a str: string for ``=``/``!=``, else its number) as XPath 1.0
    does. Its bit travels with the element's push.

    With ``attribute`` = :data:`TEXT` it is a condition on the element's text-node children
    instead (``[text() op literal]``, ``[text()]`` for ``exists``): its bit says that *some* text
    node of the element satisfies it, and travels with the element's pop (see
    :class:`xpfilt.hdl.frontend.FrontEnd`)."""

    attribute: str
    op: str
    literal: Union[float, str, None] = None

    @property
    def is_text(self) -> bool:
        return self.attribute == TEXT

    @property
    def kind(self) -> str:
        """``exists``, ``string`` (``=``/``!=`` with a string), ``nan`` (a number comparison
        with a literal whose number is NaN: only ``!=`` holds) or ``number``."""
        if self.op == "exists":
            return "exists"
        if isinstance(self.literal, str) and self.op in ("=", "!="):
            return "string"
        return "nan" if math.isnan(self.number) else "number"

    @property
    def number(self) -> float:
        literal = self.literal
        if isinstance(literal, str):
            from xpfilt.lang.xpath import xpath_number  # late: xpath imports nothing of ours

            return xpath_number(literal)
        return float(cast(float, literal))  # only a comparison asks for its number


def number_digits(number: float) -> Optional[tuple[bool, str, str]]:
    """A finite number literal as the hardware's comparator holds it: (negative, integer digits
    without leading zeros, fraction digits without trailing zeros) of its shortest decimal form;
    None if that needs more than :data:`NUMBER_DIGITS` digits (or it is not finite)."""
    if not math.isfinite(number):
        return None
    text = format(Decimal(repr(number)), "f")
    negative = text.startswith("-")
    whole, _, fraction = text.lstrip("-").partition(".")
    whole, fraction = whole.lstrip("0"), fraction.rstrip("0")
    if len(whole) + len(fraction) > NUMBER_DIGITS:
        return None
    return negative and bool(whole or fraction), whole, fraction


_VALUE_WS = b" \t\n"


def value_number(raw: bytes) -> Union[Decimal, float, None]:
    """What the front end's number lexer makes of an attribute value's bytes: the exact
    :class:`Decimal`, NaN (not a number: XPath's ``number()`` is NaN too), or None (undecided:
    an exponent, ``e``/``E`` right after a number, or more than :data:`NUMBER_DIGITS` digits).
    Whitespace is space, tab and newline (a carriage return makes the value undecided before
    this is asked, see :func:`condition_value_holds`). The lexer: leading whitespace, ``-``,
    digits, ``.`` and digits (one side at least), trailing whitespace."""
    state = "lead"
    sig = digits = 0
    for b in raw:
        if state in ("nan", "undecided"):
            break
        digit = 48 <= b <= 57
        if state == "lead":
            state = (
                "lead"
                if b in _VALUE_WS
                else "sign"
                if b == 45
                else "int"
                if digit
                else "dot"
                if b == 46
                else "nan"
            )
        elif state == "sign":
            state = "int" if digit else "dot" if b == 46 else "nan"
        elif state == "int":
            state = (
                "int"
                if digit
                else "frac"
                if b == 46
                else "trail"
                if b in _VALUE_WS
                else "undecided"
                if b in b"eE"
                else "nan"
            )
        elif state == "dot":
            state = "frac" if digit else "nan"
        elif state == "frac":
            state = (
                "frac"
                if digit
                else "trail"
                if b in _VALUE_WS
                else "undecided"
                if b in b"eE"
                else "nan"
            )
        elif state == "trail":
            state = "trail" if b in _VALUE_WS else "nan"
        if digit and state in ("int", "frac"):
            if state == "frac" or sig or b != 48:
                sig = 1
                digits += 1
    if state == "undecided":
        return None
    if state not in ("int", "frac", "trail"):
        return math.nan
    if digits > NUMBER_DIGITS:
        return None
    return Decimal(raw.strip(_VALUE_WS).decode("ascii").rstrip("."))


def condition_value_holds(condition: AttrCondition, raw: bytes) -> Optional[bool]:
    """Whether an attribute value, as its bytes between the quotes, satisfies ``condition``
    (the attribute is present): what the front end computes, None when it cannot decide. It
    cannot when the value of a compared attribute holds ``&`` (an entity or character reference
    changes the value) or a carriage return (line-end normalisation), nor for a number
    comparison when :func:`value_number` is None. XML normalises tab and newline in attribute
    values to spaces: a string comparison reads them as spaces.

    For a text condition (``condition.is_text``) ``raw`` is one text node's character data as
    written (the bytes of the text and of its CDATA sections, markup left out; never empty), and
    a string comparison reads tab and newline as written."""
    kind = condition.kind
    if kind == "exists":
        return True
    if b"&" in raw or b"\r" in raw:
        return None
    if kind == "string":
        value = raw if condition.is_text else raw.replace(b"\t", b" ").replace(b"\n", b" ")
        literal = cast(str, condition.literal)  # a string condition's literal is one
        return (value == literal.encode("utf-8")) == (condition.op == "=")
    if kind == "nan":
        return condition.op == "!="
    v = value_number(raw)
    if v is None:
        return None
    op = condition.op
    if isinstance(v, float):  # NaN
        return op == "!="
    k = Decimal(repr(condition.number))
    return {"=": v == k, "!=": v != k, "<": v < k, "<=": v <= k, ">": v > k, ">=": v >= k}[op]
