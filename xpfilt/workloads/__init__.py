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

One module each: :mod:`.dtd`, :mod:`.queries`, :mod:`.documents`, :mod:`.compact`; this package
is their public interface.

Every generator is a pure function of its arguments: randomness comes only from a
``random.Random(seed)`` it creates, so the same arguments and seed give identical output.

Limits of document validity: ENTITY/ENTITIES attributes are never written (no unparsed
entities to name), so a DTD that *requires* one yields invalid documents, as does a #REQUIRED
IDREF met before any ID; prefixed element names are written as declared, without ``xmlns``
declarations. NITF and DBLP have none of these, and their documents validate.
"""

from xpfilt.workloads.compact import compact_query, tag_ids, to_compact
from xpfilt.workloads.documents import DocGenConfig, generate_document, generate_documents
from xpfilt.workloads.dtd import AttributeDecl, DtdSchema, ElementDecl, Particle
from xpfilt.workloads.queries import (
    PredicateGenConfig,
    QueryGenConfig,
    generate_queries,
    sample_queries,
)

__all__ = [
    "Particle",
    "AttributeDecl",
    "ElementDecl",
    "DtdSchema",
    "QueryGenConfig",
    "PredicateGenConfig",
    "generate_queries",
    "sample_queries",
    "DocGenConfig",
    "generate_document",
    "generate_documents",
    "tag_ids",
    "to_compact",
    "compact_query",
]
