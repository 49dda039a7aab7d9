"""Path queries: :func:`generate_queries` draws YFilter-style path queries from a DTD's child
relation, :func:`sample_queries` from the element paths of real documents. Both mutate steps
into ``*`` and ``//`` at the configured probabilities, add value predicates along YFilter's
predicate axes (:class:`PredicateGenConfig`) and return distinct strings."""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from typing import Callable, Sequence

from xpfilt.lang.xpath import xpath_number
from xpfilt.software.events import Document, EventKind, iter_events
from xpfilt.workloads.dtd import AttributeDecl, DtdSchema

_MAX_DESCENDANT_SKIP = 3  # a '//' step passes over at most this many unnamed elements


OPERATORS = ("=", "!=", "<", "<=", ">", ">=")


@dataclass(frozen=True)
class PredicateGenConfig:
    """YFilter's predicate axes: ``count`` predicates per query, each on a different step
    (fewer when the query has fewer steps that can take one); a predicate tests ``text()`` with
    probability ``p_text``, else an attribute the element has (declared in the DTD, or seen in
    the documents); ``operators`` are drawn uniformly; with probability ``p_clause`` a predicate
    is a clause (two comparisons joined by ``and`` or ``or``, or ``not(...)`` of one). Numeric
    constants are drawn from 1..``max_value`` (the range ``gen-docs`` writes values in); an
    enumerated attribute is compared (``=``/``!=``) with one of its values.

    ``nested_paths`` steps (YFilter's nested-path axis) get a nested path (a twig branch):
    1..``nested_depth`` steps walked down from the step's element (the DTD's child relation or
    the documents'), each ``//`` and ``*`` at the query's own probabilities."""

    count: int = 0
    p_text: float = 0.0
    operators: tuple[str, ...] = ("=",)
    p_clause: float = 0.0
    max_value: int = 20
    nested_paths: int = 0
    nested_depth: int = 2

    def __post_init__(self):
        if self.count < 0:
            raise ValueError(f"predicates per query must be >= 0, not {self.count}")
        for name in ("p_text", "p_clause"):
            if not 0.0 <= getattr(self, name) <= 1.0:
                raise ValueError(f"{name} must be in [0, 1], not {getattr(self, name)}")
        bad = [op for op in self.operators if op not in OPERATORS]
        if bad or not self.operators:
            raise ValueError(
                f"operators must be some of {' '.join(OPERATORS)}, not "
                f"{' '.join(map(repr, bad)) or 'none'}"
            )
        if self.max_value < 1:
            raise ValueError(f"max_value must be >= 1, not {self.max_value}")
        if self.nested_paths < 0:
            raise ValueError(f"nested paths per query must be >= 0, not {self.nested_paths}")
        if self.nested_depth < 1:
            raise ValueError(f"nested_depth must be >= 1, not {self.nested_depth}")


#: The comparisons a predicate may make on one attribute: (name, literals as query text; an
#: empty tuple: numbers from 1..max_value with any operator).
AttributeChoices = Sequence[tuple[str, tuple[str, ...]]]


@dataclass(frozen=True)
class QueryGenConfig:
    """How many distinct queries, how deep, how often a step becomes ``*`` or ``//``, and
    their predicates."""

    count: int
    max_depth: int = 6
    p_wildcard: float = 0.15
    p_descendant: float = 0.15
    seed: int = 0
    predicates: PredicateGenConfig = field(default_factory=PredicateGenConfig)

    def __post_init__(self):
        if self.count < 0:
            raise ValueError(f"count must be >= 0, not {self.count}")
        if self.max_depth < 1:
            raise ValueError(f"max_depth must be >= 1, not {self.max_depth}")
        for name in ("p_wildcard", "p_descendant"):
            if not 0.0 <= getattr(self, name) <= 1.0:
                raise ValueError(f"{name} must be in [0, 1], not {getattr(self, name)}")


def _comparison(
    rng: random.Random, config: PredicateGenConfig, target: str, literals: tuple[str, ...]
) -> str:
    if literals:
        return f"{target} {rng.choice(('=', '!='))} {rng.choice(literals)}"
    return f"{target} {rng.choice(config.operators)} {rng.randint(1, config.max_value)}"


def _predicate(rng: random.Random, config: PredicateGenConfig, attributes: AttributeChoices) -> str:
    """One predicate (without its brackets) on an element with ``attributes``."""

    def comparison() -> str:
        if not attributes or rng.random() < config.p_text:
            return _comparison(rng, config, "text()", ())
        name, literals = rng.choice(attributes)
        return _comparison(rng, config, "@" + name, literals)

    if rng.random() < config.p_clause:
        kind = rng.choice(("and", "or", "not"))
        if kind == "not":
            return f"not({comparison()})"
        return f"{comparison()} {kind} {comparison()}"
    return comparison()


def _nested_path(
    element: str,
    rng: random.Random,
    config: QueryGenConfig,
    children: Callable[[str], Sequence[str]],
) -> str:
    """A twig branch below ``element``: 1..nested_depth steps down the child relation."""
    parts = []
    below = children(element)
    for k in range(rng.randint(1, config.predicates.nested_depth)):
        if not below:
            break
        if rng.random() < config.p_descendant:
            parts.append(".//" if k == 0 else "//")
            for _ in range(rng.randint(0, _MAX_DESCENDANT_SKIP - 1)):
                inner = [name for name in below if children(name)]
                if not inner:
                    break
                below = children(rng.choice(inner))
        else:
            parts.append("" if k == 0 else "/")
        chosen = rng.choice(below)
        parts.append("*" if rng.random() < config.p_wildcard else chosen)
        below = children(chosen)
    return "".join(parts)


