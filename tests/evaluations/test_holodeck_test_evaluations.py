"""``holodeck test`` with an ``evaluations:`` section: the real CLI (run_holodeck), the real
openai client, one fake OpenAI-compatible server playing the agent's LLM (scripted) and
another playing the judge (tests/fake_judge.py, answering from what it is asked)."""

from __future__ import annotations

import json
import re
import shutil
import xml.etree.ElementTree as ET
from collections import deque
from collections.abc import Iterator
from pathlib import Path

import fake_judge
import pytest
from cli_helpers import run_holodeck, write
from fake_openai import FakeOpenAI, Reply, text, tool_calls

REPO = Path(__file__).resolve().parents[2]
KEY = {"OPENAI_API_KEY": "sk-test-evaluations"}
QUESTION = "How many attempts does a failing job get by default?"
FAITHFUL = "A job gets 3 attempts in total by default."
HALF = "A job gets 3 attempts in total. Retries happen every 10 minutes."
UNFAITHFUL = "A job gets 5 attempts in total. Retries happen every 10 minutes."

AGENT = """
name: judged
model: {{provider: openai, name: fake-model, endpoint: "{agent}", api_key: "${{OPENAI_API_KEY}}"}}
tools:
  - type: vectorstore
    name: kb
    source: docs/
    embedding_model: all-MiniLM-L6-v2
    top_k: 2
evaluations:
  model: {{provider: openai, name: judge-model, endpoint: "{judge}", temperature: 0.0}}
  metrics:
{metrics}
test_cases:
{cases}
"""

ALL_FAMILIES = """
    - type: standard
      metric: rouge
      threshold: 0.6
    - type: standard
      metric: f1_score
    - type: geval
      name: Correct count
      criteria: The answer gives the number of attempts the expected output gives.
      evaluation_params: [actual_output, expected_output]
      threshold: 0.8
    - type: rag
      metric_type: faithfulness
      threshold: 0.8
    - type: rag
      metric_type: answer_relevancy
    - type: rag
      metric_type: contextual_precision
"""


def case(name: str, ground_truth: str = "A job gets 3 attempts in total by default.") -> str:
    return f"""
  - name: {name}
    input: {QUESTION}
    ground_truth: {ground_truth}
    ground_truth_threshold: 0.0
"""


@pytest.fixture
def servers() -> Iterator[tuple[FakeOpenAI, FakeOpenAI]]:
    with FakeOpenAI() as agent, FakeOpenAI() as judge:
        judge.responder = fake_judge.judge
        yield agent, judge


def project(tmp_path: Path, agent: FakeOpenAI, judge: FakeOpenAI, metrics: str, cases: str) -> Path:
    (tmp_path / "docs").mkdir(exist_ok=True)
    shutil.copy(REPO / "examples" / "docs" / "guides" / "retries.md", tmp_path / "docs")
    text_ = AGENT.format(agent=agent.url, judge=judge.url, metrics=metrics.strip("\n"), cases=cases)
    write(tmp_path / "agent.yaml", text_)
    return tmp_path


def answers(agent: FakeOpenAI, *texts: str) -> None:
    """Each case: one search, then the answer."""
    for answer in texts:
        agent.chat.push(tool_calls(("kb", {"query": "default retry attempts"})), text(answer))


def metric_scores(report: dict, case_name: str) -> dict[str, float | None]:
    found = next(c for c in report["cases"] if c["name"] == case_name)
    return {m["name"]: m["score"] for m in found["metrics"]}


