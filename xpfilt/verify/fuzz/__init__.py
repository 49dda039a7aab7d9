"""The fuzz harness (``make fuzz``, ``python -m xpfilt.verify.fuzz``): random and hostile input through
every engine, counted by category, with a replay folder for each failing case.

Categories (default counts at ``--cases-scale 1``):

1. ``wellformed`` (100,000): random well-formed (query set, document) cases; the custom and
   programmable models against the reference on path queries, lxml against the reference on
   path and value-predicate queries.
2. ``hostile`` (100,000): mutated and hostile documents (byte and bit flips, truncations,
   inserted ``<``/``&``/``]]>``, nesting beyond the maximum depth, over-long names, encoding
   declarations, BOMs, empty and 1-3 byte documents, DOCTYPE variants, XXE and billion laughs,
   namespaces) through the reference, lxml, the custom model and the programmable model.
3. ``config`` (2,000): corrupted configuration streams into the programmable model (bit flips,
   truncations, extensions, foreign and re-CRC'd headers, splices); each must be rejected and
   leave the previous configuration answering as before; the untouched stream is accepted.
4. ``rtl`` (500 streams; the first is issue 11's back-to-back 1-byte documents): back-to-back short, malformed and normal documents (and, for the
   programmable engine, configuration streams completing while documents flow) through the RTL
   in the Amaranth simulator beside the model, random valid/ready: cycle-exact, exactly one
   readout per document, answers as the reference.
5. ``scanner`` (100,000): documents mutated for the fast engine's compiled scanner
   (:func:`xpfilt.verify.fuzz.generate.scanner_document`); every one it accepts, expat must
   accept and the reference must answer alike (one it defers is expat's anyway).

A failure is a crash (any exception other than :class:`xpfilt.software.events.DocumentError`), a hang, a
lost or extra readout, an RTL/model difference, a rejected valid or accepted corrupt stream, or a
disagreement with the reference that is not one of the documented differences
(:data:`xpfilt.verify.fuzz.outcomes.DOCUMENTED`). The run writes ``fuzz.md`` and ``fuzz.json`` and exits
with 1 if anything failed.
"""

from __future__ import annotations

import random
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Optional

from xpfilt.verify.fuzz.report import Recorder, write_summary

__all__ = ["FuzzConfig", "DEFAULT_COUNTS", "run_fuzz"]

#: Cases per category at ``cases_scale`` 1.
DEFAULT_COUNTS = {
    "wellformed": 100_000,
    "hostile": 100_000,
    "config": 2_000,
    "rtl": 500,
    "scanner": 100_000,
}


@dataclass(frozen=True)
class FuzzConfig:
    seed: int = 1
    cases_scale: float = 1.0
    out: Optional[Path] = Path("bench/results")  # fuzz.md, fuzz.json (None: not written)
    replay_dir: Optional[Path] = Path("build/fuzz")  # replay folders (None: not written)
    replays_per_class: int = 5
    categories: tuple = ("wellformed", "hostile", "config", "rtl", "scanner")
    timeout: float = 10.0  # per engine call, seconds
    progress: bool = True

    def count(self, category: str) -> int:
        return max(1, round(DEFAULT_COUNTS[category] * self.cases_scale))


def _commit() -> str:
    try:
        return (
            subprocess.run(
                ["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, timeout=10
            ).stdout.strip()
            or "?"
        )
    except (OSError, subprocess.SubprocessError):
        return "?"


def run_fuzz(config: FuzzConfig, recorder: Optional[Recorder] = None) -> dict:
    """Run the selected categories; return the summary (also written to ``config.out``)."""
    from xpfilt.verify.fuzz.run import (
        fuzz_config,
        fuzz_hostile,
        fuzz_rtl,
        fuzz_scanner,
        fuzz_wellformed,
    )

    rec = recorder or Recorder(config.replay_dir, config.replays_per_class)
    started = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    t0 = time.perf_counter()
    runners = {
        "wellformed": lambda rng, n: fuzz_wellformed(
            rng, n, rec, timeout=config.timeout, progress=config.progress
        ),
        "hostile": lambda rng, n: fuzz_hostile(
            rng, n, rec, timeout=config.timeout, progress=config.progress
        ),
        "config": lambda rng, n: fuzz_config(rng, n, rec, progress=config.progress),
        "rtl": lambda rng, n: fuzz_rtl(rng, n, rec, progress=config.progress),
        "scanner": lambda rng, n: fuzz_scanner(rng, n, rec, progress=config.progress),
    }
    for category in runners:
        if category in config.categories:
            # each category has its own stream of random numbers: counts can change freely
            runners[category](random.Random(f"{config.seed}/{category}"), config.count(category))
    meta = {
        "seed": config.seed,
        "cases_scale": config.cases_scale,
        "started": started,
        "commit": _commit(),
        "wall_seconds": round(time.perf_counter() - t0, 1),
        "counts": {c: config.count(c) for c in config.categories},
        "replay_dir": str(config.replay_dir) if config.replay_dir else None,
    }
    return write_summary(rec, config.out, meta)
