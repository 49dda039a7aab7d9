"""Seeded workload generators: path queries and documents from a DTD, and the compact format.

* :class:`DtdSchema` reads a DTD with lxml (element content models, attributes, root, child
  relation) and precomputes each element's minimal subtree height and size.
* :func:`generate_queries` draws YFilter-style path queries from the DTD's child relation;
  :func:`sample_queries` draws them from the element paths of real documents. Both mutate
  steps into ``*`` and ``//`` at the configured probabilities and return distinct strings.
* :func:`generate_document` writes a ToXgene-like document that follows the content model,
  stays within a depth limit and lands near a byte target.
* :func:`tag_ids`, :func:`to_compact` and :func:`compact_query` give the paper's compact format:
  every tag a 2-character id, one tag per line, no attributes and no text.

Every generator is a pure function of its arguments: randomness comes only from a
``random.Random(seed)`` it creates, so the same arguments and seed give identical output.

Limits of document validity: ENTITY/ENTITIES attributes are never written (no unparsed
entities to name), so a DTD that *requires* one yields invalid documents, as does a #REQUIRED
IDREF met before any ID; prefixed element names are written as declared, without ``xmlns``
declarations. NITF and DBLP have none of these, and their documents validate.
"""

from __future__ import annotations

import bisect
import math
import random
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Iterable, Optional, Sequence, Union
from xml.sax.saxutils import escape

from lxml import etree

from .events import Document, EventKind, iter_events
from .xpath import Axis, parse_query

__all__ = [
    "Particle", "AttributeDecl", "ElementDecl", "DtdSchema",
    "QueryGenConfig", "generate_queries", "sample_queries",
    "DocGenConfig", "generate_document", "generate_documents",
    "tag_ids", "to_compact", "compact_query",
]

# --------------------------------------------------------------------------------------------
# DTD schema
# --------------------------------------------------------------------------------------------

_OCCURS = ("once", "opt", "mult", "plus")
_SKIPPABLE = ("opt", "mult")  # occurrences that allow zero repetitions


@dataclass(frozen=True)
class Particle:
    """A node of a content model.

    ``kind`` is ``"name"`` (an element reference, ``name`` set), ``"seq"``, ``"choice"``
    (``items`` set) or ``"pcdata"``; ``occur`` is lxml's ``"once"``, ``"opt"`` (?),
    ``"mult"`` (*) or ``"plus"`` (+). Nested groups that lxml splits into binary trees are
    flattened, so ``(a, b, c)`` is one ``seq`` with three items.
    """
    kind: str
    occur: str = "once"
    name: Optional[str] = None
    items: tuple["Particle", ...] = ()

    def element_names(self) -> Iterable[str]:
        """Every element name this particle can contain, in content-model order."""
        if self.kind == "name":
            yield self.name
        for item in self.items:
            yield from item.element_names()


@dataclass(frozen=True)
class AttributeDecl:
    """One ``<!ATTLIST>`` entry, in lxml's vocabulary.

    ``type``: cdata, id, idref, idrefs, entity, entities, nmtoken, nmtokens, enumeration or
    notation. ``default``: ``"required"``, ``"implied"``, ``"fixed"`` or ``"none"`` (a plain
    default value). ``values`` lists the allowed values of an enumeration or notation.
    """
    name: str
    type: str
    default: str
    default_value: Optional[str]
    values: tuple[str, ...] = ()


@dataclass(frozen=True)
class ElementDecl:
    """One ``<!ELEMENT>``: ``kind`` is lxml's ``"empty"``, ``"any"``, ``"mixed"`` or
    ``"element"``; ``content`` is None for EMPTY and ANY."""
    name: str
    kind: str
    content: Optional[Particle]
    attributes: tuple[AttributeDecl, ...] = ()


def _qualified(node) -> str:
    prefix = getattr(node, "prefix", None)
    return f"{prefix}:{node.name}" if prefix else node.name


def _convert_content(node, resolve=lambda name: name) -> Particle:
    """lxml's binary content tree -> a flattened :class:`Particle` tree.

    ``resolve`` maps a referenced name to the declared one (lxml drops the prefix of names
    inside content models).
    """
    if node.type == "pcdata":
        return Particle("pcdata", node.occur)
    if node.type == "element":
        return Particle("name", node.occur, name=resolve(node.name))
    kind = "seq" if node.type == "seq" else "choice"
    items: list[Particle] = []
    pending = [node.right, node.left]  # right-nested groups of the same kind flatten in order
    while pending:
        child = pending.pop()
        if child is None:
            continue
        if child.type == node.type and child.occur == "once":
            pending.extend([child.right, child.left])
        else:
            items.append(_convert_content(child, resolve))
    return Particle(kind, node.occur, items=tuple(items))