def test_every_family_scores_apart_reports_it_and_a_rerun_costs_no_call(
    tmp_path: Path, servers: tuple[FakeOpenAI, FakeOpenAI]
) -> None:
    agent, judge = servers
    project(tmp_path, agent, judge, ALL_FAMILIES, case("faithful") + case("unfaithful"))
    answers(agent, FAITHFUL, UNFAITHFUL)
    args = ("test", "--report", "report.json", "--junit", "junit.xml")
    result = run_holodeck(*args, cwd=tmp_path, env=KEY)
    assert result.returncode == 1, result.stdout + result.stderr
    out = result.stdout
    assert "2 cases: 1 passed, 1 failed, 0 errors" in out
    calls = len(judge.judge_requests())
    # faithfulness, answer_relevancy, geval steps + score per case, contextual_precision
    # once (both cases ask it the same), less nothing else: rouge and f1 need no judge.
    assert calls == 1 + 2 * 3 + 1
    assert f"Judge openai:judge-model: {calls} calls" in out
    assert "Evaluations" in out and "faithfulness" in out

    report = json.loads((tmp_path / "report.json").read_text())
    good, bad = metric_scores(report, "faithful"), metric_scores(report, "unfaithful")
    assert good["faithfulness"] == pytest.approx(1.0)
    assert bad["faithfulness"] == pytest.approx(0.0)
    assert good["Correct count"] == pytest.approx(0.96, abs=1e-4)  # 10 and 9 at 0.6 / 0.4
    assert bad["Correct count"] == pytest.approx(0.74, abs=1e-4)  # 7 and 8 at 0.6 / 0.4
    assert good["answer_relevancy"] == pytest.approx(1.0)
    assert bad["answer_relevancy"] == pytest.approx(0.5)  # "Retries every 10 minutes": off
    assert good["contextual_precision"] == bad["contextual_precision"] == pytest.approx(1.0)
    assert good["rouge"] > bad["rouge"] and good["f1_score"] > bad["f1_score"]
    failed = next(c for c in report["cases"] if c["name"] == "unfaithful")
    assert failed["status"] == "failed"
    assert "faithfulness 0.00 < 0.80" in failed["reason"]
    assert "'A job gets 5 attempts in total.' (not in the passages)" in failed["reason"]
    faith = next(m for m in failed["metrics"] if m["name"] == "faithfulness")
    assert faith == {
        "name": "faithfulness",
        "type": "rag",
        "status": "failed",
        "score": 0.0,
        "threshold": 0.8,
        "passed": False,
        "reason": faith["reason"],
        "judge": "openai:judge-model",
    }
    assert report["judge"]["calls"] == calls and report["judge"]["tokens"] > 0

    junit = ET.parse(tmp_path / "junit.xml").getroot()
    bad_case = next(c for c in junit.iter("testcase") if c.get("name") == "unfaithful")
    failure = bad_case.find("failure")
    assert failure is not None and "faithfulness 0.00 < 0.80" in (failure.get("message") or "")
    assert "metric:faithfulness" in (failure.get("type") or "")
    props = {p.get("name"): p.get("value") for p in bad_case.iter("property")}
    assert props["metric.faithfulness.score"] == "0.0"
    assert props["metric.faithfulness.threshold"] == "0.8"
    assert props["metric.faithfulness.status"] == "failed"

    # The same answers again: every judge reply comes from the cache.
    answers(agent, FAITHFUL, UNFAITHFUL)
    again = run_holodeck("test", "--report", "again.md", cwd=tmp_path, env=KEY)
    assert again.returncode == 1, again.stdout + again.stderr
    assert len(judge.judge_requests()) == calls
    assert f"Judge openai:judge-model: 0 calls, 0 tokens, {calls} from the cache" in again.stdout
    markdown = (tmp_path / "again.md").read_text()
    assert "| faithfulness | 0.00 | 0.80 | FAIL |" in markdown

    # --no-cache asks every question again, contextual_precision once per case; the stored
    # geval steps are kept (no steps call).
    answers(agent, FAITHFUL, UNFAITHFUL)
    fresh = run_holodeck("test", "--no-cache", cwd=tmp_path, env=KEY)
    assert fresh.returncode == 1, fresh.stdout + fresh.stderr
    assert len(judge.judge_requests()) == calls + 2 * 4


def test_baseline_fails_a_case_whose_score_dropped_and_passes_one_that_held(
    tmp_path: Path, servers: tuple[FakeOpenAI, FakeOpenAI]
) -> None:
    agent, judge = servers
    metrics = """
    - type: rag
      metric_type: faithfulness
      threshold: 0.3
"""
    project(tmp_path, agent, judge, metrics, case("steady") + case("slipping"))
    answers(agent, FAITHFUL, FAITHFUL)
    first = run_holodeck("test", "--report", "baseline.json", cwd=tmp_path, env=KEY)
    assert first.returncode == 0, first.stdout + first.stderr

    # "slipping" now half faithful: 0.5, above its loose threshold, 0.5 below the baseline.
    answers(agent, FAITHFUL, HALF)
    args = ("test", "--baseline", "baseline.json", "--report", "now.json", "--junit", "j.xml")
    second = run_holodeck(*args, cwd=tmp_path, env=KEY)
    assert second.returncode == 1, second.stdout + second.stderr
    assert "2 cases: 1 passed, 1 failed" in second.stdout
    # The ground_truth similarity is a score too, and it dropped with the answer.
    assert "baseline baseline.json: 2 cases compared, 2 regressions (max drop 0.05)" in (
        second.stdout
    )
    assert "slipping: faithfulness 1.00 -> 0.50" in second.stdout
    assert "slipping: ground_truth 1.00 -> 0.83" in second.stdout
    now = json.loads((tmp_path / "now.json").read_text())
    slipping = next(c for c in now["cases"] if c["name"] == "slipping")
    assert slipping["status"] == "failed"
    assert "faithfulness 1.00 -> 0.50 since the baseline (dropped 0.50" in slipping["reason"]
    faith, similarity = now["baseline"]["regressions"]
    assert faith == {"case": "slipping", "metric": "faithfulness", "before": 1.0, "after": 0.5}
    assert similarity["metric"] == "ground_truth"
    assert similarity["after"] == pytest.approx(0.83, abs=0.01)
    failure = next(
        c
        for c in ET.parse(tmp_path / "j.xml").getroot().iter("testcase")
        if c.get("name") == "slipping"
    ).find("failure")
    assert failure is not None and "baseline" in (failure.get("type") or "")

    # A generous --max-drop lets the same drop pass; no drop passes at the default.
    answers(agent, FAITHFUL, HALF)
    loose = run_holodeck(
        "test", "--baseline", "baseline.json", "--max-drop", "0.6", cwd=tmp_path, env=KEY
    )
    assert loose.returncode == 0, loose.stdout + loose.stderr
    answers(agent, FAITHFUL, FAITHFUL)
    held = run_holodeck("test", "--baseline", "baseline.json", cwd=tmp_path, env=KEY)
    assert held.returncode == 0, held.stdout + held.stderr
    assert "2 cases compared, 0 regressions" in held.stdout


