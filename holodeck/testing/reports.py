"""Reports of a test run: JSON and Markdown (``--report``), JUnit XML (``--junit``).

All three are built from ``suite_dict``, so they never disagree: every case's input and
expectations, its tool calls with the retrieved sources (rank, score), its checks and its
timings, plus the suite metrics. This module holds that data (the JSON report), the choice
of format and the writing; the Markdown and JUnit renderings are ``report_markdown`` and
``report_junit``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Literal

from holodeck import __version__
from holodeck.agent.loop import ToolCallRecord
from holodeck.config.cases import ExpectedTool, Turn
from holodeck.errors import ConfigError
from holodeck.evaluations.evaluator import MetricResult
from holodeck.testing.checks import Check
from holodeck.testing.outcomes import CaseResult, SuiteResult, TurnOutcome
from holodeck.testing.report_junit import junit_xml
from holodeck.testing.report_markdown import markdown

ReportFormat = Literal["json", "markdown"]
FORMATS: dict[str, ReportFormat] = {"json": "json", "markdown": "markdown", "md": "markdown"}
_EXTENSIONS: dict[str, ReportFormat] = {".json": "json", ".md": "markdown", ".markdown": "markdown"}
#: The run's verdict by its exit code.
_VERDICTS = {0: "passed", 1: "failed", 3: "error", 130: "interrupted"}
#: Characters of a chunk shown in reports: enough to recognise it, not the whole document.
PREVIEW_CHARS = 200


def report_format(path: Path, forced: str | None) -> ReportFormat:
    """``--format``, else the extension (.json, .md, .markdown); anything else is an error."""
    if forced:
        return FORMATS[forced.lower()]
    fmt = _EXTENSIONS.get(path.suffix.lower())
    if fmt is None:
        raise ConfigError(
            f"--report {path}: cannot tell the format from the extension; use .json or .md, "
            "or pass --format json|markdown"
        )
    return fmt


def suite_dict(suite: SuiteResult) -> dict[str, Any]:
    """The whole run as plain JSON-able values."""
    retrieval = suite.retrieval
    return {
        "holodeck_version": __version__,
        "agent": suite.agent_name,
        "agent_file": suite.agent_file,
        "mode": suite.mode,
        "model": suite.model,
        "started_at": suite.started_at.isoformat(timespec="seconds"),
        "seconds": round(suite.seconds, 3),
        "verdict": _VERDICTS[suite.exit_code],
        "summary": {
            "total": len(suite.results),
            "passed": suite.passed,
            "failed": suite.failed,
            "errors": suite.errors,
            "pass_rate": _round(suite.pass_rate),
            "top_k": suite.top_k,
            "cases_with_sources": retrieval.cases,
            "hit_rate": _round(retrieval.hit_rate),
            "mrr": _round(retrieval.mrr),
            "recall": _round(retrieval.recall),
            "latency_p50": _round(suite.latency(50)),
            "latency_p95": _round(suite.latency(95)),
            "not_run": suite.not_run,
            "exit_code": suite.exit_code,
        },
        "judge": {
            "models": suite.judges,
            "calls": suite.judge.calls,
            "tokens": suite.judge.tokens,
            "cached": suite.judge.cached,
        },
        "baseline": _baseline_dict(suite),
        "cases": [case_dict(r) for r in suite.results],
    }


def _baseline_dict(suite: SuiteResult) -> dict[str, Any] | None:
    """The --baseline comparison: the file, the drop allowed, and every regression."""
    b = suite.baseline
    if b is None:
        return None
    return {
        "file": b.path,
        "max_drop": b.max_drop,
        "compared": b.compared,
        "regressions": [
            {
                "case": r.case,
                "metric": r.metric,
                "before": _round(r.before),
                "after": _round(r.after),
            }
            for r in b.regressions
        ],
    }


def case_dict(result: CaseResult) -> dict[str, Any]:
    """One case: what it asked, what happened, how it was judged.

    A multi-turn case adds ``turns`` (each turn the same way); its top-level fields roll the
    turns up: the inputs joined by ``---`` lines, the last answer, every check and call.
    """
    case = result.case
    steps = case.steps
    out = {
        "name": case.name,
        "status": result.status,
        "reason": result.reason or None,
        "error_type": result.error_type,
        "input": "\n---\n".join(step.input for step in steps),
        "ground_truth": case.ground_truth,
        "ground_truth_threshold": case.ground_truth_threshold,
        "expected_tools": _expected_tools(case.expected_tools),
        "expected_sources": case.expected_sources,
        "expected_content": case.expected_content,
        "answer": result.answer,
        "source_ranks": result.source_ranks or None,
        "ground_truth_score": _round(result.ground_truth_score),
        "checks": _checks(result),
        "metrics": [
            {**({"turn": t.index} if result.multi_turn else {}), **metric_dict(m)}
            for t in result.turns
            for m in t.metrics
        ],
        "tool_calls": [call_dict(c) for c in result.tool_calls],
        "rounds": result.rounds,
        "latency_seconds": round(result.latency, 4),
        "seconds": round(result.seconds, 4),
        "turns": None,
    }
    if result.multi_turn:
        out["turns"] = [turn_dict(t, step) for t, step in zip(result.turns, steps, strict=True)]
    return out


def _checks(result: CaseResult) -> list[dict[str, Any]]:
    """Every turn's checks (with its turn when there are several), then the case's own
    (``--baseline`` adds one to the case, not to a turn)."""
    out = [
        {**({"turn": t.index} if result.multi_turn else {}), **check_dict(c)}
        for t in result.turns
        for c in t.checks
    ]
    in_turns = {id(c) for t in result.turns for c in t.checks}
    return out + [check_dict(c) for c in result.checks if id(c) not in in_turns]


def turn_dict(turn: TurnOutcome, step: Turn) -> dict[str, Any]:
    """One turn of a multi-turn case."""
    return {
        "turn": turn.index,
        "status": turn.status,
        "reason": turn.reason or None,
        "error_type": turn.error_type,
        "input": turn.input,
        "ground_truth": step.ground_truth,
        "ground_truth_threshold": step.ground_truth_threshold,
        "expected_tools": _expected_tools(step.expected_tools),
        "expected_sources": step.expected_sources,
        "expected_content": step.expected_content,
        "answer": turn.answer,
        "source_ranks": turn.source_ranks or None,
        "checks": [check_dict(c) for c in turn.checks],
        "metrics": [metric_dict(m) for m in turn.metrics],
        "tool_calls": [call_dict(c) for c in turn.tool_calls],
        "rounds": turn.rounds,
        "latency_seconds": round(turn.latency, 4),
    }


def metric_dict(m: MetricResult) -> dict[str, Any]:
    """One evaluation metric's outcome."""
    return {
        "name": m.name,
        "type": m.type,
        "status": m.status,
        "score": _round(m.score),
        "threshold": m.threshold,
        "passed": m.status == "passed",
        "reason": m.reason or None,
        "judge": m.judge,
    }


