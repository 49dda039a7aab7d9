"""Shared fixtures: the shared data folder and the expected-result cases."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from xpfilt.paths import repo_root, shared_data

DATA = shared_data()


def expected_cases() -> list[tuple[str, Path, Path]]:
    """(id, query file, document folder) for every shared expected-results file."""
    cases = []
    for tsv in sorted((DATA / "expected").glob("*.tsv")):
        docs, queries = tsv.stem.split("--")
        folder = DATA / ("nitf/docs" if docs == "nitf-docs" else docs)
        cases.append((tsv.stem, DATA / "queries" / f"{queries}.txt", folder, tsv))
    return cases


@pytest.fixture(scope="session")
def data() -> Path:
    return DATA


@pytest.fixture(scope="session")
def build_dir() -> Path:
    """Where simulator builds are cached (``XPFILT_SIM_BUILD`` or build/sim)."""
    return Path(os.environ.get("XPFILT_SIM_BUILD") or repo_root() / "build" / "sim")
