"""Compare two rankings as far as they are promised, on any CPU.

A search promises its hits and their order, with scores that float arithmetic computes. Two
runs that add the same products in another order (numpy blocking a matrix product by row
count, another BLAS kernel, another batch's padding in the model) agree on a float32 score to
about 1e-6, not exactly, so:

- scores are compared with a stated tolerance, never rounded and compared exactly;
- the order is compared only between scores that differ by more than that tolerance: hits
  whose scores are within it of each other are a tie, and a tie's order is not promised;
- a tie straddling the cut (the k-th hit ties the first one left out) may bring in another
  hit of that score.
"""

from __future__ import annotations

from collections.abc import Sequence

import pytest

#: Cosine similarity of float32 unit vectors: the sum of 384 products, each exact to about
#: 6e-8 relative, differs by a few 1e-7 between summation orders; 1e-5 is far above that
#: and far below any gap a user could see (scores are shown to two decimals).
FLOAT32_SCORE_TOL = 1e-5

Ranking = Sequence[tuple[str, float]]


def tie_groups(got: Ranking, want: Ranking, tol: float) -> list[range]:
    """Runs of positions whose scores are within ``tol`` of their neighbour's in either
    ranking: inside a run the order is not promised."""
    groups: list[range] = []
    start = 0
    for i in range(1, len(want) + 1):
        if i < len(want) and (
            abs(want[i][1] - want[i - 1][1]) <= tol or abs(got[i][1] - got[i - 1][1]) <= tol
        ):
            continue
        groups.append(range(start, i))
        start = i
    return groups


def assert_same_ranking(got: Ranking, want: Ranking, tol: float = FLOAT32_SCORE_TOL) -> None:
    """``got`` ranks as ``want`` does: as many hits; at each position a score within
    ``tol``; the same hits in the same order except inside ties (within ``tol``); a hit
    found in both has the same score in both (within ``tol``)."""
    assert len(got) == len(want), f"{len(got)} hits, expected {len(want)}:\n{got[:10]}\n{want[:10]}"
    for rank, ((got_id, got_score), (want_id, want_score)) in enumerate(
        zip(got, want, strict=True), 1
    ):
        assert abs(got_score - want_score) <= tol, (
            f"rank {rank}: score {got_score!r} ({got_id}), expected {want_score!r} ({want_id})"
            f" within {tol}"
        )
    groups = tie_groups(got, want, tol)
    for n, group in enumerate(groups):
        got_ids = {got[i][0] for i in group}
        want_ids = {want[i][0] for i in group}
        if n == len(groups) - 1 and len(want) and got_ids != want_ids:
            # A tie at the cut: a hit left out of one ranking may tie the last one in.
            continue
        assert got_ids == want_ids, (
            f"ranks {group.start + 1}-{group.stop}: {sorted(got_ids)}, expected "
            f"{sorted(want_ids)}:\n{got[:10]}\n{want[:10]}"
        )
    want_scores = dict(want)
    for chunk_id, score in got:
        if chunk_id in want_scores:
            assert abs(score - want_scores[chunk_id]) <= tol, (chunk_id, score, want_scores)


def approx_floats(document: object, tol: float = FLOAT32_SCORE_TOL) -> object:
    """``document`` (JSON: dicts, lists, strings, numbers) with every float replaced by
    ``pytest.approx(value, abs=tol)``, so ``got == approx_floats(want)`` compares two
    answers of two processes (the CLI's model session and a server's are built with other
    graph optimisations, so their float32 sums differ in the 7th digit) field by field."""
    if isinstance(document, float):
        return pytest.approx(document, abs=tol)
    if isinstance(document, dict):
        return {key: approx_floats(value, tol) for key, value in document.items()}
    if isinstance(document, list):
        return [approx_floats(value, tol) for value in document]
    return document
