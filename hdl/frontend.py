"""The XML front end: a one-byte-per-cycle SAX parser, a streaming tag decoder (a trie) and the
global stack, turning document bytes into push/pop events for the path-specific stacks.

Everything the cycle-accurate model (:mod:`xpfilt.model.frontend`) must agree on (the byte
classes, the name hash, the error flags, the parser states) is defined once in
:mod:`xpfilt.hwspec.contract`, which both import; the layouts of the ports are here.

Timing. A byte accepted in cycle N (``bytes_in.valid``; ``ready`` is always 1) shows its event on
``events`` in cycle N + :data:`LATENCY` (5); every other cycle ``events`` is all zeros. The bytes
go through five registered stages, so that no path is long (one byte per cycle at every stage):

* D1 (``FrontEnd._stage_d1``): the byte and its two nibbles one-hot, registered;
* D2 (:class:`ByteClasses`): the byte's classes (whitespace, name bytes, each byte value
  compared), registered;
* P: the parser and its registers; the event so far (push/pop, new level, the errors this byte
  raised) registered (``_parser_registers``, ``_tag_decoder``, :func:`parse_byte`,
  ``_name_go``, ``_depth``, the conditions' methods, ``_name_tap``, ``_stage_p_registers``);
* E (``_stage_e``): the tag decoder (a trie of the dictionary's names, one flip-flop per
  prefix) and the name hash take in the byte stage P read the cycle before (they run a cycle behind the parser, off
  its state decode); the tag id is encoded from the trie's whole-name bits; the
  global stack row of the level before the event is read (a push's parent, the element a pop
  closes), registered; the document's errors accumulate;
* F (``_stage_f``): a push writes its row (no event reads it before two cycles later); the
  end-tag check (tag id and hash against that row); the ``events`` register.

* ``push``: on the byte that ends a start tag: the ``/`` of ``/>`` or the ``>``, after the
  attributes (so that an element's attribute conditions are known with its push; inside the tag
  the name registers hold the element's name). A malformed start tag (a bad byte inside it)
  never pushes. ``tag`` is the decoded
  name (``tags[i]`` is ``i + 1``, 0 = not in the dictionary), ``parent`` the tag on top of the
  global stack before the push (0 at the root), ``level`` the new depth (root element = 1).
* ``pop``: on the ``>`` of an end tag or of a self-closing ``/>``; ``level`` = depth before the pop.
  ``<a/>`` pushes on ``/`` and pops on ``>``.
* ``doc_end``: the event of the byte with ``last = 1``, with the document's sticky ``errors``
  (``errors`` is zero on every other cycle). A pop (the root's ``>``) may share that cycle.
  The parser is back in its initial state for the byte after the one with ``last``.

Attribute conditions (issue 14; ``conditions``, see :class:`xpfilt.hwspec.contract.AttrCondition`). In
stage P, beside the parser:

* an attribute-name CAM (a one-hot name position, over the conditions' attribute names)
  follows each attribute name; when the name ends, the one-hot ``cur`` register says which
  attribute's value comes next (none for other names);
* while the value streams (one byte per cycle, nothing else slows down), shared registers
  follow it: a one-hot byte position and one "still equal" bit per distinct string literal (tab
  and newline read as a space, XML's attribute-value normalisation); a one-hot number lexer
  (leading whitespace, ``-``, digits, ``.``, digits, trailing whitespace; an ``e``/``E`` right
  after a number makes it undecided), the sign, the count of digits and one-hot positions of
  the significant integer digits and of the fraction digits; and per distinct number literal
  two first-difference flags for the integer part and two for the fraction part (a digit
  compared with the literal's digit at that position, one LUT per flag);
* at the closing quote every condition on ``cur`` is decided from those registers (length
  first, then the first difference; the sign; ``-0`` equals 0): each distinct comparison and
  ``cur`` are registered in the next cycle, and their AND per condition is ORed into the
  ``conds`` register in the cycle after (two registered steps); ``conds`` clears on the byte after
  every ``<`` (not at a document's end: a push on the last byte keeps its bits) and travels
  with the push (``events.conds``, read by stage F straight from ``conds``, which holds still
  until then: no copy in stages E and F; a pop carries the text conditions' bits instead,
  below).

Text conditions (issue 14 part 2; conditions whose ``attribute`` is :data:`xpfilt.hwspec.contract.TEXT`,
``[text() op literal]`` and ``[text()]``). A second set of the same comparators (string CAM, number
lexer, first-difference flags; :mod:`xpfilt.hdl.conditions`) follows the character data of the
current text node: the bytes of text (inside the root element, not beyond ``max_depth``) and of
CDATA sections. A text node ends on the byte after a ``<`` unless that byte is ``!`` (then on the
byte after ``<!`` unless it is ``[``): an element's start or end tag, a comment or a processing
instruction ends it, a CDATA section continues it (XPath's data model: comments and PIs split
text nodes, CDATA sections do not). When a node with content ends, its condition bits are ORed
into its element's row of a small level-addressed memory (``text_stack``, one bit per text
condition, ``max_depth + 1`` rows; a push zeroes the new element's row, never in the same cycle
as a node's end), and an element's pop carries its row in ``conds`` (the text conditions' bits;
a push carries the attribute conditions' bits). So a text condition's bit on a pop says that
*some* text node child of the element satisfies it, as XPath's ``text() op literal`` does. The
stacks use it at the close, committing or dropping the matches that waited for it (see
:mod:`xpfilt.hdl.stacks`).

The front end never answers wrongly: a value of an attribute that has comparisons and contains
``&`` (an entity or character reference changes the value) or a carriage return (line-end
normalisation), and a value of an attribute with number comparisons that has an exponent or
more than :data:`xpfilt.hwspec.contract.NUMBER_DIGITS` digits, sets ``value_undecided`` (the conditions
it decides read 0). So does, with attribute conditions, an attribute-list declaration in the
internal subset (``<!ATTLIST``: its defaults add attributes, its types normalise values). So does a text node, when there are text conditions that compare values, with
``&`` or a carriage return, or with a ``]`` inside a CDATA section that does not close it (the
comparators take one byte per cycle and learn only at the next byte that the ``]`` was text), and,
for number comparisons, one with an exponent or too many digits. Any text node counts (the front
end does not know which elements the queries test), so a document with such text in any element
is flagged. :func:`xpfilt.hwspec.contract.condition_value_holds` is the definition the model
uses.

Errors (sticky within a document, reported with ``doc_end``):

* ``malformed``: a bad byte after ``<``, ``</``, ``<!``, in a name, inside a tag or a markup
  declaration; ``<`` in an attribute value; ``--`` inside a comment; an end tag whose (tag id,
  name hash) differs from the top of the global stack; an end tag at depth 0; non-whitespace text,
  CDATA or a second element outside the root element; a DOCTYPE after the root element started;
  at ``last``: no root element, an element left open or a construct left unfinished.
* ``depth_overflow``: a push beyond ``max_depth``. The push is not performed (no event, stacks
  untouched); deeper levels are counted so that their closes are swallowed too.
* ``name_too_long``: an element name longer than ``max_name`` bytes (it decodes to 0).
* ``value_undecided``: an attribute value the condition comparators cannot decide (above).
* ``entity``: a reference the front end cannot decide (issue 35 #7): an ``&`` in content or in
  an attribute value that does not begin ``&lt;``, ``&gt;``, ``&amp;``, ``&apos;``, ``&quot;`` or
  a character reference ``&#``: a reference to an entity the DTD declares (its text may hold
  markup: ``<!ENTITY m '<b/>'>`` ... ``&m;`` adds an element), or a bare ``&``
  (:func:`xpfilt.hwspec.contract.reference_steps`; ``_references``: one register per prefix of
  the five names, each a byte compare a cycle, no compare of a whole name). The host answers
  such a document in software (``xpfilt host``).

After any error the parser goes on consuming bytes (usually from the text state) and starts the
next document fresh.

Not checked (accepted as if well-formed): duplicate attributes, what follows ``&#`` (character
references), the entity declarations of the internal subset (only references to them count),
``]]>`` in text, control characters and invalid UTF-8, the
position and the target of processing instructions (``<?xml`` anywhere), the grammar of markup
declarations inside the internal subset (only their quoted literals and ``>`` are tracked), a
repeated DOCTYPE and the DOCTYPE's name (none, ``<!DOCTYPE>``, or malformed, ``<!DOCTYPEa>``,
``<!DOCTYPE a$[]>``). A UTF-8 byte
order mark is non-whitespace text before the root (malformed; the host software drops it, see
:func:`xpfilt.software.events.utf8_document`). An
end tag with a different *unknown* name (both decode to 0) whose 8-bit hash collides with the open
element's is not noticed (about 1 in 256 for random names; never when one of the two names is in
the dictionary, nor for names of equal length that differ in one byte: CRC burst detection).
"""

