"""cocotb testbench of the custom engine (``xpfilt_engine``, see :class:`xpfilt.hdl.custom.CustomEngine`).

Split the usual way:

* :class:`Driver` streams the documents into ``bytes_in`` back to back, a byte (or a beat of W
  bytes, ``TbConfig.bytes_per_cycle``) offered in a cycle with probability ``p_valid`` (random
  gaps) and held until the engine takes it (``valid & ready``);
* :class:`Monitor` drives a random ``readout.ready`` (probability ``p_ready``), records the beat
  the engine shows in every cycle and counts the transferred ones;
* the model (:class:`xpfilt.model.custom.EngineModel`) is the expected-value source and
  :mod:`xpfilt.sim.checker` is the Checker: after the run it steps the model with the very inputs the
  engine got and compares every cycle's ``ready`` and readout beat, then groups the transferred
  beats into documents and scores each against the reference filter and the error flags it
  must raise.

Speed: Python is on the per-cycle path only to drive and sample the ports (one timer wake-up,
three reads and the writes that change something per cycle); the random patterns are
precomputed and the model and reference run in bulk after the simulation.

Timing: the engine's outputs (``bytes_in.ready``, ``readout.valid``/``payload``) depend on
registers only, so the testbench samples them at the falling clock edge and writes the inputs of
the same cycle right after; the next rising edge takes both, exactly like
:meth:`EngineModel.step(valid, data, last, out_ready) <xpfilt.model.custom.EngineModel.step>`.

Run it through :func:`xpfilt.sim.runner.run_testbench` (``$XPFILT_TB_CONFIG`` names a
:class:`xpfilt.sim.config.TbConfig` JSON file).
"""

from __future__ import annotations

import json
import os
import random
import time
from pathlib import Path

import cocotb
from cocotb.clock import Clock
from cocotb.triggers import ClockCycles, FallingEdge, Timer

from xpfilt.compiler.custom import Plan
from xpfilt.lang.xpath import parse_query
from xpfilt.sim.checker import (
    FAULTS,
    BeatCodec,
    InputCodec,
    Trace,
    compare_with_model,
    expectation,
    reference_for,
    root_cause_first,
    score_documents,
    with_reference_fault,
)
from xpfilt.sim.config import CONFIG_ENV, TbConfig

PERIOD_NS = 10
_BLOCK = 1 << 14


def _reader(handle):
    """An integer read of a signal through cocotb's public API (the engine's outputs are never
    X/Z: every register has an initial value). cocotb's private GPI call would skip building
    a LogicArray: measured here, 141k instead of 120k simulated cycles/s (300 queries, 20 NITF
    documents), not worth depending on internals."""
    return lambda: int(handle.value)


class _Pattern:
    """An endless seeded stream of 0/1 draws with P(1) = p, made in blocks."""

    def __init__(self, seed: str, p: float):
        self._rng = random.Random(seed)
        self._weights = (1.0 - p, p)
        self.draws: list[int] = []

    def extend(self, cycles: int) -> list[int]:
        while len(self.draws) < cycles:
            self.draws += self._rng.choices((0, 1), self._weights, k=_BLOCK)
        return self.draws


class Driver:
    """Streams documents into ``bytes_in`` with random valid gaps, honouring ``ready``."""

    def __init__(
        self,
        dut,
        documents: list[bytes],
        seed: int,
        p_valid: float,
        inputs: InputCodec = InputCodec(1),
    ):
        self.inputs = inputs  # bytes, or beats of W bytes
        self.stream = inputs.payloads(documents)
        self.position = 0  # index into stream of the byte offered next
        self.pattern = _Pattern(f"{seed}/valid", p_valid)
        self.valid_h, self.payload_h = dut.bytes_in__valid, dut.bytes_in__payload
        self.read_ready = _reader(dut.bytes_in__ready)
        self.valid_h.value = 0
        self.payload_h.value = 0

    @property
    def done(self) -> bool:
        return self.position >= len(self.stream)


class Monitor:
    """Drives a random ``readout.ready``; samples ``readout`` every cycle; counts documents
    (``last_mask``: the ``last`` field's bit in the readout payload)."""

    def __init__(self, dut, seed: int, p_ready: float, last_mask: int):
        self.pattern = _Pattern(f"{seed}/ready", p_ready)
        self.last_mask = last_mask
        self.ready_h = dut.readout__ready
        self.read_valid = _reader(dut.readout__valid)
        self.read_payload = _reader(dut.readout__payload)
        self.readouts = 0  # documents whose last readout beat moved
        self.ready_h.value = 0


