"""``type: code`` metrics: a Python function of the project grades a turn (the original
HoloDeck's code graders, with its signature exactly).

``grader: module.path:function`` names it; the module is imported with agent.yaml's folder
on ``sys.path`` (as the original does), once, when the cases load, so a wrong name is a
config error before any work. The function is called once per turn with a frozen
``GraderContext`` (the turn's input, the agent's answer, the ground truth, the tool calls
and the passages) and returns ``True``/``False``, a score 0-1 (passing at the threshold,
else at 0.5) or a ``GraderResult``. It runs off the event loop in a daemon thread of its
own (``holodeck.tools.worker``) for at most the metric's ``timeout``: whatever it raises,
or running past the limit, is ``GraderFailed``, a failed metric with the message (the case
an error with ``fail_on_error: true``), never a crashed run.

Graders written for the original import these types from
``holodeck.lib.test_runner.code_grader``, which re-exports them.
"""

from __future__ import annotations

import importlib
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from holodeck.config.evaluations import CodeMetric
from holodeck.evaluations.standard import MetricError
from holodeck.tools import worker


@dataclass(frozen=True)
class ToolInvocation:
    """One tool call of the turn: its name, its arguments and what it returned."""

    name: str
    args: dict[str, Any] = field(default_factory=dict)
    result: Any = None


@dataclass(frozen=True)
class GraderContext:
    """What a grader is given about one turn (read-only: tuples, a frozen dataclass)."""

    turn_input: str
    agent_response: str
    ground_truth: str | None
    tool_invocations: tuple[ToolInvocation, ...]
    retrieval_context: tuple[str, ...] | None
    turn_index: int
    test_case_name: str | None
    turn_config: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class GraderResult:
    """What a grader may return: a score 0-1, and optionally its own verdict and reason."""

    score: float
    passed: bool | None = None
    reason: str | None = None
    details: dict[str, Any] | None = None


class GraderFailed(MetricError):
    """The grader raised, ran past its time, or returned something that is not a grade."""


def resolve(metric: CodeMetric, root: Path) -> str | None:
    """Import the grader (once; kept on the metric); what is wrong when it cannot be."""
    if metric._function is not None:
        return None
    module_name, _, function_name = metric.grader.partition(":")
    folder = str(root)
    if folder not in sys.path:
        sys.path.insert(0, folder)  # as the original: the agent's folder is importable
    try:
        module = importlib.import_module(module_name)
    except Exception as exc:
        return (
            f"grader {metric.grader!r}: cannot import {module_name!r} from {folder} "
            f"({type(exc).__name__}: {exc})"
        )
    function = getattr(module, function_name, None)
    if not callable(function):
        return f"grader {metric.grader!r}: {module_name} has no function {function_name!r}"
    metric._function = function
    return None


async def grade(metric: CodeMetric, context: GraderContext) -> tuple[float, bool | None, str]:
    """The grader's score, its own verdict (None: the threshold decides) and reason."""
    assert metric._function is not None, "resolve() the grader first"
    try:
        raw = await worker.call(metric.label, lambda: metric._function(context), {}, metric.timeout)
    except worker.TimedOut:
        raise GraderFailed(
            f"grader {metric.grader} did not return within {metric.timeout:g} s "
            "(raise its timeout:, or make it faster)"
        ) from None
    except worker.Ended as exc:
        raise GraderFailed(f"grader {metric.grader} ended: {exc.cause!r}") from None
    except Exception as exc:
        raise GraderFailed(f"grader {metric.grader} raised {type(exc).__name__}: {exc}") from None
    return _graded(metric, raw)


def _graded(metric: CodeMetric, raw: Any) -> tuple[float, bool | None, str]:
    """A grader's return value as (score, verdict, reason), or GraderFailed."""
    if isinstance(raw, GraderResult):
        score, passed, reason = raw.score, raw.passed, raw.reason or ""
    elif isinstance(raw, bool):
        score, passed, reason = float(raw), raw, ""
    elif isinstance(raw, int | float):
        score, passed, reason = float(raw), None, ""
    else:
        raise GraderFailed(
            f"grader {metric.grader} returned {type(raw).__name__}; return a bool, a score "
            "0-1 or a GraderResult"
        )
    if not isinstance(score, int | float) or not 0.0 <= score <= 1.0:
        raise GraderFailed(f"grader {metric.grader} returned score {score!r}; scores are 0-1")
    return float(score), passed, reason or f"graded by {metric.grader}"
