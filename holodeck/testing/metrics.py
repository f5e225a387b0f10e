"""Suite metrics, as plain functions of plain numbers (so a hand-computed case checks them).

Retrieval metrics count only the cases that list ``expected_sources`` (and ran without an
error). For each such case the input is the best rank each expected source reached in any
tool call of the case (``None`` when it was not retrieved); results are already cut at each
tool's ``top_k``, so "retrieved" means "in the top k".
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

#: Best rank of each expected source of one case; None = not among the results.
SourceRanks = Sequence[int | None]


@dataclass(frozen=True)
class RetrievalMetrics:
    """Hit rate at top_k, mean reciprocal rank and recall over the cases with sources."""

    cases: int
    hit_rate: float | None
    mrr: float | None
    recall: float | None


def hit_rate(cases: Sequence[SourceRanks]) -> float | None:
    """Fraction of cases where any expected source was retrieved."""
    if not cases:
        return None
    return sum(1 for ranks in cases if any(r is not None for r in ranks)) / len(cases)


def reciprocal_rank(ranks: SourceRanks) -> float:
    """1 / rank of the first (best-ranked) expected source; 0 when none was retrieved."""
    found = [r for r in ranks if r is not None]
    return 1.0 / min(found) if found else 0.0


def mrr(cases: Sequence[SourceRanks]) -> float | None:
    """Mean reciprocal rank over the cases."""
    if not cases:
        return None
    return sum(reciprocal_rank(ranks) for ranks in cases) / len(cases)


def recall(cases: Sequence[SourceRanks]) -> float | None:
    """Mean, over the cases, of the fraction of expected sources retrieved."""
    scored = [ranks for ranks in cases if ranks]
    if not scored:
        return None
    return sum(sum(r is not None for r in ranks) / len(ranks) for ranks in scored) / len(scored)


def retrieval_metrics(cases: Sequence[SourceRanks]) -> RetrievalMetrics:
    """All three retrieval metrics at once."""
    return RetrievalMetrics(len(cases), hit_rate(cases), mrr(cases), recall(cases))


def percentile(values: Sequence[float], q: float) -> float | None:
    """The ``q``-th percentile (0-100) by linear interpolation between closest ranks.

    The same definition as numpy's default, so p50 of an even count is the mean of the
    middle two.
    """
    if not values:
        return None
    if not 0 <= q <= 100:
        raise ValueError("q must be between 0 and 100")
    ordered = sorted(values)
    pos = (len(ordered) - 1) * q / 100
    low, high = math.floor(pos), math.ceil(pos)
    return ordered[low] + (ordered[high] - ordered[low]) * (pos - low)


def pass_rate(passed: int, total: int) -> float | None:
    """Passed cases over all cases run (errors count as not passed)."""
    return passed / total if total else None
