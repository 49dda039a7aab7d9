"""The W-byte front end (issue 18): the XML parser, the tag decoder and the global stack of
:class:`xpfilt.hdl.frontend.FrontEnd`, taking a beat of W bytes per cycle (W = 2, 4 or 8).

Most bytes of a document are text, attribute values and whitespace that only have to be
scanned; an open or a close tag reaches the stacks every 16-30 bytes. So the parser takes W
bytes per cycle and its events reach the global stack and the stacks through a queue, one per
cycle:

* D1: the beat (its bytes' nibbles one-hot) and the lanes that hold bytes, registered;
* D2: every lane's byte classes, registered (one flip-flop per test, as in ``FrontEnd``);
* P: W parser steps in a chain, lane 0 first (:func:`xpfilt.hdl.frontend.parse_byte` for each
  byte, with the tag decoder's CAM, the name hash, the depth and the error bookkeeping of each
  lane feeding the next); every lane whose byte makes an event (a push, a pop, or the document
  end on the beat's last byte) gives it to P2;
* P2: the lanes' events registered (so that the queue's write positions, a sum over the lanes,
  are off the parser's paths), written into the queue in lane order in the next cycle;
* the queue (:func:`xpfilt.hwdefs.queue_depth_for` entries, registers) hands its oldest event
  to stage E every cycle, except in the cycle after it handed over a document end (the frame
  captures the match flags then: no push may reach the clusters in that cycle);
* E: the global stack row of the level before the event is read (a push's parent, the element a
  pop closes); a push writes its row;
* F: the end-tag check; the ``events`` register.

A beat accepted in cycle N shows its first event in cycle N + :data:`xpfilt.hwdefs.WIDE_LATENCY`
when the queue is empty. ``room`` tells the frame it may accept a beat: the queue has room for W
events of each beat not yet in the queue (on ``bytes_in``, in D1, D2, P2) and of one more. Events,
their order and their fields, the error flags included, are exactly the one-byte front end's;
:class:`xpfilt.model.wide_frontend.WideFrontEndModel` is the cycle-accurate model.

``bytes_in``: ``data`` holds W bytes, lane ``i`` in bits ``8i..8i+7`` (the first byte of the beat
in lane 0); ``count`` (1..W) says how many lanes hold bytes in the beat with ``last`` (every
other beat is full, its ``count`` is ignored). Attribute and text conditions and the name tap of
the programmable engine are not widened: the engines refuse them above one byte per cycle.
"""

from functools import reduce
from operator import xor
from typing import Sequence

from amaranth.hdl import Cat, Const, Module, Mux, Signal
from amaranth.lib import data, stream, wiring
from amaranth.lib.memory import Memory
from amaranth.lib.wiring import In, Out

from xpfilt.hwdefs import (CDATA_KEYWORD, DOCTYPE_KEYWORD, EXCESS_WIDTH, HASH_INIT, HASH_WIDTH,
                           NAME_CHAR, NAME_START, WHITESPACE, ErrorFlags, State,
                           check_bytes_per_cycle, check_parameters, hash_byte, queue_depth_for,
                           tag_width_for)

from .frontend import ByteTests, EventLayout, StackEntry, nibble_member, parse_byte

__all__ = ["WideByteLayout", "QueueEntry", "WideFrontEnd"]


class WideByteLayout(data.StructLayout):
    """A beat of the W-byte stream: ``data`` (W bytes, lane 0 first), ``count`` (the bytes in
    the beat with ``last``, 1..W) and ``last`` (the document's final beat)."""

    def __init__(self, width: int):
        self.width = width
        super().__init__({"data": 8 * width, "count": range(width + 1), "last": 1})


