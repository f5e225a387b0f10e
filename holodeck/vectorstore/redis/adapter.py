"""``redis``: chunks in the Redis Query Engine (RediSearch), shared across runs and machines.

One RediSearch index (HNSW or FLAT; COSINE, L2 or IP) over HASH keys serves every tenant and
library; every read and delete filters by tenant. Filters are redisvl ``Tag`` expressions, so
the library escapes every value. Key layout, for index ``<name>``:

- ``<name>:chunk:<chunk_id>``  one HASH per chunk (the indexed documents; its ``section``,
  the heading path, is stored, not indexed: a chunk of an older release has none);
- ``<name>:meta``              HASH: embedding model, dimensions, algorithm, metric;
- ``<name>:docs:<scope>``      HASH per tenant+library: doc_id -> DocState as JSON;
- ``<name>:owner:<scope>``     HASH per tenant+library: who fills it (project id, source...);
- ``<name>:lock:<scope>``      redis-py Lock: one ingest per library at a time;

where ``<scope>`` is ``["tenant", "library"]`` in JSON (unambiguous whatever the ids hold).

Deletes and moves never page with offsets (RediSearch caps them at MAXSEARCHRESULTS, 10,000 on
some servers): they fetch the first page of what still matches, change it, and ask again until
nothing matches. Counts come from the query's total, which is not capped. A chunk's HASH
fields live in ``fields``; how a query is asked and its reply read, in
``queries``.
"""

from __future__ import annotations

import json
import logging
import re
import threading
import time
from collections.abc import Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager, nullcontext
from typing import Any, Literal, cast

import numpy as np
import redis
from redis.commands.search.query import Query
from redis.lock import Lock
from redisvl.exceptions import RedisVLError
from redisvl.index import SearchIndex
from redisvl.query import CountQuery, FilterQuery, VectorQuery
from redisvl.query.filter import FilterExpression, Num, Tag

from holodeck.envvars import REDIS_LOCK_TTL
from holodeck.errors import (
    ConfigError,
    HoloDeckError,
    IngestError,
    IngestRunning,
)
from holodeck.redact import redact, redact_url
from holodeck.vectorstore.errors import MODEL_MISMATCH, StoreError
from holodeck.vectorstore.records import (
    ChunkFilters,
    ChunkHit,
    ChunkRecord,
    DocState,
    IndexInfo,
    indexed_text,
)
from holodeck.vectorstore.redis import queries
from holodeck.vectorstore.redis.fields import (
    MAX_TAG_BYTES,
    RECORD_FIELDS,
    TAG_FIELDS,
    TAG_SEPARATOR,
    checked_id,
    from_hash,
    keyword_fields,
    scope_filter,
    tag_filter,
    text_of,
    to_hash,
)
from holodeck.vectorstore.redis.queries import (
    BoundedAggregate,
    bm25std_idf,
    bounded,
    info_pairs,
    info_value,
    match_count,
    redis_expression,
    redis_stems,
    similarity,
)

logger = logging.getLogger(__name__)

Algorithm = Literal["HNSW", "FLAT"]
Metric = Literal["COSINE", "L2", "IP"]

