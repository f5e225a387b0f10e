"""``holodeck test`` with an LLM: the fake OpenAI-compatible server plays the model.

The real CLI (run_holodeck), the real openai client and agent loop, the real local
embedding model for search and for the ground_truth similarity. Cases run one at a time, so
the scripted replies are consumed in case order.
"""

from __future__ import annotations

import json
import shutil
import xml.etree.ElementTree as ET
from pathlib import Path

from cli_helpers import run_holodeck, write
from fake_openai import FakeOpenAI, raw, text, tool_calls

REPO = Path(__file__).resolve().parents[2]
API_KEY = "sk-test-holodeck-test"

AGENT = """
name: llm-agent
model:
  provider: openai
  name: fake-model
  endpoint: {url}
  api_key: ${{OPENAI_API_KEY}}
instructions:
  inline: Answer from the knowledge base.
tools:
  - type: vectorstore
    name: guides
    source: docs/
    embedding_model: all-MiniLM-L6-v2
    top_k: 2
ground_truth_threshold: 0.7   # the similarity check (issue 60 item 5: opt-in)
test_cases:
  - name: args-and-answer-pass
    input: How many times is a failing job attempted?
    ground_truth: By default a job gets 3 attempts in total.
    expected_tools:
      - name: guides
        args: {{query: RETRY}}
      - name: guides
        args:
          query: {{regex: "^default"}}
    expected_sources: [retries.md]
    expected_content: ["3 attempts"]
  - name: args-fail
    input: How are backups made?
    expected_tools:
      - name: guides
        args:
          query: {{regex: "(?i)retr(y|ies)"}}
  - name: ground-truth-fail
    input: What is the default number of attempts?
    ground_truth: By default a job gets 3 attempts in total.
    ground_truth_threshold: 0.6
    expected_tools: [guides]
  - name: llm-unreachable
    input: Anything else?
    expected_content: [anything]
"""


def test_tools_args_and_ground_truth_with_an_llm(tmp_path: Path) -> None:
    (tmp_path / "docs").mkdir()
    shutil.copy(REPO / "examples" / "docs" / "guides" / "retries.md", tmp_path / "docs")
    with FakeOpenAI() as llm:
        write(tmp_path / "agent.yaml", AGENT.format(url=llm.url))
        llm.chat.push(
            # args-and-answer-pass: one search whose query passes both checks, then the answer.
            tool_calls(("guides", {"query": "default retry attempts"})),
            text("By default, a job gets 3 attempts in total: the first run plus 2 retries."),
            # args-fail: the model searches for something else.
            tool_calls(("guides", {"query": "nightly backups"})),
            text("Backups are not described in the documents."),
            # ground-truth-fail: no search, and an answer about something else entirely.
            text("The Enterprise plan is sold on a custom quote."),
            # llm-unreachable: nothing scripted, the server answers 400: an error, not a failure.
        )
        result = run_holodeck(
            "test",
            "--report",
            "report.json",
            "--junit",
            "junit.xml",
            cwd=tmp_path,
            env={"OPENAI_API_KEY": API_KEY},
        )
        requests = llm.chat_requests()

    assert result.returncode == 3, result.stdout + result.stderr  # an errored case wins
    assert "Running 4 test cases (with fake-model)" in result.stdout
    assert "4 cases: 1 passed, 2 failed, 1 error (pass rate 25.0%)" in result.stdout
    assert API_KEY not in result.stdout + result.stderr

    report = json.loads((tmp_path / "report.json").read_text())
    assert report["mode"] == "llm"
    passed, args_fail, gt_fail, errored = report["cases"]

    assert passed["status"] == "passed", passed["reason"]
    assert passed["answer"].startswith("By default, a job gets 3 attempts")
    assert passed["rounds"] == 2
    [call] = passed["tool_calls"]
    assert call["query"] == "default retry attempts"
    assert call["results"][0]["source_path"] == "docs/retries.md"
    assert call["results"][0]["rank"] == 1
    assert passed["ground_truth_score"] >= 0.7
    assert passed["source_ranks"] == {"retries.md": 1}

    assert args_fail["status"] == "failed"
    assert args_fail["reason"] == (
        "expected_tools: no guides call with query matching /(?i)retr(y|ies)/ "
        "(calls: guides(query='nightly backups'))"
    )

    assert gt_fail["status"] == "failed"
    assert gt_fail["tool_calls"] == []
    assert gt_fail["ground_truth_score"] < 0.6
    failed_checks = {c["check"]: c for c in gt_fail["checks"] if not c["passed"]}
    assert set(failed_checks) == {"expected_tools", "ground_truth"}
    assert failed_checks["expected_tools"]["detail"] == (
        "guides was not called (no tool was called)"
    )
    assert failed_checks["ground_truth"]["threshold"] == 0.6
    assert "(the answer)" in failed_checks["ground_truth"]["detail"]

    assert errored["status"] == "error"
    assert errored["error_type"] == "LLMError"
    assert "no scripted chat reply" in errored["reason"]

    suite = ET.parse(tmp_path / "junit.xml").getroot().find("testsuite")
    assert suite is not None
    assert (suite.get("tests"), suite.get("failures"), suite.get("errors")) == ("4", "2", "1")
    [error] = list(suite.iter("error"))
    assert error.get("type") == "LLMError"

    # Each case is a fresh conversation: the second case's first request holds only its input.
    third = requests[2]
    users = [m["content"] for m in third["messages"] if m["role"] == "user"]
    assert users == ["How are backups made?"]
    assert third["tools"][0]["function"]["name"] == "guides"


