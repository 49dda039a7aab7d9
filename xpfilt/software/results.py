"""Per-document filter results and the TSV format of ``shared/data/expected``.

One line per document: ``file name<TAB>space-separated 1-based query numbers`` (nothing after the
tab when no query matches).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Iterable, Optional, Union

__all__ = ["DocumentResult", "format_tsv_line", "read_expected"]


@dataclass(frozen=True)
class DocumentResult:
    """The answer for one document: matching query numbers, or the error that prevented one."""

    name: str
    matches: Optional[tuple[int, ...]]  # sorted 1-based query numbers; None when ``error``
    error: Optional[str] = None

    @property
    def ok(self) -> bool:
        return self.error is None


def format_tsv_line(name: str, numbers: Iterable[int]) -> str:
    return f"{name}\t{' '.join(map(str, sorted(numbers)))}"


def read_expected(path: Union[str, Path]) -> dict[str, tuple[int, ...]]:
    """An expected-results TSV as {file name: sorted query numbers}."""
    out = {}
    for line in Path(path).read_text(encoding="utf-8").splitlines():
        name, _, numbers = line.partition("\t")
        out[name] = tuple(sorted(int(n) for n in numbers.split()))
    return out
