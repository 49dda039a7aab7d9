"""The programmable engine's comparator slots in the front end (issue 14 part 3).

Like the custom engine's attribute conditions (:meth:`xpfilt.hdl.frontend.FrontEnd.
_attribute_conditions`), but every constant comes from the configuration stream
(:mod:`xpfilt.hwspec.slots` has the layout): the attribute names, the string constants and the number
digits of ``slots`` slots sit in LUT-RAMs with two banks each (the active one is read,
the other one loaded), one byte (a digit: a nibble) per slot a row, so one read at the
current position gives every slot the byte to compare (a streaming CAM, as the tag decoder's
dictionary); each memory is read a cycle ahead into a register (:func:`_row_ahead`), so the
comparisons start from flip-flops. Names and strings share a byte comparator per slot: a name
and a value never stream at the same time. Each slot keeps a "still equal" bit for the attribute name and for the
string, and first-difference flags for the integer and fraction digits of a number (the
custom engine's number lexer, shared by all slots); at the closing quote every slot whose
attribute name matched is decided from its kind, operator, sign and digit counts (flags
loaded with the rows). The bank flips and the flags switch with the tag dictionary's commit.

Text slots (the slot's text flag) use the same comparators on the text nodes: an attribute
value and a text node never stream together (a text node ends on the byte after a ``<``, an
attribute value starts after the name that follows). The string half of the memory is read
from the byte that enters text (``in_text``) to the node's end, where every text slot is
decided (in that cycle, as the custom engine's text conditions: their bits go to the front
end's text stack); the comparators restart at a node's end and in the cycle after an
attribute value's decision. Tab and newline compare as written in text.
"""

from types import SimpleNamespace

from amaranth.hdl import Cat, Const, Mux, Signal
from amaranth.lib import data
from amaranth.lib.memory import Memory

from xpfilt.hwspec.contract import NUMBER_DIGITS, index_width
from xpfilt.hwspec.slots import (
    DIGIT_ROWS,
    KINDS,
    MAX_CHAIN,
    OUTCOMES,
    SLOT_FLAG_BITS,
    TEXT_FLAG,
    slot_rows,
)

__all__ = ["SlotLoadLayout", "comparator_slots"]


class SlotLoadLayout(data.StructLayout):
    """What the configuration loader tells the front end's slots in a cycle: ``bit`` enters
    the row register (``shift``) and completes slot row ``row`` (``row_write``), or enters the
    flags (``flag_shift``); ``bank`` is the active bank; ``flip``: switch to the loaded one."""

    def __init__(self, max_tag_len: int):
        super().__init__(
            {
                "bit": 1,
                "shift": 1,
                "row_write": 1,
                "flag_shift": 1,
                "row": range(slot_rows(max_tag_len)),
                "bank": 1,
                "flip": 1,
            }
        )


def comparator_slots(
    m,
    load,
    *,
    slots: int,
    max_tag_len: int,
    req,
    ahead,
    valid,
    last,
    byte,
    lexer,
    registered,
    member,
    decided,
    text,
    enter_text,
):
    """Stage P's slot logic: ``decided`` (per slot, whether the attribute value decided in
    this cycle satisfies it, ``slots`` bits, 0 when undecided or another attribute),
    ``undecided`` (this byte makes a compared attribute value undecided), ``text_bits`` (per
    text slot, whether the text node ending now satisfies it), ``text_undecided`` (it ends
    undecided for a text slot that compares a value) and ``chains(bits, phase)`` (the slots'
    chain bits, :func:`xpfilt.hwspec.slots.chain_bits`). ``load``: a :class:`SlotLoadLayout` signal;
    ``ahead``: the parser's requests the slots step on, from registers (:meth:`xpfilt.hdl.
    frontend.FrontEnd._requests_ahead`: ``start``, ``fed``, ``attr_byte``, ``attr_end``,
    ``val_start``); ``byte``: the parser's byte; ``lexer``: :meth:`FrontEnd._value_lexer` over
    the attribute values and the text nodes; ``decided``: the cycle after an attribute value's
    closing quote (its decision); ``text``: :meth:`FrontEnd._text_nodes`; ``enter_text``: this
    byte enters the parser's text state.

    In four parts, one function each: the loading (:func:`_slot_tables`), the name and string
    comparators (:func:`_slot_strings`), the number's digits (:func:`_slot_digits`) and the
    decisions at the closing quote or a text node's end (:func:`_slot_decisions`)."""
    tables, field = _slot_tables(m, load, slots, max_tag_len)
    strings = _slot_strings(
        m,
        load,
        tables,
        slots,
        max_tag_len,
        req=req,
        ahead=ahead,
        valid=valid,
        last=last,
        byte=byte,
        registered=registered,
        member=member,
        decided=decided,
        enter_text=enter_text,
    )
    digits = _slot_digits(m, load, tables, slots, max_tag_len, ahead, byte, lexer, strings)
    return _slot_decisions(m, slots, field, req, lexer, text, strings, digits)


