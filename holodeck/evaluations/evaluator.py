"""Runs a test case's evaluation metrics on what the case produced, and says how each went.

A case's metrics are the agent's ``evaluations.metrics`` with the case's own ``evaluations``
added, a case metric replacing the agent's of the same kind (same standard ``metric``, geval
``name`` or rag ``metric_type``); disabled ones are left out. Each gives a ``MetricResult``:

- ``passed`` / ``failed``: a score, held to the metric's threshold (none: reported only);
- ``skipped``: the case lacks what the metric reads (a ``ground_truth``), said in the reason;
- ``error``: the metric could not be computed (judge unreachable, off-schema reply, an
  answer that is not the JSON ``response_path`` expects). With ``fail_on_error`` (the
  default) the case is then an error; without, a warning.

The passages the rag and geval metrics read are the case's ``retrieval_context`` when it
has one, else the chunks the case's tool calls returned, in the order they came.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from holodeck import tracing
from holodeck.agent.loop import ToolCallRecord
from holodeck.config.cases import TestCase, Turn
from holodeck.config.envsubst import environment_for
from holodeck.config.evaluations import CodeMetric, GEvalMetric, RagMetric, StandardMetric
from holodeck.config.llm import ModelConfig
from holodeck.config.loader import Project
from holodeck.evaluations import code_grader, score_text
from holodeck.evaluations.cache import JudgeCache
from holodeck.evaluations.geval import StepsStore, score_geval
from holodeck.evaluations.judge import Judge, JudgeError, Usage
from holodeck.evaluations.rag import JudgedScore, RagInputs, score_rag
from holodeck.evaluations.standard import METRIC_MODULES, MetricError, score_standard
from holodeck.extras import require
from holodeck.redact import redact

log = logging.getLogger("holodeck.evaluations")

AnyMetric = StandardMetric | GEvalMetric | RagMetric | CodeMetric
MetricStatus = Literal["passed", "failed", "error", "skipped"]


@dataclass
class MetricResult:
    """How one metric judged one case."""

    name: str  # rouge, faithfulness, or the geval's name
    type: str  # standard | geval | rag | code
    status: MetricStatus
    score: float | None
    threshold: float | None
    reason: str
    judge: str | None = None  # provider:name of the judge, for judged metrics
    fail_on_error: bool = True

    def line(self) -> str:
        """``faithfulness 0.40 < 0.80: reason``, as failure reasons and reports show it."""
        if self.status == "error":
            return f"{self.name}: error: {self.reason}"
        if self.status == "skipped":
            return f"{self.name}: skipped: {self.reason}"
        assert self.score is not None
        if self.threshold is None:
            return f"{self.name} {score_text(self.score)}: {self.reason}"
        sign = ">=" if self.status == "passed" else "<"
        shown = f"{score_text(self.score)} {sign} {score_text(self.threshold)}"
        return f"{self.name} {shown}: {self.reason}"


def case_metrics(project: Project, case: Turn) -> list[AnyMetric]:
    """The metrics a case (one of its ``steps``: the case, or one turn) is held to: the
    agent's, with the case's (and turn's) added or overriding."""
    merged: dict[str, AnyMetric] = {}
    evaluations = project.agent.evaluations
    for metric in evaluations.metrics if evaluations else []:
        merged[metric.key] = metric
    for metric in case.evaluations or []:
        merged[metric.key] = metric
    return [m for m in merged.values() if m.enabled]


def judge_model(project: Project, metric: AnyMetric) -> ModelConfig | None:
    """The metric's judge: its own ``model``, else ``evaluations.model``, else the agent's."""
    evaluations = project.agent.evaluations
    return metric.model or (evaluations.model if evaluations else None) or project.agent.model


def reads_ground_truth(metric: AnyMetric) -> bool:
    """Whether the metric compares with the case's ``ground_truth``."""
    if isinstance(metric, RagMetric):
        return metric.metric_type in ("contextual_precision", "contextual_recall")
    if isinstance(metric, GEvalMetric):
        return "expected_output" in metric.evaluation_params
    return isinstance(metric, StandardMetric)


def missing_input(metric: AnyMetric, case: Turn) -> str | None:
    """Why this case cannot be scored by the metric (None: it can)."""
    if case.ground_truth or isinstance(metric, CodeMetric):  # a grader decides for itself
        return None
    if isinstance(metric, StandardMetric):
        return "the case has no ground_truth to compare the answer with"
    if isinstance(metric, RagMetric) and metric.metric_type in (
        "contextual_precision",
        "contextual_recall",
    ):
        return f"{metric.metric_type} needs the case's ground_truth"
    if isinstance(metric, GEvalMetric) and "expected_output" in metric.evaluation_params:
        return "evaluation_params has expected_output but the case has no ground_truth"
    return None


def reads_answer(metric: AnyMetric) -> bool:
    """Whether the metric judges the agent's answer (impossible in retrieval-only mode)."""
    if isinstance(metric, StandardMetric):
        return True
    if isinstance(metric, RagMetric):
        return metric.needs_answer
    if isinstance(metric, CodeMetric):
        return False  # given the answer when there is one, "" without
    return "actual_output" in metric.evaluation_params


def metric_problem(project: Project, metric: AnyMetric) -> str | None:
    """A configuration mistake that stops the metric from ever running (None: fine).

    A code metric's grader is imported here, so a wrong name is found before any work.
    """
    if isinstance(metric, CodeMetric):
        return code_grader.resolve(metric, project.root)
    if metric.uses_judge and judge_model(project, metric) is None:
        return (
            f"{metric.type} metric {metric.label!r} needs a judge model: add evaluations.model: "
            "(any provider model: accepts), a model: on the metric, or a model: for the agent"
        )
    if project.agent.model is None and reads_answer(metric):
        what = (
            "evaluation_params has actual_output"
            if isinstance(metric, GEvalMetric)
            else "it judges the agent's answer"
        )
        return (
            f"{metric.type} metric {metric.label!r}: {what}, and without a model: holodeck test "
            "runs retrieval-only (no answer); add a model:, or keep only contextual_relevancy, "
            "contextual_precision, contextual_recall and geval metrics without actual_output"
        )
    return None


class Evaluator:
    """The metrics of one run; build it before ingesting so a bad judge config comes first."""

    def __init__(self, project: Project, use_cache: bool = True) -> None:
        self.project = project
        self.usage = Usage()
        self.cache = JudgeCache(project.root, read=use_cache)
        self.steps = StepsStore(project.root)
        self._env = environment_for(project.root)
        self._judges: dict[str, Judge] = {}

    def judge_for(self, metric: AnyMetric) -> Judge:
        """The (shared) judge of a metric; a ConfigError when it has none or no key."""
        model = judge_model(self.project, metric)
        if model is None:  # refused when the cases load; kept for library callers
            raise JudgeError(f"{metric.label} needs a judge: add evaluations.model")
        key = model.model_dump_json()
        if key not in self._judges:
            self._judges[key] = Judge(model, self._env, self.cache, self.usage)
        return self._judges[key]

    def prepare(self, cases: Sequence[TestCase]) -> None:
        """Resolve every judge the cases need now: a missing key is an error before any work."""
        for case in cases:
            for step in case.steps:
                for metric in case_metrics(self.project, step):
                    if metric.uses_judge:
                        self.judge_for(metric)
                    if isinstance(metric, StandardMetric) and metric.metric in METRIC_MODULES:
                        module = METRIC_MODULES[metric.metric]
                        require("metrics", module, feature=f"metric {metric.metric}")

    @property
    def judges(self) -> list[str]:
        """``provider:name`` of the judges this run uses."""
        return [j.label for j in self._judges.values()]

    async def close(self) -> None:
        """Close the judges' HTTP clients and the cache."""
        for judge in self._judges.values():
            await judge.close()
        self.cache.close()

    async def evaluate(
        self,
        case: Turn,
        answer: str | None,
        calls: Sequence[ToolCallRecord],
        name: str = "",
        turn_index: int = 0,
    ) -> list[MetricResult]:
        """Every metric of one of a case's ``steps`` (the case, or its turn ``turn_index``,
        0-based, which ``name`` names in warnings), concurrently; results in the metrics'
        order."""
        metrics = case_metrics(self.project, case)
        if not metrics:
            return []
        passages = list(case.retrieval_context or retrieved_passages(calls))
        context = _grader_context(case, answer, calls, passages, name, turn_index)
        return list(
            await asyncio.gather(
                *(self._one(m, case, answer, passages, name, context) for m in metrics)
            )
        )

    async def _one(
        self,
        metric: AnyMetric,
        case: Turn,
        answer: str | None,
        passages: list[str],
        name: str,
        context: code_grader.GraderContext,
    ) -> MetricResult:
        """One metric of one case, in a ``holodeck.evaluation`` span."""
        attributes = {
            "holodeck.evaluation.name": metric.label,
            "holodeck.evaluation.type": metric.type,
        }
        with tracing.span(f"holodeck.evaluation {metric.label}", attributes) as span:
            result = await self._measure(metric, case, answer, passages, name, context)
            span.set_all(
                {
                    "holodeck.evaluation.status": result.status,
                    "holodeck.evaluation.score": result.score,
                    "holodeck.evaluation.threshold": result.threshold,
                    "holodeck.evaluation.passed": result.status == "passed",
                    "holodeck.evaluation.judge": result.judge,
                }
            )
            span.evaluation_content("holodeck.evaluation.reason", result.reason)
            return result

    async def _measure(
        self,
        metric: AnyMetric,
        case: Turn,
        answer: str | None,
        passages: list[str],
        name: str,
        context: code_grader.GraderContext,
    ) -> MetricResult:
        threshold = metric.effective_threshold()
        judge = self.judge_for(metric) if metric.uses_judge else None
        result = MetricResult(
            name=metric.label,
            type=metric.type,
            status="skipped",
            score=None,
            threshold=threshold,
            reason="",
            judge=judge.label if judge else None,
            fail_on_error=metric.fail_on_error,
        )
        why_not = missing_input(metric, case)
        if why_not:
            result.reason = why_not
            return result
        if isinstance(metric, CodeMetric):
            return await self._graded(metric, context, result, name)
        try:
            scored = await self._score(metric, judge, case, answer, passages)
        except (JudgeError, MetricError) as exc:
            result.status = "error"
            result.reason = redact(str(exc))
            if not metric.fail_on_error:
                log.warning(
                    "Test case %s: metric %s could not be computed (fail_on_error: false): %s",
                    name,
                    metric.label,
                    result.reason,
                )
            return result
        result.score = min(1.0, max(0.0, scored.score))
        keep_reason = not isinstance(metric, RagMetric) or metric.include_reason
        result.reason = scored.reason if keep_reason else ""
        result.status = "passed" if threshold is None or result.score >= threshold else "failed"
        return result

    async def _graded(
        self,
        metric: CodeMetric,
        context: code_grader.GraderContext,
        result: MetricResult,
        name: str,
    ) -> MetricResult:
        """A code metric: the grader's verdict, else its score against the threshold (0.5
        without one, as in the original); a grader that fails is a failed metric."""
        problem = code_grader.resolve(metric, self.project.root)  # library callers
        try:
            if problem:
                raise code_grader.GraderFailed(problem)
            score, passed, reason = await code_grader.grade(metric, context)
        except code_grader.GraderFailed as exc:
            result.reason = redact(str(exc))
            if metric.fail_on_error:
                result.status = "error"
                return result
            log.warning("Test case %s: metric %s failed: %s", name, metric.label, result.reason)
            result.status, result.score = "failed", 0.0
            return result
        threshold = result.threshold if result.threshold is not None else 0.5
        result.score, result.reason = score, redact(reason)
        result.status = "passed" if (score >= threshold if passed is None else passed) else "failed"
        return result

    async def _score(
        self,
        metric: AnyMetric,
        judge: Judge | None,
        case: Turn,
        answer: str | None,
        passages: list[str],
    ) -> JudgedScore:
        if isinstance(metric, StandardMetric):
            score, reason = score_standard(metric, answer or "", case.ground_truth or "")
            return JudgedScore(score, reason)
        assert judge is not None
        if isinstance(metric, RagMetric):
            inputs = RagInputs(case.input, answer, case.ground_truth, passages)
            return await score_rag(metric.metric_type, judge, inputs)
        assert isinstance(metric, GEvalMetric)
        steps = await self.steps.steps_for(metric, judge)
        values = {
            "input": case.input,
            "actual_output": answer,
            "expected_output": case.ground_truth,
            "retrieval_context": passages,
        }
        return await score_geval(metric, judge, steps, values)


def _grader_context(
    case: Turn,
    answer: str | None,
    calls: Sequence[ToolCallRecord],
    passages: list[str],
    name: str,
    turn_index: int,
) -> code_grader.GraderContext:
    """What a code grader is given about one turn (the original's ``GraderContext``)."""
    return code_grader.GraderContext(
        turn_input=case.input,
        agent_response=answer or "",
        ground_truth=case.ground_truth,
        tool_invocations=tuple(
            code_grader.ToolInvocation(c.tool, dict(c.arguments), c.output) for c in calls
        ),
        retrieval_context=tuple(passages) if passages else None,
        turn_index=turn_index,
        test_case_name=name or None,
        turn_config=case.model_dump(mode="json", exclude_none=True, exclude={"evaluations"}),
    )


def retrieved_passages(calls: Sequence[ToolCallRecord]) -> list[str]:
    """The text of every result of the case's tool calls, in order, each text once."""
    seen: set[str] = set()
    out: list[str] = []
    for call in calls:
        for result in call.results:
            text = result.content.strip()
            if text and text not in seen:
                seen.add(text)
                out.append(text)
    return out
