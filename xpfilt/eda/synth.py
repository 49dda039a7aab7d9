"""Synthesis and place-and-route of generated Verilog with the open-source tools (YoWASP wheels).

:data:`DEVICES` names the targets a sweep or benchmark can ask for: ``xilinx`` (Yosys
``synth_xilinx`` only: there is no open place and route for 7-series here), ``ecp5``
(LFE5U-85F, ``synth_ecp5`` + ``nextpnr-ecp5``) and ``ice40`` (iCE40 UP5K, ``synth_ice40`` +
``nextpnr-ice40``). :func:`synthesize` runs Yosys in a folder and returns cell counts summarized
per family (:func:`count_cells`); :func:`place_and_route` runs nextpnr on the netlist Yosys left
there and returns Fmax and utilization (:func:`summarize_nextpnr_report`). Both raise
:class:`ToolError` (with the reason: missing tool, timeout, the tool's own error lines, "does
not fit") and never leave a half-written result.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Optional

__all__ = [
    "Device",
    "DEVICES",
    "ToolError",
    "tool",
    "run_logged",
    "run_tool",
    "tool_failure",
    "NO_FIT",
    "synthesize",
    "place_and_route",
    "count_cells",
    "xilinx_counts",
    "summarize_nextpnr_report",
    "LUTRAM_LUTS",
    "lut6_eq_of",
]


class ToolError(RuntimeError):
    """A synthesis, place-and-route or board-build step failed; the message says which and why
    (a design too large for its device says by how much)."""


@dataclass(frozen=True)
class Device:
    """One FPGA part: the Yosys script (``{top}`` is replaced) and, if any, nextpnr and its part
    arguments; its capacity for "does it fit" answers: ``luts`` (LUT4 on iCE40/ECP5, LUT6 on
    Xilinx), ``ffs``, ``bram`` (iCE40 EBR 4 kbit, ECP5 DP16KD 18 kbit, Xilinx RAMB36) and
    whether LUTs can be RAM. The one table of device facts (boards name their device here)."""

    name: str
    part: str
    synth: str
    nextpnr: Optional[str] = None
    nextpnr_args: tuple = ()
    luts: int = 0
    ffs: int = 0
    bram: int = 0
    lutram: bool = False
    notes: str = ""


DEVICES = {
    "xilinx": Device(
        "xilinx",
        "7-series (Yosys only)",
        "synth_xilinx -flatten -noiopad -noclkbuf -top {top}",
        luts=20_800,
        ffs=41_600,
        bram=50,
        lutram=True,
        notes="cell counts only: no open place and route for 7-series; capacity of an XC7A35T",
    ),
    "ecp5": Device(
        "ecp5",
        "LFE5U-85F-CABGA381",
        "synth_ecp5 -top {top} -json synth.json",
        "nextpnr-ecp5",
        ("--85k", "--package", "CABGA381"),
        luts=83_640,
        ffs=83_640,
        bram=208,
        lutram=True,
    ),
    "ice40": Device(
        "ice40",
        "iCE40UP5K-SG48",
        "synth_ice40 -top {top} -json synth.json",
        "nextpnr-ice40",
        ("--up5k", "--package", "sg48"),
        luts=5_280,
        ffs=5_280,
        bram=30,
        lutram=False,
    ),
}

#: LUTs of a 7-series / UltraScale slice that one LUT-RAM cell occupies.
LUTRAM_LUTS = {
    "RAM32M": 4,
    "RAM64M": 4,
    "RAM32M16": 8,
    "RAM64M8": 8,
    "RAM16X1D": 2,
    "RAM32X1D": 2,
    "RAM64X1D": 2,
    "RAM128X1D": 4,
    "RAM16X1S": 1,
    "RAM32X1S": 1,
    "RAM64X1S": 1,
    "RAM128X1S": 2,
    "RAM256X1S": 4,
}
SRL_CELLS = ("SRL16E", "SRLC16E", "SRLC32E")


def tool(name: str) -> str:
    """Path of tool ``name`` (Amaranth's names: ``yosys``, ``nextpnr-ecp5``, ``ecppack``...;
    a ``yowasp-`` prefix is accepted): the command in Amaranth's variable for it (``$YOSYS``,
    ``$NEXTPNR_ECP5``...) if set, else the YoWASP build; next to this Python first, then on
    PATH."""
    name = name.removeprefix("yowasp-")
    variable = name.upper().replace("-", "_")
    command = os.environ.get(variable) or f"yowasp-{name}"
    local = Path(sys.executable).parent / command
    found = str(local) if local.exists() else shutil.which(command)
    if not found:
        raise ToolError(
            f"{name} must be installed (pip install -e '.[synth]' for the YoWASP "
            f"tools, or set {variable}), not missing: {command!r} not found"
        )
    return found


def run_logged(
    argv: list[str], cwd: Path, log_name: str, timeout: Optional[float]
) -> tuple[float, int, Path]:
    """Run a tool in ``cwd``, its output in ``cwd/LOG_NAME.log``: (seconds, exit code, log
    path). ``subprocess.TimeoutExpired`` passes through: callers word their own errors."""
    start = time.perf_counter()
    log_path = Path(cwd) / f"{log_name}.log"
    with open(log_path, "w") as out:
        proc = subprocess.run(
            argv,
            cwd=cwd,
            stdout=out,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            timeout=timeout,
        )
    return time.perf_counter() - start, proc.returncode, log_path


#: What nextpnr says when a design does not fit its device.
NO_FIT = (
    "no BELs remaining",
    "Unable to place",
    "Failed to route",
    "failed to route",
    "Unable to find legal placement",
    "Failed to legalise",
    "over-utilized",
    "Design utilisation exceeds",
)


def tool_failure(log_name: str, code: int, text: str, log_path: Path) -> ToolError:
    """The error for a tool run that exited ``code`` with log ``text``."""
    errors = [line.strip() for line in text.splitlines() if "ERROR" in line.upper()][-3:]
    detail = " / ".join(errors)[:500] or "\n".join(text.splitlines()[-5:])[:500]
    if log_name.startswith("nextpnr") and any(marker in text for marker in NO_FIT):
        return ToolError(
            f"place and route failed: the design does not fit the device "
            f"({detail}; log: {log_path})"
        )
    return ToolError(f"{log_name} failed (exit code {code}): {detail} (log: {log_path})")


def run_tool(argv: list[str], cwd: Path, log_name: str, timeout: Optional[float]) -> float:
    """:func:`run_logged`; the seconds taken, or :class:`ToolError` (timeout, failure, "does
    not fit")."""
    log_path = Path(cwd) / f"{log_name}.log"
    try:
        seconds, code, log_path = run_logged(argv, cwd, log_name, timeout)
    except subprocess.TimeoutExpired:
        raise ToolError(f"{log_name} timed out after {timeout:.0f} s (log: {log_path})") from None
    if code != 0:
        raise tool_failure(log_name, code, log_path.read_text(errors="replace"), log_path)
    return seconds


def synthesize(
    verilog: str, top: str, device: str, workdir: Path, *, timeout: Optional[float] = 900
) -> dict:
    """Yosys on ``verilog`` in ``workdir`` for ``device`` (a key of :data:`DEVICES`):
    ``{"cells": {type: n}, "synth_s": seconds, **count_cells(...)}``."""
    if device not in DEVICES:
        raise ToolError(f"device must be one of {sorted(DEVICES)}, not {device!r}")
    workdir = Path(workdir)
    (workdir / "design.v").write_text(verilog)
    script = (
        f"read_verilog design.v; {DEVICES[device].synth.format(top=top)}; "
        "tee -q -o stat.json stat -json"
    )
    seconds = run_tool([tool("yosys"), "-p", script], workdir, "yosys", timeout)
    cells = json.loads((workdir / "stat.json").read_text())["design"]["num_cells_by_type"]
    cells = {k: v for k, v in cells.items() if not k.startswith("$scopeinfo")}
    return {"cells": cells, "synth_s": round(seconds, 2), **count_cells(device, cells)}


def place_and_route(
    device: str, workdir: Path, *, freq_mhz: float = 100, timeout: Optional[float] = 900
) -> dict:
    """nextpnr on ``workdir/synth.json`` (left by :func:`synthesize`): Fmax and utilization,
    see :func:`summarize_nextpnr_report`, plus ``pnr_s``. The I/O is left unconstrained."""
    spec = DEVICES[device]
    if spec.nextpnr is None:
        raise ToolError(f"no open place and route for {device} ({spec.notes})")
    unconstrained = "--lpf-allow-unconstrained" if device == "ecp5" else "--pcf-allow-unconstrained"
    argv = [
        tool(spec.nextpnr),
        *spec.nextpnr_args,
        "--json",
        "synth.json",
        "--report",
        "report.json",
        "--freq",
        str(freq_mhz),
        "--timing-allow-fail",
        unconstrained,
    ]
    seconds = run_tool(argv, Path(workdir), "nextpnr", timeout)
    report = json.loads((Path(workdir) / "report.json").read_text())
    return {"pnr_s": round(seconds, 2), **summarize_nextpnr_report(report)}


def count_cells(device: str, cells: dict) -> dict:
    """The headline numbers of a cell histogram: ``luts`` (LUT6-equivalents for xilinx, LUT4s
    for ecp5/ice40, LUT-RAM included: on the ECP5 the LUT positions it blocks), ``ffs``,
    ``lutram`` (LUT-RAM cells) and ``bram``."""
    if device == "xilinx":
        x = xilinx_counts(cells)
        return {
            "luts": x["lut6_eq"],
            "ffs": x["ffs"],
            "lutram": x["lutram_cells"],
            "bram": x["bram_cells"],
        }
    if device == "ecp5":
        # a TRELLIS_DPR16X4 occupies three slices of a PFU: two in RAM mode (4 LUT4
        # positions) and the write-port slice (TRELLIS_RAMW), whose 2 LUTs cannot hold logic;
        # nextpnr counts all six ("RAM LUTs" + "RAMW LUTs" before packing)
        return {
            "luts": cells.get("LUT4", 0) + 6 * cells.get("TRELLIS_DPR16X4", 0),
            "ffs": cells.get("TRELLIS_FF", 0),
            "lutram": cells.get("TRELLIS_DPR16X4", 0),
            "bram": cells.get("DP16KD", 0),
        }
    if device == "ice40":
        return {
            "luts": cells.get("SB_LUT4", 0),
            "ffs": sum(v for k, v in cells.items() if k.startswith("SB_DFF")),
            "lutram": 0,
            "bram": cells.get("SB_RAM40_4K", 0),
        }
    raise ToolError(f"device must be one of {sorted(DEVICES)}, not {device!r}")


def lut6_eq_of(cell: str) -> int:
    """The LUT6-equivalents one ``synth_xilinx`` cell of type ``cell`` counts for: 1 for a LUT,
    an INV or an SRL, :data:`LUTRAM_LUTS` for a LUT-RAM cell, else 0 (see :func:`xilinx_counts`)."""
    if re.fullmatch(r"LUT[1-6]|INV", cell) or cell in SRL_CELLS:
        return 1
    if cell in LUTRAM_LUTS or re.fullmatch(r"RAM\d+(M\d*|X\d+[SD])", cell):
        return LUTRAM_LUTS.get(cell, 4)
    return 0


def xilinx_counts(cells: dict) -> dict:
    """Summarize a ``synth_xilinx`` cell histogram. LUT6-equivalents = LUT1..LUT6 + INV + the
    LUTs each LUT-RAM cell occupies (:data:`LUTRAM_LUTS`) + SRLs; CARRY4/8 and MUXF7/8 sit beside
    the LUTs of a slice and are listed, not added; flip-flops and block RAMs are separate."""
    cells = {k: v for k, v in cells.items() if not k.startswith("$scopeinfo")}
    luts = sum(cells.get(f"LUT{i}", 0) for i in range(1, 7))
    inv = cells.get("INV", 0)
    ffs = sum(v for k, v in cells.items() if k.startswith("FD"))
    lutram = {
        k: v
        for k, v in cells.items()
        if k in LUTRAM_LUTS or re.fullmatch(r"RAM\d+(M\d*|X\d+[SD])", k)
    }
    lutram_luts = sum(LUTRAM_LUTS.get(k, 4) * v for k, v in lutram.items())
    srl = sum(cells.get(k, 0) for k in SRL_CELLS)
    bram = {k: v for k, v in cells.items() if k.startswith("RAMB")}
    carry = sum(v for k, v in cells.items() if k.startswith("CARRY"))
    muxf = sum(v for k, v in cells.items() if k.startswith("MUXF"))
    known = {f"LUT{i}" for i in range(1, 7)} | {"INV"} | set(lutram) | set(SRL_CELLS) | set(bram)
    other = {
        k: v
        for k, v in cells.items()
        if k not in known and not k.startswith(("FD", "CARRY", "MUXF"))
    }
    return {
        "luts": luts,
        "inv": inv,
        "ffs": ffs,
        "lutram": ", ".join(f"{k} {v}" for k, v in sorted(lutram.items())) or "-",
        "lutram_cells": sum(lutram.values()),
        "lutram_luts": lutram_luts,
        "srl": srl,
        "bram": ", ".join(f"{k} {v}" for k, v in sorted(bram.items())) or "-",
        "bram_cells": sum(bram.values()),
        "carry": carry,
        "muxf": muxf,
        "other": ", ".join(f"{k} {v}" for k, v in sorted(other.items())) or "-",
        "lut6_eq": sum(lut6_eq_of(k) * v for k, v in cells.items()),
    }


def summarize_nextpnr_report(report: dict) -> dict:
    """From nextpnr's ``--report`` JSON: ``fmax_mhz`` (the slowest clock's achieved frequency),
    ``clocks`` and their ``constraints`` (MHz), ``utilization`` ({bel: "used/available"}, used ones only), ``util_luts`` (the
    fraction of logic cells used) and the critical path's endpoints and delays."""
    fmax = report.get("fmax", {})
    clocks = {net: v.get("achieved") for net, v in fmax.items()}
    util = report.get("utilization", {})
    out = {
        "fmax_mhz": min(clocks.values()) if clocks else None,
        "clocks": clocks,
        "constraints": {net: v.get("constraint") for net, v in fmax.items()},
        "utilization": {
            k: f"{v['used']}/{v['available']}" for k, v in util.items() if v.get("used")
        },
    }
    for bel in ("TRELLIS_COMB", "ICESTORM_LC"):
        if bel in util and util[bel].get("available"):
            out["util_luts"] = round(util[bel]["used"] / util[bel]["available"], 4)
    paths = report.get("critical_paths", [])
    steps = paths[0].get("path", []) if paths else []
    if steps:
        logic = [s for s in steps if s.get("type") == "logic"]
        out.update(
            critical_from=steps[0].get("from", {}).get("cell"),
            critical_to=steps[-1].get("to", {}).get("cell"),
            # cells crossed by the path (a LUT5/6 made of LUT4 + PFUMX shows as several steps)
            critical_cells=len({s["from"].get("cell") for s in logic}),
            critical_ns=round(sum(s.get("delay", 0) for s in steps), 2),
            critical_logic_ns=round(sum(s.get("delay", 0) for s in logic), 2),
            critical_route_ns=round(
                sum(s.get("delay", 0) for s in steps if s.get("type") == "routing"), 2
            ),
        )
    return out