# (No ``from __future__ import annotations`` here: ``data.Struct`` needs real annotations.)

from functools import reduce
from operator import xor
from types import SimpleNamespace
from typing import Callable, NamedTuple, Sequence

from amaranth.hdl import Cat, Const, Module, Mux, Signal
from amaranth.lib import data, stream, wiring
from amaranth.lib.memory import Memory
from amaranth.lib.wiring import In, Out

from xpfilt.hdl.conditions import (
    LEXER_STATE,
    TEXT_NODE_STATE,
    AttributeConditions,
    TextConditions,
    advance,
    state_registers,
    text_node,
    value_lexer,
)
from xpfilt.hdl.slots import SlotLoadLayout, comparator_slots
from xpfilt.hwspec.contract import (
    CDATA_KEYWORD,
    DOCTYPE_KEYWORD,
    EXCESS_WIDTH,
    HASH_INIT,
    HASH_POLY,
    HASH_WIDTH,
    LATENCY,
    NAME_CHAR,
    NAME_START,
    NUMBER_DIGITS,
    REFERENCE_STATES,
    WHITESPACE,
    AttrCondition,
    ErrorFlags,
    Errors,
    State,
    check_parameters,
    hash_byte,
    name_hash,
    number_digits,
    reference_steps,
    tag_width_for,
)

__all__ = [
    "WHITESPACE",
    "NAME_START",
    "NAME_CHAR",
    "HASH_WIDTH",
    "HASH_POLY",
    "HASH_INIT",
    "EXCESS_WIDTH",
    "LATENCY",
    "hash_byte",
    "name_hash",
    "ErrorFlags",
    "Errors",
    "EventLayout",
    "StackEntry",
    "State",
    "ByteLayout",
    "NameTapLayout",
    "CDATA_KEYWORD",
    "DOCTYPE_KEYWORD",
    "tag_width_for",
    "check_parameters",
    "FrontEnd",
]


class EventLayout(data.StructLayout):
    """One front-end event: ``push``, ``pop``, ``tag``, ``parent``, ``level``, ``doc_end``,
    ``errors`` (LSB first in that order), and ``conds`` when there are conditions (a push's
    attribute condition bits, a pop's text condition bits, zero on other events)."""

    def __init__(self, *, tag_width: int, max_depth: int, n_conds: int = 0):
        self.tag_width = tag_width
        self.max_depth = max_depth
        self.n_conds = n_conds
        fields = {
            "push": 1,
            "pop": 1,
            "tag": tag_width,
            "parent": tag_width,
            "level": range(max_depth + 1),
            "doc_end": 1,
            "errors": ErrorFlags,
        }
        if n_conds:
            fields["conds"] = n_conds
        super().__init__(fields)


class StackEntry(data.StructLayout):
    """A global stack row: the tag id and the name hash of an open element."""

    def __init__(self, *, tag_width: int):
        super().__init__({"tag": tag_width, "hash": HASH_WIDTH})


#: The byte stream payload.
ByteLayout = data.StructLayout({"data": 8, "last": 1})


class NameTapLayout(data.StructLayout):
    """What an external tag decoder (the programmable engine's) needs to follow names in step
    with the built-in trie: ``data`` and ``pos`` (the byte and its position in the name),
    ``advance`` (a name byte: a decoder compares it at ``pos``), ``restart`` (a decoder
    returns to
    "everything matches"), ``load`` (the ``events`` register loads this cycle: a decoder
    registers its "name ends here" result then, so that it lines up with ``events.push``).
    The tap is registered: it shows a byte two cycles after the parser read it."""

    def __init__(self, *, max_name: int):
        super().__init__(
            {"data": 8, "pos": range(max_name + 2), "advance": 1, "restart": 1, "load": 1}
        )


def nibble_member(high, low, members):
    """The byte (its high and low nibbles one-hot) is in ``members``: an OR of (high nibble AND
    a set of low nibbles)."""
    terms = []
    for h in range(16):
        lows = [n for n in range(16) if h << 4 | n in members]
        if len(lows) == 16:
            terms.append(high[h])
        elif lows:
            terms.append(high[h] & Cat(*(low[n] for n in lows)).any())
    return Cat(*terms).any() if terms else Const(0, 1)


def hash_power(x, e: int):
    """``x`` after ``e`` hash steps with zero bytes (the step is linear over GF(2): each bit of
    the result is the XOR of the bits of ``x`` its matrix power names, one XOR, not ``e``)."""

    def power(v):
        for _ in range(e):
            v = hash_byte(v, 0)
        return v

    return Cat(
        *(
            reduce(xor, [x[b] for b in range(HASH_WIDTH) if power(1 << b) >> j & 1], Const(0, 1))
            for j in range(HASH_WIDTH)
        )
    )


class ByteTests(NamedTuple):
    """One byte's registered classes, as the parser reads them: ``ch(text)`` and ``eq(value)``
    (the byte is that character), and whitespace, name-start, name and upper-case bytes."""

    ch: Callable
    eq: Callable
    ws: object
    nstart: object
    nchar: object
    upper: object


#: The requests a parser branch may raise (see :func:`parser_table`).
REQUESTS = (
    "name_byte",
    "name_hold",
    "push_req",
    "pop_req",
    "pop_check",
    "bad",
    "kw_inc",
    "tag_start",
    "attr_byte",
    "attr_end",
    "val_start",
    "val_byte",
    "val_end",
    "text_byte",
    "text_amb",
    "text_end",
)


