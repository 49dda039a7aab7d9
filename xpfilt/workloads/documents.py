"""Documents: :func:`generate_document` writes a ToXgene-like document that follows a DTD's
content model, stays within a depth limit and lands near a byte target."""

from __future__ import annotations

import bisect
import random
from dataclasses import dataclass, replace
from typing import Optional, Sequence
from xml.sax.saxutils import escape

from xpfilt.workloads.dtd import SKIPPABLE, AttributeDecl, DtdSchema, ElementDecl, Particle


@dataclass(frozen=True)
class DocGenConfig:
    """Shape of generated documents: depth limit (root = 1), typical repetition count,
    approximate size in bytes, probability of each optional attribute, whether to write text,
    and how often a text is a number from 1..20 (what generated text predicates compare with)."""

    max_depth: int = 16
    fanout: int = 4
    target_bytes: int = 220_000
    p_attribute: float = 0.5
    text: bool = True
    seed: int = 0
    p_number_text: float = 0.0

    def __post_init__(self):
        if self.max_depth < 1:
            raise ValueError(f"max_depth must be >= 1, not {self.max_depth}")
        if self.fanout < 0:
            raise ValueError(f"fanout must be >= 0, not {self.fanout}")
        if self.target_bytes < 0:
            raise ValueError(f"target_bytes must be >= 0, not {self.target_bytes}")
        if not 0.0 <= self.p_attribute <= 1.0:
            raise ValueError(f"p_attribute must be in [0, 1], not {self.p_attribute}")
        if not 0.0 <= self.p_number_text <= 1.0:
            raise ValueError(f"p_number_text must be in [0, 1], not {self.p_number_text}")


_WORDS = (
    "news",
    "report",
    "market",
    "city",
    "today",
    "said",
    "the",
    "of",
    "year",
    "new",
    "vote",
    "team",
    "price",
    "rain",
    "court",
    "plan",
    "first",
    "2001",
    "12",
    "7",
)
_TEXT_MEAN_BYTES = 14.0
_VALUE_MEAN_BYTES = 5.0  # ' a="12"' minus the name: space, =, quotes and ~1.5 digits
_HUGE = 1e200  # caps natural sizes of deeply recursive models (avoids inf - inf)
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
            name: sum(
                self._attribute_probability(a) * (len(a.name) + _VALUE_MEAN_BYTES)
                for a in decl.attributes
            )
            for name, decl in schema.elements.items()
        }

    # -- output -----------------------------------------------------------------------------

    def emit(self, text: str) -> None:
        self.parts.append(text)
        self.size += len(text)

    def write(self) -> bytes:
        root, levels = self.schema.root, self.config.max_depth
        if self.schema.min_height(root) > levels:
            raise ValueError(
                f"no valid {root!r} document fits in max_depth={levels}: it needs "
                f"{self.schema.min_height(root)} levels"
            )
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
        return particle.occur in SKIPPABLE or self.height(particle) <= levels

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
            options = [
                self.natural(item, levels) for item in particle.items if self.fits(item, levels)
            ]
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

    def particle(self, particle: Particle, levels: int, budget: float, absorbed_above: bool) -> int:
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
            budget > 2 * natural_all and not absorbed_above
        )
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

    def occurrence(
        self, particle: Particle, levels: int, budget: float, absorbed_above: bool
    ) -> int:
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
            self.rng.random() < 0.5
        )

    def sequence(
        self, items: Sequence[Particle], levels: int, budget: float, absorbed_above: bool
    ) -> int:
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
                capacities[index] = (
                    self.natural(item, levels, with_occur=False) if present[-1] else 0.0
                )
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
            least = [0 if item.occur in SKIPPABLE else self.least_bytes(item) for item in fitting]
            order = sorted(range(len(fitting)), key=least.__getitem__)
            self.choice_memo[key] = ([fitting[i] for i in order], [least[i] for i in order])
        return self.choice_memo[key]

    def text(self) -> int:
        if not self.config.text:
            return 0
        if self.config.p_number_text and self.rng.random() < self.config.p_number_text:
            text = str(self.rng.randint(1, 20))
        else:
            text = " ".join(self.rng.choice(_WORDS) for _ in range(self.rng.randint(1, 3)))
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
    return [
        generate_document(schema, replace(config, seed=seeds.getrandbits(63))) for _ in range(count)
    ]
