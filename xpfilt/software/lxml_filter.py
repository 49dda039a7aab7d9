"""The lxml engine: libxml2 evaluates each query separately (XPath 1.0), one tree per document.

It is the independent check on the reference filter and the software baseline in ``bench/``.
"""

from __future__ import annotations

from typing import Sequence, Union

from lxml import etree

from xpfilt.lang.xpath import Query
from xpfilt.software.events import Document, MalformedDocumentError, utf8_document

__all__ = ["LxmlFilter", "lxml_xpath"]


class LxmlFilter:
    """``bool(tree.xpath(query))`` for every query (a path: it selects a node; a combination:
    the boolean's value); results are 0-based query positions."""

    def __init__(self, queries: Sequence[Query]):
        self.queries = tuple(queries)
        self._compiled = [etree.XPath(lxml_xpath(query)) for query in self.queries]

    def filter(self, document: Union[Document, bytes]) -> frozenset[int]:
        if isinstance(document, (bytes, bytearray)):
            document = Document("<bytes>", bytes(document))
        document = utf8_document(document)
        # internal entities expand (XPath's data model: `1&e;` is one text node), external
        # ones never load (no XXE); libxml2's amplification limit still holds with huge_tree
        parser = etree.XMLParser(resolve_entities="internal", no_network=True, huge_tree=True)
        try:
            tree = etree.fromstring(document.data, parser)
        except etree.XMLSyntaxError as exc:
            line, column = exc.position
            raise MalformedDocumentError(document.name, line, column, exc.msg) from None
        return frozenset(i for i, xpath in enumerate(self._compiled) if xpath(tree))


def lxml_xpath(query: Query) -> str:
    """``query`` for libxml2: a prefixed name ``p:n`` becomes ``*[name()='p:n']`` (``@p:n``:
    ``@*[name()='p:n']``), which matches the name as written, as the other engines do (no
    namespace bindings needed). A combination of paths is a boolean XPath expression."""

    def qname(written: str, _kind: str) -> str:
        return f"*[name()='{written}']" if ":" in written else written

    return query.render(qname)
