"""Cycle-accurate model of :class:`xpfilt.hdl.frontend.FrontEnd` (the XML byte parser, tag decoder and
global stack).

``FrontEndModel.step(valid, data, last)`` is one clock cycle: it takes the ``bytes_in`` inputs of
cycle N and returns the value of the RTL's ``events`` port in cycle N+1, which is the event of the
byte accepted in cycle N+1-:data:`xpfilt.hdl.frontend.LATENCY` (:data:`NO_EVENT` when there is none): the
parser computes each byte's event at once and a delay line stands for the RTL's stages. Byte classes, the name hash, the states and the
error flags come from :mod:`xpfilt.hdl.frontend`, so there is one definition of each.

The tag decoder is modelled by a trie walk (the CAM's "still matching" bits are exactly "the name
so far is a prefix of that tag"), the global stack by two lists. The parser runs in a generator
so that its state lives in fast local variables: ``step`` costs well under a microsecond.
"""

from __future__ import annotations

from collections import deque
from typing import NamedTuple, Optional, Sequence

from xpfilt.hwspec.contract import (
    CDATA_KEYWORD,
    DOCTYPE_KEYWORD,
    EXCESS_WIDTH,
    HASH_INIT,
    LATENCY,
    NAME_CHAR,
    NAME_START,
    WHITESPACE,
    AttrCondition,
    Errors,
    State,
    check_parameters,
    condition_value_holds,
    hash_byte,
    reference_steps,
    tag_width_for,
)

__all__ = ["FrontEndEvent", "NO_EVENT", "DocEvent", "FrontEndModel", "decode_event"]


class FrontEndEvent(NamedTuple):
    """The value of the ``events`` port in one cycle (field names as in ``EventLayout``)."""

    push: int = 0
    pop: int = 0
    tag: int = 0
    parent: int = 0
    level: int = 0
    doc_end: int = 0
    errors: int = 0  # an :class:`xpfilt.hdl.frontend.Errors` bit set, nonzero only on doc_end
    name: bytes = b""  # on push, with ``report_names``: the element's name as written
    conds: int = 0  # push: attribute condition bits; pop: text condition bits (FrontEndModel)


#: The ``events`` port in a cycle without an event.
NO_EVENT = FrontEndEvent()


class DocEvent(NamedTuple):
    """One event of :meth:`FrontEndModel.events_of`, in a readable form."""

    kind: str  # "push", "pop" or "doc_end"
    level: int = 0  # push: the new depth; pop: the depth before the pop
    tag: int = 0  # push: the tag id (0 = not in the dictionary)
    name: Optional[str] = None  # push: the dictionary name of ``tag`` (None for 0)
    parent: int = 0  # push: the parent's tag id
    errors: Errors = Errors(0)  # doc_end: the document's error flags
    offset: int = 0  # index of the byte that caused it (shown one cycle later)


def decode_event(value: int, layout) -> FrontEndEvent:
    """Unpack the raw bits of an ``events`` port (an ``EventLayout``) into a FrontEndEvent."""
    fields = {}
    for name, field in layout:
        fields[name] = (value >> field.offset) & ((1 << field.width) - 1)
    return FrontEndEvent(**fields)


# Byte classes as 256-entry tables.
_WS = bytes(b in WHITESPACE for b in range(256))
_NSTART = bytes(b in NAME_START for b in range(256))
_NCHAR = bytes(b in NAME_CHAR for b in range(256))
_HASH = tuple(hash_byte(0, x) for x in range(256))  # hash_byte(h, c) == _HASH[h ^ c]
_END = 256  # trie key holding a node's tag id
_MALFORMED = int(Errors.MALFORMED)
_DEPTH_OVERFLOW = int(Errors.DEPTH_OVERFLOW)
_NAME_TOO_LONG = int(Errors.NAME_TOO_LONG)
_VALUE_UNDECIDED = int(Errors.VALUE_UNDECIDED)
_ENTITY = int(Errors.ENTITY)
_EXCESS_MAX = (1 << EXCESS_WIDTH) - 1