RETRIEVAL_ONLY = """
name: retrieval-judged
tools:
  - {{type: vectorstore, name: kb, source: docs/, embedding_model: all-MiniLM-L6-v2, top_k: 2}}
evaluations:
  model: {{provider: openai, name: judge-model, endpoint: "{judge}"}}
  metrics:
    - type: rag
      metric_type: contextual_relevancy
      threshold: 0.5
test_cases:
  - name: judged-strictly
    input: {question}
  - name: judged-leniently
    input: {question}
    evaluations:
      - type: rag
        metric_type: contextual_relevancy
        threshold: 0.5
        fail_on_error: false
"""


def test_a_malformed_judge_reply_is_an_error_or_with_fail_on_error_false_a_warning(
    tmp_path: Path, servers: tuple[FakeOpenAI, FakeOpenAI]
) -> None:
    _, judge = servers
    (tmp_path / "docs").mkdir()
    for name in ("retries.md", "notifications.md"):  # two files: two passages
        shutil.copy(REPO / "examples" / "docs" / "guides" / name, tmp_path / "docs")
    write(tmp_path / "agent.yaml", RETRIEVAL_ONLY.format(judge=judge.url, question=QUESTION))
    judge.chat.push(text("Both passages look relevant to me."), text('{"passages": "all"}'))
    # `holodeck test run AGENT`, as the original HoloDeck's CI scripts call it.
    result = run_holodeck("test", "run", "agent.yaml", "--report", "r.json", cwd=tmp_path, env=KEY)
    assert result.returncode == 3, result.stdout + result.stderr
    assert "Running 2 test cases (retrieval-only" in result.stdout
    assert "2 cases: 1 passed, 0 failed, 1 error" in result.stdout
    report = json.loads((tmp_path / "r.json").read_text())
    strict, lenient = report["cases"]
    assert strict["status"] == "error" and strict["error_type"] == "MetricError"
    assert (
        "contextual_relevancy: error: judge openai:judge-model's reply is not JSON"
        in (strict["reason"])
    )
    assert lenient["status"] == "passed"
    assert lenient["metrics"][0]["status"] == "error"
    assert lenient["metrics"][0]["score"] is None  # never a 0 that looks like a score
    assert "WARNING: Test case judged-leniently: metric contextual_relevancy could not be" in (
        result.stderr
    )
    assert "does not fit the schema (passages: Input should be a valid list)" in result.stderr

    # Judged properly, the contextual metric runs without an agent model.
    ok = run_holodeck("test", "--report", "ok.json", cwd=tmp_path, env=KEY)
    assert ok.returncode == 0, ok.stdout + ok.stderr
    metric = json.loads((tmp_path / "ok.json").read_text())["cases"][0]["metrics"][0]
    assert metric["name"] == "contextual_relevancy" and metric["status"] == "passed"
    # Both name failing jobs (notifications.md: alerts when one fails), so both count.
    assert metric["score"] == pytest.approx(1.0)
    assert metric["reason"] == "2 of 2 passages relevant (passages 1, 2)"


CLAUDE_AGENT = """
name: judged-by-claude
model: {{provider: anthropic, name: claude-test, endpoint: "{url}"}}
tools:
  - type: vectorstore
    name: kb
    source: docs/
    embedding_model: all-MiniLM-L6-v2
    top_k: 2
evaluations:
  metrics:
    - type: rag
      metric_type: faithfulness
      threshold: 0.8
test_cases:
  - name: faithful
    input: {question}
  - name: unfaithful
    input: {question}
"""


