"""DTDs: :class:`DtdSchema` reads a DTD with lxml (element content models, attributes, root,
child relation) and precomputes each element's minimal subtree height and size."""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable, Optional, Union

from lxml import etree

_OCCURS = ("once", "opt", "mult", "plus")
SKIPPABLE = ("opt", "mult")  # occurrences that allow zero repetitions


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

    def __init__(
        self,
        elements: dict[str, ElementDecl],
        root: Optional[str] = None,
        source: Optional[Path] = None,
    ):
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
            referenced = (
                self.elements
                if decl.kind == "any"
                else decl.content.element_names()
                if decl.content
                else ()
            )
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
            content = _convert_content(decl.content, resolve) if decl.content is not None else None
            attributes = tuple(
                AttributeDecl(_qualified(a), a.type, a.default, a.default_value, tuple(a.values()))
                for a in decl.iterattributes()
            )
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
        if skippable and particle.occur in SKIPPABLE:
            return 0
        if particle.kind == "pcdata":
            return 0
        if particle.kind == "name":
            return self._min_height.get(particle.name, math.inf)
        values = [self.particle_min_height(item) for item in particle.items]
        return max(values, default=0) if particle.kind == "seq" else min(values, default=0)

    def particle_min_bytes(self, particle: Particle, skippable: bool = True) -> float:
        """Bytes of a particle's smallest valid content (0 if it may occur 0 times)."""
        if skippable and particle.occur in SKIPPABLE:
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
        referenced = {
            child
            for name, decl in self.elements.items()
            if decl.content
            for child in decl.content.element_names()
            if child != name
        }
        realisable = [n for n in self.elements if self._min_height[n] < math.inf]
        candidates = (
            [n for n in realisable if n not in referenced] or realisable or list(self.elements)
        )
        return max(candidates, key=lambda n: len(self._reachable(n)))
