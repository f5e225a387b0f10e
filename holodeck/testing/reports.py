"""Reports of a test run: JSON and Markdown (``--report``), JUnit XML (``--junit``).

All three are built from ``suite_dict``, so they never disagree: every case's input and
expectations, its tool calls with the retrieved sources (rank, score), its checks and its
timings, plus the suite metrics.
"""

from __future__ import annotations

import json
import re
import socket
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any, Literal

from holodeck import __version__
from holodeck.agent.loop import ToolCallRecord
from holodeck.config.cases import ExpectedTool, Turn
from holodeck.errors import ConfigError
from holodeck.evaluations.evaluator import MetricResult
from holodeck.testing.checks import Check
from holodeck.testing.outcomes import CaseResult, SuiteResult, TurnOutcome

ReportFormat = Literal["json", "markdown"]
FORMATS: dict[str, ReportFormat] = {"json": "json", "markdown": "markdown", "md": "markdown"}
_EXTENSIONS: dict[str, ReportFormat] = {".json": "json", ".md": "markdown", ".markdown": "markdown"}
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


# -- Markdown ---------------------------------------------------------------------------

_STATUS = {"passed": "PASS", "failed": "FAIL", "error": "ERROR"}
_METRIC_STATUS = {"passed": "PASS", "failed": "FAIL", "error": "ERROR", "skipped": "skipped"}


def judge_usage(judge: dict[str, Any]) -> str:
    """``12 calls, 8,431 tokens, 3 from the cache``."""
    return f"{judge['calls']} calls, {judge['tokens']:,} tokens, {judge['cached']} from the cache"


def baseline_line(baseline: dict[str, Any]) -> str:
    """``baseline old.json: 4 cases compared, 1 regression (max drop 0.05)``."""
    n = len(baseline["regressions"])
    return (
        f"baseline {baseline['file']}: {baseline['compared']} cases compared, {n} "
        f"regression{'' if n == 1 else 's'} (max drop {baseline['max_drop']:.2f})"
    )


def markdown(data: dict[str, Any]) -> str:
    """A report a person reads in a pull request or a CI artifact."""
    s = data["summary"]
    lines = [
        f"# holodeck test: {data['agent']}",
        "",
        f"- agent file: `{data['agent_file']}`; mode: {data['mode']}"
        + (f" ({data['model']})" if data["model"] else ""),
        f"- started {data['started_at']}, {data['seconds']:.2f} s",
        f"- **{s['passed']} of {s['total']} passed** ({_pct(s['pass_rate'])}), "
        f"{s['failed']} failed, {s['errors']} errors",
    ]
    if s["not_run"]:
        lines.append(f"- **interrupted**: {s['not_run']} more cases did not run")
    if s["cases_with_sources"]:
        lines.append(
            f"- retrieval over {s['cases_with_sources']} cases with expected_sources: "
            f"hit rate@{s['top_k'] or 'top_k'} {_num(s['hit_rate'])}, MRR {_num(s['mrr'])}, "
            f"recall {_num(s['recall'])}"
        )
    lines.append(f"- latency p50 {_secs(s['latency_p50'])}, p95 {_secs(s['latency_p95'])}")
    if data["judge"]["models"]:
        lines.append(f"- judge {', '.join(data['judge']['models'])}: {judge_usage(data['judge'])}")
    if data["baseline"]:
        lines.append(f"- {baseline_line(data['baseline'])}")
    lines += [
        "",
        "| # | case | result | first hit | ground truth | latency | reason |",
        "|---|---|---|---|---|---|---|",
    ]
    for i, c in enumerate(data["cases"], start=1):
        ranks = [r for r in (c["source_ranks"] or {}).values() if r is not None]
        first = str(min(ranks)) if ranks else ("-" if c["expected_sources"] else "")
        gt = _num(c["ground_truth_score"]) if c["ground_truth_score"] is not None else ""
        lines.append(
            f"| {i} | {_cell(c['name'])} | {_STATUS[c['status']]} | {first} | {gt} | "
            f"{c['latency_seconds']:.2f} s | {_cell(c['reason'] or '')} |"
        )
    for i, c in enumerate(data["cases"], start=1):
        lines += ["", f"## {i}. {c['name']}: {_STATUS[c['status']]}", ""]
        if c["turns"] is None:
            lines += _message_markdown(c)
        else:
            if c["reason"]:
                lines.append(f"- **{c['status']}:** {c['reason']}")
            for turn in c["turns"]:
                head = f"### Turn {turn['turn']}: {_STATUS.get(turn['status'], 'SKIPPED')}"
                lines += ["", head, "", *_message_markdown(turn)]
                lines += ["", f"Latency {turn['latency_seconds']:.2f} s."]
        lines += ["", f"Latency {c['latency_seconds']:.2f} s; case {c['seconds']:.2f} s."]
    return "\n".join(lines).rstrip() + "\n"


