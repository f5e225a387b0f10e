"""How the Redis backend asks the Query Engine and reads its replies: the time budget every
query carries, match counts of pipelined searches, BM25STD's IDF, distances as cosines and
FT.INFO's lists. Nothing here talks to the server: ``adapter``, ``keywords`` and ``index`` do."""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from typing import Any, TypeVar

from redis.commands.search.aggregation import AggregateRequest
from redis.commands.search.query import Query

from holodeck.text.analysis import is_compound, query_terms, word_stems
from holodeck.vectorstore.redis.fields import text_of

#: The time every query of holodeck's asks the Query Engine for (its ``TIMEOUT``, in ms).
#: The server's own short default with its default policy (``ON_TIMEOUT return``) hands
#: back what it scored so far as if it were all: a keyword side of the first few hits,
#: counts and deletes short.
#: So a query asks for its own budget, and a reply that took it whole is refused, never
#: ranked (the server's ``fail`` policy says so itself).
QUERY_TIMEOUT_MS = 10_000
_Q = TypeVar("_Q", bound=Query)


def match_count(reply: Any) -> int:
    """The match count of an FT.SEARCH reply a pipeline hands back unparsed (RESP3: a map
    with ``total_results``; RESP2: a list led by it) or parsed (``Result``)."""
    if isinstance(reply, dict):
        return int({text_of(k): v for k, v in reply.items()}["total_results"])
    if isinstance(reply, list):
        return int(reply[0])
    return int(reply.total)


def bm25std_idf(total: int, holders: int) -> float:
    """A term's IDF in the Query Engine's BM25STD (``total`` chunks, ``holders`` hold it)."""
    return math.log(1 + (total - holders + 0.5) / (holders + 0.5))


def bounded(query: _Q) -> _Q:
    """``query`` asking the Query Engine for ``QUERY_TIMEOUT_MS`` (not the server's
    default)."""
    query.timeout(QUERY_TIMEOUT_MS)
    return query


class BoundedAggregate(AggregateRequest):
    """An FT.AGGREGATE asking for ``QUERY_TIMEOUT_MS`` (redis-py has no option for it)."""

    def build_args(self) -> list[str]:
        return [*super().build_args(), "TIMEOUT", str(QUERY_TIMEOUT_MS)]


def similarity(distance: float, metric: str) -> float:
    """Cosine similarity of normalised vectors from the backend's distance, in [0, 1].

    COSINE gives 1 - cos, IP gives 1 - dot (= 1 - cos), L2 gives the squared distance
    (= 2 - 2 cos).
    """
    cosine = 1.0 - distance / 2.0 if metric == "L2" else 1.0 - distance
    return min(1.0, max(0.0, cosine))


def info_value(attribute: Sequence[Any], key: str) -> Any:
    """The value after ``key`` in an FT.INFO attribute list (flags break plain pairing)."""
    for i, item in enumerate(attribute[:-1]):
        if text_of(item).lower() == key:
            return attribute[i + 1]
    return None


def info_pairs(items: Sequence[Any]) -> dict[str, Any]:
    """An FT.INFO ``[key, value, key, value...]`` list as a dict with text keys."""
    return {text_of(items[i]): items[i + 1] for i in range(0, len(items) - 1, 2)}


def redis_stems(query: str) -> list[str]:
    """The stems of the query's word parts, escaped for the Query Engine, as often as
    ``query_terms`` asks them (the engine adds a repeated term's BM25 again, as FTS5 does).
    Compounds are looked up apart (``idents``)."""
    words = [t for t in query_terms(query) if not is_compound(t)]
    return [_redis_escape(s) for s in word_stems(words) if s]


def redis_expression(query: str, field: str) -> str | None:
    """A Query Engine clause on ``field`` (``stems``) ORing ``redis_stems`` (None when
    nothing is left)."""
    stems = redis_stems(query)
    return f"@{field}:(" + " | ".join(stems) + ")" if stems else None


def _redis_escape(part: str) -> str:
    """Backslash every character the Query Engine could read as syntax."""
    return re.sub(r"([^\w])", r"\\\1", part)
