# amaranth: UnusedElaboratable=no
# (engines are created here only for their port signatures)
"""Boards and bitstreams: an engine behind the host link (:mod:`xpfilt.boards.top`) on a board
(:data:`xpfilt.boards.BOARDS`), built with the board's own toolchain flow (amaranth-boards platform).

:func:`build_board` writes into the output directory:

* ``board.json`` (what the host needs: board, mode, readout width, design identity, baud),
  ``plan.json`` (custom) or ``hardware.json`` (programmable), ``xpfilt_engine.v`` (the engine,
  exactly as ``xpfilt compile`` writes it; a programmable engine on the ECP5 with its block
  RAMs as DP16KD primitives, and beside it :data:`SIMULATION_ENGINE`, the generic form that
  ``xpfilt sim-board`` simulates) and ``xpfilt_board.v`` (the board top around it);
* ``gateware/``: the platform's build files (RTLIL, Yosys script, pin and clock constraints,
  ``build_xpfilt_board.sh``), and the tools' logs and outputs when they run;
* iCE40: ``xpfilt_board.bin``; ECP5: ``xpfilt_board.bit``; Xilinx: no bitstream -- the Vivado
  project (``gateware/xpfilt_board.tcl``, ``.xdc``, ``build_xpfilt_board.sh``) is generated
  for the vendor tools, which are not run here (Yosys ``synth_xilinx`` estimates the size);
* ``report.md`` and ``report.json``: design, Yosys cell counts against the device, nextpnr's
  utilization and Fmax against the board clock, times.

Tools (YoWASP builds by default) are named by Amaranth's variables: ``YOSYS``,
``NEXTPNR_ICE40``, ``ICEPACK``, ``NEXTPNR_ECP5``, ``ECPPACK``. After synthesis the cell counts
are checked against the device; a design that does not fit stops there with
:class:`xpfilt.eda.synth.ToolError` saying by how much and about how many queries (or columns)
would fit, and so does a place-and-route failure.
"""

from __future__ import annotations

import json
import math
import shutil
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Optional, Sequence

from amaranth.lib import wiring

from xpfilt.boards.clocks import PLL_FAMILIES, Ecp5Pll, ecp5_pll
from xpfilt.boards.host import DEFAULT_BAUD, plan_identity
from xpfilt.boards.liteeth import DEFAULT_IP, DEFAULT_MAC, format_ip, format_mac
from xpfilt.boards.platforms import Board, get_board
from xpfilt.boards.protocol import UDP_PORT, Mode
from xpfilt.boards.top import BoardCore, BoardTop, EngineInstance
from xpfilt.boards.uart import MIN_DIVIDER
from xpfilt.boards.udp_link import readout_buffer_size
from xpfilt.compiler.custom import CompileOptions, Plan, compile_queries
from xpfilt.compiler.programmable import HardwareSpec
from xpfilt.eda.synth import ToolError, count_cells, run_tool, summarize_nextpnr_report, tool
from xpfilt.hdl.bram import Target
from xpfilt.hdl.verilog import TOP_NAME, emit_programmable_verilog, emit_verilog
from xpfilt.hwspec.readout import ReadoutKind
from xpfilt.lang.xpath import Query

__all__ = [
    "EngineDesign",
    "custom_design",
    "programmable_design",
    "uart_divider",
    "SIMULATION_ENGINE",
    "board_core",
    "core_verilog",
    "simulation_verilog",
    "BuildConfig",
    "build_board",
    "BOARD_TOP",
    "fit_estimate",
    "write_design_files",
    "load_design",
    "engine_clock",
]

#: Name of the board top (the platform design and the simulated board core).
BOARD_TOP = "xpfilt_board"
#: Share of the device's LUTs a design may use and still be expected to place and route.
FILL = 0.9
#: The engine's Verilog for simulation in a build directory whose ``xpfilt_engine.v`` has
#: primitives without a simulation model (an ECP5 programmable engine's DP16KDs): the same
#: engine with generic memories, cycle for cycle the same (:mod:`xpfilt.hdl.bram`).
SIMULATION_ENGINE = f"{TOP_NAME}_sim.v"


