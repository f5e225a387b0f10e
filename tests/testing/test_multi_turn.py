"""Multi-turn test cases (``turns:``): one conversation, each turn checked, the case passing
when every turn does, and every turn in the JSON, Markdown and JUnit reports.

The real ``holodeck test`` (run_holodeck), the real openai client and agent loop, two real
function tools; the fake OpenAI-compatible server plays the model, turn by turn.
"""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from pathlib import Path

from cli_helpers import run_holodeck, write
from fake_openai import FakeOpenAI, quoting_tools, text, tool_calls

CALCULATOR = '''
def subtract(a: float, b: float) -> float:
    """a minus b."""
    return a - b


def divide(a: float, b: float) -> float:
    """a divided by b."""
    return round(a / b, 4)
'''

AGENT = """
name: convfinqa-agent
model:
  provider: openai
  name: fake-model
  endpoint: {url}
  api_key: ${{OPENAI_API_KEY}}
instructions: |
  You are a financial analyst. Use the calculator tools and answer with numbers.
tools:
  - {{name: subtract, type: function, description: a minus b, file: calc.py, function: subtract}}
  - {{name: divide, type: function, description: a over b, file: calc.py, function: divide}}
test_cases:
  - name: cash-flow-passes
    turns:
      - input: what was the operating cash flow in 2019?
        ground_truth: The operating cash flow in 2019 was 5120.
        ground_truth_threshold: 0.6
      - input: and in 2018?
        expected_content: ["4800"]
      - input: what is the change between the two years?
        expected_tools:
          - name: subtract
            args: {{a: 5120, b: {{fuzzy: "4,800"}}}}
        expected_content: ["320"]
      - input: what percentage change is that?
        expected_tools: [divide]
  - name: cash-flow-fails-on-turn-3
    turns:
      - input: what was the operating cash flow in 2019?
        expected_content: ["5120"]
      - input: and in 2018?
        expected_content: ["4800"]
      - input: what is the change between the two years?
        expected_tools:
          - name: subtract
            args: {{a: 5120, b: 4800}}
      - input: what percentage change is that?
        expected_tools: [divide]
"""


def script(llm: FakeOpenAI) -> None:
    """What the model answers, turn by turn; in the second case it divides on turn 3."""
    for wrong in (False, True):
        llm.chat.push(
            text("In 2019 the operating cash flow was 5120."),
            text("It was 4800 in 2018."),
            tool_calls(("divide" if wrong else "subtract", {"a": 5120, "b": 4800})),
            quoting_tools("The change is {result}."),
            tool_calls(("divide", {"a": 320, "b": 4800})),
            quoting_tools("That is {result} of 2018's, about 6.7%."),
        )


