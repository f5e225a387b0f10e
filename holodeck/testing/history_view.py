"""``holodeck test view``: one self-contained HTML page of an agent's run history.

Reads ``results/<agent>/*.json`` (``holodeck.testing.history``) and writes a page that needs
no server and no network: the pass rate and each metric's mean score over the runs as
charts, the latest run's cases (answer, sources, failed checks), and a comparison of any two
runs picked on the page. The charts are Plotly's (plotly.py, with plotly.js embedded once in
the page): a well-kept library whose page works offline from one file, with hover values
and zoom, where hand-drawn SVG would be code of our own to keep.
"""

from __future__ import annotations

import html
import json
import statistics
from pathlib import Path
from typing import Any

from holodeck.errors import ConfigError
from holodeck.extras import require


def load_runs(folder: Path) -> list[dict[str, Any]]:
    """The history files of one agent, oldest first; a ConfigError when there are none."""
    runs = []
    for path in sorted(folder.glob("*.json")):
        try:
            record = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, json.JSONDecodeError):
            continue  # not a history file (or a half-written one): left out
        if isinstance(record, dict) and isinstance(record.get("report"), dict):
            record["file"] = path.name
            runs.append(record)
    if not runs:
        raise ConfigError(
            f"{folder}: no run history (holodeck test keeps each run there); run holodeck "
            "test first"
        )
    return runs


def _label(run: dict[str, Any]) -> str:
    report = run["report"]
    commit = (run.get("git") or {}).get("commit")
    return f"{report.get('started_at', run['file'])}" + (f" @ {commit[:7]}" if commit else "")


def metric_means(report: dict[str, Any]) -> dict[str, float]:
    """Each metric's mean score over the run's cases (the ground truth similarity too)."""
    scores: dict[str, list[float]] = {}
    for case in report.get("cases", []):
        for metric in case.get("metrics", []):
            if metric.get("score") is not None:
                scores.setdefault(metric["name"], []).append(float(metric["score"]))
        if case.get("ground_truth_score") is not None:
            scores.setdefault("ground_truth similarity", []).append(case["ground_truth_score"])
    return {name: statistics.fmean(values) for name, values in scores.items()}


def _charts(runs: list[dict[str, Any]]) -> tuple[str, str]:
    """The two charts' HTML (no plotly.js: the page embeds it once)."""
    import plotly.graph_objects as go

    labels = [_label(run) for run in runs]
    rates = [run["report"]["summary"].get("pass_rate") for run in runs]
    passes = go.Figure(go.Scatter(x=labels, y=rates, mode="lines+markers", name="pass rate"))
    passes.update_layout(
        title="Pass rate", yaxis={"range": [0, 1.05], "tickformat": ".0%"}, height=320
    )
    means = [metric_means(run["report"]) for run in runs]
    metrics = go.Figure()
    for name in sorted({n for m in means for n in m}):
        metrics.add_trace(
            go.Scatter(x=labels, y=[m.get(name) for m in means], mode="lines+markers", name=name)
        )
    metrics.update_layout(title="Mean score per metric", yaxis={"range": [0, 1.05]}, height=360)
    options = {"full_html": False, "include_plotlyjs": False, "config": {"responsive": True}}
    return (
        passes.to_html(div_id="pass-rate", **options),
        metrics.to_html(div_id="metric-scores", **options),
    )


def _failed(case: dict[str, Any]) -> list[str]:
    lines = [f"{c['check']}: {c['detail']}" for c in case.get("checks", []) if not c["passed"]]
    lines += [
        f"{m['name']}: {m['status']} ({m.get('reason') or ''})"
        for m in case.get("metrics", [])
        if m["status"] in ("failed", "error")
    ]
    return lines


def _sources(case: dict[str, Any]) -> list[str]:
    found = [r["source_path"] for call in case.get("tool_calls", []) for r in call["results"]]
    return list(dict.fromkeys(found))


