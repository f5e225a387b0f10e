"""A prototype search of holodeck's inverted file, measured by bench_ivf_rescoring.py (not
the product's search path): reading far enough to be exact in practice, and no further.

The lists are read in the order of their centres' similarity to the query, in bands that
double in size. Each band's best candidates (by their 4-bit codes' estimates) are re-scored
exactly wherever the codes leave the order in doubt: the first few, then every candidate
whose estimate lies within a margin of the exact k-th best, the margin being a multiple of the
largest code error this query has shown. Reading stops when a whole band's best estimate falls
below that line: the lists further out are further from the query still. A query near stored
chunks stops after a band or two; one about nothing in the corpus (all chunks about equally
far) keeps reading, as it must to find its true neighbours. A filter (faiss's id selector)
is applied inside the scan, so a band holding no chunk of the scope says nothing and the
reading goes on.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

#: Candidates asked of each band: this many times k (at least MIN_POOL); a band whose last
#: candidate is still above the line is asked again for four times as many.
POOL_FACTOR = 4
MIN_POOL = 40
#: Candidates re-scored before the code error is known: this many times k.
FIRST_FACTOR = 2
#: How many times the largest code error seen the margin below the k-th best exact score is.
MARGIN_FACTOR = 1.5

#: Reads the exact vectors of some ids: the ids still there and their float32 vectors.
ReadExact = Callable[[np.ndarray], tuple[np.ndarray, np.ndarray]]


class _Candidates:
    """What one search has seen: every candidate's estimate, and the exact scores and
    vectors of those re-scored."""

    def __init__(self, query: np.ndarray, k: int, read: ReadExact) -> None:
        self.query = query
        self.k = k
        self.read = read
        self.estimates: dict[int, float] = {}
        self.exact: dict[int, float] = {}  # -inf: gone since the file was made
        self.vectors: dict[int, np.ndarray] = {}

    def add(self, ids: np.ndarray, estimates: np.ndarray) -> None:
        for key, value in zip(ids.tolist(), estimates.tolist(), strict=True):
            self.estimates.setdefault(key, value)

    def line(self) -> float:
        """The estimate below which a candidate cannot be among the best ``k`` (as far as
        the code error seen tells): -inf until ``k`` candidates are scored exactly."""
        found = [s for s in self.exact.values() if s > -np.inf]
        if len(found) < self.k:
            return -np.inf
        kth = float(np.partition(np.array(found), len(found) - self.k)[len(found) - self.k])
        error = max(
            abs(self.estimates[key] - score) for key, score in self.exact.items() if score > -np.inf
        )
        return kth - MARGIN_FACTOR * error

    def settle(self) -> None:
        """Re-score exactly the first candidates and then every one above the line, until
        the line stops moving down past unscored candidates."""
        ranked = sorted(self.estimates, key=lambda key: -self.estimates[key])
        need = [key for key in ranked[: FIRST_FACTOR * self.k] if key not in self.exact]
        while need:
            self._score(np.array(need, dtype=np.int64))
            line = self.line()
            need = [key for key in ranked if key not in self.exact and self.estimates[key] >= line]
            if line == -np.inf:  # too few left after the gone ones: score the next few
                need = need[: FIRST_FACTOR * self.k]

    def _score(self, ids: np.ndarray) -> None:
        found, vectors = self.read(ids)
        scores = vectors @ self.query if found.size else np.zeros(0, dtype=np.float32)
        for key in ids.tolist():
            self.exact[key] = -np.inf
        for key, score, vector in zip(found.tolist(), scores.tolist(), vectors, strict=True):
            self.exact[key] = score
            self.vectors[key] = vector

    def best(self) -> tuple[np.ndarray, np.ndarray]:
        """The best ``k`` scored exactly: their ids and float32 vectors, best first."""
        found = sorted(
            (key for key, score in self.exact.items() if score > -np.inf),
            key=lambda key: (-self.exact[key], key),
        )[: self.k]
        dims = self.query.shape[0]
        if not found:
            return np.zeros(0, np.int64), np.zeros((0, dims), np.float32)
        return np.array(found, dtype=np.int64), np.stack([self.vectors[key] for key in found])


def nearest(
    view: Any,
    query: np.ndarray,
    k: int,
    first: int,
    chosen: Any,
    read: ReadExact,
    gone: np.ndarray,
) -> tuple[np.ndarray, np.ndarray]:
    """The best ``k`` entries of the inverted file ``view`` for ``query`` among the ``chosen``
    ids (a faiss selector, None: all), less ``gone``: their ids and exact vectors (from
    ``read``), best first. ``first`` lists are read first; then twice as many each band."""
    lists = int(view.nlist)
    q = np.ascontiguousarray(query[None, :], dtype=np.float32)
    centre_scores, order = view.quantizer.search(q, lists)
    seen = _Candidates(query, k, read)
    pool = max(POOL_FACTOR * k, MIN_POOL)
    start, size = 0, max(1, min(first, lists))
    while start < lists:
        stop = min(lists, start + size)
        wanted = pool
        while True:
            estimates, ids = _read_band(view, q, order, centre_scores, start, stop, wanted, chosen)
            keep = ~np.isin(ids, gone)
            seen.add(ids[keep], estimates[keep])
            seen.settle()
            full = ids.size >= wanted
            if not (full and estimates[-1] >= seen.line()):
                break
            wanted *= 4  # the band holds more above the line than were asked for
        if estimates.size and estimates[0] < seen.line():
            break  # nothing in this band was near: the lists further out are further still
        start, size = stop, size * 2
    return seen.best()


def _read_band(
    view: Any,
    q: np.ndarray,
    order: np.ndarray,
    centre_scores: np.ndarray,
    start: int,
    stop: int,
    wanted: int,
    chosen: Any,
) -> tuple[np.ndarray, np.ndarray]:
    """The ``wanted`` best estimates (and ids) of the lists ``order[start:stop]``."""
    import faiss

    band = stop - start
    assign = np.ascontiguousarray(order[:, start:stop])
    centres = np.ascontiguousarray(centre_scores[:, start:stop])
    distances = np.empty((1, wanted), dtype=np.float32)
    labels = np.empty((1, wanted), dtype=np.int64)
    params = faiss.SearchParametersIVF()
    params.nprobe = band
    if chosen is not None:
        params.sel = chosen
    view.search_preassigned_c(
        1, faiss.swig_ptr(q), wanted, faiss.swig_ptr(assign), faiss.swig_ptr(centres),
        faiss.swig_ptr(distances), faiss.swig_ptr(labels), False, params, None,
    )  # fmt: skip
    found = labels[0] >= 0
    return distances[0][found], labels[0][found]