@dataclass(frozen=True)
class EngineDesign:
    """An engine ready for a board: its Verilog (module :data:`xpfilt.hdl.verilog.TOP_NAME`), port
    signature, readout width and kind, design identity and the files describing it
    (``plan.json`` or ``hardware.json``). ``units``/``unit_name``: what its size scales with
    (query nodes of a custom engine, columns of a programmable one), for fit estimates. Made by
    :meth:`for_plan` / :meth:`for_spec`."""

    mode: Mode
    verilog: str
    signature: wiring.Signature
    width: int
    identity: int
    files: dict
    queries: int
    units: int
    unit_name: str
    summary: str
    readout: ReadoutKind = ReadoutKind.SERIAL
    bytes_per_cycle: int = 1

    @property
    def mode_name(self) -> str:
        return self.mode.name.lower()

    @classmethod
    def for_plan(
        cls, plan: Plan, verilog: str, *, max_name: int = 32, bytes_per_cycle: int = 1
    ) -> "EngineDesign":
        """The custom engine of ``plan`` taking ``bytes_per_cycle`` bytes a beat, whose Verilog
        is ``verilog``."""
        from xpfilt.hdl.custom import CustomEngine

        stats = plan.stats
        wide = f", {bytes_per_cycle} bytes per cycle" if bytes_per_cycle > 1 else ""
        return cls(
            mode=Mode.CUSTOM,
            verilog=verilog,
            signature=CustomEngine(
                plan, max_name=max_name, bytes_per_cycle=bytes_per_cycle
            ).signature,
            width=len(plan.query_numbers),
            identity=plan_identity(plan),
            files={"plan.json": plan.to_json()},
            queries=stats.get("queries", 0),
            units=stats.get("query_nodes", 0),
            unit_name="query nodes",
            summary=f"custom engine: {stats.get('queries')} queries ({stats.get('query_nodes')} "
            f"query nodes, {stats.get('columns')} stack columns, "
            f"{stats.get('clusters')} clusters, {stats.get('tags')} tags), depth "
            f"{plan.options.max_depth}, {plan.options.readout} readout{wide}",
            readout=ReadoutKind(plan.options.readout),
            bytes_per_cycle=bytes_per_cycle,
        )

    @classmethod
    def for_spec(cls, spec: HardwareSpec, verilog: str) -> "EngineDesign":
        """The programmable engine of ``spec`` whose Verilog is ``verilog``."""
        from xpfilt.hdl.programmable import ProgrammableEngine

        columns = spec.clusters * spec.columns
        return cls(
            mode=Mode.PROGRAMMABLE,
            verilog=verilog,
            signature=ProgrammableEngine(spec).signature,
            width=spec.readout_width,
            identity=spec.fingerprint,
            files={"hardware.json": spec.to_json()},
            queries=0,
            units=columns,
            unit_name="columns",
            summary=f"programmable engine: {spec.clusters} clusters x {spec.columns} columns, "
            f"tags up to {spec.max_tag_len} bytes, depth {spec.max_depth}, "
            f"{spec.readout} readout, fingerprint {spec.fingerprint:08x}",
            readout=ReadoutKind(spec.readout),
        )


def custom_design(
    queries: Sequence[Query],
    options: CompileOptions,
    *,
    max_name: int = 32,
    bytes_per_cycle: int = 1,
    log: Callable[[str], None] = lambda _: None,
) -> EngineDesign:
    """The custom engine of ``queries`` (raises :class:`xpfilt.compiler.custom.UnsupportedQueryError`
    for predicates); ``options.prefix_clustering`` (default on) clusters them in text order;
    ``bytes_per_cycle``: W, the W-byte engine for W > 1."""
    if not queries:
        raise ToolError("a custom engine needs at least one query, not none")
    plan = compile_queries(queries, options)
    stats = plan.stats
    log(
        f"plan: {stats['queries']} queries, {stats['query_nodes']} query nodes, "
        f"{stats['columns']} columns, {stats['clusters']} clusters; writing Verilog ..."
    )
    return EngineDesign.for_plan(
        plan,
        emit_verilog(plan, max_name=max_name, bytes_per_cycle=bytes_per_cycle),
        max_name=max_name,
        bytes_per_cycle=bytes_per_cycle,
    )


