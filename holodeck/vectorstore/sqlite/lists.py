"""The lists of a large library's vector index, drawn and filled in two levels.

One k-means over all of a file's lists costs (sample x lists) a round, and both grow with
the library, so a build's cost per chunk would grow with its size. Here a first k-means
draws about sqrt(lists) groups, then each group's own sample draws its share of the lists,
and each vector goes to the nearest list inside its nearest few groups. A search still picks
the lists nearest the query among all of them (the file keeps a flat list of the centres).
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import numpy as np

#: A vector joins the nearest list inside this many groups nearest to it: a list's centre
#: near a group's edge is still found for the vectors just across it.
GROUPS_SEARCHED = 4
#: Below this many lists one k-means draws them all (it is cheap there).
TWO_LEVEL_MIN_LISTS = 256


class Lists:
    """A file's list centres, and how to assign vectors to them while it is built."""

    def __init__(self, centres: np.ndarray, groups: np.ndarray | None) -> None:
        """``groups``: the first level's centres (None: one level, assigned by the file's
        own flat list of centres)."""
        self.centres = centres
        self.assigner: Any = None
        if groups is not None:
            import faiss

            dims = centres.shape[1]
            self._grouping = faiss.IndexFlatIP(dims)
            self._grouping.add(groups)
            self.assigner = faiss.IndexIVFFlat(
                self._grouping, dims, groups.shape[0], faiss.METRIC_INNER_PRODUCT
            )
            self.assigner.nprobe = min(GROUPS_SEARCHED, groups.shape[0])
            self.assigner.add(centres)  # ids are the centres' order: the lists' numbers
            self.assigner.make_direct_map()  # faiss reads a centre back to code a residual

    @contextmanager
    def assigning(self, index: Any) -> Iterator[None]:
        """Inside the block ``index`` (whose flat quantiser holds ``centres``) assigns
        vectors to lists the two-level way; after it, by its own flat quantiser again. One
        level: by its own flat quantiser throughout."""
        if self.assigner is None:
            yield
            return
        flat = index.quantizer
        index.quantizer = self.assigner
        try:
            yield
        finally:
            index.quantizer = flat


def draw(sample: np.ndarray, lists: int, rounds: int) -> Lists:
    """``lists`` unit centres drawn by spherical k-means from ``sample`` (at least
    ``lists`` rows): in one level below ``TWO_LEVEL_MIN_LISTS``, else in two."""
    if lists < TWO_LEVEL_MIN_LISTS:
        return Lists(_kmeans(sample, lists, rounds), None)
    groups = _kmeans(sample, 1 << round(math.log2(math.sqrt(lists))), rounds)
    import faiss

    nearest = faiss.IndexFlatIP(sample.shape[1])
    nearest.add(groups)
    _, group_of = nearest.search(sample, 1)
    group_of = group_of[:, 0]
    order = np.argsort(group_of, kind="stable")
    sizes = np.bincount(group_of, minlength=groups.shape[0])
    shares = _shares(sizes, lists)
    centres, start = [], 0
    for size, share in zip(sizes.tolist(), shares.tolist(), strict=True):
        members = sample[order[start : start + size]]
        start += size
        if share:
            centres.append(_kmeans(members, share, rounds))
    return Lists(np.concatenate(centres), groups)


def _shares(sizes: np.ndarray, lists: int) -> np.ndarray:
    """How many of ``lists`` each group draws: in proportion to its sample (largest
    remainders first), at least one for a group with any sample, never more than its
    sample holds; they add up to ``lists``."""
    exact = sizes * (lists / sizes.sum())
    shares = np.minimum(np.maximum(np.floor(exact).astype(np.int64), sizes > 0), sizes)
    by_remainder = np.argsort(-(exact - np.floor(exact)), kind="stable")
    while (left := lists - int(shares.sum())) != 0:
        step = 1 if left > 0 else -1
        room = shares < sizes if step > 0 else shares > 1
        chosen = [g for g in by_remainder if room[g]][: abs(left)]
        shares[chosen] += step
    return shares


def _kmeans(vectors: np.ndarray, k: int, rounds: int) -> np.ndarray:
    """``k`` unit centres of ``vectors`` by spherical k-means (faiss's, its seed fixed)."""
    import faiss

    if k >= vectors.shape[0]:
        return np.ascontiguousarray(vectors[:k], dtype=np.float32)
    kmeans = faiss.Kmeans(
        vectors.shape[1], k, niter=rounds, spherical=True, min_points_per_centroid=1
    )
    kmeans.train(np.ascontiguousarray(vectors, dtype=np.float32))
    return np.asarray(kmeans.centroids, dtype=np.float32)
