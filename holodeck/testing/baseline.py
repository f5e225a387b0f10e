"""``holodeck test --baseline previous.json``: regressions gate CI even when thresholds are loose.

Each case that passed in the baseline report is compared, score by score (every evaluation
metric, and the ground_truth similarity), with the same case now. A score that dropped by
more than ``max_drop`` fails the case, naming the metric, both scores and the drop. Cases
and metrics new since the baseline, and metrics that did not score now or then (skipped,
errors), are not compared.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from holodeck.errors import ConfigError
from holodeck.testing.outcomes import BaselineResult, CaseResult, Regression

DEFAULT_MAX_DROP = 0.05
#: A drop this much over ``max_drop`` only (float noise) is not a regression.
_EPSILON = 1e-9


def load_baseline(path: Path) -> dict[str, Any]:
    """A JSON report of ``holodeck test --report``; anything else is a ConfigError."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ConfigError(
            f"--baseline {path}: no such file (write one with --report {path.name} on a good run)"
        ) from None
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        raise ConfigError(f"--baseline {path}: not a JSON report ({exc})") from None
    if not (isinstance(data, dict) and isinstance(data.get("cases"), list)):
        raise ConfigError(
            f"--baseline {path}: not a holodeck test report (no cases); use a report written "
            "by `holodeck test --report FILE.json`"
        )
    return data


class BaselineCheck:
    """The comparison with one baseline report, case by case as each case ends, so the line
    printed for a case already holds its whole verdict."""

    def __init__(self, baseline: dict[str, Any], path: str, max_drop: float) -> None:
        self.max_drop = max_drop
        self.outcome = BaselineResult(path=path, max_drop=max_drop)
        self._before = {
            c.get("name"): c
            for c in baseline["cases"]
            if isinstance(c, dict) and c.get("status") == "passed"
        }

    def apply(self, result: CaseResult) -> None:
        """Fail ``result`` (changed here) when one of its scores dropped by more than
        ``max_drop`` since the baseline."""
        from holodeck.testing.checks import Check

        before = self._before.get(result.case.name)
        if before is None or result.status == "error":
            return
        self.outcome.compared += 1
        old = _scores_in_report(before)
        found = [
            Regression(result.case.name, name, old[name], score)
            for name, score in scores_of(result).items()
            if name in old and old[name] - score > self.max_drop + _EPSILON
        ]
        if not found:
            return
        self.outcome.regressions += found
        detail = "; ".join(r.line(self.max_drop) for r in found)
        result.checks.append(Check("baseline", False, detail))
        result.status = "failed"
        result.reason = (
            f"{result.reason}; baseline: {detail}" if result.reason else f"baseline: {detail}"
        )


def scores_of(result: CaseResult) -> dict[str, float]:
    """The scores a case has now: its metrics that scored, and its ground_truth similarity."""
    scores = {
        m.name: m.score for m in result.metrics if m.score is not None and m.status != "error"
    }
    if result.ground_truth_score is not None:
        scores["ground_truth"] = result.ground_truth_score
    return scores


def _scores_in_report(case: dict[str, Any]) -> dict[str, float]:
    """The same scores as a JSON report holds them."""
    scores: dict[str, float] = {}
    for metric in case.get("metrics") or []:
        if (
            isinstance(metric, dict)
            and isinstance(metric.get("score"), int | float)
            and metric.get("status") in ("passed", "failed")
        ):
            scores[str(metric.get("name"))] = float(metric["score"])
    gt = case.get("ground_truth_score")
    if isinstance(gt, int | float):
        scores["ground_truth"] = float(gt)
    return scores
