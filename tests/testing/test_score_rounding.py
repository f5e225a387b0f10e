"""One rounding for every score a test run shows (issue 42, item 10): the reports store a
score to 4 digits, and every line (a metric's reason, a baseline drop, the console and the
reports) reads that stored value, so a score on a rounding edge never reads 0.37 in one
place and 0.38 in another."""

from __future__ import annotations

from holodeck.evaluations.evaluator import MetricResult
from holodeck.testing.outcomes import Regression
from holodeck.testing.reports import _round

EDGE = 0.37496  # stored as 0.375: 0.38 at 2 decimals, while the raw value reads 0.37


def test_a_score_on_a_rounding_edge_reads_as_the_report_stores_it() -> None:
    stored = _round(EDGE)
    assert stored is not None and f"{stored:.2f}" == "0.38"  # what JSON, JUnit, Markdown show
    metric = MetricResult("faithfulness", "rag", "failed", EDGE, 0.8, "3 of 8 claims")
    assert metric.line().startswith("faithfulness 0.38 < 0.80")
    drop = Regression("invoices", "faithfulness", 1.0, EDGE)
    assert drop.line(0.05).startswith("faithfulness 1.00 -> 0.38 since the baseline")
