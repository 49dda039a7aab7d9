"""The W-byte front end (issue 18): the XML parser, the tag decoder and the global stack of
:class:`xpfilt.hdl.frontend.FrontEnd`, taking a beat of W bytes per cycle (W = 2, 4 or 8).

Most bytes of a document are text, attribute values and whitespace that only have to be
scanned; an open or a close tag reaches the stacks every 16-30 bytes. So the parser takes W
bytes per cycle and its events reach the global stack and the stacks through a queue, one per
cycle. The stages, in the order a beat meets them (a letter names one stage; each is built by
the methods of :class:`WideFrontEnd` named beside it):

* D1 (``_stage_d1``): the beat (its bytes' nibbles one-hot) and the lanes that hold bytes,
  registered;
* D2: every lane's byte classes, registered (one flip-flop per test, as in ``FrontEnd``;
  :class:`LaneClasses` makes them on first use, for D2 and for the later stages that read a
  lane's byte again);
* X1..Xk (k = log2 W; ``_stages_x``, with D2), the parallel-prefix parser: each lane's
  transition function over the parser's control states (state, ``kw``, ``in_subset``:
  :func:`control_states`), taken from :func:`xpfilt.hdl.frontend.parser_table`
  (:func:`lane_transitions`, from the lane's D2 classes), then composed in Brent-Kung's
  up-sweep, one registered level each: lane i ends up with the function of its block, the
  lowbit(i + 1) lanes up to it (W - 1 compositions; Sklansky's tree, which gives every lane
  the function from lane 0, takes k W / 2, the widest of them twice as many);
* S (``_stages_s``): the control state before the beat (``s0``, the parser's only loop: one
  AND-OR per state bit from the beat's composed function) and from it the state after each
  lane whose block begins at lane 0, registered; S2.. (the down-sweep,
  :func:`xpfilt.hwspec.contract.down_sweep_stages` of them: k - 1): the state after every
  other lane from the state before its block, one AND-OR a stage; every lane's start state,
  registered;
* O (``_stage_o``): each lane's requests (:func:`xpfilt.hdl.frontend.parse_byte`; ``bad`` for
  each case of level 0 and root seen, chosen in M), registered;
* N (``_stage_n``, ``_tag_runs``): the lanes' prefixes, registered: their depth steps as one
  clamped add (v -> min(max(v + A, LO), VMAX - HD), v = level + excess), the name bytes since
  the last name reset, the hash of the lanes from 0 (the hash is linear: the part of the hash
  before the beat is added in L); the runs of lanes of the beat's names, for stage M; and
  (``_references``) each lane's reference check, the one-byte front end's stepped through
  the lanes from bits carried from beat to beat (a reference across lanes and beats is
  decided exactly as one byte at a time: ``entity``), its flag joining lane 0's in M;
* N2 (``_stage_n2``): the clamp's bounds on the depth before the beat (below them the result
  is LO, above them VMAX - HD, else v + A) and on the name position before it, registered, so
  that the depth and position loops are compares and an add side by side (v is 17 bits wide);
* L (``_stage_l``): the depth after the beat (its loop: one add and clamp, from the beat's
  bounds alone), the name position, hash and "root seen" before each lane and after the beat
  (their loops: one add and clamp, one XOR matrix per hash power), registered, with the depth
  before the beat and each lane's bounds;
* L2 (``_stage_l2_depth``, ``_stage_l2``): the depth before each lane (an add and clamp each,
  off the loop), registered; the tag CAM is read: two ROMs in block RAM (one copy per two
  lanes), addressed by the lane's name position, whether the lane is past the name (no name
  byte) and its byte's high (low) nibble, each row one bit per tag: the tags with that nibble
  at that position, or past the name the tags of that length;
* L3 (``_stage_l3``): the CAM rows (the block RAMs' output registers:
  :class:`xpfilt.hdl.bram.RegisteredROM`, in the DP16KDs themselves when elaborated for the
  ECP5); each lane's depth flags, registered;
* C and T (beside L3, with value conditions only; ``_attribute_conditions``,
  ``_text_conditions``, their inputs from ``_condition_taps``):
  :class:`xpfilt.hdl.conditions.AttributeConditions` (C) and
  :class:`xpfilt.hdl.conditions.TextConditions` (T: the text nodes) stepped through the
  lanes one after the other from registers carried from beat to beat (a loop through the
  lanes: the price of the conditions, paid only by engines that have them), with each lane's
  depth from L2; each lane's bits of its start tag so far (its push carries them in its queue
  entry), its text bits since the event before it (its push or pop carries them; stage F
  keeps them per open element in registers) and its ``value_undecided`` flags, registered;
* L4 (``_stage_l4``): each lane's CAM result (its two rows ANDed), registered: the decoders'
  AND trees start at fabric registers (from the block RAMs' outputs they took 7.5 ns: 3.8 ns to
  leave the block RAM and reach the fabric, then four LUT levels into ``match0``);
* M (``_stage_m``, ``_lane_events``): the shared tag decoders, :func:`tag_decoders` of them
  (W = 2: 1, 4: 2, 8: 3; a beat holds at most that many tag events, :func:`tag_event_gap` bytes
  apart): a name's run of lanes (its name bytes, the held lanes after them, the tag event that
  ends it) is found in stage N from the lanes' requests alone; decoder k ANDs the CAM rows of
  the run of the beat's k-th tag event (with the name carried into the beat, ``match0``, the
  only loop) and registers the tags the name may be (at most one, its length checked as a
  byte); each lane's event and error flags, registered;
* M2 (``_stage_m2``): each decoder's tag id (an OR tree per bit), given to the lanes of its
  tag event;
* P2: the lanes' events registered (so that the queue's write positions, a sum over the lanes,
  are off the parser's paths), written into the queue in lane order in the next cycle;
* Q (``_queue``, ``_room``): the queue (:func:`xpfilt.hwspec.contract.queue_depth_for`
  entries, LUT RAM) hands its oldest event to stage E every cycle, except in the cycle after
  it handed over a document end (the frame captures the match flags then: no push may reach
  the clusters in that cycle);
* E (``_stage_e``): the global stack row of the level before the event is read (a push's
  parent, the element a pop closes); a push writes its row;
* F (``_stage_f``, ``_text_rows``): the end-tag check; the ``events`` register.

No loop runs through the lanes (except those of stages C and T), so the clock does not depend on
W; the beat's registered stages from D2 to P2 are :func:`xpfilt.hwspec.contract.wide_parser_stages`. A
beat accepted in cycle N shows its first event in cycle N + :func:`xpfilt.hwspec.contract.wide_latency`
when the queue is empty. ``room`` tells the frame it may accept a beat: the queue has room for
W events of each beat not yet in the queue (on ``bytes_in``, in D1, D2 and the parser stages)
and of one more, judged from the load of the cycle before (an upper bound on the load now).
Events, their order and their fields, the error flags included, are exactly the one-byte front
end's; :class:`xpfilt.model.wide_frontend.WideFrontEndModel` is the cycle-accurate model.

``bytes_in``: ``data`` holds W bytes, lane ``i`` in bits ``8i..8i+7`` (the first byte of the beat
in lane 0); ``count`` (1..W) says how many lanes hold bytes in the beat with ``last`` (every
other beat is full, its ``count`` is ignored). ``conditions``: attribute conditions, as
:class:`xpfilt.hdl.frontend.FrontEnd`'s (a push's ``conds``); ``text()`` conditions and the name
tap of the programmable engine are not widened: the engines refuse them above one byte per
cycle.
"""

from functools import reduce
from operator import xor
from types import SimpleNamespace
from typing import Sequence

from amaranth.hdl import Cat, Const, Module, Mux, Signal
from amaranth.lib import data, stream, wiring
from amaranth.lib.memory import Memory
from amaranth.lib.wiring import In, Out

from xpfilt.hdl.bram import RegisteredROM
from xpfilt.hdl.conditions import AttributeConditions, TextConditions, state_registers
from xpfilt.hdl.frontend import (
    ByteTests,
    EventLayout,
    StackEntry,
    hash_power,
    nibble_member,
    parse_byte,
    parser_table,
    reference_step,
)
from xpfilt.hwspec.contract import (
    CDATA_KEYWORD,
    DOCTYPE_KEYWORD,
    EXCESS_WIDTH,
    HASH_INIT,
    HASH_WIDTH,
    NAME_CHAR,
    NAME_START,
    REFERENCE_STATES,
    WHITESPACE,
    AttrCondition,
    ErrorFlags,
    State,
    check_bytes_per_cycle,
    check_parameters,
    down_sweep_stages,
    queue_depth_for,
    reference_steps,
    tag_width_for,
    wide_parser_stages,
)

__all__ = ["WideByteLayout", "QueueEntry", "WideFrontEnd"]


#: A control state of the parallel-prefix parser: (parser state, ``kw``, ``in_subset``), the
#: parser registers that decide the next state (``level`` and ``root_seen`` only raise errors).
INITIAL = (State.TEXT, 0, 0)
KW_MAX = max(len(CDATA_KEYWORD), len(DOCTYPE_KEYWORD)) - 1
KW_BITS = KW_MAX.bit_length()
#: The lane's ``bad`` request for each (level is 0, root seen) before it.
BAD_CASES = {
    (False, False): "bad",
    (True, False): "bad_root",
    (False, True): "bad_seen",
    (True, True): "bad_both",
}