# States as plain ints.
(
    TEXT,
    LT,
    START_NAME,
    IN_TAG,
    ATTR_NAME,
    ATTR_EQ,
    ATTR_VALUE,
    AVAL_DQ,
    AVAL_SQ,
    AFTER_AVAL,
    EMPTY_SLASH,
    END_LT,
    END_NAME,
    END_WS,
    BANG,
    BANG_DASH,
    COMMENT,
    COMMENT_D1,
    COMMENT_D2,
    PI,
    PI_Q,
    CDATA_KW,
    CDATA,
    CDATA_B1,
    CDATA_B2,
    DOCTYPE_KW,
    DOCTYPE,
    DT_DQ,
    DT_SQ,
    SUBSET,
    SUB_LT,
    SUB_BANG,
    DECL,
    DECL_DQ,
    DECL_SQ,
    DT_AFTER,
) = (s.value for s in State)
assert DT_AFTER == State.DT_AFTER.value and len(State) == 36

_LT, _GT, _SLASH, _EQ, _DQ, _SQ, _BANG, _QM, _DASH, _LB, _RB = b"<>/=\"'!?-[]"
_AMP = ord("&")
_A = ord("A")
_D = ord("D")


def _syntax_table() -> list:
    """Per state, None or the step of a state whose step depends on the byte alone: a
    256-entry tuple of (next state, bad, req, nb, hold) (see :meth:`FrontEndModel._run`)."""
    bad = (TEXT, 1, 0, 0, 0)

    def goto(state, req=0, nb=0, hold=0):
        return (state, 0, req, nb, hold)

    def tag_end(c, ws):  # after a name or an attribute value: ws, "/>" or ">"
        if _WS[c]:
            return goto(ws, hold=1)
        if c == _SLASH:
            return goto(EMPTY_SLASH, req=1)
        return goto(TEXT, req=1) if c == _GT else bad

    def choose(c, state, moves, otherwise=None):
        """``moves``: byte -> next state; ``otherwise``: the rest (None: stay)."""
        return goto(moves.get(c, state if otherwise is None else otherwise))

    rules = {
        START_NAME: lambda c: goto(START_NAME, nb=1) if _NCHAR[c] else tag_end(c, IN_TAG),
        AFTER_AVAL: lambda c: tag_end(c, IN_TAG),
        END_NAME: lambda c: (
            goto(END_NAME, nb=1)
            if _NCHAR[c]
            else goto(END_WS, hold=1)
            if _WS[c]
            else goto(TEXT, req=3)
            if c == _GT
            else bad
        ),
        END_LT: lambda c: goto(END_NAME, nb=1) if _NSTART[c] else bad,
        EMPTY_SLASH: lambda c: goto(TEXT, req=2) if c == _GT else bad,
        ATTR_EQ: lambda c: (
            goto(ATTR_EQ, hold=1) if _WS[c] else goto(ATTR_VALUE, hold=1) if c == _EQ else bad
        ),
        END_WS: lambda c: (
            goto(END_WS, hold=1) if _WS[c] else goto(TEXT, req=3) if c == _GT else bad
        ),
        COMMENT: lambda c: choose(c, COMMENT, {_DASH: COMMENT_D1}),
        COMMENT_D1: lambda c: choose(c, COMMENT_D1, {_DASH: COMMENT_D2}, COMMENT),
        PI: lambda c: choose(c, PI, {_QM: PI_Q}),
        BANG_DASH: lambda c: goto(COMMENT) if c == _DASH else bad,
        DOCTYPE: lambda c: choose(c, DOCTYPE, {_DQ: DT_DQ, _SQ: DT_SQ, _LB: SUBSET, _GT: TEXT}),
        DT_DQ: lambda c: choose(c, DT_DQ, {_DQ: DOCTYPE}),
        DT_SQ: lambda c: choose(c, DT_SQ, {_SQ: DOCTYPE}),
        SUBSET: lambda c: choose(c, SUBSET, {_RB: DT_AFTER, _LT: SUB_LT}),
        SUB_LT: lambda c: goto(SUB_BANG) if c == _BANG else goto(PI) if c == _QM else bad,
        SUB_BANG: lambda c: goto(BANG_DASH) if c == _DASH else goto(DECL) if 65 <= c <= 90 else bad,
        DECL: lambda c: choose(c, DECL, {_DQ: DECL_DQ, _SQ: DECL_SQ, _GT: SUBSET}),
        DECL_DQ: lambda c: choose(c, DECL_DQ, {_DQ: DECL}),
        DECL_SQ: lambda c: choose(c, DECL_SQ, {_SQ: DECL}),
        DT_AFTER: lambda c: goto(DT_AFTER) if _WS[c] else goto(TEXT) if c == _GT else bad,
    }
    table: list = [None] * len(State)
    for state, rule in rules.items():
        table[state] = tuple(rule(c) for c in range(256))
    return table