class DtdSchema:
    """A DTD's element declarations plus the derived facts the generators need.

    ``elements`` maps each declared element name to its :class:`ElementDecl` (declaration
    order); ``root`` is the document element; :meth:`children` is the child relation
    (declared, realisable elements only); :meth:`min_height` the fewest levels any valid
    subtree of an element needs (1 for a leaf; ``math.inf`` if none is finite).
    """

    def __init__(self, elements: dict[str, ElementDecl], root: Optional[str] = None,
                 source: Optional[Path] = None):
        if not elements:
            raise ValueError("a DTD schema needs at least one element declaration")
        self.elements = dict(elements)
        self.source = source
        self._min_height = {name: math.inf for name in self.elements}
        self._relax(self._min_height, self._height_of_element)
        self._min_bytes = {name: math.inf for name in self.elements}
        self._relax(self._min_bytes, self._bytes_of_element)
        realisable = {name for name, height in self._min_height.items() if height < math.inf}
        self._children = {}
        for name, decl in self.elements.items():
            referenced = (self.elements if decl.kind == "any" else
                          decl.content.element_names() if decl.content else ())
            self._children[name] = tuple(sorted(realisable.intersection(referenced)))
        if root is None:
            root = self._guess_root()
        elif root not in self.elements:
            raise ValueError(f"root element {root!r} is not declared in the DTD")
        self.root = root

    @classmethod
    def load(cls, path: Union[str, Path], root: Optional[str] = None) -> "DtdSchema":
        """Read a DTD file with lxml; ``root`` defaults to :meth:`_guess_root`'s choice.
        A file lxml cannot read as a DTD raises ValueError naming it."""
        try:
            dtd = etree.DTD(str(path))
        except etree.DTDParseError as exc:
            raise ValueError(f"{path}: not a DTD: {exc}") from None
        declared = [decl for decl in dtd.elements() if decl.type != "undefined"]
        by_local: dict[str, list[str]] = {}
        for decl in declared:
            by_local.setdefault(decl.name, []).append(_qualified(decl))

        def resolve(name: str) -> str:
            matches = by_local.get(name, [])
            return matches[0] if len(matches) == 1 else name

        elements: dict[str, ElementDecl] = {}
        for decl in declared:
            content = (_convert_content(decl.content, resolve)
                       if decl.content is not None else None)
            attributes = tuple(
                AttributeDecl(_qualified(a), a.type, a.default, a.default_value,
                              tuple(a.values()))
                for a in decl.iterattributes())
            name = _qualified(decl)
            elements[name] = ElementDecl(name, decl.type, content, attributes)
        return cls(elements, root=root, source=Path(path))

    # -- derived facts ----------------------------------------------------------------------

    @property
    def names(self) -> tuple[str, ...]:
        """All declared element names, in declaration order."""
        return tuple(self.elements)

    def children(self, name: str) -> tuple[str, ...]:
        """Sorted names of the elements that may appear as children of ``name``."""
        return self._children[name]

    def min_height(self, name: str) -> float:
        """Levels of the shallowest valid subtree rooted at ``name`` (inf if unbounded)."""
        return self._min_height.get(name, math.inf)

    def min_bytes(self, name: str) -> float:
        """Bytes of the smallest valid subtree of ``name`` (tags, required attributes)."""
        return self._min_bytes.get(name, math.inf)

    def particle_min_height(self, particle: Particle, skippable: bool = True) -> float:
        """Levels a particle's content needs; 0 when ``skippable`` and it may occur 0 times."""
        if skippable and particle.occur in _SKIPPABLE:
            return 0
        if particle.kind == "pcdata":
            return 0
        if particle.kind == "name":
            return self._min_height.get(particle.name, math.inf)
        values = [self.particle_min_height(item) for item in particle.items]
        return max(values, default=0) if particle.kind == "seq" else min(values, default=0)

    def particle_min_bytes(self, particle: Particle, skippable: bool = True) -> float:
        """Bytes of a particle's smallest valid content (0 if it may occur 0 times)."""
        if skippable and particle.occur in _SKIPPABLE:
            return 0
        if particle.kind == "pcdata":
            return 0
        if particle.kind == "name":
            return self._min_bytes.get(particle.name, math.inf)
        values = [self.particle_min_bytes(item) for item in particle.items]
        return sum(values) if particle.kind == "seq" else min(values, default=0)

    def _height_of_element(self, decl: ElementDecl) -> float:
        return 1 + (self.particle_min_height(decl.content) if decl.content else 0)

    def _bytes_of_element(self, decl: ElementDecl) -> float:
        tags = 2 * len(decl.name) + 5
        required = sum(len(a.name) + 4 for a in decl.attributes if a.default == "required")
        return tags + required + (self.particle_min_bytes(decl.content) if decl.content else 0)

    def _relax(self, table: dict[str, float], measure) -> None:
        """Lower ``table`` (all inf at first) to the least fixed point of ``measure``."""
        changed = True
        while changed:
            changed = False
            for name, decl in self.elements.items():
                value = measure(decl)
                if value < table[name]:
                    table[name], changed = value, True

    def _reachable(self, start: str) -> set[str]:
        seen, todo = {start}, [start]
        while todo:
            for child in self._children[todo.pop()]:
                if child not in seen:
                    seen.add(child)
                    todo.append(child)
        return seen

    def _guess_root(self) -> str:
        """The realisable element no other content model names (ANY names nothing); among
        several (or none), the one reaching the most elements, earliest declared on ties."""
        referenced = {child for name, decl in self.elements.items() if decl.content
                      for child in decl.content.element_names() if child != name}
        realisable = [n for n in self.elements if self._min_height[n] < math.inf]
        candidates = ([n for n in realisable if n not in referenced] or realisable
                      or list(self.elements))
        return max(candidates, key=lambda n: len(self._reachable(n)))


