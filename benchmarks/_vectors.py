"""The scale set's vectors: unit vectors shaped like a sentence model's, made without one.

Embedding a million chunks with the model takes days on this machine, so the scale
benchmarks generate their vectors: each is a draw from a 64-dimensional latent space
projected to 384 dimensions by one fixed random map, plus isotropic noise, then normalised.
Like real sentence embeddings (and unlike isotropic random vectors, on which every point is
about as far from every other and no index can find neighbours), a vector's nearest
neighbours are clearly nearer than the rest. Queries are further draws of the same kind.
"""

from __future__ import annotations

import numpy as np

DIMS = 384
LATENT = 64
NOISE = 0.35
BLOCK = 100_000


def scale_vectors(n: int, seed: int = 0) -> np.ndarray:
    """``n`` unit vectors (float32, ``n`` x 384), the same for the same ``seed``."""
    basis = np.random.default_rng(12345).standard_normal((LATENT, DIMS)).astype(np.float32)
    basis /= np.sqrt(LATENT)
    rng = np.random.default_rng(seed)
    out = np.empty((n, DIMS), dtype=np.float32)
    for start in range(0, n, BLOCK):
        stop = min(n, start + BLOCK)
        z = rng.standard_normal((stop - start, LATENT), dtype=np.float32)
        block = z @ basis + NOISE * rng.standard_normal((stop - start, DIMS), dtype=np.float32)
        out[start:stop] = block / np.linalg.norm(block, axis=1, keepdims=True)
    return out


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
