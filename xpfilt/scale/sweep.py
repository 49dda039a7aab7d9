"""Design-space sweeps: points, their evaluation, and a whole sweep run over Spark.

A :class:`DesignPoint` fixes everything about one experiment, the seed included; :func:`grid`
expands a specification into points (``itertools.product`` over the listed values);
:func:`evaluate` turns one point into one flat row: it generates the workload, compiles (custom)
or configures (programmable) the engine, writes its Verilog into a private temporary folder,
optionally synthesizes it with Yosys and places and routes it with nextpnr
(:mod:`xpfilt.eda.synth`; its nested values, such as the cell histogram, stay dicts: the store
writes them as JSON text), runs the cycle-accurate model over a document batch and derives the
throughput (MB/s = bytes per cycle x Fmax in MHz). A point that fails becomes a row with
``status = "failed"`` and the reason; nothing raises.

:func:`run_sweep` is ``xpfilt sweep``: a :class:`SweepSpec` (YAML, see :func:`load_spec`)
expanded, the points not already in the output folder mapped over Spark with
:func:`xpfilt.scale.fanout.fan_out`, each row saved as it arrives (:mod:`xpfilt.scale.store`).
"""

from __future__ import annotations

import dataclasses
import itertools
import tempfile
import time
import traceback
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Optional, Union

__all__ = [
    "DesignPoint",
    "CLUSTER_UNIT",
    "grid",
    "evaluate",
    "SweepSpec",
    "load_spec",
    "run_sweep",
    "SweepSummary",
]

#: What a cluster of each engine is counted in: :attr:`DesignPoint.cluster_size` is queries
#: per cluster for the custom engine (its compiler packs whole queries into a cluster) and
#: generic stack columns per cluster for the programmable engine (its hardware has no queries,
#: only columns that a configuration fills).
CLUSTER_UNIT = {"custom": "queries", "programmable": "columns"}


@dataclass(frozen=True)
class DesignPoint:
    """One experiment; ``device`` is a key of :data:`xpfilt.eda.synth.DEVICES`.

    ``cluster_size`` is counted in the engine's unit (:data:`CLUSTER_UNIT`): queries per
    cluster for the custom engine, stack columns per cluster for the programmable engine. It is
    one field so that one sweep axis covers both engines and stored rows and keys keep their
    names; code reads it through :attr:`queries_per_cluster` or :attr:`columns_per_cluster`,
    which say which it is and refuse the other engine."""

    engine: str = "custom"  # "custom" | "programmable"
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
    readout: str = "serial"  # a xpfilt.hwspec.readout.ReadoutKind value
    beat_bytes: int = 1  # custom engine: input bytes per cycle (W, issue 18)

    #: Fields added after sweeps were stored: in the key only when not at their default, so
    #: the keys of earlier rows stay valid.
    _LATER = ("readout", "beat_bytes")

    @property
    def queries_per_cluster(self) -> int:
        """The custom engine's queries per cluster (``CompileOptions.cluster_size``)."""
        return self._cluster_size_in("queries")

    @property
    def columns_per_cluster(self) -> int:
        """The programmable engine's generic stack columns per cluster (``HardwareSpec.columns``
        is this rounded up to an even count)."""
        return self._cluster_size_in("columns")

    def _cluster_size_in(self, unit: str) -> int:
        if CLUSTER_UNIT.get(self.engine) != unit:
            engine = next(e for e, u in CLUSTER_UNIT.items() if u == unit)
            raise ValueError(
                f"engine must be {engine!r} for {unit} per cluster, not {self.engine!r}"
            )
        return self.cluster_size

    def key(self) -> str:
        """A stable identifier (for resuming: an existing row with this key is not redone)."""
        values = [
            getattr(self, f.name)
            for f in dataclasses.fields(self)
            if f.name not in self._LATER or getattr(self, f.name) != f.default
        ]
        return "-".join(f"{v}" for v in values)


def grid(spec: dict) -> list[DesignPoint]:
    """All points of ``spec`` (field name -> value or list of values), in product order."""
    fields = {f.name for f in dataclasses.fields(DesignPoint)}
    unknown = sorted(set(spec) - fields)
    if unknown:
        raise ValueError(f"sweep fields must be among {sorted(fields)}, not {unknown}")
    names = list(spec)
    values = [v if isinstance(v, (list, tuple)) else [v] for v in spec.values()]
    return [DesignPoint(**dict(zip(names, combo))) for combo in itertools.product(*values)]