def _message_markdown(c: dict[str, Any]) -> list[str]:
    """Input, expectations, checks, tool calls and answer of a case or of one turn."""
    lines = [f"- input: {c['input']}"]
    if c["ground_truth"]:
        lines.append(f"- ground_truth: {c['ground_truth']}")
    for key in ("expected_tools", "expected_sources", "expected_content"):
        if c[key]:
            lines.append(f"- {key}: {json.dumps(c[key])}")
    if c["status"] in ("error", "skipped"):
        lines.append(f"- **{c['status']}:** {c['reason']}")
    if c["checks"]:
        lines += ["", "Checks:", ""]
        for check in c["checks"]:
            mark = "pass" if check["passed"] else "**FAIL**"
            lines.append(f"- {mark} {check['check']}: {check['detail']}")
    if c["metrics"]:
        lines += [
            "",
            "| metric | score | threshold | result | reason |",
            "|---|---|---|---|---|",
        ]
        for m in c["metrics"]:
            lines.append(
                f"| {_cell(m['name'])} | {_num(m['score'])} | {_num(m['threshold'])} | "
                f"{_METRIC_STATUS[m['status']]} | {_cell(m['reason'] or '')} |"
            )
    if c["tool_calls"]:
        lines += ["", "Tool calls:", ""]
        for n, call in enumerate(c["tool_calls"], start=1):
            err = f" error: {call['error']}" if call["error"] else ""
            lines.append(f"{n}. {_call_markdown(call)} ({call['seconds']:.2f} s){err}")
            if call["results"]:
                lines += [
                    "",
                    "   | rank | score | source | location | section |",
                    "   |---|---|---|---|---|",
                ]
                for r in call["results"]:
                    lines.append(
                        f"   | {r['rank']} | {r['score']:.3f} | {_cell(r['source_path'])} "
                        f"| {_cell(r['location'])} | {_cell(r.get('section', ''))} |"
                    )
                lines.append("")
    if c["answer"] is not None:
        quoted = "\n".join(f"> {line}" for line in (c["answer"] or "(empty)").splitlines())
        lines += ["", "Answer:", "", quoted]
    return lines


def _call_markdown(call: dict[str, Any]) -> str:
    """A search as its query, another call as its arguments and what it returned."""
    if call["kind"] == "search":
        return f"`{call['tool']}` query {json.dumps(call['query'])}"
    returned = f" returned {json.dumps(call['output'])}" if call["output"] is not None else ""
    return f"`{call['tool']}` arguments {json.dumps(call['arguments'])}{returned}"


# -- JUnit ------------------------------------------------------------------------------

_INVALID_XML = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ufffe\uffff]")


def junit_xml(data: dict[str, Any]) -> str:
    """JUnit XML as CI systems (GitHub, GitLab, Jenkins, Azure) display it."""
    s = data["summary"]
    attrs = {
        "tests": str(s["total"]),
        "failures": str(s["failed"]),
        "errors": str(s["errors"]),
        "skipped": "0",
        "time": f"{data['seconds']:.3f}",
    }
    root = ET.Element("testsuites", {"name": "holodeck test", **attrs})
    suite = ET.SubElement(
        root,
        "testsuite",
        {
            "name": _xml(data["agent"]),
            **attrs,
            "timestamp": data["started_at"],
            "hostname": _xml(socket.gethostname()),
        },
    )
    props = ET.SubElement(suite, "properties")
    for key in ("mode", "model", "agent_file", "holodeck_version"):
        if data[key] is not None:
            ET.SubElement(props, "property", {"name": key, "value": _xml(str(data[key]))})
    for key in ("pass_rate", "top_k", "hit_rate", "mrr", "recall", "latency_p50", "latency_p95"):
        if s[key] is not None:
            ET.SubElement(props, "property", {"name": key, "value": str(s[key])})
    if data["judge"]["models"]:
        for key in ("calls", "tokens", "cached"):
            value = str(data["judge"][key])
            ET.SubElement(props, "property", {"name": f"judge_{key}", "value": value})
    for c in data["cases"]:
        case = ET.SubElement(
            suite,
            "testcase",
            {
                "name": _xml(c["name"]),
                "classname": _xml(f"holodeck.{data['agent']}"),
                "time": f"{c['seconds']:.3f}",
            },
        )
        if c["metrics"]:
            metric_props = ET.SubElement(case, "properties")
            for m in c["metrics"]:
                name = m["name"] + (f".turn{m['turn']}" if "turn" in m else "")
                for key in ("score", "threshold", "status", "reason"):
                    if m[key] is not None:
                        ET.SubElement(
                            metric_props,
                            "property",
                            {"name": f"metric.{_xml(name)}.{key}", "value": _xml(str(m[key]))},
                        )
        if c["status"] == "failed":
            failed = [ch["check"] for ch in c["checks"] if not ch["passed"]]
            failed += [f"metric:{m['name']}" for m in c["metrics"] if m["status"] == "failed"]
            node = ET.SubElement(
                case, "failure", {"message": _xml(c["reason"]), "type": _xml(",".join(failed))}
            )
            node.text = _xml(_case_text(c))
        elif c["status"] == "error":
            node = ET.SubElement(
                case, "error", {"message": _xml(c["reason"]), "type": c["error_type"] or "Error"}
            )
            node.text = _xml(_case_text(c))
        else:
            out = ET.SubElement(case, "system-out")
            out.text = _xml(_case_text(c))
    ET.indent(root)
    return ET.tostring(root, encoding="unicode", xml_declaration=True) + "\n"


