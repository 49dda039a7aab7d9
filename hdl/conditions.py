"""The value comparators of attribute and ``text()`` conditions, as logic over one byte
stream: what the one-byte front end (:class:`xpfilt.hdl.frontend.FrontEnd`) keeps in registers
beside its parser, what the W-byte front end (:class:`xpfilt.hdl.wide_frontend.WideFrontEnd`)
steps through the lanes of a beat, and what the comparator slots (:mod:`xpfilt.hdl.slots`)
share (the value lexer).

Each piece is a pure function of a state (a dict of Signals, {name: (shape, reset value)} as
its ``*_STATE`` or ``state`` says) and one byte's classes (``eq(byte)``, ``registered(key,
value)``, ``member(members)``: the byte tests of the front end's stage D2), returning the
state after the byte and its decisions; :func:`state_registers` and :func:`advance` keep such a
state in registers. The semantics are :func:`xpfilt.hwspec.contract.condition_value_holds`'s;
the front end's module docstring tells the timing ("Attribute conditions", "Text
conditions").

* :func:`value_lexer` (:data:`LEXER_STATE`): the number lexer and the digit positions every
  comparator over a stream shares;
* :func:`comparators` (:func:`comparator_state`): string literals (a CAM over the value bytes)
  and per distinct number literal the first differences of its digits, and per condition its
  decision;
* :class:`AttributeConditions`: an attribute-name CAM and the comparators over the values;
* :func:`text_node` (:data:`TEXT_NODE_STATE`) and :class:`TextConditions`: the text node being
  read and the comparators over its character data.
"""

from types import SimpleNamespace

from amaranth.hdl import Cat, Const, Mux, Signal

from xpfilt.hwspec.contract import NUMBER_DIGITS, number_digits

__all__ = [
    "state_registers",
    "advance",
    "LEXER_STATE",
    "value_lexer",
    "comparator_state",
    "comparators",
    "any_of",
    "AttributeConditions",
    "TEXT_NODE_STATE",
    "text_node",
    "TextConditions",
]


def state_registers(spec: dict, prefix: str) -> dict:
    """A Signal per field of ``spec`` ({name: (shape, reset value)}), reset to its value."""
    return {k: Signal(shape, init=init, name=prefix + k) for k, (shape, init) in spec.items()}


def advance(spec: dict, cur: dict, nxt: dict, *, start, byte) -> dict:
    """The state after one byte of a comparator's stream: reset by ``start``, ``nxt`` if
    ``byte`` feeds it, else ``cur``."""
    return {
        k: Mux(start, spec[k][1], Mux(byte, nxt[k], cur[k]))
        if k in nxt
        else Mux(start, spec[k][1], cur[k])
        for k in spec
    }


#: The number lexer's states (one-hot, see :func:`xpfilt.hwspec.contract.value_number`).
LEAD, SIGN, INT, DOT, FRAC, TRAIL, NAN, UNDEC = range(8)
#: The value lexer's state ({name: (shape, reset value)}, see :func:`value_lexer`).
LEXER_STATE = {
    "amp": (1, 0),
    "lex": (8, 1 << LEAD),
    "neg": (1, 0),
    "isig": (1, 0),
    "nonzero": (1, 0),
    "ndig": (range(NUMBER_DIGITS + 2), 0),
    "ipos": (NUMBER_DIGITS + 1, 1),
    "fpos": (NUMBER_DIGITS + 1, 1),
    "ibelow": (NUMBER_DIGITS + 2, (1 << NUMBER_DIGITS + 2) - 2),
    "fbelow": (NUMBER_DIGITS + 2, (1 << NUMBER_DIGITS + 2) - 2),
}


