"""Run a generated engine in the Amaranth simulator beside its model, cycle by cycle."""

from __future__ import annotations

import random
from collections import OrderedDict
from typing import Callable, Sequence

from amaranth.sim import Simulator

from xpfilt.compiler.custom import Plan
from xpfilt.hdl.custom import CustomEngine
from xpfilt.hwspec.readout import Beat, SparseBeat
from xpfilt.model.custom import EngineModel, document_beats


def simulate(dut, testbench, period: float = 1e-8) -> None:
    """Run ``testbench`` (async, ``ctx``) against ``dut`` on one clock until it returns."""
    sim = Simulator(dut)
    sim.add_clock(period)
    sim.add_testbench(testbench)
    sim.run()


class Bench:
    """A design elaborated into the Amaranth simulator once and run again for every stimulus
    (``Simulator.reset()`` restores every signal, memory, clock, process and testbench):
    elaborating a W = 4 engine takes ~9 s of a 12 s comparison, a W = 8 one ~26 s.
    ``processes``: how many processes (``add_process``, added before the testbench) a run may
    bring besides its testbench."""

    def __init__(self, dut, period: float = 1e-8, *, processes: int = 0) -> None:
        self.dut = dut
        self.testbench = None
        self.processes: list = [None] * processes
        self.sim = Simulator(dut)
        self.sim.add_clock(period)
        for slot in range(processes):
            self.sim.add_process(self._process_in(slot))
        self.sim.add_testbench(self._run_testbench)
        self.used = False

    def _process_in(self, slot: int):
        async def process(ctx) -> None:
            if self.processes[slot] is not None:
                await self.processes[slot](ctx)

        return process

    async def _run_testbench(self, ctx) -> None:
        await self.testbench(ctx)

    def run(self, testbench, *processes) -> None:
        """Run ``testbench`` (async, ``ctx``), and ``processes`` (async, ``ctx``; at most as
        many as the bench has room for) beside it, from the design's initial state until the
        testbench returns."""
        if len(processes) > len(self.processes):
            raise ValueError(f"processes must be at most {len(self.processes)}, not {processes!r}")
        if self.used:
            self.sim.reset()
        self.used = True
        self.testbench = testbench
        self.processes[:] = [*processes, *[None] * (len(self.processes) - len(processes))]
        self.sim.run()


class BenchCache:
    """The last few benches by key: tests that drive one design with several stimuli (or a
    hypothesis test with a fixed design) elaborate it once per process. Eight: a file's
    designs stay between its tests (test_wide_rtl's fixed design at W = 2 and 4 comes back
    after three others); a W = 4 bench holds ~120 MB."""

    def __init__(self, size: int = 8) -> None:
        self.size = size
        self.benches: OrderedDict = OrderedDict()

    def run(self, key, make_dut: Callable, testbench: Callable) -> None:
        """Run ``testbench`` (async, ``dut, ctx``) on the bench of ``key``, made by
        ``make_dut()`` if there is none; a bench whose run raised is dropped."""
        bench = self.benches.pop(key, None) or Bench(make_dut())
        bench.run(lambda ctx: testbench(bench.dut, ctx))
        self.benches[key] = bench
        while len(self.benches) > self.size:
            self.benches.popitem(last=False)


ENGINE_BENCHES = BenchCache()


def shown_beat(ctx, port):
    """The beat ``port`` (a readout stream of either kind) shows this cycle, or None."""
    if not ctx.get(port.valid):
        return None
    p = ctx.get(port.payload)
    errors = p.errors.as_value().value
    if hasattr(p, "header"):
        return SparseBeat(p.header, p.last, p.doc, errors, p.id, p.count)
    return Beat(p.bit, p.first, p.last, p.doc, errors)


