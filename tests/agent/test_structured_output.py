"""``response_format``: the answer asked for in the schema's shape with each provider's own
mechanism, checked against the schema by ``holodeck test``, shown indented by chat.

The real CLI, openai and anthropic SDKs against the fake server: the wire format is read
from the requests themselves (OpenAI's ``response_format`` json_schema for openai and
ollama, a forced answer tool for anthropic).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from cli_helpers import run_holodeck, write
from fake_openai import FakeOpenAI, text, tool_calls

SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "summary": {"type": "string"},
        "sources": {
            "type": "array",
            "items": {
                "type": "object",
                "properties": {
                    "title": {"type": "string"},
                    "relevance_score": {"type": "number", "minimum": 0, "maximum": 1},
                },
            },
        },
        "confidence_level": {"type": "string", "enum": ["low", "medium", "high"]},
    },
    "required": ["summary"],
}

GOOD = {"summary": "Shor factors integers.", "sources": [{"title": "Shor", "relevance_score": 1}]}
BAD = {"summary": "Shor factors integers.", "sources": [{"title": "Shor", "relevance_score": 7}]}

AGENT = """
name: scout
model:
  provider: {provider}
  name: some-model
  endpoint: {url}
instructions: Summarise.
response_format: {response_format}
test_cases:
  - name: fits
    input: What did Shor show?
  - name: breaks
    input: And how sure are you?
"""


def project(root: Path, provider: str, url: str, inline: bool = True) -> Path:
    if inline:
        response_format = json.dumps(SCHEMA)
    else:
        write(root / "schemas" / "answer.json", json.dumps(SCHEMA, indent=2))
        response_format = "schemas/answer.json"
    write(
        root / "agent.yaml",
        AGENT.format(provider=provider, url=url, response_format=response_format),
    )
    write(root / ".env", "OPENAI_API_KEY=sk-test-structured\nANTHROPIC_API_KEY=sk-ant-test\n")
    return root


def run_cases(root: Path) -> dict[str, dict[str, Any]]:
    done = run_holodeck("test", "--report", "report.json", cwd=root)
    assert done.returncode == 1, done.stderr  # one case fails
    report = json.loads((root / "report.json").read_text(encoding="utf-8"))
    return {case["name"]: case for case in report["cases"]}


@pytest.mark.parametrize(("provider", "inline"), [("openai", True), ("ollama", False)])
def test_openai_wire_format_asks_for_the_schema_and_a_violation_fails_with_its_path(
    tmp_path: Path, provider: str, inline: bool
) -> None:
    with FakeOpenAI() as llm:
        url = llm.url if provider == "openai" else llm.url.removesuffix("/v1")
        root = project(tmp_path, provider, url, inline)
        llm.chat.push(text(json.dumps(GOOD)), text(json.dumps(BAD)))
        cases = run_cases(root)
        requests = llm.chat_requests()
    assert [r.path for r in llm.requests] == ["/v1/chat/completions"] * 2
    for request in requests:
        assert request["response_format"] == {
            "type": "json_schema",
            "json_schema": {"name": "response", "schema": SCHEMA, "strict": False},
        }
    assert cases["fits"]["status"] == "passed", cases["fits"]["reason"]
    assert cases["breaks"]["status"] == "failed"
    assert cases["breaks"]["reason"] == (
        "response_format: the answer does not fit the schema: "
        "$.sources[0].relevance_score: 7 is greater than the maximum of 1"
    )


def test_anthropic_answers_through_a_forced_tool_whose_input_is_the_answer(
    tmp_path: Path,
) -> None:
    with FakeOpenAI() as llm:
        root = project(tmp_path, "anthropic", llm.url.removesuffix("/v1"))
        llm.chat.push(
            tool_calls(("respond", GOOD)),
            # answers in text first: asked again, made to call the tool
            text("Quite sure."),
            tool_calls(("respond", BAD)),
        )
        cases = run_cases(root)
        first, second, third = llm.message_requests()
    for request in (first.body, second.body, third.body):
        (tool,) = request["tools"]
        assert tool["name"] == "respond" and tool["input_schema"] == SCHEMA
        assert "calling the respond tool" in request["system"]
        assert "response_format" not in request
    assert "tool_choice" not in first.body and "tool_choice" not in second.body
    assert third.body["tool_choice"] == {"type": "tool", "name": "respond"}
    assert cases["fits"]["status"] == "passed", cases["fits"]["reason"]
    assert json.loads(cases["fits"]["answer"]) == GOOD
    assert cases["breaks"]["status"] == "failed"
    assert (
        "$.sources[0].relevance_score: 7 is greater than the maximum of 1"
        in (cases["breaks"]["reason"])
    )


def test_chat_prints_the_answer_as_indented_json(tmp_path: Path) -> None:
    with FakeOpenAI() as llm:
        root = project(tmp_path, "openai", llm.url)
        llm.chat.push(text(json.dumps(GOOD)), text('{"summary": 3}'))
        done = run_holodeck("chat", cwd=root, stdin="What did Shor show?\nAgain?\n")
    assert done.returncode == 0, done.stderr
    assert json.dumps(GOOD, indent=2) + "\n\n" in done.stdout
    assert "the answer does not fit response_format: $.summary: 3 is not of type 'string'" in (
        done.stderr
    )


def test_a_schema_that_is_not_one_is_refused_with_its_line(tmp_path: Path) -> None:
    write(tmp_path / "agent.yaml", AGENT.format(provider="openai", url="http://x/v1",
          response_format='{"type": "float"}'))  # fmt: skip
    done = run_holodeck("config", "show", cwd=tmp_path)
    assert done.returncode == 2
    assert done.stderr.startswith(
        "Error: agent.yaml:7: response_format: not a valid JSON schema at type: 'float' is not "
    )
    missing = AGENT.format(provider="openai", url="http://x/v1", response_format="nope.json")
    write(tmp_path / "agent.yaml", missing)
    done = run_holodeck("config", "show", cwd=tmp_path)
    assert done.returncode == 2
    assert "agent.yaml:7: response_format: nope.json not found" in done.stderr
