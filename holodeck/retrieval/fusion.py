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
from holodeck.vectorstore.records import ChunkHit, ChunkRecord

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
    records = list({h.record.chunk_id: h.record for h in (*dense, *keyword, *exact)}.values())
    similarity = _cosines(records, query)
    relative = np.array([bm25.get(r.chunk_id, floor) for r in records], dtype=np.float64)
    relative = relative / best if best > 0 else np.zeros(len(records))
    weight = {"semantic": 0.0, "keyword": 1.0}.get(mode, KEYWORD_WEIGHT)
    own = np.clip((1 - weight) * similarity + weight * relative, 0.0, 1.0)
    first = {h.record.chunk_id for h in exact}
    lifted = np.array([r.chunk_id in first for r in records], dtype=bool)
    score = own.copy()
    if lifted.any():
        score[lifted] = np.maximum(own[lifted], own[~lifted].max(initial=0.0))
    ids = np.array([r.chunk_id for r in records], dtype=str)
    order = np.lexsort((ids, -own, -score, ~lifted))  # the last key sorts first
    return [Scored(records[i], float(score[i]), float(similarity[i])) for i in order]


def _cosines(records: Sequence[ChunkRecord], query: np.ndarray) -> np.ndarray:
    """Cosine similarity of each record's unit vector with the query, in one product, clamped
    to [0, 1] like every store's score (0 for a vector of another length)."""
    similarity = np.zeros(len(records))
    rows = [i for i, r in enumerate(records) if r.vector.size == query.size]
    if rows:
        matrix = np.stack([records[i].vector for i in rows])
        similarity[rows] = matrix.astype(np.float64) @ query.astype(np.float64)
    return np.clip(similarity, 0.0, 1.0)