def value_lexer(cur: dict, *, eq, registered, member) -> SimpleNamespace:
    """What every value comparator shares over one byte stream, from its state ``cur``
    (:data:`LEXER_STATE`) and the byte's classes: ``next`` (the state after the byte, if it is
    fed), ``amp`` (``&`` or CR seen: undecided), the number lexer (one-hot, see
    :func:`xpfilt.hwspec.contract.value_number`: ``lex``, ``num_valid``, ``num_nan``, ``num_undec``, the
    sign ``vneg``) and its digits (``sig_digit`` / ``frac_digit``: this byte is a significant
    integer / a fraction digit; ``ipos`` / ``fpos``: one-hot counts of those so far, and
    ``ibelow`` / ``fbelow`` the same counts as thermometers, bit ``L`` = fewer than ``L``;
    ``dlt(k)`` / ``dgt(k)``: the byte is a digit below / above ``k``); ``relation`` and
    ``number_bit`` decide a comparison from the first differences with a literal's digits."""
    amp, lex, neg, isig, nonzero, ndig, ipos, fpos, ibelow, fbelow = (cur[k] for k in LEXER_STATE)
    digit = registered("digit", member(range(0x30, 0x3A)))
    nz = registered("digit_nz", member(range(0x31, 0x3A)))
    ws = registered("vws", member(b" \t\n"))
    dot, minus = eq(ord(".")), eq(ord("-"))
    expo = registered("expo", member(b"eE"))

    def dlt(k):  # the digit byte is below k
        return registered(f"dlt_{k}", member(range(0x30, 0x30 + k)))

    def dgt(k):  # the digit byte is above k
        return registered(f"dgt_{k}", member(range(0x31 + k, 0x3A)))

    nxt = [[] for _ in range(8)]
    for here, branches in (
        (LEAD, [(ws, LEAD), (minus, SIGN), (digit, INT), (dot, DOT)]),
        (SIGN, [(digit, INT), (dot, DOT)]),
        (INT, [(digit, INT), (dot, FRAC), (ws, TRAIL), (expo, UNDEC)]),
        (DOT, [(digit, FRAC)]),
        (FRAC, [(digit, FRAC), (ws, TRAIL), (expo, UNDEC)]),
        (TRAIL, [(ws, TRAIL)]),
    ):
        taken = []
        for test, target in branches:
            nxt[target].append(lex[here] & test)
            taken.append(test)
        nxt[NAN].append(lex[here] & ~Cat(*taken).any())
    nxt[NAN].append(lex[NAN])
    nxt[UNDEC].append(lex[UNDEC])
    lex_next = Cat(*(Cat(*t).any() for t in nxt))
    int_digit = digit & (lex[LEAD] | lex[SIGN] | lex[INT])
    frac_digit = digit & (lex[DOT] | lex[FRAC])
    sig_digit = int_digit & (isig | nz)
    nxt_state = {
        "amp": amp | eq(ord("&")) | eq(ord("\r")),
        "lex": lex_next,
        "neg": neg | (lex[LEAD] & minus),
        "isig": isig | sig_digit,
        "nonzero": nonzero | ((int_digit | frac_digit) & nz),
        "ndig": Mux((sig_digit | frac_digit) & (ndig != NUMBER_DIGITS + 1), ndig + 1, ndig),
        "ipos": Mux(sig_digit, ipos << 1, ipos),
        "fpos": Mux(frac_digit, fpos << 1, fpos),
        "ibelow": Mux(sig_digit, ibelow << 1, ibelow),
        "fbelow": Mux(frac_digit, fbelow << 1, fbelow),
    }
    num_valid = lex[INT] | lex[FRAC] | lex[TRAIL]
    num_nan = ~num_valid & ~lex[UNDEC]
    num_undec = lex[UNDEC] | (num_valid & (ndig == NUMBER_DIGITS + 1))
    vneg = neg & nonzero

    def relation(kneg, *, i_shorter, i_same, i_longer, f_shorter, ilt, igt, flt, fgt):
        """(value < literal, =, >) from the lengths and first differences; ``kneg``: the
        literal is negative (a bool or a signal)."""
        mag_lt = i_shorter | (i_same & (ilt | (~igt & (flt | (~fgt & f_shorter)))))
        mag_gt = i_longer | (i_same & (igt | (~ilt & fgt)))
        mag_eq = ~mag_lt & ~mag_gt
        if isinstance(kneg, bool):
            return (
                (vneg & mag_gt, vneg & mag_eq, ~vneg | mag_lt)
                if kneg
                else (vneg | mag_lt, ~vneg & mag_eq, ~vneg & mag_gt)
            )
        return (
            Mux(kneg, vneg & mag_gt, vneg | mag_lt),
            mag_eq & (vneg == kneg),
            Mux(kneg, ~vneg | mag_lt, ~vneg & mag_gt),
        )

    def number_bit(op, lt, eq_, gt):
        """A number comparison ``op`` decided (0 when undecided)."""
        bit = {
            "=": num_valid & eq_,
            "!=": num_nan | (num_valid & ~eq_),
            "<": num_valid & lt,
            "<=": num_valid & (lt | eq_),
            ">": num_valid & gt,
            ">=": num_valid & (gt | eq_),
        }[op]
        return bit & ~amp & ~num_undec

    return SimpleNamespace(
        next=nxt_state,
        amp=amp,
        lex=lex,
        ipos=ipos,
        fpos=fpos,
        ibelow=ibelow,
        fbelow=fbelow,
        digit=digit,
        sig_digit=sig_digit,
        frac_digit=frac_digit,
        dlt=dlt,
        dgt=dgt,
        num_valid=num_valid,
        num_nan=num_nan,
        num_undec=num_undec,
        vneg=vneg,
        relation=relation,
        number_bit=number_bit,
    )


