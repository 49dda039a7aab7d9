"""Component-level simulations: a stack bank driven by raw events, and the serial readout."""

import random

from amaranth.sim import Simulator

from xpfilt.compiler.custom import CompileOptions, compile_queries
from xpfilt.hdl.readout import Readout
from xpfilt.hdl.stacks import StackBank
from xpfilt.lang.xpath import parse_query
from xpfilt.model.stacks import ClusterStacks


def test_stack_bank_matches_the_event_model_on_random_events():
    texts = ["/a/b", "//b/c", "/a//c", "/*/b/*", "//c", "/a/b/c/a", "//a//a", "/b"]
    queries = [parse_query(t, i + 1) for i, t in enumerate(texts)]
    plan = compile_queries(queries, CompileOptions(max_depth=8))
    cluster, n_tags = plan.clusters[0], len(plan.tags)
    dut = StackBank(cluster, n_tags=n_tags, max_depth=8)
    model = ClusterStacks(cluster, n_tags)
    rng = random.Random(5)
    failures = []

    async def testbench(ctx):
        def set_level(level):  # the level and what decode_events derives from it
            ctx.set(dut.events.level, level)
            ctx.set(dut.events.addr, level - 1)
            ctx.set(dut.events.level1, level == 1)
            ctx.set(dut.events.level2, level == 2)
            ctx.set(dut.events.nested, level >= 2)

        open_tags = []
        for cycle in range(3000):
            if ctx.get(dut.matches) != model.matches:  # a register: the pushes so far
                failures.append(cycle)
            ctx.set(dut.events.as_value(), 0)
            ctx.set(dut.clear, 0)
            choice = rng.random()
            if choice < 0.3 and len(open_tags) < 8:
                tag = rng.randrange(n_tags + 1)
                parent = open_tags[-1] if open_tags else 0
                ctx.set(dut.events.push, 1)
                ctx.set(dut.events.tag, 1 << tag >> 1)  # one-hot, 0 for unknown
                ctx.set(dut.events.parent, 1 << parent >> 1)
                set_level(len(open_tags) + 1)
                model.push(tag, parent, len(open_tags) + 1)
                open_tags.append(tag)
            elif choice < 0.55 and open_tags:
                ctx.set(dut.events.pop, 1)
                set_level(len(open_tags))
                model.pop()
                open_tags.pop()
            if choice > 0.98:  # end of document: flags read and cleared, stacks emptied
                ctx.set(dut.events.doc_end, 1)
                ctx.set(dut.clear, 1)
                model.reset()
                open_tags.clear()
            await ctx.tick()

    sim = Simulator(dut)
    sim.add_clock(1e-8)
    sim.add_testbench(testbench)
    sim.run()
    assert not failures, failures[:5]


def test_readout_shifts_lsb_first_with_framing_and_backpressure():
    dut = Readout(5)
    rng = random.Random(2)
    got = []

    async def testbench(ctx):
        ctx.set(dut.flags, 0b10110)
        ctx.set(dut.errors.malformed, 1)
        ctx.set(dut.capture, 1)
        await ctx.tick()
        ctx.set(dut.capture, 0)
        for _ in range(40):
            ready = rng.random() < 0.5
            ctx.set(dut.out.ready, ready)
            if ctx.get(dut.out.valid) and ready:
                p = ctx.get(dut.out.payload)
                got.append((p.bit, p.first, p.last, p.doc, p.errors.malformed))
            await ctx.tick()
        assert not ctx.get(dut.busy)

    sim = Simulator(dut)
    sim.add_clock(1e-8)
    sim.add_testbench(testbench)
    sim.run()
    assert got == [
        (0, 1, 0, 0, 1),
        (1, 0, 0, 0, 1),
        (1, 0, 0, 0, 1),
        (0, 0, 0, 0, 1),
        (1, 0, 1, 0, 1),
    ]