BROKEN_LLM_AGENT = """
name: llm-agent
model: {{provider: openai, name: fake-model, endpoint: "{url}", api_key: "${{OPENAI_API_KEY}}"}}
tools:
  - type: vectorstore
    name: guides
    source: docs/
    embedding_model: all-MiniLM-L6-v2
test_cases:
  - {{name: html, input: how many retries, expected_content: [attempts]}}
  - {{name: no-choices, input: how many retries, expected_content: [attempts]}}
  - {{name: truncated, input: how many retries, expected_content: [attempts]}}
  - {{name: round-limit, input: how many retries, expected_content: [attempts]}}
"""


def test_answers_that_are_not_completions_error_and_the_round_limit_is_told(
    tmp_path: Path,
) -> None:
    (tmp_path / "docs").mkdir()
    shutil.copy(REPO / "examples" / "docs" / "guides" / "retries.md", tmp_path / "docs")
    with FakeOpenAI() as llm:
        write(tmp_path / "agent.yaml", BROKEN_LLM_AGENT.format(url=llm.url))
        llm.chat.push(
            raw("<html><body>502 Bad Gateway</body></html>"),
            raw('{"id": "chatcmpl-1", "object": "chat.completion"}', "application/json"),
            raw('{"id": "chatcmpl-1", "choices": [{"index": 0, "mess', "application/json"),
            *[tool_calls(("guides", {"query": f"retries {n}"})) for n in range(5)],
            text("A job gets 3 attempts."),
        )
        result = run_holodeck(
            "test", "--report", "report.json", cwd=tmp_path, env={"OPENAI_API_KEY": API_KEY}
        )
    assert result.returncode == 3, result.stdout + result.stderr
    html, no_choices, truncated, limited = json.loads((tmp_path / "report.json").read_text())[
        "cases"
    ]
    for case in (html, no_choices, truncated):
        assert case["status"] == "error" and case["error_type"] == "LLMError", case
        assert "model.endpoint" in case["reason"]
    assert "not a chat completion ('<html><body>502 Bad Gateway</body></html>')" in html["reason"]
    assert "not a chat completion (JSON without choices)" in no_choices["reason"]
    assert "invalid JSON" in truncated["reason"]
    assert limited["status"] == "passed", limited["reason"]
    assert (
        "WARNING: Test case round-limit: the model reached the limit of 5 rounds of tool calls"
    ) in result.stderr
