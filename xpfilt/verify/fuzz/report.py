"""Counting, replay folders, the progress line and the summary (fuzz.md, fuzz.json).

``fuzz.json`` (``format`` 1) has these fields, stable from run to run: ``seed``,
``cases_scale``, ``started``, ``commit``, ``wall_seconds``, ``counts`` (cases asked per
category), ``replay_dir``; ``categories`` keyed ``wellformed`` / ``hostile`` / ``config`` /
``rtl``, each with ``title``, ``cases``, ``checks`` (comparisons made, by kind),
``documented_differences`` and ``failures`` (counts by class), ``failed_cases`` and ``seconds``;
``failure_classes``: a list of ``category``, ``class``, ``count``, ``known`` (the issue or
finding it was reported under, or null), ``detail`` (the first case) and ``replays`` (folders);
``total_failures`` and ``passed``.
"""

from __future__ import annotations

import json
import re
import shlex
import sys
import time
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Optional

__all__ = ["Recorder", "Progress", "KNOWN_DEFECTS", "known_defect", "write_summary", "CATEGORIES"]

#: Category key -> title (the keys are the field names in fuzz.json).
CATEGORIES = {
    "wellformed": "1. random well-formed (query set, document) cases",
    "hostile": "2. mutated and hostile documents through every engine",
    "config": "3. mutated configuration streams (programmable model)",
    "rtl": "4. back-to-back streams through the RTL vs the model",
    "scanner": "5. the fast engine's compiled scanner vs expat on mutated documents",
}

#: Failure classes already reported in issue 11 (being fixed): pattern -> note.
KNOWN_DEFECTS: list[tuple[str, str]] = [
    # (pattern of a failure class, where it is reported): a class reported but not yet fixed
    # or documented. Empty: every class the harness has found is fixed or documented.
]


def known_defect(klass: str) -> Optional[str]:
    for pattern, note in KNOWN_DEFECTS:
        if re.search(pattern, klass):
            return note
    return None


@dataclass
class CategoryCounts:
    cases: int = 0
    checks: Counter = field(default_factory=Counter)  # comparisons made, by kind
    documented: Counter = field(default_factory=Counter)  # documented differences, by class
    failures: Counter = field(default_factory=Counter)  # failures, by class
    failed_cases: int = 0
    seconds: float = 0.0


class Recorder:
    """Counts cases, checks, documented differences and failures; writes replay folders (the
    first ``replays_per_class`` of each failure class)."""

    def __init__(self, replay_dir: Optional[Path], replays_per_class: int = 5):
        self.replay_dir = Path(replay_dir) if replay_dir else None
        self.replays_per_class = replays_per_class
        self.categories: dict[str, CategoryCounts] = defaultdict(CategoryCounts)
        self.examples: dict[tuple[str, str], list[str]] = defaultdict(list)
        self.details: dict[tuple[str, str], str] = {}
        self._serial = 0

    def case(self, category: str, n: int = 1) -> None:
        self.categories[category].cases += n

    def check(self, category: str, kind: str, n: int = 1) -> None:
        self.categories[category].checks[kind] += n

    def documented(self, category: str, klass: str) -> None:
        self.categories[category].documented[klass] += 1

    def fail(
        self, category: str, klass: str, detail: str, files: dict[str, bytes], command: str
    ) -> None:
        """One failure of class ``klass``: ``files`` (name -> bytes) and ``command`` (the
        replay command, run inside the folder) go to a replay folder."""
        counts = self.categories[category]
        counts.failures[klass] += 1
        key = (category, klass)
        self.details.setdefault(key, detail)
        if self.replay_dir is None or len(self.examples[key]) >= self.replays_per_class:
            return
        self._serial += 1
        slug = re.sub(r"[^a-z0-9]+", "-", klass.lower()).strip("-")[:60]
        folder = self.replay_dir / category / f"{self._serial:05d}-{slug}"
        folder.mkdir(parents=True, exist_ok=True)
        for name, data in files.items():
            (folder / name).write_bytes(data)
        (folder / "what.txt").write_text(
            f"category: {category}\nclass: {klass}\n"
            f"known: {known_defect(klass) or 'no'}\n\n{detail}\n\nreplay (in this folder):\n"
            f"  {command}\n"
        )
        (folder / "replay.sh").write_text(f'#!/bin/sh\ncd "$(dirname "$0")"\n{command}\n')
        self.examples[key].append(str(folder))

    def failed_case(self, category: str) -> None:
        self.categories[category].failed_cases += 1

    def total_failures(self) -> int:
        return sum(sum(c.failures.values()) for c in self.categories.values())

    def failure_classes(self) -> list[dict]:
        out = []
        for category, counts in self.categories.items():
            for klass, n in counts.failures.most_common():
                out.append(
                    {
                        "category": category,
                        "class": klass,
                        "count": n,
                        "known": known_defect(klass),
                        "detail": self.details.get((category, klass), ""),
                        "replays": self.examples.get((category, klass), []),
                    }
                )
        return out


def replay_command(engine: str, files: list[str], extra: str = "") -> str:
    """The ``xpfilt filter`` command that answers ``files`` with ``engine``."""
    args = " ".join(shlex.quote(f) for f in files)
    if engine == "programmable":
        return f"xpfilt filter -q queries.txt --engine model --mode programmable --hw . {args}"
    return f"xpfilt filter -q queries.txt --engine {engine}{extra} {args}"


