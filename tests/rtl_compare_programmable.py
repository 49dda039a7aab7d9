"""Run the programmable engine in the Amaranth simulator beside its model, cycle by cycle."""

from __future__ import annotations

import random
from typing import Sequence, Union

from xpfilt.compiler.programmable import HardwareSpec
from xpfilt.hdl.programmable import ProgrammableEngine
from xpfilt.model.programmable import ProgrammableModel

from .rtl_compare import BenchCache, shown_beat

BENCHES = BenchCache()


def stream_bits(stream: bytes) -> list[int]:
    return [stream[i // 8] >> (i % 8) & 1 for i in range(len(stream) * 8)]


def compare_programmable(
    spec: HardwareSpec,
    items: Sequence[Union[bytes, tuple]],
    *,
    seed: int = 0,
    p_valid: float = 0.9,
    p_ready: float = 0.9,
    extra_cycles: int = 300,
) -> dict:
    """``items``: documents (bytes) and configuration streams (``("config", stream_bytes)``),
    sent in order (a configuration is sent whole before the next document starts), or
    ``("config+doc", stream_bytes, document[, lead])``: both at once (the document only after
    ``lead`` configuration bits), so the stream completes while the document is in flight and
    its commit must wait for the document boundary.
    Returns the first mismatch (or None), the readout beats, the status after each item."""
    rng = random.Random(seed)
    model = ProgrammableModel(spec)
    result = {"mismatch": None, "beats": [], "cycles": 0, "status": []}

    async def testbench(dut, ctx):
        for item in list(items) + [None]:
            lead = 0
            if item is None:
                byte_stream, cfg = [], []
            elif isinstance(item, tuple):  # ("config", stream) or ("config+doc", stream, doc)
                cfg = stream_bits(item[1])
                doc = item[2] if len(item) > 2 else b""
                lead = item[3] if len(item) > 3 else 0
                byte_stream = [(b, i == len(doc) - 1) for i, b in enumerate(doc)]
            else:
                byte_stream, cfg = [(b, i == len(item) - 1) for i, b in enumerate(item)], []
            i = j = idle = 0
            while (
                i < len(byte_stream) or j < len(cfg) or idle < (extra_cycles if item is None else 3)
            ):
                valid = i < len(byte_stream) and j >= lead and rng.random() < p_valid
                data, last = byte_stream[i] if i < len(byte_stream) else (0, False)
                cfg_valid = j < len(cfg) and rng.random() < p_valid
                cfg_bit = cfg[j] if j < len(cfg) else 0
                cfg_last = j == len(cfg) - 1
                out_ready = rng.random() < p_ready
                ctx.set(dut.bytes_in.valid, valid)
                ctx.set(dut.bytes_in.payload.data, data)
                ctx.set(dut.bytes_in.payload.last, last)
                ctx.set(dut.config.valid, cfg_valid)
                ctx.set(dut.config.payload.bit, cfg_bit)
                ctx.set(dut.config.payload.last, cfg_last)
                ctx.set(dut.readout.ready, out_ready)
                ready = bool(ctx.get(dut.bytes_in.ready))
                cfg_ready = bool(ctx.get(dut.config.ready))
                beat = shown_beat(ctx, dut.readout)
                st = ctx.get(dut.config_status)
                status = {
                    "generation": st.generation,
                    "loaded": st.loaded,
                    "rejected": st.rejected,
                    "pending": st.pending,
                }
                m_status = model.status
                expected = model.step(valid, data, last, out_ready, cfg_valid, cfg_bit, cfg_last)
                got = (ready, beat, cfg_ready, status)
                want = (*expected, model.config_ready, m_status)
                if got != want and result["mismatch"] is None:
                    result["mismatch"] = {"cycle": result["cycles"], "rtl": got, "model": want}
                if beat is not None and out_ready:
                    result["beats"].append(beat)
                i += valid and ready
                j += cfg_valid and cfg_ready
                done = i >= len(byte_stream) and j >= len(cfg)
                idle = idle + 1 if done else 0
                result["cycles"] += 1
                await ctx.tick()
            result["status"].append(model.status)

    BENCHES.run(spec, lambda: ProgrammableEngine(spec), testbench)
    return result