def programmable_design(
    spec: HardwareSpec, *, family: Optional[str] = None, log: Callable[[str], None] = lambda _: None
) -> EngineDesign:
    """The programmable engine of ``spec`` elaborated for a board of ``family`` (``"ecp5"``:
    its block RAMs as primitives with their output registers, :mod:`xpfilt.hdl.bram`; None:
    the generic form, for simulation)."""
    log(
        f"programmable engine: {spec.clusters} clusters x {spec.columns} columns; "
        "writing Verilog ..."
    )
    verilog = emit_programmable_verilog(spec, platform=Target(family) if family else None)
    design = EngineDesign.for_spec(spec, verilog)
    generic = emit_programmable_verilog(spec) if family else verilog
    if generic != verilog:  # primitives without a simulation model: for sim-board
        design.files[SIMULATION_ENGINE] = generic
    return design


def uart_divider(clock_hz: float, baud: int) -> int:
    """Clock cycles per UART bit for ``baud``; ValueError when the rate is off by > 2 %."""
    if baud <= 0:
        raise ValueError(f"baud rate must be positive, not {baud!r}")
    divider = round(clock_hz / baud)
    if divider < MIN_DIVIDER:
        raise ValueError(
            f"baud rate must be at most {clock_hz / MIN_DIVIDER:,.0f} with a "
            f"{clock_hz / 1e6:g} MHz clock, not {baud:,}"
        )
    actual = clock_hz / divider
    if abs(actual - baud) / baud > 0.02:
        raise ValueError(
            f"baud rate must be within 2 % of {clock_hz / 1e6:g} MHz / an integer, "
            f"not {baud:,} (divider {divider} gives {actual:,.0f})"
        )
    return divider


def board_core(
    design: EngineDesign, *, divider: int, heartbeat: int, busy_stretch: int
) -> BoardCore:
    """The board core around ``design``'s Verilog module (instantiated, not re-elaborated)."""
    return BoardCore(
        EngineInstance(design.signature, TOP_NAME),
        mode=design.mode,
        width=design.width,
        identity=design.identity,
        divider=divider,
        heartbeat=heartbeat,
        busy_stretch=busy_stretch,
        readout=design.readout,
        bytes_per_cycle=design.bytes_per_cycle,
    )


def core_verilog(design: EngineDesign, *, divider: int, heartbeat: int, busy_stretch: int) -> str:
    """Verilog of the board core (module :data:`BOARD_TOP`, ports ``clk``, ``rst``, ``rx``,
    ``tx``, ``leds``; no pins) followed by the engine's."""
    from amaranth.back import verilog

    core = board_core(design, divider=divider, heartbeat=heartbeat, busy_stretch=busy_stretch)
    return verilog.convert(core, name=BOARD_TOP) + design.verilog


def simulation_verilog(design: EngineDesign, divider: int) -> str:
    """:func:`core_verilog` for a simulator: a short heartbeat and busy stretch."""
    return core_verilog(design, divider=divider, heartbeat=1000, busy_stretch=64)


@dataclass(frozen=True)
class BuildConfig:
    """``board``: a name in :data:`xpfilt.boards.BOARDS`. ``run_toolchain``: False writes the files
    only; ``synthesize_only``: stop after synthesis and the fit check (for size estimates).
    ``timeout``: seconds per tool run. ``nextpnr_args``: more nextpnr options (e.g.
    ``("--router", "router2")``: routes large designs several times faster, at some Fmax).
    ``clock_hz``: the engine's (and a UART host link's) clock; None: the board's oscillator
    (Ethernet: the link's :data:`LINK_HZ` / the engine's bytes per cycle); another
    frequency: a PLL from it (ECP5), and place and route is constrained at that frequency
    (with the oscillator's, nextpnr stops improving a path once it meets 25 MHz). On an
    Ethernet board an engine clock other than :data:`LINK_HZ` is a PLL output of its own.
    ``place_only``: nextpnr places without routing and writes ``gateware/placed.json`` (for
    ``bench/placed_paths.py``; its post-placement estimate is in its log); nothing is packed."""

    board: str
    output: Path
    baud: int = DEFAULT_BAUD
    run_toolchain: bool = True
    synthesize_only: bool = False
    timeout: float = 1800.0
    seed: Optional[int] = None
    nextpnr_args: tuple = ()
    clock_hz: Optional[float] = None
    place_only: bool = False
    link: Optional[str] = None
    mac: int = DEFAULT_MAC
    ip: int = DEFAULT_IP
    udp_port: int = UDP_PORT


