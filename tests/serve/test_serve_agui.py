"""``holodeck serve --protocol ag-ui`` (issue 46, item E): the agent over the AG-UI protocol
at the original HoloDeck's ``POST /awp``, read here as a CopilotKit-style client reads it
(camelCase JSON events over SSE). The real server in a subprocess, the fake model at the
HTTP level."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx2
import pytest
from cli_helpers import error_line, run_holodeck
from fake_openai import FakeOpenAI, stream_error, text, tool_calls
from rest_helpers import RestServer, events, make_model_project


@pytest.fixture
def served(tmp_path: Path, fake_openai: FakeOpenAI) -> Iterator[RestServer]:
    project = make_model_project(tmp_path / "station", fake_openai.url)
    server = RestServer(project, protocol="ag-ui")
    try:
        server.wait_ready()
        yield server
        assert server.stop() == 0
        assert "Traceback" not in server.stderr()
    finally:
        server.kill()


def run(server: RestServer, thread: str, question: str) -> list[dict[str, Any]]:
    """One AG-UI run: its events' data, in order."""
    body = {
        "threadId": thread,
        "runId": f"run-{question[:8]}",
        "messages": [{"id": "m1", "role": "user", "content": question}],
        "state": {},
        "tools": [],
        "context": [],
        "forwardedProps": {},
    }
    with httpx2.stream("POST", server.url + "/awp", json=body, timeout=60) as response:
        assert response.status_code == 200, response.read()
        return [data for _, data in events(response.iter_lines())]


def test_a_run_streams_tool_calls_then_the_text(
    served: RestServer, fake_openai: FakeOpenAI
) -> None:
    assert "REST and AG-UI (POST /awp)" in served.stderr()
    fake_openai.chat.push(
        tool_calls(("station_docs", {"query": "airlock"}, "call_1")),
        text("Ninety seconds."),
    )
    got = run(served, "thread-a", "How long is the airlock?")
    types = [e["type"] for e in got]
    contents = types.count("TEXT_MESSAGE_CONTENT")
    assert types == [
        "RUN_STARTED",
        "TOOL_CALL_START",
        "TOOL_CALL_ARGS",
        "TOOL_CALL_END",
        "TOOL_CALL_RESULT",
        "TEXT_MESSAGE_START",
        *["TEXT_MESSAGE_CONTENT"] * contents,
        "TEXT_MESSAGE_END",
        "RUN_FINISHED",
    ]
    assert (got[0]["threadId"], got[-1]["threadId"]) == ("thread-a", "thread-a")
    assert got[1]["toolCallName"] == "station_docs" and got[1]["toolCallId"] == "call_1"
    assert json.loads(got[2]["delta"]) == {"query": "airlock"}
    result = got[4]
    assert "airlock cycles" in result["content"]
    sources = result["metadata"]["holodeck"]["results"]
    assert sources[0]["source"] == "docs/airlock.md" and sources[0]["section"]
    assert "".join(e["delta"] for e in got if e["type"] == "TEXT_MESSAGE_CONTENT") == (
        "Ninety seconds."
    )

    # the thread is the session: the next run's model request carries the first turn
    fake_openai.chat.push(text("Helmets."))
    run(served, "thread-a", "What must crew wear?")
    users = [
        m["content"] for m in fake_openai.chat_requests()[-1]["messages"] if m["role"] == "user"
    ]
    assert users == ["How long is the airlock?", "What must crew wear?"]


def test_a_model_failure_ends_the_run_with_run_error(
    served: RestServer, fake_openai: FakeOpenAI
) -> None:
    fake_openai.chat.push(stream_error("overloaded_error", "Overloaded"))
    got = run(served, "thread-b", "Hello?")
    assert got[0]["type"] == "RUN_STARTED"
    assert got[-1]["type"] == "RUN_ERROR" and got[-1]["code"] == "agent_error"
    assert "RUN_FINISHED" not in [e["type"] for e in got]


def test_a_run_without_a_user_message_is_refused(served: RestServer) -> None:
    body = {"threadId": "t", "runId": "r", "messages": [], "state": {}, "tools": [], "context": []}
    refused = httpx2.post(served.url + "/awp", json=body, timeout=30)
    assert refused.status_code == 422
    assert "no user message" in refused.json()["title"]


def test_ag_ui_without_its_extra_names_it(tmp_path: Path) -> None:
    from test_extras import without

    project = make_model_project(tmp_path / "station", "http://127.0.0.1:9/v1")
    done = run_holodeck(
        "serve", "--protocol", "ag-ui", cwd=project, env=without(tmp_path, "ag_ui"),
        own_process=True, stdin="",
    )  # fmt: skip
    assert done.returncode == 2
    assert error_line(done) == (
        "Error: serve --protocol ag-ui needs the extra holodeck[ag-ui] (package ag_ui is not "
        "installed): pip install 'holodeck[ag-ui]'"
    )
