"""The lxml engine: libxml2 evaluates each query separately (XPath 1.0), one tree per document.

It is the independent check on the reference filter and the software baseline in ``bench/``.
"""

from __future__ import annotations

from typing import Sequence, Union

from lxml import etree

from .events import Document, MalformedDocumentError, utf8_document
from .xpath import Query

__all__ = ["LxmlFilter", "lxml_xpath"]


class LxmlFilter:
    """``bool(tree.xpath(query))`` for every query; results are 0-based query positions."""

    def __init__(self, queries: Sequence[Query]):
        self.queries = tuple(queries)
        self._compiled = [etree.XPath(lxml_xpath(query)) for query in self.queries]

    def filter(self, document: Union[Document, bytes]) -> frozenset[int]:
        if isinstance(document, (bytes, bytearray)):
            document = Document("<bytes>", bytes(document))
        document = utf8_document(document)
        parser = etree.XMLParser(resolve_entities=False, no_network=True, huge_tree=True)
        try:
            tree = etree.fromstring(document.data, parser)
        except etree.XMLSyntaxError as exc:
            line, column = exc.position
            raise MalformedDocumentError(document.name, line, column, exc.msg) from None
        return frozenset(i for i, xpath in enumerate(self._compiled) if xpath(tree))


def lxml_xpath(query: Query) -> str:
    """``query`` for libxml2: a prefixed name ``p:n`` becomes ``*[name()='p:n']``, which matches
    the name as written, as the other engines do (no namespace bindings needed)."""
    def name(written: str, any_name: str) -> str:
        return f"{any_name}[name()='{written}']" if ":" in written else written

    out = []
    for step in query.steps:
        out.append(step.axis.value + name(step.name, "*"))
        for predicate in step.predicates:
            target = str(predicate.target)
            if target.startswith("@"):
                target = "@" + name(target[1:], "*")
            out.append(f"[{target}{str(predicate)[1 + len(str(predicate.target)):]}")
    return "".join(out)
