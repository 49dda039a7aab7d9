"""An 8N1 UART: one start bit, eight data bits (LSB first), one stop bit, no parity.

Both directions count ``divider`` clock cycles per bit (``round(clock / baud)``; a simulation may
use 4-8). :class:`UARTRx` samples each bit in its middle after a two-flip-flop synchronizer, so
it tolerates the usual few percent of baud-rate mismatch; :class:`UARTTx` drives the line from a
register (idle high).
"""

from amaranth.hdl import Cat, Module, Signal
from amaranth.lib import stream, wiring
from amaranth.lib.cdc import FFSynchronizer
from amaranth.lib.wiring import In, Out

__all__ = ["UARTRx", "UARTTx", "MIN_DIVIDER"]

#: The fewest clock cycles per bit the receiver supports (it samples at half a bit).
MIN_DIVIDER = 4


def _check_divider(divider) -> int:
    if not isinstance(divider, int) or divider < MIN_DIVIDER:
        raise ValueError(
            f"UART divider must be an integer of at least {MIN_DIVIDER} clock "
            f"cycles per bit, not {divider!r}"
        )
    return divider


class UARTRx(wiring.Component):
    """Receiver. Ports: ``rx`` (the pin, idle high), ``data`` + ``valid`` (a received byte,
    shown for the one cycle ``valid`` is high: a UART cannot wait, so the consumer must take it
    or count an overrun), ``error`` (one-cycle pulse: the stop bit was low; the receiver then
    waits for the line to return high)."""

    rx: In(1, init=1)
    data: Out(8)
    valid: Out(1)
    error: Out(1)

    def __init__(self, divider: int):
        self.divider = _check_divider(divider)
        super().__init__()

    def elaborate(self, platform):
        m = Module()
        divider = self.divider
        line = Signal(init=1)
        m.submodules.sync_rx = FFSynchronizer(self.rx, line, init=1)
        timer = Signal(range(divider))
        bits = Signal(range(8))
        shift = Signal(8)

        with m.If(timer != 0):
            m.d.sync += timer.eq(timer - 1)
        with m.FSM(name="uart_rx"):
            with m.State("IDLE"):
                with m.If(~line):  # the start bit's falling edge
                    m.d.sync += timer.eq(divider // 2 - 1)
                    m.next = "START"
            with m.State("START"):
                with m.If(timer == 0):
                    with m.If(line):  # a glitch, not a start bit
                        m.next = "IDLE"
                    with m.Else():
                        m.d.sync += [timer.eq(divider - 1), bits.eq(0)]
                        m.next = "DATA"
            with m.State("DATA"):
                with m.If(timer == 0):
                    m.d.sync += [
                        shift.eq(Cat(shift[1:], line)),
                        timer.eq(divider - 1),
                        bits.eq(bits + 1),
                    ]
                    with m.If(bits == 7):
                        m.next = "STOP"
            with m.State("STOP"):
                with m.If(timer == 0):
                    with m.If(line):
                        m.d.comb += self.valid.eq(1)
                        m.next = "IDLE"
                    with m.Else():
                        m.d.comb += self.error.eq(1)
                        m.next = "BREAK"
            with m.State("BREAK"):  # wait for the line to go idle
                with m.If(line):
                    m.next = "IDLE"
        m.d.comb += self.data.eq(shift)
        return m


class UARTTx(wiring.Component):
    """Transmitter. Ports: ``data`` (a stream of bytes; ``ready`` while the line is idle),
    ``tx`` (the pin, idle high), ``busy`` (a byte is on the line)."""

    data: In(stream.Signature(8))
    tx: Out(1, init=1)
    busy: Out(1)

    def __init__(self, divider: int):
        self.divider = _check_divider(divider)
        super().__init__()

    def elaborate(self, platform):
        m = Module()
        timer = Signal(range(self.divider))
        frame = Signal(10)  # start bit, 8 data bits, stop bit: shifted out LSB first
        left = Signal(range(11))  # bits of ``frame`` still to send
        idle = (left == 0) & (timer == 0)
        m.d.comb += [self.data.ready.eq(idle), self.busy.eq(~idle)]
        with m.If(timer != 0):
            m.d.sync += timer.eq(timer - 1)
        with m.Elif(left != 0):  # the next bit goes on the line for ``divider`` cycles
            m.d.sync += [
                self.tx.eq(frame[0]),
                frame.eq(frame >> 1),
                left.eq(left - 1),
                timer.eq(self.divider - 1),
            ]
        with m.Elif(self.data.valid):
            m.d.sync += [frame.eq(Cat(0, self.data.payload, 1)), left.eq(10)]
        return m
