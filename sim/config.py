"""What one testbench run gets: the design's plan, the queries, the documents and the stimulus
knobs. The host writes it as JSON and names the file in ``$XPFILT_TB_CONFIG``; the cocotb test
reads it inside the simulator and writes its findings to ``results``."""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Optional

__all__ = ["TbConfig", "CONFIG_ENV"]

#: Environment variable naming the JSON file of a :class:`TbConfig`.
CONFIG_ENV = "XPFILT_TB_CONFIG"


@dataclass
class TbConfig:
    plan: str  # plan.json of the design under test
    documents: list[tuple[str, str]]  # (display name, file path), streamed in order
    queries: list[tuple[int, str]]  # (query number, text): the reference's queries
    results: str  # where the test writes its JSON findings
    seed: int = 0
    p_valid: float = 0.8  # bytes_in.valid probability per cycle
    p_ready: float = 0.8  # readout.ready probability per cycle
    max_name: int = 32
    bytes_per_cycle: int = 1  # the engine's input width (beats of W bytes)
    idle_cycles: int = 16  # checked cycles after the last readout beat
    stall_limit: int = 20_000  # cycles without progress before giving up
    fault: Optional[str] = None  # test hook, see xpfilt.sim.checker.FAULTS
    extra: dict = field(default_factory=dict)

    def write(self, path: Path) -> Path:
        Path(path).write_text(json.dumps(asdict(self), indent=1))
        return Path(path)

    @classmethod
    def read(cls, path: Path) -> "TbConfig":
        raw = json.loads(Path(path).read_text())
        raw["documents"] = [tuple(d) for d in raw["documents"]]
        raw["queries"] = [tuple(q) for q in raw["queries"]]
        return cls(**raw)
