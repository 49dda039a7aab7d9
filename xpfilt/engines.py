"""Filter engines by name, and the batch loop every engine shares.

An engine is built from a list of parsed queries and answers ``filter(document)`` with the
0-based positions of the matching queries. :func:`filter_batch` turns that into per-document
results with 1-based query numbers; one bad document never costs the others their answers.
"""

from __future__ import annotations

import os
from itertools import islice
from typing import Callable, Iterable, Iterator, Optional, Protocol, Sequence, Union

import numpy as np

from xpfilt.compiler.options import MAX_NAME
from xpfilt.lang.xpath import Query
from xpfilt.software.events import Document, DocumentError
from xpfilt.software.fast import FastFilter
from xpfilt.software.results import DocumentResult, format_tsv_line

__all__ = [
    "BATCH_DOCUMENTS",
    "Engine",
    "ENGINES",
    "HARDWARE_ENGINES",
    "make_engine",
    "split_supported",
    "filter_batch",
    "filter_lines",
]


class Engine(Protocol):
    queries: tuple[Query, ...]

    def filter(self, document: Union[Document, bytes]) -> frozenset[int]: ...


def _model_engine(queries: Sequence[Query], options=None) -> Engine:
    from xpfilt.model.custom import ModelEngine  # imports the RTL definitions: only when asked

    return ModelEngine(queries, options) if options else ModelEngine(queries)


def _reference_engine(queries: Sequence[Query], options=None) -> Engine:
    from xpfilt.software.reference import ReferenceFilter  # imported when asked, as lxml

    return ReferenceFilter(queries)


def _lxml_engine(queries: Sequence[Query], options=None) -> Engine:
    from xpfilt.software.lxml_filter import LxmlFilter  # lxml: ~6 ms of every start-up

    return LxmlFilter(queries)


ENGINES: dict[str, Callable[..., Engine]] = {
    "fast": lambda queries, options=None: FastFilter(queries),
    "reference": _reference_engine,
    "lxml": _lxml_engine,
    "model": _model_engine,
}

#: Engines that run the generated hardware (or its model) and so take only path queries.
HARDWARE_ENGINES = frozenset({"model"})


def make_engine(name: str, queries: Sequence[Query], options=None) -> Engine:
    """Build engine ``name`` for ``queries``; ``options`` (a CompileOptions) for hardware ones."""
    if name not in ENGINES:
        raise ValueError(f"engine must be one of {', '.join(ENGINES)}, not {name!r}")
    return ENGINES[name](queries, options)


def split_supported(
    name: str, queries: Sequence[Query], max_name: Optional[int] = MAX_NAME
) -> tuple[list[Query], list[str]]:
    """The queries engine ``name`` can evaluate, and a message for each one it cannot;
    ``max_name``: the longest name a hardware engine decodes (None: not checked here)."""
    if name not in HARDWARE_ENGINES:
        return list(queries), []
    from xpfilt.compiler.custom import hardware_queries  # Amaranth: only for hardware engines

    ok, refused = hardware_queries(queries, max_name)
    return ok, refused


#: Documents handed at once to an engine with ``filter_many`` (the fast engine's compiled loop
#: scans a batch in one call).
BATCH_DOCUMENTS = 256


def filter_batch(
    engine: Engine, documents: Iterable[Union[str, os.PathLike, Document]]
) -> Iterator[DocumentResult]:
    """Filter each document in turn; unreadable or malformed ones become results with an error.

    An engine with ``filter_many`` (positions in increasing order per document, or the
    :class:`DocumentError`) gets the documents :data:`BATCH_DOCUMENTS` at a time. An engine with
    ``filter_ordered`` (the positions in increasing order) spares building and
    sorting a set per document when the query numbers increase with the positions, as they do
    for a query file (100,000 queries: ~1 ms per document of 7,600 matches)."""
    numbers = [query.number for query in engine.queries]
    increasing = all(a < b for a, b in zip(numbers, numbers[1:]))
    if getattr(engine, "filter_many", None) is not None:
        yield from _filter_many(engine, documents, numbers, increasing)
        return
    ordered = getattr(engine, "filter_ordered", None) if increasing else None
    for item in documents:
        name = item.name if isinstance(item, Document) else os.path.basename(item)
        try:
            document = item if isinstance(item, Document) else Document.from_path(item)
            if ordered is not None:  # every engine transcodes (events.utf8_document) itself
                matches = tuple(map(numbers.__getitem__, ordered(document)))
            else:
                positions = engine.filter(document)
                matches = tuple(sorted(numbers[p] for p in positions))
        except DocumentError as exc:
            yield DocumentResult(name, None, str(exc))
        except OSError as exc:
            yield DocumentResult(name, None, f"{name}: cannot read: {exc.strerror or exc}")
        else:
            yield DocumentResult(name, matches)


def _batches(documents) -> Iterator[tuple[list[str], list[Document], dict[int, str]]]:
    """The documents :data:`BATCH_DOCUMENTS` at a time, read: (names, the documents read, index
    in names -> why that one could not be read)."""
    items = iter(documents)
    while True:
        batch = list(islice(items, BATCH_DOCUMENTS))
        if not batch:
            return
        names, docs, unread = [], [], {}
        for item in batch:
            name = item.name if isinstance(item, Document) else os.path.basename(item)
            names.append(name)
            try:
                docs.append(item if isinstance(item, Document) else Document.from_path(item))
            except OSError as exc:
                unread[len(names) - 1] = f"{name}: cannot read: {exc.strerror or exc}"
        yield names, docs, unread


def _filter_many(
    engine, documents, numbers: list[int], increasing: bool
) -> Iterator[DocumentResult]:
    """:func:`filter_batch` through ``engine.filter_many``, a batch at a time."""
    table = np.array(numbers or [0], np.int64)
    for names, docs, unread in _batches(documents):
        answers = iter(engine.filter_many(docs))
        for index, name in enumerate(names):
            if index in unread:
                yield DocumentResult(name, None, unread[index])
                continue
            found = next(answers)
            if isinstance(found, DocumentError):
                yield DocumentResult(name, None, str(found))
                continue
            matches = table[found].tolist()
            yield DocumentResult(name, tuple(matches if increasing else sorted(matches)))


def filter_lines(
    engine: Engine, documents: Iterable[Union[str, os.PathLike, Document]]
) -> Iterator[tuple[str, Optional[str], Optional[str]]]:
    """:func:`filter_batch`'s results as ``xpfilt filter`` prints them: per document (name, its
    TSV line, None), or (name, None, the error). An engine with ``filter_many_text`` (the fast
    engine) formats a batch's numbers in compiled code: at 100,000 queries a NITF document
    matches ~7,600, and formatting them in Python was most of the command's time."""
    numbers = [query.number for query in engine.queries]
    many = getattr(engine, "filter_many_text", None)
    if many is None or not all(a < b for a, b in zip(numbers, numbers[1:])):
        for result in filter_batch(engine, documents):
            if result.ok:
                yield result.name, format_tsv_line(result.name, result.matches), None
            else:
                yield result.name, None, result.error
        return
    for names, docs, unread in _batches(documents):
        texts = iter(many(docs, numbers))
        for index, name in enumerate(names):
            if index in unread:
                yield name, None, unread[index]
                continue
            text = next(texts)
            if isinstance(text, DocumentError):
                yield name, None, str(text)
            else:
                yield name, f"{name}\t{text}", None
