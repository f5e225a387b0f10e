"""The ``evaluations:`` section of agent.yaml and of a test case, shaped like the original
HoloDeck's, so its agent.yaml loads unchanged for every metric holodeck supports.

Four families, told apart by ``type`` (``standard`` when absent, as in the original):

- ``standard``: no LLM. ``equality``, ``numeric``, ``f1_score``, ``rouge``, ``bleu``, each
  comparing the answer (or one field of a JSON answer, ``response_path``) with ``ground_truth``.
- ``geval``: custom ``criteria`` in plain words, scored 0-1 by a judge model.
- ``rag``: ``faithfulness``, ``answer_relevancy``, ``contextual_relevancy``,
  ``contextual_precision``, ``contextual_recall``, on the passages the tool calls returned.
- ``code``: a Python function of the project (``grader: module.path:function``, as in the
  original) given the turn's answer, input, ground truth, tool calls and passages.

The judge is the metric's ``model``, else ``evaluations.model``, else the agent's ``model``.
"""

from __future__ import annotations

import re
from typing import Annotated, Any, Literal

from pydantic import Discriminator, Field, PrivateAttr, Tag, field_validator, model_validator

from holodeck.config.base import Float, MaybeFloat, StrictModel
from holodeck.config.llm import ModelConfig

#: Standard metrics holodeck computes, in the order the README lists them.
STANDARD_METRICS = ("equality", "numeric", "f1_score", "rouge", "bleu")
#: Standard metrics of the original HoloDeck that are refused, with what to use instead.
REFUSED_STANDARD_METRICS = {
    "meteor": (
        "needs NLTK's WordNet data, which NLTK downloads at run time (offline and in CI it "
        "fails); use rouge or bleu, or a geval metric to judge paraphrases"
    ),
    "safety": (
        "is the original HoloDeck's deprecated Azure AI metric; use type: geval with "
        "criteria saying what safe means for you"
    ),
}
RAG_METRICS = (
    "faithfulness",
    "answer_relevancy",
    "contextual_relevancy",
    "contextual_precision",
    "contextual_recall",
)
#: What a geval metric may show the judge (the original's names).
EVALUATION_PARAMS = ("input", "actual_output", "expected_output", "retrieval_context")
METRIC_TYPES = ("standard", "geval", "rag", "code")
#: ``grader:``: a module importable from agent.yaml's folder, and a callable in it.
GRADER_PATH = re.compile(r"^[A-Za-z_][\w.]*:[A-Za-z_]\w*$")
#: Seconds a code grader may run by default (holodeck's own key: the original has none).
DEFAULT_GRADER_TIMEOUT = 30.0
#: A ``response_path``: keys and [index]es joined by dots (``result.items[0].value``).
_PATH_SEGMENT = r"[A-Za-z_][\w-]*(?:\[\d+\])*"
RESPONSE_PATH = re.compile(rf"^{_PATH_SEGMENT}(?:\.{_PATH_SEGMENT})*$")


class _Metric(StrictModel):
    """What every metric has: a threshold, an on/off switch, error handling, a judge."""

    threshold: MaybeFloat = Field(
        default=None, ge=0.0, le=1.0, description="Minimum passing score (0.0-1.0)."
    )
    enabled: bool = Field(default=True, description="false: the metric is not run.")
    fail_on_error: bool = Field(
        default=True,
        description=(
            "true (default): a metric that cannot be computed (the judge unreachable, a reply "
            "that does not fit the schema) makes the case an error; false: a warning."
        ),
    )
    model: ModelConfig | None = Field(
        default=None, description="The judge for this metric (default: evaluations.model)."
    )

    @property
    def key(self) -> str:
        """What a test case's metric of the same kind overrides."""
        raise NotImplementedError

    @property
    def label(self) -> str:
        """The metric's name in reports."""
        raise NotImplementedError

    @property
    def uses_judge(self) -> bool:
        """Whether the metric asks an LLM."""
        return True

    def effective_threshold(self) -> float | None:
        """The threshold the score is held to (None: reported, never failing)."""
        return self.threshold


