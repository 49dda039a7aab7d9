"""LiteEth's 32-bit raw UDP port to the endpoint's byte streams, across clock domains.

LiteEth's core runs its MAC, IP and UDP datapath 32 bits wide in its system clock (the ``eth``
domain, 62.5 MHz on the boards: twice the 31.25 M words/s a 1 Gb/s line needs); its 8-bit
datapath did not reach 125 MHz on the ECP5 (84.2 MHz on the -8, 56.9 MHz on the -6: the IPv4
checksum, the UDP receive FSM and the depacketizer in one cycle). The protocol endpoint
(:class:`xpfilt.boards.udp_link.UdpEndpoint`) takes and gives a byte per cycle in the ``link``
domain (125 MHz). :class:`UdpPortBridge` sits between, a clock-crossing queue each way:

* receive: each 32-bit word of a datagram (``last_be``, one-hot, marks the last valid byte of
  its last word; byte lane 0 is the first byte) goes through the FIFO with the number of its
  valid bytes, and is given out a byte per cycle in the ``link`` domain, with ``last`` on the
  datagram's final byte; ``error`` travels with every word, the sender's address and port as
  two entries ahead of the datagram's first (a :class:`xpfilt.boards.cdc.LutAsyncFIFO`);
* transmit: the bytes of a datagram are packed four to a word (lane 0 first) and the word goes
  from a register through an ``AsyncFIFO`` with ``last_be`` on the datagram's last word.

A byte per 125 MHz cycle is the line's own rate, so neither direction holds the line back
(LiteEth's headers reach its transmit FIFO ahead of the payload, at 4 bytes per 62.5 MHz
cycle: the PHY does not run dry when the payload follows at the line's rate).
"""

from amaranth.hdl import Const, Module, Mux, Signal
from amaranth.lib import data, stream, wiring
from amaranth.lib.fifo import AsyncFIFO
from amaranth.lib.wiring import In, Out

from xpfilt.boards.cdc import LutAsyncFIFO
from xpfilt.boards.udp_link import RxBeat, TxBeat

__all__ = ["RxWord", "TxWord", "UdpPortBridge", "LANES"]

#: Bytes per word of LiteEth's datapath.
LANES = 4


class RxWord(data.Struct):
    """A word of a received datagram (LiteEth's raw source)."""

    data: 8 * LANES
    last: 1
    last_be: LANES
    error: 1
    ip: 32
    port: 16


class TxWord(data.Struct):
    """A word of a datagram to send (LiteEth's raw sink); ``length``: its UDP payload's."""

    data: 8 * LANES
    last: 1
    last_be: LANES
    ip: 32
    length: 16


class _RxEntry(data.Struct):
    """An entry of the receive FIFO: a word of a datagram, or (``sender``) a word of its
    sender's address, the two of which go ahead of its first word (``final`` 0: the IP
    address, 1: the port), so that the FIFO is not 48 bits wider for what changes once a
    datagram."""

    data: 8 * LANES
    final: 2  # the index of the word's last valid byte
    last: 1
    error: 1
    sender: 1