def _strings(conditions) -> list:
    return list(dict.fromkeys(c.literal.encode("utf-8") for c in conditions if c.kind == "string"))


def _numbers(conditions) -> list:
    return list(dict.fromkeys(number_digits(c.number) for c in conditions if c.kind == "number"))


def comparator_state(conditions) -> dict:
    """The state of :func:`comparators` over ``conditions`` ({name: (shape, reset value)})."""
    strings, n_num = _strings(conditions), max(1, len(_numbers(conditions)))
    smax = max((len(t) for t in strings), default=0)
    return {
        "vpos": (smax + 1, 1),
        "lit": (max(1, len(strings)), (1 << max(1, len(strings))) - 1),
        **{k: (n_num, 0) for k in ("ilt", "igt", "flt", "fgt")},
        **LEXER_STATE,
    }


def comparators(
    conditions, cur: dict, *, space_like_tabs, eq, registered, member
) -> SimpleNamespace:
    """The value comparators over one byte stream (an attribute value, a text node), from their
    state ``cur`` (:func:`comparator_state`) and the byte's classes: ``next`` (the state after
    the byte, if it is fed), ``bits`` (per condition, its decision over the bytes fed so far, 0
    when undecided), ``amp`` (``&`` or CR seen), ``num_undec`` (the number is undecided)."""
    # the value: string literals (a CAM over the value bytes; tab and newline read as space)
    strings = _strings(conditions)
    vpos, lit = cur["vpos"], cur["lit"]
    space_like = registered("vspace", member(b" \t\n"))

    def same(b):
        return space_like if space_like_tabs and b == ord(" ") else eq(b)

    lit_ok = (
        Cat(*(Cat(*(vpos[p] & same(b) for p, b in enumerate(t))).any() for t in strings))
        if strings
        else Const(1, 1)
    )
    lx = value_lexer({k: cur[k] for k in LEXER_STATE}, eq=eq, registered=registered, member=member)
    amp, ipos, fpos = lx.amp, lx.ipos, lx.fpos
    sig_digit, frac_digit, dlt, dgt = lx.sig_digit, lx.frac_digit, lx.dlt, lx.dgt

    # per distinct number: the first difference from its digits, integer and fraction part
    numbers = _numbers(conditions)
    ilt, igt, flt, fgt = (cur[k] for k in ("ilt", "igt", "flt", "fgt"))
    nxt = {"vpos": vpos << 1, "lit": lit & lit_ok, **lx.next}
    new = {k: [] for k in ("ilt", "igt", "flt", "fgt")}
    for j, (_neg, whole, frac) in enumerate(numbers):
        i_open = sig_digit & ~ilt[j] & ~igt[j]
        f_open = frac_digit & ~flt[j] & ~fgt[j]
        new["ilt"].append(
            Mux(
                i_open,
                Cat(*(ipos[p] & dlt(int(d)) for p, d in enumerate(whole))).any() if whole else 0,
                ilt[j],
            )
        )
        new["igt"].append(
            Mux(
                i_open,
                Cat(*(ipos[p] & dgt(int(d)) for p, d in enumerate(whole))).any() if whole else 0,
                igt[j],
            )
        )
        new["flt"].append(
            Mux(
                f_open,
                Cat(*(fpos[p] & dlt(int(d)) for p, d in enumerate(frac))).any() if frac else 0,
                flt[j],
            )
        )
        # past the literal's fraction digits, any digit but 0 is greater (``~fbelow[lf]``: the
        # position is past them; as an OR over every position of ``fpos``, a_fpos -> a_fgt was
        # on the routed critical paths of 1,024 queries with 2 predicates each, 7.19 ns, seed 1,
        # router1, clk on G2, RTL af9a0464f50f)
        lf = len(frac)
        new["fgt"].append(
            Mux(
                f_open,
                Cat(
                    *(fpos[p] & dgt(int(d)) for p, d in enumerate(frac)), ~lx.fbelow[lf] & dgt(0)
                ).any(),
                fgt[j],
            )
        )
    for k, bits in new.items():
        nxt[k] = Cat(*bits) if bits else cur[k]

    # at the closing quote: each condition on the current attribute (the lengths from the
    # thermometers: as ORs over ``ipos``, a_ipos -> a staged comparison was the routed
    # critical path of 1,024 queries with 1 predicate each, 7.01 ns, router1, clk on G2, RTL
    # b7c58d7bc894)
    relation = {}
    ibelow, fbelow = lx.ibelow, lx.fbelow
    for j, (kneg, whole, frac) in enumerate(numbers):
        lw, lf = len(whole), len(frac)
        relation[numbers[j]] = lx.relation(
            kneg,
            i_shorter=ibelow[lw] if lw else Const(0, 1),
            i_same=ipos[lw],
            i_longer=~ibelow[lw + 1],
            f_shorter=fbelow[lf] if lf else Const(0, 1),
            ilt=ilt[j],
            igt=igt[j],
            flt=flt[j],
            fgt=fgt[j],
        )
    ends = Cat(*(lit[i] & vpos[len(t)] for i, t in enumerate(strings))) if strings else None
    bits = []
    for c in conditions:
        kind = c.kind
        if kind == "exists":
            bit = Const(1, 1)
        elif kind == "string":
            ok = ends[strings.index(c.literal.encode("utf-8"))]
            bit = (ok if c.op == "=" else ~ok) & ~amp
        elif kind == "nan":
            bit = Const(int(c.op == "!="), 1) & ~amp
        else:
            bit = lx.number_bit(c.op, *relation[number_digits(c.number)])
        bits.append(bit)
    return SimpleNamespace(next=nxt, bits=bits, amp=amp, num_undec=lx.num_undec)