class Progress:
    """One status line on standard error, redrawn at most every ``every`` seconds."""

    def __init__(
        self,
        label: str,
        total: int,
        recorder: Recorder,
        category: str,
        every: float = 0.5,
        stream=None,
    ):
        self.label, self.total, self.recorder, self.category = label, total, recorder, category
        self.every, self.stream = every, stream or sys.stderr
        self.start = self.last = time.perf_counter()
        self.tty = self.stream.isatty()

    def update(self, done: int, force: bool = False) -> None:
        now = time.perf_counter()
        if not force and now - self.last < self.every:
            return
        if not self.tty and not force and now - self.last < 30:
            return
        self.last = now
        rate = done / max(now - self.start, 1e-9)
        eta = (self.total - done) / rate if rate else 0
        fails = sum(self.recorder.categories[self.category].failures.values())
        line = (
            f"{self.label}: {done:,}/{self.total:,} ({100 * done / max(self.total, 1):.0f} %)"
            f"  {rate:,.0f}/s  eta {eta:,.0f} s  failures {fails:,}"
        )
        self.stream.write(("\r" + line + "\x1b[K") if self.tty else line + "\n")
        self.stream.flush()

    def done(self, done: int) -> None:
        self.update(done, force=True)
        if self.tty:
            self.stream.write("\n")


def write_summary(recorder: Recorder, out_dir: Optional[Path], meta: dict) -> dict:
    """The summary as a JSON-ready dict; written to ``out_dir`` as ``fuzz.json`` and
    ``fuzz.md`` unless ``out_dir`` is None."""
    cats = {}
    for key in CATEGORIES:
        c = recorder.categories.get(key)
        if c is None:
            continue
        cats[key] = {
            "title": CATEGORIES[key],
            "cases": c.cases,
            "checks": dict(c.checks),
            "documented_differences": dict(c.documented.most_common()),
            "failures": dict(c.failures.most_common()),
            "failed_cases": c.failed_cases,
            "seconds": round(c.seconds, 1),
        }
    classes = recorder.failure_classes()
    doc = {
        "format": 1,
        **meta,
        "categories": cats,
        "failure_classes": classes,
        "total_failures": recorder.total_failures(),
        "passed": not classes,
    }
    if out_dir is not None:
        out_dir = Path(out_dir)
        out_dir.mkdir(parents=True, exist_ok=True)
        (out_dir / "fuzz.json").write_text(json.dumps(doc, indent=1) + "\n")
        (out_dir / "fuzz.md").write_text(_markdown(doc))
    return doc


def _markdown(doc: dict) -> str:
    lines = [
        "# Fuzz run (`make fuzz`)",
        "",
        f"`python -m xpfilt.verify.fuzz --seed {doc['seed']} --cases-scale {doc['cases_scale']}` "
        f"on commit `{doc.get('commit', '?')}`, {doc.get('started', '')}; wall time "
        f"{doc.get('wall_seconds', 0):,.0f} s. Verdict: "
        f"**{'pass' if doc['passed'] else 'FAIL'}** ({doc['total_failures']:,} failing "
        f"checks in {len(doc['failure_classes'])} classes).",
        "",
        "A failure is a crash, a hang, a lost or extra readout, an RTL/model difference, a "
        "corrupt configuration stream accepted (or a valid one refused), or a difference "
        'from the reference that is not documented. "Reported as" names the issue or the '
        "fuzz finding a failure class was reported under.",
        "",
        "| category | cases | checks | documented differences | failures | failed cases "
        "| seconds |",
        "|---|---:|---:|---:|---:|---:|---:|",
    ]
    for key, c in doc["categories"].items():
        lines.append(
            f"| {c['title']} | {c['cases']:,} | {sum(c['checks'].values()):,} | "
            f"{sum(c['documented_differences'].values()):,} | "
            f"{sum(c['failures'].values()):,} | {c['failed_cases']:,} | "
            f"{c['seconds']:,.0f} |"
        )
    lines += ["", "Checks per category:", ""]
    for key, c in doc["categories"].items():
        lines.append(f"* {key}: " + ", ".join(f"{k} {v:,}" for k, v in sorted(c["checks"].items())))
    lines += ["", "## Failure classes", ""]
    if not doc["failure_classes"]:
        lines.append("None.")
    else:
        lines += [
            "| category | class | count | reported as | first replay |",
            "|---|---|---:|---|---|",
        ]
        for f in doc["failure_classes"]:
            replay = f["replays"][0] if f["replays"] else ""
            klass = f["class"].replace("|", "\\|")
            lines.append(
                f"| {f['category']} | {klass} | {f['count']:,} | {f['known'] or 'new'} | {replay} |"
            )
    lines += [
        "",
        "## Documented differences seen",
        "",
        "Counted, not failures: each is written down where the table says.",
        "",
        "| category | difference | count | written down in |",
        "|---|---|---:|---|",
    ]
    from xpfilt.verify.fuzz.outcomes import DOCUMENTED

    for key, c in doc["categories"].items():
        for klass, n in c["documented_differences"].items():
            lines.append(f"| {key} | {klass} | {n:,} | {DOCUMENTED.get(klass, '')} |")
    lines.append("")
    return "\n".join(lines)