class UdpPortBridge(wiring.Component):
    """``wide_rx`` / ``wide_tx``: LiteEth's raw port (``eth`` domain); ``rx`` / ``tx``: the
    endpoint's byte streams (``link`` domain). ``depth``: words each FIFO holds."""

    wide_rx: In(stream.Signature(RxWord))
    wide_tx: Out(stream.Signature(TxWord))
    rx: Out(stream.Signature(RxBeat))
    tx: In(stream.Signature(TxBeat))

    def __init__(self, depth: int = 16):
        self.depth = depth
        super().__init__()

    def elaborate(self, platform):
        m = Module()

        # --- receive: eth words -> link bytes -----------------------------------------------
        entry = data.Layout.cast(_RxEntry)
        # (its read side short: the link domain's worst path on the Colorlight was
        # ``AsyncFIFO``'s, see :mod:`xpfilt.boards.cdc`)
        m.submodules.rx_fifo = rx_fifo = LutAsyncFIFO(
            width=entry.size, depth=self.depth, w_domain="eth", r_domain="link"
        )
        w = self.wide_rx.payload
        put = Signal(_RxEntry)
        # where the next entry is in a datagram: before its first word, its sender's IP address
        # then port go in (LiteEth's word waits, not ready, two eth cycles of ~375 a frame)
        phase = Signal(range(3))  # 0: the IP address, 1: the port, 2: its words
        words = phase == 2
        m.d.comb += [
            put.data.eq(Mux(words, w.data, Mux(phase == 0, w.ip, w.port))),
            # the highest lane marked (none marked: the whole word)
            put.final.eq(
                Mux(words, Mux(w.last & w.last_be.any(), _highest(w.last_be), LANES - 1), phase)
            ),
            put.last.eq(words & w.last),
            put.error.eq(w.error),
            put.sender.eq(~words),
            rx_fifo.w_data.eq(put),
            rx_fifo.w_en.eq(self.wide_rx.valid),
            self.wide_rx.ready.eq(rx_fifo.w_rdy & words),
        ]
        with m.If(self.wide_rx.valid & rx_fifo.w_rdy):
            m.d.eth += phase.eq(Mux(words & ~w.last, 2, Mux(words, 0, phase + 1)))

        # two words: ``word``, the one going out a byte a cycle, and ``ahead``, the next,
        # taken from the FIFO whenever that slot is empty: the FIFO's read enable is then a
        # flip-flop (not the endpoint's ready, through the pointer's adder and the LUT RAM's
        # address to its read register); a word of 1-3 bytes may leave a cycle idle, and a
        # datagram's sender (two entries, taken into ``ahead_ip`` and ``ahead_port``) two
        word, ahead = Signal(_RxEntry), Signal(_RxEntry)
        have, have_ahead = Signal(), Signal()
        ip, port, ahead_ip, ahead_port = Signal(32), Signal(16), Signal(32), Signal(16)
        lane = Signal(range(LANES))
        end = lane == word.final
        out = self.rx.payload
        m.d.comb += [
            self.rx.valid.eq(have),
            out.data.eq(word.data.word_select(lane, 8)),
            out.last.eq(word.last & end),
            out.error.eq(word.error),
            out.ip.eq(ip),
            out.port.eq(port),
        ]
        advance = ~have | (self.rx.ready & end)
        with m.If(advance):
            m.d.link += [
                have.eq(have_ahead), word.eq(ahead), ip.eq(ahead_ip), port.eq(ahead_port),
                lane.eq(0),
            ]  # fmt: skip
        with m.Elif(self.rx.ready):
            m.d.link += lane.eq(lane + 1)
        m.d.comb += rx_fifo.r_en.eq(~have_ahead)
        got = data.View(entry, rx_fifo.r_data)
        with m.If(~have_ahead):
            m.d.link += [have_ahead.eq(rx_fifo.r_rdy & ~got.sender), ahead.eq(got)]
            with m.If(rx_fifo.r_rdy & got.sender & (got.final == 0)):
                m.d.link += ahead_ip.eq(got.data)
            with m.If(rx_fifo.r_rdy & got.sender & (got.final == 1)):
                m.d.link += ahead_port.eq(got.data[:16])
        with m.Elif(advance):
            m.d.link += have_ahead.eq(0)

        # --- transmit: link bytes -> eth words ----------------------------------------------
        tx_layout = data.Layout.cast(TxWord)
        m.submodules.tx_fifo = tx_fifo = AsyncFIFO(
            width=tx_layout.size, depth=self.depth, w_domain="link", r_domain="eth"
        )
        b = self.tx.payload
        acc = Signal(8 * LANES)
        at = Signal(range(LANES))
        merged = Signal(8 * LANES)
        m.d.comb += merged.eq(acc | (b.data << (at * 8)))
        full = (at == LANES - 1) | b.last
        # a word made goes into ``held``, and from there into the FIFO: the FIFO's write enable
        # is a flip-flop, and its fullness does not reach the endpoint's ready (a word can be
        # made while the one before waits; the next waits for it: a datagram's last word, made
        # a cycle after the one before, may cost a cycle)
        held = Signal(TxWord)
        held_valid = Signal()
        m.d.comb += [
            tx_fifo.w_data.eq(held),
            tx_fifo.w_en.eq(held_valid),
            self.tx.ready.eq(~full | ~held_valid),
        ]
        with m.If(tx_fifo.w_rdy):
            m.d.link += held_valid.eq(0)
        with m.If(self.tx.valid & self.tx.ready):
            with m.If(full):
                m.d.link += [
                    acc.eq(0),
                    at.eq(0),
                    held.data.eq(merged),
                    held.last.eq(b.last),
                    held.last_be.eq(Mux(b.last, 1 << at, 0)),
                    held.ip.eq(b.ip),
                    held.length.eq(b.length),
                    held_valid.eq(1),
                ]
            with m.Else():
                m.d.link += [acc.eq(merged), at.eq(at + 1)]
        m.d.comb += [
            self.wide_tx.valid.eq(tx_fifo.r_rdy),
            self.wide_tx.payload.eq(tx_fifo.r_data),
            tx_fifo.r_en.eq(self.wide_tx.ready),
        ]
        return m


def _highest(bits):
    """The index of the highest bit set in ``bits`` (a value of :data:`LANES` bits)."""
    index = Const(0, 2)
    for lane in range(1, LANES):
        index = Mux(bits[lane], lane, index)
    return index
