"""Drive an engine's RTL (Amaranth simulator) and its model with the same random valid/ready
pattern, cycle by cycle, over back-to-back documents and configuration streams.

A stream is a list of *segments*. In a segment, documents go back to back on ``bytes_in`` (no
idle cycle between them unless ``valid`` is randomly low) while a configuration stream, if any,
goes on ``config`` at the same time; the documents start ``doc_delay`` cycles into the segment.
The driver records, for the RTL and the model separately, every readout beat taken, the cycle
each document's first byte was accepted and the cycle each configuration's last bit was
accepted, and the first cycle where RTL and model differ. With ``rtl=False`` only the model runs
(fast: the same checks on the model alone).
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from typing import Optional, Sequence

try:
    from xpfilt.hwspec.readout import Beat, SparseBeat
except ImportError:  # before the readout formats had a module of their own
    from xpfilt.model.custom import Beat

    SparseBeat = None

__all__ = ["Segment", "StreamRun", "run_stream", "group_readouts"]


@dataclass
class Segment:
    documents: list = field(default_factory=list)  # bytes, each at least one byte
    config: Optional[bytes] = None  # a configuration stream (programmable)
    doc_delay: int = 0


@dataclass
class StreamRun:
    mismatch: Optional[dict] = None
    rtl_beats: list = field(default_factory=list)
    model_beats: list = field(default_factory=list)
    doc_start: list = field(default_factory=list)  # cycle each document's first byte went in
    config_end: list = field(default_factory=list)  # cycle each configuration's last bit went in
    status: list = field(default_factory=list)  # model status after each segment
    cycles: int = 0
    timed_out: bool = False


def _bits(stream: bytes) -> list[int]:
    return [stream[i // 8] >> (i % 8) & 1 for i in range(len(stream) * 8)]


class _Script:
    """The per-cycle inputs, shared by the RTL testbench and the model-only loop."""

    def __init__(
        self,
        segments: Sequence[Segment],
        rng: random.Random,
        p_valid: float,
        p_ready: float,
        quiet: int,
        max_cycles: int,
    ):
        self.segments = list(segments)
        self.rng, self.p_valid, self.p_ready = rng, p_valid, p_ready
        self.quiet, self.max_cycles = quiet, max_cycles
        self.k = 0
        self.idle = 0
        self._enter()

    def _enter(self):
        if self.k < len(self.segments):
            seg = self.segments[self.k]
            self.bytes = [
                (b, i == len(d) - 1, i == 0) for d in seg.documents for i, b in enumerate(d)
            ]
            self.cfg = _bits(seg.config) if seg.config else []
            self.delay = seg.doc_delay
        else:
            self.bytes, self.cfg, self.delay = [], [], 0
        self.i = self.j = self.t = 0

    @property
    def finished(self) -> bool:
        return self.k >= len(self.segments)

    def inputs(self):
        rng = self.rng
        has_byte = self.i < len(self.bytes) and self.t >= self.delay
        valid = has_byte and rng.random() < self.p_valid
        data, last, first = self.bytes[self.i] if self.i < len(self.bytes) else (0, False, False)
        cfg_valid = self.j < len(self.cfg) and rng.random() < self.p_valid
        cfg_bit = self.cfg[self.j] if self.j < len(self.cfg) else 0
        cfg_last = self.j == len(self.cfg) - 1
        out_ready = rng.random() < self.p_ready
        return valid, data, last, first, cfg_valid, cfg_bit, cfg_last, out_ready

    def advance(self, accepted: bool, cfg_taken: bool, readout_valid: bool) -> bool:
        """After a cycle; returns False when the run is over."""
        self.i += accepted
        self.j += cfg_taken
        self.t += 1
        if not self.finished and self.i >= len(self.bytes) and self.j >= len(self.cfg):
            self.k += 1
            self._enter()
            return True
        if self.finished:
            self.idle = 0 if readout_valid else self.idle + 1
            return self.idle < self.quiet
        return True


def run_stream(
    kind: str,
    design,
    segments: Sequence[Segment],
    *,
    seed: int = 0,
    p_valid: float = 0.9,
    p_ready: float = 0.9,
    rtl: bool = True,
    max_cycles: int = 200_000,
) -> StreamRun:
    """``kind``: "custom" (``design`` a Plan) or "programmable" (``design`` a HardwareSpec)."""
    if kind == "custom":
        from xpfilt.model.custom import EngineModel

        model = EngineModel(design)
        width = model.width
    else:
        from xpfilt.model.programmable import ProgrammableModel

        model = ProgrammableModel(design)
        width = model.width
    script = _Script(
        segments, random.Random(seed), p_valid, p_ready, quiet=2 * width + 64, max_cycles=max_cycles
    )
    run = StreamRun()

    def model_cycle(inputs):
        valid, data, last, first, cfg_valid, cfg_bit, cfg_last, out_ready = inputs
        if kind == "custom":
            ready, beat = model.step(valid, data, last, out_ready)
            return ready, beat, False, None
        status = model.status  # the status port shows the state before the edge
        ready, beat = model.step(valid, data, last, out_ready, cfg_valid, cfg_bit, cfg_last)
        return ready, beat, model.config_ready, status  # config_ready of this very cycle

    def bookkeeping(inputs, ready, beat, cfg_ready, beats):
        valid, data, last, first, cfg_valid, cfg_bit, cfg_last, out_ready = inputs
        if valid and ready and first:
            run.doc_start.append(run.cycles)
        if cfg_valid and cfg_ready and cfg_last:
            run.config_end.append(run.cycles)
        if beat is not None and out_ready:
            beats.append(beat)

    if not rtl:
        segment = script.k
        while True:
            inputs = script.inputs()
            ready, beat, cfg_ready, _ = model_cycle(inputs)
            bookkeeping(inputs, ready, beat, cfg_ready, run.model_beats)
            run.cycles += 1
            going = script.advance(inputs[0] and ready, inputs[4] and cfg_ready, beat is not None)
            if script.k != segment:
                run.status.append(getattr(model, "status", None))
                segment = script.k
            if not going:
                break
            if run.cycles >= max_cycles:
                run.timed_out = True
                break
        return run

    from amaranth.sim import Simulator

    if kind == "custom":
        from xpfilt.hdl.custom import CustomEngine

        dut = CustomEngine(design)
    else:
        from xpfilt.hdl.programmable import ProgrammableEngine

        dut = ProgrammableEngine(design)

    async def testbench(ctx):
        segment = script.k
        while True:
            inputs = script.inputs()
            valid, data, last, first, cfg_valid, cfg_bit, cfg_last, out_ready = inputs
            ctx.set(dut.bytes_in.valid, valid)
            ctx.set(dut.bytes_in.payload.data, data)
            ctx.set(dut.bytes_in.payload.last, last)
            ctx.set(dut.readout.ready, out_ready)
            if kind != "custom":
                ctx.set(dut.config.valid, cfg_valid)
                ctx.set(dut.config.payload.bit, cfg_bit)
                ctx.set(dut.config.payload.last, cfg_last)
            ready = bool(ctx.get(dut.bytes_in.ready))
            beat = None
            if ctx.get(dut.readout.valid):
                p = ctx.get(dut.readout.payload)
                errors = p.errors.as_value().value
                if hasattr(p, "header"):  # a sparse readout
                    beat = SparseBeat(p.header, p.last, p.doc, errors, p.id, p.count)
                else:
                    beat = Beat(p.bit, p.first, p.last, p.doc, errors)
            cfg_ready, status = False, None
            if kind != "custom":
                cfg_ready = bool(ctx.get(dut.config.ready))
                st = ctx.get(dut.config_status)
                status = {
                    "generation": st.generation,
                    "loaded": st.loaded,
                    "rejected": st.rejected,
                    "pending": st.pending,
                }
            m_ready, m_beat, m_cfg_ready, m_status = model_cycle(inputs)
            got, want = (ready, beat, cfg_ready, status), (m_ready, m_beat, m_cfg_ready, m_status)
            if got != want and run.mismatch is None:
                run.mismatch = {"cycle": run.cycles, "rtl": got, "model": want}
            if beat is not None and out_ready:
                run.rtl_beats.append(beat)
            if m_beat is not None and out_ready:
                run.model_beats.append(m_beat)
            # the stream follows the RTL's handshakes (the model sees the same inputs)
            if valid and ready and first:
                run.doc_start.append(run.cycles)
            if cfg_valid and cfg_ready and cfg_last:
                run.config_end.append(run.cycles)
            run.cycles += 1
            going = script.advance(
                valid and ready, cfg_valid and cfg_ready, beat is not None or m_beat is not None
            )
            if script.k != segment:
                run.status.append(getattr(model, "status", None))
                segment = script.k
            await ctx.tick()
            if not going:
                break
            if run.cycles >= max_cycles:
                run.timed_out = True
                break

    sim = Simulator(dut)
    sim.add_clock(1e-8)
    sim.add_testbench(testbench)
    sim.run()
    return run


def group_readouts(beats: Sequence, width: int) -> tuple[list[tuple[int, int, int]], int]:
    """Whole readouts as (doc, errors, bits), and how many beats broke the framing (serial:
    first/last and ``width`` bits; sparse: a header, ids in range and each once, ``count``)."""
    if beats and SparseBeat is not None and isinstance(beats[0], SparseBeat):
        return _group_sparse(beats, width)
    out, bits, count, framing = [], 0, 0, 0
    for beat in beats:
        if beat.first and count:
            framing += 1
            bits, count = 0, 0
        if not beat.first and not count:
            framing += 1
            continue
        bits |= beat.bit << count
        count += 1
        if beat.last:
            if count != width:
                framing += 1
            else:
                out.append((beat.doc, beat.errors, bits))
            bits, count = 0, 0
    return out, framing


def _group_sparse(beats: Sequence, width: int) -> tuple[list[tuple[int, int, int]], int]:
    out, framing = [], 0
    in_doc, bits, ids, doc, errors = False, 0, 0, 0, 0
    for beat in beats:
        if beat.header:
            framing += in_doc  # the previous document never ended
            in_doc, bits, ids, doc, errors = True, 0, 0, beat.doc, beat.errors
        elif not in_doc:
            framing += 1
            continue
        else:
            if not 0 <= beat.id < width or bits >> beat.id & 1:
                framing += 1
            bits |= 1 << beat.id
            ids += 1
        if beat.last:
            if beat.count != ids or beat.doc != doc:
                framing += 1
            out.append((doc, errors, bits))
            in_doc = False
    return out, framing + in_doc