async def run_stimulus(
    dut,
    driver: Driver,
    monitor: Monitor,
    trace: Trace,
    *,
    idle_cycles: int,
    stall_limit: int,
    documents: int,
) -> str:
    """Clock the engine until every document is streamed and read out (plus ``idle_cycles``).
    Returns "" or why it stopped early."""
    stream, n_stream = driver.stream, len(driver.stream)
    valid_draws = driver.pattern.extend(_BLOCK)
    ready_draws = monitor.pattern.extend(_BLOCK)
    read_ready, read_valid, read_payload = (
        driver.read_ready,
        monitor.read_valid,
        monitor.read_payload,
    )
    valid_h, payload_h, oready_h = driver.valid_h, driver.payload_h, monitor.ready_h
    t_valid, t_payload, t_oready = trace.valid, trace.payload, trace.out_ready
    t_ready, t_beat, doc_last = trace.ready, trace.beat, trace.doc_last_cycle
    last_bit = driver.inputs.last_mask
    tick = Timer(PERIOD_NS, unit="ns")
    position = driver.position
    readouts = monitor.readouts
    last_beat = monitor.last_mask
    cur_valid = cur_payload = cur_oready = 0
    progress = 0
    finished_at = None
    cycle = 0
    while True:
        # sample what the engine shows in this cycle (registers only)
        ready = read_ready()
        beat = read_payload() if read_valid() else -1
        # drive this cycle's inputs
        if cycle >= len(valid_draws):
            valid_draws = driver.pattern.extend(cycle + 1)
            ready_draws = monitor.pattern.extend(cycle + 1)
        valid = valid_draws[cycle] if position < n_stream else 0
        payload = stream[position] if position < n_stream else cur_payload
        out_ready = ready_draws[cycle]
        if valid != cur_valid:
            valid_h.value = cur_valid = valid
        if payload != cur_payload:
            payload_h.value = cur_payload = payload
        if out_ready != cur_oready:
            oready_h.value = cur_oready = out_ready
        t_valid.append(valid)
        t_payload.append(payload)
        t_oready.append(out_ready)
        t_ready.append(ready)
        t_beat.append(beat)
        if valid and ready:
            if payload & last_bit:
                doc_last.append(cycle)
            position += 1
            progress = cycle
        if beat >= 0 and out_ready:
            progress = cycle
            if beat & last_beat:
                readouts += 1
        cycle += 1
        await tick
        if finished_at is None:
            if position >= n_stream and readouts >= documents:
                finished_at = cycle
            elif cycle - progress > stall_limit:
                driver.position, monitor.readouts = position, readouts
                return (
                    f"no progress for {stall_limit} cycles at cycle {cycle}: "
                    f"{position}/{n_stream} bytes accepted, {readouts}/{documents} "
                    f"documents read out"
                )
        if finished_at is not None and cycle >= finished_at + idle_cycles:
            break
    driver.position, monitor.readouts = position, readouts
    return ""


@cocotb.test()
async def engine_matches_model_and_reference(dut):
    """Every cycle equals the model; every document's answer equals the reference."""
    config = TbConfig.read(Path(os.environ[CONFIG_ENV]))
    if config.fault is not None and config.fault not in FAULTS:
        raise ValueError(f"fault must be one of {', '.join(FAULTS)}, not {config.fault!r}")
    plan = Plan.from_json(Path(config.plan).read_text())
    names = [name for name, _ in config.documents]
    documents = [Path(path).read_bytes() for _, path in config.documents]

    codec = BeatCodec.for_plan(plan)
    driver, monitor = await start_engine(dut, config, documents, codec)

    trace = Trace()
    start = time.perf_counter()
    stopped = await run_stimulus(
        dut,
        driver,
        monitor,
        trace,
        idle_cycles=config.idle_cycles,
        stall_limit=config.stall_limit,
        documents=len(documents),
    )
    sim_time = time.perf_counter() - start

    start = time.perf_counter()
    cycles = compare_with_model(
        plan,
        trace,
        max_name=config.max_name,
        fault=config.fault,
        bytes_per_cycle=config.bytes_per_cycle,
    )
    reference, numbers = reference_for([parse_query(text, n) for n, text in config.queries])
    expected = [
        expectation(
            reference, numbers, doc, max_depth=plan.options.max_depth, max_name=config.max_name
        )
        for doc in documents
    ]
    if config.fault == "reference":
        expected = with_reference_fault(expected, plan)
    results, mismatches = score_documents(plan, names, expected, trace.transferred(codec))
    check_time = time.perf_counter() - start
    mismatches = root_cause_first(mismatches, trace, names, stopped, cycles)
    finish_run(
        dut,
        config,
        trace,
        cycles,
        sum(map(len, documents)),
        sim_time,
        check_time,
        results,
        mismatches,
    )


async def start_engine(dut, config, documents, codec) -> tuple["Driver", "Monitor"]:
    """Start the clock, make the driver (``documents``) and the monitor, and reset."""
    Clock(dut.clk, PERIOD_NS, unit="ns").start(start_high=False)
    driver = Driver(dut, documents, config.seed, config.p_valid, InputCodec(config.bytes_per_cycle))
    monitor = Monitor(dut, config.seed, config.p_ready, codec.last_mask)
    dut.rst.value = 1
    await ClockCycles(dut.clk, 2)
    await FallingEdge(dut.clk)
    dut.rst.value = 0
    return driver, monitor


def finish_run(
    dut,
    config,
    trace,
    cycles: dict,
    accepted: int,
    sim_time: float,
    check_time: float,
    results: list,
    mismatches: list,
    **extra,
) -> None:
    """Write the run's report (``extra``: more fields) and fail the test on any mismatch."""
    report = {
        "cycles": len(trace),
        "bytes": accepted,
        "sim_time": sim_time,
        "check_time": check_time,
        "mismatching_cycles": cycles["mismatching_cycles"],
        # backpressure that happened: a byte offered but refused / a beat shown but not taken
        "input_stalls": sum(1 for v, r in zip(trace.valid, trace.ready) if v and not r),
        "readout_stalls": sum(1 for b, r in zip(trace.beat, trace.out_ready) if b >= 0 and not r),
        **extra,
        "documents": results,
        "mismatches": mismatches,
    }
    Path(config.results).write_text(json.dumps(report, indent=1))
    dut._log.info(
        "%d cycles in %.2f s (%.0f cycles/s), checked in %.2f s: %d mismatches",
        len(trace),
        sim_time,
        len(trace) / max(sim_time, 1e-9),
        check_time,
        len(mismatches),
    )
    assert not mismatches, f"{len(mismatches)} mismatches, first: {mismatches[0]}"