def check_point(point: DesignPoint) -> None:
    """ValueError unless every field of ``point`` has its field's type and the counts are
    positive, so a sweep refuses a malformed spec before computing anything (a point that
    fails to evaluate, such as an unknown engine, is still a row with its reason)."""
    for f in dataclasses.fields(DesignPoint):
        value, default = getattr(point, f.name), f.default
        if isinstance(default, bool):
            ok = isinstance(value, bool)
        elif isinstance(default, (int, float)):
            ok = isinstance(value, type(default) if isinstance(default, int) else (int, float))
            ok = ok and not isinstance(value, bool)
        else:
            ok = isinstance(value, type(default))
        if not ok:
            raise ValueError(f"{f.name} must be {type(default).__name__}, not {value!r}")
    for name in ("queries", "depth", "cluster_size", "max_depth", "documents"):
        if getattr(point, name) < 1:
            raise ValueError(f"{name} must be at least 1, not {getattr(point, name)!r}")


def evaluate(
    point: DesignPoint,
    *,
    synthesize: bool = False,
    place_and_route: bool = False,
    timeout: Optional[float] = 900,
    target_mhz: float = 200,
    jobs: Optional[int] = None,
) -> dict:
    """One row for ``point``: workload, compile/configure, Verilog, model run, and with
    ``synthesize`` Yosys cell counts, with ``place_and_route`` also nextpnr's Fmax and the
    throughput. ``timeout`` caps each tool run (seconds); ``jobs``: processes converting the
    clusters to Verilog (default one per core; 1 when points already run in parallel).
    Never raises."""
    from xpfilt.eda.synth import ToolError

    row: dict = dataclasses.asdict(point)
    row.update(key=point.key(), status="ok", reason="")
    start = time.perf_counter()
    try:
        with tempfile.TemporaryDirectory(prefix="xpfilt-point-") as tmp:
            _evaluate_into(
                point,
                Path(tmp),
                row,
                synthesize or place_and_route,
                place_and_route,
                timeout,
                target_mhz,
                jobs,
            )
    except ToolError as exc:  # the tool's own reason is enough
        row.update(status="timeout" if "timed out" in str(exc) else "failed", reason=str(exc))
    except Exception as exc:  # a failed point is a row with its reason, never an exception
        row.update(
            status="failed",
            reason=f"{type(exc).__name__}: {exc}",
            traceback=traceback.format_exc(limit=3),
        )
    row["seconds"] = round(time.perf_counter() - start, 3)
    return row