def parser_table(tests: ByteTests, *, level, root_seen, in_subset, kw):
    """The byte parser, the one definition of it: for each state, its branches in priority
    order, each (byte test, next state or None to stay, requests). A request is a name of
    :data:`REQUESTS`, or (name, condition) for one raised only if the condition holds too.
    ``level``, ``root_seen``, ``in_subset`` and ``kw`` are the parser's registers."""
    S = State
    ch, eq = tests.ch, tests.eq
    is_ws, is_nstart, is_nchar, is_upper = tests.ws, tests.nstart, tests.nchar, tests.upper
    at_root_level = level == 0
    kw_cdata = Cat(*((kw == i) & eq(b) for i, b in enumerate(CDATA_KEYWORD))).any()
    kw_doctype = Cat(*((kw == i) & eq(b) for i, b in enumerate(DOCTYPE_KEYWORD))).any()
    ALWAYS = Const(1, 1)

    def br(test, target=None, *requests):
        """A branch: byte test, next state (None: stay), requests (a name, or (name,
        condition) for one raised only if the condition holds too)."""
        return test, target, requests

    table = {
        S.TEXT: [
            br(ch("<"), S.LT, "tag_start"),
            br(~is_ws, None, ("bad", at_root_level), "text_byte"),
            br(ALWAYS, None, "text_byte"),
        ],
        # a text node ends at "<" unless a CDATA section follows (decided a byte later)
        S.LT: [
            br(
                is_nstart, S.START_NAME, "name_byte", ("bad", at_root_level & root_seen), "text_end"
            ),
            br(ch("/"), S.END_LT, "text_end"),
            br(ch("!"), S.BANG),
            br(ch("?"), S.PI, "text_end"),
            br(ALWAYS, S.TEXT, "bad", "text_end"),
        ],
        # a start tag pushes on the byte that ends it ("/" of "/>", or ">"); inside it the
        # name registers hold the element's name (``name_hold``)
        S.START_NAME: [
            br(is_nchar, None, "name_byte"),
            br(is_ws, S.IN_TAG, "name_hold"),
            br(ch("/"), S.EMPTY_SLASH, "push_req"),
            br(ch(">"), S.TEXT, "push_req"),
            br(ALWAYS, S.TEXT, "bad"),
        ],
        S.IN_TAG: [
            br(is_ws, None, "name_hold"),
            br(ch(">"), S.TEXT, "push_req"),
            br(ch("/"), S.EMPTY_SLASH, "push_req"),
            br(is_nstart, S.ATTR_NAME, "name_hold", "attr_byte"),
            br(ALWAYS, S.TEXT, "bad"),
        ],
        S.ATTR_NAME: [
            br(is_nchar, None, "name_hold", "attr_byte"),
            br(is_ws, S.ATTR_EQ, "name_hold", "attr_end"),
            br(ch("="), S.ATTR_VALUE, "name_hold", "attr_end"),
            br(ALWAYS, S.TEXT, "bad"),
        ],
        S.ATTR_EQ: [
            br(is_ws, None, "name_hold"),
            br(ch("="), S.ATTR_VALUE, "name_hold"),
            br(ALWAYS, S.TEXT, "bad"),
        ],
        S.ATTR_VALUE: [
            br(is_ws, None, "name_hold"),
            br(ch('"'), S.AVAL_DQ, "name_hold", "val_start"),
            br(ch("'"), S.AVAL_SQ, "name_hold", "val_start"),
            br(ALWAYS, S.TEXT, "bad"),
        ],
        S.AVAL_DQ: [
            br(ch('"'), S.AFTER_AVAL, "name_hold", "val_end"),
            br(ch("<"), None, "bad", "name_hold", "val_byte"),
            br(ALWAYS, None, "name_hold", "val_byte"),
        ],
        S.AVAL_SQ: [
            br(ch("'"), S.AFTER_AVAL, "name_hold", "val_end"),
            br(ch("<"), None, "bad", "name_hold", "val_byte"),
            br(ALWAYS, None, "name_hold", "val_byte"),
        ],
        S.AFTER_AVAL: [
            br(is_ws, S.IN_TAG, "name_hold"),
            br(ch("/"), S.EMPTY_SLASH, "push_req"),
            br(ch(">"), S.TEXT, "push_req"),
            br(ALWAYS, S.TEXT, "bad"),
        ],
        S.EMPTY_SLASH: [br(ch(">"), S.TEXT, "pop_req"), br(ALWAYS, S.TEXT, "bad")],
        S.END_LT: [br(is_nstart, S.END_NAME, "name_byte"), br(ALWAYS, S.TEXT, "bad")],
        S.END_NAME: [
            br(is_nchar, None, "name_byte"),
            br(is_ws, S.END_WS, "name_hold"),
            br(ch(">"), S.TEXT, "pop_req", "pop_check"),
            br(ALWAYS, S.TEXT, "bad"),
        ],
        S.END_WS: [
            br(is_ws, None, "name_hold"),
            br(ch(">"), S.TEXT, "pop_req", "pop_check"),
            br(ALWAYS, S.TEXT, "bad"),
        ],
        S.BANG: [
            br(ch("-"), S.BANG_DASH, "text_end"),
            br(ch("["), S.CDATA_KW, ("bad", at_root_level)),  # CDATA outside the root
            br(ch("D"), S.DOCTYPE_KW, ("bad", root_seen), "text_end"),  # DOCTYPE after
            br(ALWAYS, S.TEXT, "bad", "text_end"),
        ],  # the root
        S.BANG_DASH: [br(ch("-"), S.COMMENT), br(ALWAYS, S.TEXT, "bad")],
        S.COMMENT: [br(ch("-"), S.COMMENT_D1)],
        S.COMMENT_D1: [br(ch("-"), S.COMMENT_D2), br(ALWAYS, S.COMMENT)],
        S.COMMENT_D2: [
            br(ch(">") & in_subset, S.SUBSET),
            br(ch(">"), S.TEXT),
            br(ALWAYS, S.COMMENT, "bad"),
        ],  # "--" inside a comment
        S.PI: [br(ch("?"), S.PI_Q)],
        S.PI_Q: [br(ch(">") & in_subset, S.SUBSET), br(ch(">"), S.TEXT), br(~ch("?"), S.PI)],
        S.CDATA_KW: [
            br(~kw_cdata, S.TEXT, "bad"),
            br(kw == len(CDATA_KEYWORD) - 1, S.CDATA),
            br(ALWAYS, None, "kw_inc"),
        ],
        # CDATA content is text; a "]" that does not close the section ("text_amb") makes
        # the text node undecided (the comparators see bytes one at a time)
        S.CDATA: [br(ch("]"), S.CDATA_B1), br(ALWAYS, None, "text_byte")],
        S.CDATA_B1: [br(ch("]"), S.CDATA_B2), br(ALWAYS, S.CDATA, "text_amb")],
        S.CDATA_B2: [
            br(ch(">"), S.TEXT),
            br(~ch("]"), S.CDATA, "text_amb"),
            br(ALWAYS, None, "text_amb"),
        ],
        S.DOCTYPE_KW: [
            br(~kw_doctype, S.TEXT, "bad"),
            br(kw == len(DOCTYPE_KEYWORD) - 1, S.DOCTYPE),
            br(ALWAYS, None, "kw_inc"),
        ],
        S.DOCTYPE: [
            br(ch('"'), S.DT_DQ),
            br(ch("'"), S.DT_SQ),
            br(ch("["), S.SUBSET),
            br(ch(">"), S.TEXT),
        ],
        S.DT_DQ: [br(ch('"'), S.DOCTYPE)],
        S.DT_SQ: [br(ch("'"), S.DOCTYPE)],
        S.SUBSET: [br(ch("]"), S.DT_AFTER), br(ch("<"), S.SUB_LT)],
        S.SUB_LT: [br(ch("!"), S.SUB_BANG), br(ch("?"), S.PI), br(ALWAYS, S.TEXT, "bad")],
        S.SUB_BANG: [br(ch("-"), S.BANG_DASH), br(is_upper, S.DECL), br(ALWAYS, S.TEXT, "bad")],
        S.DECL: [br(ch('"'), S.DECL_DQ), br(ch("'"), S.DECL_SQ), br(ch(">"), S.SUBSET)],
        S.DECL_DQ: [br(ch('"'), S.DECL)],
        S.DECL_SQ: [br(ch("'"), S.DECL)],
        S.DT_AFTER: [br(is_ws), br(ch(">"), S.TEXT), br(ALWAYS, S.TEXT, "bad")],
    }
    assert set(table) == set(State)
    return table


def reference_step(prev: dict, eq: Callable, start) -> tuple[dict, object]:
    """One byte of the reference check (:func:`xpfilt.hwspec.contract.reference_steps`):
    ``prev`` {prefix: bit}, the bytes read since an ``&`` are that prefix; ``eq(b)``, the byte
    is ``b``; ``start``, the byte is an ``&`` that begins a reference. Returns ({prefix: its
    bit after the byte}, the byte makes a reference undecided: ``entity``). Each bit is its
    prefix's bit AND a byte compare, so the names are compared a byte at a time as they
    stream: no compare of a whole name lies on any path."""
    steps = reference_steps()
    into: dict = {prefix: [] for prefix in steps}
    into[b""].append(start)
    undecided = []
    for prefix, moves in steps.items():
        undecided.append(prev[prefix] & ~Cat(*(eq(b) for b in moves)).any())
        for b, after in moves.items():
            if after is not None:
                into[after].append(prev[prefix] & eq(b))
    return {prefix: Cat(*terms).any() for prefix, terms in into.items()}, Cat(*undecided).any()


def first_branch_states(table, request: str) -> list[tuple[object, list]]:
    """The states that raise ``request`` in ``table`` (:func:`parser_table`), grouped by their
    byte test: [(test, [states])], when each raises it in its first branch and unconditionally
    (so that ``request`` is exactly the OR over the groups of (in a state of the group AND the
    test)); ValueError otherwise."""
    groups = {}
    for s, branches in table.items():
        for k, (test, _, requests) in enumerate(branches):
            if request in requests and k == 0:
                groups.setdefault(id(test), (test, []))[1].append(s)
            elif any(r == request or isinstance(r, tuple) and r[0] == request for r in requests):
                raise ValueError(
                    f"{request} must be raised by first branches only, not by "
                    f"branch {k} of {s.name}"
                )
    return list(groups.values())


def taken_branches(branches):
    """A state's branches (:func:`parser_table`) as (taken: its test and none before it, next
    state, [(request, condition or None)])."""
    earlier = []
    for test, target, requests in branches:
        taken = test
        for e in earlier:
            taken = taken & ~e
        earlier.append(test)
        yield taken, target, [r if isinstance(r, tuple) else (r, None) for r in requests]


def requests_by_state(table, names) -> dict:
    """{name: {state: the byte raises it in that state}} for the requests ``names`` of
    ``table`` (:func:`parser_table`), each raised unconditionally (ValueError otherwise)."""
    found = {name: {} for name in names}
    for s, branches in table.items():
        for taken, _, requests in taken_branches(branches):
            for name, cond in requests:
                if name in found:
                    if cond is not None:
                        raise ValueError(f"{name} must be raised unconditionally, not in {s.name}")
                    found[name][s] = found[name][s] | taken if s in found[name] else taken
    return found


def parse_byte(
    m: Module, state, tests: ByteTests, *, level, root_seen, in_subset, kw, prefix: str = ""
):
    """The byte parser's step for one byte: (the one-hot next state, a dict of the requests the
    byte raises, each a 1-bit Signal named ``prefix + name``). ``state`` is the one-hot state
    before the byte, ``level``, ``root_seen``, ``in_subset`` and ``kw`` the parser's registers
    (or, in a W-byte front end, their values after the lane before)."""
    table = parser_table(tests, level=level, root_seen=root_seen, in_subset=in_subset, kw=kw)
    into = {s: [] for s in State}  # next-state bit s: OR of these
    raised = {name: [] for name in REQUESTS}
    for s, branches in table.items():
        here = state[s.value]
        leave = []  # the branches that leave s
        for taken, target, requests in taken_branches(branches):
            taken = here & taken
            if target is not None and target is not s:
                into[target].append(taken)
                leave.append(taken)
            for name, cond in requests:
                raised[name].append(taken if cond is None else taken & cond)
        into[s].append(here & ~Cat(*leave).any() if leave else here)

    nstate = Signal(len(State), name=f"{prefix}nstate")
    req = {name: Signal(name=f"{prefix}{name}") for name in raised}
    m.d.comb += nstate.eq(Cat(*(Cat(*into[s]).any() for s in State)))
    for name, sig in req.items():
        m.d.comb += sig.eq(Cat(*raised[name]).any() if raised[name] else 0)
    return nstate, req


