"""The paper's compact format: :func:`tag_ids`, :func:`to_compact` and :func:`compact_query`
give every tag a 2-character id, one tag per line, no attributes and no text."""

from __future__ import annotations

from typing import Iterable, Union

from xpfilt.lang.xpath import Axis, parse_query
from xpfilt.software.events import Document, EventKind, iter_events

_ID_FIRST = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz_"
_ID_SECOND = _ID_FIRST + "0123456789-."
_ALL_IDS = tuple(a + b for a in _ID_FIRST for b in _ID_SECOND)  # 53 * 65 = 3445 ids


def tag_ids(names: Iterable[str]) -> dict[str, str]:
    """Map each distinct name to a 2-character XML name, in sorted-name order.

    Ids are ``AA, AB, ..., A., BA, ...``: a letter or ``_`` then a letter, ``_``, digit,
    ``-`` or ``.``. Raises ValueError for more than 3445 names.
    """
    ordered = sorted(set(names))
    if len(ordered) > len(_ALL_IDS):
        raise ValueError(f"{len(ordered)} names but only {len(_ALL_IDS)} 2-character ids")
    return dict(zip(ordered, _ALL_IDS))


def _id_for(name: str, ids: dict[str, str]) -> str:
    """``ids[name]``, first adding the lowest unused id for a name not yet in ``ids``."""
    if name not in ids:
        used = set(ids.values())
        fresh = next((i for i in _ALL_IDS if i not in used), None)
        if fresh is None:
            raise ValueError(f"no 2-character id left for {name!r}")
        ids[name] = fresh
    return ids[name]


def to_compact(document: Union[bytes, Document], ids: dict[str, str]) -> bytes:
    """The document's element events in compact form: ``<id>\\n`` per open, ``</id>\\n`` per
    close; attributes, text, comments and declarations dropped.

    A tag missing from ``ids`` is given the lowest unused id, and ``ids`` is updated in place
    so later documents and :func:`compact_query` use the same id for it.
    """
    out = []
    for event in iter_events(document):
        if event.kind is EventKind.OPEN:
            out.append(f"<{_id_for(event.name, ids)}>\n")
        elif event.kind is EventKind.CLOSE:
            out.append(f"</{ids[event.name]}>\n")
    return "".join(out).encode("ascii")


def compact_query(query: str, ids: dict[str, str]) -> str:
    """``query`` with each element name replaced by its id (``*`` and axes kept), so it
    matches a compact document exactly when the original matches the original document.

    Names missing from ``ids`` get fresh ids (added to ``ids``), which no compact document
    made before contains. Raises ValueError for predicates: compact documents have no
    attributes or text to test.
    """
    parsed = parse_query(query)
    if not parsed.is_structural:
        raise ValueError(
            f"{query!r}: only paths without predicates can be evaluated on compact documents"
        )
    return "".join(
        ("//" if step.axis is Axis.DESCENDANT else "/")
        + (step.name if step.is_wildcard else _id_for(step.name, ids))
        for step in parsed.steps
    )
