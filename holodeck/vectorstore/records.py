"""Plain values that cross the storage boundary: chunk records, hits, filters, index info.

Every chunk carries the ids of all its ancestors (tenant -> library -> book -> document ->
chunk), so a whole library is searched with one filter value. In holodeck: tenant = the
agent, library = the tool, book = the file's folder relative to ``source``, document = the
file's path relative to ``source``, chunk = its position in the document.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field

import numpy as np


def chunk_id_for(tenant_id: str, library_id: str, doc_id: str, chunk_index: int) -> str:
    """A stable id, unique across tenants and libraries sharing one index."""
    key = f"{tenant_id}\x1f{library_id}\x1f{doc_id}\x1f{chunk_index}"
    return hashlib.sha1(key.encode("utf-8")).hexdigest()


#: Whether a chunk's heading path is part of the text that is embedded and keyword indexed
#: (the stored and shown text stays the chunk alone): see ``indexed_text``. On: the
#: real-folder set finds the right file first and the right place in the top 5 more often
#: (see benchmarks/README.md, 'A real folder'); the labelled sets have no headings and do
#: not move.
#: Changing it changes what an index holds: the pipeline's ``CHUNKING_VERSION`` and a
#: migration of the local index's full-text rows (``sqlite.schema``) go with it.
SECTION_IN_TEXT = True


def indexed_text(content: str, section: str) -> str:
    """The text a chunk is embedded and keyword indexed by: its heading path on a line of
    its own, then its text, when ``SECTION_IN_TEXT``; else the text alone (and always when
    it has no section, so a folder without headings is indexed exactly as before)."""
    if not (SECTION_IN_TEXT and section):
        return content
    return f"{section}\n\n{content}"


def text_hash(text: str) -> str:
    """Content hash of a chunk's text, used to reuse vectors of unchanged chunks."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


@dataclass(slots=True)
class ChunkRecord:
    """One stored chunk with its vector and the ids of all its ancestors."""

    chunk_id: str
    tenant_id: str
    library_id: str
    book_id: str
    doc_id: str
    chunk_index: int
    content: str
    vector: np.ndarray
    embedding_model: str
    source_path: str
    mtime: float
    content_hash: str
    token_count: int
    tags: list[str] = field(default_factory=list)
    language: str | None = None
    #: Where in the file the chunk came from, as a reader names it: ``page 3``,
    #: ``pages 3-4``, ``lines 10-42``, ``rows 2-41``, ``slide 3``, ``sheet Budget``;
    #: empty when the format has no such notion.
    location: str = ""
    #: The heading path of the chunk's section, outermost first: ``EXAMPLES › Undo a commit``
    #: (``holodeck.ingest.sections``); empty before the first heading or without headings.
    section: str = ""


@dataclass(frozen=True)
class ChunkFilters:
    """The scope of a search inside one tenant.

    ``library_ids=None`` means every library of the tenant; an empty list means none (the
    store returns nothing without asking the adapter). The other filters narrow further; a
    chunk matches ``tags`` when it carries any of them.
    """

    library_ids: list[str] | None = None
    book_ids: list[str] | None = None
    tags: list[str] | None = None
    language: str | None = None

    def admits(self, rec: ChunkRecord) -> bool:
        """Whether a record (of the tenant searched) lies inside these filters: for a store
        that checks them in Python, as Redis does after a keyword search."""
        if self.library_ids is not None and rec.library_id not in self.library_ids:
            return False
        if self.book_ids is not None and rec.book_id not in self.book_ids:
            return False
        if self.tags is not None and not set(self.tags).intersection(rec.tags):
            return False
        return self.language is None or rec.language == self.language


@dataclass(slots=True)
class ChunkHit:
    """A search result: the record and its score.

    From a vector search the score is the cosine similarity clamped to [0, 1]; from a
    keyword search it is BM25 (higher is better, unbounded).
    """

    record: ChunkRecord
    score: float


@dataclass(frozen=True)
class IndexInfo:
    """The ruler of an index: the embedding model and vector length it was created with."""

    embedding_model: str
    dimensions: int


@dataclass(frozen=True)
class DocState:
    """What the index knows of a stored document, to decide whether to re-ingest it."""

    doc_id: str
    mtime: float
    size: int
    content_hash: str
    chunk_count: int


def range_name(unit: str, first: str, last: str) -> str:
    """``page 3``, ``pages 3-4``, ``sheet Budget``, ``sheets Budget to Summary``: how every
    location is named (a chunk's by ``ingest.locations``, a merged passage's by
    ``retrieval.passages``)."""
    if first == last:
        return f"{unit} {first}"
    joiner = "-" if first.isdigit() and last.isdigit() else " to "
    return f"{unit}s {first}{joiner}{last}"
