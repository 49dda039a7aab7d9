"""What a user chooses about a hardware engine before any hardware exists: its kind
(:class:`EngineMode`), the custom compiler's knobs (:class:`CompileOptions`) and the limits they
are checked against. Light on purpose (no Amaranth): ``xpfilt filter`` with a software engine
imports it, and its start-up is part of every run's time."""

from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import Optional

from xpfilt.hwspec.readout import check_readout

__all__ = ["EngineMode", "CompileOptions", "MAX_NAME", "DEEPEST"]


class EngineMode(str, enum.Enum):
    """The two kinds of hardware engine: one generated for a query set (``custom``, a plan) or
    generic columns loaded with any set (``programmable``, a :class:`HardwareSpec`). A ``str``
    enum: the value is what files and the command line say."""

    CUSTOM = "custom"
    PROGRAMMABLE = "programmable"


#: Longest element name (bytes) the front end accepts unless told otherwise (``--max-name``).
MAX_NAME = 32
#: Deepest document level any engine's stacks may hold: every stack memory has this many rows.
DEEPEST = 4096


@dataclass(frozen=True)
class CompileOptions:
    """Knobs of the custom engine. ``cluster_size`` None: 256 queries if every query has at most
    4 steps, else 128 (the paper's choice)."""

    cluster_size: Optional[int] = None
    max_depth: int = 16
    opt_last: bool = True  # (1) no column for the last node
    opt_root: bool = True  # (2) no column for the root node, read the global stack
    opt_share: bool = True  # (3) nodes with different tags share a column
    prefix_sharing: bool = True  # common prefixes share nodes within a cluster
    prefix_clustering: bool = True  # clusters gather queries in text order (see cluster_order)
    share_limit: int = 8  # most nodes in one shared column (bounds the OR per column)
    readout: str = "serial"  # a xpfilt.hwspec.readout.ReadoutKind value: "serial" or "sparse"

    def __post_init__(self):
        if self.cluster_size is not None and self.cluster_size < 1:
            raise ValueError(f"cluster size must be at least 1, not {self.cluster_size!r}")
        if self.max_depth < 1:
            raise ValueError(f"maximum depth must be at least 1, not {self.max_depth!r}")
        if self.max_depth > DEEPEST:
            raise ValueError(
                f"maximum depth must be at most {DEEPEST} (the rows of every stack "
                f"memory), not {self.max_depth!r}"
            )
        if self.share_limit < 1:
            raise ValueError(f"share limit must be at least 1, not {self.share_limit!r}")
        check_readout(self.readout)