#: The link's clock on an Ethernet board (the protocol endpoint's, a byte per cycle: the RGMII
#: line's rate); LiteEth's system clock is the board's ``liteeth_hz``.
LINK_HZ = 125e6


def board_link(board: Board, link: Optional[str]) -> str:
    """``link`` (None: the board's default), checked against what ``board`` has."""
    link = link or board.links[0]
    if link not in board.links:
        raise ValueError(
            f"link must be one of {', '.join(board.links)} on {board.name}, not {link!r}"
        )
    return link


def engine_clock(board: Board, clock_hz: Optional[float]) -> Optional[Ecp5Pll]:
    """The PLL that makes ``clock_hz`` from ``board``'s oscillator; None for the oscillator
    itself. ValueError for a board without PLL support or a frequency it cannot make."""
    if clock_hz is None or clock_hz == board.clock_hz:
        return None
    if board.family not in PLL_FAMILIES:
        raise ValueError(
            f"engine clock must be the board's {board.clock_hz / 1e6:g} MHz on "
            f"{board.name} (PLLs only on {', '.join(PLL_FAMILIES)} boards), not "
            f"{clock_hz / 1e6:g} MHz"
        )
    return ecp5_pll(board.clock_hz, clock_hz)


def write_design_files(
    design: EngineDesign,
    board: Board,
    output: Path,
    *,
    baud: int,
    divider: int,
    pll: Optional[Ecp5Pll] = None,
) -> dict:
    """``board.json``, the design's description and ``xpfilt_engine.v``; returns board.json.
    ``clock_hz`` there is the engine's clock (the PLL's output, if any)."""
    output.mkdir(parents=True, exist_ok=True)
    for name, text in design.files.items():
        (output / name).write_text(text)
    (output / f"{TOP_NAME}.v").write_text(design.verilog)
    info = {
        "board": board.name,
        "mode": design.mode_name,
        "width": design.width,
        "identity": f"{design.identity:08x}",
        "baud": baud,
        "divider": divider,
        "clock_hz": pll.output_hz if pll else board.clock_hz,
        "bytes_per_cycle": design.bytes_per_cycle,
    }
    if pll:
        info["pll"] = {
            "input_hz": pll.input_hz,
            "clki_div": pll.clki_div,
            "clkfb_div": pll.clkfb_div,
            "clkop_div": pll.clkop_div,
        }
        if pll.clkos_div:
            info["pll"]["clkos_div"] = pll.clkos_div
        if pll.clkos2_div:
            info["pll"]["clkos2_div"] = pll.clkos2_div
            info["engine_hz"] = pll.tertiary_hz
    (output / "board.json").write_text(json.dumps(info, indent=1) + "\n")
    return info


def fit_estimate(design: EngineDesign, board: Board, counts: dict) -> dict:
    """Does the synthesized design fit ``board``, and how large a design would: LUTs and
    flip-flops per unit (query node / column) scaled to :data:`FILL` of the device.
    Conservative: the fixed part (front end, host link) is counted as if it grew too."""
    luts, ffs, bram = counts.get("luts", 0), counts.get("ffs", 0), counts.get("bram", 0)
    fits = luts <= board.luts and ffs <= board.ffs and bram <= board.bram
    per_lut = luts / max(1, design.units)
    per_ff = ffs / max(1, design.units)
    units = min(
        FILL * board.luts / per_lut if per_lut else math.inf,
        FILL * board.ffs / per_ff if per_ff else math.inf,
    )
    out = {
        "fits": fits,
        "luts": luts,
        "ffs": ffs,
        "bram": bram,
        "device_luts": board.luts,
        "device_ffs": board.ffs,
        "device_bram": board.bram,
        "lut_share": round(luts / board.luts, 4),
        "ff_share": round(ffs / board.ffs, 4),
        "luts_per_unit": round(per_lut, 3),
        "unit_name": design.unit_name,
        "max_units": int(units) if units != math.inf else None,
    }
    if design.mode == Mode.CUSTOM and design.queries:
        steps = design.units / design.queries
        out["max_queries"] = int(units / steps) if units != math.inf else None
    elif design.mode == Mode.PROGRAMMABLE:
        out["max_units"] = int(units) // 2 * 2 if units != math.inf else None
    return out