class ByteClasses:
    """Stage D2: the byte registered (``valid``, ``c``, ``last``) with its classes, one
    flip-flop per test, each an AND of two nibble bits or an OR of (high nibble AND a set of
    low nibbles) of stage D1's registers. A class is made on first use (:meth:`registered`,
    also inside the parser's ``m.If`` blocks) and assigned by :meth:`register` once the whole
    front end has asked."""

    def __init__(self, m: Module, d1):
        self.m = m
        self.high, self.low = d1.high, d1.low
        valid = Signal()
        c = Signal(8)
        last = Signal()
        m.d.sync += [valid.eq(d1.valid), c.eq(d1.c), last.eq(d1.last)]
        self.valid, self.c, self.last = valid, c, last
        self.classes = {}  # {key: (register, value)}
        self.ws = self.registered("ws", self.member(WHITESPACE))
        self.nstart = self.registered("nstart", self.member(NAME_START))
        self.nchar = self.registered("nchar", self.member(NAME_CHAR))
        self.upper = self.registered("upper", self.member(range(ord("A"), ord("Z") + 1)))

    def registered(self, key, value):
        """The register of class ``key`` (``value``, made on first use)."""
        if key not in self.classes:
            self.classes[key] = (Signal(name=f"byte_{key}"), value)
        return self.classes[key][0]

    def member(self, members):
        """The byte is in ``members`` (unregistered: for :meth:`registered`)."""
        return nibble_member(self.high, self.low, members)

    def eq(self, b):
        """The byte is ``b``, registered."""
        return self.registered(f"eq_{b:02x}", self.high[b >> 4] & self.low[b & 15])

    def ch(self, text):
        return self.eq(ord(text))

    def tests(self) -> ByteTests:
        """The classes the parser reads."""
        return ByteTests(
            ch=self.ch,
            eq=self.eq,
            ws=self.ws,
            nstart=self.nstart,
            nchar=self.nchar,
            upper=self.upper,
        )

    def register(self) -> None:
        """Assign every class asked for to its register."""
        self.m.d.sync += [bit.eq(value) for bit, value in self.classes.values()]