def _case_text(c: dict[str, Any]) -> str:
    """The plain-text story of a case, for JUnit bodies: turn by turn for a conversation."""
    if c["turns"] is None:
        return _message_text(c)
    parts = [f"[{c['status'].upper()}] {c['reason']}"] if c["reason"] else []
    for turn in c["turns"]:
        parts.append(f"--- turn {turn['turn']}: {turn['status'].upper()} ---")
        parts.append(_message_text(turn))
    return "\n".join(parts)


def _message_text(c: dict[str, Any]) -> str:
    """Input, checks, calls and answer of a case or of one turn, as plain lines."""
    lines = [f"input: {c['input']}"]
    if c["ground_truth"]:
        lines.append(f"ground_truth: {c['ground_truth']}")
    for check in c["checks"]:
        lines.append(
            f"[{'pass' if check['passed'] else 'FAIL'}] {check['check']}: {check['detail']}"
        )
    for m in c["metrics"]:
        score = "-" if m["score"] is None else f"{m['score']:.2f}"
        limit = "" if m["threshold"] is None else f" (threshold {m['threshold']:.2f})"
        reason = f": {m['reason']}" if m["reason"] else ""
        lines.append(f"[{_METRIC_STATUS[m['status']]}] metric {m['name']} {score}{limit}{reason}")
    if c["status"] in ("error", "skipped"):
        lines.append(f"[{c['status'].upper()}] {c['reason']}")
    for call in c["tool_calls"]:
        if call["kind"] == "search":
            shown = f"call {call['tool']}(query={call['query']!r})"
        else:
            shown = f"call {call['tool']}({json.dumps(call['arguments'])})"
            if call["output"] is not None:
                shown += f" -> {call['output']}"
        lines.append(f"{shown} {call['seconds']:.2f} s")
        if call["error"]:
            lines.append(f"  error: {call['error']}")
        for r in call["results"]:
            place = " · ".join(p for p in (r.get("section"), r["location"]) if p)
            where = f" ({place})" if place else ""
            lines.append(f"  [{r['rank']}] {r['score']:.3f} {r['source_path']}{where}")
    if c["answer"] is not None:
        lines.append(f"answer: {c['answer']}")
    lines.append(f"latency: {c['latency_seconds']:.3f} s")
    return "\n".join(lines)


# -- helpers ----------------------------------------------------------------------------


def _write(path: Path, text: str) -> None:
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    except OSError as exc:
        raise ConfigError(f"{path}: cannot write the report: {exc.strerror or exc}") from exc


def _xml(text: str) -> str:
    return _INVALID_XML.sub("\ufffd", text)


def _preview(text: str) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= PREVIEW_CHARS else flat[: PREVIEW_CHARS - 1] + "…"


def _round(value: float | None, digits: int = 4) -> float | None:
    return None if value is None else round(value, digits)


def _cell(text: str) -> str:
    return " ".join(text.split()).replace("|", "\\|")


def _num(value: float | None) -> str:
    return "-" if value is None else f"{value:.2f}"


def _pct(value: float | None) -> str:
    return "-" if value is None else f"{value * 100:.1f}%"


def _secs(value: float | None) -> str:
    return "-" if value is None else f"{value:.2f} s"
