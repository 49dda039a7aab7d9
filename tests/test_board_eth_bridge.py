"""LiteEth's 32-bit raw UDP port to the endpoint's bytes and back
(:class:`xpfilt.boards.eth_bridge.UdpPortBridge`), in the Amaranth simulator with LiteEth's
clock (62.5 MHz) and the link's (125 MHz): every datagram length modulo 4, byte lane 0 first,
``last`` on the final byte, ``last_be`` one-hot on the last word, the sender and error kept."""

import random

import pytest
from amaranth.sim import Simulator

from xpfilt.boards.eth_bridge import LANES, UdpPortBridge

LENGTHS = [1, 2, 3, 4, 5, 6, 7, 8, 9, 31, 64, 65, 29, 30, 300, 28]


def datagrams():
    rng = random.Random(35)
    return [bytes(rng.randrange(256) for _ in range(n)) for n in LENGTHS]


def bench():
    bridge = UdpPortBridge(depth=4)
    sim = Simulator(bridge)
    sim.add_clock(16e-9, domain="eth")
    sim.add_clock(8e-9, domain="link")
    return bridge, sim


@pytest.mark.parametrize("ready_p", [0.7, 1.0])
def test_bridge_receives_words_as_bytes(ready_p):
    """With the endpoint always ready, a datagram of a protocol datagram's size or more (28
    bytes: header and CRC) goes out a byte every link cycle after at most 3 idle ones (its
    sender's two entries, a last word of 1-2 bytes before it; LiteEth's side brings a FIFO
    entry per 2 link cycles, so shorter ones wait for it)."""
    bridge, sim = bench()
    sent = datagrams()
    got, current = [], bytearray()
    idle = [0]  # link cycles without a byte, after each datagram's last byte (from the first)

    async def eth(ctx):
        w = bridge.wide_rx
        for n, payload in enumerate(sent):
            words = [payload[i : i + LANES] for i in range(0, len(payload), LANES)]
            for i, word in enumerate(words):
                last = i == len(words) - 1
                ctx.set(w.valid, 1)
                ctx.set(w.payload.data, int.from_bytes(word.ljust(LANES, b"\xee"), "little"))
                ctx.set(w.payload.last, last)
                ctx.set(w.payload.last_be, 1 << (len(word) - 1) if last else 0)
                ctx.set(w.payload.error, n == 3)
                ctx.set(w.payload.ip, 0x0A000000 + n)
                ctx.set(w.payload.port, 5000 + n)
                await ctx.tick("eth").until(w.ready)
        ctx.set(w.valid, 0)

    async def link(ctx):
        r = bridge.rx
        ready = random.Random(1)
        while len(got) < len(sent):
            ctx.set(r.ready, ready.random() < ready_p)
            _, _, valid, taken, byte, last, error, ip, port = await ctx.tick("link").sample(
                r.valid, r.ready, r.payload.data, r.payload.last, r.payload.error,
                r.payload.ip, r.payload.port,
            )  # fmt: skip
            if (got or current) and not valid:
                idle[-1] += 1
            if valid and taken:
                n = len(got)
                assert (error, ip, port) == (n == 3, 0x0A000000 + n, 5000 + n)
                current.append(byte)
                if last:
                    got.append(bytes(current))
                    current.clear()
                    idle.append(0)

    sim.add_testbench(eth)
    sim.add_testbench(link)
    sim.run_until(100e-6)
    assert got == sent
    if ready_p == 1.0:
        assert all(n <= 3 for n, d in zip(idle[:-1], sent[1:]) if len(d) >= 28), idle


@pytest.mark.parametrize("gap_p, ready_p", [(0.2, 0.6), (0.0, 1.0)])
def test_bridge_packs_bytes_into_words(gap_p, ready_p):
    """With bytes every cycle and LiteEth always ready, the endpoint waits at most a cycle
    in a datagram (its last word, made while the word before is still held)."""
    bridge, sim = bench()
    sent = datagrams()
    got, current = [], bytearray()
    waits = [0] * len(sent)  # link cycles a byte waited for ``ready``, per datagram

    async def link(ctx):
        t = bridge.tx
        gaps = random.Random(2)
        for n, payload in enumerate(sent):
            for i, byte in enumerate(payload):
                ctx.set(t.valid, 1)
                ctx.set(t.payload.data, byte)
                ctx.set(t.payload.last, i == len(payload) - 1)
                ctx.set(t.payload.ip, 0x0A000000 + n)
                ctx.set(t.payload.length, len(payload))
                while not (await ctx.tick("link").sample(t.ready))[-1]:
                    waits[n] += 1
                if gaps.random() < gap_p:
                    ctx.set(t.valid, 0)
                    await ctx.tick("link")
        ctx.set(t.valid, 0)

    async def eth(ctx):
        w = bridge.wide_tx
        ready = random.Random(3)
        while len(got) < len(sent):
            ctx.set(w.ready, ready.random() < ready_p)
            _, _, valid, taken, word, last, last_be, ip, length = await ctx.tick("eth").sample(
                w.valid, w.ready, w.payload.data, w.payload.last, w.payload.last_be,
                w.payload.ip, w.payload.length,
            )  # fmt: skip
            if valid and taken:
                n = len(got)
                assert (ip, length) == (0x0A000000 + n, len(sent[n]))
                raw = word.to_bytes(LANES, "little")
                if last:
                    assert last_be in (1, 2, 4, 8)
                    current.extend(raw[: last_be.bit_length()])
                    got.append(bytes(current))
                    current.clear()
                else:
                    assert last_be == 0
                    current.extend(raw)

    sim.add_testbench(link)
    sim.add_testbench(eth)
    sim.run_until(100e-6)
    assert got == sent
    if ready_p == 1.0:
        assert max(waits) <= 1, waits
