"""Provider anthropic: the real anthropic SDK against the fake server's Messages API.

What Anthropic's API needs is checked in the requests themselves (the key,
the system prompt apart, tools with ``input_schema``, tool calls and results as content
blocks); answers come back streamed (chat) and whole (test); errors, in mid-stream too,
are one line naming Anthropic with its own message.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from cli_helpers import run_holodeck, write
from fake_openai import FakeOpenAI, error, quoting_tools, stream_error, text, tool_calls

KEY = "sk-ant-test-0123456789"

AGENT = """
name: claude-agent
model:
  provider: anthropic
  name: claude-sonnet-4-20250514
  endpoint: {url}
  temperature: 0.2
instructions: You are a careful assistant.
tools:
  - name: add
    type: function
    description: Add two numbers
    file: calc.py
    function: add
test_cases:
  - input: What is 2 + 3?
    expected_tools:
      - name: add
        args: {{a: 2, b: 3}}
    expected_content: ["5"]
"""

CALC = '''
def add(a: float, b: float) -> float:
    """Add two numbers."""
    return a + b
'''


def make_project(root: Path, url: str) -> Path:
    write(root / "calc.py", CALC)
    write(root / ".env", f"ANTHROPIC_API_KEY={KEY}\n")
    write(root / "agent.yaml", AGENT.format(url=url))
    return root


def test_chat_streams_claude_through_the_messages_api_with_tools(tmp_path: Path) -> None:
    with FakeOpenAI() as llm:
        root = make_project(tmp_path, llm.url)
        llm.chat.push(
            tool_calls(("add", {"a": 2, "b": 3}), content="Let me add."),
            quoting_tools("2 + 3 = {result}."),
        )
        done = run_holodeck("chat", cwd=root, stdin="What is 2 + 3?\n", timeout=120)
        first, second = llm.message_requests()
    assert done.returncode == 0, done.stderr
    assert "2 + 3 = 5.0." in done.stdout
    assert "[tool] add(" in done.stderr
    assert first.path == "/v1/messages"
    sent = first.headers.get("x-api-key") or first.headers["authorization"].removeprefix("Bearer ")
    assert sent == KEY  # x-api-key, or a bearer token as newer SDKs send it
    assert "anthropic-version" in first.headers
    body = first.body
    assert body["stream"] is True
    assert body["model"] == "claude-sonnet-4-20250514"
    assert body["system"] == "You are a careful assistant."
    assert body["max_tokens"] == 4096
    assert body["temperature"] == 0.2
    assert body["messages"] == [{"role": "user", "content": "What is 2 + 3?"}]
    assert body["tools"] == [
        {
            "name": "add",
            "description": "Add two numbers",
            "input_schema": {
                "type": "object",
                "additionalProperties": False,
                "properties": {"a": {"type": "number"}, "b": {"type": "number"}},
                "required": ["a", "b"],
            },
        }
    ]
    # The tool round: the call as a tool_use block, its result as a tool_result block.
    assistant, results = second.body["messages"][1:]
    call_id = assistant["content"][1]["id"]
    assert assistant == {
        "role": "assistant",
        "content": [
            {"type": "text", "text": "Let me add."},
            {"type": "tool_use", "id": call_id, "name": "add", "input": {"a": 2, "b": 3}},
        ],
    }
    assert results == {
        "role": "user",
        "content": [{"type": "tool_result", "tool_use_id": call_id, "content": "5.0"}],
    }


def test_holodeck_test_runs_claude_without_streaming(tmp_path: Path) -> None:
    with FakeOpenAI() as llm:
        root = make_project(tmp_path, llm.url)
        llm.chat.push(tool_calls(("add", {"a": 2, "b": 3})), quoting_tools("It is {result}"))
        done = run_holodeck("test", "--report", "r.json", cwd=root, timeout=120)
        requests = llm.message_requests()
    assert done.returncode == 0, done.stdout + done.stderr
    assert "with claude-sonnet-4-20250514" in done.stdout
    assert [r.body.get("stream") for r in requests] == [None, None]
    report = json.loads((root / "r.json").read_text())
    assert report["model"] == "anthropic:claude-sonnet-4-20250514"
    assert report["cases"][0]["answer"] == "It is 5.0"


@pytest.mark.parametrize(
    ("reply", "line"),
    [
        (
            error(401, f"invalid x-api-key {KEY}"),
            "refused the API key (401); check ANTHROPIC_API_KEY",
        ),
        (
            error(404, "model: claude-sonnet-4-20250514"),
            "model 'claude-sonnet-4-20250514' not found at anthropic at ",
        ),
        (stream_error("overloaded_error", "Overloaded"), "is overloaded"),
    ],
    ids=["401", "404", "overloaded-mid-stream"],
)
def test_errors_are_one_line_naming_anthropic_and_never_the_key(
    tmp_path: Path, reply: object, line: str
) -> None:
    with FakeOpenAI() as llm:
        root = make_project(tmp_path, llm.url)
        llm.chat.push(reply)  # type: ignore[arg-type]
        done = run_holodeck("chat", cwd=root, stdin="What is 2 + 3?\n", timeout=120)
    assert done.returncode == 3, done.stderr
    errors = [x for x in done.stderr.splitlines() if x.startswith("Error: ")]
    assert len(errors) == 1, done.stderr
    assert line in errors[0]
    assert f"anthropic at {llm.url}" in errors[0]
    assert KEY not in done.stderr + done.stdout
    assert "Traceback" not in done.stderr
    if "overloaded" in line:
        # Anthropic's own type and message, not "An error occurred during streaming".
        assert errors[0].endswith("Overloaded; try again later")


def test_an_overloaded_server_is_retried_then_answers(tmp_path: Path) -> None:
    with FakeOpenAI() as llm:
        root = make_project(tmp_path, llm.url)
        busy = error(529, "Overloaded", headers={"retry-after-ms": "10"})
        llm.chat.push(busy, busy, text("Hello from Claude."))
        done = run_holodeck("chat", cwd=root, stdin="hi\n", timeout=120)
        statuses = [r.status for r in llm.message_requests()]
    assert done.returncode == 0, done.stderr
    assert "Hello from Claude." in done.stdout
    assert statuses == [529, 529, 200]


def test_the_key_comes_from_anthropic_api_key_and_temperature_stays_in_range(
    tmp_path: Path,
) -> None:
    root = make_project(tmp_path, "https://api.anthropic.com")
    (root / ".env").write_text("")
    done = run_holodeck("chat", cwd=root, stdin="hi\n")
    assert done.returncode == 2
    assert done.stderr.startswith(
        "Error: model: no API key for provider anthropic: set ANTHROPIC_API_KEY"
    ), done.stderr
    agent = root / "agent.yaml"
    agent.write_text(agent.read_text().replace("temperature: 0.2", "temperature: 1.5"))
    done = run_holodeck("config", "show", cwd=root)
    assert done.returncode == 2
    assert done.stderr.startswith(
        "Error: agent.yaml:6: model.temperature: above 1, the most provider anthropic takes "
        "(got 1.5)"
    ), done.stderr