class QueueEntry(data.StructLayout):
    """An event waiting for the global stack: ``push``/``pop``/``last`` (document end), ``check``
    (a pop of an end tag: compare its name with the row), ``level`` (a push's new depth, a
    pop's depth before it), the name's ``tag`` id and ``hash``, and the document's ``errors``
    (only with ``last``; the end-tag mismatch is added in stage F)."""

    def __init__(self, *, tag_width: int, max_depth: int):
        super().__init__({"push": 1, "pop": 1, "check": 1, "last": 1,
                          "level": range(max_depth + 1), "tag": tag_width, "hash": HASH_WIDTH,
                          "errors": ErrorFlags})


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

    def __init__(self, tags: Sequence[str], *, width: int, max_depth: int = 16,
                 max_name: int = 32):
        self.width = check_bytes_per_cycle(width)
        self.tags = tuple(tags)
        self.tag_bytes = check_parameters(self.tags, max_depth, max_name)
        self.max_depth = max_depth
        self.max_name = max_name
        self.queue_depth = queue_depth_for(width)
        self.tag_width = tag_width_for(len(self.tags))
        self.event_layout = EventLayout(tag_width=self.tag_width, max_depth=max_depth)
        super().__init__({
            "bytes_in": In(stream.Signature(WideByteLayout(width))),
            "room": Out(1),
            "events": Out(self.event_layout),
            "tos": Out(range(max_depth + 1)),
        })

    def elaborate(self, platform):
        m = Module()
        S = State
        W = self.width
        n_tags = len(self.tag_bytes)
        max_depth, max_name = self.max_depth, self.max_name
        m.d.comb += self.bytes_in.ready.eq(1)

        # === stage D1: each lane's byte and its nibbles one-hot; the lanes holding bytes ===
        valid1 = Signal()
        last1 = Signal()
        lanes1 = Signal(W)
        c1 = [Signal(8, name=f"d1_byte{i}") for i in range(W)]
        high = [Signal(16, name=f"d1_high{i}") for i in range(W)]
        low = [Signal(16, name=f"d1_low{i}") for i in range(W)]
        beat = self.bytes_in.payload
        inp = self.bytes_in.valid
        m.d.sync += [valid1.eq(inp), last1.eq(inp & beat.last),
                     lanes1.eq(Cat(*(inp & (~beat.last | (beat.count > i)) for i in range(W))))]
        for i in range(W):
            raw = beat.data[8 * i:8 * i + 8]
            m.d.sync += [c1[i].eq(raw), high[i].eq(Cat(*(raw[4:] == h for h in range(16)))),
                         low[i].eq(Cat(*(raw[:4] == n for n in range(16))))]

        # === stage D2: each lane's classes, registered on first use ===
        valid = Signal()
        last = Signal()
        lanes = Signal(W)
        c = [Signal(8, name=f"d2_byte{i}") for i in range(W)]
        m.d.sync += [valid.eq(valid1), last.eq(last1), lanes.eq(lanes1)]
        m.d.sync += [c[i].eq(c1[i]) for i in range(W)]
        classes = {}

        def lane_tests(i):
            def registered(key, value):
                if (i, key) not in classes:
                    classes[(i, key)] = (Signal(name=f"byte{i}_{key}"), value)
                return classes[(i, key)][0]

            def eq(b):
                return registered(f"eq_{b:02x}", high[i][b >> 4] & low[i][b & 15])

            def member(key, members):
                return registered(key, nibble_member(high[i], low[i], members))

            return ByteTests(ch=lambda text: eq(ord(text)), eq=eq,
                             ws=member("ws", WHITESPACE), nstart=member("nstart", NAME_START),
                             nchar=member("nchar", NAME_CHAR),
                             upper=member("upper", range(ord("A"), ord("Z") + 1)))

        # === stage P: W parser steps in a chain ===
        state = Signal(len(State), init=1 << S.TEXT.value)
        level = Signal(range(max_depth + 1))
        excess = Signal(EXCESS_WIDTH)
        root_seen = Signal()
        in_subset = Signal()
        kw = Signal(range(max(len(CDATA_KEYWORD), len(DOCTYPE_KEYWORD))))
        pos = Signal(range(max_name + 2))
        max_len = max((len(t) for t in self.tag_bytes), default=0)
        pos_oh = Signal(max_len + 1, init=1)
        hsh = Signal(HASH_WIDTH, init=HASH_INIT)
        match = Signal(max(1, n_tags), init=(1 << max(1, n_tags)) - 1)
        sticky = Signal(ErrorFlags)                 # errors of the document's earlier beats
        regs = (state, level, excess, root_seen, in_subset, kw, pos, pos_oh, hsh, match)

        entry_layout = QueueEntry(tag_width=self.tag_width, max_depth=max_depth)
        ex_max = (1 << EXCESS_WIDTH) - 1
        cur = regs
        records, has, founds, ends = [], [], [], []
        for i in range(W):
            (st, lv, ex, root, subset, k, p, poh, h, mt) = cur
            tests = lane_tests(i)
            nstate, req = parse_byte(m, st, tests, level=lv, root_seen=root, in_subset=subset,
                                     kw=k, prefix=f"lane{i}_")
            name_byte, name_hold = req["name_byte"], req["name_hold"]
            push_req, pop_req = req["push_req"], req["pop_req"]

            # the tag decoder (CAM) and the name hash
            if n_tags:
                ok = Cat(*(Cat(*(poh[q] & tests.eq(b) for q, b in enumerate(t))).any()
                           for t in self.tag_bytes))
                hit = Signal(n_tags, name=f"lane{i}_hit")
                m.d.comb += hit.eq(Cat(*(mt[j] & poh[len(t)]
                                         for j, t in enumerate(self.tag_bytes))))
                tag_id = Cat(*(Cat(*(hit[j] for j in range(n_tags) if (j + 1) >> bit & 1)).any()
                               for bit in range(self.tag_width)))
            else:
                ok = Const(0, 1)
                tag_id = Const(0, self.tag_width)
            x = h ^ c[i]
            hash_upd = Cat(*(reduce(xor, [x[b] for b in range(8) if hash_byte(0, 1 << b) >> j & 1])
                             for j in range(HASH_WIDTH)))

            # depth bookkeeping
            at_max = lv == max_depth
            ex_zero = ex == 0
            overflow = push_req & at_max
            do_push = push_req & ~at_max
            underflow = pop_req & ex_zero & (lv == 0)
            do_pop = pop_req & ex_zero & (lv != 0)
            n = {name: Signal.like(reg, name=f"lane{i}_n{name}") for name, reg in zip(
                ("state", "level", "excess", "root", "subset", "kw", "pos", "pos_oh", "hash",
                 "match"), cur)}
            m.d.comb += [
                n["state"].eq(nstate),
                n["level"].eq(Mux(do_push, lv + 1, Mux(do_pop, lv - 1, lv))),
                n["excess"].eq(Mux(overflow & (ex != ex_max), ex + 1,
                                   Mux(pop_req & ~ex_zero, ex - 1, ex))),
                n["root"].eq(root | do_push),
                n["subset"].eq(nstate[S.SUBSET.value] |
                               (subset & ~nstate[S.TEXT.value] & ~nstate[S.DT_AFTER.value])),
                n["kw"].eq(Mux(req["kw_inc"], k + 1, 0)),
            ]
            with m.If(name_byte):
                m.d.comb += [n["pos"].eq(Mux(p == max_name + 1, p, p + 1)),
                             n["pos_oh"].eq(poh << 1), n["hash"].eq(hash_upd),
                             n["match"].eq(mt & ok)]
            with m.Elif(name_hold):
                m.d.comb += [n["pos"].eq(p), n["pos_oh"].eq(poh), n["hash"].eq(h),
                             n["match"].eq(mt)]
            with m.Else():
                m.d.comb += [n["pos"].eq(0), n["pos_oh"].eq(poh.init), n["hash"].eq(HASH_INIT),
                             n["match"].eq(mt.init)]

            found = Signal(ErrorFlags, name=f"lane{i}_found")
            m.d.comb += [found.malformed.eq(req["bad"] | underflow),
                         found.depth_overflow.eq(overflow),
                         found.name_too_long.eq(name_byte & (p >= max_name))]
            here = lanes[i]
            end = Signal(name=f"lane{i}_end")     # the document's final byte
            m.d.comb += end.eq(here & last & (~lanes[i + 1] if i + 1 < W else 1))
            unfinished = ~nstate[S.TEXT.value] | (n["level"] != 0) | ~n["root"]
            rec = Signal(entry_layout, name=f"lane{i}_event")
            m.d.comb += [rec.push.eq(do_push), rec.pop.eq(do_pop), rec.last.eq(end),
                         rec.check.eq(req["pop_check"]),
                         rec.level.eq(Mux(do_push, lv + 1, Mux(do_pop, lv, 0))),
                         rec.tag.eq(tag_id), rec.hash.eq(h)]
            records.append(rec)
            has.append(here & (do_push | do_pop | end))
            founds.append(Mux(here, found.as_value(), 0))
            ends.append((end, unfinished))
            cur = tuple(n[name] for name in ("state", "level", "excess", "root", "subset", "kw",
                                             "pos", "pos_oh", "hash", "match"))

        found_all = reduce(lambda a, b: a | b, founds)
        doc_errors = Signal(ErrorFlags)
        m.d.comb += doc_errors.eq(sticky.as_value() | found_all |
                                  Cat(*(e & u for e, u in ends)).any())
        with m.If(valid):
            with m.If(last):
                m.d.sync += [reg.eq(reg.init) for reg in regs]
                m.d.sync += sticky.eq(0)
            with m.Else():
                m.d.sync += [reg.eq(new) for reg, new in zip(regs, cur)]
                m.d.sync += sticky.eq(sticky.as_value() | found_all)

        # === stage P2: the lanes' events, registered ===
        p2_valid = Signal()
        p2_has = Signal(W)
        p2_records = [Signal(entry_layout, name=f"p2_event{i}") for i in range(W)]
        m.d.sync += [p2_valid.eq(valid), p2_has.eq(Mux(valid, Cat(*has), 0))]
        for i in range(W):
            m.d.sync += p2_records[i].eq(records[i])
            m.d.sync += p2_records[i].errors.eq(Mux(records[i].last, doc_errors, 0))

        # === the event queue ===
        Q = self.queue_depth
        queue = [Signal(entry_layout, name=f"queue{j}") for j in range(Q)]
        head = Signal(range(Q))
        tail = Signal(range(Q))
        occupied = Signal(range(Q + 1))
        after_end = Signal()
        offset = Const(0, range(W + 1))
        for i in range(W):
            slot = Signal(range(2 * Q), name=f"lane{i}_slot")
            m.d.comb += slot.eq(tail + offset)
            at = Mux(slot >= Q, slot - Q, slot)
            with m.If(p2_has[i]):
                for j in range(Q):
                    with m.If(at == j):
                        m.d.sync += queue[j].eq(p2_records[i])
            offset = offset + p2_has[i]
        added = Signal(range(W + 1))
        m.d.comb += added.eq(offset)
        take = Signal()
        m.d.comb += take.eq((occupied != 0) & ~after_end)
        head_entry = Signal(entry_layout)
        with m.Switch(head):
            for j in range(Q):
                with m.Case(j):
                    m.d.comb += head_entry.eq(queue[j])
        new_tail = Signal(range(2 * Q))
        m.d.comb += new_tail.eq(tail + added)
        m.d.sync += [tail.eq(Mux(new_tail >= Q, new_tail - Q, new_tail)),
                     occupied.eq(occupied + added - take),
                     after_end.eq(take & head_entry.last)]
        with m.If(take):
            m.d.sync += head.eq(Mux(head == Q - 1, 0, head + 1))
        flight = self.bytes_in.valid + valid1 + valid + p2_valid + 1
        m.d.comb += self.room.eq(occupied + W * flight <= Q)

        # === stage E: the global stack row of the level before the event ===
        e = Signal(entry_layout)
        e_valid = Signal()
        m.d.sync += [e_valid.eq(take), e.eq(Mux(take, head_entry.as_value(), 0))]
        m.submodules.stack = stack = Memory(
            shape=StackEntry(tag_width=self.tag_width), depth=max_depth + 1, init=[])
        row = stack.read_port(domain="comb")
        push_port = stack.write_port()
        m.d.comb += [
            row.addr.eq(Mux(e.push, e.level - 1, e.level)),
            push_port.addr.eq(e.level),
            push_port.data.tag.eq(e.tag),
            push_port.data.hash.eq(e.hash),
            push_port.en.eq(e.push),
        ]

        # === stage F: the end-tag check, the event ===
        f = Signal(entry_layout)
        f_valid = Signal()
        f_row = Signal(StackEntry(tag_width=self.tag_width))
        m.d.sync += [f_valid.eq(e_valid), f.eq(e), f_row.eq(row.data)]
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
        m.d.sync += self.events.eq(ev)
        with m.If(f_valid):
            m.d.sync += mismatched.eq(~f.last & (mismatched | mismatch))
            with m.If(f.last):
                m.d.sync += tos.eq(0)
            with m.Elif(f.push):
                m.d.sync += tos.eq(f.level)
            with m.Elif(f.pop):
                m.d.sync += tos.eq(f.level - 1)

        m.d.sync += [bit.eq(value) for bit, value in classes.values()]
        return m
