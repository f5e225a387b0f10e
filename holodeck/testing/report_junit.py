"""The JUnit XML report of a test run, as CI systems display it: one testcase per case, its
failure or error with the reason, and the plain-text story of each case in its body.

Built from ``reports.suite_dict``, like the JSON and Markdown reports, so they never
disagree.
"""

from __future__ import annotations

import json
import re
import socket
import xml.etree.ElementTree as ET
from typing import Any

from holodeck.evaluations import score_text
from holodeck.testing.report_markdown import _METRIC_STATUS

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
        score = "-" if m["score"] is None else score_text(m["score"])
        limit = "" if m["threshold"] is None else f" (threshold {score_text(m['threshold'])})"
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


def _xml(text: str) -> str:
    return _INVALID_XML.sub("\ufffd", text)
