"""One ranking from the keyword (BM25) and semantic (cosine) candidates of a query.

Measured on both dev sets (benchmarks/README.md): a weighted sum of the cosine similarity and
the BM25 score divided by the query's best BM25 score beats BM25 alone, the model alone and
reciprocal-rank fusion on both, with one setting. Every candidate's cosine is known (the
stores return vectors), so a chunk found only by keyword still has its true similarity.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

import numpy as np

from holodeck.retrieval.passages import Scored
from holodeck.vectorstore.records import ChunkHit

SearchMode = Literal["hybrid", "semantic", "keyword"]
MODES: tuple[SearchMode, ...] = ("hybrid", "semantic", "keyword")
#: Share of the keyword side in the hybrid score (the semantic side has the rest): the
#: measured ``cosine + 0.25 x relative BM25``, scaled into [0, 1].
KEYWORD_WEIGHT = 0.2


def fuse(
    dense: Sequence[ChunkHit], keyword: Sequence[ChunkHit], query: np.ndarray, mode: SearchMode
) -> list[Scored]:
    """Candidates of both sides, each chunk once, best first, scores in [0, 1].

    semantic: the cosine similarity; keyword: BM25 relative to the query's best match;
    hybrid: ``(1 - w) * cosine + w * relative BM25``. Ties go to the earlier chunk id.
    """
    bm25 = {h.record.chunk_id: h.score for h in keyword}
    best_bm25 = max(bm25.values(), default=0.0)
    chunks = {h.record.chunk_id: h.record for h in (*dense, *keyword)}
    scored = []
    for chunk_id, record in chunks.items():
        similarity = _cosine(record.vector, query)
        relative = bm25.get(chunk_id, 0.0) / best_bm25 if best_bm25 > 0 else 0.0
        if mode == "semantic":
            score = similarity
        elif mode == "keyword":
            score = relative
        else:
            score = (1 - KEYWORD_WEIGHT) * similarity + KEYWORD_WEIGHT * relative
        scored.append(Scored(record, min(1.0, max(0.0, score)), similarity))
    scored.sort(key=lambda s: (-s.score, s.record.chunk_id))
    return scored


def _cosine(vector: np.ndarray, query: np.ndarray) -> float:
    """Cosine similarity of two unit vectors, clamped to [0, 1] like every store's score."""
    if vector.size != query.size:
        return 0.0
    return float(min(1.0, max(0.0, float(np.dot(vector, query)))))