def any_of(bits, among):
    """1 when one of ``bits[i]`` for ``i`` in ``among`` is (0 for none)."""
    return Cat(*(bits[i] for i in among)).any() if among else Const(0, 1)


class AttributeConditions:
    """The attribute conditions of a condition list (``conditions``: those not on ``text()``)
    and one byte's step of their logic (:meth:`step`): an attribute-name CAM (a one-hot name
    position and a "still matching" bit per distinct attribute name), the attribute whose value
    streams (``attr``, one-hot) and the value comparators (:func:`comparators`)."""

    def __init__(self, all_conditions):
        self.width = max(1, len(all_conditions))
        self.index = [i for i, c in enumerate(all_conditions) if not c.is_text]
        self.conditions = [all_conditions[i] for i in self.index]
        self.attrs = list(dict.fromkeys(c.attribute.encode("utf-8") for c in self.conditions))
        self.a_of = [self.attrs.index(c.attribute.encode("utf-8")) for c in self.conditions]
        n_attr = max(1, len(self.attrs))
        amax = max((len(a) for a in self.attrs), default=0)
        #: the attributes (indices into ``attrs``) with a condition that compares a value, and
        #: those with a numeric one: their values may be undecided
        self.valued, self.numeric = (
            [
                i
                for i in range(len(self.attrs))
                if any(c.kind in kinds and a == i for c, a in zip(self.conditions, self.a_of))
            ]
            for kinds in (("string", "number", "nan"), ("number",))
        )
        #: the state ({name: (shape, reset value)}): the CAM's ``apos``, ``amatch``, ``attr``
        #: (and whether it was in ``valued``, ``numeric`` a byte before: ``avalued``,
        #: ``anumeric``)
        #: and the comparators' state
        self.state = {
            "apos": (amax + 1, 1),
            "amatch": (n_attr, (1 << n_attr) - 1),
            "attr": (n_attr, 0),
            "avalued": (1, 0),
            "anumeric": (1, 0),
            **comparator_state(self.conditions),
        }

    def step(
        self, cur: dict, req, *, valid, last, eq, registered, member, stage=None, ahead=None
    ) -> SimpleNamespace:
        """One byte from the state ``cur``: ``next`` (the state after it; ``valid``: the byte
        is there, ``last``: the document's final byte, ``req``: its parser requests),
        ``decided`` (the condition bits, full width, of the value that ends at this byte:
        meaningful with ``val_end``) and ``undecided`` (this byte ends a compared value the
        comparators cannot decide).

        With ``stage`` (``stage(value)``: ``value`` registered), ``decided`` is two steps of
        logic with registers between, meaningful two cycles after ``val_end``: each distinct
        comparison (kind, operator, literal) over the value and the attribute are registered
        (the comparators and the attribute hold still until the next value starts, >= 4 bytes
        later), and ``decided`` is one AND per condition of those registers.

        ``ahead`` (:meth:`xpfilt.hdl.frontend.FrontEnd._requests_ahead`, with ``stage``): the CAM steps on its
        ``attr_byte`` and ``attr_end``, the comparators restart on ``start`` and take the byte
        on ``fed`` (which also restart after a decided value and take character data: the
        staged comparisons read the value in the cycle after its closing quote, before
        either)."""
        attrs, a_of = self.attrs, self.a_of
        apos, amatch, attr = cur["apos"], cur["amatch"], cur["attr"]
        aok = Cat(*(Cat(*(apos[p] & eq(b) for p, b in enumerate(a))).any() for a in attrs))
        ahit = Cat(*(amatch[i] & apos[len(a)] for i, a in enumerate(attrs)))
        if ahead is None:
            go = valid & ~last
            ahead = SimpleNamespace(
                attr_byte=go & req["attr_byte"],
                attr_end=go & req["attr_end"],
                start=valid & (last | req["val_start"]),
                fed=go & req["val_byte"],
            )
        spec = comparator_state(self.conditions)
        cmp = comparators(
            self.conditions,
            {k: cur[k] for k in spec},
            space_like_tabs=True,
            eq=eq,
            registered=registered,
            member=member,
        )
        nxt = {
            "apos": Mux(ahead.attr_byte, apos << 1, Mux(valid, 1, apos)),
            "amatch": Mux(
                ahead.attr_byte, amatch & aok, Mux(valid, self.state["amatch"][1], amatch)
            ),
            "attr": Mux(valid & last, 0, Mux(ahead.attr_end, ahit, attr)),
            "avalued": any_of(attr, self.valued),
            "anumeric": any_of(attr, self.numeric),
            **advance(spec, cur, cmp.next, start=ahead.start, byte=ahead.fed),
        }
        stage = stage or (lambda value: value)
        compared = {}  # each distinct comparison's bit (staged once)
        for c, bit in zip(self.conditions, cmp.bits):
            if (c.kind, c.op, c.literal) not in compared:
                compared[c.kind, c.op, c.literal] = stage(bit)
        attr_now = stage(attr)
        bits = {
            i: attr_now[a_of[k]] & compared[c.kind, c.op, c.literal]
            for k, (i, c) in enumerate(zip(self.index, self.conditions))
        }
        decided = Cat(*(bits.get(i, Const(0, 1)) for i in range(self.width)))
        # (``avalued`` / ``anumeric``: the OR over ``attr``'s bits a byte late, a register: a
        # value ends two bytes after its name at the earliest (``="``), and ``attr`` holds from
        # the name's end to the next one. As that OR, a_attr -> value_undecided was the routed
        # critical path of 1,024 queries with 2 predicates each, 7.74 ns, router1, clk on G2,
        # RTL 4d1425ddbaf9; as the OR of the name CAM's hits taken with ``attr``, a_amatch ->
        # anumeric, 7.30 ns, RTL af9a0464f50f)
        undecided = req["val_end"] & (
            (cur["avalued"] & cmp.amp) | (cur["anumeric"] & cmp.num_undec)
        )
        return SimpleNamespace(next=nxt, decided=decided, undecided=undecided)


