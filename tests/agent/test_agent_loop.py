"""The agent loop against a fake OpenAI-compatible server: the real openai client, real tools."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Coroutine
from typing import Any, TypeVar

import openai
import pytest
from fake_openai import FakeOpenAI, error, raw, text, tool_calls

from holodeck.agent.loop import Agent, ToolCallRecord
from holodeck.config.loader import Project
from holodeck.errors import LLMError
from holodeck.providers import Connection, make_async_client
from holodeck.tools.vectorstore_tool import VectorStoreTool

KB = tuple[Project, list[VectorStoreTool]]
API_KEY = "sk-test-0123456789abcdef"  # the .env of the kb fixture (conftest.py)

#: The contract's "Function Definition Provided to LLM", as a chat request carries it.
CONTRACT_TOOL = {
    "type": "function",
    "function": {
        "name": "knowledge_base",
        "description": "Semantic search over product documentation",
        "parameters": {
            "type": "object",
            "properties": {
                "query": {"type": "string", "description": "Natural language search query"}
            },
            "required": ["query"],
        },
    },
}


T = TypeVar("T")


def run(coro: Coroutine[Any, Any, T]) -> T:
    return asyncio.run(coro)


def tool_messages(request: dict[str, Any]) -> list[dict[str, Any]]:
    return [m for m in request["messages"] if m["role"] == "tool"]


def test_tool_call_round_trip(kb: KB, llm: FakeOpenAI) -> None:
    project, tools = kb
    llm.chat.push(
        tool_calls(
            ("knowledge_base", {"query": "How often is a failed job retried?"}, "call_abc123")
        ),
        text("Three times in total (guides/retries.md)."),
    )
    agent = Agent.from_project(project, tools)
    seen: list[ToolCallRecord] = []
    result = run(agent.run_turn("How often are jobs retried?", on_tool=seen.append))

    assert result.answer == "Three times in total (guides/retries.md)."
    first, second = llm.chat_requests()
    assert first["model"] == "fake-model"
    assert first["tools"] == [CONTRACT_TOOL]
    assert first["messages"][0] == {
        "role": "system",
        "content": "You answer from the knowledge base.",
    }
    assert first["messages"][-1] == {"role": "user", "content": "How often are jobs retried?"}
    assert llm.requests[0].headers["authorization"] == f"Bearer {API_KEY}"

    # The assistant's tool call and the tool's result go back, paired by tool_call_id.
    assistant = second["messages"][-2]
    assert assistant["tool_calls"][0]["id"] == "call_abc123"
    (reply,) = tool_messages(second)
    assert reply["tool_call_id"] == "call_abc123"
    expected = model_view(tools[0], "How often is a failed job retried?")
    assert reply["content"] == expected
    assert expected.startswith("Found 2 result(s):\n\n[1] Score: ")
    # the contract's result line, then where the result is: the model can cite it
    line = expected.split("\n\n")[1].splitlines()[0]
    assert "| Source: docs/guides/retries.md | Location: lines 1-3 | Section: Retries" in line

    (record,) = result.tool_calls
    assert seen == [record]
    assert record.id == "call_abc123" and record.tool == "knowledge_base"
    assert record.query == "How often is a failed job retried?"
    assert record.output == expected and record.error is None
    assert record.results[0].source_path == "docs/guides/retries.md"
    assert result.rounds == 2


def test_two_tool_calls_in_one_turn_streamed(kb: KB, llm: FakeOpenAI) -> None:
    project, tools = kb
    llm.chat.push(
        tool_calls(
            ("knowledge_base", {"query": "bearer token authorization header"}, "call_auth"),
            ("knowledge_base", {"query": "nightly database backup"}, "call_backup"),
        ),
        text("Tokens go in the Authorization header; backups run nightly."),
    )
    agent = Agent.from_project(project, tools)
    streamed: list[str] = []
    result = run(agent.run_turn("auth and backups?", on_text=streamed.append))

    assert all(r.get("stream") is True for r in llm.chat_requests())
    assert "".join(streamed) == result.answer
    assert len(streamed) > 1  # it arrived in pieces
    replies = tool_messages(llm.chat_requests()[1])
    assert [r["tool_call_id"] for r in replies] == ["call_auth", "call_backup"]
    assert "Source: docs/guides/auth.md" in replies[0]["content"].split("\n\n")[1]
    assert "Source: docs/operations/backup.md" in replies[1]["content"].split("\n\n")[1]
    assert [r.id for r in result.tool_calls] == ["call_auth", "call_backup"]


def test_malformed_tool_calls_go_back_to_the_model(kb: KB, llm: FakeOpenAI) -> None:
    project, tools = kb
    llm.chat.push(
        tool_calls(
            ("knowledge_base", '{"query": "retries', "call_bad_json"),
            ("knowledge_base", {"query": "   "}, "call_empty"),
            ("knowledge_base", {"q": "retries"}, "call_no_query"),
            ("web_search", {"query": "retries"}, "call_unknown"),
        ),
        text("Sorry, my searches failed."),
    )
    agent = Agent.from_project(project, tools)
    result = run(agent.run_turn("retries?"))

    assert result.answer == "Sorry, my searches failed."
    replies = {r["tool_call_id"]: r["content"] for r in tool_messages(llm.chat_requests()[1])}
    assert replies["call_bad_json"].startswith("Error: arguments are not valid JSON")
    assert replies["call_empty"] == "Error: Search query cannot be empty"
    assert replies["call_no_query"].startswith("Error: Search query cannot be empty")
    assert "unknown tool 'web_search'" in replies["call_unknown"]
    assert all(r.error and not r.results for r in result.tool_calls)
    assert result.tool_calls[0].arguments == {}


def test_rate_limit_then_success_honours_retry_after(kb: KB, llm: FakeOpenAI) -> None:
    project, tools = kb
    llm.chat.push(error(429, "Rate limit reached", headers={"Retry-After": "0.6"}), text("ok"))
    agent = Agent.from_project(project, tools)
    started = time.perf_counter()
    result = run(agent.run_turn("hello"))
    assert result.answer == "ok"
    assert [r.status for r in llm.requests] == [429, 200]
    assert time.perf_counter() - started >= 0.6


def test_rate_limit_that_never_ends_is_one_line(kb: KB, llm: FakeOpenAI) -> None:
    project, tools = kb
    llm.chat.push(*[error(429, "Rate limit reached", headers={"retry-after-ms": "10"})] * 10)
    agent = Agent.from_project(project, tools)
    with pytest.raises(LLMError, match=r"rate limiting requests \(429\).*Rate limit reached"):
        run(agent.run_turn("hello"))
    assert len(llm.requests) == 4  # the first try and 3 retries


def test_bad_key_fails_fast_without_the_key(kb: KB, llm: FakeOpenAI) -> None:
    project, tools = kb
    llm.chat.push(error(401, f"Incorrect API key provided: {API_KEY}"))
    agent = Agent.from_project(project, tools)
    with pytest.raises(LLMError) as caught:
        run(agent.run_turn("hello"))
    message = str(caught.value)
    assert "refused the API key (401)" in message and "OPENAI_API_KEY" in message
    assert API_KEY not in message and "\n" not in message
    assert len(llm.requests) == 1  # not retried
    assert agent.messages == []  # the failed turn is forgotten


def test_model_not_found(kb: KB, llm: FakeOpenAI) -> None:
    project, tools = kb
    llm.chat.push(error(404, "The model `fake-model` does not exist"))
    agent = Agent.from_project(project, tools)
    with pytest.raises(LLMError, match=r"model 'fake-model' not found at openai at .* \(404\)"):
        run(agent.run_turn("hello"))


def test_unreachable_server(kb: KB, llm: FakeOpenAI) -> None:
    project, tools = kb
    conn = Connection("openai", "http://127.0.0.1:9/v1", "sk-x", "OPENAI_API_KEY")
    agent = Agent(project, tools, make_async_client(conn, max_retries=0), connection=conn)
    with pytest.raises(LLMError, match=r"cannot reach openai at http://127.0.0.1:9/v1"):
        run(agent.run_turn("hello"))


def test_tool_rounds_are_bounded(kb: KB, llm: FakeOpenAI) -> None:
    project, tools = kb
    for n in range(2):
        llm.chat.push(tool_calls(("knowledge_base", {"query": f"retries {n}"}, f"call_{n}")))
    llm.chat.push(text("Done searching."))
    agent = Agent(project, tools, _client(llm), max_tool_rounds=2)
    result = run(agent.run_turn("loop"))

    requests = llm.chat_requests()
    assert len(requests) == 3 and result.rounds == 3
    assert "tool_choice" not in requests[0] and "tool_choice" not in requests[1]
    assert requests[2]["tool_choice"] == "none"  # the last request may not call tools
    assert [r.id for r in result.tool_calls] == ["call_0", "call_1"]
    assert result.answer == "Done searching."
    assert result.notice is not None and "limit of 2 rounds of tool calls" in result.notice


def test_no_notice_below_the_round_limit(kb: KB, llm: FakeOpenAI) -> None:
    project, tools = kb
    llm.chat.push(tool_calls(("knowledge_base", {"query": "retries"}, "c0")), text("Three."))
    result = run(Agent(project, tools, _client(llm), max_tool_rounds=2).run_turn("retries?"))
    assert result.answer == "Three." and result.notice is None


def test_tool_calls_past_the_bound_are_not_run(kb: KB, llm: FakeOpenAI) -> None:
    """A server that ignores tool_choice="none" still cannot make the loop go on."""
    project, tools = kb
    for n in range(3):
        llm.chat.push(tool_calls(("knowledge_base", {"query": f"retries {n}"}, f"call_{n}")))
    agent = Agent(project, tools, _client(llm), max_tool_rounds=2)
    result = run(agent.run_turn("loop"))
    assert len(llm.chat_requests()) == 3
    assert [r.id for r in result.tool_calls] == ["call_0", "call_1"]
    assert result.answer == ""
    assert result.notice is not None
    assert "limit of 2 rounds" in result.notice and "1 more, not run" in result.notice
    assert "tool_calls" not in agent.messages[-1]  # the history stays valid for the next turn


def test_history_is_kept_and_cleared(kb: KB, llm: FakeOpenAI) -> None:
    project, tools = kb
    llm.chat.push(text("first answer"), text("second answer"), text("third answer"))
    agent = Agent.from_project(project, tools)
    run(agent.run_turn("one"))
    run(agent.run_turn("two"))
    roles = [(m["role"], m.get("content")) for m in llm.chat_requests()[1]["messages"]]
    assert roles == [
        ("system", "You answer from the knowledge base."),
        ("user", "one"),
        ("assistant", "first answer"),
        ("user", "two"),
    ]
    agent.reset()
    run(agent.run_turn("three"))
    assert [m["role"] for m in llm.chat_requests()[2]["messages"]] == ["system", "user"]


def test_cancelled_turn_is_forgotten(kb: KB, llm: FakeOpenAI) -> None:
    project, tools = kb
    llm.chat.push(text("a slow answer " * 20, delay=0.05))
    agent = Agent.from_project(project, tools)
    pieces: list[str] = []

    async def interrupt() -> None:
        task = asyncio.ensure_future(agent.run_turn("slow?", on_text=pieces.append))
        while not pieces:
            await asyncio.sleep(0.01)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    run(interrupt())
    assert pieces and agent.messages == []


def test_retrieval_only(kb: KB) -> None:
    project, tools = kb
    agent = Agent(project, tools)  # no client
    assert agent.retrieval_only
    result = run(agent.run_turn("bearer token"))
    expected = model_view(tools[0], "bearer token")
    assert result.answer == expected and "| Location: " in expected
    (record,) = result.tool_calls
    assert record.id == "" and record.arguments == {"query": "bearer token"}
    assert record.results[0].source_path == "docs/guides/auth.md"
    assert result.rounds == 0


def model_view(tool: VectorStoreTool, query: str) -> str:
    """What the model reads of ``tool``'s results for ``query``: the model's view."""
    results, total = tool.find(query)
    return tool.render(query, results, total, view="model")


def _client(server: FakeOpenAI) -> openai.AsyncOpenAI:
    return make_async_client(Connection("openai", server.url, API_KEY, "OPENAI_API_KEY"))


def test_request_body_is_plain_json(kb: KB, llm: FakeOpenAI) -> None:
    """Temperature and max_tokens reach the request; arguments stay the model's raw string."""
    project, tools = kb
    llm.chat.push(tool_calls(("knowledge_base", {"query": "backup"}, "c1")), text("ok"))
    model = project.agent.model
    assert model is not None
    tuned = model.model_copy(update={"temperature": 0.1, "max_tokens": 50})
    tuned_project = Project(
        project.agent_path,
        project.root,
        project.agent.model_copy(update={"model": tuned}),
        project.tools,
    )
    run(Agent(tuned_project, tools, _client(llm)).run_turn("backup?"))
    first, second = llm.chat_requests()
    assert first["temperature"] == 0.1 and first["max_tokens"] == 50
    call = second["messages"][-2]["tool_calls"][0]
    assert json.loads(call["function"]["arguments"]) == {"query": "backup"}