# --------------------------------------------------------------------------------------------
# Queries
# --------------------------------------------------------------------------------------------

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


# --------------------------------------------------------------------------------------------
# Documents
# --------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class DocGenConfig:
    """Shape of generated documents: depth limit (root = 1), typical repetition count,
    approximate size in bytes, probability of each optional attribute, whether to write text."""
    max_depth: int = 16
    fanout: int = 4
    target_bytes: int = 220_000
    p_attribute: float = 0.5
    text: bool = True
    seed: int = 0

    def __post_init__(self):
        if self.max_depth < 1:
            raise ValueError(f"max_depth must be >= 1, not {self.max_depth}")
        if self.fanout < 0:
            raise ValueError(f"fanout must be >= 0, not {self.fanout}")
        if self.target_bytes < 0:
            raise ValueError(f"target_bytes must be >= 0, not {self.target_bytes}")
        if not 0.0 <= self.p_attribute <= 1.0:
            raise ValueError(f"p_attribute must be in [0, 1], not {self.p_attribute}")


_WORDS = ("news", "report", "market", "city", "today", "said", "the", "of", "year", "new",
          "vote", "team", "price", "rain", "court", "plan", "first", "2001", "12", "7")
_TEXT_MEAN_BYTES = 14.0
_VALUE_MEAN_BYTES = 5.0  # ' a="12"' minus the name: space, =, quotes and ~1.5 digits
_HUGE = 1e200           # caps natural sizes of deeply recursive models (avoids inf - inf)
_MAX_REPEAT = 1_000_000