#: Keyword hits of other tenants skipped at most before a search stops looking further
#: (the Query Engine's default cap on result offsets).
MAX_KEYWORD_OFFSET = 10_000
#: Records per pipelined write.
WRITE_BATCH = 500
#: Keys fetched per search round when deleting, moving or listing a document's chunks.
PAGE = 1000
#: How long a new index may take to finish the scan of the keyspace FT.CREATE starts.
SCAN_TIMEOUT_S = 300.0
#: Every field of holodeck's index and its type, as FT.INFO reports them.
_SCHEMA_TYPES = {
    **dict.fromkeys(TAG_FIELDS, "TAG"), "chunk_index": "NUMERIC", "vector": "VECTOR",
}  # fmt: skip
_ISOLATION_FIELDS = ("tenant_id", "library_id", "doc_id", "vector")
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
        self._prefix = index_name
        self._meta_key = f"{index_name}:meta"
        #: An empty index of holodeck's shape without meta found on connecting: what it was.
        self._leftover: str | None = None
        self._info: IndexInfo | None = None
        self._index: SearchIndex | None = None
        self._index_algorithm: Algorithm = self.algorithm  # what the index really uses
        self._index_metric: Metric = self.metric
        self._connected = False  # until then a lost connection is the contract's fallback case
        try:
            self._client = redis.Redis.from_url(
                url,
                socket_connect_timeout=connect_timeout,
                socket_timeout=60,
                health_check_interval=30,
            )
        except ValueError as exc:
            raise ConfigError(f"invalid Redis URL {self.url}: {redact(str(exc))}") from None
        self._move = self._client.register_script(_MOVE_SCRIPT)
        with self._guard():
            try:
                self._client.ping()
            except redis.exceptions.AuthenticationError as exc:  # reachable, wrong credentials
                raise ConfigError(
                    f"Redis at {self.url} refused the login ({redact(str(exc))}): check the "
                    f"user and password in the connection string"
                ) from None
            try:
                listed = self._client.execute_command("FT._LIST")
            except redis.exceptions.ResponseError as exc:
                raise ConfigError(
                    f"Redis at {self.url} has no Query Engine (RediSearch): use Redis 8 or "
                    f"Redis Stack ({redact(str(exc))})"
                ) from None
            if index_name in {text_of(name) for name in listed}:
                self._refuse_foreign_index()
        self._connected = True

    def __repr__(self) -> str:
        return f"RedisIndexAdapter({self.url!r}, index_name={self.index_name!r})"

    # -- index -------------------------------------------------------------------------
    def describe(self) -> IndexInfo | None:
        """Model and dimensions from ``<name>:meta``; read once, then answered from memory."""
        if self._info is not None:
            return self._info
        with self._guard():
            meta = self._read_meta()
            if meta is None:
                return None
            info, algorithm, metric = meta
            if (algorithm, metric) != (self.algorithm, self.metric):
                logger.warning(
                    "Redis index %s was created with %s/%s, not the configured %s/%s; "
                    "keeping the index's settings (rebuild with --force-ingest to change them)",
                    self.index_name, algorithm, metric, self.algorithm, self.metric,
                )  # fmt: skip
            index = self._open(info, algorithm, metric)
            if not index.exists():
                logger.warning(
                    "Redis index %s was missing beside its meta key; created it again",
                    self.index_name,
                )
                index.create()
            else:
                self._add_keyword_fields()
            self._info = info
            return info

    def create(self, info: IndexInfo) -> None:
        """Create the index and its meta key; a no-op when it exists for the same ``info``."""
        with self._guard(), self._create_lock():
            meta = self._read_meta()
            if meta is not None:
                if meta[0] != info:
                    raise StoreError(
                        MODEL_MISMATCH,
                        f"Redis index {self.index_name} holds {meta[0].embedding_model} "
                        f"({meta[0].dimensions} dims), not {info.embedding_model} "
                        f"({info.dimensions} dims)",
                    )
                self._info = None
                self.describe()
                return
            self._create(info)

    def recreate(self, info: IndexInfo) -> None:
        """Drop the index with every chunk, document state and meta; create it anew.

        Document states go first, so a crash half-way leaves documents to re-ingest, never
        states that claim chunks which are gone.
        """
        with self._guard(), self._create_lock():
            states = list(self._client.scan_iter(match=f"{self._prefix}:docs:*", count=1000))
            for start in range(0, len(states), PAGE):
                self._client.delete(*states[start : start + PAGE])
            index = self._open(info, self.algorithm, self.metric)
            if index.exists():
                index.delete(drop=True)
            self._client.delete(self._meta_key)
            self._info = None
            self._create(info)

    def total_count(self) -> int:
        """Chunks in the whole index (the query total, not capped by MAXSEARCHRESULTS)."""
        index = self._existing()
        if index is None:
            return 0
        with self._asking():
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
        index = self._require()
        with self._guard():
            # describe() answers from memory; a server restarted empty since then would take
            # these chunks without an index, so check the meta key (one cheap round trip).
            if not self._client.exists(self._meta_key):
                raise self._vanished()
            index.load(rows, id_field="chunk_id", batch_size=WRITE_BATCH)

    def preload(self, tenant_id: str, filters: ChunkFilters) -> None:
        """Nothing: the server holds the index."""

    def search(
        self, tenant_id: str, vector: np.ndarray, k: int, filters: ChunkFilters
    ) -> list[ChunkHit]:
        """KNN inside the tenant's scope; distances converted to cosine similarity in [0, 1]."""
        index = self._existing()
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
        with self._asking():
            rows = index.query(bounded(query))
        return [
            ChunkHit(from_hash(row), similarity(float(row[_DISTANCE]), self._index_metric))
            for row in rows
        ]

    def keyword_search(
        self, tenant_id: str, query: str, k: int, filters: ChunkFilters
    ) -> list[ChunkHit]:
        """BM25 (the Query Engine's BM25STD) on the chunks' stems, inside the tenant's scope.

        The query holds only the words, and each hit's tenant, library and other filters are
        checked here, a page at a time until ``k`` pass: any clause beside the words changes
        the ranking on the Query Engine 2.10 we test on (a tag clause adds its own, sometimes
        huge, BM25 term; a numeric filter drops some of the best matches).
        """
        index = self._existing()
        text = redis_expression(query, "stems")
        if index is None or text is None or k <= 0 or scope_filter(tenant_id, filters) is None:
            return []
        page = max(2 * k, 200)
        hits: list[ChunkHit] = []
        for offset in range(0, MAX_KEYWORD_OFFSET, page):
            request = (
                Query(text)
                .scorer("BM25STD")
                .with_scores()
                .return_fields(*(f for f in RECORD_FIELDS if f != "vector"))
                .return_field("vector", decode_field=False)
                .paging(offset, page)
                .dialect(2)
            )
            with self._asking():
                found = self._client.ft(self.index_name).search(bounded(request))
            for doc in found.docs:
                record = from_hash(vars(doc))
                if record.tenant_id == tenant_id and filters.admits(record):
                    hits.append(ChunkHit(record, float(doc.score)))
            if len(hits) >= k or len(found.docs) < page:
                break
        return hits[:k]

    def keyword_scale(self, query: str) -> float:
        """The sum of the query stems' IDFs as the Query Engine's BM25STD computes them
        (``log(1 + (N - n + 0.5) / (n + 0.5))`` over the whole index, as its scores are)."""
        stems = redis_stems(query)
        idf = self._stem_idfs(stems)
        return sum(idf[s] for s in stems) if idf else 0.0

    def keyword_idfs(self, words: Sequence[str]) -> dict[str, float]:
        """Each word's IDF as the Query Engine's BM25STD computes it, keyed by ``casefold``."""
        stems = {w.casefold(): found[0] for w in words if (found := redis_stems(w))}
        idf = self._stem_idfs(list(stems.values()))
        return {w: idf[s] for w, s in stems.items()} if idf else {}

    def _stem_idfs(self, stems: Sequence[str]) -> dict[str, float]:
        """Each stem's IDF as BM25STD computes it over the whole index (``log(1 + (N - n +
        0.5) / (n + 0.5))``), the stems' counts of chunks asked in one pipelined round trip;
        empty without an index or stems."""
        unique = sorted(set(stems))
        if self._existing() is None or not unique:
            return {}
        with self._guard():
            total = int(self._client.ft(self.index_name).info()["num_docs"])
        with self._asking(), self._client.pipeline(transaction=False) as pipe:
            for stem in unique:
                count = Query(f"@stems:({stem})").paging(0, 0).dialect(2)
                pipe.ft(self.index_name).search(bounded(count))
            replies = pipe.execute()
        return {
            stem: bm25std_idf(total, match_count(reply))
            for stem, reply in zip(unique, replies, strict=True)
        }

    def identifier_holders(
        self, tenant_id: str, identifier: str, limit: int, filters: ChunkFilters
    ) -> list[ChunkHit]:
        """Chunks of the scope holding ``identifier`` whole: an exact ``idents`` tag lookup."""
        index = self._existing()
        scope = scope_filter(tenant_id, filters)
        value = identifier.casefold()
        if index is None or scope is None or limit <= 0 or len(value.encode()) > MAX_TAG_BYTES:
            return []
        query = FilterQuery(scope & (Tag("idents") == value), num_results=limit)
        query.return_fields(*RECORD_FIELDS, skip_decode=["vector"])
        with self._asking():
            rows = index.query(bounded(query))
        return [ChunkHit(from_hash(row), 0.0) for row in rows]

    def delete_by_doc(self, tenant_id: str, library_id: str, doc_id: str) -> int:
        """Remove every chunk of one document; 0 for an unknown one."""
        return self._delete_matching(
            tag_filter("tenant_id", tenant_id)
            & tag_filter("library_id", library_id)
            & tag_filter("doc_id", doc_id)
        )

    def move_book(self, tenant_id: str, book_id: str, library_id: str) -> int:
        """Set ``library_id`` on every chunk of the book not already there; returns how many."""
        index = self._existing()
        if index is None:
            return 0
        pending = (
            tag_filter("tenant_id", tenant_id)
            & tag_filter("book_id", book_id)
            & (Tag("library_id") != checked_id("library_id", library_id))
        )
        moved = 0
        with self._guard():
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
        index = self._existing()
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
            with self._asking():
                rows = index.query(bounded(query))
            found += [from_hash(row) for row in rows]
            if len(rows) < PAGE:
                return found

    def count(self, tenant_id: str, library_id: str) -> int:
        """Chunks of one library of one tenant."""
        index = self._existing()
        if index is None:
            return 0
        library = tag_filter("tenant_id", tenant_id) & tag_filter("library_id", library_id)
        with self._asking():
            return int(index.query(bounded(CountQuery(library))))

    def drop_library(self, tenant_id: str, library_id: str) -> int:
        """Remove the library's document states, then its chunks; returns chunks removed."""
        with self._guard():
            self._client.delete(self._states_key(tenant_id, library_id))
        return self._delete_matching(
            tag_filter("tenant_id", tenant_id) & tag_filter("library_id", library_id)
        )

    def doc_ids(self, tenant_id: str, library_id: str) -> set[str]:
        """Documents with chunks in one library: FT.AGGREGATE GROUPBY doc_id, read by cursor."""
        index = self._existing()
        if index is None:
            return set()
        library = tag_filter("tenant_id", tenant_id) & tag_filter("library_id", library_id)
        request = BoundedAggregate(str(library)).group_by("@doc_id").cursor(count=PAGE)
        found: set[str] = set()
        search = self._client.ft(self.index_name)
        with self._asking():
            result = search.aggregate(request.dialect(2))
        while True:
            for row in result.rows:
                fields = dict(zip(row[::2], row[1::2], strict=True))
                found.add(text_of(fields[b"doc_id"]))
            if result.cursor is None or result.cursor.cid == 0:
                return found
            with self._asking():  # each read of the cursor on its own budget
                result = search.aggregate(result.cursor)

    # -- document state ----------------------------------------------------------------
    def doc_states(self, tenant_id: str, library_id: str) -> dict[str, DocState]:
        """Every document state of one library, from its ``<name>:docs:<scope>`` hash."""
        with self._guard():
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
        with self._guard():
            self._client.hset(self._states_key(tenant_id, library_id), state.doc_id, value)

    def delete_doc_state(self, tenant_id: str, library_id: str, doc_id: str) -> None:
        """Forget a document's state (before its chunks change, so a crash re-ingests it)."""
        with self._guard():
            self._client.hdel(self._states_key(tenant_id, library_id), doc_id)

    # -- ownership -----------------------------------------------------------------------
    def library_owner(self, tenant_id: str, library_id: str) -> dict[str, str] | None:
        """Who fills one library, from its ``<name>:owner:<scope>`` hash."""
        with self._guard():
            raw = self._client.hgetall(self._scope_key("owner", tenant_id, library_id))
        return {text_of(k): text_of(v) for k, v in raw.items()} if raw else None

    def set_library_owner(self, tenant_id: str, library_id: str, owner: dict[str, str]) -> None:
        """Replace the owner record in one transaction (no field of the old one survives)."""
        key = self._scope_key("owner", tenant_id, library_id)
        fields: dict[Any, Any] = dict(owner)
        with self._guard(), self._client.pipeline(transaction=True) as pipe:
            pipe.delete(key)
            pipe.hset(key, mapping=fields)
            pipe.execute()

    # -- extras: statistics and the ingest lock ------------------------------------------
    def stats(self, tenant_id: str, library_id: str) -> dict[str, Any]:
        """Documents and chunks of one library, with the index's settings (``store info``)."""
        info = self.describe()
        with self._guard():
            documents = int(self._client.hlen(self._states_key(tenant_id, library_id)))
        return {
            "backend": self.backend,
            "url": self.url,
            "index": self.index_name,
            "algorithm": self._index_algorithm,
            "metric": self._index_metric,
            "embedding_model": info.embedding_model if info else None,
            "dimensions": info.dimensions if info else None,
            "documents": documents,
            "chunks": self.count(tenant_id, library_id),
        }

    @contextmanager
    def library_lock(self, tenant_id: str, library_id: str, timeout: float) -> Iterator[None]:
        """Hold the library's lock while the block runs, so two ingests never interleave.

        Waits at most ``timeout`` s. The lock expires ``HOLODECK_REDIS_LOCK_TTL`` s (30) after
        its holder dies (crash, kill -9) and is renewed in the background while it lives.
        """
        ttl = REDIS_LOCK_TTL.read()
        lock = self._client.lock(
            self._scope_key("lock", tenant_id, library_id),
            timeout=ttl,
            sleep=0.1,
            blocking_timeout=timeout,
            thread_local=False,
        )
        deadline = time.monotonic() + timeout
        with self._guard():
            acquired = lock.acquire()
            remaining = deadline - time.monotonic()
            if not acquired and remaining > 0:  # redis-py stops a sleep short of its timeout
                time.sleep(remaining)
                acquired = lock.acquire(blocking=False)
        if not acquired:
            raise IngestRunning(
                f"another ingest of library {library_id!r} (tenant {tenant_id!r}) is running; "
                f"waited {timeout:g} s"
            )
        stop = threading.Event()
        keeper = threading.Thread(
            target=_keep_lock, args=(lock, stop, library_id, ttl), name="holodeck-redis-lock",
            daemon=True,
        )  # fmt: skip
        keeper.start()
        try:
            yield
        finally:
            stop.set()
            keeper.join()
            try:
                lock.release()
            except redis.exceptions.LockNotOwnedError:
                logger.warning(
                    "the lock of library %r had expired before its release: another ingest "
                    "may have run at the same time; re-run the ingest to repair the library",
                    library_id,
                )
            except (redis.exceptions.ConnectionError, redis.exceptions.TimeoutError) as exc:
                logger.warning(
                    "could not release the lock of library %r at %s (%s); it expires in %g s",
                    library_id, self.url, redact(str(exc)), ttl,
                )  # fmt: skip

    def batch(self) -> AbstractContextManager[None]:
        """No transaction to share: each document's writes go in the order a re-run repairs."""
        return nullcontext()

    def flush(self) -> None:
        """Nothing to do: every write went to Redis already."""

    def close(self) -> None:
        """Close the connection pool."""
        self._client.close()

    # -- internals ---------------------------------------------------------------------
    @contextmanager
    def _guard(self) -> Iterator[None]:
        """Turn a refused or lost connection into one error naming the redacted URL.

        Unreachable at start: the contract's ``ConnectionError`` (the caller falls back).
        Lost after that: an ``IngestError``, never a silent switch of store in mid-work.
        redis-py's own messages name only host and port.
        """
        try:
            yield
        except (redis.exceptions.ConnectionError, redis.exceptions.TimeoutError) as exc:
            raise self._lost(exc) from exc
        except (RedisVLError, redis.exceptions.ResponseError) as exc:  # redisvl wraps redis-py's
            cause = _connection_cause(exc)
            if cause is not None:
                raise self._lost(cause) from exc
            if "no such index" in str(exc).lower():
                raise self._vanished() from exc
            raise

    @contextmanager
    def _asking(self) -> Iterator[None]:
        """``_guard`` for a query of the Query Engine asked with ``QUERY_TIMEOUT_MS``
        (``queries``): one that ran out of it (the server's error, or a reply that took
        the whole budget: partial under its ``return`` policy) is refused with one error,
        never used."""
        started = time.monotonic()
        try:
            with self._guard():
                yield
        except (RedisVLError, redis.exceptions.ResponseError) as exc:
            if "timeout limit" in str(exc).lower():
                raise self._timed_out() from exc
            raise
        if (time.monotonic() - started) * 1000 >= queries.QUERY_TIMEOUT_MS:
            raise self._timed_out()

    def _timed_out(self) -> HoloDeckError:
        return HoloDeckError(
            f"Redis at {self.url} took {queries.QUERY_TIMEOUT_MS / 1000:g} s or more to answer "
            f"a query on index {self.index_name}; its answer would be partial, so none is "
            f"used: run the command again when the server is less busy"
        )

    def _lost(self, exc: BaseException) -> Exception:
        self._info = None  # the server may come back empty (restart): read the meta again
        reason = redact(str(exc))
        if not self._connected:
            return ConnectionError(f"cannot use Redis at {self.url}: {reason}")
        return IngestError(
            f"lost the connection to Redis at {self.url} ({reason}); what is stored stays "
            f"consistent: run the command again once Redis is back, the re-run repairs the index"
        )

    def _vanished(self) -> IngestError:
        self._info = None
        return IngestError(
            f"Redis index {self.index_name} at {self.url} no longer exists (server restarted "
            f"or flushed?); run the ingest again to rebuild it"
        )

    def _refuse_foreign_index(self) -> None:
        """Refuse, before any key is written, an existing index holodeck cannot safely use.

        Holodeck's index stores HASH keys under ``<name>:chunk`` with its tag fields and a
        ``vector`` field whose length its meta key records. Another application's index of
        the same name would be written into (and miss every chunk); one with another vector
        length indexes nothing. An empty index of holodeck's shape without the meta key is
        what an interrupted first ingest leaves: it is kept, and rebuilt by ``create``.
        """
        try:
            info = self._client.ft(self.index_name).info()
        except redis.exceptions.ResponseError:
            return  # dropped since it was listed
        definition = info.get("index_definition") or {}
        if not isinstance(definition, dict):
            definition = info_pairs(definition)
        fields = {text_of(info_value(a, "identifier")): a for a in info.get("attributes", [])}
        prefixes = [text_of(p).rstrip(":") for p in definition.get("prefixes", [])]
        wanted_prefix = f"{self._prefix}:chunk"
        field_types = {name: text_of(info_value(a, "type")).upper() for name, a in fields.items()}
        meta = self._read_meta()
        # With its meta key the index is holodeck's own (perhaps from a release with fewer
        # fields): only what isolation and search need must be there.
        needed = _SCHEMA_TYPES if meta is None else _ISOLATION_FIELDS
        missing = [name for name in needed if field_types.get(name) != _SCHEMA_TYPES[name]]
        why = None
        if text_of(definition.get("key_type", "")).upper() != "HASH":
            why = f"it indexes {text_of(definition.get('key_type', '?'))} keys, not HASH"
        elif prefixes != [wanted_prefix]:
            shown = ", ".join(repr(p) for p in prefixes) or "none"
            why = f"it indexes keys under {shown}, not {wanted_prefix!r}"
        elif missing:
            why = f"it lacks holodeck's fields ({', '.join(missing)})"
        if why is None and meta is not None:
            dims = int(info_value(fields["vector"], "dim") or 0)
            if dims != meta[0].dimensions:
                why = (
                    f"its vectors have {dims} dims but its meta key {self._meta_key} says "
                    f"{meta[0].dimensions}"
                )
        if why is None and meta is None and int(info.get("num_docs", 0) or 0) > 0:
            why = f"it holds {info['num_docs']} documents but no holodeck meta key"
        if why is None and meta is None:  # kept, and replaced by ``create``: say what it was
            length = text_of(info_value(fields["vector"], "dim") or "?")
            self._leftover = f"{length} dims, no documents, no holodeck meta key {self._meta_key}"
        if why is not None:
            raise ConfigError(
                f"Redis index {self.index_name} at {self.url} is not holodeck's ({why}); "
                f"set another database index_name for this tool, or drop that index "
                f"(FT.DROPINDEX {self.index_name}) if nothing uses it"
            )

    def _create_lock(self) -> Lock:
        """Serialises create/recreate across processes sharing the index."""
        return self._client.lock(f"{self._prefix}:lock:create", timeout=60, blocking_timeout=60)

    def _read_meta(self) -> tuple[IndexInfo, Algorithm, Metric] | None:
        raw = self._client.hgetall(self._meta_key)
        if not raw:
            return None
        meta = {text_of(k): text_of(v) for k, v in raw.items()}
        info = IndexInfo(meta["embedding_model"], int(meta["dimensions"]))
        return info, cast(Algorithm, meta["algorithm"]), cast(Metric, meta["metric"])

    def _create(self, info: IndexInfo) -> None:
        """Create the RediSearch index, then the meta key (which marks it complete)."""
        index = self._open(info, self.algorithm, self.metric)
        # Replaces an index without meta: one an interrupted first create left, found empty
        # and of holodeck's shape when this adapter connected (anything else was refused).
        if self._leftover is not None and index.exists():
            logger.warning(
                "Redis index %s at %s was dropped and is created again for %s (%d dims): it "
                "had holodeck's fields but %s (a first ingest cut short, or made by hand)",
                self.index_name, self.url, info.embedding_model, info.dimensions,
                self._leftover,
            )  # fmt: skip
        self._leftover = None
        index.create(overwrite=True)
        self._await_scan()
        self._client.hset(
            self._meta_key,
            mapping={
                "embedding_model": info.embedding_model,
                "dimensions": info.dimensions,
                "algorithm": self.algorithm,
                "metric": self.metric,
            },
        )
        self._info = info
        logger.info(
            "created Redis index %s (%s, %s, %d dims, %s) at %s",
            self.index_name, self.algorithm, self.metric, info.dimensions,
            info.embedding_model, self.url,
        )  # fmt: skip

    def _await_scan(self) -> None:
        """Return once the keyspace scan FT.CREATE (or FT.ALTER) starts has finished. A chunk
        written while it runs is indexed twice (by the write and again by the scan), and the
        first copy's words stay in the index's statistics (average length, term counts) until
        its garbage collection: every BM25 score shifts, by how busy the machine was or how
        many other keys the server holds (measured: 9 new chunks indexed as up to 17 on a busy
        two-core machine, or beside 2,000 unrelated keys; one keyword score moved 2.10 ->
        1.55 and the hybrid ranking changed)."""
        deadline = time.monotonic() + SCAN_TIMEOUT_S
        pause = 0.005
        with self._guard():
            while True:
                info = {text_of(k): v for k, v in self._client.ft(self.index_name).info().items()}
                if int(text_of(info.get("indexing", 0))) == 0:
                    return
                if time.monotonic() > deadline:
                    raise IngestError(
                        f"Redis at {self.url} did not finish scanning its keys for index "
                        f"{self.index_name} in {SCAN_TIMEOUT_S:g} s; no chunk was written: run "
                        f"the command again when the server is less busy"
                    )
                time.sleep(pause)
                pause = min(pause * 2, 0.1)

    def _open(self, info: IndexInfo, algorithm: str, metric: str) -> SearchIndex:
        """The redisvl handle for the index, with the schema it was (or will be) created with."""
        tag = {"separator": TAG_SEPARATOR, "case_sensitive": True}
        schema = {
            "index": {
                "name": self.index_name,
                "prefix": f"{self._prefix}:chunk",
                "key_separator": ":",
                "storage_type": "hash",
            },
            "fields": [
                *({"name": name, "type": "tag", "attrs": tag} for name in TAG_FIELDS),
                # BM25 keyword search over Porter stems made here (as FTS5 does locally): the
                # Query Engine's own stemming scores a word and its stem twice
                {"name": "stems", "type": "text", "attrs": {"no_stem": True}},
                {"name": "idents", "type": "tag", "attrs": {"separator": TAG_SEPARATOR}},
                {"name": "chunk_index", "type": "numeric", "attrs": {"sortable": True}},
                {
                    "name": "vector",
                    "type": "vector",
                    "attrs": {
                        "dims": info.dimensions,
                        "algorithm": algorithm.lower(),
                        "distance_metric": metric.lower(),
                        "datatype": "float32",
                    },
                },
            ],
        }
        self._index = SearchIndex.from_dict(schema, redis_client=self._client)
        self._index_algorithm = cast(Algorithm, algorithm.upper())
        self._index_metric = cast(Metric, metric.upper())
        return self._index

    def _add_keyword_fields(self) -> None:
        """An index made before keyword search gains its ``content`` TEXT and ``scope``
        NUMERIC fields (FT.ALTER) and its chunks their ``scope`` value; the Query Engine then
        indexes the stored chunks' text in the background."""
        info = self._client.ft(self.index_name).info()
        names = {
            text_of(value)
            for attr in info["attributes"]
            for key, value in zip(attr[::2], attr[1::2], strict=False)
            if text_of(key) == "attribute"
        }
        wanted = {
            "stems": ["TEXT", "NOSTEM"],
            "idents": ["TAG", "SEPARATOR", TAG_SEPARATOR],
        }
        missing = [name for name in wanted if name not in names]
        if not missing:
            return
        for name in missing:
            self._client.execute_command(
                "FT.ALTER", self.index_name, "SCHEMA", "ADD", name, *wanted[name]
            )
        self._await_scan()  # FT.ALTER scans the keyspace again, as FT.CREATE does
        keys = list(self._client.scan_iter(match=f"{self._prefix}:chunk:*", count=1000))
        for start in range(0, len(keys), WRITE_BATCH):
            part = keys[start : start + WRITE_BATCH]
            with self._client.pipeline(transaction=False) as pipe:
                for key in part:
                    pipe.hmget(key, ["content", "section"])
                contents = pipe.execute()
            with self._client.pipeline(transaction=False) as pipe:
                for key, (content, section) in zip(part, contents, strict=True):
                    if content is not None:
                        keywords = keyword_fields(
                            indexed_text(text_of(content), text_of(section or ""))
                        )
                        pipe.hset(
                            key,
                            mapping={"stems": keywords["stems"], "idents": keywords["idents"]},
                        )
                pipe.execute()
        logger.info(
            "Redis index %s gained the fields of keyword search; its %d chunks are indexed "
            "for it in the background",
            self.index_name,
            len(keys),
        )

    def _existing(self) -> SearchIndex | None:
        """The index handle, or None while no index was created (reads then find nothing)."""
        if self.describe() is None:
            return None
        return self._index

    def _require(self) -> SearchIndex:
        index = self._existing()
        if index is None:
            raise RuntimeError(f"Redis index {self.index_name} does not exist: create() it first")
        return index

    def _first_keys(self, index: SearchIndex, expr: FilterExpression) -> list[str]:
        """Keys of the first ``PAGE`` chunks matching ``expr`` (offset 0: never capped)."""
        query = Query(str(expr)).no_content().paging(0, PAGE).dialect(2)
        with self._asking():
            return [doc.id for doc in index.search(bounded(query)).docs]

    def _delete_matching(self, expr: FilterExpression) -> int:
        """Delete what matches, a page at a time, until nothing does; returns the count."""
        index = self._existing()
        if index is None:
            return 0
        removed = 0
        with self._guard():
            while keys := self._first_keys(index, expr):
                done = int(self._client.delete(*keys))
                if done == 0:
                    raise IngestError(
                        f"Redis index {self.index_name} keeps listing chunks that no longer "
                        f"exist; rebuild it with --force-ingest"
                    )
                removed += done
        return removed

    def _scope_key(self, kind: str, tenant_id: str, library_id: str) -> str:
        return f"{self._prefix}:{kind}:" + json.dumps([tenant_id, library_id], ensure_ascii=False)

    def _states_key(self, tenant_id: str, library_id: str) -> str:
        return self._scope_key("docs", tenant_id, library_id)


def _keep_lock(lock: Lock, stop: threading.Event, library_id: str, ttl: float) -> None:
    """Renew the lock's TTL until ``stop``; a failed renewal is logged (the lock may lapse)."""
    while not stop.wait(ttl / 3):
        try:
            lock.reacquire()
        except redis.exceptions.RedisError as exc:  # LockError included
            logger.warning(
                "could not renew the lock of library %r: %s", library_id, redact(str(exc))
            )
            return


def _connection_cause(exc: BaseException) -> BaseException | None:
    """The redis-py connection error somewhere in ``exc``'s chain, if any."""
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        if isinstance(current, redis.exceptions.ConnectionError | redis.exceptions.TimeoutError):
            return current
        seen.add(id(current))
        current = current.__cause__ or current.__context__
    return None
