"""A first-in first-out queue across two clock domains whose read side is short.

Amaranth's ``AsyncFIFO`` reads its storage at the *next* read pointer into a register (so that
it maps to block RAM): in the read domain its emptiness, the read enable and the pointer's
adder come before the storage's address, then the LUT RAM, then the read register. On the
Colorlight's -6 ECP5 at 125 MHz that path was the link domain's worst in two builds (the
bridge's receive FIFO, 8.00 ns; the readout FIFO, 8.11 ns; three quarters routing to LUT RAMs
spread over a wide entry). :class:`LutAsyncFIFO` reads its LUT RAM asynchronously at the read
pointer's register: the adder ends at a register, the storage's output goes to the reader's
register, and no path has both.

The pointers are Gray-coded with one bit more than the address (full: the top two bits
differ, the rest equal), each passed to the other domain through two flip-flops; a reset of
the write domain empties the queue (the read side takes the write pointer then).
"""

from amaranth.hdl import Cat, Elaboratable, Module, ResetSignal, Signal
from amaranth.lib.cdc import AsyncFFSynchronizer, FFSynchronizer
from amaranth.lib.memory import Memory

__all__ = ["LutAsyncFIFO"]


def _gray(value):
    return value ^ (value >> 1)


def _binary(gray):
    """Gray code back to binary: each bit the XOR of the Gray bits from it up."""
    bits = [gray[-1]]
    for i in reversed(range(len(gray) - 1)):
        bits.insert(0, bits[0] ^ gray[i])
    return Cat(*bits)


class LutAsyncFIFO(Elaboratable):
    """``width``-bit entries, ``depth`` of them (a power of 2, at least 2): ``w_data``,
    ``w_en``, ``w_rdy`` in ``w_domain``; ``r_data``, ``r_en``, ``r_rdy`` in ``r_domain``, as
    Amaranth's ``AsyncFIFO`` (``r_data`` is the oldest entry while ``r_rdy``; ``r_en`` takes
    it). For small queues in LUT RAM (``r_data`` is the storage's asynchronous read)."""

    def __init__(self, *, width: int, depth: int, w_domain: str, r_domain: str):
        if depth < 2 or depth & (depth - 1):
            raise ValueError(f"LutAsyncFIFO depth must be a power of 2 >= 2, not {depth}")
        self.width, self.depth = width, depth
        self.w_domain, self.r_domain = w_domain, r_domain
        self.w_data, self.w_en, self.w_rdy = Signal(width), Signal(), Signal()
        self.r_data, self.r_en, self.r_rdy = Signal(width), Signal(), Signal()

    def elaborate(self, platform):
        m = Module()
        bits = self.depth.bit_length()  # an address bit more: full and empty differ
        w, r = self.w_domain, self.r_domain

        produce, produce_gray = Signal(bits), Signal(bits)  # write domain
        # the read side's pointers are not reset by its own reset: a write-domain reset
        # (below) sets them to the write pointer
        consume = Signal(bits, reset_less=True)
        consume_gray = Signal(bits, reset_less=True)
        produce_gray_r, consume_gray_w = Signal(bits), Signal(bits)
        m.submodules.produce_sync = FFSynchronizer(produce_gray, produce_gray_r, o_domain=r)
        m.submodules.consume_sync = FFSynchronizer(consume_gray, consume_gray_w, o_domain=w)

        full = (
            (produce_gray[-1] != consume_gray_w[-1])
            & (produce_gray[-2] != consume_gray_w[-2])
            & (produce_gray[:-2] == consume_gray_w[:-2])
        )
        empty = Signal()
        m.d.comb += [
            empty.eq(consume_gray == produce_gray_r),
            self.w_rdy.eq(~full),
            self.r_rdy.eq(~empty),
        ]
        write = self.w_en & self.w_rdy
        read = self.r_en & self.r_rdy

        m.submodules.storage = storage = Memory(shape=self.width, depth=self.depth, init=[])
        w_port = storage.write_port(domain=w)
        r_port = storage.read_port(domain="comb")
        m.d.comb += [
            w_port.addr.eq(produce[:-1]),
            w_port.data.eq(self.w_data),
            w_port.en.eq(write),
            r_port.addr.eq(consume[:-1]),
            self.r_data.eq(r_port.data),
        ]

        produce_next = Signal(bits)
        m.d.comb += produce_next.eq(produce + write)
        m.d[w] += [produce.eq(produce_next), produce_gray.eq(_gray(produce_next))]
        consume_next = Signal(bits)
        m.d.comb += consume_next.eq(consume + read)
        m.d[r] += [consume.eq(consume_next), consume_gray.eq(_gray(consume_next))]

        # the write domain's reset, into the read domain (asserted at once, released in step)
        w_reset = Signal()
        m.submodules.reset_sync = AsyncFFSynchronizer(
            ResetSignal(w, allow_reset_less=True), w_reset, o_domain=r
        )
        with m.If(w_reset):
            m.d.comb += empty.eq(1)
            m.d[r] += [consume.eq(_binary(produce_gray_r)), consume_gray.eq(produce_gray_r)]
        return m