#: Answers with status 200 that are not chat completions, and what the error must say.
NOT_COMPLETIONS = [
    (raw("<html><body>Please log in</body></html>"), "not a chat completion"),
    (raw('{"id": "x", "object": "chat.completion"}', "application/json"), "not a chat completion"),
    (raw('{"id": "x", "choices": [{"index": 0, "mess', "application/json"), "invalid JSON"),
    (raw('data: {"id": "x", "choices": [{"index": 0, "del\n\n', "text/event-stream"), ""),
]


@pytest.mark.parametrize("streamed", [False, True], ids=["whole", "streamed"])
@pytest.mark.parametrize(
    ("reply", "says"), NOT_COMPLETIONS, ids=["html", "no-choices", "truncated", "sse-cut"]
)
def test_an_answer_that_is_not_a_completion_is_an_error(
    kb: KB, llm: FakeOpenAI, reply: Any, says: str, streamed: bool
) -> None:
    """Never an empty answer: an LLMError naming the server and the endpoint to check."""
    project, tools = kb
    llm.chat.push(reply)
    agent = Agent(project, tools, _client(llm))
    on_text = [].append if streamed else None
    with pytest.raises(LLMError) as caught:
        run(agent.run_turn("hello", on_text=on_text))
    message = str(caught.value)
    assert f"openai at {llm.url}" in message and "model.endpoint" in message
    if not streamed:
        assert says in message
    assert agent.messages == []  # the failed turn is forgotten


@pytest.mark.parametrize("streamed", [False, True], ids=["whole", "streamed"])
def test_an_empty_answer_is_an_error(kb: KB, llm: FakeOpenAI, streamed: bool) -> None:
    project, tools = kb
    llm.chat.push(text(""))
    agent = Agent(project, tools, _client(llm))
    with pytest.raises(LLMError, match=r"returned an empty answer \(finish_reason: stop\)"):
        run(agent.run_turn("hello", on_text=[].append if streamed else None))