def _slot_tables(m, load, S: int, L: int):
    """The slots' loading: a row register, banked LUT-RAMs (names and strings; integer
    digits, fraction digits), flags. Returns ({key: the table of :func:`_row_ahead`},
    ``field(slot, at, width=1)``: the bits of a slot's active flags)."""
    lw = index_width(L)
    bank = load.bank
    shift = Signal(8 * S)
    shift_next = Cat(shift[1:], load.bit)
    with m.If(load.shift):
        m.d.sync += shift.eq(shift_next)
    row = load.row
    # one LUT-RAM each for the names, the strings, the integer and the fraction digits,
    # [bank][position]; each is read a cycle ahead into a register (:func:`_row_ahead`)
    names, strings_ = (Memory(shape=8 * S, depth=2 << lw, init=[]) for _ in range(2))
    idigits, fdigits = (Memory(shape=4 * S, depth=2 * DIGIT_ROWS, init=[]) for _ in range(2))
    m.submodules.slot_names, m.submodules.slot_strings = names, strings_
    m.submodules.slot_idigits, m.submodules.slot_fdigits = idigits, fdigits
    # A row is written in the cycle after the one that completes it, from registers (the
    # write enable, the address) and the row register itself (which holds the completed row in
    # that cycle: a row is 8 * slots bits, more than one cycle). Not visible: the written bank
    # is the inactive one, and the flags (section 3) come between a row's write and the flip.
    # Measured: the loader's section -> the name LUT-RAM's write enable was the next routed
    # critical path after the parser's requests (1 x 128 with 8 slots, 10.37 ns).
    low_nibbles = Cat(*(shift[8 * s : 8 * s + 4] for s in range(S)))
    tables = {}
    for key, memory, first, count, addr_bits, data_ in (
        ("name", names, 0, L, lw, shift),
        ("string", strings_, L, L, lw, shift),
        ("idigit", idigits, 2 * L, DIGIT_ROWS, 4, low_nibbles),
        ("fdigit", fdigits, 2 * L + DIGIT_ROWS, DIGIT_ROWS, 4, low_nibbles),
    ):
        port = memory.write_port()
        write, first_write = Signal(name=f"slot_{key}_we"), Signal(name=f"slot_{key}_we0")
        addr = Signal(addr_bits + 1, name=f"slot_{key}_waddr")
        m.d.sync += [
            addr.eq(Cat((row - first)[:addr_bits], ~bank)),
            write.eq(load.row_write & (row >= first) & (row < first + count)),
            first_write.eq(load.row_write & (row == first)),
        ]
        m.d.comb += [port.addr.eq(addr), port.data.eq(data_), port.en.eq(write)]
        tables[key] = SimpleNamespace(
            key=key, memory=memory, addr_bits=addr_bits, data=data_, first_write=first_write
        )
    staged = Signal(SLOT_FLAG_BITS * S)
    flags = Signal(SLOT_FLAG_BITS * S)
    with m.If(load.flag_shift):
        m.d.sync += staged.eq(Cat(staged[1:], load.bit))
    with m.If(load.flip):
        m.d.sync += flags.eq(staged)

    def field(s, at, width=1):
        return flags[SLOT_FLAG_BITS * s + at : SLOT_FLAG_BITS * s + at + width]

    return tables, field