#: The state of :func:`text_node` ({name: (shape, reset value)}).
TEXT_NODE_STATE = {"topen": (1, 0), "tamb": (1, 0)}


def text_node(cur: dict, req, *, valid, last, inside) -> SimpleNamespace:
    """The text node being read, from its state ``cur`` (:data:`TEXT_NODE_STATE`: it has
    content, ``topen``; a ``]`` of a CDATA section was in it, ``tamb``) and one byte (``valid``,
    ``last``, its parser requests ``req``; ``inside``: text of a stacked element): ``next``,
    ``feed`` (this byte is its character data: text of a stacked element, or CDATA),
    ``start`` (it ends or the document does: the comparators restart), ``decide`` (it ends with
    content: its bits are taken now), ``amb`` (a compared value is undecided)."""
    feed = valid & ~last & inside & req["text_byte"]
    amb_now = valid & ~last & inside & req["text_amb"]
    start = valid & (last | req["text_end"])
    nxt = {
        "topen": Mux(start, 0, cur["topen"] | feed | amb_now),
        "tamb": Mux(start, 0, cur["tamb"] | amb_now),
    }
    return SimpleNamespace(
        next=nxt,
        feed=feed,
        start=start,
        decide=valid & ~last & req["text_end"] & cur["topen"],
        amb=cur["tamb"],
    )


