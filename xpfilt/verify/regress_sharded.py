"""Regressions sharded over (query set x document batch) and fanned out on Spark.

``xpfilt regress --spark``: :func:`make_shards` cuts the work into :class:`Shard` s -- every
query set against every batch of ``batch_size`` documents -- and :func:`run_sharded` maps
:func:`run_shard` over them with :func:`xpfilt.scale.fanout.fan_out`. A shard runs

* the model-vs-reference regression: the cycle-accurate model (:mod:`xpfilt.model`) and the
  reference filter on each document; a document whose answers differ is a mismatch (one the
  model flags and the reference accepts is counted as *flagged*: a hardware limit, not an
  error);
* unless ``rtl=False``, the cocotb regression of :func:`xpfilt.verify.regress.run_regression` on the
  same query set and documents (builds are cached and locked per design, so shards of one query
  set share one simulator build).

:class:`ShardedSummary` adds the shards up into one report; a shard that fails or times out is
counted and named there, never dropped.
"""

from __future__ import annotations

import dataclasses
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Optional, Sequence

from xpfilt.verify.regress import RegressionConfig

__all__ = ["Shard", "make_shards", "run_shard", "run_sharded", "ShardedSummary"]


@dataclass(frozen=True)
class Shard:
    """One query set against one batch of documents (paths, so that executors read them)."""

    index: int
    queries: str
    documents: tuple
    config: RegressionConfig
    rtl: bool = True

    def label(self) -> str:
        return (
            f"shard {self.index}: {Path(self.queries).name} x {len(self.documents)} "
            f"documents ({Path(self.documents[0]).name} ...)"
        )


def _expand(documents: Sequence) -> list[str]:
    paths = []
    for source in documents:
        source = Path(source)
        paths += sorted(str(p) for p in source.glob("*.xml")) if source.is_dir() else [str(source)]
    return paths


def make_shards(
    config: RegressionConfig,
    query_sets: Sequence,
    documents: Sequence,
    *,
    batch_size: int = 25,
    rtl: bool = True,
) -> list[Shard]:
    """Every query set x every batch of ``batch_size`` documents (files or folders of
    ``*.xml``, expanded and kept in order); ``config`` supplies everything else."""
    if batch_size < 1:
        raise ValueError(f"batch size must be at least 1, not {batch_size}")
    paths = _expand(documents)
    if not paths:
        raise ValueError("documents must include at least one file, not none")
    shards = []
    for queries in query_sets:
        for start in range(0, len(paths), batch_size):
            batch = tuple(paths[start : start + batch_size])
            shards.append(
                Shard(
                    len(shards),
                    str(queries),
                    batch,
                    dataclasses.replace(config, queries=str(queries), documents=list(batch)),
                    rtl,
                )
            )
    return shards


def run_shard(shard: Shard) -> dict:
    """Model vs reference (and RTL in cocotb) on one shard; a dict of plain values."""
    from xpfilt.engines import filter_batch, make_engine, split_supported
    from xpfilt.lang.xpath import load_queries
    from xpfilt.model.custom import ModelEngine

    start = time.perf_counter()
    loaded = load_queries(shard.queries)
    queries, _ = split_supported("model", loaded.queries)
    width = shard.config.bytes_per_cycle
    reference = {
        r.name: r for r in filter_batch(make_engine("reference", queries), shard.documents)
    }
    engine = (
        make_engine("model", queries, shard.config.options)
        if width == 1
        else ModelEngine(queries, shard.config.options, bytes_per_cycle=width)
    )
    model = {r.name: r for r in filter_batch(engine, shard.documents)}
    mismatches, flagged = [], 0
    for name, ref in reference.items():
        got = model[name]
        if got.error is not None:
            flagged += 1
            if ref.error is None and "malformed" in got.error.lower():
                mismatches.append(f"{name}: model says malformed, reference parsed it")
        elif ref.error is not None:
            mismatches.append(f"{name}: reference failed ({ref.error}), model answered")
        elif got.matches != ref.matches:
            missing = sorted(set(ref.matches) - set(got.matches))[:5]
            extra = sorted(set(got.matches) - set(ref.matches))[:5]
            mismatches.append(f"{name}: model misses {missing}, adds {extra}")
    out = {
        "label": shard.label(),
        "queries": len(queries),
        "documents": len(shard.documents),
        "model_mismatches": mismatches,
        "model_flagged": flagged,
        "model_matches": sum(len(r.matches or ()) for r in model.values()),
        "rtl": None,
    }
    if shard.rtl:
        from xpfilt.verify.regress import run_regression

        summary = run_regression(shard.config)
        out["rtl"] = {
            "ok": summary.ok,
            "mismatches": summary.mismatches,
            "cycles": summary.cycles,
            "bytes": summary.bytes,
            "matches": summary.matches,
            "flagged": summary.flagged,
            "sim_time": summary.sim_time,
            "build_cached": summary.build_cached,
            "replay": str(summary.replay) if summary.replay else None,
            "text": summary.format(),
        }
    out["seconds"] = time.perf_counter() - start
    return out


