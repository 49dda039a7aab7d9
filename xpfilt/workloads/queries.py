"""Path queries: :func:`generate_queries` draws YFilter-style path queries from a DTD's child
relation, :func:`sample_queries` from the element paths of real documents. Both mutate steps
into ``*`` and ``//`` at the configured probabilities and return distinct strings."""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Sequence

from ..events import Document, EventKind, iter_events
from .dtd import DtdSchema


_MAX_DESCENDANT_SKIP = 3  # a '//' step passes over at most this many unnamed elements


@dataclass(frozen=True)
class QueryGenConfig:
    """How many distinct queries, how deep, and how often a step becomes ``*`` or ``//``."""
    count: int
    max_depth: int = 6
    p_wildcard: float = 0.15
    p_descendant: float = 0.15
    seed: int = 0

    def __post_init__(self):
        if self.count < 0:
            raise ValueError(f"count must be >= 0, not {self.count}")
        if self.max_depth < 1:
            raise ValueError(f"max_depth must be >= 1, not {self.max_depth}")
        for field in ("p_wildcard", "p_descendant"):
            if not 0.0 <= getattr(self, field) <= 1.0:
                raise ValueError(f"{field} must be in [0, 1], not {getattr(self, field)}")


def _path_to_query(path: Sequence[str], config: QueryGenConfig, rng: random.Random) -> str:
    """Turn an element path into a query, step by step.

    With probability ``p_descendant`` a step uses ``//`` and skips 0..3 of the path elements
    before the one it names (never the path's last element), so ``//`` stands for real
    descendants; independently, with probability ``p_wildcard`` its name becomes ``*``.
    """
    steps = []
    position = 0
    while position < len(path):
        if rng.random() < config.p_descendant:
            axis = "//"
            position += rng.randint(0, min(_MAX_DESCENDANT_SKIP, len(path) - 1 - position))
        else:
            axis = "/"
        name = "*" if rng.random() < config.p_wildcard else path[position]
        steps.append(axis + name)
        position += 1
    return "".join(steps)


def _distinct_queries(draw, config: QueryGenConfig, what: str) -> list[str]:
    """Call ``draw(rng)`` until it has returned ``config.count`` distinct queries. Gives up
    (ValueError) after ``200 * count + 2000`` draws, or as soon as ``100 * found + 2000`` draws
    in a row brought nothing new: the source has run out of queries."""
    rng = random.Random(config.seed)
    found: dict[str, None] = {}
    attempts = last_new = 0
    limit = 200 * config.count + 2000
    while len(found) < config.count and attempts < limit:
        attempts += 1
        query = draw(rng)
        if query not in found:
            found[query] = None
            last_new = attempts
        elif attempts - last_new > 100 * len(found) + 2000:
            break
    if len(found) < config.count:
        raise ValueError(f"only {len(found)} distinct queries of the {config.count} asked for "
                         f"could be drawn from {what} in {attempts} attempts (the last "
                         f"{attempts - last_new} found nothing new)")
    return list(found)


def generate_queries(schema: DtdSchema, config: QueryGenConfig) -> list[str]:
    """``config.count`` distinct path queries of 1..max_depth steps, each satisfiable by the DTD.

    Like YFilter's PathGenerator: a step count is drawn uniformly from 1..max_depth and the
    query is built step by step while walking down the child relation from the root (ending
    early at a leaf). A step is ``//`` with probability ``p_descendant``, and then the walk
    first descends through 0..3 unnamed intermediate elements, so ``//`` spans real
    descendants; independently a step's name is ``*`` with probability ``p_wildcard``.
    Raises ValueError (saying how many were found) if the DTD cannot supply ``count``
    distinct queries.
    """
    def draw(rng: random.Random) -> str:
        steps = []
        below = (schema.root,)  # the children of the current node (the document node first)
        for _ in range(rng.randint(1, config.max_depth)):
            if not below:
                break
            if rng.random() < config.p_descendant:
                axis = "//"
                for _ in range(rng.randint(0, _MAX_DESCENDANT_SKIP)):
                    inner = [name for name in below if schema.children(name)]
                    if not inner:
                        break
                    below = schema.children(rng.choice(inner))
            else:
                axis = "/"
            element = rng.choice(below)
            steps.append(axis + ("*" if rng.random() < config.p_wildcard else element))
            below = schema.children(element)
        return "".join(steps)

    return _distinct_queries(draw, config, f"the DTD rooted at {schema.root!r}")


def sample_queries(documents: Sequence[Document], config: QueryGenConfig) -> list[str]:
    """``config.count`` distinct queries built from the documents' element paths.

    The distinct root-to-element paths of all documents (truncated to ``max_depth``) are
    sorted, drawn uniformly and mutated like :func:`generate_queries`'s. Raises ValueError if
    not enough distinct queries exist.
    """
    paths: set[tuple[str, ...]] = set()
    for document in documents:
        stack: list[str] = []
        for event in iter_events(document):
            if event.kind is EventKind.OPEN:
                stack.append(event.name)
                paths.add(tuple(stack[:config.max_depth]))
            elif event.kind is EventKind.CLOSE:
                stack.pop()
    ordered = sorted(paths)
    if not ordered and config.count:
        raise ValueError("only 0 distinct queries could be sampled: the documents have no "
                         "elements")
    return _distinct_queries(lambda rng: _path_to_query(rng.choice(ordered), config, rng), config,
                             f"{len(ordered)} document paths")