def check_dict(check: Check) -> dict[str, Any]:
    """One check's outcome."""
    return {
        "check": check.kind,
        "passed": check.passed,
        "detail": check.detail,
        "score": _round(check.score),
        "threshold": check.threshold,
    }


def _expected_tools(expected: list[ExpectedTool] | None) -> list[dict[str, Any]] | None:
    dumped = [t.model_dump(exclude_none=True, exclude_defaults=True) for t in expected or []]
    return dumped or None


def call_dict(call: ToolCallRecord) -> dict[str, Any]:
    """One tool call with its ranked results (a search) or what it returned (anything else)."""
    return {
        "tool": call.tool,
        "kind": call.kind,
        "output": None if call.kind == "search" or call.error else _preview(call.output),
        "query": call.query,
        "arguments": call.arguments,
        "error": call.error,
        "seconds": round(call.seconds, 4),
        "results": [
            {
                "rank": r.rank,
                "score": round(r.score, 4),
                "source_path": r.source_path,
                "location": r.location,
                "section": r.section,
                "doc_id": r.doc_id,
                "chunk_index": r.chunk_index,
                "preview": _preview(r.content),
            }
            for r in call.results
        ],
    }


def write_report(suite: SuiteResult, path: Path, fmt: ReportFormat) -> None:
    """Write the JSON or Markdown report (parent folders are created)."""
    data = suite_dict(suite)
    text = json.dumps(data, indent=2) + "\n" if fmt == "json" else markdown(data)
    _write(path, text)


def write_junit(suite: SuiteResult, path: Path) -> None:
    """Write JUnit XML: one testcase per case, failures and errors with the reason."""
    _write(path, junit_xml(suite_dict(suite)))


# -- helpers ----------------------------------------------------------------------------


def _write(path: Path, text: str) -> None:
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    except OSError as exc:
        raise ConfigError(f"{path}: cannot write the report: {exc.strerror or exc}") from exc


def _preview(text: str) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= PREVIEW_CHARS else flat[: PREVIEW_CHARS - 1] + "…"


def _round(value: float | None, digits: int = 4) -> float | None:
    return None if value is None else round(value, digits)
