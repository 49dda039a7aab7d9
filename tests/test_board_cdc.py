"""The clock-domain-crossing queue (:class:`xpfilt.boards.cdc.LutAsyncFIFO`) in the Amaranth
simulator: every entry once, in order, with the writer and reader at unrelated clocks either
way round, each side enabled always or at random, at depths 2, 4 and 16; never more than
``depth`` entries taken ahead of the reader; a full queue drains at one entry a read cycle."""

import random

import pytest
from amaranth.hdl import Module
from amaranth.sim import Simulator

from xpfilt.boards.cdc import LutAsyncFIFO

N = 200


def run(depth, w_period, r_period, w_p, r_p):
    fifo = LutAsyncFIFO(width=12, depth=depth, w_domain="w", r_domain="r")
    m = Module()
    m.submodules.fifo = fifo
    sim = Simulator(m)
    sim.add_clock(w_period, domain="w")
    sim.add_clock(r_period, domain="r")
    sent = [random.Random(depth).randrange(1 << 12) for _ in range(N)]
    got, ahead = [], []

    async def writer(ctx):
        rng = random.Random(1)
        i = 0
        while i < N:
            on = rng.random() < w_p
            ctx.set(fifo.w_en, on)
            ctx.set(fifo.w_data, sent[i])
            _, _, rdy = await ctx.tick("w").sample(fifo.w_rdy)
            if on and rdy:
                i += 1
                ahead.append(i - len(got))
        ctx.set(fifo.w_en, 0)

    async def reader(ctx):
        rng = random.Random(2)
        while len(got) < N:
            on = rng.random() < r_p
            ctx.set(fifo.r_en, on)
            _, _, rdy, value = await ctx.tick("r").sample(fifo.r_rdy, fifo.r_data)
            if on and rdy:
                got.append(value)

    sim.add_testbench(writer)
    sim.add_testbench(reader)
    sim.run_until(N * 40 * max(w_period, r_period))
    return sent, got, ahead


@pytest.mark.parametrize("depth", [2, 4, 16])
@pytest.mark.parametrize("w_p, r_p", [(1.0, 1.0), (0.6, 0.4), (1.0, 0.3), (0.3, 1.0)])
@pytest.mark.parametrize("periods", [(16e-9, 8e-9), (8e-9, 13.3e-9)], ids=["slow-w", "slow-r"])
def test_every_entry_crosses_once_in_order(depth, w_p, r_p, periods):
    sent, got, ahead = run(depth, *periods, w_p, r_p)
    assert got == sent
    assert max(ahead) <= depth + 1  # (the count is of writes ahead of reads seen a cycle late)


def test_a_full_queue_drains_at_a_read_every_cycle():
    """The writer twice as fast: the reader, always enabled, takes an entry every cycle once
    the first is in."""
    fifo = LutAsyncFIFO(width=8, depth=4, w_domain="w", r_domain="r")
    sim = Simulator(fifo)
    sim.add_clock(4e-9, domain="w")
    sim.add_clock(8e-9, domain="r")
    taken = []

    async def writer(ctx):
        for i in range(64):
            ctx.set(fifo.w_en, 1)
            ctx.set(fifo.w_data, i)
            await ctx.tick("w").until(fifo.w_rdy)
        ctx.set(fifo.w_en, 0)

    async def reader(ctx):
        ctx.set(fifo.r_en, 1)
        for _ in range(80):
            _, _, rdy, value = await ctx.tick("r").sample(fifo.r_rdy, fifo.r_data)
            taken.append(value if rdy else None)

    sim.add_testbench(writer)
    sim.add_testbench(reader)
    sim.run_until(1e-6)
    first = next(i for i, v in enumerate(taken) if v is not None)
    assert taken[first : first + 64] == list(range(64))
