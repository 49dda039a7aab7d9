"""An engine on a board: the engine behind a UART host link, status on LEDs.

:class:`BoardCore` is everything but the pins, so a simulator can drive ``rx`` and sample
``tx``: UART receiver -> FIFO -> :class:`xpfilt.boards.hostlink.CommandDecoder` -> the engine's
``bytes_in`` (a W-byte engine's through a :class:`xpfilt.boards.hostlink.BeatPacker`) (and, programmable, ``config`` through a :class:`xpfilt.boards.hostlink.ConfigSerializer`);
the engine's ``readout`` and the status -> :class:`xpfilt.boards.hostlink.ResponseEncoder` -> UART
transmitter. The protocol is described in :mod:`xpfilt.boards.protocol`.

:class:`BoardTop` puts a core on a platform (amaranth-boards): ``uart`` 0 and the LEDs named
by the board description; the ``sync`` domain is the platform's default clock, or a PLL from it
(:mod:`xpfilt.boards.clocks`), then held in reset until the PLL locks (the reset synchronised to
the PLL's clock, through a DCCA onto a global net).

LEDs (:class:`LedLayout`): ``heartbeat`` (blinks at 1 Hz: the bitstream runs), ``busy`` (a
document or a response is moving; stretched so a short one is visible), ``error`` (a link
error not yet reported by a status frame, or the last document was flagged), ``loaded``
(programmable: a configuration is active; custom: always on).
"""

from typing import Optional, Sequence

from amaranth.hdl import ClockDomain, ClockSignal, Instance, Module, ResetSignal, Signal
from amaranth.lib import data, io, wiring
from amaranth.lib.cdc import ResetSynchronizer
from amaranth.lib.fifo import SyncFIFOBuffered
from amaranth.lib.wiring import In, Out

from xpfilt.boards.clocks import Ecp5Pll, Ecp5PllClock
from xpfilt.boards.hostlink import BeatPacker, CommandDecoder, ConfigSerializer, ResponseEncoder
from xpfilt.boards.protocol import PROTOCOL_VERSION, LinkErrors, Mode
from xpfilt.boards.uart import UARTRx, UARTTx
from xpfilt.hwspec.readout import ReadoutKind

__all__ = ["LedLayout", "LED_FUNCTIONS", "BoardCore", "EngineInstance", "BoardTop"]


class LedLayout(data.Struct):
    heartbeat: 1
    busy: 1
    error: 1
    loaded: 1


LED_FUNCTIONS = tuple(name for name, _ in data.Layout.cast(LedLayout))


class EngineInstance(wiring.Component):
    """An engine as an instance of its separately generated Verilog module (``xpfilt compile``
    output): the ports of ``signature`` (the engine component's), flattened the way Amaranth
    names them (``bytes_in__valid``, ...), plus ``clk`` and ``rst``."""

    def __init__(self, signature: wiring.Signature, module: str):
        self.module = module
        super().__init__(signature)

    def elaborate(self, platform):
        m = Module()
        ports = {}
        for path, member, value in self.signature.flatten(self):
            direction = "i" if member.flow == In else "o"
            ports[f"{direction}_{'__'.join(map(str, path))}"] = value
        m.submodules.engine = Instance(
            self.module, i_clk=ClockSignal(), i_rst=ResetSignal(allow_reset_less=True), **ports
        )
        return m


