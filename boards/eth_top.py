"""An engine on an Ethernet board: the engine behind the UDP link.

:class:`EthernetBoardCore` is everything but the pins and LiteEth, so a simulator can drive its
UDP port: in the ``link`` domain (LiteEth's system clock) the protocol endpoint
(:class:`xpfilt.boards.udp_link.UdpEndpoint`) between LiteEth's raw UDP port (``rx``, ``tx``)
and two ``AsyncFIFO``\\ s; in the ``sync`` domain (the engine's clock) the engine, taking the
input stream's document bytes (and, programmable, its configuration bytes through a
:class:`xpfilt.boards.hostlink.ConfigSerializer`), its readout beats and each configuration
stream's verdict going back. A W-byte engine (``bytes_per_cycle`` W > 1, custom only) takes
beats of W bytes, packed in the link domain (:class:`xpfilt.boards.hostlink.BeatPacker`)
before the input FIFO, which holds beats: at W bytes a beat the engine's clock may be the
link's / W and still take every byte the link brings. The engine's configuration status reaches the link domain through
synchronisers (the status datagram reports it).

:class:`EthernetBoardTop` puts a core on a platform (amaranth-boards): LiteEth's core
(:mod:`xpfilt.boards.liteeth`, generated Verilog) as an ``Instance`` on the ``eth_rgmii`` pins
in the ``eth`` domain (62.5 MHz, its 32-bit datapath) with a
:class:`xpfilt.boards.eth_bridge.UdpPortBridge` to the core's byte streams, the link domain at
125 MHz from a PLL on the board's oscillator, the engine's domain from the same PLL output or
from a third output of its own (a domain of its own, across the FIFOs either way) and LEDs.
"""

from typing import Sequence

from amaranth.hdl import (
    ClockDomain,
    ClockSignal,
    DomainRenamer,
    Instance,
    Module,
    Mux,
    ResetSignal,
    Signal,
)
from amaranth.lib import data, io, stream, wiring
from amaranth.lib.cdc import FFSynchronizer, ResetSynchronizer
from amaranth.lib.fifo import AsyncFIFO
from amaranth.lib.wiring import In, Out

from xpfilt.boards.cdc import LutAsyncFIFO
from xpfilt.boards.clocks import Ecp5Pll, Ecp5PllClock
from xpfilt.boards.eth_bridge import UdpPortBridge
from xpfilt.boards.hostlink import BeatPacker, ConfigSerializer
from xpfilt.boards.liteeth import LITEETH_MODULE, udp_port_connections
from xpfilt.boards.protocol import Mode
from xpfilt.boards.top import LED_FUNCTIONS, LedLayout
from xpfilt.boards.udp_link import InputBeat, RxBeat, TxBeat, UdpEndpoint, link_readout_layout
from xpfilt.hdl.wide_frontend import WideByteLayout
from xpfilt.hwspec.readout import ReadoutKind

__all__ = ["EthernetBoardCore", "EthernetBoardTop", "StreamRegister", "VERDICT_DELAY"]

#: Engine cycles after a configuration stream's last bit before its verdict is read (the
#: loader takes the bit from its input register and checks the stream).
VERDICT_DELAY = 4


class StreamRegister(wiring.Component):
    """A stream through registers both ways (a skid buffer): ``o``'s ``valid`` and ``payload``
    and ``i``'s ``ready`` are flip-flops, so that neither side's logic reaches the other's in
    a cycle (the endpoint's handshakes and the clock-domain FIFOs' pointers); a beat a cycle,
    a cycle later."""

    def __init__(self, shape):
        self.shape = shape
        super().__init__({"i": In(stream.Signature(shape)), "o": Out(stream.Signature(shape))})

    def elaborate(self, platform):
        m = Module()
        skid = Signal(self.shape)  # a beat taken while ``o`` was held
        skid_valid = Signal()
        m.d.comb += self.i.ready.eq(~skid_valid)
        with m.If(~self.o.valid | self.o.ready):
            with m.If(skid_valid):
                m.d.sync += [self.o.payload.eq(skid), self.o.valid.eq(1), skid_valid.eq(0)]
            with m.Else():
                m.d.sync += [self.o.payload.eq(self.i.payload), self.o.valid.eq(self.i.valid)]
        with m.Elif(self.i.valid & ~skid_valid):
            m.d.sync += [skid.eq(self.i.payload), skid_valid.eq(1)]
        return m