def _slot_strings(
    m,
    load,
    tables,
    S: int,
    L: int,
    *,
    req,
    ahead,
    valid,
    last,
    byte,
    registered,
    member,
    decided,
    enter_text,
) -> SimpleNamespace:
    """One comparator per slot for the name and the string: the name's row while a name
    streams, the string's from the value's opening quote on. Returns the registers the
    digits and the decisions read (``cur``: the slots on the attribute whose value comes,
    ``sstill``: the value so far equals the slot's string's start, ``vpos``, ``ends``,
    ``inside``, ``same``, ``start``, ``fed``)."""
    ones = (1 << S) - 1
    bank = load.bank
    apos = Signal(range(L + 2))  # name bytes so far (saturating)
    vpos = Signal(range(L + 2))  # value bytes so far (saturating)
    in_value = Signal()  # a value (not a name) is read
    astill = Signal(S, init=ones)  # the name so far equals the slot's name's start
    sstill = Signal(S, init=ones)  # the value so far equals the slot's string's start
    in_text = Signal()  # a text node may stream (the text state)
    cur = Signal(S)  # the slots on the attribute whose value comes
    strings = in_value | in_text
    at = Mux(strings, vpos, apos)
    inside = at < L
    name_inc = ahead.attr_byte
    name_row = _row_ahead(
        m, tables["name"], bank=bank, flip=load.flip, reset=valid & ~name_inc, inc=name_inc
    )
    start, fed = ahead.start, ahead.fed
    string_row = _row_ahead(
        m, tables["string"], bank=bank, flip=load.flip, reset=start, inc=fed & ~start
    )
    # the choice into a signal of its own: a slice of an unnamed expression elaborates the
    # whole expression again (Amaranth), so S slices of the Mux were S * 8S bits
    row_now = Signal(8 * S, name="slot_row_now")  # registers and a multiplexer
    m.d.comb += row_now.eq(Mux(strings, string_row, name_row))
    expected = [row_now[8 * s : 8 * s + 8] for s in range(S)]
    space_like = registered("vspace", member(b" \t\n"))
    same = Cat(
        *(
            e == Mux(space_like & ~in_text, ord(" "), byte)  # names: no spaces
            for e in expected
        )
    )
    ends = Mux(inside, Cat(*(e == 0 for e in expected)), ones)
    # in_value: from the opening quote to the cycle after the closing one (the value's
    # decision reads the string there); a name starts two bytes after that at the earliest.
    # in_text: from the byte that enters text to a node's end (decided there); a name starts
    # after that byte
    with m.If(decided | (valid & last)):
        m.d.sync += in_value.eq(0)
    with m.Elif(ahead.val_start):
        m.d.sync += in_value.eq(1)
    with m.If(enter_text):
        m.d.sync += in_text.eq(1)
    with m.Elif(valid & (last | req["text_end"])):
        m.d.sync += in_text.eq(0)
    with m.If(name_inc):
        m.d.sync += [
            apos.eq(Mux(apos == L + 1, apos, apos + 1)),
            astill.eq(astill & Mux(inside, same, 0)),
        ]
    with m.Elif(valid):
        m.d.sync += [apos.eq(0), astill.eq(ones)]
    with m.If(valid & last):
        m.d.sync += cur.eq(0)
    with m.Elif(ahead.attr_end):
        m.d.sync += cur.eq(astill & ends)
    return SimpleNamespace(
        cur=cur,
        sstill=sstill,
        vpos=vpos,
        ends=ends,
        inside=inside,
        same=same,
        start=start,
        fed=fed,
    )


