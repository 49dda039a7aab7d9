"""Run one function over many independent items, in this process or on Spark, as they finish.

:func:`fan_out` is what the sweeps and the sharded regressions share. Each item becomes one
Spark job of one task (``parallelize([item], 1).map(fn)``), submitted from a pool of driver
threads as wide as the cluster's default parallelism, so that results stream back one by one
(they are saved as they arrive: an interrupted run loses only the items in flight), a progress
bar can count them, and a slow item can be cancelled on its own (``timeout``: its job group is
cancelled, with ``interruptOnCancel``). ``master="serial"`` runs the items one after another in
this process instead (the baseline of ``bench/sweep_speedup.py``).

An item whose function raises, whose task dies or that times out is an :class:`Outcome` with
``status`` ``failed``/``timeout`` and the reason: nothing is dropped, nothing raises.
"""

from __future__ import annotations

import sys
import threading
import time
import traceback
from concurrent.futures import FIRST_COMPLETED, ThreadPoolExecutor, wait
from dataclasses import dataclass
from typing import Any, Callable, Iterable, Iterator, Optional

__all__ = ["Outcome", "fan_out", "SERIAL"]

SERIAL = "serial"


@dataclass
class Outcome:
    """What became of one item: ``value`` is ``fn(item)`` when ``status == "ok"``."""

    index: int
    item: Any
    value: Any = None
    status: str = "ok"  # "ok" | "failed" | "timeout"
    reason: str = ""
    seconds: float = 0.0  # wall time seen by the driver (includes Spark's overhead)


def fan_out(
    items: Iterable,
    fn: Callable,
    *,
    master: Optional[str] = None,
    timeout: Optional[float] = None,
    progress: bool = True,
    label: str = "items",
) -> Iterator[Outcome]:
    """``fn`` over ``items``; yields an :class:`Outcome` per item in completion order.
    ``master``: a Spark master URL (default ``local[*]``) or ``"serial"``."""
    items = list(items)
    bar = _progress_bar(len(items), label, progress)
    try:
        runner = _serial if master == SERIAL else _on_spark
        for outcome in runner(items, fn, master, timeout):
            if bar is not None:
                bar.update(1)
                if outcome.status != "ok":
                    bar.set_postfix_str(f"last {outcome.status}: item {outcome.index}")
            yield outcome
    finally:
        if bar is not None:
            bar.close()


def _progress_bar(total: int, label: str, enabled: bool):
    if not enabled or total == 0:
        return None
    try:
        from tqdm import tqdm
    except ImportError:
        return None
    return tqdm(
        total=total,
        unit=label.rstrip("s") or "item",
        desc=label,
        file=sys.stderr,
        dynamic_ncols=True,
        smoothing=0.1,
    )


def _serial(items, fn, master, timeout) -> Iterator[Outcome]:
    for index, item in enumerate(items):
        start = time.perf_counter()
        try:
            outcome = Outcome(index, item, fn(item))
        except Exception as exc:
            outcome = Outcome(index, item, status="failed", reason=_reason(exc))
        outcome.seconds = time.perf_counter() - start
        yield outcome


def _on_spark(items, fn, master, timeout) -> Iterator[Outcome]:
    from xpfilt.scale.spark import spark_context

    context = spark_context(master)
    width = max(1, context.defaultParallelism)
    run_id = f"xpfilt-{id(items):x}-{time.time_ns():x}"
    started: dict[int, float] = {}
    timed_out: set[int] = set()
    lock = threading.Lock()

    def submit(index: int, item) -> Outcome:
        group = f"{run_id}-{index}"
        context.setJobGroup(group, f"xpfilt {index}", interruptOnCancel=True)
        with lock:
            started[index] = time.perf_counter()
        try:
            value = context.parallelize([item], 1).map(fn).collect()[0]
            outcome = Outcome(index, item, value)
        except Exception as exc:
            with lock:
                late = index in timed_out
            outcome = (
                Outcome(index, item, status="timeout", reason=f"cancelled after {timeout:.0f} s")
                if late
                else Outcome(index, item, status="failed", reason=_reason(exc))
            )
        outcome.seconds = time.perf_counter() - started[index]
        return outcome

    pool = ThreadPoolExecutor(max_workers=width, thread_name_prefix="xpfilt-fanout")
    pending = {pool.submit(submit, i, item): i for i, item in enumerate(items)}
    try:
        while pending:
            done, _ = wait(pending, timeout=1.0, return_when=FIRST_COMPLETED)
            for future in done:
                del pending[future]
                yield future.result()
            if timeout is not None:
                now = time.perf_counter()
                with lock:
                    late = [
                        i
                        for i, t in started.items()
                        if now - t > timeout and i not in timed_out and i in pending.values()
                    ]
                    timed_out.update(late)
                for index in late:
                    context.cancelJobGroup(f"{run_id}-{index}")
    except BaseException:  # interrupted (Ctrl-C) or the consumer stopped: stop the jobs too
        for future in pending:
            future.cancel()
        context.cancelAllJobs()
        raise
    finally:
        pool.shutdown(wait=True, cancel_futures=True)


def _reason(exc: BaseException) -> str:
    """One line: the Python error a worker raised (the last line of the traceback Spark carries
    in its message), or the exception itself."""
    text = str(exc)
    for line in reversed(text.splitlines()):
        line = line.strip()
        if (
            line
            and not line.startswith(("at ", "\tat ", "..."))
            and ("Error" in line or "Exception" in line)
        ):
            return line[:500]
    return (
        f"{type(exc).__name__}: {text}"
        if text
        else "".join(traceback.format_exception_only(exc)).strip()
    )[:500]