class FrontEnd(wiring.Component):
    """Document bytes in, push/pop/doc_end events out, one byte per cycle.

    Parameters
    ----------
    tags : sequence of str
        The tag dictionary: distinct element names. ``tags[i]`` decodes to ``i + 1``.
    max_depth : int
        Depth of the global stack (the deepest level that is pushed).
    max_name : int
        Longest element name decoded; longer names decode to 0 and set ``name_too_long``.
    conditions : sequence of :class:`xpfilt.hwspec.contract.AttrCondition`
        Attribute conditions evaluated on every start tag; bit ``i`` of a push's ``conds`` says
        the element has the attribute of ``conditions[i]`` and its value satisfies it, as
        :func:`xpfilt.hwspec.contract.condition_value_holds` defines (0 when undecided: the document
        then gets ``value_undecided``). See "Attribute conditions" in the module docstring.
        Text conditions (``is_text``) are evaluated on every text node; bit ``i`` of a pop's
        ``conds`` says some text node of the closing element satisfies ``conditions[i]`` (see
        "Text conditions").

    Members
    -------
    bytes_in : ``In(stream.Signature(ByteLayout))``
        Document bytes; ``last`` marks the final byte of a document. ``ready`` is always 1.
    events : ``Out(EventLayout(tag_width=..., max_depth=...))``
        The registered event of the byte accepted :data:`LATENCY` cycles before (all zeros if
        none).
    tos : ``Out(range(max_depth + 1))``
        The global stack's top-of-stack pointer (current depth, capped at ``max_depth``); it
        changes in the cycle its push/pop event is shown, so ``events.level`` and ``tos`` agree.
    """

    def __init__(
        self,
        tags: Sequence[str],
        *,
        max_depth: int = 16,
        max_name: int = 32,
        conditions: Sequence[AttrCondition] = (),
        slots: int = 0,
        slot_name_len: int = 16,
    ):
        """``slots``: comparator slots loaded at run time instead of ``conditions`` (the
        programmable engine's; see :mod:`xpfilt.hdl.slots`), through the ``slot_load`` port;
        names and strings of at most ``slot_name_len`` bytes."""
        if slots and conditions:
            raise ValueError("conditions must be none with comparator slots")
        self.slots = slots
        self.slot_name_len = slot_name_len
        self.tags = tuple(tags)
        self.tag_bytes = check_parameters(self.tags, max_depth, max_name)
        self.max_depth = max_depth
        self.max_name = max_name
        self.conditions = tuple(conditions)
        for cond in self.conditions:
            if cond.kind == "number" and number_digits(cond.number) is None:
                raise ValueError(
                    f"number must have at most {NUMBER_DIGITS} digits, not {cond.literal!r}"
                )
        self.tag_width = tag_width_for(len(self.tags))
        self.n_conds = len(self.conditions) or slots
        self.event_layout = EventLayout(
            tag_width=self.tag_width, max_depth=max_depth, n_conds=self.n_conds
        )
        super().__init__(
            {
                "bytes_in": In(stream.Signature(ByteLayout)),
                "events": Out(self.event_layout),
                "tos": Out(range(max_depth + 1)),
                "name_tap": Out(NameTapLayout(max_name=max_name)),
                **({"slot_load": In(SlotLoadLayout(slot_name_len))} if slots else {}),
            }
        )

    def elaborate(self, platform):
        m = Module()
        m.d.comb += self.bytes_in.ready.eq(1)
        d1 = self._stage_d1(m)
        d2 = ByteClasses(m, d1)
        p = self._parser_registers(m)
        decoder = self._tag_decoder(m, d2)
        tests = d2.tests()
        nstate, req = parse_byte(
            m, p.state, tests, level=p.level, root_seen=p.root_seen, in_subset=p.in_subset, kw=p.kw
        )
        group_regs, name_go = self._name_go(m, d1, d2, p, tests, nstate)
        # --- attribute conditions: an attribute-name CAM and the value comparators (the
        # comparator slots: below, with the text nodes), stepping on the parser's requests a
        # cycle ahead in registers ---
        ahead = None
        if self.slots or AttributeConditions(self.conditions).conditions:
            ahead = self._requests_ahead(
                m,
                req,
                state=p.state,
                nstate=nstate,
                valid=d2.valid,
                last=d2.last,
                valid1=d1.valid,
                last1=d1.last,
                high=d1.raw_high,
                low=d1.raw_low,
                parser=dict(level=p.level, root_seen=p.root_seen, in_subset=p.in_subset, kw=p.kw),
            )
        if not self.slots:
            conds, undecided = self._attribute_conditions(
                m, req, ahead, d2.valid, d2.last, d2.eq, d2.registered, d2.member
            )
        depth = self._depth(m, req, p, name_byte=req["name_byte"])
        # --- text conditions: the text nodes' comparators and the bits per open element ---
        valid, last, level = d2.valid, d2.last, p.level
        if self.slots:
            conds, undecided, tconds, tundecided, pop_chains = self._slot_conditions(
                m,
                req,
                ahead,
                valid,
                last,
                d2.c,
                d2.eq,
                d2.registered,
                d2.member,
                self._text_nodes(m, req, valid, last, level, depth.ex_is_zero),
                level=level,
                do_push=depth.do_push,
                do_pop=depth.do_pop,
                enter_text=valid & ~last & nstate[State.TEXT.value],
            )
        else:
            pop_chains = None
            tconds, tundecided = self._text_conditions(
                m,
                req,
                valid,
                last,
                level,
                depth.ex_is_zero,
                depth.do_push,
                depth.do_pop,
                d2.eq,
                d2.registered,
                d2.member,
            )
        found = Signal(ErrorFlags)
        m.d.comb += [
            found.malformed.eq(req["bad"] | depth.underflow),
            found.depth_overflow.eq(depth.overflow),
            found.name_too_long.eq(depth.too_long),
            found.value_undecided.eq(undecided | tundecided | self._attribute_list(m, d2, p)),
            found.entity.eq(self._references(m, d2, p)),
        ]
        tap = self._name_tap(m, d2, p, req, name_go)
        self._stage_p_registers(m, d2, p, decoder, depth, req, nstate, group_regs, name_go)
        e = self._stage_e(m, d2, p, req, nstate, depth, found, tconds, decoder.tag_id, name_go)
        self._stage_f(m, e, conds, pop_chains)
        # the name tap, delayed to line up with ``events`` as stage P's bytes do
        tap_e = Signal.like(tap)
        m.d.sync += [tap_e.eq(tap), self.name_tap.eq(tap_e)]
        # stage D's byte tests, as many as the parser and the CAM asked for
        d2.register()
        return m

    def _stage_d1(self, m) -> SimpleNamespace:
        """Stage D1: the byte, and its high and low nibbles one-hot (``raw_high``, ``raw_low``:
        the nibbles of the byte on ``bytes_in``, before the register)."""
        valid1 = Signal()
        c1 = Signal(8)
        last1 = Signal()
        high = Signal(16)
        low = Signal(16)
        raw = self.bytes_in.payload.data
        raw_high, raw_low = Signal(16), Signal(16)
        m.d.comb += [
            raw_high.eq(Cat(*(raw[4:] == h for h in range(16)))),
            raw_low.eq(Cat(*(raw[:4] == n for n in range(16)))),
        ]
        m.d.sync += [
            valid1.eq(self.bytes_in.valid),
            c1.eq(raw),
            last1.eq(self.bytes_in.valid & self.bytes_in.payload.last),
            high.eq(raw_high),
            low.eq(raw_low),
        ]
        return SimpleNamespace(
            valid=valid1, c=c1, last=last1, high=high, low=low, raw_high=raw_high, raw_low=raw_low
        )

    def _attribute_list(self, m, d2, p):
        """With attribute conditions (or comparator slots): the byte begins an attribute-list
        declaration in the internal subset (``<!A``: ``<!ATTLIST``), whose defaults add
        attributes and whose types normalise values, so the comparators cannot decide the
        document's values (``value_undecided``)."""
        if not (self.slots or AttributeConditions(self.conditions).conditions):
            return Const(0, 1)
        return p.state[State.SUB_BANG.value] & d2.ch("A")

    @staticmethod
    def _references(m, d2, p):
        """Stage P's reference check (:func:`reference_step`): one register per prefix of a
        predefined entity's name (``ref``, 15 of them), set by an ``&`` in content or in an
        attribute value (:data:`xpfilt.hwspec.contract.REFERENCE_STATES`), cleared by a
        document's last byte. Returns: this byte makes a reference undecided (``entity``;
        registers and byte classes to the flag: a few LUTs)."""
        steps = reference_steps()
        refs = Signal(len(steps), name="ref")
        prev = {prefix: refs[k] for k, prefix in enumerate(steps)}
        start = Cat(*(p.state[s.value] for s in REFERENCE_STATES)).any() & d2.ch("&")
        nxt, undecided = reference_step(prev, d2.eq, start)
        with m.If(d2.valid):
            m.d.sync += refs.eq(Mux(d2.last, 0, Cat(*nxt.values())))
        return undecided

    def _parser_registers(self, m) -> SimpleNamespace:
        """Stage P's registers: the parser's one-hot ``state``, ``level`` (the depth after the
        events parsed so far), ``excess`` (levels open beyond max_depth) plus the last byte's
        change (``ex_up``, ``ex_down``, added a cycle late so that the counter's carry is off
        the byte's path), ``root_seen``, ``in_subset`` (inside the DOCTYPE internal subset),
        ``kw`` (the keyword byte) and ``pos`` (name bytes so far, saturating)."""
        S = State
        max_depth, max_name = self.max_depth, self.max_name
        state = Signal(len(State), init=1 << S.TEXT.value)  # one-hot: bit s.value
        level = Signal(range(max_depth + 1))  # depth after the events parsed so far
        # levels open beyond max_depth: ``excess`` plus the last byte's change (``ex_up``,
        # ``ex_down``), added a cycle late so that the counter's carry is off the byte's path
        excess = Signal(EXCESS_WIDTH)
        ex_up = Signal()
        ex_down = Signal()
        root_seen = Signal()  # the root element has been pushed
        in_subset = Signal()  # inside the DOCTYPE internal subset
        kw = Signal(range(max(len(CDATA_KEYWORD), len(DOCTYPE_KEYWORD))))
        pos = Signal(range(max_name + 2))  # name bytes so far (saturating)
        return SimpleNamespace(
            state=state,
            level=level,
            excess=excess,
            ex_up=ex_up,
            ex_down=ex_down,
            root_seen=root_seen,
            in_subset=in_subset,
            kw=kw,
            pos=pos,
        )

    def _tag_decoder(self, m, d2) -> SimpleNamespace:
        """Stage P's tag decoder: a trie over the dictionary's names, one flip-flop per prefix:
        ``trie[k]`` is 1 when the name read so far is ``prefixes[k]`` (``empty``: no name byte
        yet). A name byte passes each bit on to the prefixes one byte longer that end in it
        (one LUT per prefix: parent AND byte, no compare over every position); a name's tag is
        the bit of its whole name. The trie runs a cycle behind the parser, as the name hash
        does (stage E): it takes the step stage P took the cycle before (``t_adv``,
        ``t_clear``, registered) with that byte's registered tests (``t_eq``), so that the
        enable of its hundreds of bits comes from registers, not from the parser's decode, and
        it holds in stage E the name before the event's byte: its whole names' bits are the
        tag one-hot the encoder reads (``tag_id``; ``trie_upd``: the trie after a name byte)."""
        n_tags = len(self.tag_bytes)
        prefixes = list(dict.fromkeys(t[:k] for t in self.tag_bytes for k in range(1, len(t) + 1)))
        node = {p: k for k, p in enumerate(prefixes)}
        empty = Signal(init=1)
        trie = Signal(max(1, len(prefixes)))
        t_adv, t_clear = Signal(), Signal()
        t_eq = {}
        if n_tags:
            for b in sorted({p[-1] for p in prefixes}):
                t_eq[b] = Signal(name=f"t_eq_{b:02x}")
                m.d.sync += t_eq[b].eq(d2.eq(b))
            trie_upd = Cat(
                *((empty if len(p) == 1 else trie[node[p[:-1]]]) & t_eq[p[-1]] for p in prefixes)
            )
            tag_id = Cat(
                *(
                    Cat(
                        *(trie[node[t]] for i, t in enumerate(self.tag_bytes) if (i + 1) >> bit & 1)
                    ).any()
                    for bit in range(self.tag_width)
                )
            )
        else:
            trie_upd = Const(0, 1)
            tag_id = Const(0, self.tag_width)
        return SimpleNamespace(
            empty=empty, trie=trie, t_adv=t_adv, t_clear=t_clear, trie_upd=trie_upd, tag_id=tag_id
        )

    def _name_go(self, m, d1, d2, p, tests, nstate):
        """The name registers' step off the parser's state decode: ``name_byte`` is raised by
        first branches only (:func:`first_branch_states`), so it is an OR over groups of states
        of (in the group AND the group's byte class). Each group's membership is a register
        beside ``state`` (``in_<class>``), and each class is registered once more with the
        byte's ``valid & ~last`` folded in (``byte_<class>_go``): ``name_go`` (= valid & ~last
        & name_byte, exactly) is then one LUT from registers, and it drives every bit of the
        trie. Returns ([(group register, its next value)], ``name_go``)."""
        classes, registered, state = d2.classes, d2.registered, p.state
        group_regs = []
        name_go = Const(0, 1)
        for test, states in first_branch_states(
            parser_table(
                tests, level=p.level, root_seen=p.root_seen, in_subset=p.in_subset, kw=p.kw
            ),
            "name_byte",
        ):
            key = next((k for k, (sig, _) in classes.items() if sig is test), None)
            if key is None:
                raise ValueError(f"name_byte's tests must be registered byte classes, not {test!r}")
            in_group = Signal(name=f"in_{key}", init=any(state.init >> s.value & 1 for s in states))
            group_regs.append((in_group, Cat(*(nstate[s.value] for s in states)).any()))
            go = registered(f"{key}_go", classes[key][1] & d1.valid & ~d1.last)
            name_go = name_go | (in_group & go)
        return group_regs, name_go

    def _depth(self, m, req, p, *, name_byte) -> SimpleNamespace:
        """Stage P's depth bookkeeping: what the byte does to the stack (``do_push``,
        ``do_pop``, ``ev_level``; ``nlevel``, ``nroot_seen``: the registers' next values;
        ``ex_inc``, ``ex_dec``: the change of ``excess``; ``ex_at``: its flags, ``ex_at_next``
        their next values) and the errors it raises."""
        max_depth, max_name = self.max_depth, self.max_name
        level, excess, ex_up, ex_down = p.level, p.excess, p.ex_up, p.ex_down
        root_seen, pos = p.root_seen, p.pos
        push_req, pop_req = req["push_req"], req["pop_req"]
        nlevel = Signal.like(level)
        ex_inc = Signal()
        ex_dec = Signal()
        ex_still = ~ex_up & ~ex_down
        ex_max = (1 << EXCESS_WIDTH) - 1
        # ``ex_at[v]``: excess == v, registers set with ``excess`` from its compares with v and
        # its neighbours and the pending change (not through the adder), so that no 16-bit
        # compare is on the parser's paths (measured: excess -> the malformed flag, 9.23 ns,
        # the routed critical path of 1,024 queries with 2 predicates each, router1, clk on
        # G2, seed 2, RTL 4d1425ddbaf9; through the adder, ex_down -> ex_at, 6.75 ns, was
        # that of the engine without predicates, RTL d0cd34706293)
        ex_at = {
            v: Signal(name=f"ex_at_{k}", init=v == 0)
            for k, v in enumerate((0, 1, ex_max - 1, ex_max))
        }
        ex_eq = {v: excess == v for v in (0, 1, 2, ex_max - 2, ex_max - 1, ex_max)}

        def ex_at_next(v):  # excess + ex_up - ex_down == v (it never wraps)
            return Cat(
                ex_eq[v] & ex_still,
                ex_eq[v - 1] & ex_up if v > 0 else Const(0, 1),
                ex_eq[v + 1] & ex_down if v < ex_max else Const(0, 1),
            ).any()

        ex_is_zero = (ex_at[0] & ex_still) | (ex_at[1] & ex_down)
        ex_is_max = (ex_at[ex_max] & ex_still) | (ex_at[ex_max - 1] & ex_up)
        nroot_seen = Signal()
        overflow = Signal()
        underflow = Signal()
        too_long = Signal()
        do_push = Signal()
        do_pop = Signal()
        ev_level = Signal.like(level)
        m.d.comb += [
            nlevel.eq(level),
            nroot_seen.eq(root_seen),
            too_long.eq(name_byte & (pos >= max_name)),
        ]
        with m.If(push_req):
            with m.If(level == max_depth):
                m.d.comb += overflow.eq(1)
                with m.If(~ex_is_max):
                    m.d.comb += ex_inc.eq(1)
            with m.Else():
                m.d.comb += [
                    do_push.eq(1),
                    ev_level.eq(level + 1),
                    nlevel.eq(level + 1),
                    nroot_seen.eq(1),
                ]
        with m.If(pop_req):
            with m.If(~ex_is_zero):
                m.d.comb += ex_dec.eq(1)
            with m.Elif(level == 0):
                m.d.comb += underflow.eq(1)
            with m.Else():
                m.d.comb += [do_pop.eq(1), ev_level.eq(level), nlevel.eq(level - 1)]
        return SimpleNamespace(
            nlevel=nlevel,
            ex_inc=ex_inc,
            ex_dec=ex_dec,
            ex_at=ex_at,
            ex_at_next=ex_at_next,
            ex_is_zero=ex_is_zero,
            nroot_seen=nroot_seen,
            overflow=overflow,
            underflow=underflow,
            too_long=too_long,
            do_push=do_push,
            do_pop=do_pop,
            ev_level=ev_level,
        )

    def _name_tap(self, m, d2, p, req, name_go):
        """The name tap (:class:`NameTapLayout`) of stage P's byte, before its registers."""
        valid, last = d2.valid, d2.last
        tap = Signal.like(self.name_tap)
        m.d.comb += [
            tap.data.eq(d2.c),
            tap.pos.eq(p.pos),
            tap.load.eq(valid),
            tap.advance.eq(name_go),
            tap.restart.eq(valid & (last | (~req["name_byte"] & ~req["name_hold"]))),
        ]
        return tap

    def _stage_p_registers(self, m, d2, p, decoder, depth, req, nstate, group_regs, name_go):
        """Stage P's registers after the byte: the parser's, the name position and the trie.

        The name registers (``pos``; the trie's ``empty`` and ``trie`` a cycle later) advance
        on a name byte and restart on the valid byte *after* one that neither extends nor
        holds the name (``restart``, registered; a document's last byte restarts them at
        once), so their enables do not wait for the parser's state decode of ``name_hold``.
        Exact: a name's first byte follows ``<`` (or ``</``), read in state TEXT, which the
        parser enters only on a byte that restarts the name; and a push or an end tag's
        check reads them while the name is held."""
        S = State
        max_name = self.max_name
        valid, last = d2.valid, d2.last
        state, level, excess, ex_up, ex_down = p.state, p.level, p.excess, p.ex_up, p.ex_down
        root_seen, in_subset, kw, pos = p.root_seen, p.in_subset, p.kw, p.pos
        ex_at, ex_at_next = depth.ex_at, depth.ex_at_next
        restart = Signal()
        with m.If(valid):
            m.d.sync += restart.eq(~req["name_byte"] & ~req["name_hold"])

        with m.If(valid):
            with m.If(last):
                m.d.sync += [
                    state.eq(state.init),
                    level.eq(0),
                    excess.eq(0),
                    ex_up.eq(0),
                    ex_down.eq(0),
                    root_seen.eq(0),
                    *(at.eq(v == 0) for v, at in ex_at.items()),
                    in_subset.eq(0),
                    kw.eq(0),
                    *(g.eq(g.init) for g, _ in group_regs),
                ]
            with m.Else():
                m.d.sync += [
                    state.eq(nstate),
                    level.eq(depth.nlevel),
                    excess.eq(excess + ex_up - ex_down),
                    ex_up.eq(depth.ex_inc),
                    ex_down.eq(depth.ex_dec),
                    *(at.eq(ex_at_next(v)) for v, at in ex_at.items()),
                    root_seen.eq(depth.nroot_seen),
                    in_subset.eq(
                        nstate[S.SUBSET.value]
                        | (in_subset & ~nstate[S.TEXT.value] & ~nstate[S.DT_AFTER.value])
                    ),
                    kw.eq(Mux(req["kw_inc"], kw + 1, 0)),
                    *(g.eq(value) for g, value in group_regs),
                ]
        with m.If(name_go):
            m.d.sync += pos.eq(Mux(pos == max_name + 1, pos, pos + 1))
        with m.Elif(valid & (last | restart)):
            m.d.sync += pos.eq(0)
        t_adv, t_clear = decoder.t_adv, decoder.t_clear
        m.d.sync += [t_adv.eq(name_go), t_clear.eq(valid & (last | restart))]
        with m.If(t_adv):
            m.d.sync += [decoder.empty.eq(0), decoder.trie.eq(decoder.trie_upd)]
        with m.Elif(t_clear):
            m.d.sync += [decoder.empty.eq(1), decoder.trie.eq(0)]

    def _stage_e(
        self, m, d2, p, req, nstate, depth, found, tconds, tag_id, name_go
    ) -> SimpleNamespace:
        """Stage E: the event so far, and the global stack row it reads. (tag id, name hash)
        per level; row 0 is the all-zero root sentinel. A push to level L reads its parent at
        L - 1 and writes row L; a checked pop at L reads row L: both read the row of the level
        before the event (``e_addr``)."""
        S = State
        max_depth = self.max_depth
        valid, last, c, level = d2.valid, d2.last, d2.c, p.level
        e_valid, e_push, e_pop, e_check, e_last = (
            Signal(name=f"e_{n}") for n in ("valid", "push", "pop", "check", "last")
        )
        e_level = Signal(range(max_depth + 1))
        e_addr = Signal(range(max_depth + 1))
        e_tag = Signal(self.tag_width)
        e_found = Signal(ErrorFlags)  # the errors this byte raised
        e_ntext = Signal()  # the parser's next state is TEXT; its next level and root
        e_nlevel = Signal.like(level)  # flag: before the reset at the last byte (for "left
        # unfinished")
        e_nroot = Signal()
        e_tconds = Signal(max(1, self.n_conds))  # a pop's text bits (attribute
        m.d.sync += e_tconds.eq(tconds)  # bits: see stage F)
        m.d.sync += [
            e_valid.eq(valid),
            e_push.eq(valid & depth.do_push),
            e_pop.eq(valid & depth.do_pop),
            e_check.eq(req["pop_check"]),
            e_last.eq(valid & last),
            e_level.eq(Mux(valid, depth.ev_level, 0)),
            e_addr.eq(level),
            e_found.eq(Mux(valid, found.as_value(), 0)),
            e_ntext.eq(nstate[S.TEXT.value]),
            e_nlevel.eq(depth.nlevel),
            e_nroot.eq(depth.nroot_seen),
        ]
        m.d.comb += e_tag.eq(tag_id)
        # the name hash (CRC-8) runs a cycle behind the parser: it folds in the byte stage P
        # read in the cycle before, with that byte's registered step (advance / keep / restart)
        # and its registered share of the CRC (the step is linear in hash ^ byte), so that no
        # path runs from the parser's state decode into the hash. It is the hash stage P would
        # hold, a cycle later: stage F reads it where it read stage E's copy.
        hsh = Signal(HASH_WIDTH, init=HASH_INIT)
        h_adv, h_keep = Signal(), Signal()
        h_byte = Signal(HASH_WIDTH)
        m.d.sync += [
            h_adv.eq(name_go),
            h_keep.eq(~valid | (~last & req["name_hold"])),
            h_byte.eq(hash_power(c, 1)),
        ]
        with m.If(h_adv):
            m.d.sync += hsh.eq(hash_power(hsh, 1) ^ h_byte)
        with m.Elif(~h_keep):
            m.d.sync += hsh.eq(HASH_INIT)
        m.submodules.stack = stack = Memory(
            shape=StackEntry(tag_width=self.tag_width), depth=max_depth + 1, init=[]
        )
        row = stack.read_port(domain="comb")
        m.d.comb += row.addr.eq(e_addr)
        unfinished = ~e_ntext | (e_nlevel != 0) | ~e_nroot
        sticky = Signal(ErrorFlags)  # the errors of this document's earlier bytes
        with m.If(e_valid):
            m.d.sync += sticky.eq(Mux(e_last, 0, sticky.as_value() | e_found.as_value()))
        return SimpleNamespace(
            valid=e_valid,
            push=e_push,
            pop=e_pop,
            check=e_check,
            last=e_last,
            level=e_level,
            tag=e_tag,
            found=e_found,
            tconds=e_tconds,
            hash=hsh,
            stack=stack,
            row=row,
            unfinished=unfinished,
            sticky=sticky,
        )

    def _stage_f(self, m, e, conds, pop_chains) -> None:
        """Stage F: the end-tag check, the event (``events``, ``tos``); a push writes its row of
        the global stack."""
        max_depth = self.max_depth
        e_valid, e_push, e_pop, e_check, e_last = e.valid, e.push, e.pop, e.check, e.last
        e_tconds = e.tconds
        f_valid, f_push, f_pop, f_check, f_last = (
            Signal(name=f"f_{n}") for n in ("valid", "push", "pop", "check", "last")
        )
        f_level = Signal(range(max_depth + 1))
        f_tag = Signal(self.tag_width)
        f_hash = Signal(HASH_WIDTH)
        f_row = Signal(StackEntry(tag_width=self.tag_width))
        f_errors = Signal(ErrorFlags)
        f_tconds = Signal.like(e_tconds)
        m.d.sync += f_tconds.eq(e_tconds)
        m.d.sync += [
            f_valid.eq(e_valid),
            f_push.eq(e_push),
            f_pop.eq(e_pop),
            f_check.eq(e_pop & e_check),
            f_last.eq(e_last),
            f_level.eq(e.level),
            f_tag.eq(e.tag),
            f_hash.eq(e.hash),
            f_row.eq(e.row.data),
            f_errors.eq(Mux(e_last, e.sticky.as_value() | e.found.as_value() | e.unfinished, 0)),
        ]
        # a push writes its row in stage F, from registers only. The next event that reads it
        # (a push below it, or the end tag that closes it) is at least three bytes later, so it
        # is in stage E two cycles after the write at the earliest: no bypass is needed
        push_port = e.stack.write_port()
        m.d.comb += [
            push_port.addr.eq(f_level),
            push_port.data.tag.eq(f_tag),
            push_port.data.hash.eq(f_hash),
            push_port.en.eq(f_push),
        ]
        mismatch = f_check & ((f_row.tag != f_tag) | (f_row.hash != f_hash))
        mismatched = Signal()  # an end tag of this document did not match
        tos = Signal.like(self.tos)
        m.d.comb += self.tos.eq(tos)
        ev = Signal(self.event_layout)
        m.d.comb += [
            ev.push.eq(f_push),
            ev.pop.eq(f_pop),
            ev.tag.eq(Mux(f_push, f_tag, 0)),
            ev.parent.eq(Mux(f_push, f_row.tag, 0)),
            ev.level.eq(f_level),
            ev.doc_end.eq(f_last),
            ev.errors.eq(f_errors),
            ev.errors.malformed.eq(f_errors.malformed | (f_last & (mismatched | mismatch))),
        ]
        events = Signal(self.event_layout, name="events_reg")
        m.d.sync += events.eq(ev)
        m.d.comb += self.events.eq(events)
        if self.n_conds:
            # a push's attribute bits straight from stage P's ``conds`` (unchanged since the
            # push's byte: see _attribute_conditions), a pop's text bits through E and F (the
            # slots' chains over them, see xpfilt.hwspec.slots.PHASES). Their register is not reset:
            # ``f_none`` (neither a push nor a pop, a register with F's) alone clears it, no
            # LUT with the domain's reset on its 1,029 resets (f_push -> that LUT -> them was
            # on the routed critical paths of 1,024 queries with 2 predicates each, 6.87 ns,
            # router1, clk on G2, RTL af9a0464f50f). After a reset the bits are 0 from the
            # second cycle on (f_none's reset value is 1).
            popped = pop_chains(f_tconds) if self.slots else f_tconds
            f_none = Signal(init=1)
            m.d.sync += f_none.eq(~e_push & ~e_pop)
            event_conds = Signal(self.n_conds, reset_less=True, name="events_conds")
            with m.If(f_none):
                m.d.sync += event_conds.eq(0)
            with m.Else():
                m.d.sync += event_conds.eq(Mux(f_push, conds, 0) | Mux(f_pop, popped, 0))
            m.d.comb += self.events.conds.eq(event_conds)
        with m.If(f_valid):
            m.d.sync += mismatched.eq(~f_last & (mismatched | mismatch))
            with m.If(f_last):
                m.d.sync += tos.eq(0)
            with m.Elif(f_push):
                m.d.sync += tos.eq(f_level)
            with m.Elif(f_pop):
                m.d.sync += tos.eq(f_level - 1)

    def _attribute_conditions(self, m, req, ahead, valid, last, eq, registered, member):
        """Stage P's attribute-condition logic (:class:`AttributeConditions` in registers,
        stepping on ``ahead``, :meth:`_requests_ahead`): (the
        condition bits of the start tag being read, a register, full width with zeros for text
        conditions; this byte makes a compared value undecided)."""
        attrs = AttributeConditions(self.conditions)
        if not attrs.conditions:
            return Const(0, max(1, len(self.conditions))), Const(0, 1)
        regs = state_registers(attrs.state, "a_")

        def stage(value):
            staged = Signal(len(value))
            m.d.sync += staged.eq(value)
            return staged

        step = attrs.step(
            regs,
            req,
            valid=valid,
            last=last,
            eq=eq,
            registered=registered,
            member=member,
            stage=stage,
            ahead=ahead,
        )
        m.d.sync += [regs[k].eq(v) for k, v in step.next.items()]
        # The decision at a closing quote is taken in two registered steps (``step``'s
        # ``decided`` with ``stage``) and ORed into ``conds`` two cycles after the quote, so no
        # path runs from the parser's state or the comparators' registers through the
        # comparisons into every condition bit (measured: a_lex -> conds, 8.7 ns, the routed
        # critical path of 1,024 queries with 2 predicates each, RTL d1dc3adf5635). A push is
        # at least a byte after the quote and stage F reads its bits two cycles after the
        # push: in time. ``conds`` clears on the valid byte *after* a
        # ``<`` (``clear_next``), so a push's bits stay put for the two cycles stage F needs to
        # read them (:meth:`elaborate` sends them with the event straight from here, not
        # through stages E and F), also a push on a document's last byte with the next
        # document right behind it; every start tag of the next document follows a ``<``.
        conds = self._condition_register(m, req, valid, last, step.decided, delay=2)
        return conds, step.undecided

    @staticmethod
    def _condition_register(m, req, valid, last, decided, delay=1):
        """The ``conds`` register of a start tag: ``decided`` (the bits of the attribute value
        that just ended, meaningful ``delay`` cycles after its closing quote and until the next
        value starts) is ORed in ``delay`` cycles after the quote; cleared on the valid byte
        after a ``<`` (with ``delay`` > 1 a cycle after it; see :meth:`_attribute_conditions`).
        Not reset: a tag's ``<`` clears it before its conditions are read, so that the clear
        alone drives its flip-flops' reset (with the domain's reset ORed in, a LUT on it:
        ``conds_clear`` -> that LUT -> 1,029 resets was the routed critical path of 1,024
        queries with 2 predicates each, 7.20 ns, router1, clk on G2, RTL af9a0464f50f)."""
        conds = Signal(len(decided), reset_less=True)
        clear_next = Signal()
        decide = valid & ~last & req["val_end"]
        for k in range(delay):
            later = Signal(name=f"decide_{k + 1}")
            m.d.sync += later.eq(decide)
            decide = later
        with m.If(valid):
            m.d.sync += clear_next.eq(req["tag_start"])
        clear = valid & clear_next
        if delay > 1:
            # with the decision two cycles late, the clear may come a cycle late too, from a
            # register of its own (the first decision after it is ~6 bytes away): `valid` ->
            # every condition bit's reset (1,029 across the die) was the worst non-tap path of
            # 1,024 queries with 2 predicates each on the placement (placed_paths, 14.5 ns);
            # routed, 128.5 -> 144.4 MHz (router1, clk on G2). The slots' register (delay 1)
            # keeps the clear in the byte's cycle.
            clear = Signal(name="conds_clear")
            m.d.sync += clear.eq(valid & clear_next)
        with m.If(clear):
            m.d.sync += conds.eq(0)
        with m.Elif(decide):
            m.d.sync += conds.eq(conds | decided)
        return conds

    @staticmethod
    def _requests_ahead(
        m, req, *, state, nstate, valid, last, valid1, last1, high, low, parser
    ) -> SimpleNamespace:
        """The parser's requests the comparator slots (and the custom engine's attribute
        comparators and name CAM) step on, a cycle ahead into registers (so that their
        restart, feed and enables, each fanned out to every slot or comparator, come from
        flip-flops): the parser's step once more, on the state it takes for the next byte and
        on that byte. Which requests the next byte raises in each state is registered with
        stage D1, from the byte D1 takes (``high`` / ``low``: its nibbles one-hot, the inputs
        of D1's registers), so that the step here is one AND-OR of the state it takes with
        those registers (as a second parse of D1's nibbles after the first, the parser's
        ``kw`` -> ``slot_fed`` was on the routed critical paths of 1,024 queries with 2
        predicates each, 6.98-7.10 ns, seeds default and 1, router1, clk on G2, RTL
        af9a0464f50f). ``start``: the comparators restart (a value starts, a text node or the
        document ends, or an attribute value was decided in the cycle before); ``fed``: the
        byte is an attribute value's or character data; ``attr_byte``: an attribute name's
        byte; ``attr_end``: the name ends; ``val_start``: a value's opening quote. The same
        values every cycle as from stage P's requests, except that ``fed`` takes character
        data outside the stacked elements too (before the root, beyond ``max_depth``): such a
        text node is never decided (:func:`text_node`'s ``topen`` stays 0) and ends with a
        restart before any value is read, so no decision differs. These requests read only
        the state and the byte (:func:`requests_by_state` checks that they are raised
        unconditionally, and no state that raises them tests the parser's registers in an
        earlier branch: ``parser`` serves only the table's other branches). Measured: stage
        P's requests -> ``start``/``fed`` -> every slot's ``sstill`` was the routed critical
        path of 1 x 128 with 8 slots, 10.46 ns (RTL 025511447e19); the parser's state ->
        ``a_igt`` that of 1,024 queries with 1 attribute predicate each (7.35 ns, router1, RTL
        dfcd87ee5742)."""

        def eq(b):
            return high[b >> 4] & low[b & 15]

        tests = ByteTests(
            ch=lambda text: eq(ord(text)),
            eq=eq,
            ws=nibble_member(high, low, WHITESPACE),
            nstart=nibble_member(high, low, NAME_START),
            nchar=nibble_member(high, low, NAME_CHAR),
            upper=nibble_member(high, low, range(ord("A"), ord("Z") + 1)),
        )
        names = ("val_start", "text_end", "val_byte", "text_byte", "attr_byte", "attr_end")
        following = Mux(valid, Mux(last, state.init, nstate), state)
        nxt = {}
        for name, in_state in requests_by_state(parser_table(tests, **parser), names).items():
            terms = []
            for s, raised in in_state.items():
                in_s = Signal(name=f"slot_{name}_in_{s.name.lower()}")
                m.d.sync += in_s.eq(raised)  # with stage D1: the next byte's
                terms.append(following[s.value] & in_s)
            nxt[name] = Cat(*terms).any() if terms else Const(0, 1)
        go = valid1 & ~last1
        regs = SimpleNamespace(
            **{
                name: Signal(name=f"slot_{name}")
                for name in ("start", "fed", "attr_byte", "attr_end", "val_start")
            }
        )
        m.d.sync += [
            regs.start.eq(
                (valid1 & (last1 | nxt["val_start"] | nxt["text_end"]))
                | (valid & ~last & req["val_end"])
            ),  # decided in the next cycle
            regs.fed.eq(go & (nxt["val_byte"] | nxt["text_byte"])),
            regs.attr_byte.eq(go & nxt["attr_byte"]),
            regs.attr_end.eq(go & nxt["attr_end"]),
            regs.val_start.eq(valid1 & nxt["val_start"]),
        ]
        return regs

    def _slot_conditions(
        self,
        m,
        req,
        ahead,
        valid,
        last,
        byte,
        eq,
        registered,
        member,
        text,
        *,
        level,
        do_push,
        do_pop,
        enter_text,
    ):
        """Stage P's comparator slots (:func:`xpfilt.hdl.slots.comparator_slots`) over the
        attribute values and the text nodes (``text``: :meth:`_text_nodes`): (the chain bits
        of the start tag being read, from a register; this byte makes a compared value
        undecided; the slots' text bits of the element a pop closes; this byte makes a text
        node undecided; a function from those to their chains' bits at the pop)."""
        decided = Signal()  # the cycle after an attribute value's closing quote
        m.d.sync += decided.eq(valid & ~last & req["val_end"])
        lexer = self._value_lexer(
            m, start=ahead.start, byte=ahead.fed, eq=eq, registered=registered, member=member
        )
        slots = comparator_slots(
            m,
            self.slot_load,
            slots=self.slots,
            max_tag_len=self.slot_name_len,
            req=req,
            ahead=ahead,
            valid=valid,
            last=last,
            byte=byte,
            lexer=lexer,
            registered=registered,
            member=member,
            decided=decided,
            text=text,
            enter_text=enter_text,
        )
        conds = slots.chains(self._condition_register(m, req, valid, last, slots.decided), "push")
        row = self._text_stack(m, slots.text_bits, text.decide, level, do_push, valid, last)
        return (
            conds,
            slots.undecided,
            Mux(do_pop, row, 0),
            slots.text_undecided,
            lambda bits: slots.chains(bits, "pop"),
        )

    @staticmethod
    def _text_nodes(m, req, valid, last, level, ex_is_zero) -> SimpleNamespace:
        """:func:`text_node` in registers (``inside``: text of a stacked element)."""
        regs = state_registers(TEXT_NODE_STATE, "")
        node = text_node(regs, req, valid=valid, last=last, inside=(level != 0) & ex_is_zero)
        m.d.sync += [regs[k].eq(v) for k, v in node.next.items()]
        return node

    def _text_stack(self, m, decided, decide, level, do_push, valid, last):
        """The text bits per open element, by level (``text_stack``): zeroed by the
        element's push, ORed with ``decided`` at the end of each of its text nodes
        (``decide``), read (at ``level``, asynchronously) by its pop (never in the same cycle
        as a push). Returns the row read."""
        tstack = Memory(shape=len(decided), depth=self.max_depth + 1, init=[])
        m.submodules.text_stack = tstack
        rd = tstack.read_port(domain="comb")
        wr = tstack.write_port()
        m.d.comb += [
            rd.addr.eq(level),
            wr.addr.eq(Mux(do_push, level + 1, level)),
            wr.data.eq(Mux(do_push, 0, rd.data | decided)),
            wr.en.eq(valid & ~last & (do_push | decide)),
        ]
        return rd.data

    def _text_conditions(
        self, m, req, valid, last, level, ex_is_zero, do_push, do_pop, eq, registered, member
    ):
        """Stage P's text-condition logic (:class:`TextConditions` in registers and the text
        stack): (the text condition bits of the element a pop closes, full width with zeros
        for attribute conditions; this byte makes a text node undecided)."""
        texts = TextConditions(self.conditions)
        if not texts.conditions:
            return Const(0, texts.width), Const(0, 1)
        regs = state_registers(texts.state, "t_")
        step = texts.step(
            regs,
            req,
            valid=valid,
            last=last,
            inside=(level != 0) & ex_is_zero,
            eq=eq,
            registered=registered,
            member=member,
        )
        m.d.sync += [regs[k].eq(v) for k, v in step.next.items()]
        row = self._text_stack(m, step.bits, step.decide, level, do_push, valid, last)
        return Mux(do_pop, texts.full(row), 0), step.undecided

    @staticmethod
    def _value_lexer(m, *, start, byte, eq, registered, member) -> SimpleNamespace:
        """:func:`value_lexer` in registers: ``start`` resets it, ``byte`` feeds the current
        byte."""
        regs = state_registers(LEXER_STATE, "lx_")
        lx = value_lexer(regs, eq=eq, registered=registered, member=member)
        m.d.sync += [
            regs[k].eq(v)
            for k, v in advance(LEXER_STATE, regs, lx.next, start=start, byte=byte).items()
        ]
        return lx