class EthernetBoardCore(wiring.Component):
    """The engine behind the UDP link. Ports (``link`` domain): ``rx``, ``tx`` (LiteEth's raw
    UDP port); ``leds`` (``sync``). ``engine``: a component with ``bytes_in`` and ``readout``
    (and, programmable, ``config`` and ``config_status``); ``bytes_per_cycle``: its beats'
    bytes (W > 1: a custom engine's ``WideByteLayout`` beats). The endpoint's options
    (addresses, buffers, timeout) are keyword arguments of :class:`UdpEndpoint`."""

    rx: In(wiring.Signature({"valid": Out(1), "ready": In(1), "payload": Out(RxBeat)}))
    tx: Out(wiring.Signature({"valid": Out(1), "ready": In(1), "payload": Out(TxBeat)}))
    leds: Out(LedLayout)

    def __init__(
        self,
        engine,
        *,
        mode: Mode,
        width: int,
        identity: int,
        readout: ReadoutKind,
        heartbeat: int,
        fifo_depth: int = 16,
        bytes_per_cycle: int = 1,
        **endpoint,
    ):
        if bytes_per_cycle != 1 and mode is Mode.PROGRAMMABLE:
            raise ValueError(
                f"bytes per cycle must be 1 with a programmable engine, not {bytes_per_cycle!r}"
            )
        self.bytes_per_cycle = bytes_per_cycle
        self.engine = engine
        self.mode, self.width, self.identity, self.readout = mode, width, identity, readout
        self.heartbeat = heartbeat
        self.fifo_depth = fifo_depth
        self.endpoint = endpoint
        super().__init__()

    def elaborate(self, platform):
        m = Module()
        programmable = self.mode is Mode.PROGRAMMABLE
        m.submodules.engine = engine = self.engine
        ep = UdpEndpoint(
            mode=self.mode.value,
            kind=self.readout,
            width=self.width,
            identity=self.identity,
            **self.endpoint,
        )
        m.submodules.endpoint = DomainRenamer("link")(ep)
        # the datagrams both ways through a register, as the input stream below: the bridge's
        # FIFO pointers and the endpoint's handshakes (its readout buffer's read enable on the
        # transmit side) meet only at flip-flops
        m.submodules.rx_register = rx_reg = DomainRenamer("link")(StreamRegister(RxBeat))
        m.submodules.tx_register = tx_reg = DomainRenamer("link")(StreamRegister(TxBeat))
        wiring.connect(m, wiring.flipped(self.rx), rx_reg.i)
        wiring.connect(m, rx_reg.o, ep.rx)
        wiring.connect(m, ep.tx, tx_reg.i)
        wiring.connect(m, wiring.flipped(self.tx), tx_reg.o)

        # the input stream: link -> engine, through a register (the endpoint's handshakes and
        # the FIFO's pointers meet only at flip-flops)
        m.submodules.input_register = in_reg = DomainRenamer("link")(StreamRegister(InputBeat))
        wiring.connect(m, ep.input, in_reg.i)
        if self.bytes_per_cycle > 1:
            self._wide_input(m, in_reg.o, engine.bytes_in)
        else:
            self._byte_input(m, in_reg.o, engine, programmable)
        doc = engine.bytes_in

        # readout beats and configuration verdicts: engine -> link
        out_layout = link_readout_layout(self.readout, self.width)
        # (its read side short, as the bridge's receive FIFO: see :mod:`xpfilt.boards.cdc`)
        m.submodules.readout_fifo = fout = LutAsyncFIFO(
            width=out_layout.size, depth=self.fifo_depth, w_domain="sync", r_domain="link"
        )
        word = Signal(out_layout)
        m.d.comb += [fout.w_data.eq(word), word.beat.eq(engine.readout.payload)]
        m.submodules.readout_register = out_reg = DomainRenamer("link")(StreamRegister(out_layout))
        m.d.comb += [
            out_reg.i.valid.eq(fout.r_rdy),
            out_reg.i.payload.eq(fout.r_data),
            fout.r_en.eq(out_reg.i.ready),
            ep.readout.valid.eq(out_reg.o.valid),
            ep.readout.payload.eq(out_reg.o.payload),
            out_reg.o.ready.eq(ep.readout.ready),
        ]
        status = Signal(ep.config_status.shape())
        verdict_due = Signal()
        if programmable:
            cs = engine.config_status
            m.d.comb += [
                status.generation.eq(cs.generation),
                status.loaded.eq(cs.loaded),
                status.rejected.eq(cs.rejected),
                status.pending.eq(cs.pending),
            ]
            before = Signal(8)
            wait = Signal(range(VERDICT_DELAY + 1))
            cfg = engine.config
            # a readout record partly in the FIFO: a verdict between two of its beats would be
            # taken as one of them (the endpoint stops reading while its buffer is full)
            record_open = Signal()
            with m.If(engine.readout.valid & engine.readout.ready):
                m.d.sync += record_open.eq(~engine.readout.payload.last)
            with m.FSM(name="verdict"):
                with m.State("IDLE"):
                    with m.If(cfg.valid & cfg.ready & cfg.payload.last):
                        m.d.sync += [before.eq(cs.generation), wait.eq(VERDICT_DELAY)]
                        m.next = "WAIT"
                with m.State("WAIT"):
                    with m.If(wait != 0):
                        m.d.sync += wait.eq(wait - 1)
                    with m.Elif(~cs.pending):
                        m.next = "SEND"
                with m.State("SEND"):  # between records only
                    with m.If(~record_open):
                        m.d.comb += [
                            verdict_due.eq(1),
                            word.verdict.eq(1),
                            word.generation.eq(cs.generation),
                            word.loaded.eq(cs.loaded),
                            word.rejected.eq(cs.generation == before),
                        ]
                        with m.If(fout.w_rdy):
                            m.next = "IDLE"
        m.d.comb += [
            fout.w_en.eq(Mux(verdict_due, 1, engine.readout.valid)),
            engine.readout.ready.eq(fout.w_rdy & ~verdict_due),
        ]
        synced = Signal(len(status.as_value()))
        m.submodules.status_sync = FFSynchronizer(status.as_value(), synced, o_domain="link")
        m.d.comb += ep.config_status.as_value().eq(synced)

        # LEDs (the engine's domain)
        beat_count = Signal(range(self.heartbeat))
        with m.If(beat_count == self.heartbeat - 1):
            m.d.sync += [beat_count.eq(0), self.leds.heartbeat.eq(~self.leds.heartbeat)]
        with m.Else():
            m.d.sync += beat_count.eq(beat_count + 1)
        m.d.sync += self.leds.busy.eq((doc.valid & doc.ready) | engine.readout.valid)
        flagged = Signal()
        readout = engine.readout
        opens = (
            readout.payload.first if self.readout is ReadoutKind.SERIAL else readout.payload.header
        )
        with m.If(readout.valid & readout.ready & opens):
            m.d.sync += flagged.eq(readout.payload.errors.as_value() != 0)
        m.d.comb += [
            self.leds.error.eq(flagged),
            self.leds.loaded.eq(engine.config_status.loaded if programmable else 1),
        ]
        return m

    def _byte_input(self, m, source, engine, programmable):
        """The endpoint's bytes through an ``AsyncFIFO`` of bytes to the one-byte engine (and,
        programmable, the configuration bytes to a serializer)."""
        in_layout = data.Layout.cast(InputBeat)
        m.submodules.input_fifo = fin = AsyncFIFO(
            width=in_layout.size, depth=self.fifo_depth, w_domain="link", r_domain="sync"
        )
        m.d.comb += [
            fin.w_data.eq(source.payload),
            fin.w_en.eq(source.valid),
            source.ready.eq(fin.w_rdy),
        ]
        beat = InputBeat(fin.r_data)
        doc = engine.bytes_in
        m.d.comb += [doc.payload.data.eq(beat.data), doc.payload.last.eq(beat.last)]
        if programmable:
            m.submodules.config_bits = serializer = ConfigSerializer()
            wiring.connect(m, serializer.bits, engine.config)
            m.d.comb += [
                serializer.bytes_in.payload.data.eq(beat.data),
                serializer.bytes_in.payload.last.eq(beat.last),
                serializer.bytes_in.valid.eq(fin.r_rdy & beat.config),
            ]
            cfg_ready = serializer.bytes_in.ready
            idle = serializer.idle
        else:
            cfg_ready = idle = 1  # a custom engine has no configuration: its bytes are dropped
        m.d.comb += [
            doc.valid.eq(fin.r_rdy & ~beat.config & idle),
            fin.r_en.eq(Mux(beat.config, cfg_ready, doc.valid & doc.ready)),
        ]

    def _wide_input(self, m, source, sink):
        """The endpoint's document bytes packed into W-byte beats in the link domain, through
        an ``AsyncFIFO`` of beats to the engine (configuration bytes are dropped: a custom
        engine has none)."""
        m.submodules.packer = packer = DomainRenamer("link")(BeatPacker(self.bytes_per_cycle))
        m.d.comb += [
            packer.bytes_in.valid.eq(source.valid & ~source.payload.config),
            packer.bytes_in.payload.data.eq(source.payload.data),
            packer.bytes_in.payload.last.eq(source.payload.last),
            source.ready.eq(packer.bytes_in.ready),
        ]
        layout = WideByteLayout(self.bytes_per_cycle)
        m.submodules.input_fifo = fin = AsyncFIFO(
            width=layout.size, depth=self.fifo_depth, w_domain="link", r_domain="sync"
        )
        m.d.comb += [
            fin.w_data.eq(packer.beats_out.payload),
            fin.w_en.eq(packer.beats_out.valid),
            packer.beats_out.ready.eq(fin.w_rdy),
            sink.payload.eq(fin.r_data),
            sink.valid.eq(fin.r_rdy),
            fin.r_en.eq(sink.ready),
        ]