def test_a_conversation_is_carried_and_each_turn_checked_and_reported(tmp_path: Path) -> None:
    write(tmp_path / "calc.py", CALCULATOR)
    write(tmp_path / ".env", "OPENAI_API_KEY=sk-test-turns\n")
    with FakeOpenAI() as llm:
        write(tmp_path / "agent.yaml", AGENT.format(url=llm.url))
        script(llm)
        done = run_holodeck(
            "test", "--report", "out/r.json", "--junit", "out/j.xml", cwd=tmp_path, timeout=180
        )
        requests = llm.chat_requests()
    assert done.returncode == 1, done.stdout + done.stderr
    assert "1 passed, 1 failed" in done.stdout

    # The conversation is carried: turn 2 is sent after turn 1's question and answer.
    assert [(m["role"], m.get("content")) for m in requests[1]["messages"]] == [
        (
            "system",
            "You are a financial analyst. Use the calculator tools and answer with numbers.",
        ),
        ("user", "what was the operating cash flow in 2019?"),
        ("assistant", "In 2019 the operating cash flow was 5120."),
        ("user", "and in 2018?"),
    ]
    # ... and each case is a conversation of its own: the second starts afresh.
    assert [m["role"] for m in requests[6]["messages"]] == ["system", "user"]

    report = json.loads((tmp_path / "out" / "r.json").read_text())
    passing, failing = report["cases"]
    assert passing["status"] == "passed", passing["reason"]
    assert [t["status"] for t in passing["turns"]] == ["passed"] * 4
    assert passing["turns"][0]["checks"][0]["check"] == "ground_truth"
    assert passing["turns"][2]["tool_calls"][0]["output"] == "320.0"
    assert passing["answer"] == "That is 0.0667 of 2018's, about 6.7%."
    assert passing["input"].split("\n---\n")[1] == "and in 2018?"

    assert failing["status"] == "failed"
    assert [t["status"] for t in failing["turns"]] == ["passed", "passed", "failed", "passed"]
    assert failing["reason"] == (
        "turn 3: expected_tools: subtract was not called (calls: divide(a=5120, b=4800))"
    )
    assert failing["turns"][2]["reason"] == (
        "expected_tools: subtract was not called (calls: divide(a=5120, b=4800))"
    )
    assert [c["turn"] for c in failing["checks"]] == [1, 2, 3, 4]

    suite = ET.parse(tmp_path / "out" / "j.xml").getroot().find("testsuite")
    assert suite is not None and suite.get("tests") == "2" and suite.get("failures") == "1"
    cases = {c.get("name"): c for c in suite.iter("testcase")}
    assert cases["cash-flow-passes"].find("failure") is None
    failure = cases["cash-flow-fails-on-turn-3"].find("failure")
    assert failure is not None
    assert failure.get("message", "").startswith("turn 3: expected_tools: subtract was not called")
    body = failure.text or ""
    assert "--- turn 3: FAILED ---" in body and "--- turn 4: PASSED ---" in body
    assert 'call divide({"a": 5120, "b": 4800}) -> 1.0667' in body


def test_a_turn_that_errors_stops_the_conversation(tmp_path: Path) -> None:
    write(tmp_path / "calc.py", CALCULATOR)
    write(tmp_path / ".env", "OPENAI_API_KEY=sk-test-turns\n")
    with FakeOpenAI() as llm:
        write(tmp_path / "agent.yaml", AGENT.format(url=llm.url))
        llm.chat.push(text("In 2019 the operating cash flow was 5120."))
        # Nothing more scripted: turn 2 gets a 400 from the server, an error.
        done = run_holodeck("test", "-k", "passes", "--report", "r.md", cwd=tmp_path, timeout=180)
    assert done.returncode == 3, done.stdout + done.stderr
    markdown = (tmp_path / "r.md").read_text()
    assert "### Turn 1: PASS" in markdown
    assert "### Turn 2: ERROR" in markdown
    assert "### Turn 3: SKIPPED" in markdown
    assert "- **skipped:** not run: an earlier turn errored" in markdown
    assert "turn 2: LLMError: " in markdown and "turns 3-4 not run" in markdown


def test_the_time_limit_bounds_the_whole_conversation(tmp_path: Path) -> None:
    """--timeout is per case: the turn running when it runs out errors, the rest do not run."""
    write(tmp_path / "calc.py", CALCULATOR)
    write(tmp_path / ".env", "OPENAI_API_KEY=sk-test-turns\n")
    with FakeOpenAI() as llm:
        write(tmp_path / "agent.yaml", AGENT.format(url=llm.url))
        llm.chat.push(
            text("In 2019 the operating cash flow was 5120."),
            text("It was 4800 in 2018.", delay=60),  # answers after a minute
        )
        args = ("test", "-k", "passes", "--timeout", "4", "--report", "r.json")
        done = run_holodeck(*args, cwd=tmp_path, timeout=180)
    assert done.returncode == 3, done.stdout + done.stderr
    (case,) = json.loads((tmp_path / "r.json").read_text())["cases"]
    assert (case["status"], case["error_type"]) == ("error", "CaseTimeout")
    assert [t["status"] for t in case["turns"]] == ["passed", "error", "skipped", "skipped"]
    assert case["turns"][1]["reason"] == (
        "CaseTimeout: the case took longer than 4 s and was stopped (raise the limit with "
        "`holodeck test --timeout SECONDS`)"
    )
    assert case["reason"].endswith("; turns 3-4 not run")
