"""``redis``: chunks in the Redis Query Engine (RediSearch), shared across runs and machines.

``RedisIndexAdapter`` is the ``IndexAdapter`` of this backend: the data operations (writes,
vector searches, counts, moves, deletes, document states, owners) over the index whose keys,
schema, creation and rebuild live in ``index``. Every read and delete filters by tenant.
Filters are redisvl ``Tag`` expressions, so the library escapes every value. The keyword side
is in ``keywords``, the library lock in ``lock``, the translation of redis-py's failures in
``errors``, a chunk's HASH fields in ``fields``, how a query is asked and its reply read in
``queries``.

Deletes and moves never page with offsets (RediSearch caps them at MAXSEARCHRESULTS, 10,000 on
some servers): they fetch the first page of what still matches, change it, and ask again until
nothing matches. Counts come from the query's total, which is not capped.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from contextlib import AbstractContextManager, nullcontext
from typing import Any, cast

import numpy as np
from redis.commands.search.query import Query
from redisvl.index import SearchIndex
from redisvl.query import CountQuery, FilterQuery, VectorQuery
from redisvl.query.filter import FilterExpression, Num, Tag

from holodeck.errors import ConfigError, IngestError
from holodeck.redact import redact_url
from holodeck.vectorstore.records import ChunkFilters, ChunkHit, ChunkRecord, DocState, IndexInfo
from holodeck.vectorstore.redis import errors, lock
from holodeck.vectorstore.redis.fields import (
    RECORD_FIELDS,
    checked_id,
    from_hash,
    scope_filter,
    tag_filter,
    text_of,
    to_hash,
)
from holodeck.vectorstore.redis.index import WRITE_BATCH, Algorithm, Metric, RedisIndex
from holodeck.vectorstore.redis.keywords import RedisKeywords
from holodeck.vectorstore.redis.queries import BoundedAggregate, bounded, similarity

#: Keys fetched per search round when deleting, moving or listing a document's chunks.
PAGE = 1000
_INDEX_NAME = re.compile(r"^[A-Za-z0-9_.\-]+$")
_DISTANCE = VectorQuery.DISTANCE_ID
#: Sets library_id only on a chunk that still exists (a plain HSET would recreate a deleted
#: chunk as a stray one-field hash).
_MOVE_SCRIPT = """
if redis.call('EXISTS', KEYS[1]) == 1 then
  redis.call('HSET', KEYS[1], 'library_id', ARGV[1])
  return 1