@dataclass
class ShardedSummary:
    """All shards of a sharded regression, added up."""

    shards: int = 0
    results: list = field(default_factory=list)  # run_shard dicts, in shard order
    failed: list = field(default_factory=list)  # (label, status, reason)
    wall_s: float = 0.0

    @property
    def ok(self) -> bool:
        return not self.failed and all(
            not r["model_mismatches"] and (r["rtl"] is None or r["rtl"]["ok"]) for r in self.results
        )

    def format(self) -> str:
        docs = sum(r["documents"] for r in self.results)
        model_bad = sum(len(r["model_mismatches"]) for r in self.results)
        rtl = [r["rtl"] for r in self.results if r["rtl"]]
        lines = [
            f"shards:      {self.shards} ({len(self.results)} finished, "
            f"{len(self.failed)} failed or timed out) in {self.wall_s:.1f} s wall",
            f"documents:   {docs} (query set x document) runs",
            f"model:       {model_bad} mismatches against the reference; "
            f"{sum(r['model_flagged'] for r in self.results)} documents flagged, "
            f"{sum(r['model_matches'] for r in self.results):,} matches",
        ]
        if rtl:
            cycles = sum(r["cycles"] for r in rtl)
            sim = sum(r["sim_time"] for r in rtl)
            lines.append(
                f"rtl:         {sum(r['mismatches'] for r in rtl)} mismatches; "
                f"{cycles:,} cycles in {sim:.1f} s of simulation "
                f"({cycles / sim if sim else 0:,.0f} cycles/s per shard), "
                f"{sum(r['matches'] for r in rtl):,} matches"
            )
        for r in self.results:
            for m in r["model_mismatches"][:3]:
                lines.append(f"MISMATCH:    {r['label']}: model: {m}")
            if r["rtl"] and not r["rtl"]["ok"]:
                lines.append(
                    f"MISMATCH:    {r['label']}: rtl: {r['rtl']['mismatches']} "
                    f"mismatches; replay {r['rtl']['replay']}"
                )
        for label, status, reason in self.failed:
            lines.append(f"{status.upper():<12} {label}: {reason}")
        lines.append("result:      " + ("PASS" if self.ok else "FAIL"))
        return "\n".join(lines)


def run_sharded(
    shards: Sequence[Shard],
    *,
    master: Optional[str] = None,
    timeout: Optional[float] = None,
    progress: bool = True,
) -> ShardedSummary:
    """:func:`run_shard` over ``shards`` on Spark (or ``master="serial"``)."""
    from xpfilt.scale.fanout import fan_out

    summary = ShardedSummary(shards=len(shards))
    start = time.perf_counter()
    finished = {}
    for outcome in fan_out(
        shards, run_shard, master=master, timeout=timeout, progress=progress, label="shards"
    ):
        if outcome.status == "ok":
            finished[outcome.index] = outcome.value
        else:
            summary.failed.append((outcome.item.label(), outcome.status, outcome.reason))
    summary.results = [finished[i] for i in sorted(finished)]
    summary.wall_s = time.perf_counter() - start
    return summary
