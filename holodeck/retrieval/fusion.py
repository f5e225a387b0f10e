"""One ranking from the keyword (BM25) and semantic (cosine) candidates of a query.

Measured on both dev sets (benchmarks/README.md): ``0.75 x cosine + 0.25 x BM25 / the query's
best BM25`` beats BM25 alone, the model alone and reciprocal-rank fusion on both, with one
setting. The cosine is kept as is, on its absolute scale: a query the model does not
understand (an identifier) gives flat, low cosines and lets the keyword side decide, while a
confident model keeps its margins; BM25 has no such scale, so it is divided by the best.
Every candidate's cosine is exact (the stores return vectors). Chunks holding a rare
identifier of the query whole come first: an agent asking for ``max_retries`` wants the
chunks that say it, even when the model prefers prose about retries.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from typing import Literal

import numpy as np

from holodeck.retrieval.passages import Scored
from holodeck.vectorstore.records import ChunkHit

SearchMode = Literal["hybrid", "semantic", "keyword"]
MODES: tuple[SearchMode, ...] = ("hybrid", "semantic", "keyword")
#: Share of the keyword side in the hybrid score; the semantic side has the rest. The
#: optimum is flat from 0.2 to 0.35 on both sets (benchmarks/README.md).
KEYWORD_WEIGHT = 0.25


def fuse(
    dense: Sequence[ChunkHit],
    keyword: Sequence[ChunkHit],
    query: np.ndarray,
    mode: SearchMode,
    depth: int,
    exact: Collection[ChunkHit] = (),
) -> list[Scored]:
    """The candidates of both sides, each chunk once, best first, scores in [0, 1].

    semantic: the cosine; keyword: BM25 / best BM25; hybrid: the weighted sum. A chunk the
    keyword side did not return gets that side's floor: its lowest score when the list was
    cut at ``depth``, else 0 (the list held every match). ``exact`` (holders of a rare
    identifier of the query) rank first, their score raised to at least every other's, so
    scores never increase down the list. Ties go to the earlier chunk id.
    """
    bm25 = {h.record.chunk_id: h.score for h in keyword}
    best = max(bm25.values(), default=0.0)
    floor = min(bm25.values()) if len(bm25) >= depth else 0.0
    chunks = {h.record.chunk_id: h.record for h in (*dense, *keyword, *exact)}
    first = {h.record.chunk_id for h in exact}
    scored: list[Scored] = []
    for chunk_id, record in chunks.items():
        similarity = _cosine(record.vector, query)
        relative = bm25.get(chunk_id, floor) / best if best > 0 else 0.0
        if mode == "semantic":
            score = similarity
        elif mode == "keyword":
            score = relative
        else:
            score = (1 - KEYWORD_WEIGHT) * similarity + KEYWORD_WEIGHT * relative
        scored.append(Scored(record, min(1.0, max(0.0, score)), similarity))
    own = {s.record.chunk_id: s.score for s in scored}
    lift = max((s.score for s in scored if s.record.chunk_id not in first), default=0.0)
    for s in scored:
        if s.record.chunk_id in first:
            s.score = max(s.score, lift)
    scored.sort(
        key=lambda s: (
            s.record.chunk_id not in first,
            -s.score,
            -own[s.record.chunk_id],
            s.record.chunk_id,
        )
    )
    return scored


def _cosine(vector: np.ndarray, query: np.ndarray) -> float:
    """Cosine similarity of two unit vectors, clamped to [0, 1] like every store's score."""
    if vector.size != query.size:
        return 0.0
    return float(min(1.0, max(0.0, float(np.dot(vector, query)))))