def _slot_digits(m, load, tables, S: int, L: int, ahead, byte, lexer, strings) -> SimpleNamespace:
    """The value (or text node): the string's position and match (``strings``' registers),
    and the number's digits against each slot's: the digit counts (``icount``, ``fcount``)
    and the first differences (``ilt``, ``igt``, ``flt``, ``fgt``, one bit per slot)."""
    ones = (1 << S) - 1
    bank = load.bank
    start, fed = strings.start, strings.fed
    vpos, sstill, inside, same = strings.vpos, strings.sstill, strings.inside, strings.same
    icount = Signal(range(DIGIT_ROWS + 1))  # significant integer digits so far (saturating)
    fcount = Signal(range(DIGIT_ROWS + 1))  # fraction digits so far (saturating)
    sig, frac = lexer.sig_digit, lexer.frac_digit
    irow, frow = (
        _row_ahead(
            m,
            tables[key],
            bank=bank,
            flip=load.flip,
            reset=start,
            inc=fed & ~start & digit & (count != DIGIT_ROWS),
        )
        for key, count, digit in (("idigit", icount, sig), ("fdigit", fcount, frac))
    )
    digit_row = Signal(4 * S, name="slot_digit_row")  # a signal: see row_now
    m.d.comb += digit_row.eq(Mux(frac, frow, irow))
    literal = [digit_row[4 * s : 4 * s + 4] for s in range(S)]
    dlt = Cat(*(byte[:4] < d for d in literal))
    dgt = Cat(*(byte[:4] > d for d in literal))
    ilt, igt, flt, fgt = (Signal(S, name=f"slot_{n}") for n in ("ilt", "igt", "flt", "fgt"))
    with m.If(start):
        m.d.sync += [
            vpos.eq(0),
            sstill.eq(ones),
            icount.eq(0),
            fcount.eq(0),
            ilt.eq(0),
            igt.eq(0),
            flt.eq(0),
            fgt.eq(0),
        ]
    with m.Elif(fed):
        m.d.sync += [
            vpos.eq(Mux(vpos == L + 1, vpos, vpos + 1)),
            sstill.eq(sstill & Mux(inside, same, 0)),
        ]
        with m.If(sig & (icount != DIGIT_ROWS)):
            m.d.sync += icount.eq(icount + 1)
        with m.If(frac & (fcount != DIGIT_ROWS)):
            m.d.sync += fcount.eq(fcount + 1)
        for s in range(S):
            with m.If(sig & ~ilt[s] & ~igt[s]):
                m.d.sync += [ilt[s].eq(dlt[s]), igt[s].eq(dgt[s])]
            with m.If(frac & ~flt[s] & ~fgt[s]):
                m.d.sync += [flt[s].eq(dlt[s]), fgt[s].eq(dgt[s])]
    return SimpleNamespace(icount=icount, fcount=fcount, ilt=ilt, igt=igt, flt=flt, fgt=fgt)


def _slot_decisions(m, S: int, field, req, lexer, text, strings, digits) -> SimpleNamespace:
    """At the closing quote (or a text node's end): every slot decided from the outcomes its
    operator accepts; the result of :func:`comparator_slots`.

    What the decision reads of the position and the digit counts is registered every cycle
    (the string's end at the memory row of the position, the counts against the slot's): a
    value is decided at least a cycle after its last byte (the cycle after its closing quote;
    a text node on the byte after its "<"), so these registers hold the final value's, and
    the decision starts from flip-flops, not from the LUT-RAM's read."""
    cur, icount, fcount = strings.cur, digits.icount, digits.fcount
    ilt, igt, flt, fgt = digits.ilt, digits.igt, digits.flt, digits.fgt
    ended = Signal(S)
    m.d.sync += ended.eq(strings.ends)
    equal = strings.sstill & ended
    amp, valid_number = lexer.amp, lexer.num_valid
    accept = {name: k + 2 for k, name in enumerate(OUTCOMES)}
    bits = []
    for s in range(S):
        whole, fraction = field(s, 7, 4), field(s, 11, 4)
        counts = Signal(4, name=f"slot_counts_{s}")  # shorter, same, longer; fraction shorter
        m.d.sync += counts.eq(
            Cat(icount < whole, icount == whole, icount > whole, fcount < fraction)
        )
        lt, eq_, gt = lexer.relation(
            field(s, 6),
            i_shorter=counts[0],
            i_same=counts[1],
            i_longer=counts[2],
            f_shorter=counts[3],
            ilt=ilt[s],
            igt=igt[s],
            flt=flt[s],
            fgt=fgt[s],
        )
        number = (
            (
                valid_number
                & (
                    (lt & field(s, accept["lt"]))
                    | (eq_ & field(s, accept["eq"]))
                    | (gt & field(s, accept["gt"]))
                )
            )
            | (lexer.num_nan & field(s, accept["nan"]))
        ) & ~lexer.num_undec
        string = Mux(equal[s], field(s, accept["eq"]), field(s, accept["lt"]))
        kind = field(s, 0, 2)
        bits.append(
            (kind == KINDS.index("exists"))
            | (Mux(kind == KINDS.index("number"), number, string) & ~amp)
        )
    is_text = Signal(S)
    m.d.comb += is_text.eq(Cat(*(field(s, TEXT_FLAG) for s in range(S))))

    def kinds(on, kind, equal=True):
        """Whether a slot of ``on`` has (``equal``; else has not) kind ``kind``."""
        return Cat(
            *(on[s] & ((field(s, 0, 2) == KINDS.index(kind)) == equal) for s in range(S))
        ).any()

    undecided = req["val_end"] & (
        (kinds(cur, "exists", False) & amp) | (kinds(cur, "number") & lexer.num_undec)
    )
    # a text node: its text slots (a "]" of a CDATA section in it: a value is undecided)
    text_bits = Cat(
        *(
            is_text[s] & (bits[s] & ~(text.amb & (field(s, 0, 2) != KINDS.index("exists"))))
            for s in range(S)
        )
    )
    text_undecided = text.decide & (
        (kinds(is_text, "exists", False) & (amp | text.amb))
        | (kinds(is_text, "number") & lexer.num_undec)
    )
    return SimpleNamespace(
        decided=cur & Cat(*bits),
        undecided=undecided,
        text_bits=text_bits,
        text_undecided=text_undecided,
        chains=_slot_chains(m, S, field, is_text),
    )


