"""The Markdown report of a test run, a page a person reads in a pull request or a CI
artifact, and the one-line readings of the judge's usage and the baseline comparison that
the console prints too.

Built from ``reports.suite_dict``, like the JSON and JUnit reports, so they never disagree.
"""

from __future__ import annotations

import json
from typing import Any

from holodeck.evaluations import score_text

_STATUS = {"passed": "PASS", "failed": "FAIL", "error": "ERROR"}
#: How a metric's status reads (the JUnit bodies write it alike).
_METRIC_STATUS = {"passed": "PASS", "failed": "FAIL", "error": "ERROR", "skipped": "skipped"}


def judge_usage(judge: dict[str, Any]) -> str:
    """``12 calls, 8,431 tokens, 3 from the cache``."""
    return f"{judge['calls']} calls, {judge['tokens']:,} tokens, {judge['cached']} from the cache"


def baseline_line(baseline: dict[str, Any]) -> str:
    """``baseline old.json: 4 cases compared, 1 regression (max drop 0.05)``."""
    n = len(baseline["regressions"])
    return (
        f"baseline {baseline['file']}: {baseline['compared']} cases compared, {n} "
        f"regression{'' if n == 1 else 's'} (max drop {score_text(baseline['max_drop'])})"
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


def _cell(text: str) -> str:
    """``text`` as one table cell that renders as written: a backslash doubled (Markdown
    would take ``\\\\`` for one), a pipe escaped, whitespace runs made one space."""
    return " ".join(text.split()).replace("\\", "\\\\").replace("|", "\\|")


def _num(value: float | None) -> str:
    return "-" if value is None else score_text(value)


def _pct(value: float | None) -> str:
    return "-" if value is None else f"{value * 100:.1f}%"


def _secs(value: float | None) -> str:
    return "-" if value is None else f"{value:.2f} s"
