"""What a test run found: each turn, each case, the suite, and the baseline comparison's
regressions (``holodeck test``'s report is written from these)."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Literal

from holodeck.agent.loop import ToolCallRecord
from holodeck.config.cases import TestCase
from holodeck.evaluations import score_text
from holodeck.evaluations.evaluator import MetricResult
from holodeck.evaluations.judge import Usage
from holodeck.testing import metrics
from holodeck.testing.checks import Check

Status = Literal["passed", "failed", "error"]
TurnStatus = Literal["passed", "failed", "error", "skipped"]
Mode = Literal["llm", "retrieval-only"]


@dataclass
class TurnOutcome:
    """One message of a case: what it produced and how it was judged."""

    index: int  # 1-based position among the case's turns
    input: str
    status: TurnStatus = "passed"
    reason: str = ""  # why it failed, errored or was skipped
    checks: list[Check] = field(default_factory=list)
    tool_calls: list[ToolCallRecord] = field(default_factory=list)
    answer: str | None = None  # the LLM's answer (None in retrieval-only mode)
    latency: float = 0.0  # seconds the agent turn (or the searches) took; up to an error
    source_ranks: dict[str, int | None] = field(default_factory=dict)
    rounds: int = 0
    error_type: str | None = None
    metrics: list[MetricResult] = field(default_factory=list)  # evaluations:, in order


@dataclass
class CaseResult:
    """Everything one case did and how it was judged; for several turns, rolled up.

    ``checks``, ``tool_calls`` and ``rounds`` gather every turn's, ``answer`` is the last
    turn's, ``latency`` their sum and ``source_ranks`` each expected source's best rank.
    """

    index: int  # 1-based position among the cases run
    case: TestCase
    status: Status
    reason: str  # why it failed or errored ("" when it passed)
    checks: list[Check] = field(default_factory=list)
    tool_calls: list[ToolCallRecord] = field(default_factory=list)
    answer: str | None = None  # the LLM's (last) answer (None in retrieval-only mode)
    latency: float = 0.0  # seconds the agent turns (or the searches) took; up to an error
    seconds: float = 0.0  # the whole case, checks included
    source_ranks: dict[str, int | None] = field(default_factory=dict)
    rounds: int = 0
    error_type: str | None = None
    metrics: list[MetricResult] = field(default_factory=list)  # evaluations:, in order
    turns: list[TurnOutcome] = field(default_factory=list)

    @property
    def multi_turn(self) -> bool:
        """Whether the case is a conversation of ``turns``."""
        return self.case.turns is not None

    @property
    def ground_truth_score(self) -> float | None:
        """The similarity the ground_truth check measured (the lowest over the turns)."""
        scores = [c.score for c in self.checks if c.kind == "ground_truth" and c.score is not None]
        return min(scores) if scores else None

    @property
    def first_rank(self) -> int | None:
        """Best rank of any expected source (None: none retrieved or none expected)."""
        found = [r for r in self.source_ranks.values() if r is not None]
        return min(found) if found else None


@dataclass
class SuiteResult:
    """A whole run: the cases in their order, and the suite metrics."""

    agent_name: str
    agent_file: str
    mode: Mode
    model: str | None
    started_at: datetime
    seconds: float
    results: list[CaseResult]
    top_k: int | None  # the tools' top_k when they share one (the k of hit rate@k)
    judge: Usage = field(default_factory=Usage)  # what the evaluation judges cost
    judges: list[str] = field(default_factory=list)  # provider:name of each judge used
    baseline: BaselineResult | None = None  # set by the --baseline comparison
    not_run: int = 0  # cases left when the run was interrupted (Ctrl-C)

    def count(self, status: Status) -> int:
        """Cases with this status."""
        return sum(1 for r in self.results if r.status == status)

    @property
    def passed(self) -> int:
        """Cases that passed."""
        return self.count("passed")

    @property
    def failed(self) -> int:
        """Cases with a failing check."""
        return self.count("failed")

    @property
    def errors(self) -> int:
        """Cases that could not run to the end."""
        return self.count("error")

    @property
    def pass_rate(self) -> float | None:
        """Passed over all cases run."""
        return metrics.pass_rate(self.passed, len(self.results))

    @property
    def retrieval(self) -> metrics.RetrievalMetrics:
        """Hit rate, MRR and recall over the cases with expected_sources that ran."""
        ranked = [
            list(r.source_ranks.values())
            for r in self.results
            if r.status != "error" and r.source_ranks
        ]
        return metrics.retrieval_metrics(ranked)

    def latency(self, q: float) -> float | None:
        """Percentile ``q`` of the latency of the cases that ran without an error."""
        return metrics.percentile([r.latency for r in self.results if r.status != "error"], q)

    @property
    def exit_code(self) -> int:
        """130 when interrupted, 3 when a case errored (runtime failure), else 1 when one
        failed, else 0."""
        if self.not_run:
            return 130
        if self.errors:
            return 3
        return 1 if self.failed else 0


@dataclass
class Regression:
    """One score of one case that dropped too far since the baseline."""

    case: str
    metric: str
    before: float
    after: float

    @property
    def drop(self) -> float:
        return self.before - self.after

    def line(self, max_drop: float) -> str:
        return (
            f"{self.metric} {score_text(self.before)} -> {score_text(self.after)} since the "
            f"baseline (dropped {score_text(self.drop)}, more than --max-drop "
            f"{score_text(max_drop)})"
        )


@dataclass
class BaselineResult:
    """What the comparison found."""

    path: str
    max_drop: float
    compared: int = 0  # cases that passed in the baseline and ran now
    regressions: list[Regression] = field(default_factory=list)
