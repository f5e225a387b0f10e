"""The keyword side of the Redis backend: BM25 (the Query Engine's BM25STD) over the stems
made here, the IDFs it scores with, and the exact lookup of identifiers among the ``idents``
tags. How the words become a query is in ``queries``; the scores are the server's own.
"""

from __future__ import annotations

from collections.abc import Sequence

import redis
from redis.commands.search.query import Query
from redisvl.query import FilterQuery
from redisvl.query.filter import Tag

from holodeck.vectorstore.records import ChunkFilters, ChunkHit
from holodeck.vectorstore.redis.errors import RedisErrors
from holodeck.vectorstore.redis.fields import MAX_TAG_BYTES, RECORD_FIELDS, from_hash, scope_filter
from holodeck.vectorstore.redis.index import RedisIndex
from holodeck.vectorstore.redis.queries import (
    bm25std_idf,
    bounded,
    match_count,
    redis_expression,
    redis_stems,
)

#: Keyword hits of other tenants skipped at most before a search stops looking further
#: (the Query Engine's default cap on result offsets).
MAX_KEYWORD_OFFSET = 10_000


class RedisKeywords:
    """Keyword search over one index, inside one tenant's scope (the adapter's keyword side)."""

    def __init__(self, client: redis.Redis, index: RedisIndex, errors: RedisErrors) -> None:
        self._client = client
        self._index = index
        self._errors = errors

    def search(self, tenant_id: str, query: str, k: int, filters: ChunkFilters) -> list[ChunkHit]:
        """BM25 (the Query Engine's BM25STD) on the chunks' stems, inside the tenant's scope.

        The query holds only the words, and each hit's tenant, library and other filters are
        checked here, a page at a time until ``k`` pass: any clause beside the words changes
        the ranking on the Query Engine 2.10 we test on (a tag clause adds its own, sometimes
        huge, BM25 term; a numeric filter drops some of the best matches).
        """
        index = self._index.existing()
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
            with self._errors.asking():
                found = self._client.ft(self._index.name).search(bounded(request))
            for doc in found.docs:
                record = from_hash(vars(doc))
                if record.tenant_id == tenant_id and filters.admits(record):
                    hits.append(ChunkHit(record, float(doc.score)))
            if len(hits) >= k or len(found.docs) < page:
                break
        return hits[:k]

    def scale(self, query: str) -> float:
        """The sum of the query stems' IDFs as the Query Engine's BM25STD computes them
        (``log(1 + (N - n + 0.5) / (n + 0.5))`` over the whole index, as its scores are)."""
        stems = redis_stems(query)
        idf = self._stem_idfs(stems)
        return sum(idf[s] for s in stems) if idf else 0.0

    def idfs(self, words: Sequence[str]) -> dict[str, float]:
        """Each word's IDF as the Query Engine's BM25STD computes it, keyed by ``casefold``."""
        stems = {w.casefold(): found[0] for w in words if (found := redis_stems(w))}
        idf = self._stem_idfs(list(stems.values()))
        return {w: idf[s] for w, s in stems.items()} if idf else {}

    def _stem_idfs(self, stems: Sequence[str]) -> dict[str, float]:
        """Each stem's IDF as BM25STD computes it over the whole index (``log(1 + (N - n +
        0.5) / (n + 0.5))``), the stems' counts of chunks asked in one pipelined round trip;
        empty without an index or stems."""
        unique = sorted(set(stems))
        if self._index.existing() is None or not unique:
            return {}
        with self._errors.guard():
            total = int(self._client.ft(self._index.name).info()["num_docs"])
        with self._errors.asking(), self._client.pipeline(transaction=False) as pipe:
            for stem in unique:
                count = Query(f"@stems:({stem})").paging(0, 0).dialect(2)
                pipe.ft(self._index.name).search(bounded(count))
            replies = pipe.execute()
        return {
            stem: bm25std_idf(total, match_count(reply))
            for stem, reply in zip(unique, replies, strict=True)
        }

    def identifier_holders(
        self, tenant_id: str, identifier: str, limit: int, filters: ChunkFilters
    ) -> list[ChunkHit]:
        """Chunks of the scope holding ``identifier`` whole: an exact ``idents`` tag lookup."""
        index = self._index.existing()
        scope = scope_filter(tenant_id, filters)
        value = identifier.casefold()
        if index is None or scope is None or limit <= 0 or len(value.encode()) > MAX_TAG_BYTES:
            return []
        query = FilterQuery(scope & (Tag("idents") == value), num_results=limit)
        query.return_fields(*RECORD_FIELDS, skip_decode=["vector"])
        with self._errors.asking():
            rows = index.query(bounded(query))
        return [ChunkHit(from_hash(row), 0.0) for row in rows]