def _slot_chains(m, S: int, field, is_text):
    """``chains(conds, phase)``: each slot's chain bit from the slots' ``conds`` (see
    :func:`xpfilt.hwspec.slots.chain_bits`): the and (``any``: the or) of the
    negated-as-linked bits of the slot and the next ones it continues into, at most
    ``MAX_CHAIN``; the other ``phase``'s comparisons (text at the push, attributes at the pop)
    read as holding."""

    def chains(conds, phase):
        force = Signal(S, name=f"slot_force_{phase}")
        m.d.comb += force.eq(is_text if phase == "push" else ~is_text)
        out = []
        for s in range(S):
            run = range(s, min(s + MAX_CHAIN, S))
            is_or = field(s, 17)
            bit = Const(0, 1)
            for t in reversed(run):  # from the chain's last possible slot back
                lit = (conds[t] ^ field(t, 15)) | force[t]
                more = field(t, 16) if t != run[-1] else Const(0, 1)
                bit = Mux(is_or, lit | (more & bit), lit & (~more | bit))
            out.append(bit)
        return Cat(*out)

    return chains


def _row_ahead(m, table, *, bank, flip, reset, inc):
    """The row of ``table`` (its memory: [bank][position]) at a position register's value in
    the active ``bank``, from a register: the position next returns to 0 (``reset``), steps
    by one (``inc``) or holds, so the row is read a cycle ahead at position + 1 (a register,
    ``ahead``) and row 0 of each bank is kept in registers (written with the memory's).
    Positions are 0 when the banks ``flip`` (between documents). Rows past the table (a saturated position) read
    as the memory's at the position's low bits wrapped (the comparisons ignore them or, for
    the digits, read row 0 there, as the direct read did).
    The choice is made after registers: the row read ahead, the row shown in the cycle before
    and row 0 are registered as they are, the choice (from the parser's request) beside them.
    Measured: the direct read (position -> LUT-RAM -> byte comparison -> still-equal bit) was
    the routed critical path of 1 x 128 with 8 slots, 81.2 MHz (RTL 256ca2ce68ae); with the
    choice in front of one row register, the request -> that choice (fanned out to every
    bit of the row), 92.2 MHz (RTL d1f492903f1f)."""
    bits, data_, key = table.addr_bits, table.data, table.key
    ahead = Signal(bits, init=1, name=f"slot_{key}_ahead")
    zero_staged, zero_active, fresh, held, row = (
        Signal(len(data_), name=f"slot_{key}_{n}")
        for n in ("zero_staged", "zero_active", "fresh", "held", "row")
    )
    to_zero, to_fresh = Signal(name=f"slot_{key}_to_zero"), Signal(name=f"slot_{key}_to_fresh")
    read = table.memory.read_port(domain="comb")
    m.d.comb += [
        read.addr.eq(Cat(ahead, bank)),
        row.eq(Mux(to_zero, zero_active, Mux(to_fresh, fresh, held))),
    ]
    m.d.sync += [
        fresh.eq(read.data),
        held.eq(row),
        to_zero.eq(flip | reset),
        to_fresh.eq(~flip & ~reset & inc),
    ]
    with m.If(table.first_write):
        m.d.sync += zero_staged.eq(data_)
    with m.If(flip):
        m.d.sync += zero_active.eq(zero_staged)
    with m.If(reset):
        m.d.sync += ahead.eq(1)
    with m.Elif(inc):
        m.d.sync += ahead.eq(ahead + 1)
    return row


assert DIGIT_ROWS == NUMBER_DIGITS + 1 and DIGIT_ROWS <= 16  # a digit row address is 4 bits