class StandardMetric(_Metric):
    """A metric computed here, without an LLM: the answer against the ground truth."""

    type: Literal["standard"] = "standard"
    metric: str = Field(description=f"One of: {', '.join(STANDARD_METRICS)}.")
    response_path: str | None = Field(
        default=None,
        description="Grade one field of a JSON answer: keys and [index]es joined by dots.",
    )
    case_insensitive: bool = Field(default=False, description="[equality] Ignore case.")
    strip_whitespace: bool = Field(
        default=False, description="[equality] Collapse runs of whitespace and trim."
    )
    strip_punctuation: bool = Field(default=False, description="[equality] Drop punctuation.")
    absolute_tolerance: Float = Field(
        default=1e-6, ge=0.0, description="[numeric] Pass when |answer - expected| <= this."
    )
    relative_tolerance: Float = Field(
        default=0.0,
        ge=0.0,
        description="[numeric] Or when |answer - expected| <= this x |expected|.",
    )
    accept_percent: bool = Field(
        default=False, description="[numeric] Read a trailing % as /100 (35% = 0.35)."
    )
    accept_thousands_separators: bool = Field(
        default=False, description="[numeric] Ignore , _ and non-breaking spaces in numbers."
    )

    @field_validator("metric")
    @classmethod
    def _known(cls, value: str) -> str:
        if value in REFUSED_STANDARD_METRICS:
            raise ValueError(f"{value!r} {REFUSED_STANDARD_METRICS[value]}")
        if value not in STANDARD_METRICS:
            raise ValueError(
                f"unknown standard metric {value!r}; supported: {', '.join(STANDARD_METRICS)} "
                f"(type: rag for {', '.join(RAG_METRICS)}; type: geval for your own criteria)"
            )
        return value

    @field_validator("response_path")
    @classmethod
    def _path(cls, value: str | None) -> str | None:
        if value is not None and not RESPONSE_PATH.match(value):
            raise ValueError(
                "not a path this metric reads; write keys and [index]es joined by dots, "
                "like answer, result.value or items[0].score"
            )
        return value

    @property
    def key(self) -> str:
        return f"standard:{self.metric}"

    @property
    def label(self) -> str:
        return self.metric

    @property
    def uses_judge(self) -> bool:
        return False

    def effective_threshold(self) -> float | None:
        """equality and numeric are pass/fail: without a threshold they need a match (1.0)."""
        if self.threshold is None and self.metric in ("equality", "numeric"):
            return 1.0
        return self.threshold


class GEvalMetric(_Metric):
    """Custom criteria in plain words, scored by the judge (G-Eval)."""

    type: Literal["geval"] = "geval"
    name: str = Field(min_length=1, description="The metric's name in reports.")
    criteria: str = Field(min_length=1, description="What a good answer is, in plain words.")
    evaluation_steps: list[Annotated[str, Field(min_length=1)]] | None = Field(
        default=None,
        min_length=1,
        description=(
            "How the judge checks the criteria; when absent they are generated once from the "
            "criteria and stored in .holodeck/geval_steps.json."
        ),
    )
    evaluation_params: list[str] = Field(
        default_factory=lambda: ["actual_output"],
        min_length=1,
        description=f"What the judge is shown: {', '.join(EVALUATION_PARAMS)}.",
    )
    strict_mode: bool = Field(default=False, description="Score 1 or 0 only (threshold 1).")

    @field_validator("name", "criteria")
    @classmethod
    def _not_blank(cls, value: str) -> str:
        if not value.strip():
            raise ValueError("must not be blank")
        return value

    @field_validator("evaluation_params")
    @classmethod
    def _params(cls, value: list[str]) -> list[str]:
        for param in value:
            if param == "context":
                raise ValueError(
                    "'context' (the original HoloDeck's test-case files: content) is not shown "
                    "to a geval judge here (the files go to the agent); use retrieval_context "
                    "(the passages the tools returned) or input"
                )
            if param not in EVALUATION_PARAMS:
                raise ValueError(
                    f"unknown evaluation param {param!r}; valid: {', '.join(EVALUATION_PARAMS)}"
                )
        return list(dict.fromkeys(value))

    @property
    def key(self) -> str:
        return f"geval:{self.name}"

    @property
    def label(self) -> str:
        return self.name

    def effective_threshold(self) -> float | None:
        return 1.0 if self.strict_mode else self.threshold