def _with_predicates(
    steps: list[str],
    elements: Sequence[str],
    rng: random.Random,
    config: QueryGenConfig,
    attributes: Callable[[str], AttributeChoices],
    children: Callable[[str], Sequence[str]],
) -> str:
    """``steps`` (their elements: ``elements``) joined, ``config.predicates.count`` of them
    with a value predicate (a step can take one if its element has attributes or text
    predicates are on) and ``nested_paths`` with a nested path (if its element has
    children)."""
    axes = config.predicates
    if axes.count:
        able = [i for i, element in enumerate(elements) if axes.p_text > 0 or attributes(element)]
        for i in sorted(rng.sample(able, min(axes.count, len(able)))):
            steps[i] += f"[{_predicate(rng, axes, attributes(elements[i]))}]"
    if axes.nested_paths:
        able = [i for i, element in enumerate(elements) if children(element)]
        for i in sorted(rng.sample(able, min(axes.nested_paths, len(able)))):
            steps[i] += f"[{_nested_path(elements[i], rng, config, children)}]"
    return "".join(steps)


def _dtd_attributes(schema: DtdSchema) -> Callable[[str], AttributeChoices]:
    """The comparisons the DTD's attributes allow: enumerations by value; IDs, references and
    entities never (their values are names); the rest by number."""
    memo: dict[str, AttributeChoices] = {}

    def literal(decl: AttributeDecl):
        if decl.type in ("enumeration", "notation"):
            return tuple(f"'{v}'" for v in decl.values) or None
        if decl.type in ("id", "idref", "idrefs", "entity", "entities"):
            return None
        if decl.default == "fixed":
            return None
        return ()

    def attributes(name: str) -> AttributeChoices:
        if name not in memo:
            decl = schema.elements.get(name)
            found = [(a.name, literal(a)) for a in (decl.attributes if decl else ())]
            memo[name] = tuple((n, lit) for n, lit in found if lit is not None)
        return memo[name]

    return attributes


def _path_to_query(
    path: Sequence[str],
    config: QueryGenConfig,
    rng: random.Random,
    attributes: Callable[[str], AttributeChoices] = lambda _name: (),
    children: Callable[[str], Sequence[str]] = lambda _name: (),
) -> str:
    """Turn an element path into a query, step by step.

    With probability ``p_descendant`` a step uses ``//`` and skips 0..3 of the path elements
    before the one it names (never the path's last element), so ``//`` stands for real
    descendants; independently, with probability ``p_wildcard`` its name becomes ``*``.
    """
    steps, elements = [], []
    position = 0
    while position < len(path):
        if rng.random() < config.p_descendant:
            axis = "//"
            position += rng.randint(0, min(_MAX_DESCENDANT_SKIP, len(path) - 1 - position))
        else:
            axis = "/"
        name = "*" if rng.random() < config.p_wildcard else path[position]
        steps.append(axis + name)
        elements.append(path[position])
        position += 1
    return _with_predicates(steps, elements, rng, config, attributes, children)


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
        raise ValueError(
            f"only {len(found)} distinct queries of the {config.count} asked for "
            f"could be drawn from {what} in {attempts} attempts (the last "
            f"{attempts - last_new} found nothing new)"
        )
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
    attributes = _dtd_attributes(schema)

    def draw(rng: random.Random) -> str:
        steps, elements = [], []
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
            elements.append(element)
            below = schema.children(element)
        return _with_predicates(steps, elements, rng, config, attributes, schema.children)

    return _distinct_queries(draw, config, f"the DTD rooted at {schema.root!r}")


def sample_queries(documents: Sequence[Document], config: QueryGenConfig) -> list[str]:
    """``config.count`` distinct queries built from the documents' element paths.

    The distinct root-to-element paths of all documents (truncated to ``max_depth``) are
    sorted, drawn uniformly and mutated like :func:`generate_queries`'s. Raises ValueError if
    not enough distinct queries exist.
    """
    paths: set[tuple[str, ...]] = set()
    seen: dict[str, dict[str, set[str]]] = {}  # element -> attribute -> values
    kids: dict[str, set[str]] = {}  # element -> the names of its children
    for document in documents:
        stack: list[str] = []
        for event in iter_events(document):
            if event.kind is EventKind.OPEN:
                if stack and config.predicates.nested_paths:
                    kids.setdefault(stack[-1], set()).add(event.name)
                stack.append(event.name)
                paths.add(tuple(stack[: config.max_depth]))
                if config.predicates.count:
                    for name, value in event.value.items():
                        seen.setdefault(event.name, {}).setdefault(name, set()).add(value)
            elif event.kind is EventKind.CLOSE:
                stack.pop()

    def literal(values: set[str]) -> tuple[str, ...]:
        """Numbers compare by number (any operator); other values by string equality."""
        if all(xpath_number(v) == xpath_number(v) for v in values):  # none is NaN
            return ()
        return (
            tuple(
                sorted(
                    f'"{v}"' if "'" in v else f"'{v}'"
                    for v in values
                    if not ("'" in v and '"' in v)
                )
            )[:20]
            or None
        )

    choices = {
        element: tuple(
            (name, lit)
            for name, values in sorted(attrs.items())
            if (lit := literal(values)) is not None
        )
        for element, attrs in seen.items()
    }
    ordered = sorted(paths)
    if not ordered and config.count:
        raise ValueError("only 0 distinct queries could be sampled: the documents have no elements")
    children = {element: tuple(sorted(names)) for element, names in kids.items()}
    return _distinct_queries(
        lambda rng: _path_to_query(
            rng.choice(ordered),
            config,
            rng,
            lambda element: choices.get(element, ()),
            lambda element: children.get(element, ()),
        ),
        config,
        f"{len(ordered)} document paths",
    )
