"""``holodeck chat`` with stdin not a terminal: one message per line, plain-text answers."""

from __future__ import annotations

import json
import re
from pathlib import Path

from chat_helpers import with_model
from cli_helpers import run_holodeck
from fake_openai import FakeOpenAI, error, raw, text, tool_calls

KEY = "sk-chat-test-key-42"


#: A result's first line in the compact answer (the location only when the chunk has one).
HEADER = re.compile(r"^\[(\d+)\] Score: (\d\.\d\d) \| Source: (\S+)(?: \| Location: (.+))?$")
ROW = re.compile(r"^(\d+)\s+knowledge_base\s+(examples/docs/\S+)\s+(.+?)\s+(\d\.\d\d)$")


def test_retrieval_only_on_the_example_project(fresh_example: Path) -> None:
    """The command docs/chat.md shows:
    ``printf 'question\\n' | holodeck chat -a agent.yaml.example``."""
    done = run_holodeck(
        "chat",
        "-a",
        "agent.yaml.example",
        cwd=fresh_example,
        stdin="How do I retry a failed job?\n",
    )
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    headers = [HEADER.match(line) for line in lines if not line.startswith("    ")]
    assert lines[-1] == "" and headers[-1] is None  # the blank line that ends an answer
    headers = headers[:-1]
    assert all(headers), done.stdout
    assert [int(m.group(1)) for m in headers if m] == [1, 2, 3, 4, 5]  # default top_k
    first = headers[0]
    assert first is not None and first.group(3) == "examples/docs/guides/retries.md"
    # A few lines around the best-matching sentence: the answer is on screen, not the chunk.
    snippet = lines[1 : lines.index(next(line for line in lines[1:] if line.startswith("[2]")))]
    assert 1 <= len(snippet) <= 3 and all(line.startswith("    ") for line in snippet)
    assert "a job gets the defaults: 3 attempts in total" in " ".join(snippet)
    assert "\x1b" not in done.stdout

    searches = [line for line in done.stderr.splitlines() if line.startswith("[search] ")]
    assert len(searches) == 1
    assert len(lines) + len(searches) <= 25  # the answer and its search line fit a screen
    assert "knowledge_base('How do I retry a failed job?') -> 5 results, best " in searches[0]
    assert "No LLM configured (no `model:` in agent.yaml)" in done.stderr
    assert "10 new, 0 changed" in done.stderr  # it ingested first
    assert "Traceback" not in done.stderr


def test_commands_in_line_mode(example: Path) -> None:
    question = "what is a worker pool?"
    commands = ["/help", "/tools", question, "/sources", "/show 1", "/SHOW 7", "/clear"]
    commands += ["/sources", "/show 1", "/bogus", "quit", "never asked"]
    done = run_holodeck(
        "chat", "-a", "agent.yaml.example", cwd=example, stdin="\n".join(commands) + "\n"
    )
    assert done.returncode == 0, done.stderr
    out = done.stdout
    assert "/show N   result N of the last message, whole" in out
    assert "knowledge_base: Search the Skyline documentation" in out

    # The same search from the shell, to compare with what the chat shows.
    found = run_holodeck("search", "--json", "-a", "agent.yaml.example", question, cwd=example)
    results = json.loads(found.stdout)["tools"][0]["results"]

    # /sources: one row per result (rank, tool, source, where, score), none of their text
    lines = out.splitlines()
    top = lines.index(next(line for line in lines if line.startswith("#  tool")))
    assert lines[top].split() == ["#", "tool", "source", "where", "score"]
    rows = [ROW.match(line) for line in lines[top + 1 : top + 6]]
    assert all(rows), "\n".join(lines[top : top + 6])
    got = [r.groups() for r in rows if r]
    assert [(g[0], g[1], g[3]) for g in got] == [
        (str(r["rank"]), r["source_path"], f"{r['score']:.2f}") for r in results
    ]
    for (_, _, cell, _), r in zip(got, results, strict=True):
        # a long section is shortened in its middle to fit, the location kept whole
        kept = [part.strip() for part in cell.split("…") if part.strip()]
        assert all(part in _where(r) for part in kept), (cell, _where(r))
        assert cell.endswith(r["location"] or "-")

    # /show 1: the first result whole, exactly as the search found it
    best = results[0]
    where = f" | Location: {best['location']}" if best["location"] else ""
    where += f" | Section: {best['section']}" if best["section"] else ""
    shown = (
        f"[1] Score: {best['score']:.2f} | Source: {best['source_path']}{where}\n"
        f"{best['content']}\n"
    )
    assert lines[top + 6] == shown.splitlines()[0]
    assert shown in out
    assert "/show takes a result number from 1 to 5." in out
    # after /clear there is nothing to list or show
    assert out.endswith("No searches in the last message.\nNo results in the last message.\n")

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