class RagMetric(_Metric):
    """A RAG metric: the answer and the retrieved passages, judged claim by claim."""

    type: Literal["rag"] = "rag"
    metric_type: str = Field(description=f"One of: {', '.join(RAG_METRICS)}.")
    threshold: MaybeFloat = Field(
        default=0.5, ge=0.0, le=1.0, description="Minimum passing score (default 0.5)."
    )
    include_reason: bool = Field(
        default=True, description="Keep the judge's reason in the reports."
    )

    @field_validator("metric_type")
    @classmethod
    def _known(cls, value: str) -> str:
        if value not in RAG_METRICS:
            raise ValueError(f"unknown rag metric {value!r}; supported: {', '.join(RAG_METRICS)}")
        return value

    @property
    def key(self) -> str:
        return f"rag:{self.metric_type}"

    @property
    def label(self) -> str:
        return self.metric_type

    @property
    def needs_answer(self) -> bool:
        """faithfulness and answer_relevancy judge the answer; the contextual ones do not."""
        return self.metric_type in ("faithfulness", "answer_relevancy")


class CodeMetric(_Metric):
    """A grader written in Python: ``fn(ctx: GraderContext)`` returning a bool, a score 0-1
    or a ``GraderResult`` (the original HoloDeck's ``type: code``; see
    ``holodeck.evaluations.code_grader``)."""

    type: Literal["code"] = "code"
    grader: str = Field(
        description="module.path:function, the module importable from agent.yaml's folder."
    )
    name: str | None = Field(default=None, min_length=1, description="Default: the function.")
    fail_on_error: bool = Field(
        default=False,
        description=(
            "false (default, as in the original): a grader that raises or runs past its time "
            "fails the metric with the message; true: the case is an error."
        ),
    )
    timeout: Float = Field(
        default=DEFAULT_GRADER_TIMEOUT, gt=0, description="Seconds one call may take."
    )
    _function: Any = PrivateAttr(default=None)

    @field_validator("grader")
    @classmethod
    def _path(cls, value: str) -> str:
        if not GRADER_PATH.match(value):
            raise ValueError(
                "write module.path:function (the module importable from agent.yaml's folder, "
                "like graders:exact_number or my_benchmarks.convfinqa:program_equivalence)"
            )
        return value

    @property
    def key(self) -> str:
        return f"code:{self.label}"

    @property
    def label(self) -> str:
        return self.name or self.grader.rpartition(":")[2]

    @property
    def uses_judge(self) -> bool:
        return False


def _metric_type(value: Any) -> str | None:
    """The ``type`` of a metric as written; ``standard`` when absent (the original's default)."""
    if isinstance(value, dict):
        kind = value.get("type", "standard")
        return kind if kind in METRIC_TYPES else None
    return getattr(value, "type", None)


Metric = Annotated[
    Annotated[StandardMetric, Tag("standard")]
    | Annotated[GEvalMetric, Tag("geval")]
    | Annotated[RagMetric, Tag("rag")]
    | Annotated[CodeMetric, Tag("code")],
    Discriminator(
        _metric_type,
        custom_error_type="metric_type",
        custom_error_message=f"type: must be one of {', '.join(METRIC_TYPES)}",
    ),
]


def unique_metrics(metrics: list[Any]) -> list[Any]:
    """Refuse two metrics of the same kind in one list (which one would count?)."""
    seen: set[str] = set()
    for metric in metrics:
        if metric.key in seen:
            raise ValueError(
                f"metric {metric.label!r} appears twice; keep one (a test case's evaluations: "
                "overrides the agent's metric of the same kind)"
            )
        seen.add(metric.key)
    return metrics


class EvaluationConfig(StrictModel):
    """``evaluations:``: the judge and the metrics every test case is held to."""

    model: ModelConfig | None = Field(
        default=None, description="The judge (default: the agent's model)."
    )
    metrics: list[Metric] = Field(min_length=1, description="standard, geval, rag or code metrics.")

    @model_validator(mode="after")
    def _unique(self) -> EvaluationConfig:
        unique_metrics(self.metrics)
        return self
