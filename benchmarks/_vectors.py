"""The scale set's vectors: unit vectors shaped like a sentence model's, made without one.

Embedding a million chunks with the model takes days on this machine, so the scale
benchmarks generate their vectors, fitted to the real model's vectors of the Cranfield
abstracts (1,891 chunks): a direction all texts share (the median cosine of two chunks is
0.27 for both), topics of about 20 chunks each (nearest neighbour at 0.76 in both; the
10th at 0.74 here, 0.63 for the real ones), the rest spread over many dimensions (90 % of the
variance in 223 principal components here, 131 there). Isotropic random vectors, on which
every point is about as far from every other, are nothing like that and no index finds
their neighbours. Queries are further draws of the same kind; the topics grow with the size.
"""

from __future__ import annotations

import numpy as np

DIMS = 384
#: Length of the shared direction, spread of the topic centres, spread inside a topic.
SHARED, TOPICS, SPREAD = 0.6, 0.8, 0.6
PER_TOPIC = 20
BLOCK = 100_000


def scale_vectors(n: int, seed: int = 0, topics_of: int | None = None) -> np.ndarray:
    """``n`` unit vectors (float32, ``n`` x 384), the same for the same ``seed``; drawn
    from the topics of a set of ``topics_of`` vectors (default ``n``), so queries come
    from the same topics as the set they search."""
    topics = max(1, (topics_of or n) // PER_TOPIC)
    shared = np.random.default_rng(7).standard_normal(DIMS).astype(np.float32)
    shared *= SHARED / np.linalg.norm(shared)
    rng = np.random.default_rng(seed)
    out = np.empty((n, DIMS), dtype=np.float32)
    for start in range(0, n, BLOCK):
        stop = min(n, start + BLOCK)
        centres = _centres(rng.integers(0, topics, stop - start))
        noise = rng.standard_normal((stop - start, DIMS), dtype=np.float32)
        block = shared + centres + noise * (SPREAD / np.sqrt(DIMS))
        out[start:stop] = block / np.linalg.norm(block, axis=1, keepdims=True)
    return out


def _centres(topics: np.ndarray) -> np.ndarray:
    """Each topic's centre, the same for the same topic number whatever the size."""
    unique, rows = np.unique(topics, return_inverse=True)
    draws = [np.random.default_rng(1_000_003 + t) for t in unique]
    centres = np.stack([rng.standard_normal(DIMS, dtype=np.float32) for rng in draws])
    return centres[rows] * (TOPICS / np.sqrt(DIMS))


def exact_top(vectors: np.ndarray, queries: np.ndarray, k: int = 10) -> np.ndarray:
    """The exact ``k`` nearest rows (by cosine) of each query, as row numbers."""
    out = np.empty((len(queries), k), dtype=np.int64)
    for i, q in enumerate(queries):
        scores = vectors @ q
        top = np.argpartition(-scores, k)[:k]
        out[i] = top[np.argsort(-scores[top])]
    return out


def recall(found: list[list[int]], truth: np.ndarray) -> float:
    """Mean share of the exact top k found."""
    k = truth.shape[1]
    return float(np.mean([len(set(f[:k]) & set(t)) / k for f, t in zip(found, truth, strict=True)]))