def _fit_message(design: EngineDesign, board: Board, fit: dict) -> str:
    kind = board.family
    lut = "LUT4s" if kind in ("ice40", "ecp5") else "LUT6 equivalents"
    what = (
        f"{design.queries} queries"
        if design.mode == Mode.CUSTOM
        else f"{design.width} programmable columns"
    )
    over = []
    if fit["luts"] > board.luts:
        over.append(f"{fit['luts']:,} {lut} (the device has {board.luts:,})")
    if fit["ffs"] > board.ffs:
        over.append(f"{fit['ffs']:,} flip-flops (the device has {board.ffs:,})")
    if fit["bram"] > board.bram:
        over.append(f"{fit['bram']} block RAMs (the device has {board.bram})")
    if design.mode == Mode.CUSTOM:
        scale = (
            f"about {fit['max_queries']:,} queries like these would fit "
            f"({fit['luts_per_unit']:.2f} {lut} per query node, "
            f"{design.units / max(1, design.queries):.1f} nodes per query, "
            f"{int(FILL * 100)} % of the device)"
        )
    else:
        scale = (
            f"about {fit['max_units']:,} columns would fit "
            f"({fit['luts_per_unit']:.1f} {lut} per column, {int(FILL * 100)} % of the "
            "device)"
        )
    return (
        f"{what} do not fit the {board.device} of {board.name}: after synthesis they need "
        f"{' and '.join(over)}; {scale}"
    )


@dataclass
class BuildResult:
    """Everything report.json holds."""

    board: str
    output: Path
    info: dict
    design: str
    files: list = field(default_factory=list)
    synth: Optional[dict] = None
    fit: Optional[dict] = None
    pnr: Optional[dict] = None
    bitstream: Optional[str] = None
    times: dict = field(default_factory=dict)
    notes: list = field(default_factory=list)
    error: Optional[str] = None

    @property
    def fmax_mhz(self) -> Optional[float]:
        return self.pnr.get("fmax_mhz") if self.pnr else None

    @property
    def meets_timing(self) -> Optional[bool]:
        if not self.pnr or not self.pnr["clocks"]:
            return None
        return all(
            achieved >= self.pnr["constraints"][clock]
            for clock, achieved in self.pnr["clocks"].items()
        )

    def to_json(self) -> str:
        return (
            json.dumps(
                {
                    "board": self.board,
                    "design": self.design,
                    **self.info,
                    "files": self.files,
                    "synth": self.synth,
                    "fit": self.fit,
                    "pnr": self.pnr,
                    "fmax_mhz": self.fmax_mhz,
                    "meets_timing": self.meets_timing,
                    "bitstream": self.bitstream,
                    "times": self.times,
                    "notes": self.notes,
                    "error": self.error,
                },
                indent=1,
            )
            + "\n"
        )

    def to_markdown(self) -> str:
        board = get_board(self.board)
        info = self.info
        lines = [
            f"# xpfilt on {board.title}",
            "",
            f"* device: {board.device}; clock {info['clock_hz'] / 1e6:g} MHz "
            + (
                f"(PLL EHXPLLL from the board's {board.clock_hz / 1e6:g} MHz; place and "
                "route constrained at it)"
                if info.get("pll")
                else "(the platform's default clock)"
            )
            + (
                f"; the engine at {info['engine_hz'] / 1e6:g} MHz (the PLL's CLKOS2)"
                if info.get("engine_hz")
                else ""
            ),
            f"* {self.design}",
            f"* readout: {info['width']} bits per document; design identity {info['identity']}",
            (
                f"* host link: Gigabit Ethernet, UDP (LiteEth), {info['mac']} "
                f"{info['ip']}:{info['port']}; protocol in boards/protocol.py"
                if info.get("link") == "ethernet"
                else f"* host link: UART {info['baud']:,} baud 8N1 (divider {info['divider']}); "
                "protocol in boards/protocol.py"
            ),
            "* LEDs: "
            + ", ".join(
                f"{name} {number}{''.join(' ' + f for f in field)} = {function}"
                for function, name, number, *field in board.leds
            ),
        ]
        if self.fit:
            fit = self.fit
            lines.append(
                f"* Yosys: {fit['luts']:,} LUTs ({fit['lut_share']:.0%} of "
                f"{fit['device_luts']:,}), {fit['ffs']:,} flip-flops "
                f"({fit['ff_share']:.0%}), {fit['bram']} block RAMs: "
                + ("fits" if fit["fits"] else "DOES NOT FIT")
            )
        if self.pnr:
            for clock, achieved in self.pnr["clocks"].items():
                constraint = self.pnr["constraints"][clock]
                verdict = "meets" if achieved >= constraint else "FAILS"
                lines.append(
                    f"* Fmax ({clock}): {achieved:.1f} MHz, {verdict} the "
                    f"{constraint:.1f} MHz constraint"
                )
            lines += ["", "| BEL | used | available | share |", "|---|---|---|---|"]
            for bel, share in sorted(self.pnr["utilization"].items()):
                used, available = map(int, share.split("/"))
                lines.append(
                    f"| {bel} | {used:,} | {available:,} | {used / max(1, available):.1%} |"
                )
            lines.append("")
        if self.bitstream:
            lines.append(f"* bitstream: {self.bitstream}")
        if self.times:
            lines.append("* times: " + ", ".join(f"{k} {v:.1f} s" for k, v in self.times.items()))
        lines += [f"* {note}" for note in self.notes]
        if self.error:
            lines += ["", f"**Build failed:** {self.error}"]
        lines += ["", "Files: " + ", ".join(self.files), ""]
        return "\n".join(lines)

    def write(self) -> None:
        (self.output / "report.json").write_text(self.to_json())
        (self.output / "report.md").write_text(self.to_markdown())


