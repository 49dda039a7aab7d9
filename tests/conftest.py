"""Shared fixtures (the shared data folder, the expected-result cases) and the hypothesis
profiles."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings

from xpfilt.paths import repo_root, shared_data

DATA = shared_data()

#: Hypothesis profiles, chosen by ``XPFILT_HYPOTHESIS`` (default ``dev``): the examples a
#: property test draws unless it says otherwise (see ``examples``). ``dev``: ``make test`` and ``make
#: test-rtl`` at a desk; ``ci``: the counts the suite drew before the profiles (``.ci/run``);
#: ``nightly``: ten times that. No deadline and no too-slow check: the machines are shared, and
#: one example may elaborate a design.
PROFILE_EXAMPLES = {"dev": 30, "ci": 300, "nightly": 3000}
for _name, _count in PROFILE_EXAMPLES.items():
    settings.register_profile(
        _name,
        max_examples=_count,
        deadline=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    )
PROFILE = os.environ.get("XPFILT_HYPOTHESIS") or "dev"
if PROFILE not in PROFILE_EXAMPLES:
    raise pytest.UsageError(
        f"XPFILT_HYPOTHESIS must be one of {', '.join(PROFILE_EXAMPLES)}, not {PROFILE!r}"
    )
settings.load_profile(PROFILE)


def examples(ci: int, **kwargs) -> settings:
    """Settings that draw ``ci`` examples under the ``ci`` profile and as many in proportion
    under the others (at least one): a test whose examples are cheap takes more, one that
    elaborates a design per example far fewer. ``kwargs``: other settings."""
    scale = settings.default.max_examples / PROFILE_EXAMPLES["ci"]
    return settings(max_examples=max(1, round(ci * scale)), **kwargs)


def expected_cases() -> list[tuple[str, Path, Path]]:
    """(id, query file, document folder) for every shared expected-results file."""
    cases = []
    for tsv in sorted((DATA / "expected").glob("*.tsv")):
        docs, queries = tsv.stem.split("--")
        folder = DATA / ("nitf/docs" if docs == "nitf-docs" else docs)
        cases.append((tsv.stem, DATA / "queries" / f"{queries}.txt", folder, tsv))
    return cases


#: The shared structural sets that make test runs through the slower engines' models and
#: compilers; the other six (2,000-query NITF sets, ~5 s each) run in make test-slow.
QUICK_SETS = ("nitf-docs--yfilter-suite-simple-paths", "xmark--xmark-sampled-d8-p15-n1000")


def shared_cases(cases) -> list:
    """``cases`` (from ``expected_cases``) as parameters named by their id, those not in
    ``QUICK_SETS`` marked ``slow``."""
    return [
        pytest.param(*c, id=c[0], marks=() if c[0] in QUICK_SETS else pytest.mark.slow)
        for c in cases
    ]


@pytest.fixture(scope="session")
def data() -> Path:
    return DATA


@pytest.fixture(scope="session")
def build_dir() -> Path:
    """Where simulator builds are cached (``XPFILT_SIM_BUILD`` or build/sim)."""
    return Path(os.environ.get("XPFILT_SIM_BUILD") or repo_root() / "build" / "sim")
