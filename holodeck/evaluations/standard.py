"""The standard metrics: the answer against the ground truth, computed here without an LLM.

- ``equality``: 1.0 when the two strings are equal (after the normalisations asked for).
- ``numeric``: 1.0 when the answer's number is within the tolerances of the expected one.
- ``f1_score``: token-level F1 (SQuAD's: lower case, no punctuation or articles).
- ``rouge``: ROUGE-L F-measure (Google's ``rouge-score``, as the original HoloDeck's ROUGE).
- ``bleu``: sentence BLEU with exponential smoothing (``sacrebleu``), scaled to 0-1.

``response_path`` first takes one field of a JSON answer. A value that cannot be read (an
answer that is not JSON, a missing key, text that is not a number) raises ``MetricError``:
the metric could not be computed, which is never the same as a score of 0.
"""

from __future__ import annotations

import json
import re
import string
from collections import Counter
from typing import Any

from holodeck.agent.structured import without_fence
from holodeck.config.evaluations import StandardMetric

#: Characters ``accept_thousands_separators`` ignores: comma, underscore, (narrow) NBSP.
_THOUSANDS = (",", "_", "\u00a0", "\u202f")
_PUNCTUATION = str.maketrans("", "", string.punctuation)
_ARTICLES = re.compile(r"\b(a|an|the)\b")
_PATH_TOKEN = re.compile(r"([A-Za-z_][\w-]*)|\[(\d+)\]")


class MetricError(ValueError):
    """A metric could not be computed for a case (not a low score: no score at all)."""


def score_standard(metric: StandardMetric, answer: str, expected: str) -> tuple[float, str]:
    """The metric's score (0-1) and a short reason a person reads in the report."""
    if metric.response_path:
        answer = extract(answer, metric.response_path)
    name = metric.metric
    if name == "equality":
        left, right = _normalized(answer, metric), _normalized(expected, metric)
        if left == right:
            return 1.0, "equal"
        return 0.0, f"{_short(answer)} is not {_short(expected)}"
    if name == "numeric":
        got = parse_number(answer, metric, "the answer")
        want = parse_number(expected, metric, "the ground_truth")
        diff = abs(got - want)
        ok = diff <= metric.absolute_tolerance or (
            metric.relative_tolerance > 0 and diff <= metric.relative_tolerance * abs(want)
        )
        return (1.0 if ok else 0.0), f"{got:g} vs {want:g} (difference {diff:g})"
    if name == "f1_score":
        return f1_score(answer, expected), "token F1 with the ground_truth"
    if name == "rouge":
        return rouge_l(answer, expected), "ROUGE-L F-measure with the ground_truth"
    if name == "bleu":
        return bleu(answer, expected), "sentence BLEU with the ground_truth"
    raise MetricError(f"unknown standard metric {name!r}")  # refused when the config loads


def extract(answer: str, path: str) -> str:
    """The value at ``path`` (``result.items[0].value``) of a JSON answer, as text."""
    text = without_fence(answer)
    try:
        cursor: Any = json.loads(text)
    except ValueError:
        raise MetricError(
            f"response_path {path}: the answer is not JSON ({_short(answer)})"
        ) from None
    for key, index in _PATH_TOKEN.findall(path):
        if key:
            if not isinstance(cursor, dict) or key not in cursor:
                have = ", ".join(sorted(cursor)) if isinstance(cursor, dict) else "not an object"
                raise MetricError(f"response_path {path}: no key {key!r} in the answer ({have})")
            cursor = cursor[key]
        else:
            i = int(index)
            if not isinstance(cursor, list) or i >= len(cursor):
                raise MetricError(f"response_path {path}: no item [{i}] in the answer")
            cursor = cursor[i]
    if isinstance(cursor, dict | list):
        raise MetricError(f"response_path {path}: leads to an object or a list, not a value")
    if isinstance(cursor, bool):
        return "true" if cursor else "false"
    return "null" if cursor is None else str(cursor)


def parse_number(text: str, metric: StandardMetric, what: str) -> float:
    """A number written as text, with the percent and separator habits the metric allows."""
    raw = text.strip()
    percent = raw.endswith("%")
    if percent:
        if not metric.accept_percent:
            raise MetricError(f"{what} {_short(text)} is a percentage; set accept_percent: true")
        raw = raw[:-1].strip()
    if any(ch in raw for ch in _THOUSANDS):
        if not metric.accept_thousands_separators:
            raise MetricError(
                f"{what} {_short(text)} has thousands separators; set "
                "accept_thousands_separators: true"
            )
        for ch in _THOUSANDS:
            raw = raw.replace(ch, "")
    try:
        value = float(raw)
    except ValueError:
        raise MetricError(f"{what} {_short(text)} is not a number") from None
    if value != value or value in (float("inf"), float("-inf")):
        raise MetricError(f"{what} {_short(text)} is not a finite number")
    return value / 100.0 if percent else value


def f1_score(answer: str, expected: str) -> float:
    """SQuAD's token F1: the harmonic mean of token precision and recall."""
    got, want = _squad_tokens(answer), _squad_tokens(expected)
    if not got or not want:
        return float(got == want)
    common = sum((Counter(got) & Counter(want)).values())
    if common == 0:
        return 0.0
    precision, recall = common / len(got), common / len(want)
    return 2 * precision * recall / (precision + recall)


#: The standard metrics computed by an optional package (the extra holodeck[metrics]).
METRIC_MODULES = {"rouge": "rouge_score", "bleu": "sacrebleu"}


def rouge_l(answer: str, expected: str) -> float:
    """ROUGE-L F-measure, with rouge-score's own tokenizer (lower case, words and digits)."""
    from rouge_score import rouge_scorer  # imported when used: it loads NLTK's stemmer

    scorer = rouge_scorer.RougeScorer(["rougeL"], use_stemmer=False)
    return float(scorer.score(expected, answer)["rougeL"].fmeasure)


def bleu(answer: str, expected: str) -> float:
    """Sentence BLEU (sacrebleu, exponential smoothing) on a 0-1 scale."""
    import sacrebleu

    return float(sacrebleu.sentence_bleu(answer, [expected], smooth_method="exp").score) / 100.0


def _normalized(text: str, metric: StandardMetric) -> str:
    if metric.case_insensitive:
        text = text.casefold()
    if metric.strip_punctuation:
        text = text.translate(_PUNCTUATION)
    if metric.strip_whitespace:
        text = " ".join(text.split())
    return text


def _squad_tokens(text: str) -> list[str]:
    text = text.lower().translate(_PUNCTUATION)
    return _ARTICLES.sub(" ", text).split()


def _short(text: str, limit: int = 60) -> str:
    flat = " ".join(text.split())
    return repr(flat if len(flat) <= limit else flat[: limit - 1] + "…")
