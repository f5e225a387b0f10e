"""A query answered as passages: candidates from each side the mode asks for (and the holders
of a rare identifier the query names), in hybrid mode the keyword side's bonus for query
words found together (``term_pairs``), fused, filtered by semantic similarity, neighbouring
chunks merged, in hybrid mode a document's further passages demoted so that an answer covers
more than one file (``passages.spread``). In hybrid mode, for a query that names a topic (not
a question), the words its best fused chunks share count on the keyword side of its best
candidates too, and those are fused again (``expansion``). The same for every backend."""

from __future__ import annotations

import time
from concurrent.futures import ThreadPoolExecutor

import numpy as np

from holodeck import tracing
from holodeck.retrieval.expansion import (
    SOURCE_CHUNKS,
    expansion_words,
    is_question,
    rescored,
)
from holodeck.retrieval.fusion import SearchMode, fuse, unlisted_score, unsure
from holodeck.retrieval.passages import MAX_CHUNKS, Passage, Scored, merge, spread
from holodeck.retrieval.term_pairs import paired
from holodeck.text.analysis import EXACT_MAX, query_identifiers
from holodeck.vectorstore.records import ChunkFilters, ChunkHit
from holodeck.vectorstore.store import VectorStore

#: Candidates each side hands to the fusion (more when top_k asks for more). The fusion's
#: feedback re-ranks within them: more candidates, better rankings, slower search (see
#: benchmarks/README.md, 'Search quality', "And 200 candidates a side").
DEPTH = 200
#: Keyword feedback for a query that names a topic (``expansion``): it helps topic queries
#: and leaves questions as they were (see benchmarks/README.md, 'Search quality'). False:
#: none (benchmarks compare).
EXPAND = True
#: The keyword side's bonus for query words found together (``term_pairs``). False: none
#: (benchmarks compare).
PAIRS = True
#: In hybrid mode a document's next passage ranks as if it scored this share of the best
#: passage's score less per passage of that document ranked above it (so a file's fifth
#: passage in a top 5 must beat the next file's best by four times it). Chosen on the real
#: folder's tune half: far fewer answers all from one file, at no cost in nDCG@10 (see
#: benchmarks/README.md, 'Search quality', "Results that cover the question").
SPREAD = 0.07  # 0: none (benchmarks compare)
#: Runs the semantic side while the calling thread runs the keyword side. (The query is
#: embedded before, in the calling thread: embedding it here gained nothing on two cores and
#: left onnxruntime spinning in a run beside an ingest's.)
_BOTH_SIDES = ThreadPoolExecutor(max_workers=4, thread_name_prefix="holodeck-search")


def retrieve(
    store: VectorStore,
    tenant_id: str,
    query: str,
    vector: np.ndarray,
    k: int,
    filters: ChunkFilters,
    mode: SearchMode = "hybrid",
    min_similarity: float | None = None,
) -> tuple[list[Passage], int]:
    """The ``k`` best passages and how many chunks were found before ``min_similarity``.

    ``min_similarity`` keeps the meaning the tool contract gives it (docs/contract.md) in
    every mode: a chunk's cosine similarity with the query, whatever ranked it.
    """
    # Enough candidates for k passages in one round as a rule: a passage merges up to
    # MAX_CHUNKS of them, so a second round at k x MAX_CHUNKS runs only when the first fell
    # short and a side was cut. (Asking k x MAX_CHUNKS at once would read that many records
    # a side for every large top_k, most of them never used.)
    wide = k * MAX_CHUNKS
    depth = max(min(wide, max(k, DEPTH)), DEPTH if mode == "hybrid" else 0)
    while True:
        ranked, cut = _ranked(store, tenant_id, query, vector, depth, filters, mode)
        kept = [s for s in ranked if min_similarity is None or s.similarity >= min_similarity]
        # the pure modes stay the model's or BM25's ranking alone
        hybrid = mode == "hybrid"
        passages = spread(merge(kept, 2 * k), k, SPREAD) if hybrid else merge(kept, k)
        if len(passages) >= k or not cut or depth >= wide:
            return passages, len(ranked)
        depth = wide


def _ranked(
    store: VectorStore,
    tenant_id: str,
    query: str,
    vector: np.ndarray,
    depth: int,
    filters: ChunkFilters,
    mode: SearchMode,
) -> tuple[list[Scored], bool]:
    """The fused candidates of both sides at ``depth``, and whether a side had more."""

    def semantic_side() -> tuple[np.ndarray, list[ChunkHit], float]:
        started = time.perf_counter()
        query_vector = np.asarray(vector, dtype=np.float32)
        if mode == "keyword":
            return query_vector, [], 0.0
        hits = store.search(tenant_id, query_vector, depth, filters)
        return query_vector, hits, time.perf_counter() - started

    # both sides at once: numpy and SQLite (or Redis) release the GIL
    dense = _BOTH_SIDES.submit(semantic_side)
    keyword: list[ChunkHit] = []
    exact: list[ChunkHit] = []
    scale = 0.0
    started = time.perf_counter()
    if mode != "semantic":
        keyword = store.keyword_search(tenant_id, query, depth, filters)
        scale = store.keyword_scale(query) if mode == "hybrid" and keyword else 0.0
        for identifier in query_identifiers(query):
            holders = store.identifier_holders(tenant_id, identifier, EXACT_MAX + 1, filters)
            if len(holders) <= EXACT_MAX:  # a rare name, not a common compound
                exact += holders
        if mode == "hybrid" and PAIRS:  # while the semantic side still runs
            keyword = paired(query, keyword, store.keyword_idfs)
    keyword_seconds = time.perf_counter() - started
    query_vector, semantic, semantic_seconds = dense.result()
    tracing.annotate(
        {
            "holodeck.search.depth": depth,
            "holodeck.search.keyword.candidates": len(keyword),
            "holodeck.search.keyword.exact": len(exact),
            "holodeck.search.keyword.ms": round(keyword_seconds * 1000, 3),
            "holodeck.search.semantic.candidates": len(semantic),
            "holodeck.search.semantic.ms": round(semantic_seconds * 1000, 3),
            "holodeck.search.fusion": "hybrid" if mode == "hybrid" else mode + " only",
        }
    )
    ranked = fuse(semantic, keyword, query_vector, mode, depth, exact, scale)
    if mode == "hybrid" and EXPAND and ranked and not is_question(query):
        best = [s.record for s in ranked[:SOURCE_CHUNKS]]
        words = expansion_words(query, best, store.keyword_idfs, unsure(semantic))
        if words:
            every = [s.record for s in ranked]
            floor = unlisted_score(keyword, depth)
            fed = rescored(keyword, every, words, floor)  # the same candidates, scored again
            ranked = _head_kept(
                fuse(semantic, fed, query_vector, mode, depth, exact, scale), ranked[0]
            )
    return ranked, depth in (len(semantic), len(keyword))


def _head_kept(ranked: list[Scored], head: Scored) -> list[Scored]:
    """``ranked`` with ``head`` first, scored as the best: the first fusion's best chunk is
    what the feedback's words came from, so it keeps its place (as the model's feedback
    keeps it)."""
    rest = [s for s in ranked if s.record.chunk_id != head.record.chunk_id]
    top = max([head.score, *(s.score for s in rest[:1])])
    return [Scored(head.record, top, head.similarity), *rest]