#: Yosys commands after reading the design: the memories marked ``no_rw_check`` (a read never
#: meets a write to the same address in a cycle: the UDP endpoint's buffers, each one read and
#: one write port) collected and their read ports' collision made a don't-care. Yosys does
#: this itself for the attribute in Verilog, not in RTLIL (the board top's form); without it,
#: it keeps a read's old data through such a write with an address compare and a choice after
#: the block RAM's read data.
NO_RW_CHECK = "proc\nmemory_collect a:no_rw_check\nsetparam -set RD_COLLISION_X_MASK 1'1 t:$mem_v2 a:no_rw_check %i"


def build_board(
    design: EngineDesign, config: BuildConfig, log: Callable[[str], None] = lambda _: None
) -> BuildResult:
    """Write the design, the board top and the platform's build files; with
    ``config.run_toolchain`` (iCE40, ECP5) synthesize, check the fit, place and route and pack
    the bitstream. Always writes report.md/report.json (also when a step fails: then
    :class:`ToolError` is raised after)."""
    board = get_board(config.board)
    out = Path(config.output)
    try:
        link = board_link(board, config.link)
        if link == "ethernet":
            engine_hz = config.clock_hz or LINK_HZ / design.bytes_per_cycle
            pll = ecp5_pll(
                board.clock_hz, LINK_HZ, board.liteeth_hz, 0 if engine_hz == LINK_HZ else engine_hz
            )
            divider = 0
        else:
            pll = engine_clock(board, config.clock_hz)
            clock = pll.output_hz if pll else board.clock_hz
            divider = uart_divider(clock, config.baud)
    except ValueError as exc:
        raise ToolError(str(exc)) from None
    info = write_design_files(design, board, out, baud=config.baud, divider=divider, pll=pll)
    info["link"] = link
    if link == "ethernet":
        info.update(mac=format_mac(config.mac), ip=format_ip(config.ip), port=config.udp_port)
    (out / "board.json").write_text(json.dumps(info, indent=1) + "\n")
    result = BuildResult(
        board.name, out, info, design.summary, files=["board.json", *design.files, f"{TOP_NAME}.v"]
    )
    try:
        _build(design, board, config, divider, pll, result, log)
    except ToolError as exc:
        result.error = str(exc)
        result.write()
        raise
    result.write()
    return result