end
return 0
"""


class RedisIndexAdapter:
    """``IndexAdapter`` on the Redis Query Engine via redisvl (HASH storage, FLOAT32 vectors)."""

    backend = "redis"

    def __init__(
        self,
        url: str,
        index_name: str = "holodeck_vectors",
        algorithm: Algorithm = "HNSW",
        metric: Metric = "COSINE",
        connect_timeout: float = 5.0,
    ) -> None:
        self.url = redact_url(url)  # the raw URL (with its password) is never kept
        if not _INDEX_NAME.match(index_name):
            raise ConfigError(
                f"Redis index name {index_name!r} may only hold letters, digits, '_', '.', '-'"
            )
        algorithm_up, metric_up = str(algorithm).upper(), str(metric).upper()
        if algorithm_up not in ("HNSW", "FLAT"):
            raise ConfigError(f"Redis algorithm {algorithm!r} is not one of HNSW, FLAT")
        if metric_up not in ("COSINE", "L2", "IP"):
            raise ConfigError(f"Redis distance metric {metric!r} is not one of COSINE, L2, IP")
        self.index_name = index_name
        self.algorithm = cast(Algorithm, algorithm_up)
        self.metric = cast(Metric, metric_up)
        self._client = errors.connect(url, self.url, connect_timeout)
        self._errors = errors.RedisErrors(self.url, index_name, forget=self._forget_index)
        self._index = RedisIndex(
            self._client, self._errors, self.url, index_name, self.algorithm, self.metric
        )
        self._keywords = RedisKeywords(self._client, self._index, self._errors)
        self._move = self._client.register_script(_MOVE_SCRIPT)
        with self._errors.guard():
            if index_name in errors.index_names(self._client, self.url):
                self._index.refuse_foreign()
        self._errors.connected = True

    def __repr__(self) -> str:
        return f"RedisIndexAdapter({self.url!r}, index_name={self.index_name!r})"

    # -- index -------------------------------------------------------------------------
    def describe(self) -> IndexInfo | None:
        """Model and dimensions from ``<name>:meta``; read once, then answered from memory."""
        return self._index.describe()

    def create(self, info: IndexInfo) -> None:
        """Create the index and its meta key; a no-op when it exists for the same ``info``."""
        self._index.create(info)

    def recreate(self, info: IndexInfo) -> None:
        """Drop the index with every chunk, document state and meta; create it anew."""
        self._index.recreate(info)

    def total_count(self) -> int:
        """Chunks in the whole index (the query total, not capped by MAXSEARCHRESULTS)."""
        index = self._index.existing()
        if index is None:
            return 0
        with self._errors.asking():
            return int(index.query(bounded(CountQuery(FilterExpression("*")))))

    # -- chunks ------------------------------------------------------------------------
    def upsert(self, records: Sequence[ChunkRecord]) -> None:
        """Write whole hashes (every field, so a replaced chunk keeps nothing stale)."""
        self._write_rows([to_hash(rec) for rec in records])  # validates every record first

    def replace_document(
        self,
        tenant_id: str,
        library_id: str,
        doc_id: str,
        records: Sequence[ChunkRecord],
        state: DocState | None,
    ) -> int:
        """State out, old chunks out, new chunks in, state in: in that order, so a crash at
        any point leaves a document without state, which the next ingest redoes."""
        rows = [to_hash(rec) for rec in records]  # refuse bad ids before anything changes
        self.delete_doc_state(tenant_id, library_id, doc_id)
        removed = self.delete_by_doc(tenant_id, library_id, doc_id)
        if rows:
            self._write_rows(rows)
        if state is not None:
            self.set_doc_state(tenant_id, library_id, state)
        return removed

    def append_to_document(
        self,
        tenant_id: str,
        library_id: str,
        doc_id: str,
        records: Sequence[ChunkRecord],
        state: DocState | None,
    ) -> None:
        """New chunks in, then the state: a crash before the state leaves the document
        without one, which the next ingest redoes (reusing these vectors)."""
        rows = [to_hash(rec) for rec in records]  # refuse bad ids before anything changes
        if rows:
            self._write_rows(rows)
        if state is not None:
            self.set_doc_state(tenant_id, library_id, state)

    def _write_rows(self, rows: list[dict[str, Any]]) -> None:
        index = self._index.require()
        with self._errors.guard():
            # describe() answers from memory; a server restarted empty since then would take
            # these chunks without an index, so check the meta key (one cheap round trip).
            if not self._client.exists(self._index.meta_key):
                raise self._errors.vanished()
            index.load(rows, id_field="chunk_id", batch_size=WRITE_BATCH)

    def preload(self, tenant_id: str, filters: ChunkFilters) -> None:
        """Nothing: the server holds the index."""

    def search(
        self, tenant_id: str, vector: np.ndarray, k: int, filters: ChunkFilters
    ) -> list[ChunkHit]:
        """KNN inside the tenant's scope; distances converted to cosine similarity in [0, 1]."""
        index = self._index.existing()
        scope = scope_filter(tenant_id, filters)
        if index is None or scope is None or k <= 0:
            return []
        query = VectorQuery(
            vector=np.asarray(vector, dtype=np.float32).tobytes(),
            vector_field_name="vector",
            filter_expression=scope,
            num_results=k,
        )
        query.return_fields(*RECORD_FIELDS, _DISTANCE, skip_decode=["vector"])
        with self._errors.asking():
            rows = index.query(bounded(query))
        return [
            ChunkHit(from_hash(row), similarity(float(row[_DISTANCE]), self._index.metric))
            for row in rows
        ]

    def keyword_search(
        self, tenant_id: str, query: str, k: int, filters: ChunkFilters
    ) -> list[ChunkHit]:
        """BM25 (the Query Engine's BM25STD) on the chunks' stems, inside the tenant's scope."""
        return self._keywords.search(tenant_id, query, k, filters)

    def keyword_scale(self, query: str) -> float:
        """The sum of the query stems' IDFs as the Query Engine's BM25STD computes them."""
        return self._keywords.scale(query)

    def keyword_idfs(self, words: Sequence[str]) -> dict[str, float]:
        """Each word's IDF as the Query Engine's BM25STD computes it, keyed by ``casefold``."""
        return self._keywords.idfs(words)

    def identifier_holders(
        self, tenant_id: str, identifier: str, limit: int, filters: ChunkFilters
    ) -> list[ChunkHit]:
        """Chunks of the scope holding ``identifier`` whole: an exact ``idents`` tag lookup."""
        return self._keywords.identifier_holders(tenant_id, identifier, limit, filters)

    def delete_by_doc(self, tenant_id: str, library_id: str, doc_id: str) -> int:
        """Remove every chunk of one document; 0 for an unknown one."""
        return self._delete_matching(
            tag_filter("tenant_id", tenant_id)
            & tag_filter("library_id", library_id)
            & tag_filter("doc_id", doc_id)
        )

    def move_book(self, tenant_id: str, book_id: str, library_id: str) -> int:
        """Set ``library_id`` on every chunk of the book not already there; returns how many."""
        index = self._index.existing()
        if index is None:
            return 0
        pending = (
            tag_filter("tenant_id", tenant_id)
            & tag_filter("book_id", book_id)
            & (Tag("library_id") != checked_id("library_id", library_id))
        )
        moved = 0
        with self._errors.guard():
            while keys := self._first_keys(index, pending):
                with self._client.pipeline(transaction=False) as pipe:
                    for key in keys:
                        self._move(keys=[key], args=[library_id], client=pipe)
                    done = sum(int(n) for n in pipe.execute())
                if done == 0:
                    raise IngestError(
                        f"Redis index {self.index_name} keeps listing chunks that cannot be "
                        f"moved; rebuild it with --force-ingest"
                    )
                moved += done
        return moved

    def get_doc_chunks(self, tenant_id: str, library_id: str, doc_id: str) -> list[ChunkRecord]:
        """The chunks of one document with their vectors, in chunk order (paged by index)."""
        index = self._index.existing()
        if index is None:
            return []
        doc = (
            tag_filter("tenant_id", tenant_id)
            & tag_filter("library_id", library_id)
            & tag_filter("doc_id", doc_id)
        )
        found: list[ChunkRecord] = []
        while True:
            after = doc if not found else doc & (Num("chunk_index") > found[-1].chunk_index)
            query = FilterQuery(after, num_results=PAGE, sort_by="chunk_index")
            query.return_fields(*RECORD_FIELDS, skip_decode=["vector"])
            with self._errors.asking():
                rows = index.query(bounded(query))
            found += [from_hash(row) for row in rows]
            if len(rows) < PAGE:
                return found

    def count(self, tenant_id: str, library_id: str) -> int:
        """Chunks of one library of one tenant."""
        index = self._index.existing()
        if index is None:
            return 0
        library = tag_filter("tenant_id", tenant_id) & tag_filter("library_id", library_id)
        with self._errors.asking():
            return int(index.query(bounded(CountQuery(library))))

    def drop_library(self, tenant_id: str, library_id: str) -> int:
        """Remove the library's document states, then its chunks; returns chunks removed."""
        with self._errors.guard():
            self._client.delete(self._states_key(tenant_id, library_id))
        return self._delete_matching(
            tag_filter("tenant_id", tenant_id) & tag_filter("library_id", library_id)
        )

    def doc_ids(self, tenant_id: str, library_id: str) -> set[str]:
        """Documents with chunks in one library: FT.AGGREGATE GROUPBY doc_id, read by cursor."""
        index = self._index.existing()
        if index is None:
            return set()
        library = tag_filter("tenant_id", tenant_id) & tag_filter("library_id", library_id)
        request = BoundedAggregate(str(library)).group_by("@doc_id").cursor(count=PAGE)
        found: set[str] = set()
        search = self._client.ft(self.index_name)
        with self._errors.asking():
            result = search.aggregate(request.dialect(2))
        while True:
            for row in result.rows:
                fields = dict(zip(row[::2], row[1::2], strict=True))
                found.add(text_of(fields[b"doc_id"]))
            if result.cursor is None or result.cursor.cid == 0:
                return found
            with self._errors.asking():  # each read of the cursor on its own budget
                result = search.aggregate(result.cursor)

    # -- document state ----------------------------------------------------------------
    def doc_states(self, tenant_id: str, library_id: str) -> dict[str, DocState]:
        """Every document state of one library, from its ``<name>:docs:<scope>`` hash."""
        with self._errors.guard():
            raw = self._client.hgetall(self._states_key(tenant_id, library_id))
        states = {}
        for field, value in raw.items():
            doc_id = text_of(field)
            data = json.loads(value)
            states[doc_id] = DocState(
                doc_id=doc_id,
                mtime=float(data["mtime"]),
                size=int(data["size"]),
                content_hash=str(data["content_hash"]),
                chunk_count=int(data["chunk_count"]),
            )
        return states

    def doc_stats(self, tenant_id: str, library_id: str) -> dict[str, tuple[float, int]]:
        """``doc_states`` cut to (mtime, size): the whole state is one JSON value."""
        states = self.doc_states(tenant_id, library_id)
        return {doc: (state.mtime, state.size) for doc, state in states.items()}

    def set_doc_state(self, tenant_id: str, library_id: str, state: DocState) -> None:
        """Record a document as fully stored (called after its chunks are written)."""
        value = json.dumps(
            {
                "mtime": state.mtime,
                "size": state.size,
                "content_hash": state.content_hash,
                "chunk_count": state.chunk_count,
            }
        )
        with self._errors.guard():
            self._client.hset(self._states_key(tenant_id, library_id), state.doc_id, value)

    def delete_doc_state(self, tenant_id: str, library_id: str, doc_id: str) -> None:
        """Forget a document's state (before its chunks change, so a crash re-ingests it)."""
        with self._errors.guard():
            self._client.hdel(self._states_key(tenant_id, library_id), doc_id)

    # -- ownership -----------------------------------------------------------------------
    def library_owner(self, tenant_id: str, library_id: str) -> dict[str, str] | None:
        """Who fills one library, from its ``<name>:owner:<scope>`` hash."""
        with self._errors.guard():
            raw = self._client.hgetall(self._index.key("owner", tenant_id, library_id))
        return {text_of(k): text_of(v) for k, v in raw.items()} if raw else None

    def set_library_owner(self, tenant_id: str, library_id: str, owner: dict[str, str]) -> None:
        """Replace the owner record in one transaction (no field of the old one survives)."""
        key = self._index.key("owner", tenant_id, library_id)
        fields: dict[Any, Any] = dict(owner)
        with self._errors.guard(), self._client.pipeline(transaction=True) as pipe:
            pipe.delete(key)
            pipe.hset(key, mapping=fields)
            pipe.execute()

    # -- extras: statistics and the ingest lock ------------------------------------------
    def stats(self, tenant_id: str, library_id: str) -> dict[str, Any]:
        """Documents and chunks of one library, with the index's settings (``store info``)."""
        info = self.describe()
        with self._errors.guard():
            documents = int(self._client.hlen(self._states_key(tenant_id, library_id)))
        return {
            "backend": self.backend,
            "url": self.url,
            "index": self.index_name,
            "algorithm": self._index.algorithm,
            "metric": self._index.metric,
            "embedding_model": info.embedding_model if info else None,
            "dimensions": info.dimensions if info else None,
            "documents": documents,
            "chunks": self.count(tenant_id, library_id),
        }

    def library_lock(
        self, tenant_id: str, library_id: str, timeout: float
    ) -> AbstractContextManager[None]:
        """Hold the library's lock while the block runs, so two ingests never interleave
        (``lock``: waits at most ``timeout`` s, expires after its holder dies)."""
        key = self._index.key("lock", tenant_id, library_id)
        return lock.library_lock(self._client, key, tenant_id, library_id, timeout, self._errors)

    def batch(self) -> AbstractContextManager[None]:
        """No transaction to share: each document's writes go in the order a re-run repairs."""
        return nullcontext()

    def flush(self) -> None:
        """Nothing to do: every write went to Redis already."""

    def close(self) -> None:
        """Close the connection pool."""
        self._client.close()

    # -- internals ---------------------------------------------------------------------
    def _forget_index(self) -> None:
        """Read the index's meta again next time (``errors``: the server may have lost it)."""
        self._index.forget()

    def _first_keys(self, index: SearchIndex, expr: FilterExpression) -> list[str]:
        """Keys of the first ``PAGE`` chunks matching ``expr`` (offset 0: never capped)."""
        query = Query(str(expr)).no_content().paging(0, PAGE).dialect(2)
        with self._errors.asking():
            return [doc.id for doc in index.search(bounded(query)).docs]

    def _delete_matching(self, expr: FilterExpression) -> int:
        """Delete what matches, a page at a time, until nothing does; returns the count."""
        index = self._index.existing()
        if index is None:
            return 0
        removed = 0
        with self._errors.guard():
            while keys := self._first_keys(index, expr):
                done = int(self._client.delete(*keys))
                if done == 0:
                    raise IngestError(
                        f"Redis index {self.index_name} keeps listing chunks that no longer "
                        f"exist; rebuild it with --force-ingest"
                    )
                removed += done
        return removed

    def _states_key(self, tenant_id: str, library_id: str) -> str:
        return self._index.key("docs", tenant_id, library_id)