class TextConditions:
    """The ``text()`` conditions of a condition list and one byte's step of their logic
    (:meth:`step`): the text node (:func:`text_node`) and the value comparators over its
    character data (:func:`comparators`)."""

    def __init__(self, all_conditions):
        self.width = max(1, len(all_conditions))
        self.index = [i for i, c in enumerate(all_conditions) if c.is_text]
        self.conditions = [all_conditions[i] for i in self.index]
        #: the state ({name: (shape, reset value)})
        self.state = {**TEXT_NODE_STATE, **comparator_state(self.conditions)}

    def full(self, bits):
        """``bits`` (one per text condition) at their places among all the conditions."""
        return Cat(
            *(
                bits[self.index.index(i)] if i in self.index else Const(0, 1)
                for i in range(self.width)
            )
        )

    def step(
        self, cur: dict, req, *, valid, last, inside, eq, registered, member
    ) -> SimpleNamespace:
        """One byte from the state ``cur``: ``next`` (the state after it), ``decide`` (a text
        node with content ends), ``bits`` (its condition bits, one per text condition,
        meaningful with ``decide``) and ``undecided`` (it ends a node the comparators cannot
        decide)."""
        node = text_node(
            {k: cur[k] for k in TEXT_NODE_STATE}, req, valid=valid, last=last, inside=inside
        )
        spec = comparator_state(self.conditions)
        cmp = comparators(
            self.conditions,
            {k: cur[k] for k in spec},
            space_like_tabs=False,
            eq=eq,
            registered=registered,
            member=member,
        )
        bits = Cat(
            *(
                (b & ~node.amb) if c.kind != "exists" else b
                for b, c in zip(cmp.bits, self.conditions)
            )
        )
        valued = any(c.kind != "exists" for c in self.conditions)
        numeric = any(c.kind == "number" for c in self.conditions)
        undecided = node.decide & (
            ((cmp.amp | node.amb) if valued else Const(0, 1))
            | (cmp.num_undec if numeric else Const(0, 1))
        )
        return SimpleNamespace(
            next={**node.next, **advance(spec, cur, cmp.next, start=node.start, byte=node.feed)},
            decide=node.decide,
            bits=bits,
            undecided=undecided,
        )
