"""Suite metrics against a case computed by hand."""

from __future__ import annotations

import pytest

from holodeck.testing import metrics

# Four cases with expected_sources: the best rank each expected source reached.
#   case A: one source at rank 1          -> hit, RR 1,    recall 1
#   case B: one source at rank 3          -> hit, RR 1/3,  recall 1
#   case C: one source not retrieved      -> miss, RR 0,   recall 0
#   case D: two sources, ranks 2 and None -> hit, RR 1/2,  recall 1/2
CASES: list[list[int | None]] = [[1], [3], [None], [2, None]]


def test_hit_rate_mrr_recall_by_hand() -> None:
    assert metrics.hit_rate(CASES) == pytest.approx(3 / 4)
    assert metrics.mrr(CASES) == pytest.approx((1 + 1 / 3 + 0 + 1 / 2) / 4)  # 0.458333...
    assert metrics.recall(CASES) == pytest.approx((1 + 1 + 0 + 0.5) / 4)  # 0.625
    all_three = metrics.retrieval_metrics(CASES)
    assert all_three.cases == 4
    assert all_three.hit_rate == pytest.approx(0.75)
    assert all_three.mrr == pytest.approx(0.4583333)
    assert all_three.recall == pytest.approx(0.625)


def test_reciprocal_rank_uses_the_best_ranked_source() -> None:
    assert metrics.reciprocal_rank([4, 2, None]) == pytest.approx(0.5)
    assert metrics.reciprocal_rank([None, None]) == 0.0


def test_no_cases_means_no_metric_not_zero() -> None:
    assert metrics.retrieval_metrics([]) == metrics.RetrievalMetrics(0, None, None, None)
    assert metrics.pass_rate(0, 0) is None
    assert metrics.percentile([], 50) is None


def test_latency_percentiles_by_hand() -> None:
    latencies = [0.4, 0.1, 0.3, 0.2]  # sorted: 0.1 0.2 0.3 0.4
    assert metrics.percentile(latencies, 50) == pytest.approx(0.25)  # between 0.2 and 0.3
    assert metrics.percentile(latencies, 95) == pytest.approx(0.3 + 0.1 * 0.85)  # pos 2.85
    assert metrics.percentile([0.7], 95) == pytest.approx(0.7)
    with pytest.raises(ValueError):
        metrics.percentile(latencies, 101)