#: :func:`_syntax_table`: the byte-only states' steps.
_SYNTAX = _syntax_table()


def _reference_table() -> tuple:
    """:func:`xpfilt.hwspec.contract.reference_steps` by prefix index (0: right after ``&``):
    per prefix, a 256-entry tuple of the next prefix's index, -1 (the reference is complete)
    or -2 (the front end cannot decide it: ``entity``)."""
    steps = reference_steps()
    index = {prefix: k for k, prefix in enumerate(steps)}
    assert index[b""] == 0
    return tuple(
        tuple(
            -2 if c not in moves else -1 if moves[c] is None else index[moves[c]]
            for c in range(256)
        )
        for moves in steps.values()
    )


#: :func:`_reference_table`.
_REFERENCE = _reference_table()


class FrontEndModel:
    """Cycle-accurate model of ``FrontEnd(tags, max_depth=..., max_name=...)``."""

    def __init__(
        self,
        tags: Sequence[str],
        *,
        max_depth: int = 16,
        max_name: int = 32,
        report_names: bool = False,
        conditions: Sequence[AttrCondition] = (),
        slots: bool = False,
    ):
        """``report_names``: pushes also carry the element's name (for decoders outside the
        front end, like the programmable engine's); it costs a little speed. ``conditions``:
        the attribute conditions whose bits pushes carry (``conds``), each evaluated as
        :func:`xpfilt.hwspec.contract.condition_value_holds` says when the attribute's value ends (a bit
        is 0 when undecided; the document then has ``VALUE_UNDECIDED``); the bits clear at every
        ``<`` in content. Text conditions (``cond.is_text``) are evaluated on every text node
        when it ends (the same definition on its character data), ORed per element and carried
        by the element's pop (see :class:`xpfilt.hdl.frontend.FrontEnd`). ``slots``: the
        attribute conditions are loaded later, between documents (:meth:`load_conditions`:
        the programmable engine's comparator slots)."""
        self.report_names = report_names
        self.slots = slots
        self.conditions = tuple(conditions)
        self._by_attribute: dict[bytes, list] = {}
        self._text = [(i, c) for i, c in enumerate(self.conditions) if c.is_text]
        for i, cond in enumerate(self.conditions):
            if not cond.is_text:
                self._by_attribute.setdefault(cond.attribute.encode("utf-8"), []).append((i, cond))
        self.tags = tuple(tags)
        self.tag_bytes = check_parameters(self.tags, max_depth, max_name)
        self.max_depth = max_depth
        self.max_name = max_name
        self.tag_width = tag_width_for(len(self.tags))
        self._trie: dict = {}
        for i, raw in enumerate(self.tag_bytes):
            node = self._trie
            for b in raw:
                node = node.setdefault(b, {})
            node[_END] = i + 1
        self.reset()

    def load_conditions(self, conditions: Sequence) -> None:
        """The attribute and text conditions from the next document on (``None``: a free
        slot; with ``slots`` only)."""
        self._by_attribute.clear()
        self._text[:] = [(i, c) for i, c in enumerate(conditions) if c is not None and c.is_text]
        for i, cond in enumerate(conditions):
            if cond is not None and not cond.is_text:
                self._by_attribute.setdefault(cond.attribute.encode("utf-8"), []).append((i, cond))

    def reset(self) -> None:
        """Power-on state: no document in progress, empty stack, ``events`` all zero."""
        self.tos = 0  # the top-of-stack pointer (the RTL's ``tos`` port after the step)
        self._tos = 0  # ... as the parser leaves it, LATENCY - 1 steps earlier
        self._machine = self._run()
        next(self._machine)
        self._send = self._machine.send
        self._delay = deque([(NO_EVENT, 0)] * (LATENCY - 1))

    def step(self, valid: bool, data: int, last: bool) -> FrontEndEvent:
        """One clock cycle with these ``bytes_in`` inputs; the ``events`` port of the next cycle."""
        delay = self._delay
        delay.append((self._send((valid, data, last)), self._tos))
        event, self.tos = delay.popleft()
        return event

    def events_of(self, document: bytes) -> list[DocEvent]:
        """Reset, run ``document`` with a byte every cycle (``last`` on the final one) and return
        its events: pushes with names and levels, pops, and the doc_end with its errors."""
        self.reset()
        send = self._send
        names = (None,) + self.tags
        out: list[DocEvent] = []
        n = len(document)
        if not n:
            return out
        for i, b in enumerate(document):
            ev = send((1, b, i == n - 1))
            if ev is NO_EVENT:
                continue
            if ev.push:
                out.append(DocEvent("push", ev.level, ev.tag, names[ev.tag], ev.parent, offset=i))
            if ev.pop:
                out.append(DocEvent("pop", ev.level, offset=i))
            if ev.doc_end:
                out.append(DocEvent("doc_end", errors=Errors(ev.errors), offset=i))
        return out

    # --- the parser ---------------------------------------------------------------------------

    @staticmethod
    def _value_end(conditions, value: bytearray, conds: int) -> tuple[int, int]:
        """An attribute value with ``conditions`` ended: the new condition bits, and 2 if some
        condition is undecided (its bit stays 0), else 0."""
        undecided = 0
        raw = bytes(value)
        for i, cond in conditions:
            holds = condition_value_holds(cond, raw)
            if holds is None:
                undecided = 2
            elif holds:
                conds |= 1 << i
        return conds, undecided

    @staticmethod
    def _text_end(conditions, node: bytearray, amb: int) -> tuple[int, int]:
        """A text node ended (``node``: its character data; ``amb``: a "]" of a CDATA section
        was in it): the bits of the text conditions it satisfies, and 2 if some condition
        comparing a value is undecided for it (its bit stays 0), else 0."""
        out = undecided = 0
        raw = bytes(node)
        for i, cond in conditions:
            holds = None if amb and cond.kind != "exists" else condition_value_holds(cond, raw)
            if holds is None:
                undecided = 2
            elif holds:
                out |= 1 << i
        return out, undecided

    def _run(self):
        """The parser: a generator sent ``(valid, byte, last)`` per cycle, yielding the byte's
        event. The frequent states are handled here (their state in fast local variables),
        the byte-only ones by :data:`_SYNTAX`, attributes by :meth:`_attribute_byte`, the rest
        of the markup by :meth:`_markup_byte`; :meth:`_element_event` makes a push or pop and
        :meth:`_document_end` the doc_end."""
        WS, NSTART, HASH, SYNTAX = _WS, _NSTART, _HASH, _SYNTAX
        trie, max_name = self._trie, self.max_name
        no_event = NO_EVENT
        depth = self.max_depth + 1  # the global stack's tags and name hashes (row 0: the
        # root sentinel), and the text condition bits of each open element, by level
        self._stacks = ([0] * depth, [0] * depth, [0] * depth)
        state = TEXT
        level = excess = root_seen = in_subset = kw = sticky = 0
        pos, h, node = 0, HASH_INIT, trie  # tag decoder and name hash
        names = self.report_names
        name = bytearray()  # the name so far (with report_names)
        attrs = bool(self._by_attribute) or self.slots  # attribute conditions to evaluate
        # with attribute conditions (or slots), "<!A" in the internal subset (<!ATTLIST: its
        # defaults add attributes, its types normalise values) makes them undecided
        attlist = bool(self.slots or any(not c.is_text for c in self.conditions))
        conds = 0  # their bits for the start tag being read
        attr_name = bytearray()  # the attribute name being read
        cur_attr = None  # the conditions on the attribute being read
        value = bytearray()  # its value so far
        text_conds = self._text  # text conditions (issue 14): per text node
        tnode = bytearray()  # the text node so far (its character data)
        topen = tamb = 0  # a text node has content; a CDATA "]" in it
        ref = -1  # the entity or character reference being read (_REFERENCE), -1: none
        REFERENCE = _REFERENCE

        ev = no_event
        while True:
            valid, c, last = yield ev
            if not valid:
                ev = no_event
                continue
            ev = no_event
            ns = state
            bad = 0
            entity = 0
            if ref >= 0:  # the bytes after an "&" (before the parser: an "&" may start one)
                ref = REFERENCE[ref][c]
                if ref == -2:
                    entity, ref = _ENTITY, -1
            req = 0  # 1: push, 2: pop (self-closing), 3: pop checked against the stack
            nb = 0  # c is a name byte
            hold = 0  # keep the name registers

            # Ordered by how often a state is seen in typical documents.
            if state == TEXT:
                if c == _LT:
                    ns = LT
                    conds = 0
                else:
                    if c == _AMP:
                        ref = 0
                    if not level and not WS[c]:
                        bad = 1  # text outside the root
                    if text_conds and level and not excess:
                        topen = 1
                        tnode.append(c)
            elif state == AVAL_DQ or state == AVAL_SQ:
                hold = 1
                if c == (_DQ if state == AVAL_DQ else _SQ):
                    ns = AFTER_AVAL
                    if cur_attr:
                        conds, bad = self._value_end(cur_attr, value, conds)
                else:
                    if c == _LT:
                        bad = 1
                    elif c == _AMP:
                        ref = 0
                    if cur_attr:
                        value.append(c)
            elif SYNTAX[state] is not None:
                ns, bad, req, nb, hold = SYNTAX[state][c]
                if state == SUB_BANG and c == _A and attlist:
                    bad = 2
            elif state == LT:
                if text_conds and c != _BANG and topen and not last:
                    bad |= self._text_node_end(level, tnode, tamb)
                    topen = tamb = 0
                if NSTART[c]:
                    nb, ns = 1, START_NAME
                    if not level and root_seen:
                        bad = 1  # a second root element
                elif c == _SLASH:
                    ns = END_LT
                elif c == _BANG:
                    ns = BANG
                elif c == _QM:
                    ns = PI
                else:
                    bad, ns = 1, TEXT
            elif state <= ATTR_VALUE:  # IN_TAG, ATTR_NAME, ATTR_VALUE
                ns, bad, req, hold, cur_attr = self._attribute_byte(
                    state, c, attrs, attr_name, value, cur_attr
                )
            elif state == BANG:
                if text_conds and c != _LB and topen and not last:
                    bad |= self._text_node_end(level, tnode, tamb)
                    topen = tamb = 0
                if c == _DASH:
                    ns = BANG_DASH
                elif c == _LB:
                    ns = CDATA_KW
                    if not level:
                        bad = 1  # CDATA outside the root
                elif c == _D:
                    ns = DOCTYPE_KW
                    if root_seen:
                        bad = 1  # DOCTYPE after the root
                else:
                    bad, ns = 1, TEXT
            else:
                text = text_conds and level and not excess
                ns, bad, kw, topen, tamb = self._markup_byte(
                    state, c, kw, in_subset, text, tnode, topen, tamb
                )

            found = (_MALFORMED if bad & 1 else 0) | (_VALUE_UNDECIDED if bad & 2 else 0) | entity
            if req:  # a start tag ended, or an element closes
                ev, more, level, excess, root_seen = self._element_event(
                    req, node, h, level, excess, root_seen, name, conds
                )
                found |= more

            if nb:  # advance the tag decoder and hash
                if pos >= max_name:
                    found |= _NAME_TOO_LONG
                    if pos == max_name:
                        pos += 1
                else:
                    pos += 1
                h = HASH[h ^ c]
                if node is not None:
                    node = node.get(c)
                if names:
                    name.append(c)
            elif pos and not hold:
                pos, h, node = 0, HASH_INIT, trie
                if names:
                    name.clear()

            if ns != state:
                if ns == SUBSET:
                    in_subset = 1
                elif ns == TEXT or ns == DT_AFTER:
                    in_subset = 0
                state = ns

            if last:
                ev = self._document_end(ev, sticky | found, state, level, root_seen)
                state, level, excess, root_seen, in_subset, kw, sticky = TEXT, 0, 0, 0, 0, 0, 0
                pos, h, node, conds, cur_attr, topen, tamb = 0, HASH_INIT, trie, 0, None, 0, 0
                ref = -1
                for buffer in (name, attr_name, tnode):
                    buffer.clear()
            elif found:
                sticky |= found

    def _text_node_end(self, level: int, tnode: bytearray, tamb: int) -> int:
        """A text node of the element at ``level`` ended: its text condition bits go to the
        element's, ``tnode`` empties; 2 if some condition is undecided for it, else 0."""
        conds, undecided = self._text_end(self._text, tnode, tamb)
        self._stacks[2][level] |= conds
        tnode.clear()
        return undecided

    def _attribute_byte(
        self, state: int, c: int, attrs, attr_name: bytearray, value: bytearray, cur_attr
    ) -> tuple:
        """Byte ``c`` in a start tag's attributes (IN_TAG, ATTR_NAME, ATTR_VALUE): (next
        state, bad, req, hold, the conditions on the attribute being read)."""
        ns = state
        if state == IN_TAG:
            if _WS[c]:
                return ns, 0, 0, 1, cur_attr
            if c == _GT:
                return TEXT, 0, 1, 0, cur_attr
            if c == _SLASH:
                return EMPTY_SLASH, 0, 1, 0, cur_attr
            if _NSTART[c]:
                if attrs:
                    attr_name[:] = bytes((c,))
                return ATTR_NAME, 0, 0, 1, cur_attr
        elif state == ATTR_NAME:
            if _NCHAR[c]:
                if attrs:
                    attr_name.append(c)
                return ns, 0, 0, 1, cur_attr
            if _WS[c] or c == _EQ:
                if attrs:
                    cur_attr = self._by_attribute.get(bytes(attr_name))
                return (ATTR_EQ if _WS[c] else ATTR_VALUE), 0, 0, 1, cur_attr
        elif state == ATTR_VALUE:
            if _WS[c]:
                return ns, 0, 0, 1, cur_attr
            if c == _DQ or c == _SQ:
                value.clear()
                return (AVAL_DQ if c == _DQ else AVAL_SQ), 0, 0, 1, cur_attr
        else:  # pragma: no cover - _run sends only these states
            raise AssertionError(f"state must be an attribute state, not {state!r}")
        return TEXT, 1, 0, 0, cur_attr

    @staticmethod
    def _markup_byte(
        state: int, c: int, kw: int, in_subset: int, text, tnode: bytearray, topen, tamb
    ) -> tuple:
        """Byte ``c`` in the markup states :data:`_SYNTAX` leaves to code (the ends of
        comments and PIs, CDATA sections, the CDATA and DOCTYPE keywords): (next state, bad,
        keyword position, text node open, CDATA "]" in it). ``text``: the byte may be
        element text (text conditions, inside the root, not past the deepest level)."""
        ns, bad = state, 0
        if state == COMMENT_D2:
            if c == _GT:
                ns = SUBSET if in_subset else TEXT
            else:
                bad, ns = 1, COMMENT  # "--" inside a comment
        elif state == PI_Q:
            if c == _GT:
                ns = SUBSET if in_subset else TEXT
            elif c != _QM:
                ns = PI
        elif state == CDATA:
            if c == _RB:
                ns = CDATA_B1
            elif text:
                topen = 1
                tnode.append(c)
        elif state == CDATA_B1:
            if c == _RB:
                ns = CDATA_B2
            else:
                ns = CDATA
                if text:
                    topen = tamb = 1  # the "]" was text
        elif state == CDATA_B2:
            if c == _GT:
                ns = TEXT
            else:
                if c != _RB:
                    ns = CDATA
                if text:
                    topen = tamb = 1  # a "]" was text
        elif state == CDATA_KW or state == DOCTYPE_KW:
            word = CDATA_KEYWORD if state == CDATA_KW else DOCTYPE_KEYWORD
            if c != word[kw]:
                bad, ns, kw = 1, TEXT, 0
            elif kw == len(word) - 1:
                ns, kw = (CDATA if state == CDATA_KW else DOCTYPE), 0
            else:
                kw += 1
        else:  # pragma: no cover - every state is handled
            raise AssertionError(f"state must be a parser state, not {state!r}")
        return ns, bad, kw, topen, tamb

    def _element_event(
        self, req: int, node, h: int, level: int, excess: int, root_seen: int, name, conds: int
    ) -> tuple:
        """A start tag ended (``req`` 1) or an element closes (2: self-closing, 3: an end tag,
        checked against the stack): (the event or NO_EVENT, error flags, level, excess,
        root_seen)."""
        tags, hashes, texts = self._stacks
        if req == 1:
            if level == self.max_depth:
                return NO_EVENT, _DEPTH_OVERFLOW, level, min(excess + 1, _EXCESS_MAX), root_seen
            tid = node.get(_END, 0) if node is not None else 0
            parent = tags[level]
            level += 1
            tags[level], hashes[level] = tid, h
            self._tos = level
            if self._text:
                texts[level] = 0
            raw = bytes(name) if self.report_names else b""
            return FrontEndEvent(1, 0, tid, parent, level, 0, 0, raw, conds), 0, level, excess, 1
        if excess:
            return NO_EVENT, 0, level, excess - 1, root_seen
        if not level:
            return NO_EVENT, _MALFORMED, level, excess, root_seen  # end tag at depth 0
        found = 0
        if req == 3:
            tid = node.get(_END, 0) if node is not None else 0
            if tid != tags[level] or h != hashes[level]:
                found = _MALFORMED  # end tag does not match
        if self._text:
            ev = FrontEndEvent(0, 1, 0, 0, level, 0, 0, b"", texts[level])
        else:
            ev = FrontEndEvent(0, 1, 0, 0, level)
        self._tos = level - 1
        return ev, found, level - 1, excess, root_seen

    def _document_end(self, ev, errors: int, state: int, level: int, root_seen: int):
        """The last byte's event with doc_end and the document's ``errors`` (malformed too
        when it ends inside markup, an element, or without a root); the stack empties."""
        if state != TEXT or level or not root_seen:
            errors |= _MALFORMED
        self._tos = 0
        return FrontEndEvent(
            ev.push, ev.pop, ev.tag, ev.parent, ev.level, 1, errors, ev.name, ev.conds
        )