class EthernetBoardTop(wiring.Component):
    """An :class:`EthernetBoardCore` on a platform with LiteEth's core (module
    :data:`xpfilt.boards.liteeth.LITEETH_MODULE`, its Verilog added by the build) on the
    ``eth_rgmii`` pins. ``pll``: the link's 125 MHz (CLKOP) and LiteEth's system clock (CLKOS,
    the ``eth`` domain) from the board's oscillator; the engine's ``sync`` domain runs on the
    link's clock, or on CLKOS2 when the PLL has it (``clkos2_div``: an engine clock of its
    own); all held in reset until the PLL locks. ``leds``: as
    :class:`xpfilt.boards.top.BoardTop`'s (function, resource, number)."""

    def __init__(self, core: EthernetBoardCore, leds: Sequence[tuple], pll: Ecp5Pll):
        for function, *_ in leds:
            if function not in LED_FUNCTIONS:
                raise ValueError(
                    f"LED function must be one of {', '.join(LED_FUNCTIONS)}, not {function!r}"
                )
        if not pll.clkos_div:
            raise ValueError("PLL must have a second output (CLKOS) for LiteEth, not lack it")
        self.core, self.led_map, self.pll = core, tuple(leds), pll
        super().__init__({})

    def elaborate(self, platform):
        m = Module()
        m.domains.sync = sync = ClockDomain("sync")
        m.domains.link = link = ClockDomain("link")
        m.domains.lock = lock = ClockDomain("lock", local=True)
        m.domains.eth = eth_domain = ClockDomain("eth")
        m.submodules.pll = pll = Ecp5PllClock(self.pll)
        m.d.comb += [link.clk.eq(pll.clk), lock.clk.eq(pll.clk)]
        m.d.comb += eth_domain.clk.eq(pll.clk2)
        m.submodules.reset_sync = ResetSynchronizer(~pll.locked, domain="lock")
        m.submodules.eth_reset_sync = ResetSynchronizer(~pll.locked, domain="eth")
        if self.pll.clkos2_div:  # the engine on a clock of its own, its reset synchronised to it
            m.domains.engine_lock = engine_lock = ClockDomain("engine_lock", local=True)
            m.d.comb += [sync.clk.eq(pll.clk3), engine_lock.clk.eq(pll.clk3)]
            m.submodules.engine_reset_sync = ResetSynchronizer(~pll.locked, domain="engine_lock")
            m.submodules.reset_buffer = Instance("DCCA", i_CLKI=lock.rst, i_CE=1, o_CLKO=link.rst)
            m.submodules.engine_reset_buffer = Instance(
                "DCCA", i_CLKI=engine_lock.rst, i_CE=1, o_CLKO=sync.rst
            )
        else:
            m.d.comb += sync.clk.eq(pll.clk)
            m.submodules.reset_buffer = Instance("DCCA", i_CLKI=lock.rst, i_CE=1, o_CLKO=sync.rst)
            m.d.comb += link.rst.eq(sync.rst)
        m.submodules.core = core = self.core
        m.submodules.bridge = bridge = UdpPortBridge()
        wiring.connect(m, bridge.rx, core.rx)
        wiring.connect(m, core.tx, bridge.tx)

        eth = platform.request("eth_rgmii", 0, dir="-")

        def pin(*names):
            for name in names:  # the raw pins: LiteEth has its own I/O primitives
                if hasattr(eth, name):
                    return getattr(eth, name).io
            raise ValueError(f"eth_rgmii must have one of {names}, not lack them")

        m.submodules.liteeth = Instance(
            LITEETH_MODULE,
            i_sys_clock=ClockSignal("eth"),
            i_sys_reset=ResetSignal("eth"),
            i_rgmii_clocks_rx=pin("rx_clk"),
            o_rgmii_clocks_tx=pin("tx_clk"),
            i_rgmii_rx_ctl=pin("rx_ctl", "rx_ctrl"),
            i_rgmii_rx_data=pin("rx_data"),
            o_rgmii_tx_ctl=pin("tx_ctl", "tx_ctrl"),
            o_rgmii_tx_data=pin("tx_data"),
            o_rgmii_rst_n=pin("rst"),
            o_rgmii_mdc=pin("mdc"),
            i_rgmii_mdio=0,
            i_rgmii_int_n=1,
            **udp_port_connections(bridge.wide_rx, bridge.wide_tx, core.endpoint["port"]),
        )
        for function, name, number, *field in self.led_map:
            resource = platform.request(name, number, dir="-")
            if field:
                resource = getattr(resource, field[0])
            m.submodules[f"{name}_{number}{'_' + field[0] if field else ''}"] = led = io.Buffer(
                "o", resource
            )
            m.d.comb += led.o.eq(getattr(core.leds, function))
        return m