class BoardCore(wiring.Component):
    """The engine behind the host link. Ports: ``rx``/``tx`` (UART pins), ``leds``.

    ``engine``: a component with ``bytes_in`` and ``readout`` (and, for ``Mode.PROGRAMMABLE``,
    ``config`` and ``config_status``) -- the engine itself or an :class:`EngineInstance`.
    ``width``/``identity``: reported in status frames; ``readout``: the engine's readout kind.
    ``divider``: clock cycles per UART bit.
    ``heartbeat``: clock cycles per LED toggle. ``busy_stretch``: cycles the busy LED stays on.
    ``bytes_per_cycle``: the bytes of the engine's ``bytes_in`` beats (W > 1: a custom engine's
    ``WideByteLayout`` beats, packed from the decoder's bytes).
    """

    rx: In(1, init=1)
    tx: Out(1, init=1)
    leds: Out(LedLayout)

    def __init__(
        self,
        engine: wiring.Component,
        *,
        mode: Mode,
        width: int,
        identity: int,
        divider: int,
        heartbeat: int,
        busy_stretch: int = 1 << 16,
        fifo_depth: int = 64,
        readout: ReadoutKind = ReadoutKind.SERIAL,
        bytes_per_cycle: int = 1,
    ):
        if not isinstance(mode, Mode):
            raise TypeError(f"mode must be a xpfilt.boards.protocol.Mode, not {mode!r}")
        if not 1 <= width < 1 << 32:
            raise ValueError(f"readout width must be between 1 and 2**32 - 1, not {width!r}")
        if heartbeat < 1 or busy_stretch < 1:
            raise ValueError(
                f"heartbeat and busy stretch must be at least 1 cycle, not "
                f"{heartbeat!r} and {busy_stretch!r}"
            )
        members = engine.signature.members
        needed = ["bytes_in", "readout"] + (
            ["config", "config_status"] if mode == Mode.PROGRAMMABLE else []
        )
        missing = [name for name in needed if name not in members]
        if missing:
            raise ValueError(
                f"engine must have ports {', '.join(needed)} for mode "
                f"{mode.name.lower()}, not lack {', '.join(missing)}"
            )
        if bytes_per_cycle != 1 and mode is Mode.PROGRAMMABLE:
            raise ValueError(
                f"bytes per cycle must be 1 with a programmable engine, not {bytes_per_cycle!r}"
            )
        self.bytes_per_cycle = bytes_per_cycle
        self.engine = engine
        self.mode = mode
        self.width = width
        self.identity = identity & 0xFFFFFFFF
        self.divider = divider
        self.heartbeat = heartbeat
        self.busy_stretch = busy_stretch
        self.fifo_depth = fifo_depth
        self.readout = readout
        super().__init__()

    def elaborate(self, platform):
        m = Module()
        programmable = self.mode == Mode.PROGRAMMABLE
        m.submodules.engine = engine = self.engine
        m.submodules.uart_rx = rx = UARTRx(self.divider)
        m.submodules.uart_tx = tx = UARTTx(self.divider)
        m.submodules.rx_fifo = fifo = SyncFIFOBuffered(width=8, depth=self.fifo_depth)
        m.submodules.decoder = decoder = CommandDecoder(config=programmable)
        m.submodules.encoder = encoder = ResponseEncoder(self.readout, self.width)

        m.d.comb += [
            rx.rx.eq(self.rx),
            self.tx.eq(tx.tx),
            fifo.w_data.eq(rx.data),
            fifo.w_en.eq(rx.valid),
            decoder.bytes_in.valid.eq(fifo.r_rdy),
            decoder.bytes_in.payload.eq(fifo.r_data),
            fifo.r_en.eq(decoder.bytes_in.ready),
        ]
        wiring.connect(m, engine.readout, encoder.readout)
        wiring.connect(m, encoder.bytes_out, tx.data)
        if programmable:
            m.submodules.config_bits = serializer = ConfigSerializer()
            wiring.connect(m, decoder.config, serializer.bytes_in)
            wiring.connect(m, serializer.bits, engine.config)
            config_status = engine.config_status
            idle = serializer.idle
        else:
            m.d.comb += decoder.config.ready.eq(1)  # never valid: C frames are refused
            config_status = None
            idle = 1
        doc = engine.bytes_in
        if self.bytes_per_cycle > 1:
            m.submodules.packer = packer = BeatPacker(self.bytes_per_cycle)
            wiring.connect(m, packer.beats_out, engine.bytes_in)
            doc = packer.bytes_in
        m.d.comb += [
            doc.payload.eq(decoder.document.payload),
            doc.valid.eq(decoder.document.valid & idle),
            decoder.document.ready.eq(doc.ready & idle),
        ]

        # --- sticky link errors, reported (and cleared) by the next status frame ---
        errors = Signal(LinkErrors)
        with m.If(encoder.status_sent):
            m.d.sync += errors.eq(0)
        with m.If(rx.valid & ~fifo.w_rdy):
            m.d.sync += errors.overrun.eq(1)
        with m.If(rx.error):
            m.d.sync += errors.framing.eq(1)
        with m.If(decoder.error):
            m.d.sync += errors.protocol.eq(1)

        documents = Signal(16)
        doc_in = engine.bytes_in
        with m.If(doc_in.valid & doc_in.ready & doc_in.payload.last):
            m.d.sync += documents.eq(documents + 1)

        status = encoder.status
        m.d.comb += [
            encoder.status_request.eq(decoder.status_request),
            status.version.eq(PROTOCOL_VERSION),
            status.mode.eq(self.mode.value),
            status.width.eq(self.width),
            status.identity.eq(self.identity),
            status.overrun.eq(errors.overrun),
            status.framing.eq(errors.framing),
            status.protocol.eq(errors.protocol),
            status.documents.eq(documents),
        ]
        if config_status is not None:
            m.d.comb += [
                status.generation.eq(config_status.generation),
                status.loaded.eq(config_status.loaded),
                status.rejected.eq(config_status.rejected),
                status.pending.eq(config_status.pending),
            ]

        # --- LEDs ---
        beat = Signal(range(self.heartbeat))
        with m.If(beat == self.heartbeat - 1):
            m.d.sync += [beat.eq(0), self.leds.heartbeat.eq(~self.leds.heartbeat)]
        with m.Else():
            m.d.sync += beat.eq(beat + 1)
        # from registers: the activity a cycle late, the count's sign bit (no compare)
        active = Signal()
        m.d.sync += active.eq((doc_in.valid & doc_in.ready) | engine.readout.valid | tx.busy)
        stretch = Signal(range(-1, self.busy_stretch), init=-1)  # lit while >= 0
        with m.If(active):
            m.d.sync += stretch.eq(self.busy_stretch - 1)
        with m.Elif(~stretch[-1]):
            m.d.sync += stretch.eq(stretch - 1)
        flagged = Signal()  # the last document read out raised error flags
        readout = engine.readout
        opens = (
            readout.payload.first if self.readout is ReadoutKind.SERIAL else readout.payload.header
        )  # the beat that opens a document
        with m.If(readout.valid & readout.ready & opens):
            m.d.sync += flagged.eq(readout.payload.errors.as_value() != 0)
        m.d.comb += [
            self.leds.busy.eq(~stretch[-1]),
            self.leds.error.eq((errors.as_value() != 0) | flagged),
            self.leds.loaded.eq(config_status.loaded if config_status is not None else 1),
        ]
        return m


