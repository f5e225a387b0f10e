"""``holodeck chat`` with stdin not a terminal: one message per line, plain-text answers."""

from __future__ import annotations

import re
from pathlib import Path

from chat_helpers import with_model
from cli_helpers import run_holodeck
from fake_openai import FakeOpenAI, error, text, tool_calls

KEY = "sk-chat-test-key-42"


def test_retrieval_only_on_the_example_project(fresh_example: Path) -> None:
    """The README's command: ``printf 'question\\n' | holodeck chat -a agent.yaml.example``."""
    done = run_holodeck(
        "chat",
        "-a",
        "agent.yaml.example",
        cwd=fresh_example,
        stdin="How do I retry a failed job?\n",
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("Found 5 result(s):\n\n[1] Score: ")
    first_block = done.stdout.split("\n\n")[1]
    assert "Source: examples/docs/guides/retries.md" in first_block
    assert "No LLM configured (no `model:` in agent.yaml)" in done.stderr
    assert "knowledge_base('How do I retry a failed job?') -> 5 results, best " in done.stderr
    assert "10 new, 0 changed" in done.stderr  # it ingested first
    assert "Traceback" not in done.stderr


def test_commands_in_line_mode(example: Path) -> None:
    lines = "/help\n/tools\nwhat is a worker pool?\n/sources\n/clear\n/bogus\nquit\nnever asked\n"
    done = run_holodeck("chat", "-a", "agent.yaml.example", cwd=example, stdin=lines)
    assert done.returncode == 0, done.stderr
    out = done.stdout
    assert "/sources  the full results of the last message's searches" in out
    assert "knowledge_base: Search the Skyline documentation" in out
    assert "== knowledge_base('what is a worker pool?')\nFound 5 result(s):" in out
    assert "Conversation cleared." in done.stderr
    assert "Unknown command /bogus; /help lists the commands." in done.stderr
    assert "never asked" not in out + done.stderr  # quit ended the session
    assert " 0 chunks embedded" in done.stderr  # the index was up to date


def test_force_ingest_reaches_every_tool(example: Path) -> None:
    done = run_holodeck("chat", "--force-ingest", "agent.yaml.example", cwd=example, stdin="")
    assert done.returncode == 0, done.stderr
    embedded = re.search(r" (\d+) chunks embedded", done.stderr)
    assert embedded and int(embedded.group(1)) > 0, done.stderr


def test_llm_tool_call_round_trip_through_the_cli(example: Path, fake_openai: FakeOpenAI) -> None:
    with_model(example, fake_openai.url)
    fake_openai.chat.push(
        tool_calls(("knowledge_base", {"query": "retry policy defaults"}, "call_abc123")),
        text("By default a job runs **3 times** in total (guides/retries.md)."),
        text("You are welcome."),
    )
    done = run_holodeck(
        "chat",
        cwd=example,
        env={"OPENAI_API_KEY": KEY},
        stdin="How many times is a failed job run?\nthanks\n",
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout == (
        "By default a job runs **3 times** in total (guides/retries.md).\n\nYou are welcome.\n\n"
    )
    assert "Chatting with fake-model (openai); tools: knowledge_base." in done.stderr
    assert "knowledge_base('retry policy defaults') -> 5 results, best " in done.stderr

    first, second, third = fake_openai.chat_requests()
    assert first["stream"] is True
    assert first["tools"][0]["function"]["name"] == "knowledge_base"
    assert first["messages"][0]["role"] == "system"
    tool_reply = second["messages"][-1]
    assert tool_reply["role"] == "tool" and tool_reply["tool_call_id"] == "call_abc123"
    assert tool_reply["content"].startswith("Found 5 result(s):")
    assert "Source: examples/docs/guides/retries.md" in tool_reply["content"]
    # The second message carries the whole first exchange.
    assert [m["role"] for m in third["messages"]] == [
        "system",
        "user",
        "assistant",
        "tool",
        "assistant",
        "user",
    ]


def test_bad_key_is_one_line_per_message_and_exit_3(example: Path, fake_openai: FakeOpenAI) -> None:
    with_model(example, fake_openai.url)
    fake_openai.chat.push(
        error(401, f"Incorrect API key provided: {KEY}"),
        error(401, f"Incorrect API key provided: {KEY}"),
    )
    done = run_holodeck("chat", cwd=example, env={"OPENAI_API_KEY": KEY}, stdin="one\ntwo\n")
    assert done.returncode == 3
    errors = [line for line in done.stderr.splitlines() if line.startswith("Error:")]
    assert len(errors) == 2
    assert "refused the API key (401); check OPENAI_API_KEY" in errors[0]
    assert KEY not in done.stderr + done.stdout and "Traceback" not in done.stderr


def test_model_not_found_and_unreachable(example: Path, fake_openai: FakeOpenAI) -> None:
    with_model(example, fake_openai.url)
    fake_openai.chat.push(error(404, "The model `fake-model` does not exist"), text("recovered"))
    done = run_holodeck("chat", cwd=example, env={"OPENAI_API_KEY": KEY}, stdin="one\ntwo\n")
    assert "model 'fake-model' not found at openai at " in done.stderr
    assert done.stdout == "recovered\n\n"  # the session went on
    assert done.returncode == 3

    with_model(example, "http://127.0.0.1:9/v1")
    done = run_holodeck("chat", cwd=example, env={"OPENAI_API_KEY": KEY}, stdin="hello\n")
    assert "Error: cannot reach openai at http://127.0.0.1:9/v1" in done.stderr
    assert done.returncode == 3 and "Traceback" not in done.stderr


def test_missing_key_fails_before_ingesting(fresh_example: Path) -> None:
    with_model(fresh_example, "https://api.openai.com/v1", api_key=None)
    done = run_holodeck("chat", cwd=fresh_example, stdin="hello\n")
    assert done.returncode == 2
    assert done.stderr.strip() == (
        "Error: model: no API key for provider openai: set OPENAI_API_KEY in the environment "
        "or in .env next to agent.yaml (or write api_key: ${OPENAI_API_KEY})"
    )
    assert not (fresh_example / ".holodeck").exists()  # nothing ingested