def wire(m: Module, value, name: str):
    """``value`` in a Signal of its own (so that expressions built on it stay small)."""
    sig = (
        Signal.like(value, name=name)
        if isinstance(value, Signal)
        else Signal(value.shape(), name=name)
    )
    m.d.comb += sig.eq(value)
    return sig


def _moves(table, control):
    """The branches of ``table`` from ``control``, in priority order, each (byte test, next
    control state), and the next control state when no branch is taken."""
    state, kw, subset = control

    def after(nxt, kw_inc):
        stays_in_subset = subset and nxt not in (State.TEXT, State.DT_AFTER)
        return (
            nxt,
            min(kw + 1, KW_MAX) if kw_inc else 0,
            int(nxt is State.SUBSET or stays_in_subset),
        )

    moves = [
        (test, after(state if target is None else target, any(r == "kw_inc" for r in requests)))
        for test, target, requests in table[state]
    ]
    return moves, after(state, False)


def _table(tests, kw, subset):
    return parser_table(
        tests,
        level=Const(1, 1),
        root_seen=Const(0, 1),
        in_subset=Const(subset, 1),
        kw=Const(kw, KW_BITS),
    )


def _blank_tests() -> ByteTests:
    """Byte tests that are all 0: for walking :func:`parser_table`'s branches, not their tests."""
    blank = Const(0, 1)
    return ByteTests(
        ch=lambda text: blank, eq=lambda b: blank, ws=blank, nstart=blank, nchar=blank, upper=blank
    )


#: The requests the attribute conditions follow.
ATTRIBUTE_REQUESTS = ("tag_start", "attr_byte", "attr_end", "val_start", "val_byte", "val_end")
#: The requests the text conditions follow.
TEXT_REQUESTS = ("text_byte", "text_amb", "text_end")
#: The requests whose event needs the name's tag id: a push, and the pop of an end tag (its
#: name is checked against the row it closes).
TAG_REQUESTS = ("push_req", "pop_check")


def tag_event_gap() -> int:
    """The fewest bytes from one tag event (a byte raising one of :data:`TAG_REQUESTS`) to the
    next, over the branches of :func:`parser_table` (every branch taken as possible, so a lower
    bound): 3, ``>`` ``<`` name byte ``>``."""
    table = _table(_blank_tests(), 0, 0)
    moves = {
        s: [
            (
                s if target is None else target,
                any((r[0] if isinstance(r, tuple) else r) in TAG_REQUESTS for r in requests),
            )
            for _, target, requests in branches
        ]
        for s, branches in table.items()
    }
    # to_next[s]: the fewest bytes from state s up to and including the next tag event
    to_next = {s: len(State) + 1 for s in State}
    for _ in State:
        to_next = {
            s: min(1 if tag else 1 + to_next[t] for t, tag in branches)
            for s, branches in moves.items()
        }
    return min(to_next[t] for branches in moves.values() for t, tag in branches if tag)


