"""What every cocotb regression shares (:mod:`xpfilt.verify.regress` for the custom engine,
:mod:`xpfilt.verify.regress_programmable` for the programmable one): its configuration and
summary, the query source and the documents staged for the testbench, and one testbench run."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Optional, Sequence, Union

from xpfilt.compiler.custom import CompileOptions, EngineMode, hardware_queries
from xpfilt.compiler.programmable import HardwareSpec
from xpfilt.lang.xpath import Query, load_queries, read_query_file
from xpfilt.software.events import Document, DocumentError, load_documents, utf8_document

__all__ = [
    "SIMULATORS",
    "RegressionConfig",
    "RegressionSummary",
    "load_query_source",
    "stage_documents",
    "run_testbench_in",
    "safe_name",
]


SIMULATORS = ("verilator", "icarus")


DocumentSource = Union[str, Path, Document]


@dataclass(frozen=True)
class RegressionConfig:
    """One regression run.

    ``queries``: a query file (str or Path; query number = line number) or the query texts
    (numbered from 1). ``documents``: files, directories (their ``*.xml``, sorted) or
    :class:`~xpfilt.software.events.Document` objects, streamed in that order. ``fault``: a test hook
    that makes the expectation deliberately wrong (``model`` or ``reference``, see
    :data:`xpfilt.sim.checker.FAULTS`), to prove that the checker can fail."""

    queries: Union[str, Path, Sequence[str]]
    documents: Sequence[DocumentSource]
    options: CompileOptions = CompileOptions()
    simulator: str = "verilator"
    seed: int = 0
    p_valid: float = 0.8
    p_ready: float = 0.8
    max_name: int = 32
    bytes_per_cycle: int = 1  # the custom engine's input width (beats of W bytes)
    build_dir: Optional[Path] = None  # default: xpfilt.sim.runner.default_build_root()
    replay_dir: Optional[Path] = None  # default: BUILD_DIR/replays
    verify_replay: bool = True  # rerun the replay to confirm (and shrink) it
    fault: Optional[str] = None
    # --- mode="programmable" only ---
    mode: EngineMode = EngineMode.CUSTOM  # a string is taken too
    hardware: Optional[HardwareSpec] = None
    reconfigure: Sequence[Union[str, Path, Sequence[str]]] = ()  # query sets 2, 3, ...
    bad_streams: bool = True  # default schedule: reject a corrupt and a
    #                                         truncated stream before each reconfiguration
    items: Optional[Sequence[tuple]] = None  # explicit schedule, see _schedule

    def __post_init__(self):
        try:
            object.__setattr__(self, "mode", EngineMode(self.mode))  # frozen: set once here
        except ValueError:
            raise ValueError(
                f"mode must be one of {', '.join(m.value for m in EngineMode)}, not {self.mode!r}"
            ) from None
        if self.mode is EngineMode.PROGRAMMABLE and self.hardware is None:
            raise ValueError("mode programmable needs a hardware spec, not None")
        if self.mode is EngineMode.CUSTOM and (self.reconfigure or self.items is not None):
            raise ValueError("reconfigure and items need mode programmable, not custom")
        if self.simulator not in SIMULATORS:
            raise ValueError(
                f"simulator must be one of {', '.join(SIMULATORS)}, not {self.simulator!r}"
            )
        for name in ("p_valid", "p_ready"):
            value = getattr(self, name)
            if not 0.0 < value <= 1.0:
                raise ValueError(f"{name} must be in (0, 1], not {value!r}")


@dataclass
class RegressionSummary:
    simulator: str
    documents: int
    queries: int
    clusters: int
    matches: int  # (document, query) matches the engine reported
    flagged: int  # documents the engine flagged (errors)
    mismatches: int
    cycles: int
    bytes: int
    wall_time: float  # the whole run_regression call
    build_time: float  # the simulator build (when cached: the earlier build's time)
    build_cached: bool
    verilog_time: float  # plan + Verilog emission
    sim_time: float  # the clocked part of the simulation
    check_time: float  # model + reference scoring after the simulation
    input_stalls: int = 0  # cycles a byte was offered and bytes_in.ready was low
    readout_stalls: int = 0  # cycles a readout beat waited for readout.ready
    skipped_queries: list[str] = field(default_factory=list)
    skipped_documents: list[str] = field(default_factory=list)
    mismatch_details: list[dict] = field(default_factory=list)
    answers: dict = field(default_factory=dict)  # name -> query numbers, None when flagged
    replay: Optional[Path] = None
    replay_reproduces: Optional[bool] = None
    design: Optional[Path] = None
    mode: str = "custom"
    config_bits: int = 0  # programmable: configuration bits transferred
    config_stalls: int = 0  # programmable: cycles a config bit waited for config.ready
    streams: list[dict] = field(default_factory=list)  # programmable: each stream's verdict
    #: programmable: (document name, label of the configuration that answered it) in order
    document_configurations: list[tuple] = field(default_factory=list)

    @classmethod
    def from_report(cls, report: dict, mismatches: list, design, **fields) -> "RegressionSummary":
        """The summary of a testbench ``report`` (see :func:`xpfilt.sim.engine_tb.finish_run`) run on
        the simulator build ``design``; ``fields``: the rest (simulator, queries, ...)."""
        results = report["documents"]
        return cls(
            matches=sum(len(r["numbers"]) for r in results if r["numbers"]),
            flagged=sum(1 for r in results if r["flags"]),
            mismatches=len(mismatches),
            cycles=report["cycles"],
            bytes=report["bytes"],
            wall_time=0.0,
            build_time=design.build_time,
            build_cached=design.cached,
            sim_time=report["sim_time"],
            check_time=report["check_time"],
            input_stalls=report["input_stalls"],
            readout_stalls=report["readout_stalls"],
            mismatch_details=mismatches,
            answers={r["name"]: r["numbers"] for r in results},
            design=design.directory,
            **fields,
        )

    @property
    def ok(self) -> bool:
        return self.mismatches == 0

    @property
    def cycles_per_s(self) -> float:
        return self.cycles / self.sim_time if self.sim_time else 0.0

    def format(self) -> str:
        """A readable multi-line summary."""
        cached = " (cached)" if self.build_cached else ""
        lines = [
            f"simulator:   {self.simulator}",
            f"design:      {self.queries} queries in {self.clusters} clusters"
            + (f" ({len(self.skipped_queries)} skipped)" if self.skipped_queries else ""),
            f"documents:   {self.documents}, {self.bytes:,} bytes"
            + (f" ({len(self.skipped_documents)} skipped)" if self.skipped_documents else ""),
            f"matches:     {self.matches:,} (document, query) pairs; "
            f"{self.flagged} documents flagged",
            f"mismatches:  {self.mismatches}",
            f"cycles:      {self.cycles:,} simulated in {self.sim_time:.1f} s "
            f"({self.cycles_per_s:,.0f} cycles/s); stalls: {self.input_stalls:,} input, "
            f"{self.readout_stalls:,} readout",
            f"time:        {self.wall_time:.1f} s wall; build {self.build_time:.1f} s{cached}, "
            f"Verilog {self.verilog_time:.1f} s, check {self.check_time:.1f} s",
        ]
        if self.mode == EngineMode.PROGRAMMABLE:
            lines.insert(
                1,
                f"mode:        programmable, {self.config_bits:,} configuration "
                f"bits ({self.config_stalls:,} config stalls)",
            )
            for s in self.streams:
                lines.insert(
                    -1,
                    f"stream:      {s['label']}: {s['bits']:,} bits, "
                    f"{s['verdict']} (expected {s['expected']})",
                )
        for message in self.skipped_queries[:5] + self.skipped_documents[:5]:
            lines.append(f"skipped:     {message}")
        for m in self.mismatch_details[:10]:
            where = f"document {m.get('document')} ({m.get('name', '?')})"
            detail = m["detail"]
            if m["kind"] == "cycle":
                first = detail["first"]
                detail = (
                    f"{detail['mismatching_cycles']} cycles differ from the model; first "
                    f"at cycle {first['cycle']}: rtl {first['rtl']}, "
                    f"model {first['model']}"
                )
            lines.append(f"MISMATCH:    {m['kind']}, {where}: {detail}")
        if self.replay is not None:
            state = {True: "reproduces", False: "NOT reproduced", None: "not rerun"}
            lines.append(f"replay:      {self.replay}/command.sh ({state[self.replay_reproduces]})")
        return "\n".join(lines)


def load_query_source(
    source, max_name: Optional[int] = None
) -> tuple[list[Query], list[str], list[str]]:
    """(queries the hardware takes, skip messages, the query file's lines); ``max_name``: skip
    queries with a longer name (a custom engine's front end could never decode it)."""
    if isinstance(source, (str, Path)):
        path = Path(source)
        lines = read_query_file(path)
        label = str(path)
    else:
        lines = [str(text) for text in source]
        label = "<queries>"
    loaded = load_queries(lines)
    skipped = [f"{label}: line {e.number}: {e}" for e in loaded.errors]
    queries, refused = hardware_queries(loaded.queries, max_name)
    skipped += [f"{label}: {message}" for message in refused]
    return queries, skipped, lines


def stage_documents(
    sources: Sequence[DocumentSource], run_dir: Path
) -> tuple[list[tuple[str, Path]], list[str]]:
    paths: list[DocumentSource] = []
    for source in sources:
        if isinstance(source, Document):
            paths.append(source)
        else:
            paths.extend(load_documents([source]))
    docs, skipped = [], []
    for i, item in enumerate(paths):
        try:
            document = item if isinstance(item, Document) else Document.from_path(item)
            streamed = utf8_document(document)  # the bytes the hardware takes
        except OSError:
            skipped.append(f"{Path(item).name}: cannot read it")
            continue
        except DocumentError as exc:
            skipped.append(f"{exc} (not streamed)")
            continue
        if isinstance(item, Document) or streamed is not document:
            path = run_dir / "docs" / f"{i:05d}.xml"
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(streamed.data)
        else:
            path = Path(item).resolve()
        docs.append((document.name, path))
    return docs, skipped


def run_testbench_in(design, run_dir: Path, first_name: str, **kwargs):
    """Run the cocotb test on ``run_dir/config.json``; return the run, its report and the
    mismatches (a failing cocotb test without a recorded mismatch becomes one)."""
    from xpfilt.sim.runner import run_testbench

    run = run_testbench(design, run_dir / "config.json", run_dir, **kwargs)
    results_path = run_dir / "results.json"
    if not results_path.exists():
        raise RuntimeError(
            f"the testbench wrote no results (see the log below)\n"
            f"{run.log.read_text(errors='replace')[-3000:]}"
        )
    report = json.loads(results_path.read_text())
    mismatches = report["mismatches"]
    if not run.passed and not mismatches:
        mismatches = [
            {
                "kind": "testbench",
                "document": 0,
                "name": first_name,
                "detail": f"cocotb reported {run.failed} failing tests; see {run.log}",
            }
        ]
    return run, report, mismatches


def safe_name(name: str) -> str:
    name = re.sub(r"[^A-Za-z0-9._-]+", "_", name).strip("._") or "document"
    return name if name.endswith(".xml") else name + ".xml"