def test_the_model_reads_where_each_result_is_so_it_can_cite_it(
    example: Path, fake_openai: FakeOpenAI
) -> None:
    """The tool message the LLM receives names each result's location and section, as MCP
    and the retrieval-only answer do (issue 60, item 4: it held only the source path)."""
    with_model(example, fake_openai.url)
    query = "retry policy defaults"
    fake_openai.chat.push(
        tool_calls(("knowledge_base", {"query": query}, "call_1")),
        text("Three attempts (guides/retries.md, lines 30-33)."),
    )
    done = run_holodeck(
        "chat", cwd=example, env={"OPENAI_API_KEY": KEY}, stdin="How often is a job retried?\n"
    )
    assert done.returncode == 0, done.stderr
    tool_reply = fake_openai.chat_requests()[1]["messages"][-1]
    assert tool_reply["role"] == "tool" and tool_reply["tool_call_id"] == "call_1"

    found = run_holodeck(
        "search", "--json", "--no-ingest", query, cwd=example, env={"OPENAI_API_KEY": KEY}
    )
    results = json.loads(found.stdout)["tools"][0]["results"]
    assert results[0]["location"] and results[0]["section"]
    lines = tool_reply["content"].splitlines()
    assert lines[0] == "Found 5 result(s):"
    for r in results:  # each result line: the contract's, then where the result is
        line = (
            f"[{r['rank']}] Score: {r['score']:.2f} | Source: {r['source_path']}"
            + (f" | Location: {r['location']}" if r["location"] else "")
            + (f" | Section: {r['section']}" if r["section"] else "")
        )
        assert line in lines, (line, tool_reply["content"])
        assert r["content"] in tool_reply["content"]  # the passage whole, as before


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


def test_answers_that_are_not_completions_are_errors_and_the_round_limit_is_told(
    example: Path, fake_openai: FakeOpenAI
) -> None:
    """A 200 that is no chat completion is one error line each (exit 3), never an empty answer;
    a turn cut by --max-tool-rounds says so."""
    with_model(example, fake_openai.url)
    fake_openai.chat.push(
        raw("<html><body>Sign in to the proxy</body></html>"),
        raw('{"id": "chatcmpl-1", "object": "chat.completion"}', "application/json"),
        raw('data: {"id": "chatcmpl-1", "choices": [{"index": 0, "del\n\n', "text/event-stream"),
        tool_calls(("knowledge_base", {"query": "retries"}, "call_1")),
        text("Jobs get 3 attempts."),
    )
    done = run_holodeck(
        "chat",
        "--max-tool-rounds",
        "1",
        cwd=example,
        env={"OPENAI_API_KEY": KEY},
        stdin="html?\nno choices?\ntruncated?\nretries?\n",
    )
    assert done.returncode == 3, done.stderr
    errors = [line for line in done.stderr.splitlines() if line.startswith("Error:")]
    assert len(errors) == 3, done.stderr
    assert all(f"openai at {fake_openai.url}" in e and "model.endpoint" in e for e in errors)
    assert "not an OpenAI-compatible stream" in errors[0]
    assert "invalid JSON" in errors[2]
    assert done.stdout.strip() == "Jobs get 3 attempts."
    assert (
        "Notice: the model reached the limit of 1 rounds of tool calls and answered from the "
        "searches made so far (--max-tool-rounds raises the limit)"
    ) in done.stderr
    assert "Traceback" not in done.stderr


def _where(result: dict) -> str:
    """The /sources cell of a result: section and location, or "-"."""
    return " · ".join(p for p in (result["section"], result["location"]) if p) or "-"
