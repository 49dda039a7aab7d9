"""Where the project's shared data lives: ``../shared`` beside the repository root.

``XPFILT_SHARED`` overrides it (point it at a ``shared`` folder).
"""

from __future__ import annotations

import os
from pathlib import Path

__all__ = ["repo_root", "shared_dir", "shared_data"]


def repo_root() -> Path:
    return Path(__file__).resolve().parents[1]


def shared_dir() -> Path:
    override = os.environ.get("XPFILT_SHARED")
    path = Path(override) if override else repo_root().parent / "shared"
    if not (path / "data").is_dir():
        raise FileNotFoundError(
            f"shared data must be at {path / 'data'} (set XPFILT_SHARED to move it), not missing"
        )
    return path


def shared_data() -> Path:
    return shared_dir() / "data"