def _build(
    design: EngineDesign,
    board: Board,
    config: BuildConfig,
    divider: int,
    pll: Optional[Ecp5Pll],
    result: BuildResult,
    log: Callable[[str], None],
) -> None:
    out = Path(config.output)
    gateware = out / "gateware"
    if gateware.exists():
        shutil.rmtree(gateware)
    clock = pll.output_hz if pll else board.clock_hz
    platform = board.create_platform()
    platform.add_file(f"{TOP_NAME}.v", design.verilog)
    overrides = {}
    if result.info.get("link") == "ethernet":
        top, preferences = _ethernet_top(design, board, config, pll, out, platform, log)
        overrides["add_preferences"] = preferences
    else:
        core = board_core(
            design,
            divider=divider,
            heartbeat=max(1, int(clock // 2)),
            busy_stretch=max(1, int(clock // 20)),
        )
        top = BoardTop(core, board.leds, pll)
    if board.runs_toolchain:
        nextpnr = [f"--report {BOARD_TOP}.report.json", "--timing-allow-fail"]
        if config.seed is not None:
            nextpnr.append(f"--seed {config.seed}")
        nextpnr += config.nextpnr_args
        if config.place_only:
            nextpnr += ["--no-route", "--write", "placed.json"]
        overrides |= {
            "debug_verilog": True,
            "nextpnr_opts": " ".join(nextpnr),
            "script_after_read": NO_RW_CHECK,
            "script_after_synth": f"tee -q -o {BOARD_TOP}.stat.json stat -json",
        }
    start = time.perf_counter()
    plan = platform.prepare(top, name=BOARD_TOP, **overrides)
    plan.extract(gateware)
    result.times["board top"] = time.perf_counter() - start
    board_verilog = gateware / (
        f"{BOARD_TOP}.debug.v" if board.runs_toolchain else f"{BOARD_TOP}.v"
    )
    shutil.copy(board_verilog, out / f"{BOARD_TOP}.v")
    result.files += [f"{BOARD_TOP}.v", "gateware/"]
    log(f"{board.name}: board files in {gateware}")

    if not board.runs_toolchain:
        result.notes.append(
            f"{board.family} bitstreams need the vendor tools, not run here: run "
            f"`sh build_{BOARD_TOP}.sh` in gateware/ with Vivado on PATH (project "
            f"{BOARD_TOP}.tcl, constraints {BOARD_TOP}.xdc)"
        )
        if config.run_toolchain:
            _estimate_xilinx(design, board, config, divider, result, log)
        return
    if not config.run_toolchain:
        result.notes.append(
            f"toolchain not run (--no-toolchain): run `sh build_{BOARD_TOP}.sh`"
            " in gateware/ (set YOSYS, NEXTPNR_*, *PACK to the tools)"
        )
        return

    commands = json.loads((gateware / f"build_{BOARD_TOP}.json").read_text())["commands"]
    for argv in commands:
        name = argv[0]
        step = name.split("-")[0]
        log(f"{board.name}: {name} ...")
        seconds = run_tool([tool(name), *argv[1:]], gateware, name, config.timeout)
        result.times[step] = seconds
        if name == "yosys":
            stat = json.loads((gateware / f"{BOARD_TOP}.stat.json").read_text())
            cells = {
                k: v
                for k, v in stat["design"]["num_cells_by_type"].items()
                if not k.startswith("$scopeinfo")
            }
            counts = count_cells(board.family, cells)
            result.synth = {"cells": cells, **counts}
            result.fit = fit_estimate(design, board, counts)
            log(
                f"{board.name}: {counts['luts']:,} LUTs, {counts['ffs']:,} flip-flops after "
                f"synthesis ({seconds:.0f} s)"
            )
            if not result.fit["fits"]:
                raise ToolError(_fit_message(design, board, result.fit))
            if config.synthesize_only:
                result.notes.append("stopped after synthesis (synthesize_only)")
                return
        elif name.startswith("nextpnr"):
            report = json.loads((gateware / f"{BOARD_TOP}.report.json").read_text())
            result.pnr = summarize_nextpnr_report(report)
            if config.place_only:
                result.notes.append(
                    "placed, not routed (place_only): gateware/placed.json; "
                    "the post-placement estimate is in the nextpnr log"
                )
                log(f"{board.name}: placed, not routed ({seconds:.0f} s)")
                return
            log(f"{board.name}: Fmax {result.fmax_mhz:.1f} MHz ({seconds:.0f} s)")
    bitstream = f"{BOARD_TOP}.{board.bitstream}"
    shutil.copy(gateware / bitstream, out / bitstream)
    result.bitstream = bitstream
    result.files.append(bitstream)
    if result.meets_timing is False:
        result.notes.append(
            f"WARNING: Fmax {result.fmax_mhz:.1f} MHz is below the engine "
            f"clock {clock / 1e6:g} MHz: the bitstream may not work"
        )


def _ethernet_top(design, board, config, pll, out, platform, log):
    """The Ethernet board top of ``design`` (:class:`xpfilt.boards.eth_top.EthernetBoardTop`),
    LiteEth's core generated and added to ``platform``; returns it and the LPF preferences
    (the RGMII receive clock's frequency)."""
    from xpfilt.boards.eth_top import EthernetBoardCore, EthernetBoardTop
    from xpfilt.boards.liteeth import LITEETH_MODULE, EthernetConfig, generate_liteeth

    ethernet = EthernetConfig(
        board.liteeth_device,
        mac=config.mac,
        ip=config.ip,
        port=config.udp_port,
        clock_hz=board.liteeth_hz,
    )
    log(f"{board.name}: LiteEth core for {ethernet.address} ...")
    try:
        liteeth = generate_liteeth(ethernet, out / "liteeth")
    except ToolError as exc:
        raise ToolError(f"{board.name}: {exc}") from None
    platform.add_file(f"{LITEETH_MODULE}.v", liteeth)
    core = EthernetBoardCore(
        EngineInstance(design.signature, TOP_NAME),
        mode=design.mode,
        width=design.width,
        identity=design.identity,
        readout=design.readout,
        heartbeat=max(1, int((pll.tertiary_hz or LINK_HZ) // 2)),
        bytes_per_cycle=design.bytes_per_cycle,
        mac=config.mac,
        ip=config.ip,
        port=config.udp_port,
        input_buffer=16384,
        readout_buffer=readout_buffer_size(design.readout, design.width),
        timeout=int(LINK_HZ * 0.05),
    )
    preferences = f'FREQUENCY PORT "eth_rgmii_0__rx_clk__io" {LINK_HZ / 1e6:g} MHz;\n'
    return EthernetBoardTop(core, board.leds, pll), preferences


def _estimate_xilinx(
    design: EngineDesign,
    board: Board,
    config: BuildConfig,
    divider: int,
    result: BuildResult,
    log: Callable[[str], None],
) -> None:
    """Yosys ``synth_xilinx`` of the board core (without the vendor's clock and I/O buffers,
    which Yosys does not model) and the engine: cell counts and a fit estimate."""
    from xpfilt.eda.synth import synthesize

    log(f"{board.name}: estimating the size with Yosys synth_xilinx ...")
    work = Path(config.output) / "gateware" / "estimate"
    work.mkdir(parents=True, exist_ok=True)
    clock = board.clock_hz
    text = core_verilog(
        design,
        divider=divider,
        heartbeat=max(1, int(clock // 2)),
        busy_stretch=max(1, int(clock // 20)),
    )
    try:
        synth = synthesize(text, BOARD_TOP, "xilinx", work, timeout=config.timeout)
    except ToolError as exc:
        result.notes.append(f"no size estimate: {exc}")
        return
    result.times["yosys (estimate)"] = synth["synth_s"]
    counts = {"luts": synth["luts"], "ffs": synth["ffs"], "bram": synth["bram"]}
    result.synth = {"cells": synth["cells"], **counts}
    result.fit = fit_estimate(design, board, counts)
    if not result.fit["fits"]:
        raise ToolError(_fit_message(design, board, result.fit))


def load_design(directory: Path) -> EngineDesign:
    """The :class:`EngineDesign` a build directory holds, to simulate (read by
    :meth:`xpfilt.boards.host.BoardDesign.load`, plus :data:`SIMULATION_ENGINE` where the build
    wrote one, else ``xpfilt_engine.v``), without regenerating anything."""
    from xpfilt.boards.host import BoardDesign

    board = BoardDesign.load(directory)
    simulated = Path(directory) / SIMULATION_ENGINE
    try:
        verilog = (
            simulated if simulated.exists() else Path(directory) / f"{TOP_NAME}.v"
        ).read_text()
    except OSError as exc:
        raise ToolError(
            f"{directory} must hold the {TOP_NAME}.v that `xpfilt build` wrote, not lack it: {exc}"
        ) from None
    info = json.loads((Path(directory) / "board.json").read_text())
    design = (
        EngineDesign.for_plan(board.plan, verilog, bytes_per_cycle=info.get("bytes_per_cycle", 1))
        if board.plan is not None
        else EngineDesign.for_spec(board.spec, verilog)
    )
    if (design.width, design.identity) != (board.width, board.identity):
        raise ToolError(
            f"{directory}/board.json must describe the design beside it, not "
            f"width {board.width} and identity {board.identity:08x}"
        )
    return design
