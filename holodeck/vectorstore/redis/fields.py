"""A chunk as a Redis HASH: its fields, its tags, and the tag filters over them.

Tag values are exact (no tokenizer) and separated by a control character; an id Redis could
not store as one exact tag (empty, padded, with a control character, past 4,096 bytes) is
refused, never stored to match other ids. The words are indexed as Porter stems made here,
as FTS5 stems them locally.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Sequence
from typing import Any

import numpy as np
from redisvl.query.filter import FilterExpression, Tag

from holodeck.errors import ValidationError
from holodeck.text.analysis import idents_text, stems_text
from holodeck.vectorstore.records import ChunkFilters, ChunkRecord, indexed_text

#: Tag separator: a control character, so commas, pipes and spaces in ids stay one value.
TAG_SEPARATOR = "\x1f"
#: RediSearch truncates tag values longer than this (in bytes), so they could collide.
MAX_TAG_BYTES = 4096

#: The fields indexed as exact tags (what filters and isolation ask).
TAG_FIELDS = ("tenant_id", "library_id", "book_id", "doc_id", "tags", "language")
#: Every field of a chunk's HASH read back into a ChunkRecord.
RECORD_FIELDS = (
    "chunk_id", "tenant_id", "library_id", "book_id", "doc_id", "chunk_index", "content",
    "vector", "embedding_model", "source_path", "mtime", "content_hash", "token_count",
    "tags", "language", "location", "section",
)  # fmt: skip


def checked_id(field: str, value: str) -> str:
    """``value`` if RediSearch stores it as one exact tag, else a ValidationError saying why.

    Tags are trimmed, split on control characters and truncated at 4096 bytes by the server;
    such ids would silently match other ids (or nothing), so they are refused instead.
    """
    why = None
    if not value:
        why = "it is empty"
    elif value != value.strip():
        why = "it starts or ends with whitespace"
    elif any(unicodedata.category(ch) == "Cc" for ch in value):
        why = "it holds a control character (tab, newline, ...)"
    elif len(value.encode("utf-8")) > MAX_TAG_BYTES:
        why = f"it is longer than {MAX_TAG_BYTES} bytes"
    if why:
        shown = value if len(value) <= 80 else value[:77] + "..."
        raise ValidationError(f"{field} {shown!r} cannot be stored in the Redis index: {why}")
    return value


def tag_filter(field: str, values: str | Sequence[str]) -> FilterExpression:
    """An exact tag filter (any of ``values``); redisvl escapes the values."""
    if isinstance(values, str):
        return Tag(field) == checked_id(field, values)
    return Tag(field) == [checked_id(field, v) for v in values]


def scope_filter(tenant_id: str, filters: ChunkFilters) -> FilterExpression | None:
    """The tenant filter narrowed by ``filters``; None when an empty list leaves nothing.

    (redisvl turns ``Tag == []`` into a match-all, so empty lists never reach it.)
    """
    expr = tag_filter("tenant_id", tenant_id)
    for field, values in (
        ("library_id", filters.library_ids),
        ("book_id", filters.book_ids),
        ("tags", filters.tags),
    ):
        if values is None:
            continue
        if not values:
            return None
        expr &= tag_filter(field, values)
    if filters.language is not None:
        expr &= tag_filter("language", filters.language)
    return expr


def keyword_fields(content: str) -> dict[str, str]:
    """What the Query Engine indexes for keywords: the words as Porter ``stems`` separated by
    single spaces (it does not split at newlines or tabs) and the ``idents`` as case-folded
    tags (exact values: no tokenizer splits them)."""
    idents = [i.casefold() for i in idents_text(content)]
    idents = [i for i in idents if len(i.encode("utf-8")) <= MAX_TAG_BYTES]
    return {"stems": stems_text(content), "idents": TAG_SEPARATOR.join(idents)}


def text_of(value: Any) -> str:
    return value.decode("utf-8") if isinstance(value, bytes) else str(value)


def to_hash(rec: ChunkRecord) -> dict[str, Any]:
    """The HASH of a chunk: every field, ids checked, the vector as FLOAT32 bytes."""
    for field in ("tenant_id", "library_id", "book_id", "doc_id"):
        checked_id(field, getattr(rec, field))
    for tag in rec.tags:
        checked_id("tags", tag)
    if rec.language:
        checked_id("language", rec.language)
    return {
        "chunk_id": rec.chunk_id,
        "tenant_id": rec.tenant_id,
        "library_id": rec.library_id,
        "book_id": rec.book_id,
        "doc_id": rec.doc_id,
        "chunk_index": int(rec.chunk_index),
        "content": rec.content,
        "vector": np.asarray(rec.vector, dtype=np.float32).tobytes(),
        "embedding_model": rec.embedding_model,
        "source_path": rec.source_path,
        "mtime": repr(float(rec.mtime)),
        "content_hash": rec.content_hash,
        "token_count": int(rec.token_count),
        "tags": TAG_SEPARATOR.join(rec.tags),
        "language": rec.language or "",
        "location": rec.location,
        "section": rec.section,
        **keyword_fields(indexed_text(rec.content, rec.section)),
    }


def from_hash(row: dict[str, Any]) -> ChunkRecord:
    """A ChunkRecord from a query row (strings, and the vector's raw bytes)."""
    tags = text_of(row.get("tags", ""))
    return ChunkRecord(
        chunk_id=text_of(row["chunk_id"]),
        tenant_id=text_of(row["tenant_id"]),
        library_id=text_of(row["library_id"]),
        book_id=text_of(row["book_id"]),
        doc_id=text_of(row["doc_id"]),
        chunk_index=int(text_of(row["chunk_index"])),
        content=text_of(row.get("content", "")),
        vector=np.frombuffer(row["vector"], dtype=np.float32).copy(),
        embedding_model=text_of(row["embedding_model"]),
        source_path=text_of(row.get("source_path", "")),
        mtime=float(text_of(row["mtime"])),
        content_hash=text_of(row["content_hash"]),
        token_count=int(text_of(row["token_count"])),
        tags=tags.split(TAG_SEPARATOR) if tags else [],
        language=text_of(row.get("language", "")) or None,
        location=text_of(row.get("location", "")),
        section=text_of(row.get("section", "")),  # absent from chunks of older releases
    )