def _evaluate_into(
    point: DesignPoint,
    tmp: Path,
    row: dict,
    synthesize: bool,
    place_and_route: bool,
    timeout: Optional[float],
    target_mhz: float,
    jobs: Optional[int],
) -> None:
    from xpfilt import workloads
    from xpfilt.compiler.custom import CompileOptions, compile_queries
    from xpfilt.eda import synth
    from xpfilt.hdl.verilog import TOP_NAME, emit_programmable_verilog, emit_verilog
    from xpfilt.lang.xpath import parse_query
    from xpfilt.model.custom import EngineModel, run_documents
    from xpfilt.paths import shared_data

    if point.device not in synth.DEVICES:
        raise ValueError(f"device must be one of {sorted(synth.DEVICES)}, not {point.device!r}")
    schema = workloads.DtdSchema.load(shared_data() / "nitf/nitf-2-5.dtd")
    texts = workloads.generate_queries(
        schema,
        workloads.QueryGenConfig(
            count=point.queries,
            max_depth=point.depth,
            p_wildcard=point.p_wildcard,
            p_descendant=point.p_descendant,
            seed=point.seed,
        ),
    )
    queries = [parse_query(t, i + 1) for i, t in enumerate(texts)]
    docs = workloads.generate_documents(
        schema,
        workloads.DocGenConfig(
            max_depth=point.max_depth, target_bytes=point.document_bytes, seed=point.seed
        ),
        point.documents,
    )
    row["query_nodes"] = sum(len(q) for q in queries)

    if point.engine == "custom":
        plan = compile_queries(
            queries,
            CompileOptions(
                cluster_size=point.queries_per_cluster,
                max_depth=point.max_depth,
                opt_last=point.opt_last,
                opt_root=point.opt_root,
                opt_share=point.opt_share,
                prefix_sharing=point.prefix_sharing,
                readout=point.readout,
            ),
        )
        row.update(
            columns=plan.stats["columns"], clusters=plan.stats["clusters"], tags=plan.stats["tags"]
        )
        verilog = emit_verilog(plan, jobs=jobs, bytes_per_cycle=point.beat_bytes)
        model = EngineModel(plan, bytes_per_cycle=point.beat_bytes)
    elif point.engine == "programmable":
        if point.beat_bytes != 1:
            raise ValueError(
                f"beat_bytes must be 1 for the programmable engine (no W-byte "
                f"front end yet), not {point.beat_bytes!r}"
            )
        from xpfilt.compiler.programmable import MAX_TAGS, HardwareSpec, configure, query_tags
        from xpfilt.model.programmable import ProgrammableModel, preload_configuration

        columns_needed = row["query_nodes"]
        tags = len(set().union(*(query_tags(q) for q in queries)))
        per_cluster = point.columns_per_cluster
        spec = HardwareSpec(
            clusters=-(-columns_needed // per_cluster),
            columns=per_cluster + per_cluster % 2,  # HardwareSpec: an even count
            max_tag_len=24,
            max_depth=point.max_depth,
            readout=point.readout,
            tags=max(1, min(MAX_TAGS, tags)),
        )
        configuration = configure(queries, spec)
        row.update(
            columns=spec.clusters * spec.columns,
            clusters=spec.clusters,
            configured=len(configuration.answers),
            config_bits=len(configuration.stream()) * 8,
        )
        verilog = emit_programmable_verilog(spec)
        model = ProgrammableModel(spec)
        preload_configuration(model, configuration)
    else:
        raise ValueError(f"engine must be 'custom' or 'programmable', not {point.engine!r}")
    row["verilog_bytes"] = len(verilog)

    readouts = run_documents(model, docs)
    size = sum(map(len, docs))
    row.update(
        documents_bytes=size,
        cycles=model.cycle,
        bytes_per_cycle=size / model.cycle,
        readout_overhead=round(model.cycle / size - 1, 6),
        flagged=sum(1 for r in readouts if r.errors),
    )

    # the tools' nested values (cells, clocks, ...) stay dicts: the store writes them as JSON
    if synthesize:
        row.update(synth.synthesize(verilog, TOP_NAME, point.device, tmp, timeout=timeout))
        row["part"] = synth.DEVICES[point.device].part
    if place_and_route and synth.DEVICES[point.device].nextpnr:
        row.update(synth.place_and_route(point.device, tmp, freq_mhz=target_mhz, timeout=timeout))
        if row.get("fmax_mhz"):
            # bytes per cycle x million cycles per second = MB/s
            row["throughput_MBps"] = round(row["bytes_per_cycle"] * row["fmax_mhz"], 3)


# -- whole sweeps ----------------------------------------------------------------------------


@dataclass(frozen=True)
class SweepSpec:
    """What ``xpfilt sweep SPEC.yaml`` reads: ``grids`` (each a mapping field -> value or
    list, expanded by :func:`grid`; their points are concatenated, duplicates dropped), whether
    to ``synthesize`` and ``place_and_route`` (nextpnr's target ``target_mhz``: set it above the
    expected Fmax, nextpnr stops improving once the target is met), and the per-tool
    ``timeout`` in seconds."""

    grids: tuple
    synthesize: bool = False
    place_and_route: bool = False
    timeout: Optional[float] = 900
    target_mhz: float = 200

    def points(self) -> list[DesignPoint]:
        seen: dict[str, DesignPoint] = {}
        for g in self.grids:
            for point in grid(g):
                seen.setdefault(point.key(), point)
        return list(seen.values())


def load_spec(source: Union[str, Path, dict]) -> SweepSpec:
    """A :class:`SweepSpec` from a YAML file (or an already-parsed mapping). ``grid:`` may be
    one mapping or a list of them. Errors name the file and the offending key."""
    where = str(source) if not isinstance(source, dict) else "spec"
    if isinstance(source, dict):
        data = source
    else:
        import yaml

        try:
            data = yaml.safe_load(Path(source).read_text())
        except (yaml.YAMLError, UnicodeDecodeError) as exc:
            raise ValueError(f"{where}: not valid YAML: {exc}") from None
    if not isinstance(data, dict) or "grid" not in data:
        raise ValueError(f"{where}: needs a top-level 'grid:' mapping (or list of mappings)")
    known = {"grid", "synthesize", "place_and_route", "timeout", "target_mhz"}
    unknown = sorted(set(data) - known)
    if unknown:
        raise ValueError(f"{where}: unknown keys {unknown} (expected one of {sorted(known)})")
    grids = data["grid"] if isinstance(data["grid"], list) else [data["grid"]]
    for i, g in enumerate(grids):
        if not isinstance(g, dict):
            raise ValueError(f"{where}: grid {i + 1} must be a mapping, not {g!r}")
        try:
            for point in grid(g):
                check_point(point)
        except (TypeError, ValueError) as exc:
            raise ValueError(f"{where}: grid {i + 1}: {exc}") from None
    for key in ("timeout", "target_mhz"):
        value = data.get(key, 1)
        if value is not None and (
            not isinstance(value, (int, float)) or isinstance(value, bool) or value <= 0
        ):
            raise ValueError(f"{where}: {key} must be a positive number, not {value!r}")
    return SweepSpec(
        tuple(grids),
        synthesize=bool(data.get("synthesize", False)),
        place_and_route=bool(data.get("place_and_route", False)),
        timeout=data.get("timeout", 900),
        target_mhz=float(data.get("target_mhz", 200)),
    )


@dataclass
class SweepSummary:
    """What a sweep did: points in the spec, already present (skipped), computed now, and how
    the computed ones ended; ``wall_s`` and ``work_s`` (sum of the points' own seconds)."""

    total: int = 0
    skipped: int = 0
    computed: int = 0
    statuses: dict = dataclasses.field(default_factory=dict)
    wall_s: float = 0.0
    work_s: float = 0.0

    def line(self) -> str:
        ends = ", ".join(f"{n} {s}" for s, n in sorted(self.statuses.items())) or "none"
        return (
            f"{self.total} points: {self.skipped} already done, {self.computed} computed "
            f"({ends}) in {self.wall_s:.1f} s wall, {self.work_s:.1f} s of work"
        )


class _Evaluate:
    """``evaluate`` with a spec's options bound (picklable, unlike a lambda)."""

    def __init__(self, spec: SweepSpec, jobs: Optional[int]):
        self.options = dict(
            synthesize=spec.synthesize,
            place_and_route=spec.place_and_route,
            timeout=spec.timeout,
            target_mhz=spec.target_mhz,
            jobs=jobs,
        )

    def __call__(self, point: DesignPoint) -> dict:
        return evaluate(point, **self.options)


def _expected_cost(point: DesignPoint) -> float:
    """A rough relative cost of evaluating ``point`` (for ordering, not for reporting)."""
    size = point.queries * point.depth * (4 if point.engine == "programmable" else 1)
    return size + point.documents * point.document_bytes / 200


def run_sweep(
    spec: SweepSpec,
    out: Union[str, Path],
    *,
    master: Optional[str] = None,
    retry_failed: bool = False,
    progress: bool = True,
    limit: Optional[int] = None,
    on_row: Optional[Callable[[dict], None]] = None,
    log: Callable[[str], None] = lambda message: None,
    verilog_jobs: Optional[int] = None,
) -> SweepSummary:
    """Evaluate the points of ``spec`` missing from ``out`` (all of them with ``retry_failed``
    except those that succeeded) and save each row as it arrives. ``master``: a Spark master or
    ``"serial"``; ``limit``: stop after that many new points (for tests and dry runs);
    ``verilog_jobs``: processes per point for Verilog (default: all cores when serial, 1 on
    Spark, where the points themselves fill the cores)."""
    from xpfilt.scale.fanout import SERIAL, fan_out
    from xpfilt.scale.store import SweepStore

    store = SweepStore(out)
    done = store.keys(statuses=("ok",) if retry_failed else None)
    points = spec.points()
    todo = [p for p in points if p.key() not in done]
    summary = SweepSummary(total=len(points), skipped=len(points) - len(todo))
    if limit is not None:
        todo = todo[:limit]
    log(
        f"{summary.skipped} of {summary.total} points already in {out}; computing {len(todo)}"
        + (f" on {master or 'Spark local[*]'}" if todo else "")
    )
    start = time.perf_counter()
    # a point gets the tool timeout for each of its two tool runs, plus the rest
    point_timeout = None if spec.timeout is None else 3 * spec.timeout + 60
    if verilog_jobs is None and master != SERIAL:
        verilog_jobs = 1
        # longest first, so that no worker is left with a long point at the end
        todo.sort(key=_expected_cost, reverse=True)
    for outcome in fan_out(
        todo,
        _Evaluate(spec, verilog_jobs),
        master=master,
        timeout=point_timeout,
        progress=progress,
        label="points",
    ):
        row = (
            outcome.value
            if outcome.status == "ok"
            else {
                **dataclasses.asdict(outcome.item),
                "key": outcome.item.key(),
                "status": outcome.status,
                "reason": outcome.reason,
                "seconds": round(outcome.seconds, 3),
            }
        )
        row["driver_s"] = round(outcome.seconds, 3)
        known = len(store.extra_fields)
        store.write(row)
        for name, why in list(store.extra_fields.items())[known:]:
            log(
                f"sweep: field {name} {why} (xpfilt.scale.store.COLUMNS); "
                f"kept as JSON in column 'extra'"
            )
        summary.computed += 1
        summary.statuses[row["status"]] = summary.statuses.get(row["status"], 0) + 1
        summary.work_s += row.get("seconds") or 0.0
        if on_row is not None:
            on_row(row)
    summary.wall_s = time.perf_counter() - start
    return summary