def tag_decoders(width: int) -> int:
    """The tag decoders a W-byte front end shares among its lanes: one for each tag event a beat
    can hold (W = 2: 1, 4: 2, 8: 3)."""
    return -(-width // tag_event_gap())


def control_states() -> list:
    """Every control state the parser can reach from :data:`INITIAL` (tests ignored)."""
    tests = _blank_tests()
    seen, todo = [INITIAL], [INITIAL]
    while todo:
        control = todo.pop()
        moves, stay = _moves(_table(tests, control[1], control[2]), control)
        for nxt in [nxt for _, nxt in moves] + [stay]:
            if nxt not in seen:
                seen.append(nxt)
                todo.append(nxt)
    return seen


def lane_transitions(m: Module, tests: ByteTests, states: list, name: str) -> list:
    """One byte's transition function over the control states, from :func:`parser_table`: for
    each start state (by index), {next state index: condition on the byte's classes}."""
    index = {c: n for n, c in enumerate(states)}
    tables = {}
    function = []
    for control in states:
        key = control[1:]
        if key not in tables:
            tables[key] = _table(tests, *key)
        moves, stay = _moves(tables[key], control)
        row, earlier = {}, []
        for test, nxt in moves:
            taken = test
            for e in earlier:
                taken = taken & ~e
            row.setdefault(index[nxt], []).append(taken)
            earlier.append(test)
        row.setdefault(index[stay], []).append(~Cat(*earlier).any() if earlier else Const(1, 1))
        function.append({u: Cat(*terms).any() for u, terms in row.items()})
    return wired_function(m, function, name)


def compose(m: Module, first: list, second: list, name: str) -> list:
    """The transition function of ``first`` then ``second``."""
    out = []
    for row in first:
        terms = {}
        for t, a in row.items():
            for u, b in second[t].items():
                terms.setdefault(u, []).append(a & b)
        out.append({u: Cat(*ts).any() for u, ts in terms.items()})
    return wired_function(m, out, name)


def wired_function(m: Module, function: list, name: str, domain: str = "comb") -> list:
    """``function`` with its conditions in one wide Signal, driven in ``domain``."""
    keys = [(c, u) for c, row in enumerate(function) for u in row]
    reg = Signal(len(keys), name=name)
    m.d[domain] += reg.eq(Cat(*(function[c][u] for c, u in keys)))
    out = [{} for _ in function]
    for bit, (c, u) in enumerate(keys):
        out[c][u] = reg[bit]
    return out


def block_start(lane: int) -> int:
    """The first lane of the block of Brent-Kung's up-sweep that ends at ``lane``."""
    return lane + 1 - ((lane + 1) & -(lane + 1))


def apply(state, function: list, n: int):
    """The one-hot control state after ``function`` from the one-hot ``state``."""
    into = [[] for _ in range(n)]
    for c, row in enumerate(function):
        for u, cond in row.items():
            into[u].append(state[c] & cond)
    return Cat(*(Cat(*terms).any() if terms else Const(0, 1) for terms in into))


def _shift_up(t):
    return Cat(Const(1, 1), t[:-1])


def _shift_down(t):
    return Cat(t[1:], Const(0, 1))


def _ones(t):
    return sum(t[k] for k in range(len(t)))


def delayed(m: Module, value, cycles: int, name: str):
    """``value`` as it was ``cycles`` cycles ago (a chain of registers ``name_0``, ...)."""
    for k in range(cycles):
        reg = Signal.like(value, name=f"{name}_{k}")
        m.d.sync += reg.eq(value)
        value = reg
    return value


class LaneClasses:
    """Each lane's byte classes, registered from the nibbles of stage D1 in whichever stage
    asks for them (one flip-flop per test, made on first use, assigned by :meth:`register`
    once the whole front end has asked)."""

    def __init__(self, m: Module, high: list, low: list):
        self.m = m
        self.high = high
        self.low = low
        self.classes = []  # (register, value) of every byte class, registered on first use

    def lanes(self, stage: str, delay: int) -> list:
        """Each lane's byte classes, registered in stage ``stage`` from the nibbles of D1
        ``delay`` cycles before: a namespace of ``registered(key, value)``, ``eq(byte)``,
        ``member(members)`` (the unregistered test, for ``registered``) and the parser's
        :class:`ByteTests` (``tests``)."""
        m, classes = self.m, self.classes
        W = len(self.high)
        nibbles = [
            (
                delayed(m, self.high[i], delay, f"{stage}_high{i}"),
                delayed(m, self.low[i], delay, f"{stage}_low{i}"),
            )
            for i in range(W)
        ]
        lanes = []
        for i, (hi, lo) in enumerate(nibbles):
            made = {}

            def registered(key, value, made=made, i=i):
                if key not in made:
                    made[key] = Signal(name=f"{stage}_byte{i}_{key}")
                    classes.append((made[key], value))
                return made[key]

            def eq(b, hi=hi, lo=lo, registered=registered):
                return registered(f"eq_{b:02x}", hi[b >> 4] & lo[b & 15])

            def member(members, hi=hi, lo=lo):
                return nibble_member(hi, lo, members)

            def test(key, members, registered=registered, member=member):
                return registered(key, member(members))

            tests = ByteTests(
                ch=lambda text, eq=eq: eq(ord(text)),
                eq=eq,
                ws=test("ws", WHITESPACE),
                nstart=test("nstart", NAME_START),
                nchar=test("nchar", NAME_CHAR),
                upper=test("upper", range(ord("A"), ord("Z") + 1)),
            )
            lanes.append(SimpleNamespace(registered=registered, eq=eq, member=member, tests=tests))
        return lanes

    def tests(self, stage: str, delay: int) -> list:
        """Each lane's byte classes as a :class:`ByteTests` (see :meth:`lanes`)."""
        return [lane.tests for lane in self.lanes(stage, delay)]

    def register(self) -> None:
        """Assign every class asked for to its register."""
        self.m.d.sync += [bit.eq(value) for bit, value in self.classes]


class WideByteLayout(data.StructLayout):
    """A beat of the W-byte stream: ``data`` (W bytes, lane 0 first), ``count`` (the bytes in
    the beat with ``last``, 1..W) and ``last`` (the document's final beat)."""

    def __init__(self, width: int):
        self.width = width
        super().__init__({"data": 8 * width, "count": range(width + 1), "last": 1})


class QueueEntry(data.StructLayout):
    """An event waiting for the global stack: ``push``/``pop``/``last`` (document end), ``check``
    (a pop of an end tag: compare its name with the row), ``level`` (a push's new depth, a
    pop's depth before it), ``row`` (the global stack row stage E reads: the depth before
    the event for a push or a pop, else 0; kept so that no subtraction lies between stage E's
    register and the stack's LUT RAM), the name's ``tag`` id and ``hash``, the document's ``errors``
    (only with ``last``; the end-tag mismatch is added in stage F) and, with conditions, a
    push's attribute condition bits ``conds``."""

    def __init__(self, *, tag_width: int, max_depth: int, n_conds: int = 0):
        super().__init__(
            {
                "push": 1,
                "pop": 1,
                "check": 1,
                "last": 1,
                "level": range(max_depth + 1),
                "row": range(max_depth + 1),
                "tag": tag_width,
                "hash": HASH_WIDTH,
                "errors": ErrorFlags,
                **({"conds": n_conds} if n_conds else {}),
            }
        )


class WideFrontEnd(wiring.Component):
    """Beats of W document bytes in, push/pop/doc_end events out (one per cycle at most).

    Members
    -------
    bytes_in : ``In(stream.Signature(WideByteLayout(W)))``
        ``ready`` is always 1: the frame offers a beat only while ``room`` is 1.
    room : ``Out(1)``
        A beat offered to the frame now may be accepted (from registers and ``bytes_in.valid``).
    events, tos
        As :class:`xpfilt.hdl.frontend.FrontEnd`'s.
    """

    def __init__(
        self,
        tags: Sequence[str],
        *,
        width: int,
        max_depth: int = 16,
        max_name: int = 32,
        conditions: Sequence[AttrCondition] = (),
    ):
        self.width = check_bytes_per_cycle(width)
        self.conditions = tuple(conditions)
        self.n_conds = len(self.conditions)
        self.n_text = sum(c.is_text for c in self.conditions)
        self.tags = tuple(tags)
        self.tag_bytes = check_parameters(self.tags, max_depth, max_name)
        self.max_depth = max_depth
        self.max_name = max_name
        self.queue_depth = queue_depth_for(width)
        self.tag_width = tag_width_for(len(self.tags))
        self.event_layout = EventLayout(
            tag_width=self.tag_width, max_depth=max_depth, n_conds=self.n_conds
        )
        super().__init__(
            {
                "bytes_in": In(stream.Signature(WideByteLayout(width))),
                "room": Out(1),
                "events": Out(self.event_layout),
                "tos": Out(range(max_depth + 1)),
            }
        )

    def elaborate(self, platform):
        m = Module()
        m.d.comb += self.bytes_in.ready.eq(1)
        d1 = self._stage_d1(m)
        classes = LaneClasses(m, d1.high, d1.low)
        up = self._stages_x(m, d1, classes)
        s = self._stages_s(m, up)
        o = self._stage_o(m, classes, s, up.levels)
        n = self._stage_n(m, d1, o, up.levels)
        entity = self._references(m, o)
        runs = self._tag_runs(m, o)
        n2 = self._stage_n2(m, n)
        ll = self._stage_l(m, n2)
        depth = self._stage_l2_depth(m, ll)
        taps = self._condition_taps(m, classes, o, up.levels)
        l2 = self._stage_l2(m, ll, n, o)
        l3 = self._stage_l3(m, l2, depth)
        lane_conds = self._attribute_conditions(
            m, taps.lanes, taps.req, l2.valid, l2.last, taps.present
        )
        lane_text = self._text_conditions(
            m, taps.lanes, taps.req, l2.valid, l2.last, taps.present, depth
        )
        l4 = self._stage_l4(m, l3, lane_conds, lane_text)
        mm = self._stage_m(m, o, runs, l4, entity)
        p2 = self._stage_m2(m, mm)
        head = self._queue(m, p2)
        self._room(m, head.occupied, p2.valid)
        e = self._stage_e(m, head)
        self._stage_f(m, e)
        classes.register()
        return m

    def _stage_d1(self, m) -> SimpleNamespace:
        """Stage D1: each lane's byte and its nibbles one-hot; the lanes holding bytes."""
        W = self.width
        valid1 = Signal()
        last1 = Signal()
        lanes1 = Signal(W)
        c1 = [Signal(8, name=f"d1_byte{i}") for i in range(W)]
        high = [Signal(16, name=f"d1_high{i}") for i in range(W)]
        low = [Signal(16, name=f"d1_low{i}") for i in range(W)]
        beat = self.bytes_in.payload
        inp = self.bytes_in.valid
        m.d.sync += [
            valid1.eq(inp),
            last1.eq(inp & beat.last),
            lanes1.eq(Cat(*(inp & (~beat.last | (beat.count > i)) for i in range(W)))),
        ]
        for i in range(W):
            raw = beat.data[8 * i : 8 * i + 8]
            m.d.sync += [
                c1[i].eq(raw),
                high[i].eq(Cat(*(raw[4:] == h for h in range(16)))),
                low[i].eq(Cat(*(raw[:4] == n for n in range(16)))),
            ]
        return SimpleNamespace(valid=valid1, last=last1, lanes=lanes1, byte=c1, high=high, low=low)

    def _stages_x(self, m, d1, classes) -> SimpleNamespace:
        """Stages D2 (the lanes' classes) and X1..Xk: the parallel-prefix parser's up-sweep.
        ``functions[i]`` of the result: the control state after lane i from the one before
        lane :func:`block_start` (i) (lane i ends a block of lowbit(i + 1) lanes)."""
        W = self.width
        k_levels = W.bit_length() - 1
        valids = [d1.valid]  # D1, D2, X1..Xk
        for stage in ["d2"] + [f"x{level + 1}" for level in range(k_levels)]:
            valids.append(Signal(name=f"{stage}_valid"))
            m.d.sync += valids[-1].eq(valids[-2])
        valid_x = valids[-1]
        last_x = delayed(m, d1.last, 1 + k_levels, "last_x")
        lanes_x = delayed(m, d1.lanes, 1 + k_levels, "lanes_x")
        states = control_states()
        index = {c: n for n, c in enumerate(states)}
        functions = [
            lane_transitions(m, tests, states, f"t_lane{i}")
            for i, tests in enumerate(classes.tests("d2", 0))
        ]
        for level in range(k_levels):  # Brent-Kung's up-sweep: the blocks of 2 span lanes
            span = 1 << level
            functions = [
                compose(m, functions[i - span], f, f"c{level + 1}_lane{i}")
                if (i + 1) % (2 * span) == 0
                else f
                for i, f in enumerate(functions)
            ]
            functions = [
                wired_function(m, f, f"x{level + 1}_lane{i}", "sync")
                for i, f in enumerate(functions)
            ]
        return SimpleNamespace(
            valid=valid_x,
            last=last_x,
            lanes=lanes_x,
            states=states,
            index=index,
            functions=functions,
            levels=k_levels,
        )

    def _stages_s(self, m, up) -> SimpleNamespace:
        """Stage S: the control state after each lane of a block from lane 0 (i + 1 a power of
        two; the beat's: the only loop, ``s0``); stages S2..: the down-sweep, the state after
        each other lane from the one before its block, :func:`down_sweep_stages` of them; each
        lane's start state (``starts``, W + 1 of them: the last is the state after the beat),
        registered."""
        W = self.width
        states, functions = up.states, up.functions
        s0 = Signal(len(states), init=1 << up.index[INITIAL])
        after = {-1: s0} | {
            i: apply(s0, f, len(states)) for i, f in enumerate(functions) if block_start(i) == 0
        }
        with m.If(up.valid):
            m.d.sync += s0.eq(Mux(up.last, s0.init, after[W - 1]))
        s_valid, s_last, s_lanes = up.valid, up.last, up.lanes
        for down in range(down_sweep_stages(W) + 1):
            after = {i: delayed(m, a, 1, f"s_{down + 1}_after{i}") for i, a in after.items()}
            s_valid, s_last, s_lanes = (
                delayed(m, x, 1, f"s_{down + 1}_{name}")
                for x, name in ((s_valid, "valid"), (s_last, "last"), (s_lanes, "lanes"))
            )
            if len(after) < W + 1:
                functions = [
                    wired_function(m, f, f"s_{down + 1}_lane{i}", "sync")
                    for i, f in enumerate(functions)
                ]
                after |= {
                    i: apply(after[block_start(i) - 1], f, len(states))
                    for i, f in enumerate(functions)
                    if i not in after and block_start(i) - 1 in after
                }
        starts = [after[i - 1] for i in range(W + 1)]
        return SimpleNamespace(
            valid=s_valid, last=s_last, lanes=s_lanes, states=states, starts=starts
        )

    def _stage_o(self, m, classes, s, k_levels) -> SimpleNamespace:
        """Stage O: each lane's requests (``req[i]``: {name: register}), from its start state:
        the parser's (:data:`BAD_CASES`: ``bad`` for each case of level 0 and root seen) and
        ``text_after`` (the state after the lane is TEXT)."""
        W = self.width
        states, starts = s.states, s.starts
        o_tests = classes.tests("o", k_levels + 1 + down_sweep_stages(W))
        o_valid, o_last, o_lanes = Signal(), Signal(), Signal(W)
        m.d.sync += [o_valid.eq(s.valid), o_last.eq(s.last), o_lanes.eq(s.lanes)]
        REQ = (
            ("push_req", "pop_req", "pop_check", "name_byte", "name_hold")
            + (ATTRIBUTE_REQUESTS if self.n_conds else ())
            + (TEXT_REQUESTS if self.n_text else ())
        )
        requests = REQ + tuple(BAD_CASES.values()) + ("text_after",)
        o_req = [{name: Signal(name=f"o_lane{i}_{name}") for name in requests} for i in range(W)]
        # the lane is an "&" that begins a reference (for _references, not delayed with
        # o_req); the lane begins an attribute-list declaration (``<!A`` in the internal
        # subset), with attribute conditions: their values are undecided
        o_ref_start = [Signal(name=f"o_lane{i}_ref_start") for i in range(W)]
        attlist = bool(AttributeConditions(self.conditions).conditions)
        o_attlist = [Signal(name=f"o_lane{i}_attlist") for i in range(W)] if attlist else None

        def of_states(start, which):
            return Cat(*(start[n] for n, c in enumerate(states) if which(c))).any()

        for i in range(W):
            start = starts[i]
            one_hot = wire(
                m,
                Cat(*(of_states(start, lambda c: c[0] is st) for st in State)),
                f"o_lane{i}_state",
            )
            subset = wire(m, of_states(start, lambda c: c[2]), f"o_lane{i}_subset")
            kw = wire(
                m,
                Cat(*(of_states(start, lambda c: c[1] >> b & 1) for b in range(KW_BITS))),
                f"o_lane{i}_kw",
            )
            for (at_root, seen), case in BAD_CASES.items():
                _, req = parse_byte(
                    m,
                    one_hot,
                    o_tests[i],
                    level=Const(int(not at_root), 1),
                    root_seen=Const(int(seen), 1),
                    in_subset=subset,
                    kw=kw,
                    prefix=f"lane{i}_{case}_",
                )
                m.d.sync += o_req[i][case].eq(req["bad"])
            for name in REQ:
                m.d.sync += o_req[i][name].eq(req[name])
            m.d.sync += o_req[i]["text_after"].eq(
                of_states(starts[i + 1], lambda c: c[0] is State.TEXT)
            )
            m.d.sync += o_ref_start[i].eq(
                Cat(*(one_hot[st.value] for st in REFERENCE_STATES)).any() & o_tests[i].ch("&")
            )
            if o_attlist:
                m.d.sync += o_attlist[i].eq(one_hot[State.SUB_BANG.value] & o_tests[i].ch("A"))
        return SimpleNamespace(
            valid=o_valid,
            last=o_last,
            lanes=o_lanes,
            req=o_req,
            tests=o_tests,
            ref_start=o_ref_start,
            attlist=o_attlist,
        )

    def _references(self, m, o):
        """Stage N: the one-byte front end's reference check
        (:func:`xpfilt.hdl.frontend.reference_step`, one bit per prefix of a predefined
        entity's name) stepped through the lanes from the bits carried from the beat before
        (``ref``, cleared by a document's last beat), so that a reference across lanes and
        beats is decided exactly as one byte at a time. Every bit is its prefix's bit in the
        lane before AND a byte compare, so a chain through the lanes is at most a reference
        long (an "&" and four name bytes), whatever W. Registered: a lane of the beat makes a
        reference undecided (``entity``; one bit: a beat holds bytes of one document)."""
        W = self.width
        steps = reference_steps()
        carried = Signal(len(steps), name="ref")
        prev = {prefix: carried[k] for k, prefix in enumerate(steps)}
        undecided_lanes = []
        for i in range(W):
            eqs: dict = {}

            def eq(b, i=i, eqs=eqs):
                if b not in eqs:  # the lane's byte class of stage O, one cycle on
                    eqs[b] = delayed(m, o.tests[i].eq(b), 1, f"n_lane{i}_eq_{b:02x}")
                return eqs[b]

            nxt, undecided = reference_step(prev, eq, o.ref_start[i])
            undecided_lanes.append(o.lanes[i] & undecided)
            prev = {
                prefix: wire(m, bit, f"n{i + 1}_ref_{prefix.decode() or 'start'}")
                for prefix, bit in nxt.items()
            }
        with m.If(o.valid):
            m.d.sync += carried.eq(Mux(o.last, 0, Cat(*prev.values())))
        flag = Signal(name="n_entity")
        m.d.sync += flag.eq(Cat(*undecided_lanes).any())
        return flag

    def _stage_n(self, m, d1, o, k_levels) -> SimpleNamespace:
        """Stage N: the lanes' prefixes of the depth, name position and hash steps (``prefix[i]``:
        the registers of lanes 0..i), registered."""
        W = self.width
        o_req = o.req
        n_valid, n_last = Signal(), Signal()
        m.d.sync += [n_valid.eq(o.valid), n_last.eq(o.last)]
        byte = [
            delayed(m, d1.byte[i], k_levels + 3 + down_sweep_stages(W), f"n_byte{i}")
            for i in range(W)
        ]
        push = [r["push_req"] for r in o_req]
        pop = [r["pop_req"] for r in o_req]
        nb = [r["name_byte"] for r in o_req]
        hold = [r["name_hold"] for r in o_req]
        # before lane i: the depth steps of lanes < i as v -> min(max(v + A, LO), VMAX - HD)
        # (v: level + excess); the name bytes since the last name reset (cnt) and whether one
        # happened (reset); any push; the hash of lanes < i from 0 (the rest is linear in
        # the hash before lane 0)
        powers_of = [
            [wire(m, hash_power(byte[i], e), f"n_byte{i}_L{e}") for e in range(W + 1)]
            for i in range(W)
        ]  # L^e(byte) for e = 0..W, each lane
        lo = hd = cnt = Const(0, W)
        reset, any_push = Const(0, 1), Const(0, 1)
        prefix = []
        for i in range(W):
            lo = wire(
                m,
                Mux(push[i], _shift_up(lo), Mux(pop[i], _shift_down(lo), lo)),
                f"n{i + 1}_lo_therm",
            )
            hd = wire(
                m,
                Mux(pop[i], _shift_up(hd), Mux(push[i], _shift_down(hd), hd)),
                f"n{i + 1}_hd_therm",
            )
            cnt = wire(m, Mux(nb[i], _shift_up(cnt), Mux(hold[i], cnt, 0)), f"n{i + 1}_cnt_therm")
            reset = reset | ~(nb[i] | hold[i])
            any_push = any_push | push[i]
            # the hash of lanes < i + 1 from 0: each name byte j with no name reset after it
            # adds L^e(byte j), e = the name bytes from j on (L: the linear hash step)
            terms = []
            for j in range(i + 1):
                alive = Cat(*(nb[q] | hold[q] for q in range(j + 1, i + 1))).all()
                later = [nb[q] for q in range(j + 1, i + 1)]
                for e in range(1, i - j + 2):
                    exactly = (sum(later) == e - 1) if later else Const(e == 1, 1)
                    terms.append(Mux(nb[j] & alive & exactly, powers_of[j][e], 0))
            stuff = wire(m, reduce(xor, terms), f"n{i + 1}_hash")
            regs_i = {
                "A": Signal(range(-W, W + 1), name=f"n{i + 1}_A"),
                "LO": Signal(range(W + 1), name=f"n{i + 1}_LO"),
                "HD": Signal(range(W + 1), name=f"n{i + 1}_HD"),
                "cnt": Signal(range(W + 1), name=f"n{i + 1}_cnt"),
                "reset": Signal(name=f"n{i + 1}_reset"),
                "any_push": Signal(name=f"n{i + 1}_any_push"),
                "stuff": Signal(HASH_WIDTH, name=f"n{i + 1}_stuff"),
            }
            m.d.sync += [
                regs_i["A"].eq(sum(push[: i + 1]) - sum(pop[: i + 1])),
                regs_i["LO"].eq(_ones(lo)),
                regs_i["HD"].eq(_ones(hd)),
                regs_i["cnt"].eq(_ones(cnt)),
                regs_i["reset"].eq(reset),
                regs_i["any_push"].eq(any_push),
                regs_i["stuff"].eq(stuff),
            ]
            prefix.append(regs_i)
        return SimpleNamespace(valid=n_valid, last=n_last, byte=byte, prefix=prefix)

    def _tag_runs(self, m, o) -> SimpleNamespace:
        """Stage N, for the shared tag decoders (stage M) and their lanes: a run of name bytes
        and held lanes closes at the first lane that does neither (a name restart); the run of
        a lane j goes to decoder k if it closes at a tag event, the k-th of the beat, else to
        none (or, if it does not close in the beat, to the name carried into the next beat).
        Registered: ``first`` (the run before the beat goes to decoder 0), ``runs[k]`` (the
        lanes of decoder k), ``tsel[i]`` (the decoder of lane i's event), ``open`` (the lanes
        whose run is carried into the next beat)."""
        W = self.width
        o_req = o.req
        nb = [r["name_byte"] for r in o_req]
        hold = [r["name_hold"] for r in o_req]
        K = tag_decoders(W)
        restart = [~(nb[j] | hold[j]) for j in range(W)]
        tag_ev = [restart[j] & Cat(*(o_req[j][r] for r in TAG_REQUESTS)).any() for j in range(W)]
        n_first = Signal(name="n_first")  # the run before the beat goes to decoder 0
        n_runs = [Signal(W, name=f"n_dec{k}_lanes") for k in range(K)]
        n_tsel = [Signal(K, name=f"n_lane{i}_dec") for i in range(W)]  # its event's decoder
        n_open = Signal(W, name="n_open")  # the lane's run is carried into the next beat
        closes_at_event = []
        for j in range(W):
            ends = [tag_ev[c] & ~Cat(Const(0, 1), *restart[j:c]).any() for c in range(j, W)]
            closes_at_event.append(Cat(*ends).any())
        m.d.sync += [
            n_first.eq(closes_at_event[0]),
            n_open.eq(Cat(*(~Cat(*restart[j:]).any() for j in range(W)))),
        ]
        for k in range(K):
            m.d.sync += n_runs[k].eq(
                Cat(*(closes_at_event[j] & (sum(tag_ev[:j]) == k) for j in range(W)))
            )
        for i in range(W):
            m.d.sync += n_tsel[i].eq(Cat(*(tag_ev[i] & (sum(tag_ev[:i]) == k) for k in range(K))))
        return SimpleNamespace(first=n_first, runs=n_runs, tsel=n_tsel, open=n_open)

    def _limits(self) -> tuple:
        """The largest level + excess (``v_max``) and name position (``p_max``)."""
        return self.max_depth + (1 << EXCESS_WIDTH) - 1, self.max_name + 1

    def _stage_n2(self, m, n) -> SimpleNamespace:
        """Stage N2: each lane's bounds on the depth before the beat (no loop), registered."""
        W = self.width
        n2_valid, n2_last = Signal(), Signal()
        m.d.sync += [n2_valid.eq(n.valid), n2_last.eq(n.last)]
        v_max, p_max = self._limits()
        bounds = []
        for i, p in enumerate(n.prefix):
            # v -> min(max(v + A, LO), TOP) is LO for v < below, TOP for v > above, else v + A
            b = {
                "A": Signal(range(-W, W + 1), name=f"n2_{i + 1}_A"),
                "LO": Signal(range(W + 1), name=f"n2_{i + 1}_LO"),
                "TOP": Signal(range(v_max + 1), name=f"n2_{i + 1}_TOP"),
                "below": Signal(range(-W, 2 * W + 1), name=f"n2_{i + 1}_below"),
                "above": Signal(range(v_max - 2 * W, v_max + W + 1), name=f"n2_{i + 1}_above"),
                "cnt": Signal(range(W + 1), name=f"n2_{i + 1}_cnt"),
                # the name position: cnt clamped (after a reset), and the most pos0 may be
                # for pos0 + cnt not to be clamped (a compare beside the add, not after it)
                "fresh": Signal(range(p_max + 1), name=f"n2_{i + 1}_fresh"),
                "room": Signal(range(-W, p_max + 1), name=f"n2_{i + 1}_room"),
                "reset": Signal(name=f"n2_{i + 1}_reset"),
                "carry": Signal(i + 2, name=f"n2_{i + 1}_carry"),
                "any_push": Signal(name=f"n2_{i + 1}_any_push"),
                "stuff": Signal(HASH_WIDTH, name=f"n2_{i + 1}_stuff"),
            }
            m.d.sync += [
                b["A"].eq(p["A"]),
                b["LO"].eq(p["LO"]),
                b["TOP"].eq(v_max - p["HD"]),
                b["below"].eq(p["LO"] - p["A"]),
                b["above"].eq(v_max - p["HD"] - p["A"]),
                b["cnt"].eq(p["cnt"]),
                b["reset"].eq(p["reset"]),
                b["fresh"].eq(Mux(p["cnt"] > p_max, p_max, p["cnt"])),
                b["room"].eq(p_max - p["cnt"]),
                # one-hot: the hash before the beat takes e more steps (none: reset)
                b["carry"].eq(Cat(*(~p["reset"] & (p["cnt"] == e) for e in range(i + 2)))),
                b["any_push"].eq(p["any_push"]),
                b["stuff"].eq(p["stuff"]),
            ]
            bounds.append(b)
        return SimpleNamespace(valid=n2_valid, last=n2_last, bounds=bounds)

    def _stage_l(self, m, n2) -> SimpleNamespace:
        """Stage L: the depth after the beat (loop ``v0``, through the beat's bounds alone), the
        name position, hash and root seen before each lane and after the beat (loops ``pos0``,
        ``h0``, ``root0``), registered; the depth before the beat and the lanes' bounds
        registered for stage L2 (so that ``v0`` drives one clamp, not one per lane)."""
        W = self.width
        bounds = n2.bounds
        l_valid, l_last = Signal(), Signal()
        m.d.sync += [l_valid.eq(n2.valid), l_last.eq(n2.last)]
        v_max, p_max = self._limits()
        v0 = Signal(range(v_max + 1))
        pos0 = Signal(range(p_max + 1))
        h0 = Signal(HASH_WIDTH, init=HASH_INIT)
        root0 = Signal()

        def clamp(v, b, name):
            """min(max(v + A, LO), TOP) from the bounds ``b`` (stage N2's), in a Signal."""
            return wire(
                m, Mux(v < b["below"], b["LO"], Mux(v > b["above"], b["TOP"], v + b["A"])), name
            )

        powers = [wire(m, hash_power(h0, e), f"l_power{e}") for e in range(W + 1)]
        pos, h, root = [pos0], [h0], [root0]
        for i, b in enumerate(bounds):
            pi = Signal(range(p_max + 1), name=f"l{i + 1}_pos")
            m.d.comb += pi.eq(
                Mux(b["reset"], b["fresh"], Mux(pos0 > b["room"], p_max, pos0 + b["cnt"]))
            )
            carried = reduce(
                lambda x, y: x | y, [Mux(b["carry"][e], powers[e], 0) for e in range(i + 2)]
            )
            hi = wire(m, b["stuff"] ^ carried, f"l{i + 1}_hash")
            pos.append(pi)
            h.append(hi)
            root.append(root0 | b["any_push"])
        v_after = clamp(v0, bounds[W - 1], f"l{W}_v")
        with m.If(n2.valid):
            with m.If(n2.last):
                m.d.sync += [v0.eq(0), pos0.eq(0), h0.eq(h0.init), root0.eq(0)]
            with m.Else():
                m.d.sync += [v0.eq(v_after), pos0.eq(pos[W]), h0.eq(h[W]), root0.eq(root[W])]
        l_v0 = Signal(range(v_max + 1), name="l_v0")  # the depth before the beat
        l_vW = Signal(range(v_max + 1), name=f"l_v{W}")  # and after it
        m.d.sync += [l_v0.eq(v0), l_vW.eq(v_after)]
        # each lane's clamp for stage L2 in parts: its compares and sum from v0 and stage
        # N2's bounds, registered beside l_v0 (the same values as from l_v0 and the bounds
        # registered), so that stage L2 only chooses (the compares after l_v0 were critical
        # at 136.0 MHz, RTL 3b2cecfbb507)
        l_clamps = [
            {
                k: delayed(m, wire(m, value, f"l_{i + 1}_{k}_in"), 1, f"l_{i + 1}_{k}")
                for k, value in (
                    ("low", v0 < b["below"]),
                    ("high", v0 > b["above"]),
                    ("sum", v0 + b["A"]),
                    ("LO", b["LO"]),
                    ("TOP", b["TOP"]),
                )
            }
            for i, b in enumerate(bounds[: W - 1])
        ]
        l_pos = [Signal(range(p_max + 1), name=f"l_pos{i}") for i in range(W)]
        l_hash = [Signal(HASH_WIDTH, name=f"l_hash{i}") for i in range(W)]
        l_root = [Signal(name=f"l_root{i}") for i in range(W + 1)]
        m.d.sync += [
            reg.eq(value)
            for regs, values in ((l_pos, pos), (l_hash, h), (l_root, root))
            for reg, value in zip(regs, values)
        ]
        return SimpleNamespace(
            valid=l_valid,
            last=l_last,
            v0=l_v0,
            vW=l_vW,
            clamps=l_clamps,
            pos=l_pos,
            hash=l_hash,
            root=l_root,
        )

    def _stage_l2_depth(self, m, ll) -> list:
        """Stage L2, the depth part: level + excess before each lane (and after the beat, W + 1
        of them), from the depth before the beat, registered."""
        W = self.width
        return (
            [delayed(m, ll.v0, 1, "l2_v0")]
            + [
                delayed(
                    m,
                    wire(
                        m,
                        Mux(c["low"], c["LO"], Mux(c["high"], c["TOP"], c["sum"])),
                        f"l2_{i + 1}_v",
                    ),
                    1,
                    f"l2_v{i + 1}",
                )
                for i, c in enumerate(ll.clamps)
            ]
            + [delayed(m, ll.vW, 1, f"l2_v{W}")]
        )

    def _condition_taps(self, m, classes, o, k_levels) -> SimpleNamespace:
        """The inputs of stages C and T (beside L3), with conditions only: each lane's byte
        classes (``lanes``) and requests (``req``) of stage L2, and the lanes holding bytes
        (``present``); all None without conditions."""
        W = self.width
        if self.n_conds:
            c_lanes = classes.lanes("c", k_levels + 6 + down_sweep_stages(W))
            c_req = [
                {name: delayed(m, sig, 4, f"c_lane{i}_{name}") for name, sig in r.items()}
                for i, r in enumerate(o.req)
            ]
            c_present = delayed(m, o.lanes, 4, "c_lanes")
        else:
            c_lanes = c_req = c_present = None
        return SimpleNamespace(lanes=c_lanes, req=c_req, present=c_present)

    def _stage_l2(self, m, ll, n, o) -> SimpleNamespace:
        """Stage L2, the tag CAM's read and each lane's name flags (``lane[i]``: ``root``,
        ``root_after``, ``long``, ``hash``), registered. The CAM is two ROMs (block RAM), row
        (name position q, name ended e, nibble x): for every tag, whether its byte at q has
        that high (low) nibble (e = 0), or whether it is q bytes long (e = 1: a lane that is no
        name byte reads the length row of its position, so the decoders check a name's length
        as one more byte); positions from max_len + 1 match none (one copy for every two lanes:
        a block RAM has two read ports). ``cam_read``: the ROMs' read ports, high nibble
        first, one per lane."""
        W = self.width
        n_tags = len(self.tag_bytes)
        max_len = max((len(t) for t in self.tag_bytes), default=0)
        l2_valid, l2_last = Signal(), Signal()
        m.d.sync += [l2_valid.eq(ll.valid), l2_last.eq(ll.last)]
        cam_byte = [delayed(m, n.byte[i], 3, f"l_byte{i}") for i in range(W)]
        cam_read = []
        if n_tags:
            ended = [
                ~delayed(m, o.req[i]["name_byte"], 3, f"l_lane{i}_name_byte") for i in range(W)
            ]
            for shift in (4, 0):
                rows = [
                    sum(
                        1 << j
                        for j, t in enumerate(self.tag_bytes)
                        if (len(t) == q if e else q < len(t) and t[q] >> shift & 15 == x)
                    )
                    for q in range(max_len + 2)
                    for e in (0, 1)
                    for x in range(16)
                ]
                ports = []
                for pair in range(0, W, 2):
                    m.submodules[f"cam_{'high' if shift else 'low'}{pair // 2}"] = rom = (
                        RegisteredROM(rows, width=n_tags, ports=min(2, W - pair))
                    )
                    ports += list(rom.read)
                for i, port in enumerate(ports):
                    at = Mux(ll.pos[i] > max_len + 1, max_len + 1, ll.pos[i])
                    m.d.comb += port.addr.eq(Cat(cam_byte[i][shift : shift + 4], ended[i], at))
                cam_read.append(ports)
        lane = []
        for i in range(W):
            regs_i = {
                "root": Signal(name=f"l2_lane{i}_root"),
                "root_after": Signal(name=f"l2_lane{i}_root_after"),
                "long": Signal(name=f"l2_lane{i}_long"),
                "hash": Signal(HASH_WIDTH, name=f"l2_lane{i}_hash"),
            }
            m.d.sync += [
                regs_i["root"].eq(ll.root[i]),
                regs_i["root_after"].eq(ll.root[i + 1]),
                regs_i["long"].eq(ll.pos[i] >= self.max_name),
                regs_i["hash"].eq(ll.hash[i]),
            ]
            lane.append(regs_i)
        return SimpleNamespace(valid=l2_valid, last=l2_last, cam_read=cam_read, lane=lane)

    def _stage_l3(self, m, l2, depth) -> SimpleNamespace:
        """Stage L3: each lane's two CAM rows (the ROMs' output registers, in the block RAMs on
        the ECP5: hdl/bram.py), ANDed (``ok``), and its depth flags; the rest one cycle on."""
        max_depth = self.max_depth
        n_tags = len(self.tag_bytes)
        lane = l2.lane
        l3_valid, l3_last = Signal(), Signal()
        m.d.sync += [l3_valid.eq(l2.valid), l3_last.eq(l2.last)]
        for i, regs_i in enumerate(lane):
            for key, reg in list(regs_i.items()):
                regs_i[key] = delayed(m, reg, 1, f"l3_lane{i}_{key}")
            rows = [read[i].data for read in l2.cam_read]
            regs_i["ok"] = rows[0] & rows[1] if n_tags else Const(0, 1)
            vi = depth[i]
            level = Signal(range(max_depth + 1), name=f"l3_lane{i}_level")
            m.d.sync += level.eq(Mux(vi > max_depth, max_depth, vi))
            regs_i["level"] = level
            flags = {
                "at_max": vi >= max_depth,
                "ex_zero": vi <= max_depth,
                "v_zero": vi == 0,
                "nonzero_after": depth[i + 1] != 0,
            }
            for key, value in flags.items():
                regs_i[key] = delayed(m, value, 1, f"l3_lane{i}_{key}")
        return SimpleNamespace(valid=l3_valid, last=l3_last, lane=lane)

    def _stage_l4(self, m, l3, lane_conds, lane_text) -> SimpleNamespace:
        """Stage L4: each lane's CAM result, registered, so that the decoders' AND trees start
        at fabric registers, not at the block RAMs; the rest and the bits of stages C and T
        (``conds``, ``text``: per lane, (bits, undecided)) one cycle on."""
        l4_valid, l4_last = Signal(), Signal()
        m.d.sync += [l4_valid.eq(l3.valid), l4_last.eq(l3.last)]
        lane = [
            {key: delayed(m, reg, 1, f"l4_lane{i}_{key}") for key, reg in regs_i.items()}
            for i, regs_i in enumerate(l3.lane)
        ]
        m_conds, m_text = (
            [
                (delayed(m, bits, 1, f"l4_{kind}{i}"), delayed(m, undec, 1, f"l4_{kind}{i}_undec"))
                for i, (bits, undec) in enumerate(lanes)
            ]
            for kind, lanes in (("conds", lane_conds), ("text", lane_text))
        )
        return SimpleNamespace(valid=l4_valid, last=l4_last, lane=lane, conds=m_conds, text=m_text)

    def _stage_m(self, m, o, runs, l4, entity) -> SimpleNamespace:
        """Stage M: the shared tag decoders (``dec[k]``: the tags decoder k's name may be;
        loop: ``match0``, the name carried into the beat) and each lane's event without its
        tag (:meth:`_lane_events`), registered (``m2_*``, with each lane's decoder)."""
        W = self.width
        K = tag_decoders(W)
        n_tags = len(self.tag_bytes)
        lane = l4.lane
        m_lanes = delayed(m, o.lanes, 6, "m_lanes")
        m_req = [
            {name: delayed(m, sig, 6, f"m_lane{i}_{name}") for name, sig in r.items()}
            for i, r in enumerate(o.req)
        ]
        m_first = delayed(m, runs.first, 5, "m_first")
        m_runs = [delayed(m, run, 5, f"m_dec{k}_lanes") for k, run in enumerate(runs.runs)]
        m_open = delayed(m, runs.open, 5, "m_open")
        m_tsel = [delayed(m, sel, 5, f"m_lane{i}_dec") for i, sel in enumerate(runs.tsel)]
        everything = (1 << max(1, n_tags)) - 1
        match0 = Signal(max(1, n_tags), init=everything)  # the name carried into the beat
        # decoder k: the tags its name may be, the CAM rows (the name's bytes, then its length)
        # of the lanes of its run ANDed (and match0 if its run began before the beat); a lane
        # of decoder k has k tag events before it, so it is at least (k - 1) gap + 1
        dec = [Signal(max(1, n_tags), name=f"dec{k}_tags") for k in range(K)]
        if n_tags:
            for k, lanes in enumerate(m_runs):
                lowest = max(0, (k - 1) * tag_event_gap() + 1)
                terms = [Mux(lanes[j], lane[j]["ok"], everything) for j in range(lowest, W)]
                if k == 0:
                    terms.append(Mux(m_first, match0, everything))
                m.d.sync += dec[k].eq(reduce(lambda x, y: x & y, terms))
            carried = reduce(
                lambda x, y: x & y, [Mux(m_open[j], lane[j]["ok"], everything) for j in range(W)]
            )
            carried = wire(m, carried, "m_carried")
        else:
            carried = match0.init
        sticky = Signal(ErrorFlags)  # errors of the document's earlier beats
        # the beat's entity flag with lane 0's errors (present in every beat)
        m_entity = [delayed(m, entity, 5, "m_entity")] + [Const(0, 1)] * (W - 1)
        m_attlist = [
            delayed(m, a, 6, f"m_lane{i}_attlist") if o.attlist else Const(0, 1)
            for i, a in enumerate(o.attlist or [None] * W)
        ]
        events = self._lane_events(m, m_req, m_lanes, l4, m_entity, m_attlist)
        doc_errors = Signal(ErrorFlags)
        m.d.comb += doc_errors.eq(
            sticky.as_value() | events.found | Cat(*(e & u for e, u in events.ends)).any()
        )
        with m.If(l4.valid):
            with m.If(l4.last):
                m.d.sync += [match0.eq(match0.init), sticky.eq(0)]
            with m.Else():
                m.d.sync += [
                    match0.eq(Mux(m_open[0], match0 & carried, carried)),
                    sticky.eq(sticky.as_value() | events.found),
                ]
        records, has = events.records, events.has
        m2_valid = Signal()
        m2_has = Signal(W)
        m2_records = [Signal(self._entry_layout(), name=f"m2_event{i}") for i in range(W)]
        m2_offset = [Signal(range(W), name=f"m2_offset{i}") for i in range(W)]
        m.d.sync += [m2_offset[i].eq(sum(has[:i])) for i in range(1, W)]
        m.d.sync += [m2_valid.eq(l4.valid), m2_has.eq(Mux(l4.valid, Cat(*has), 0))]
        for i in range(W):
            m.d.sync += m2_records[i].eq(records[i])
            m.d.sync += m2_records[i].errors.eq(Mux(records[i].last, doc_errors, 0))
        m2_tsel = [delayed(m, sel, 1, f"m2_lane{i}_dec") for i, sel in enumerate(m_tsel)]
        return SimpleNamespace(
            valid=m2_valid, has=m2_has, records=m2_records, offset=m2_offset, tsel=m2_tsel, dec=dec
        )

    def _entry_layout(self) -> QueueEntry:
        return QueueEntry(tag_width=self.tag_width, max_depth=self.max_depth, n_conds=self.n_conds)

    def _lane_events(self, m, m_req, m_lanes, l4, m_entity, m_attlist) -> SimpleNamespace:
        """Stage M, per lane: its event as a queue entry without its tag (``records[i]``), that
        it has one (``has[i]``), the errors of the beat (``found``) and per lane (the document
        ends in it, the document is left unfinished) (``ends``)."""
        W = self.width
        lane, m_conds, m_text = l4.lane, l4.conds, l4.text
        entry_layout = self._entry_layout()
        records, has, founds, ends = [], [], [], []
        for i in range(W):
            r, li = m_req[i], lane[i]
            do_push = r["push_req"] & ~li["at_max"]
            overflow = r["push_req"] & li["at_max"]
            do_pop = r["pop_req"] & li["ex_zero"] & ~li["v_zero"]
            underflow = r["pop_req"] & li["v_zero"]
            bad = Mux(
                li["v_zero"],
                Mux(li["root"], r["bad_both"], r["bad_root"]),
                Mux(li["root"], r["bad_seen"], r["bad"]),
            )
            found = Signal(ErrorFlags, name=f"lane{i}_found")
            m.d.comb += [
                found.malformed.eq(bad | underflow),
                found.depth_overflow.eq(overflow),
                found.name_too_long.eq(r["name_byte"] & li["long"]),
                found.entity.eq(m_entity[i]),
            ]
            if self.n_conds:
                m.d.comb += found.value_undecided.eq(m_conds[i][1] | m_text[i][1] | m_attlist[i])
            here = m_lanes[i]
            end = Signal(name=f"lane{i}_end")  # the document's final byte
            m.d.comb += end.eq(here & l4.last & (~m_lanes[i + 1] if i + 1 < W else 1))
            unfinished = ~r["text_after"] | li["nonzero_after"] | ~li["root_after"]
            rec = Signal(entry_layout, name=f"lane{i}_event")  # its tag: in stage M2
            m.d.comb += [
                rec.push.eq(do_push),
                rec.pop.eq(do_pop),
                rec.last.eq(end),
                rec.check.eq(r["pop_check"]),
                rec.level.eq(Mux(do_push, li["level"] + 1, Mux(do_pop, li["level"], 0))),
                rec.row.eq(Mux(do_push | do_pop, li["level"], 0)),
                rec.hash.eq(li["hash"]),
            ]
            if self.n_conds:
                # a push: its attribute bits; a push or a pop: the text bits since the event
                # before (stage F puts them in the text stack)
                m.d.comb += rec.conds.eq(
                    Mux(do_push, m_conds[i][0], 0) | Mux(do_push | do_pop, m_text[i][0], 0)
                )
            records.append(rec)
            has.append(here & (do_push | do_pop | end))
            founds.append(Mux(here, found.as_value(), 0))
            ends.append((end, unfinished))
        found_all = reduce(lambda a, b: a | b, founds)
        return SimpleNamespace(records=records, has=has, found=found_all, ends=ends)

    def _stage_m2(self, m, mm) -> SimpleNamespace:
        """Stage M2: each decoder's tag id (a name is at most one tag), each tag event's from
        its decoder; the lanes' events registered for stage P2 (``p2_*``)."""
        W = self.width
        n_tags = len(self.tag_bytes)
        ids = [
            Cat(
                *(
                    Cat(*(tags[j] for j in range(n_tags) if (j + 1) >> bit & 1)).any()
                    for bit in range(self.tag_width)
                )
            )
            if n_tags
            else Const(0, self.tag_width)
            for tags in mm.dec
        ]
        p2_valid = Signal()
        p2_has = Signal(W)
        p2_records = [Signal(self._entry_layout(), name=f"p2_event{i}") for i in range(W)]
        p2_offset = [Signal(range(W), name=f"p2_offset{i}") for i in range(W)]
        m.d.sync += [p2_offset[i].eq(mm.offset[i]) for i in range(1, W)]
        m.d.sync += [p2_valid.eq(mm.valid), p2_has.eq(mm.has)]
        for i in range(W):
            m.d.sync += p2_records[i].eq(mm.records[i])
            m.d.sync += p2_records[i].tag.eq(
                reduce(
                    lambda x, y: x | y,
                    [Mux(mm.tsel[i][k], tag_id, 0) for k, tag_id in enumerate(ids)],
                )
            )
        return SimpleNamespace(valid=p2_valid, has=p2_has, records=p2_records, offset=p2_offset)

    def _queue(self, m, p2) -> SimpleNamespace:
        """Stage P2 writes its events into the event queue in lane order: W banks (LUT RAM),
        position p in bank p mod W, row p // W. The oldest entry (``entry``) goes on when
        ``take`` (not in the cycle after a document end); ``occupied``: the entries queued."""
        W = self.width
        entry_layout = self._entry_layout()
        Q = self.queue_depth
        rows = Q // W
        head_bank = Signal(range(W))
        head_row = Signal(range(rows))
        tail_bank = Signal(range(W))
        tail_row = Signal(range(rows))
        occupied = Signal(range(Q + 1))
        after_end = Signal()
        head_entry = Signal(entry_layout)
        reads = []
        for b in range(W):
            m.submodules[f"queue_bank{b}"] = bank = Memory(shape=entry_layout, depth=rows, init=[])
            write, read = bank.write_port(), bank.read_port(domain="comb")
            k = Signal(range(W), name=f"bank{b}_k")  # its record among the added
            m.d.comb += [
                k.eq(b - tail_bank),
                read.addr.eq(head_row),
                write.addr.eq(
                    Mux(b < tail_bank, Mux(tail_row == rows - 1, 0, tail_row + 1), tail_row)
                ),
            ]
            chosen = [p2.has[i] & (p2.offset[i] == k) for i in range(W)]
            m.d.comb += [
                write.en.eq(Cat(*chosen).any()),
                write.data.eq(
                    reduce(
                        lambda x, y: x | y,
                        [Mux(c, p2.records[i].as_value(), 0) for i, c in enumerate(chosen)],
                    )
                ),
            ]
            reads.append(read.data)
        with m.Switch(head_bank):
            for b in range(W):
                with m.Case(b):
                    m.d.comb += head_entry.eq(reads[b])
        added = Signal(range(W + 1))
        m.d.comb += added.eq(sum(p2.has[i] for i in range(W)))
        take = Signal()
        m.d.comb += take.eq((occupied != 0) & ~after_end)
        new_tail = Signal(range(2 * W))
        m.d.comb += new_tail.eq(tail_bank + added)
        next_occupied = occupied + added - take
        m.d.sync += [
            tail_bank.eq(new_tail[: len(tail_bank)] if W > 1 else 0),
            occupied.eq(next_occupied),
            after_end.eq(take & head_entry.last),
        ]
        with m.If(new_tail >= W):
            m.d.sync += tail_row.eq(Mux(tail_row == rows - 1, 0, tail_row + 1))
        with m.If(take):
            m.d.sync += head_bank.eq(head_bank + 1)
            with m.If(head_bank == W - 1):
                m.d.sync += head_row.eq(Mux(head_row == rows - 1, 0, head_row + 1))
        return SimpleNamespace(entry=head_entry, take=take, occupied=occupied)

    def _room(self, m, occupied, p2_valid) -> None:
        """``room``: occupied + W (the beats in D1..P2 + the one on bytes_in + 1) <= Q, from
        two flags registered a cycle ahead with the load of the cycle before (the queued
        events and W for each beat in D1..P2 or on bytes_in), an upper bound on the load they
        are used in (a beat's events only move from the stages into the queue, at most W of
        them, and ``take`` only lowers it), so that neither ``take`` nor the events added lie
        on the way from ``occupied`` to ``ready``; the load without the beat on bytes_in,
        compared with the bounds for both cases, so that ``bytes_in.valid`` only chooses
        between compares (it came through the add: 8.1 ns, critical, RTL 72269ec8cb4d)."""
        W = self.width
        Q = self.queue_depth
        before_queue = 2 + wide_parser_stages(W)  # D1, D2, .., P2
        in_flight = Signal(range(before_queue + 1), name="in_flight")  # beats in D1..P2
        load = Signal(range(Q + W * before_queue + 1), name="load")
        m.d.comb += load.eq(occupied + W * in_flight)
        fits = [None] + [wire(m, load <= Q - k * W, f"load_fits{k}") for k in (1, 2, 3)]
        room_idle, room_busy = Signal(init=1, name="room_idle"), Signal(init=1, name="room_busy")
        m.d.sync += [
            in_flight.eq(in_flight + self.bytes_in.valid - p2_valid),
            room_idle.eq(Mux(self.bytes_in.valid, fits[2], fits[1])),
            room_busy.eq(Mux(self.bytes_in.valid, fits[3], fits[2])),
        ]
        m.d.comb += self.room.eq(Mux(self.bytes_in.valid, room_busy, room_idle))

    def _stage_e(self, m, head) -> SimpleNamespace:
        """Stage E: the global stack row of the level before the event is read (``row``); a
        push writes its row."""
        e = Signal(self._entry_layout())
        e_valid = Signal()
        m.d.sync += [e_valid.eq(head.take), e.eq(Mux(head.take, head.entry.as_value(), 0))]
        m.submodules.stack = stack = Memory(
            shape=StackEntry(tag_width=self.tag_width), depth=self.max_depth + 1, init=[]
        )
        row = stack.read_port(domain="comb")
        push_port = stack.write_port()
        m.d.comb += [
            row.addr.eq(e.row),
            push_port.addr.eq(e.level),
            push_port.data.tag.eq(e.tag),
            push_port.data.hash.eq(e.hash),
            push_port.en.eq(e.push),
        ]
        return SimpleNamespace(entry=e, valid=e_valid, row=row)

    def _stage_f(self, m, e) -> None:
        """Stage F: the end-tag check, the ``events`` register and ``tos``."""
        f = Signal(self._entry_layout())
        f_valid = Signal()
        f_row = Signal(StackEntry(tag_width=self.tag_width))
        m.d.sync += [f_valid.eq(e.valid), f.eq(e.entry), f_row.eq(e.row.data)]
        mismatch = f.pop & f.check & ((f_row.tag != f.tag) | (f_row.hash != f.hash))
        mismatched = Signal()
        tos = Signal.like(self.tos)
        m.d.comb += self.tos.eq(tos)
        ev = Signal(self.event_layout)
        m.d.comb += [
            ev.push.eq(f.push),
            ev.pop.eq(f.pop),
            ev.tag.eq(Mux(f.push, f.tag, 0)),
            ev.parent.eq(Mux(f.push, f_row.tag, 0)),
            ev.level.eq(f.level),
            ev.doc_end.eq(f.last),
            ev.errors.eq(f.errors),
            ev.errors.malformed.eq(f.errors.malformed | (f.last & (mismatched | mismatch))),
        ]
        if self.n_conds:
            self._text_rows(m, f, f_valid, ev)
        m.d.sync += self.events.eq(ev)
        with m.If(f_valid):
            m.d.sync += mismatched.eq(~f.last & (mismatched | mismatch))
            with m.If(f.last):
                m.d.sync += tos.eq(0)
            with m.Elif(f.push):
                m.d.sync += tos.eq(f.level)
            with m.Elif(f.pop):
                m.d.sync += tos.eq(f.level - 1)

    def _text_rows(self, m, f, f_valid, ev) -> None:
        """Stage F's condition bits: the text bits per open element (registers, by level): a
        push ORs the text bits since the event before into its parent's row and zeroes its
        own, a pop reads its row with those bits, a document's end zeroes every row."""
        max_depth = self.max_depth
        texts = TextConditions(self.conditions)
        text_mask = texts.full(Const(-1, max(1, self.n_text)))
        rows = [Signal(self.n_conds, name=f"text_row{level}") for level in range(max_depth + 1)]
        row_of = Signal(self.n_conds)
        with m.Switch(f.level):
            for level, r in enumerate(rows):
                with m.Case(level):
                    m.d.comb += row_of.eq(r)
        m.d.comb += ev.conds.eq(
            Mux(f.push, f.conds & ~text_mask, 0) | Mux(f.pop, (row_of | f.conds) & text_mask, 0)
        )
        if self.n_text:
            with m.If(f_valid & f.last):
                m.d.sync += [r.eq(0) for r in rows]
            with m.Elif(f_valid & f.push):
                for level, r in enumerate(rows):
                    with m.If(f.level == level):
                        m.d.sync += r.eq(0)
                    with m.If(f.level == level + 1):
                        m.d.sync += r.eq(r | (f.conds & text_mask))

    def _attribute_conditions(self, m, lanes, req, valid, last, present):
        """Stage C: :class:`xpfilt.hdl.conditions.AttributeConditions` stepped through the lanes
        of the beat in stage L2 (``lanes``: their byte classes, ``req``: their requests,
        ``present``: the lanes holding bytes). Per lane, registered: (the
        condition bits of the start tag read before the lane, which a push in the lane
        carries; the lane ends a value that cannot be decided)."""
        attrs = AttributeConditions(self.conditions)
        if not attrs.conditions:
            return [(Const(0, max(1, self.n_conds)), Const(0, 1))] * self.width

        def fold(i, here, final, step, conds):
            # as the one-byte front end's ``conds``: a value's bits join at its closing quote,
            # a ``<`` or the document's end clears them (no push reads them in between)
            return Mux(
                here & (final | req[i]["tag_start"]),
                0,
                conds | Mux(here & ~final & req[i]["val_end"], step.decided, 0),
            )

        return self._through_lanes(
            m, attrs, "c", lanes, req, valid, last, present, lambda i: {}, fold
        )

    def _text_conditions(self, m, lanes, req, valid, last, present, v):
        """Stage T: :class:`xpfilt.hdl.conditions.TextConditions` stepped through the lanes of
        the beat in stage L2 (``lanes``: their byte classes, ``req``: their requests,
        ``present``: the lanes holding bytes, ``v``: level + excess before each lane). Per
        lane, registered: (the text bits of the text nodes that ended since the event before
        the lane, full width: they all belong to the element open then, and the lane's push or
        pop carries them; the lane ends a text node that cannot be decided)."""
        max_depth = self.max_depth
        texts = TextConditions(self.conditions)
        if not texts.conditions:
            return [(Const(0, max(1, self.n_conds)), Const(0, 1))] * self.width

        def fold(i, here, final, step, pending):
            event = (req[i]["push_req"] & (v[i] < max_depth)) | (
                req[i]["pop_req"] & (v[i] != 0) & (v[i] <= max_depth)
            )
            return Mux(here & (final | event), 0, pending) | Mux(
                step.decide, texts.full(step.bits), 0
            )

        # inside: text of a stacked element
        return self._through_lanes(
            m,
            texts,
            "t",
            lanes,
            req,
            valid,
            last,
            present,
            lambda i: {"inside": (v[i] != 0) & (v[i] <= max_depth)},
            fold,
        )

    def _through_lanes(self, m, logic, name, lanes, req, valid, last, present, extra, fold):
        """``logic`` (whose ``step`` is one byte's, from its ``state``) stepped through the
        lanes one after the other, from registers carried from beat to beat (reset by a
        document's last beat), with a value of the conditions' width folded along
        (``fold(lane, here, final, step, value)``: the value after the lane; ``extra(lane)``:
        more arguments of ``step``). Per lane, registered: (the value before it, its step's
        ``undecided``)."""
        W = self.width
        carried = state_registers(logic.state, f"{name}_")
        value0 = Signal(self.n_conds, name=f"{name}_value")  # before the beat
        cur, value, out = carried, value0, []
        for i in range(W):
            here = present[i]
            final = here & last & (~present[i + 1] if i + 1 < W else 1)  # the last byte
            tests = lanes[i]
            step = logic.step(
                cur,
                req[i],
                valid=here,
                last=final,
                eq=tests.eq,
                registered=tests.registered,
                member=tests.member,
                **extra(i),
            )
            lane = (
                Signal(self.n_conds, name=f"{name}_lane{i}_value"),
                Signal(name=f"{name}_lane{i}_undecided"),
            )
            m.d.sync += [lane[0].eq(value), lane[1].eq(step.undecided)]
            out.append(lane)
            value = wire(m, fold(i, here, final, step, value), f"{name}{i + 1}_value")
            cur = {k: wire(m, x, f"{name}{i + 1}_{k}") for k, x in step.next.items()}
        with m.If(valid):
            m.d.sync += [value0.eq(Mux(last, 0, value))]
            m.d.sync += [carried[k].eq(Mux(last, logic.state[k][1], x)) for k, x in cur.items()]
        return out
