"""``ground_truth`` keeps the original HoloDeck's meaning (issue 60, item 5).

In the original a ground_truth is the reference its metrics read, not a check: its
conversational template's cases describe the answer ("Should respond politely and offer
assistance"), which a good answer resembles little. Here the similarity check runs only
where this project's own key asks for it (``ground_truth_threshold``, per case or for the
agent). Through the real ``holodeck test``, the real local model and index, and the fake
LLM at the HTTP level.
"""

from __future__ import annotations

import json
from pathlib import Path

from cli_helpers import run_holodeck, write
from fake_openai import FakeOpenAI, text

KEY = {"OPENAI_API_KEY": "sk-ground-truth-test-1"}

#: The original's conversational template: cases whose ground truths describe the answer.
CASES = """
test_cases:
  - name: "Simple greeting"
    input: "Hello, how are you?"
    expected_tools: []
    ground_truth: "Should respond politely and offer assistance"
  - name: "Multi-turn conversation"
    input: "Can you help me learn Python?"
    expected_tools: []
    ground_truth: "Should provide helpful Python learning resources and tips"
  - name: "Handling unknown queries"
    input: "Can you help me with quantum physics?"
    expected_tools: []
    ground_truth: "Should acknowledge the topic and offer to help or clarify limitations"
"""

#: Good answers to those three inputs, in order.
ANSWERS = [
    "Hello! I'm doing well, thank you. What can I do for you today?",
    "Of course. Start with the official tutorial at docs.python.org, write a small script "
    "every day, and try exercises on sites like Exercism.",
    "Quantum physics is outside what my documents cover, but I can explain the basic ideas "
    "in general terms if that helps.",
]


def project(tmp_path: Path, url: str, extra: str = "") -> Path:
    write(tmp_path / "docs" / "faq.md", "# FAQ\n\nSupport is open from 9 to 5 on weekdays.\n")
    write(
        tmp_path / "agent.yaml",
        f"""
name: support
model: {{provider: openai, name: fake-model, endpoint: "{url}", api_key: "${{OPENAI_API_KEY}}"}}
tools:
  - type: vectorstore
    name: faq
    source: docs/
    embedding_model: all-MiniLM-L6-v2
evaluations:
  metrics:
    - {{type: standard, metric: rouge}}   # reads the ground_truth; no threshold: reported
{extra}""",
    )
    (tmp_path / "agent.yaml").write_text((tmp_path / "agent.yaml").read_text() + CASES)
    return tmp_path


def run(tmp_path: Path, server: FakeOpenAI) -> tuple[int, dict[str, dict]]:
    code, cases, _ = run_with_stderr(tmp_path, server)
    return code, cases


def run_with_stderr(tmp_path: Path, server: FakeOpenAI) -> tuple[int, dict[str, dict], str]:
    for answer in ANSWERS:
        server.chat.push(text(answer))
    done = run_holodeck("test", "--report", "report.json", cwd=tmp_path, env=KEY)
    assert "Traceback" not in done.stderr, done.stderr
    report = json.loads((tmp_path / "report.json").read_text())
    return done.returncode, {c["name"]: c for c in report["cases"]}, done.stderr


def unread_warnings(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines() if "is checked by nothing" in line]


def test_a_ground_truth_nothing_reads_is_said_once(tmp_path: Path) -> None:
    """Without a metric that reads it and without a threshold, a ground_truth checks
    nothing: said in one line (never a silent change of what passes)."""
    with FakeOpenAI() as server:
        agent = project(tmp_path, server.url)
        path = agent / "agent.yaml"
        code, _, stderr = run_with_stderr(agent, server)
        assert code == 0 and unread_warnings(stderr) == []  # rouge reads them
        text_now = path.read_text()
        start = text_now.index("evaluations:")
        path.write_text(text_now[:start] + text_now[text_now.index("test_cases:") :])
        code, cases, stderr = run_with_stderr(agent, server)
    assert code == 0 and [c["status"] for c in cases.values()] == ["passed"] * 3
    (line,) = unread_warnings(stderr)
    assert line == (
        "WARNING: agent.yaml: the ground_truth of 3 cases (Simple greeting, Multi-turn "
        "conversation, Handling unknown queries) is checked by nothing: no metric reads it "
        "and no ground_truth_threshold asks for the similarity check; add "
        "ground_truth_threshold: 0.7 to agent.yaml (or to the case) to check it"
    )


def test_a_file_written_for_the_original_reads_ground_truth_as_the_metrics_reference(
    tmp_path: Path,
) -> None:
    with FakeOpenAI() as server:
        code, cases = run(project(tmp_path, server.url), server)
    assert code == 0
    assert [c["status"] for c in cases.values()] == ["passed"] * 3
    for case in cases.values():
        assert all(check["check"] != "ground_truth" for check in case["checks"])
        assert case["ground_truth_score"] is None
        (rouge,) = case["metrics"]  # the metric read the ground_truth: a real score
        assert rouge["name"] == "rouge" and rouge["status"] == "passed"
        assert rouge["score"] is not None and 0.0 <= rouge["score"] < 0.7


def test_the_similarity_check_runs_where_a_threshold_asks_for_it(tmp_path: Path) -> None:
    with FakeOpenAI() as server:
        agent = project(tmp_path, server.url)
        path = agent / "agent.yaml"
        # one case asks for the check: only that case is checked
        path.write_text(
            path.read_text().replace(
                '    ground_truth: "Should respond politely and offer assistance"\n',
                '    ground_truth: "Should respond politely and offer assistance"\n'
                "    ground_truth_threshold: 0.7\n",
            )
        )
        code, cases = run(agent, server)
        assert code == 1
        greeting = cases["Simple greeting"]
        assert greeting["status"] == "failed"
        (check,) = [c for c in greeting["checks"] if c["check"] == "ground_truth"]
        assert check["threshold"] == 0.7 and not check["passed"] and check["score"] < 0.7
        others = [cases["Multi-turn conversation"], cases["Handling unknown queries"]]
        assert [c["status"] for c in others] == ["passed", "passed"]
        assert all(c["ground_truth_score"] is None for c in others)

        # agent.yaml's ground_truth_threshold asks for it in every case
        text_now = path.read_text()
        path.write_text(
            text_now.replace("\nevaluations:", "\nground_truth_threshold: 0.1\nevaluations:")
        )
        code, cases = run(agent, server)
    scores = {name: c["ground_truth_score"] for name, c in cases.items()}
    assert all(score is not None for score in scores.values()), scores
    assert cases["Simple greeting"]["status"] == "failed"  # its own 0.7 wins
    thresholds = {
        name: [c["threshold"] for c in case["checks"] if c["check"] == "ground_truth"]
        for name, case in cases.items()
    }
    assert thresholds == {
        "Simple greeting": [0.7],
        "Multi-turn conversation": [0.1],
        "Handling unknown queries": [0.1],
    }
