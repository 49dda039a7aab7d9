"""The custom engine's stack memory holds every row, the current one included: a cluster's only
flip-flops are its match flags (on the ECP5 the row register and its push/pop multiplexer cost
~1 flip-flop and ~2 LUTs per column, more than the LUT-RAM; issue 13, capacity)."""

import re

import pytest
from amaranth.back import rtlil

from xpfilt.compiler.custom import CompileOptions, compile_queries
from xpfilt.hdl.stacks import StackBank
from xpfilt.lang.xpath import parse_query


def flip_flop_bits(component) -> int:
    text = rtlil.convert(component)
    return sum(
        int(width)
        for width in re.findall(
            r"cell \$\w*dff\w* \S+\n(?:\s+parameter \\\w+ .*\n)*?\s+parameter \\WIDTH (\d+)", text
        )
    )


def test_a_stack_bank_keeps_no_row_register():
    texts = ["/a/b/c", "//b/c/d", "/a//c/b", "/*/b/*/a", "//c/a", "/a/b/c/a", "//a//a", "/b/a"]
    plan = compile_queries(
        [parse_query(t, i + 1) for i, t in enumerate(texts)], CompileOptions(max_depth=16)
    )
    cluster = plan.clusters[0]
    assert len(cluster.columns) >= 4
    dut = StackBank(cluster, n_tags=len(plan.tags), max_depth=16)
    assert flip_flop_bits(dut) == len(cluster.queries)


@pytest.mark.parametrize("depth", [3, 4])
def test_the_row_register_reads_as_the_transparent_synchronous_read(depth):
    """``level_stack(..., ahead=...)`` (the programmable engine with closing columns: the next
    row's compares made a cycle ahead, :func:`row_ahead`, registered per group of columns)
    shows the rows a transparent synchronous read shows, every cycle, on any pushes (to levels
    1 to ``depth``: level 0's row is never written) and read addresses (a pop's read of the
    row its push wrote in the cycle before included), with one group and with a group per
    column; at a power-of-two depth the deepest level's row shares row 0 with level 0's,
    which reads as zeros."""
    import random
    from types import SimpleNamespace

    from amaranth.hdl import Module, Signal
    from amaranth.lib import data, wiring
    from amaranth.lib.wiring import In, Out
    from amaranth.sim import Simulator

    from xpfilt.hdl.stacks import RowAheadLayout, level_stack, row_ahead

    width = 5
    event = data.StructLayout({"push": 1, "level": range(depth + 1)})

    class Both(wiring.Component):
        ev: In(event)
        early: In(range(depth + 1))
        new: In(width)
        synchronous: Out(width)
        registered: Out(width)
        grouped: Out(width)

        def elaborate(self, platform):
            # the inputs are the events a cycle ahead: the stacks see them a cycle later
            m = Module()
            ev, early, new = Signal(event), Signal(range(depth + 1)), Signal(width)
            ahead = Signal(RowAheadLayout(depth))
            m.d.sync += [
                ev.eq(self.ev),
                early.eq(self.early),
                new.eq(self.new),
                ahead.eq(row_ahead(m, self.ev, SimpleNamespace(read_addr=self.early), depth)),
            ]
            m.submodules.a = inner = Module()
            level_stack(
                inner,
                ev,
                self.synchronous,
                new,
                depth,
                rows=depth + 1,
                early_addr=early,
                transparent=True,
            )
            for name, port, groups in (("b", self.registered, 1), ("c", self.grouped, width)):
                m.submodules[name] = inner = Module()
                level_stack(inner, ev, port, new, depth, rows=depth + 1, ahead=[ahead] * groups)
            return m

    dut = Both()
    rng = random.Random(5)
    seen = {"written_then_read": 0, "deepest": 0}

    async def bench(ctx):
        for _ in range(600):
            push, level, early = (
                rng.random() < 0.5,
                rng.randrange(1, depth + 1),
                rng.randrange(depth + 1),
            )
            ctx.set(dut.ev, {"push": push, "level": level})
            ctx.set(dut.early, early)
            ctx.set(dut.new, rng.randrange(1 << width))
            await ctx.tick()
            assert ctx.get(dut.registered) == ctx.get(dut.synchronous)
            assert ctx.get(dut.grouped) == ctx.get(dut.synchronous)
            seen["written_then_read"] += push and level == early
            seen["deepest"] += early == depth

    sim = Simulator(dut)
    sim.add_clock(1e-6)
    sim.add_testbench(bench)
    sim.run()
    assert seen["written_then_read"] > 50 and seen["deepest"] > 20