def compare_readout_with_model(
    dut,
    model,
    documents: Sequence[int],
    *,
    seed: int,
    p_ready: float,
    p_capture: float = 0.7,
    max_cycles: int = 1_000_000,
    idle: int = 20,
) -> dict:
    """Drive a readout (serial or sparse) and its register model with the same inputs every
    cycle: capture ``documents`` (match flags) when the readout is free, with probability
    ``p_capture``, random ``out.ready``, random flags and errors on the cycles that do not
    capture (they must be ignored), then, once the model is free and holds no beat, ``idle``
    quiet cycles (nothing more may come out). Returns ``{"mismatch": first differing cycle or
    None, "beats": the RTL's accepted beats, "queue_filled": the model's output queue was ever
    full}``."""
    rng = random.Random(seed)
    width = len(dut.flags)
    error_bits = len(dut.errors.as_value())
    result = {"mismatch": None, "beats": [], "queue_filled": False}

    async def testbench(ctx):
        pending = list(documents)
        cycle = quiet = 0
        while quiet < idle and cycle < max_cycles:
            capture = bool(pending) and not ctx.get(dut.busy) and rng.random() < p_capture
            flags = pending[0] if capture else rng.getrandbits(width)
            errors = rng.getrandbits(error_bits)
            out_ready = rng.random() < p_ready
            ctx.set(dut.capture, capture)
            ctx.set(dut.flags, flags)
            ctx.set(dut.errors.as_value(), errors)
            ctx.set(dut.out.ready, out_ready)
            got = (bool(ctx.get(dut.busy)), shown_beat(ctx, dut.out))
            want = (model.busy, model.beat())
            if got != want:
                result["mismatch"] = {"cycle": cycle, "rtl": got, "model": want}
                return
            model.step(capture, flags, errors, out_ready)
            if got[1] is not None and out_ready:
                result["beats"].append(got[1])
            if capture:
                pending.pop(0)
            result["queue_filled"] |= model.queue_full
            quiet = quiet + 1 if not (pending or model.busy or model.holds_beats) else 0
            cycle += 1
            await ctx.tick()

    simulate(dut, testbench)
    return result


def compare_engine_with_model(
    plan: Plan,
    documents: Sequence[bytes],
    *,
    seed: int = 0,
    p_valid: float = 0.8,
    p_ready: float = 0.8,
    extra_cycles: int = 400,
    max_name: int = 32,
    bytes_per_cycle: int = 1,
) -> dict:
    """Drive RTL and model with the same random valid/ready pattern (beats of
    ``bytes_per_cycle`` bytes) until ``extra_cycles`` cycles after the input and the readout
    went quiet; return the first mismatch (None if none), the beats and the
    cycle count."""
    rng = random.Random(seed)
    model = EngineModel(plan, max_name=max_name, bytes_per_cycle=bytes_per_cycle)
    stream = [b for d in documents for b in document_beats(d, bytes_per_cycle)]
    idle_beat = (0, False) if bytes_per_cycle == 1 else (b"", False)
    result = {"mismatch": None, "beats": [], "cycles": 0}

    async def testbench(dut, ctx):
        i = idle = 0
        while idle < extra_cycles:
            valid = i < len(stream) and rng.random() < p_valid
            data, last = stream[i] if i < len(stream) else idle_beat
            out_ready = rng.random() < p_ready
            ctx.set(dut.bytes_in.valid, valid)
            if bytes_per_cycle == 1:
                ctx.set(dut.bytes_in.payload.data, data)
            else:
                ctx.set(dut.bytes_in.payload.data, int.from_bytes(data, "little"))
                ctx.set(dut.bytes_in.payload.count, len(data))
            ctx.set(dut.bytes_in.payload.last, last)
            ctx.set(dut.readout.ready, out_ready)
            ready = bool(ctx.get(dut.bytes_in.ready))
            beat = shown_beat(ctx, dut.readout)
            expected = model.step(valid, data, last, out_ready)
            if (ready, beat) != expected and result["mismatch"] is None:
                result["mismatch"] = {
                    "cycle": result["cycles"],
                    "rtl": (ready, beat),
                    "model": expected,
                }
            if beat is not None and out_ready:
                result["beats"].append(beat)
            i += valid and ready
            idle = idle + 1 if i >= len(stream) and beat is None else 0
            result["cycles"] += 1
            await ctx.tick()

    ENGINE_BENCHES.run(
        (plan.to_json(), max_name, bytes_per_cycle),
        lambda: CustomEngine(plan, max_name=max_name, bytes_per_cycle=bytes_per_cycle),
        testbench,
    )
    return result
