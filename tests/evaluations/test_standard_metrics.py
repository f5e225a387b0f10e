"""The standard metrics, computed here: what a user's ground truth and answer score."""

from __future__ import annotations

from typing import Any

import pytest

from holodeck.config.evaluations import StandardMetric
from holodeck.evaluations.standard import MetricError, extract, score_standard


def metric(name: str, **flags: Any) -> StandardMetric:
    return StandardMetric(metric=name, **flags)


def score(name: str, answer: str, expected: str, **flags: Any) -> float:
    return score_standard(metric(name, **flags), answer, expected)[0]


def test_equality_is_exact_unless_asked_to_normalise() -> None:
    assert score("equality", "Approved", "Approved") == 1.0
    assert score("equality", "approved.", "Approved") == 0.0
    assert score("equality", "approved.", "Approved", case_insensitive=True) == 0.0
    flags = {"case_insensitive": True, "strip_punctuation": True, "strip_whitespace": True}
    assert score("equality", "  approved . ", "Approved", **flags) == 1.0
    assert score("equality", "Approved\n  by   Bob", "approved by bob", **flags) == 1.0


def test_equality_and_numeric_need_a_match_without_a_threshold() -> None:
    assert metric("equality").effective_threshold() == 1.0
    assert metric("numeric").effective_threshold() == 1.0
    assert metric("rouge").effective_threshold() is None  # reported, never failing
    assert metric("rouge", threshold=0.4).effective_threshold() == 0.4


def test_numeric_tolerances_percent_and_separators() -> None:
    assert score("numeric", "35.8", "35.8") == 1.0
    assert score("numeric", "35.9", "35.8") == 0.0
    assert score("numeric", "35.9", "35.8", absolute_tolerance=0.2) == 1.0
    assert score("numeric", "101", "100", relative_tolerance=0.02) == 1.0
    assert score("numeric", "103", "100", relative_tolerance=0.02) == 0.0
    assert score("numeric", "35.8%", "0.358", accept_percent=True) == 1.0
    assert score("numeric", "1,234,567.5", "1234567.5", accept_thousands_separators=True) == 1.0
    assert score("numeric", "1\u202f234", "1234", accept_thousands_separators=True) == 1.0


@pytest.mark.parametrize(
    ("answer", "flags", "message"),
    [
        ("35.8%", {}, "set accept_percent: true"),
        ("1,234", {}, "set accept_thousands_separators: true"),
        ("about forty", {}, "is not a number"),
        ("nan", {}, "not a finite number"),
    ],
)
def test_numeric_that_cannot_be_read_is_an_error_not_a_zero(
    answer: str, flags: dict[str, Any], message: str
) -> None:
    with pytest.raises(MetricError, match=message):
        score_standard(metric("numeric", **flags), answer, "1234")


def test_f1_counts_shared_tokens_without_case_punctuation_or_articles() -> None:
    assert score("f1_score", "The cat sat.", "a cat sat") == pytest.approx(1.0)
    # 3 shared of 4 answer tokens and 3 of 5 expected: 2PR/(P+R) with P=0.75, R=0.6.
    assert score("f1_score", "cat sat on mat", "cat sat on red rug") == pytest.approx(
        2 * 0.75 * 0.6 / 1.35, abs=1e-9
    )
    assert score("f1_score", "dog", "cat") == 0.0


def test_rouge_is_rouge_l_f_measure() -> None:
    # LCS "the cat on the mat" = 5 of 6 tokens each way.
    assert score("rouge", "The cat sat on the mat", "The cat is on the mat") == pytest.approx(
        5 / 6, abs=1e-9
    )
    assert score("rouge", "completely different words", "The cat is on the mat") == 0.0


def test_bleu_is_sacrebleu_sentence_bleu_on_a_0_to_1_scale() -> None:
    same = "The cat is on the mat today"
    assert score("bleu", same, same) == pytest.approx(1.0, abs=1e-9)
    near = score("bleu", "The cat sat on the mat today", same)
    assert 0.2 < near < 0.9
    assert score("bleu", "nothing alike here", same) < 0.1


def test_response_path_grades_one_field_of_a_json_answer() -> None:
    answer = '```json\n{"result": {"items": [{"value": "35.8%"}], "ok": true}}\n```'
    assert extract(answer, "result.items[0].value") == "35.8%"
    assert extract(answer, "result.ok") == "true"
    m = metric("numeric", response_path="result.items[0].value", accept_percent=True)
    assert score_standard(m, answer, "0.358")[0] == 1.0


@pytest.mark.parametrize(
    ("answer", "path", "message"),
    [
        ("The total is 12", "total", "the answer is not JSON"),
        ('{"total": 12}', "sum", "no key 'sum' in the answer \\(total\\)"),
        ('{"items": []}', "items[0]", "no item \\[0\\]"),
        ('{"items": [1]}', "items", "leads to an object or a list"),
    ],
)
def test_response_path_that_does_not_lead_to_a_value_is_an_error(
    answer: str, path: str, message: str
) -> None:
    with pytest.raises(MetricError, match=message):
        extract(answer, path)
