"""One ranking from the keyword (BM25) and semantic (cosine) candidates of a query.

The hybrid score is ``(1 - w) x cosine + w x BM25 / the query's best BM25``. The cosine is
kept on its absolute scale (a query the model does not understand gives flat, low cosines
and lets the keyword side decide); BM25 has none, so it is divided by the best. The keyword
side's share ``w`` follows how far each side can be trusted on this query
(``keyword_weight``): it grows with how much of the query the best keyword match covers (its
BM25 against the sum of the query terms' IDFs) and shrinks as the model's best chunk stands
out from its tenth (as a share of the best cosine, so it means the same for any model).
Then pseudo-relevance feedback: the query's vector moves toward the mean of the two best
fused chunks (Rocchio's step, weighted by how unsure the model is), every candidate's cosine
is taken again with it, and the best chunk keeps its place: a chunk that says what the best
matches say in other words rises over chunks that resemble the query in passing, while a
sure model feeds back little. Each result keeps its own cosine with the query, which
``min_similarity`` filters by. Chunks holding a rare identifier of the query whole come
first. What each step gains and costs on every labelled set, and the sets each rule was
chosen on: benchmarks/README.md, "Search quality".
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from typing import Literal

import numpy as np

from holodeck.retrieval.passages import Scored
from holodeck.vectorstore.records import ChunkHit, ChunkRecord

SearchMode = Literal["hybrid", "semantic", "keyword"]
MODES: tuple[SearchMode, ...] = ("hybrid", "semantic", "keyword")
#: The keyword side's share when its best match covers the whole query and the model's top
#: chunks score alike; ...
KEYWORD_WEIGHT = 0.5
#: ... less by this much per unit of the model's lead (how far its tenth cosine falls below
#: its best, as a share of the best: the same for cosines of 0.8-0.9 as of 0.4-0.45) ...
CONFIDENCE_SCALE = 2.0
#: ... measured at this rank of the model's list.
CONFIDENCE_RANK = 10
#: A chunk the keyword side did not list, when its list was cut at the depth asked, scores
#: somewhere between 0 and the list's lowest score on that side: it gets this share of the
#: lowest (the lowest itself would rank the model's candidates as high as chunks that hold
#: the query's words, 0 below every one of them; see benchmarks/README.md, 'Search
#: quality', "Unlisted chunks").
UNLISTED_SHARE = 0.5
#: Pseudo-relevance feedback (hybrid): the query's vector moves toward the mean of the unit
#: vectors of this many best fused chunks, ...
FEEDBACK_CHUNKS = 2
#: ... weighted this much beside the query's own (times how unsure the model is, as the
#: keyword share is; 0: no feedback), and every candidate's cosine is taken again with it.
FEEDBACK_WEIGHT = 0.5


def keyword_weight(dense: Sequence[ChunkHit], best: float, scale: float) -> float:
    """The keyword side's share of a hybrid score for this query (dense: the semantic
    candidates, best first; best: the best BM25; scale: the query terms' summed IDFs)."""
    coverage = min(1.0, best / scale) if scale > 0 else 0.0
    return KEYWORD_WEIGHT * coverage * unsure(dense)


def unsure(dense: Sequence[ChunkHit]) -> float:
    """How unsure the model is of this query: 1 when its best chunk scores as its tenth,
    falling to 0 as it leads by a half of its cosine (``CONFIDENCE_SCALE`` 2); 1 with fewer
    candidates (a tiny library)."""
    lead = 0.0
    if len(dense) >= CONFIDENCE_RANK and dense[0].score > 0:
        lead = 1.0 - dense[CONFIDENCE_RANK - 1].score / dense[0].score
    return max(0.0, 1.0 - CONFIDENCE_SCALE * lead)


def unlisted_score(keyword: Sequence[ChunkHit], depth: int) -> float:
    """The keyword score of a candidate the keyword list did not hold: ``UNLISTED_SHARE`` of
    its lowest when the list was cut at ``depth``, else 0 (it held every match)."""
    return UNLISTED_SHARE * min(h.score for h in keyword) if len(keyword) >= depth else 0.0