def _latest(report: dict[str, Any]) -> str:
    rows = []
    for case in report.get("cases", []):
        cells = [
            html.escape(case["name"]),
            f'<span class="{case["status"]}">{case["status"]}</span>',
            f"<pre>{html.escape(case.get('answer') or '')}</pre>",
            "<br>".join(html.escape(s) for s in _sources(case)),
            "<br>".join(html.escape(f) for f in _failed(case)),
        ]
        rows.append("<tr>" + "".join(f"<td>{c}</td>" for c in cells) + "</tr>")
    head = "".join(f"<th>{h}</th>" for h in ("case", "status", "answer", "sources", "failed"))
    return f'<table id="latest"><tr>{head}</tr>{"".join(rows)}</table>'


_COMPARE_JS = """
const runs = JSON.parse(document.getElementById('runs-data').textContent);
const pick = (id) => document.getElementById(id);
const entities = {'&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;'};
const esc = (t) => String(t).replace(/[&<>"]/g, (c) => entities[c]);
function statusOf(run) {
  const out = {};
  for (const c of run.cases) out[c.name] = c;
  return out;
}
function compare() {
  const a = runs[pick('run-a').value], b = runs[pick('run-b').value];
  const ca = statusOf(a), cb = statusOf(b);
  const names = [...new Set([...Object.keys(ca), ...Object.keys(cb)])];
  let rows = '<tr><th>case</th><th>' + esc(a.label) + '</th><th>' + esc(b.label) +
    '</th><th></th></tr>';
  for (const n of names) {
    const sa = ca[n] ? ca[n].status : '-', sb = cb[n] ? cb[n].status : '-';
    const changed = sa !== sb ? 'changed' : '';
    rows += '<tr class="' + changed + '"><td>' + esc(n) + '</td><td class="' + sa + '">' + sa +
      '</td><td class="' + sb + '">' + sb + '</td><td>' + (changed ? 'changed' : '') +
      '</td></tr>';
  }
  pick('comparison').innerHTML = rows;
}
pick('run-a').addEventListener('change', compare);
pick('run-b').addEventListener('change', compare);
compare();
"""

_STYLE = """
body { font-family: system-ui, sans-serif; margin: 2em; color: #222; }
table { border-collapse: collapse; margin: 1em 0; }
td, th { border: 1px solid #ccc; padding: 4px 8px; vertical-align: top; text-align: left; }
pre { white-space: pre-wrap; margin: 0; max-width: 40em; }
.passed { color: #1a7f37; } .failed { color: #cf222e; } .error { color: #8250df; }
tr.changed { background: #fff8c5; }
"""


def _options(runs: list[dict[str, Any]], selected: int) -> str:
    return "".join(
        f'<option value="{i}"{" selected" if i == selected else ""}>'
        f"{html.escape(r['label'])}</option>"
        for i, r in enumerate(runs)
    )


def render(agent: str, runs: list[dict[str, Any]]) -> str:
    """The page for ``runs`` (oldest first)."""
    from plotly.offline import get_plotlyjs

    passes, metrics = _charts(runs)
    compact = [
        {
            "label": _label(run),
            "cases": [{"name": c["name"], "status": c["status"]} for c in run["report"]["cases"]],
        }
        for run in runs
    ]
    last = len(runs) - 1
    data = json.dumps(compact).replace("</", "<\\/")
    latest = runs[-1]
    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<title>holodeck test history: {html.escape(agent)}</title>
<style>{_STYLE}</style>
<script>{get_plotlyjs()}</script>
</head><body>
<h1>Test history of {html.escape(agent)}</h1>
<p>{len(runs)} run{"s" if len(runs) != 1 else ""}; latest {html.escape(_label(latest))}</p>
{passes}
{metrics}
<h2>Latest run</h2>
{_latest(latest["report"])}
<h2>Compare two runs</h2>
<select id="run-a">{_options(compact, max(last - 1, 0))}</select>
<select id="run-b">{_options(compact, last)}</select>
<table id="comparison"></table>
<script type="application/json" id="runs-data">{data}</script>
<script>{_COMPARE_JS}</script>
</body></html>
"""


def write_view(folder: Path, agent: str, output: Path) -> Path:
    """Write the page of the history in ``folder`` to ``output``."""
    runs = load_runs(folder)
    require("view", "plotly", feature="holodeck test view (its charts)")
    page = render(agent, runs)
    try:
        output.parent.mkdir(parents=True, exist_ok=True)
        output.write_text(page, encoding="utf-8")
    except OSError as exc:
        raise ConfigError(f"{output}: cannot write the page: {exc.strerror or exc}") from None
    return output