def test_a_claude_agent_is_judged_by_claude_through_the_messages_api(tmp_path: Path) -> None:
    """No evaluations.model: the agent's own model judges, a provider anthropic one too."""
    (tmp_path / "docs").mkdir()
    shutil.copy(REPO / "examples" / "docs" / "guides" / "retries.md", tmp_path / "docs")
    agent_replies = deque(
        reply
        for answer in (FAITHFUL, UNFAITHFUL)
        for reply in (tool_calls(("kb", {"query": "default retry attempts"})), text(answer))
    )

    def claude_replies(body: dict) -> Reply:
        """The judge's questions carry its schema in the system prompt; the rest are turns."""
        if '"claims"' in str(body.get("system")):
            return fake_judge.judge(body)
        return agent_replies.popleft()

    with FakeOpenAI() as claude:
        claude.responder = claude_replies
        write(tmp_path / "agent.yaml", CLAUDE_AGENT.format(url=claude.url, question=QUESTION))
        env = {"ANTHROPIC_API_KEY": "sk-ant-judged-0123456789"}
        result = run_holodeck("test", "--report", "r.json", cwd=tmp_path, env=env)
        requests = claude.message_requests()
    assert result.returncode == 1, result.stdout + result.stderr
    assert "2 cases: 1 passed, 1 failed, 0 errors" in result.stdout
    assert "Judge anthropic:claude-test: 2 calls" in result.stdout
    report = json.loads((tmp_path / "r.json").read_text())
    assert metric_scores(report, "faithful") == {"faithfulness": pytest.approx(1.0)}
    assert metric_scores(report, "unfaithful") == {"faithfulness": pytest.approx(0.0)}
    judged = [r for r in requests if '"claims"' in str(r.body.get("system"))]
    assert len(judged) == 2 and all(r.path == "/v1/messages" for r in requests)
    for r in judged:  # the key of provider anthropic: x-api-key, or a bearer token
        sent = r.headers.get("x-api-key") or r.headers["authorization"].removeprefix("Bearer ")
        assert sent == env["ANTHROPIC_API_KEY"]


def test_in_a_pipe_one_verdict_one_rounding_one_line_per_case_and_metric(
    tmp_path: Path, servers: tuple[FakeOpenAI, FakeOpenAI]
) -> None:
    """Issue 42, item 10: what a CI log shows of a run with a baseline, by a real process."""
    agent, judge = servers
    metrics = """
    - type: rag
      metric_type: faithfulness
      threshold: 0.3
    - type: rag
      metric_type: answer_relevancy
"""
    cases = case("steady") + case("slipping") + case("wandering")
    project(tmp_path, agent, judge, metrics, cases)
    answers(agent, FAITHFUL, FAITHFUL, FAITHFUL)
    first = run_holodeck("test", "--report", "baseline.json", cwd=tmp_path, env=KEY)
    assert first.returncode == 0, first.stdout + first.stderr

    answers(agent, FAITHFUL, HALF, FAITHFUL)
    args = ("test", "--baseline", "baseline.json", "--report", "now.json", "--junit", "j.xml")
    run = run_holodeck(*args, cwd=tmp_path, env=KEY, own_process=True)
    assert run.returncode == 1, run.stdout + run.stderr
    out = run.stdout.splitlines()

    # One verdict: the live line of the case that dropped says FAIL, as the summary does.
    live = next(line for line in out if re.match(r"^(PASS|FAIL)\s+slipping\s", line))
    assert live.startswith("FAIL"), run.stdout
    assert "1 failed" in run.stdout

    # One rounding: each drop reads the same in the console, the JSON report and JUnit.
    now = json.loads((tmp_path / "now.json").read_text())
    drops = {r["metric"]: r for r in now["baseline"]["regressions"]}
    testcase = next(
        c
        for c in ET.parse(tmp_path / "j.xml").getroot().iter("testcase")
        if c.get("name") == "slipping"
    )
    failure = testcase.find("failure")
    assert failure is not None
    junit = f"{failure.get('message')}\n{failure.text}"
    for metric in ("faithfulness", "ground_truth"):
        shown = f"{metric} {drops[metric]['before']:.2f} -> {drops[metric]['after']:.2f}"
        assert f"slipping: {shown}" in run.stdout and shown in junit, run.stdout + junit
    assert "faithfulness 1.00 -> 0.50" in live
    gt = f"gt sim {drops['ground_truth']['after']:.2f}"
    assert gt in live, run.stdout  # the case's one line (issue 60 item 13: printed once)

    # Compact: no table borders, one line per case and per metric, reasons shortened.
    assert not any(c in run.stdout for c in "┃│┏┗━")
    for name in ("steady", "slipping", "wandering"):
        for metric in ("faithfulness", "answer_relevancy"):
            lines = [
                line
                for line in out
                if line.startswith(f"  {name}: {metric} ") and "(threshold" in line
            ]
            assert len(lines) == 1, run.stdout
            assert len(lines[0]) <= 160
    assert len(out) <= 25, run.stdout