class BoardTop(wiring.Component):
    """A :class:`BoardCore` on a platform: ``uart`` 0 and ``leds`` = (function, resource name,
    resource number[, subsignal]) for each LED used (function: a field of :class:`LedLayout`). ``pll``:
    None clocks everything from the platform's default clock; an
    :class:`xpfilt.boards.clocks.Ecp5Pll` clocks it (engine and host link) from that PLL."""

    def __init__(
        self, core: BoardCore, leds: Sequence[tuple[str, str, int]], pll: Optional[Ecp5Pll] = None
    ):
        for function, *_ in leds:
            if function not in LED_FUNCTIONS:
                raise ValueError(
                    f"LED function must be one of {', '.join(LED_FUNCTIONS)}, not {function!r}"
                )
        self.core = core
        self.led_map = tuple(leds)
        self.pll = pll
        super().__init__({})

    def elaborate(self, platform):
        m = Module()
        if self.pll is not None:  # sync from the PLL, in reset until it locks
            m.domains.sync = sync = ClockDomain("sync")
            m.domains.lock = lock = ClockDomain("lock", local=True)
            m.submodules.pll = pll = Ecp5PllClock(self.pll)
            m.d.comb += [sync.clk.eq(pll.clk), lock.clk.eq(pll.clk)]
            m.submodules.reset_sync = ResetSynchronizer(~pll.locked, domain="lock")
            # the reset reaches every flip-flop (thousands) on a global net, not the fabric's
            m.submodules.reset_buffer = Instance("DCCA", i_CLKI=lock.rst, i_CE=1, o_CLKO=sync.rst)
        m.submodules.core = core = self.core
        uart = platform.request("uart", 0, dir="-")
        m.submodules.uart_rx = rx = io.Buffer("i", uart.rx)
        m.submodules.uart_tx = tx = io.Buffer("o", uart.tx)
        m.d.comb += [core.rx.eq(rx.i), tx.o.eq(core.tx)]
        for function, name, number, *field in self.led_map:
            resource = platform.request(name, number, dir="-")
            if field:  # one colour of an RGB LED
                resource = getattr(resource, field[0])
            m.submodules[f"{name}_{number}{''.join('_' + f for f in field)}"] = led = io.Buffer(
                "o", resource
            )
            m.d.comb += led.o.eq(getattr(core.leds, function))
        return m
