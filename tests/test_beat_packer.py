"""The board's width converter (:class:`xpfilt.boards.hostlink.BeatPacker`, Amaranth simulator):
document bytes in, W-byte beats out, exactly the beats the engine's model takes
(:func:`xpfilt.model.custom.document_beats`), at W = 1, 2, 4, 8, with valid and ready always 1
and under random stalls on both sides; one byte a cycle when nothing stalls."""

import random

import pytest
from amaranth.sim import Simulator

from xpfilt.boards.hostlink import BeatPacker
from xpfilt.model.custom import document_beats

#: Documents of 1-3 bytes back to back (every end at every lane), then longer ones.
DOCS = [b"a", b"bc", b"def", b"g", b"hi", b"j", b"klm", b"nop", b"q"] * 2 + [
    bytes(range(32, 32 + n)) for n in (7, 8, 9, 16, 17)
]


def expected(docs, width):
    """(lane bytes padded with zeros, count, last) of every beat."""
    beats = []
    for doc in docs:
        for data, last in document_beats(doc, width):
            data = bytes([data]) if width == 1 else data
            beats.append((data + bytes(width - len(data)), len(data), last))
    return beats


def run(docs, width, *, p_valid=1.0, p_ready=1.0, seed=0):
    """The beats the packer gives for ``docs`` and the cycles it took."""
    dut = BeatPacker(width)
    sim = Simulator(dut)
    sim.add_clock(1e-8)
    stream = [(b, i == len(doc) - 1) for doc in docs for i, b in enumerate(doc)]
    beats, cycles = [], [0]
    total = len(expected(docs, width))

    async def source(ctx):
        rng = random.Random(seed)
        for byte, last in stream:
            while rng.random() >= p_valid:
                ctx.set(dut.bytes_in.valid, 0)
                await ctx.tick()
            ctx.set(dut.bytes_in.valid, 1)
            ctx.set(dut.bytes_in.payload, {"data": byte, "last": last})
            await ctx.tick().until(dut.bytes_in.ready)
        ctx.set(dut.bytes_in.valid, 0)

    async def sink(ctx):
        rng = random.Random(seed + 1)
        while len(beats) < total:
            ready = rng.random() < p_ready
            ctx.set(dut.beats_out.ready, ready)
            await ctx.tick()
            cycles[0] += 1
        ctx.set(dut.beats_out.ready, 0)

    async def monitor(ctx):
        async for _, _, valid, ready, payload in ctx.tick().sample(
            dut.beats_out.valid, dut.beats_out.ready, dut.beats_out.payload
        ):
            if valid and ready:
                data = payload.data.to_bytes(width, "little")
                beats.append((data, payload.count, bool(payload.last)))

    sim.add_testbench(source)
    sim.add_testbench(sink)
    sim.add_process(monitor)
    sim.run_until(1e-8 * (40 * len(stream) + 100))
    return beats, cycles[0]


@pytest.mark.parametrize("width", [1, 2, 4, 8])
def test_packer_gives_the_models_beats_at_a_byte_a_cycle(width):
    beats, cycles = run(DOCS, width)
    assert beats == expected(DOCS, width)
    # valid and ready always 1: one byte a cycle (plus the output register's cycle)
    assert cycles <= sum(map(len, DOCS)) + 2


@pytest.mark.parametrize("width", [1, 2, 4, 8])
@pytest.mark.parametrize("p_valid, p_ready, seed", [(0.6, 0.5, 1), (1.0, 0.3, 2), (0.3, 1.0, 3)])
def test_packer_gives_the_models_beats_under_random_stalls(width, p_valid, p_ready, seed):
    beats, _ = run(DOCS, width, p_valid=p_valid, p_ready=p_ready, seed=seed)
    assert beats == expected(DOCS, width)


@pytest.mark.parametrize("width", [2, 4])
def test_packer_input_ready_is_a_register_that_holds_a_second_beat(width):
    """``bytes_in.ready`` comes from a flip-flop (a beat waits in a second register while the
    output is stalled), so a slow ``beats_out.ready`` (an AsyncFIFO's) is not in the path
    from the sender's ready: with the output stalled, a full beat and then a one-byte
    document's beat go in, then ready drops; both come out in order."""
    dut = BeatPacker(width)
    sim = Simulator(dut)
    sim.add_clock(1e-8)
    taken = []

    async def bench(ctx):
        ctx.set(dut.beats_out.ready, 0)
        stream = [(i, False) for i in range(width)] + [(0x55, True), (0x66, True), (0x77, True)]
        for byte, last in stream:
            ctx.set(dut.bytes_in.valid, 1)
            ctx.set(dut.bytes_in.payload, {"data": byte, "last": last})
            for _ in range(4):
                if ctx.get(dut.bytes_in.ready):
                    break
                await ctx.tick()
            else:
                break
            taken.append(byte)
            await ctx.tick()
        # the output drains both beats, in order
        ctx.set(dut.bytes_in.valid, 0)
        ctx.set(dut.beats_out.ready, 1)
        beats = []
        for _ in range(4):
            if ctx.get(dut.beats_out.valid):
                p = ctx.get(dut.beats_out.payload)
                beats.append((p.data.to_bytes(width, "little")[: p.count], bool(p.last)))
            await ctx.tick()
        assert beats == [(bytes(range(width)), False), (b"\x55", True)]

    sim.add_testbench(bench)
    sim.run()
    assert taken == [*range(width), 0x55]