def fuse(
    dense: Sequence[ChunkHit],
    keyword: Sequence[ChunkHit],
    query: np.ndarray,
    mode: SearchMode,
    depth: int,
    exact: Collection[ChunkHit] = (),
    scale: float = 0.0,
) -> list[Scored]:
    """The candidates of both sides, each chunk once, best first, scores in [0, 1].

    semantic: the cosine; keyword: BM25 / best BM25; hybrid: the weighted sum, the keyword
    side's share from ``keyword_weight`` (``scale``: the query terms' summed IDFs), taken again
    with the query's vector moved by the feedback (the best chunk staying first). A chunk the
    keyword side did not return gets ``UNLISTED_SHARE`` of its lowest score when the list was
    cut at ``depth``, else 0 (the list held every match). ``exact`` (holders of a rare
    identifier of the query) rank first, their score raised to at least every other's, so
    scores never increase down the list. Ties go to the earlier chunk id.
    """
    bm25 = {h.record.chunk_id: h.score for h in keyword}
    best = max(bm25.values(), default=0.0)
    floor = unlisted_score(keyword, depth)
    records = list({h.record.chunk_id: h.record for h in (*dense, *keyword, *exact)}.values())
    vectors = _unit_vectors(records, query.size)
    similarity = _cosines(vectors, query)
    relative = np.array([bm25.get(r.chunk_id, floor) for r in records], dtype=np.float64)
    relative = relative / best if best > 0 else np.zeros(len(records))
    if mode == "hybrid":
        weight = keyword_weight(dense, best, scale)
    else:
        weight = 1.0 if mode == "keyword" else 0.0
    own = np.clip((1 - weight) * similarity + weight * relative, 0.0, 1.0)
    first = {h.record.chunk_id for h in exact}
    lifted = np.array([r.chunk_id in first for r in records], dtype=bool)
    ids = np.array([r.chunk_id for r in records], dtype=str)
    score, order = _lift(own, lifted, ids)
    beta = FEEDBACK_WEIGHT * unsure(dense) if mode == "hybrid" else 0.0
    if beta > 0 and len(order) > 1:
        moved = _moved(query, [records[i] for i in order[:FEEDBACK_CHUNKS]], beta)
        fed = np.clip((1 - weight) * _cosines(vectors, moved) + weight * relative, 0.0, 1.0)
        head, ceiling = order[0], score[order[0]]
        fed[head] = np.inf  # the best chunk keeps its place: it is what the feedback trusts
        again, order = _lift(fed, lifted, ids)
        score = np.minimum(again, ceiling)  # so scores never increase down the list
    scores, cosines = score.tolist(), similarity.tolist()  # Python floats, read once
    return [Scored(records[i], scores[i], cosines[i]) for i in order.tolist()]


def _lift(own: np.ndarray, lifted: np.ndarray, ids: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The scores with the ``lifted`` chunks raised to at least every other's, and the
    order: lifted first, then by score, by their own score, by chunk id."""
    score = own.copy()
    if lifted.any():
        score[lifted] = np.maximum(own[lifted], own[~lifted].max(initial=0.0))
    return score, np.lexsort((ids, -own, -score, ~lifted))  # the last key sorts first


def _moved(query: np.ndarray, top: Sequence[ChunkRecord], beta: float) -> np.ndarray:
    """The query's unit vector plus ``beta`` x the mean of the ``top`` chunks' unit vectors,
    as a unit vector (Rocchio's feedback, with no negative part)."""
    vectors = [r.vector for r in top if r.vector.size == query.size]
    moved = query.astype(np.float64)
    if vectors:
        moved = moved + beta * np.mean(np.stack(vectors).astype(np.float64), axis=0)
    norm = np.linalg.norm(moved)
    return moved / norm if norm > 0 else moved


def _unit_vectors(records: Sequence[ChunkRecord], dims: int) -> np.ndarray:
    """The records' unit vectors as one matrix, stacked once for both cosine passes (a row
    of zeros for a vector of another length: its cosine is 0)."""
    zero = np.zeros(dims, dtype=np.float32)
    rows = [r.vector if r.vector.size == dims else zero for r in records]
    return np.array(rows, dtype=np.float64).reshape(-1, dims)


def _cosines(vectors: np.ndarray, query: np.ndarray) -> np.ndarray:
    """Cosine similarity of each unit vector with the query, in one product, clamped to
    [0, 1] like every store's score."""
    return np.clip(vectors @ query.astype(np.float64), 0.0, 1.0)
