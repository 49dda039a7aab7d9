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


#: The text of query numbers already formatted (grown on demand, up to :data:`_TEXT_LIMIT`):
#: 100,000 queries match ~7,600 per NITF document, and ``str`` per number was most of
#: ``xpfilt filter``'s time there.
_TEXT: list[str] = []
_TEXT_LIMIT = 1 << 20


def format_tsv_line(name: str, numbers: Iterable[int]) -> str:
    numbers = sorted(numbers)
    if numbers and 0 <= numbers[0] and numbers[-1] < _TEXT_LIMIT:
        if numbers[-1] >= len(_TEXT):
            _TEXT.extend(map(str, range(len(_TEXT), min(2 * numbers[-1] + 1, _TEXT_LIMIT))))
        return f"{name}\t{' '.join(map(_TEXT.__getitem__, numbers))}"
    return f"{name}\t{' '.join(map(str, numbers))}"


def read_expected(path: Union[str, Path]) -> dict[str, tuple[int, ...]]:
    """An expected-results TSV as {file name: sorted query numbers}."""
    out = {}
    for line in Path(path).read_text(encoding="utf-8").splitlines():
        name, _, numbers = line.partition("\t")
        out[name] = tuple(sorted(int(n) for n in numbers.split()))
    return out
