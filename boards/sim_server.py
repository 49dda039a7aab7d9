"""A simulated board behind a TCP port: the board core of a build directory (``xpfilt build``,
``--no-toolchain`` is enough) in cocotb + Verilator, its UART bridged to a socket by
:mod:`xpfilt.boards.sim_tb`. The host connects with ``socket://HOST:PORT`` exactly as to a serial port.

:func:`serve_board` builds the simulation (cached by :func:`xpfilt.sim.runner.build_design`) and runs
it until the configured number of connections is done; ``on_port`` hears the port as soon as it
listens. ``xpfilt sim-board`` is the command line.
"""

from __future__ import annotations

import json
import shutil
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Optional

from xpfilt.sim.runner import TestbenchRun, build_design, run_testbench

__all__ = [
    "SimBoardConfig",
    "serve_board",
    "BOARD_TB_MODULE",
    "EthernetSimConfig",
    "serve_ethernet_board",
    "ETH_TB_MODULE",
    "ethernet_line_rate",
]

BOARD_TB_MODULE = "xpfilt.boards.sim_tb"


@dataclass(frozen=True)
class SimBoardConfig:
    """``design``: a build directory. ``divider``: clock cycles per UART bit in simulation.
    ``port`` 0: any free port. ``connections`` 0: serve until stopped. ``accept_timeout``:
    seconds to wait for each connection before ending."""

    design: Path
    divider: int = 8
    host: str = "127.0.0.1"
    port: int = 0
    connections: int = 1
    accept_timeout: float = 600.0
    build_root: Optional[Path] = None
    run_dir: Optional[Path] = None


def serve_board(
    config: SimBoardConfig,
    *,
    on_port: Callable[[int], None] = lambda _: None,
    log: Callable[[str], None] = lambda _: None,
) -> TestbenchRun:
    from xpfilt.boards.build import BOARD_TOP, load_design, simulation_verilog

    design = load_design(config.design)
    verilog = simulation_verilog(design, config.divider)
    description = json.dumps(
        {"board_core": design.summary, "divider": config.divider, "files": design.files}
    )
    built = build_design(
        description, verilog, "verilator", config.build_root, log=log, toplevel=BOARD_TOP
    )
    log(f"simulation {'reused' if built.cached else 'built'}: {built.directory}")
    run_dir = Path(config.run_dir or tempfile.mkdtemp(prefix="xpfilt-sim-board-"))
    run_dir.mkdir(parents=True, exist_ok=True)
    port_file = run_dir / "port"
    port_file.unlink(missing_ok=True)
    tb_config = run_dir / "board_tb.json"
    tb_config.write_text(
        json.dumps(
            {
                "divider": config.divider,
                "host": config.host,
                "port": config.port,
                "port_file": str(port_file),
                "connections": config.connections,
                "accept_timeout": config.accept_timeout,
            }
        )
    )
    return _serve(built, tb_config, port_file, on_port, BOARD_TB_MODULE)


ETH_TB_MODULE = "xpfilt.boards.eth_sim_tb"


@dataclass(frozen=True)
class EthernetSimConfig:
    """``design``: a build directory; ``port`` 0: any free UDP port; ``idle_timeout``: seconds
    without a datagram before the simulation ends; ``phy``: ``rgmii`` (the board's) or
    ``gmii`` (:data:`xpfilt.boards.eth_sim.SIM_PHYS`)."""

    design: Path
    host: str = "127.0.0.1"
    port: int = 0
    idle_timeout: float = 600.0
    build_root: Optional[Path] = None
    run_dir: Optional[Path] = None
    phy: str = "rgmii"


def build_ethernet_board(
    design: Path, *, phy: str = "rgmii", build_root: Optional[Path] = None, log=print
):
    """The Verilator build of the simulated Ethernet board of build directory ``design``
    with PHY ``phy`` (cached by its Verilog, so every build directory of the same design and
    addresses reuses it) and the board's addresses."""
    from xpfilt.boards.eth_sim import SIM_TOP, ethernet_sim_verilog
    from xpfilt.sim.runner import default_build_root

    root = Path(build_root or default_build_root())
    verilog, addresses = ethernet_sim_verilog(design, root / "liteeth", phy=phy)
    board = json.loads((Path(design) / "board.json").read_text())
    built = build_design(
        json.dumps({"ethernet_board": board, "phy": phy, **addresses}),
        verilog,
        "verilator",
        root,
        log=log,
        toplevel=SIM_TOP,
    )
    return built, {**addresses, "phy": phy}


def ethernet_line_rate(
    design: Path,
    documents,
    output: Path,
    *,
    phy: str = "rgmii",
    build_root: Optional[Path] = None,
    log=print,
) -> dict:
    """The simulated Ethernet board's throughput with the line kept busy
    (:func:`xpfilt.boards.eth_sim_tb.line_rate`): the JSON it writes to ``output``, with the
    simulation's build and run times (``build_s``, 0 when reused; ``run_s``)."""
    built, addresses = build_ethernet_board(design, phy=phy, build_root=build_root, log=log)
    run_dir = Path(tempfile.mkdtemp(prefix="xpfilt-eth-rate-"))
    tb_config = run_dir / "eth_tb.json"
    tb_config.write_text(
        json.dumps(
            {
                "rate": {"documents": [str(p) for p in documents], "output": str(output)},
                **addresses,
            }
        )
    )
    run = run_testbench(built, tb_config, run_dir, test_module=ETH_TB_MODULE)
    if not run.passed:
        raise RuntimeError(f"the line-rate simulation failed: {run.log}")
    shutil.rmtree(run_dir, ignore_errors=True)  # kept above for its log
    result = json.loads(Path(output).read_text())
    return {
        **result,
        "build_s": 0.0 if built.cached else round(built.build_time, 1),
        "run_s": round(run.wall_time, 1),
    }


def serve_ethernet_board(
    config: EthernetSimConfig,
    *,
    on_port: Callable[[int], None] = lambda _: None,
    log: Callable[[str], None] = lambda _: None,
) -> TestbenchRun:
    """The Ethernet board of ``config.design`` (board core, engine, LiteEth) in Verilator, its
    PHY pins bridged to a UDP socket by :mod:`xpfilt.boards.eth_sim_tb`."""
    built, addresses = build_ethernet_board(
        config.design, phy=config.phy, build_root=config.build_root, log=log
    )
    log(f"simulation {'reused' if built.cached else 'built'}: {built.directory}")
    run_dir = Path(config.run_dir or tempfile.mkdtemp(prefix="xpfilt-sim-eth-"))
    run_dir.mkdir(parents=True, exist_ok=True)
    port_file = run_dir / "port"
    port_file.unlink(missing_ok=True)
    tb_config = run_dir / "eth_tb.json"
    tb_config.write_text(
        json.dumps(
            {
                "host": config.host,
                "port": config.port,
                "port_file": str(port_file),
                "idle_timeout": config.idle_timeout,
                **addresses,
            }
        )
    )
    return _serve(built, tb_config, port_file, on_port, ETH_TB_MODULE)


def _serve(built, tb_config: Path, port_file: Path, on_port, module: str) -> TestbenchRun:
    """Runs testbench ``module`` on ``built`` in ``tb_config``'s folder, calling ``on_port``
    with the port the testbench writes to ``port_file`` once it listens."""
    finished = threading.Event()

    def watch():
        while not finished.is_set():
            if port_file.exists():
                on_port(int(port_file.read_text()))
                return
            time.sleep(0.02)

    threading.Thread(target=watch, daemon=True).start()
    try:
        return run_testbench(built, tb_config, tb_config.parent, test_module=module)
    finally:
        finished.set()