class _DocumentWriter:
    """Writes one document top-down, spending a byte budget that flows down the tree.

    Each element is placed with the number of levels left below the depth limit and a budget.
    A sequence shares its budget among its items by water-filling over their *natural sizes*
    (expected size with ``fanout`` repetitions), so small bounded parts (a ``head``) get what
    they naturally use and the rest flows to the parts that can grow. A repeated particle draws
    a count around ``fanout``; if its budget is below its natural size it keeps adding
    occurrences while budget is left; given more than twice its natural size it does so only
    if no enclosing repetition is already filling (``absorbed_above``), so surplus flows back
    up to that repetition instead of bloating one small element. Choices pick uniformly
    among the alternatives that fit the depth and the budget (the cheapest fitting one when
    none is affordable); optional parts are skipped when the budget cannot pay for them.
    """

    def __init__(self, schema: DtdSchema, config: DocGenConfig):
        self.schema, self.config = schema, config
        self.rng = random.Random(config.seed)
        self.parts: list[str] = []
        self.size = 0
        self.ids_issued = 0
        self.natural_memo: dict[tuple[int, int], float] = {}
        self.height_memo: dict[int, float] = {}
        self.bytes_memo: dict[int, float] = {}
        self.choice_memo: dict[tuple[int, int], tuple[list[Particle], list[float]]] = {}
        self.text_bytes = _TEXT_MEAN_BYTES if config.text else 0.0
        self.attribute_bytes = {
            name: sum(self._attribute_probability(a) * (len(a.name) + _VALUE_MEAN_BYTES)
                      for a in decl.attributes)
            for name, decl in schema.elements.items()}

    # -- output -----------------------------------------------------------------------------

    def emit(self, text: str) -> None:
        self.parts.append(text)
        self.size += len(text)

    def write(self) -> bytes:
        root, levels = self.schema.root, self.config.max_depth
        if self.schema.min_height(root) > levels:
            raise ValueError(f"no valid {root!r} document fits in max_depth={levels}: it needs "
                             f"{self.schema.min_height(root)} levels")
        self.emit('<?xml version="1.0" encoding="UTF-8"?>\n')
        self.element(root, levels, self.config.target_bytes - self.size, absorbed_above=False)
        return "".join(self.parts).encode("utf-8")

    # -- cached measures of particles (keyed by identity: particles live in the schema) -----

    def height(self, particle: Particle) -> float:
        """Levels needed by one occurrence of ``particle`` (its own occur ignored)."""
        key = id(particle)
        if key not in self.height_memo:
            self.height_memo[key] = self.schema.particle_min_height(particle, skippable=False)
        return self.height_memo[key]

    def least_bytes(self, particle: Particle) -> float:
        """Bytes of the smallest occurrence of ``particle`` (its own occur ignored)."""
        key = id(particle)
        if key not in self.bytes_memo:
            self.bytes_memo[key] = self.schema.particle_min_bytes(particle, skippable=False)
        return self.bytes_memo[key]

    def fits(self, particle: Particle, levels: int) -> bool:
        """Whether ``particle`` (respecting its occur) has valid content in ``levels`` levels."""
        return particle.occur in _SKIPPABLE or self.height(particle) <= levels

    def natural(self, particle: Particle, levels: int, with_occur: bool = True) -> float:
        """Expected bytes of ``particle`` generated freely (counts around fanout) in ``levels``."""
        key = (id(particle), levels * 2 + with_occur)
        if key in self.natural_memo:
            return self.natural_memo[key]
        if self.height(particle) > levels:
            size = 0.0
        elif particle.kind == "pcdata":
            size = self.text_bytes
        elif particle.kind == "name":
            size = self.natural_element(particle.name, levels)
        elif particle.kind == "seq":
            size = sum(self.natural(item, levels) for item in particle.items)
        else:
            options = [self.natural(item, levels) for item in particle.items
                       if self.fits(item, levels)]
            size = sum(options) / len(options) if options else 0.0
        if with_occur:
            size *= {"once": 1.0, "opt": 0.5}.get(particle.occur, max(1, self.config.fanout))
        size = min(size, _HUGE)
        self.natural_memo[key] = size
        return size

    def natural_element(self, name: str, levels: int) -> float:
        decl = self.schema.elements[name]
        size = 2 * len(name) + 6 + self.attribute_bytes[name]
        if decl.content is not None:
            size += self.natural(decl.content, levels - 1)
        elif decl.kind == "any":
            size += self.text_bytes
        return size

    # -- generation -------------------------------------------------------------------------

    def element(self, name: str, levels: int, budget: float, absorbed_above: bool) -> int:
        """Write element ``name`` (which must fit in ``levels``); return the bytes written."""
        decl = self.schema.elements[name]
        start = self.size
        self.emit(f"<{name}{self.attributes(decl)}>")
        inner_budget = budget - (self.size - start) - len(name) - 4
        if decl.content is not None:
            self.particle(decl.content, levels - 1, inner_budget, absorbed_above)
        elif decl.kind == "any":
            self.text()
        self.emit(f"</{name}>\n")
        return self.size - start

    def particle(self, particle: Particle, levels: int, budget: float,
                 absorbed_above: bool) -> int:
        """Write all occurrences of ``particle`` in ``levels`` levels; return bytes written."""
        occur = particle.occur
        if occur == "once":
            return self.occurrence(particle, levels, budget, absorbed_above)
        if self.height(particle) > levels:
            return 0  # only skippable particles get here (the parent fitted)
        if occur == "opt":
            if not self.take_optional(particle, levels, budget):
                return 0
            return self.occurrence(particle, levels, budget, absorbed_above)
        least = self.least_bytes(particle)
        natural_one = self.natural(particle, levels, with_occur=False)
        fanout = self.config.fanout
        lowest = 1 if occur == "plus" else 0
        count = self.rng.randint(lowest, max(lowest, 2 * fanout - lowest))
        if least > 0:
            count = min(count, max(lowest, int(max(budget, 0) // least)))
        natural_all = natural_one * max(1, fanout)
        keep_filling = budget < 0.99 * natural_all or (
            budget > 2 * natural_all and not absorbed_above)
        used = 0
        done = 0
        while done < _MAX_REPEAT:
            left = budget - used
            if done >= count:
                if not keep_filling or left < max(least, 1):
                    break
                share = left
            else:
                share = left / (count - done)
            wrote = self.occurrence(particle, levels, share, absorbed_above or keep_filling)
            used += wrote
            done += 1
            if done > count and wrote == 0:
                break
        return used

    def occurrence(self, particle: Particle, levels: int, budget: float,
                   absorbed_above: bool) -> int:
        """Write one occurrence of ``particle`` (its occur ignored); return bytes written."""
        kind = particle.kind
        if kind == "pcdata":
            return self.text()
        if kind == "name":
            return self.element(particle.name, levels, budget, absorbed_above)
        if kind == "seq":
            return self.sequence(particle.items, levels, budget, absorbed_above)
        options, least = self.alternatives(particle, levels)
        affordable = bisect.bisect_right(least, budget)
        chosen = options[self.rng.randrange(affordable)] if affordable else options[0]
        return self.particle(chosen, levels, budget, absorbed_above)

    def take_optional(self, particle: Particle, levels: int, budget: float) -> bool:
        """Whether an optional particle that fits ``levels`` is written: never if the budget
        cannot pay for its smallest form, always if it covers its natural size, else 50%."""
        if self.height(particle) > levels or budget < self.least_bytes(particle):
            return False
        return budget >= self.natural(particle, levels, with_occur=False) or (
            self.rng.random() < 0.5)

    def sequence(self, items: Sequence[Particle], levels: int, budget: float,
                 absorbed_above: bool) -> int:
        """Write a sequence's items in order, sharing the budget by water-filling.

        Optional items are decided first (on their tentative share), so the budget of an
        absent one goes to the items that are present rather than being lost, and the item
        with the largest natural size is generated last (into its own buffer, spliced back in
        document order) so it absorbs whatever the others left unused.
        """
        capacities = [self.natural(item, levels) for item in items]
        tentative = _water_fill(capacities, budget)
        present = []
        for index, item in enumerate(items):
            if item.occur == "opt":
                present.append(self.take_optional(item, levels, tentative[index]))
                capacities[index] = (self.natural(item, levels, with_occur=False)
                                     if present[-1] else 0.0)
            else:
                present.append(True)
        order = [index for index in range(len(items)) if present[index]]
        if not order:
            return 0
        elastic = max(reversed(order), key=capacities.__getitem__)
        reordered = elastic != order[-1]
        if reordered:  # the most elastic item is written last, to absorb what others left
            order.remove(elastic)
            order.append(elastic)
        outputs: dict[int, list[str]] = {}
        document_parts = self.parts
        used = 0
        for position, index in enumerate(order):
            share = _water_fill([capacities[i] for i in order[position:]], budget - used)[0]
            if reordered:
                self.parts = outputs[index] = []
            item = items[index]
            if item.occur == "opt":
                used += self.occurrence(item, levels, share, absorbed_above)
            else:
                used += self.particle(item, levels, share, absorbed_above)
        if reordered:
            self.parts = document_parts
            for index in sorted(outputs):
                document_parts.extend(outputs[index])
        return used

    def alternatives(self, choice: Particle, levels: int) -> tuple[list[Particle], list[float]]:
        """The alternatives of ``choice`` that fit in ``levels``, cheapest first (stable), and
        their least sizes."""
        key = (id(choice), levels)
        if key not in self.choice_memo:
            fitting = [item for item in choice.items if self.fits(item, levels)]
            least = [0 if item.occur in _SKIPPABLE else self.least_bytes(item)
                     for item in fitting]
            order = sorted(range(len(fitting)), key=least.__getitem__)
            self.choice_memo[key] = ([fitting[i] for i in order], [least[i] for i in order])
        return self.choice_memo[key]

    def text(self) -> int:
        if not self.config.text:
            return 0
        words = self.rng.randint(1, 3)
        text = " ".join(self.rng.choice(_WORDS) for _ in range(words))
        self.emit(text)
        return len(text)

    # -- attributes -------------------------------------------------------------------------

    def _attribute_probability(self, attribute: AttributeDecl) -> float:
        if attribute.type in ("entity", "entities"):
            return 0.0  # no unparsed entities to name: never written (see module limits)
        if attribute.type in ("idref", "idrefs") and attribute.default != "required":
            return self.config.p_attribute
        return 1.0 if attribute.default == "required" else self.config.p_attribute

    def attributes(self, decl: ElementDecl) -> str:
        """`` name="value"`` pairs: #REQUIRED always, others with probability p_attribute."""
        out = []
        for attribute in decl.attributes:
            probability = self._attribute_probability(attribute)
            if probability < 1.0 and not self.rng.random() < probability:
                continue
            value = self.attribute_value(attribute)
            if value is not None:
                out.append(f' {attribute.name}="{escape(value, {chr(34): "&quot;"})}"')
        return "".join(out)

    def attribute_value(self, attribute: AttributeDecl) -> Optional[str]:
        """A valid value for the attribute's type, or None when none can be made."""
        kind, rng = attribute.type, self.rng
        if attribute.default == "fixed":
            return attribute.default_value
        if kind in ("enumeration", "notation"):
            return rng.choice(attribute.values) if attribute.values else None
        if kind == "id":
            self.ids_issued += 1
            return f"i{self.ids_issued}"
        if kind in ("idref", "idrefs"):
            if not self.ids_issued:
                return None
            refs = 1 if kind == "idref" else rng.randint(1, 2)
            return " ".join(f"i{rng.randint(1, self.ids_issued)}" for _ in range(refs))
        if kind in ("entity", "entities"):
            return None
        if kind == "nmtokens":
            return " ".join(str(rng.randint(1, 20)) for _ in range(rng.randint(1, 2)))
        return str(rng.randint(1, 20))


def _water_fill(capacities: Sequence[float], total: float) -> list[float]:
    """Split ``total`` so each item gets at most its capacity and the items below capacity
    get equal shares (water-filling); a surplus beyond all capacities is split in proportion
    to them (or evenly if all are 0)."""
    total = max(total, 0.0)
    count = len(capacities)
    capacity_sum = sum(capacities)
    if capacity_sum <= total:
        if capacity_sum <= 0:
            return [total / count] * count if count else []
        return [total * capacity / capacity_sum for capacity in capacities]
    left = total
    level = 0.0
    for index, capacity in enumerate(sorted(capacities)):
        level = left / (count - index)
        if capacity >= level:
            break
        left -= capacity
    return [min(capacity, level) for capacity in capacities]


def generate_document(schema: DtdSchema, config: DocGenConfig) -> bytes:
    """One UTF-8 XML document rooted at ``schema.root``, valid against the content model.

    Depth (root = 1) never exceeds ``config.max_depth``; size is near ``target_bytes`` when
    the DTD can grow that large. Attribute values are small numbers, ids ``i1, i2, ...``,
    enumerations one of their values, #FIXED their fixed value. ENTITY/ENTITIES attributes are
    never written, and a #REQUIRED IDREF before any ID is left out, so DTDs that need either
    produce invalid documents. Raises ValueError if the root cannot fit in ``max_depth``.
    """
    return _DocumentWriter(schema, config).write()


def generate_documents(schema: DtdSchema, config: DocGenConfig, count: int) -> list[bytes]:
    """``count`` documents; document i uses the i-th seed drawn from ``Random(config.seed)``."""
    seeds = random.Random(config.seed)
    return [generate_document(schema, replace(config, seed=seeds.getrandbits(63)))
            for _ in range(count)]


# --------------------------------------------------------------------------------------------
# Compact format
# --------------------------------------------------------------------------------------------

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
    if parsed.has_predicates:
        raise ValueError(f"{query!r}: predicates cannot be evaluated on compact documents")
    return "".join(
        ("//" if step.axis is Axis.DESCENDANT else "/")
        + (step.name if step.is_wildcard else _id_for(step.name, ids))
        for step in parsed.steps)
