"""``holodeck serve --protocol rest`` (issue 46): the agent over the original HoloDeck's REST
API, tested against the real server in a subprocess on a free port, with the fake
OpenAI-compatible model at the HTTP level (the real openai client and agent loop run).

Paths and payloads as the original has them; streamed events in order, tool calls and their
sources before the text; sessions that never see each other's turns; the bearer token;
/ready 503 until the first ingest has finished; a client that leaves mid-answer; a model
that fails mid-answer; the request size and rate limits; CORS.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import httpx2
import pytest
from cli_helpers import run_holodeck, write
from fake_openai import FakeOpenAI, stream_error, text, tool_calls
from rest_helpers import (
    CHAT,
    STREAM,
    GatedFakeOpenAI,
    RestServer,
    events,
    make_model_project,
    stream,
)
from serve_helpers import make_project, wait_for

from holodeck.serve.api_models import is_ulid, new_ulid

TOKEN_VAR = "HOLODECK_SERVE_TOKEN"


@pytest.fixture
def served(tmp_path: Path, fake_openai: FakeOpenAI) -> Iterator[RestServer]:
    """The station agent served and its first ingest finished."""
    project = make_model_project(tmp_path / "station", fake_openai.url)
    server = RestServer(project)
    try:
        server.wait_ready()
        yield server
        assert server.stop() == 0
        assert "Traceback" not in server.stderr()
    finally:
        server.kill()


def user_turns(body: dict) -> list[str]:
    """The user messages a model request carries, in order."""
    return [m["content"] for m in body["messages"] if m["role"] == "user"]


def test_the_original_paths_and_payloads(served: RestServer, fake_openai: FakeOpenAI) -> None:
    health = httpx2.get(served.url + "/health", timeout=30).json()
    assert health["status"] == "healthy" and health["agent_name"] == "station"
    assert health["agent_ready"] is True
    assert httpx2.get(served.url + "/ready", timeout=30).json()["ready"] is True

    fake_openai.chat.push(
        tool_calls(("station_docs", {"query": "airlock cycle time"})),
        text("The airlock cycles in ninety seconds."),
    )
    reply = httpx2.post(served.url + CHAT, json={"message": "How long is the airlock?"}, timeout=60)
    assert reply.status_code == 200, reply.text
    body = reply.json()
    assert body["content"] == "The airlock cycles in ninety seconds."
    assert is_ulid(body["session_id"]) and is_ulid(body["message_id"])
    assert isinstance(body["execution_time_ms"], int)
    (call,) = body["tool_calls"]
    assert (call["name"], call["arguments"], call["status"]) == (
        "station_docs",
        {"query": "airlock cycle time"},
        "success",
    )
    assert call["results"][0]["source"] == "docs/airlock.md"

    # the same session: the model sees the first turn; DELETE forgets it (204, idempotent)
    fake_openai.chat.push(text("Helmets."))
    again = {"message": "What must crew wear?", "session_id": body["session_id"]}
    assert httpx2.post(served.url + CHAT, json=again, timeout=60).json()["content"] == "Helmets."
    assert user_turns(fake_openai.chat_requests()[-1]) == [
        "How long is the airlock?",
        "What must crew wear?",
    ]
    for _ in range(2):
        gone = httpx2.delete(f"{served.url}/sessions/{body['session_id']}", timeout=30)
        assert gone.status_code == 204
    fake_openai.chat.push(text("Fresh."))
    httpx2.post(served.url + CHAT, json=again, timeout=60)
    assert user_turns(fake_openai.chat_requests()[-1]) == ["What must crew wear?"]

    # a bad request: 422 in FastAPI's shape (detail: a list), with a one-line title
    bad = httpx2.post(served.url + CHAT, json={"message": "hi", "session_id": "nope"}, timeout=30)
    assert bad.status_code == 422
    assert bad.json()["detail"][0]["loc"] == ["body", "session_id"]
    assert "session_id" in bad.json()["title"]
    huge = b'{"message": "' + b"x" * 300_000 + b'"}'
    too_big = httpx2.post(served.url + CHAT, content=huge, timeout=30)
    assert too_big.status_code == 413 and "KiB" in too_big.json()["detail"]
    other = httpx2.post(served.url + "/agent/other/chat", json={"message": "hi"}, timeout=30)
    assert other.status_code == 404 and "station" in other.json()["detail"]


def test_a_streamed_answer_sends_its_tool_calls_and_sources_before_the_text(
    served: RestServer, fake_openai: FakeOpenAI
) -> None:
    fake_openai.chat.push(
        tool_calls(("station_docs", {"query": "airlock"}, "call_a")),
        text("Ninety seconds, helmets on."),
    )
    got = stream(served.url, {"message": "Tell me about the airlock"})
    names = [name for name, _ in got]
    deltas = names.count("message_delta")
    assert deltas > 1  # the text streamed in pieces, as the model sent them
    assert names == [
        "stream_start",
        "tool_call_start",
        "tool_call_args",
        "tool_call_result",
        "tool_call_end",
        *["message_delta"] * deltas,
        "stream_end",
    ]
    data = dict(got[:5])
    message_id = data["stream_start"]["message_id"]
    assert data["tool_call_start"] == {
        "tool_call_id": "call_a",
        "name": "station_docs",
        "message_id": message_id,
    }
    assert data["tool_call_args"]["args_delta"] == '{"query": "airlock"}'
    first = data["tool_call_result"]["results"][0]
    assert first["source"] == "docs/airlock.md"
    assert (first["location"], first["section"]) == ("lines 1-5", "Airlock › Cycling")
    assert "airlock" in first["content"]
    assert data["tool_call_end"] == {"tool_call_id": "call_a", "status": "success"}
    text_sent = "".join(d["delta"] for n, d in got if n == "message_delta")
    assert text_sent == "Ninety seconds, helmets on."
    assert got[-1][1]["message_id"] == message_id


def test_two_sessions_never_see_each_other(served: RestServer, fake_openai: FakeOpenAI) -> None:
    ids = []
    for word in ("alpha", "beta"):
        fake_openai.chat.push(text(f"noted {word}"))
        start = stream(served.url, {"message": f"remember {word}"})[0][1]
        ids.append(start["session_id"])
    assert ids[0] != ids[1]
    for session_id, mine, theirs in ((ids[0], "alpha", "beta"), (ids[1], "beta", "alpha")):
        fake_openai.chat.push(text("ok"))
        stream(served.url, {"message": "what did I say?", "session_id": session_id})
        sent = fake_openai.chat_requests()[-1]
        assert user_turns(sent) == [f"remember {mine}", "what did I say?"]
        assert theirs not in str(sent["messages"])


def test_a_client_that_leaves_mid_answer_frees_its_turn(
    served: RestServer, fake_openai: FakeOpenAI
) -> None:
    # an answer that would stream for minutes: only a cancelled turn frees the session soon
    fake_openai.chat.push(text("word " * 400, delay=0.5))
    body = {"message": "Tell me everything"}
    with httpx2.stream("POST", served.url + STREAM, json=body, timeout=60) as response:
        got = events(response.iter_lines())
        session_id = next(got)[1]["session_id"]
        assert next(got)[0] == "message_delta"  # the answer has started; the client hangs up
    fake_openai.chat.push(text("Short answer."))
    follow = {"message": "Just the short version", "session_id": session_id}

    def answered() -> list | None:
        with httpx2.stream("POST", served.url + STREAM, json=follow, timeout=60) as response:
            if response.status_code == 409:  # the old turn is still being cancelled
                return None
            return list(events(response.iter_lines()))

    after = wait_for(answered, 60, None)
    assert after[-1][0] == "stream_end"
    # the turn the client left is forgotten: the model never sees it in the history
    assert user_turns(fake_openai.chat_requests()[-1]) == ["Just the short version"]


def test_a_model_that_fails_mid_answer_ends_the_stream_with_an_error_event(
    served: RestServer, fake_openai: FakeOpenAI
) -> None:
    fake_openai.chat.push(stream_error("overloaded_error", "Overloaded"))
    got = stream(served.url, {"message": "Hello?"})
    assert got[0][0] == "stream_start"
    name, error = got[-1]
    assert name == "error" and "stream_end" not in [n for n, _ in got]
    assert (error["status"], error["title"]) == (502, "Agent Error")
    assert "Overloaded" in error["detail"] or "fake-model" in error["detail"]
    # the session goes on: the failed turn left no trace in its history
    fake_openai.chat.push(text("Back again."))
    session_id = got[0][1]["session_id"]
    again = stream(served.url, {"message": "Hello again", "session_id": session_id})
    assert again[-1][0] == "stream_end"
    assert user_turns(fake_openai.chat_requests()[-1]) == ["Hello again"]


def test_ready_is_503_with_progress_until_the_first_ingest_has_finished(tmp_path: Path) -> None:
    with GatedFakeOpenAI() as model:
        project = make_model_project(tmp_path / "station", model.url)
        server = RestServer(project)
        try:
            waiting = httpx2.get(server.url + "/ready", timeout=30)
            assert waiting.status_code == 503
            assert waiting.headers["retry-after"]
            body = waiting.json()
            assert body["ready"] is False
            assert [t["name"] for t in body["tools"]] == ["station_docs"]
            assert "first ingest" in body["detail"]
            refused = httpx2.post(server.url + CHAT, json={"message": "hi"}, timeout=30)
            assert refused.status_code == 503 and "/ready" in refused.json()["detail"]
            assert httpx2.get(server.url + "/health", timeout=30).json()["agent_ready"] is False

            model.open.set()
            server.wait_ready()
            done = httpx2.get(server.url + "/ready", timeout=30).json()
            assert done["tools"][0]["state"] == "done" and done["tools"][0]["files_done"] == 3
            assert server.stop() == 0
        finally:
            model.open.set()
            server.kill()


def test_the_token_is_needed_for_the_api_but_not_for_the_page(
    tmp_path: Path, fake_openai: FakeOpenAI
) -> None:
    project = make_model_project(tmp_path / "station", fake_openai.url)
    server = RestServer(project, env={TOKEN_VAR: "s3cret-token-for-the-rest-test"})
    try:
        asked = {"message": "hi"}
        refused = httpx2.post(server.url + CHAT, json=asked, timeout=30)
        assert refused.status_code == 401
        assert "HOLODECK_SERVE_TOKEN" in refused.json()["error_description"]
        wrong = {"Authorization": "Bearer nope"}
        assert (
            httpx2.post(server.url + CHAT, json=asked, headers=wrong, timeout=30).status_code == 401
        )
        assert httpx2.get(server.url + "/ready", timeout=30).status_code == 401
        assert httpx2.get(server.url + "/", timeout=30).status_code == 200  # the page asks for it
        assert httpx2.get(server.url + "/health", timeout=30).status_code == 200
        right = {"Authorization": "Bearer s3cret-token-for-the-rest-test"}
        server.wait_ready(right)
        fake_openai.chat.push(text("Hello."))
        ok = httpx2.post(server.url + CHAT, json=asked, headers=right, timeout=60)
        assert ok.status_code == 200 and ok.json()["content"] == "Hello."
        assert "s3cret-token-for-the-rest-test" not in server.stderr()
        assert server.stop() == 0
    finally:
        server.kill()


def test_a_token_in_dotenv_is_said_to_be_ignored_by_the_rest_server_too(
    tmp_path: Path, fake_openai: FakeOpenAI
) -> None:
    """serve reads the token only from its environment: a token in ``.env`` leaves the REST
    server open, and it says so once, as MCP over HTTP does."""
    project = make_model_project(tmp_path / "station", fake_openai.url)
    (project / ".env").write_text(f"{TOKEN_VAR}=a-token-kept-in-dotenv-5678\n")
    server = RestServer(project)
    try:
        server.wait_ready()  # no token asked, as documented
        assert server.stop() == 0
    finally:
        server.kill()
    said = [line for line in server.stderr().splitlines() if ".env sets" in line]
    assert len(said) == 1 and TOKEN_VAR in said[0], server.stderr()
    assert "a-token-kept-in-dotenv-5678" not in server.stderr()


def test_rate_and_cors_limits(tmp_path: Path, fake_openai: FakeOpenAI) -> None:
    project = make_model_project(tmp_path / "station", fake_openai.url)
    origin = "http://app.example"
    # 2 a minute: a third request within 30 s is refused (the bucket refills 1 per 30 s)
    server = RestServer(project, "--rate-limit", "2", "--cors-origins", origin)
    try:
        server.wait_ready()
        for _ in range(2):
            fake_openai.chat.push(text("ok"))
            assert (
                httpx2.post(server.url + CHAT, json={"message": "hi"}, timeout=60).status_code
                == 200
            )
        limited = httpx2.post(server.url + CHAT, json={"message": "hi"}, timeout=30)
        assert limited.status_code == 429
        assert int(limited.headers["retry-after"]) >= 1
        assert "2 chat requests a minute" in limited.json()["detail"]

        preflight = {"Origin": origin, "Access-Control-Request-Method": "POST"}
        allowed = httpx2.options(server.url + CHAT, headers=preflight, timeout=30)
        assert allowed.headers.get("access-control-allow-origin") == origin
        stranger = {**preflight, "Origin": "http://evil.example"}
        denied = httpx2.options(server.url + CHAT, headers=stranger, timeout=30)
        assert "access-control-allow-origin" not in denied.headers
        assert server.stop() == 0
    finally:
        server.kill()


def test_no_cors_origin_is_allowed_by_default(served: RestServer) -> None:
    got = httpx2.get(served.url + "/health", headers={"Origin": "http://app.example"}, timeout=30)
    assert "access-control-allow-origin" not in got.headers


def test_every_interface_without_a_token_is_refused(tmp_path: Path) -> None:
    project = make_project(tmp_path / "station")
    result = run_holodeck(
        "serve", "--protocol", "rest", "--host", "0.0.0.0", "--port", "0",
        cwd=project, stdin="", own_process=True, timeout=180,
    )  # fmt: skip
    assert result.returncode == 2, result.stderr
    line = result.stderr.strip().splitlines()[-1]
    assert line.startswith("Error: --host 0.0.0.0 (port 0) can be reached from other machines")
    assert TOKEN_VAR in line and "Traceback" not in result.stderr


def test_mcp_options_and_rest_options_do_not_mix(tmp_path: Path) -> None:
    project = make_project(tmp_path / "station")
    result = run_holodeck("serve", "--port", "9000", cwd=project, stdin="")
    assert result.returncode == 2 and "--port is for --protocol rest" in result.stderr
    result = run_holodeck("serve", "--protocol", "rest", "--http", "9000", cwd=project, stdin="")
    assert result.returncode == 2 and "--http and --tool are for MCP" in result.stderr


def test_a_client_that_leaves_a_whole_answer_frees_its_turn(
    served: RestServer, fake_openai: FakeOpenAI
) -> None:
    session_id = new_ulid()  # a client may name its session, as the original allows
    fake_openai.chat.push(text("Too late.", wait=300))  # a model that takes minutes
    slow = {"message": "Slow question", "session_id": session_id}
    with pytest.raises(httpx2.TimeoutException):
        httpx2.post(served.url + CHAT, json=slow, timeout=3)
    fake_openai.chat.push(text("Quick."))
    follow = {"message": "Quick question", "session_id": session_id}

    def answered() -> dict | None:
        reply = httpx2.post(served.url + CHAT, json=follow, timeout=60)
        return None if reply.status_code == 409 else reply.json()

    assert wait_for(answered, 60, None)["content"] == "Quick."
    assert user_turns(fake_openai.chat_requests()[-1]) == ["Quick question"]


def test_a_failing_tool_call_is_reported_and_the_answer_goes_on(
    served: RestServer, fake_openai: FakeOpenAI
) -> None:
    fake_openai.chat.push(
        tool_calls(("no_such_tool", {"query": "x"}, "call_bad")),
        text("I could not search that."),
    )
    got = stream(served.url, {"message": "Use a tool that is not there"})
    data = dict(got)
    assert data["tool_call_result"]["error"].startswith("unknown tool 'no_such_tool'")
    assert data["tool_call_end"] == {"tool_call_id": "call_bad", "status": "error"}
    assert got[-1][0] == "stream_end"


def test_a_file_added_while_serving_is_found(served: RestServer, fake_openai: FakeOpenAI) -> None:
    project = served.err_path.parent
    write(project / "docs" / "greenhouse.md", "The greenhouse dome grows strawberries.\n")
    wait_for(lambda: "station_docs: 1 new" in served.stderr(), 120, None)
    fake_openai.chat.push(
        tool_calls(("station_docs", {"query": "The greenhouse dome grows strawberries."})),
        text("Strawberries."),
    )
    got = stream(served.url, {"message": "What grows in the greenhouse?"})
    found = dict(got)["tool_call_result"]["results"]
    assert found[0]["source"] == "docs/greenhouse.md"


def test_without_a_model_each_message_searches_every_knowledge_base(tmp_path: Path) -> None:
    project = make_project(tmp_path / "station")  # no model: retrieval-only, the local model
    server = RestServer(project)
    try:
        server.wait_ready()
        assert httpx2.get(server.url + "/health", timeout=30).json()["retrieval_only"] is True
        question = {"message": "How long does the airlock take to cycle?"}
        got = stream(server.url, question, agent="serve-test")
        names = [name for name, _ in got]
        assert names[0] == "stream_start" and names[-2:] == ["message_delta", "stream_end"]
        assert (
            names[1:-2]
            == ["tool_call_start", "tool_call_args", "tool_call_result", "tool_call_end"] * 2
        )
        results = {d["name"]: d["results"] for n, d in got if n == "tool_call_result"}
        assert set(results) == {"station_docs", "faq"}
        assert results["station_docs"][0]["source"] == "docs/airlock.md"
        assert "docs/airlock.md" in got[-2][1]["delta"]  # the formatted results, as chat shows
        assert server.stop() == 0
    finally:
        server.kill()


CALC_SERVER = '''
from mcp.server.mcpserver import MCPServer

app = MCPServer("calc")


@app.tool()
def add(a: float, b: float) -> float:
    """Add two numbers."""
    return a + b


app.run()
'''
CREW = '''
def crew_count(deck: str) -> str:
    """How many crew live on a deck.

    Args:
        deck: the deck's name
    """
    return f"{deck}: 12 crew"
'''


def test_the_agents_function_and_mcp_tools_are_served_too(
    tmp_path: Path, fake_openai: FakeOpenAI
) -> None:
    project = make_model_project(tmp_path / "station", fake_openai.url)
    write(project / "calc_server.py", CALC_SERVER)
    write(project / "tools" / "crew.py", CREW)
    with (project / "agent.yaml").open("a") as agent:
        agent.write(
            "  - name: crew_count\n    type: function\n    description: Crew per deck\n"
            "    file: tools/crew.py\n    function: crew_count\n"
            f"  - name: calc\n    type: mcp\n    description: A calculator\n"
            f"    command: {sys.executable}\n    args: [calc_server.py]\n"
        )
    server = RestServer(project)
    try:
        server.wait_ready()
        fake_openai.chat.push(
            tool_calls(("crew_count", {"deck": "B"}), ("calc__add", {"a": 2, "b": 40})),
            text("Deck B has 12 crew; 2 + 40 is 42."),
        )
        got = stream(server.url, {"message": "Crew on deck B, and 2 + 40?"})
        results = {d["name"]: d for n, d in got if n == "tool_call_result"}
        assert set(results) == {"crew_count", "calc__add"}
        assert results["crew_count"]["kind"] == "function"
        assert results["calc__add"]["kind"] == "mcp"
        assert all(r["error"] is None and r["results"] == [] for r in results.values())
        sent = fake_openai.chat_requests()[-1]["messages"]
        outputs = sorted(m["content"] for m in sent if m["role"] == "tool")
        assert outputs[0].startswith("42") and outputs[1] == "B: 12 crew"
        assert server.stop() == 0
    finally:
        server.kill()


def test_sigterm_stops_the_server_during_a_streamed_answer(
    tmp_path: Path, fake_openai: FakeOpenAI
) -> None:
    project = make_model_project(tmp_path / "station", fake_openai.url)
    server = RestServer(project)
    try:
        server.wait_ready()
        fake_openai.chat.push(text("word " * 400, delay=0.5))  # minutes of answer
        body = {"message": "Tell me everything"}
        with httpx2.stream("POST", server.url + STREAM, json=body, timeout=60) as response:
            got = events(response.iter_lines())
            assert next(got)[0] == "stream_start"
            assert next(got)[0] == "message_delta"
            assert server.stop(timeout=60) == 0  # the open stream does not keep it running
        assert "Stopped serving" in server.stderr()
        assert "Traceback" not in server.stderr()
    finally:
        server.kill()


def test_no_auth_serves_every_interface_with_a_warning(
    tmp_path: Path, fake_openai: FakeOpenAI
) -> None:
    project = make_model_project(tmp_path / "station", fake_openai.url)
    server = RestServer(project, "--host", "0.0.0.0", "--no-auth")
    try:
        wait_for(lambda: "no authentication (--no-auth)" in server.stderr(), 60, None)
        assert "Warning: http://0.0.0.0:" in server.stderr()
        assert httpx2.get(server.url + "/health", timeout=30).status_code == 200
        assert server.stop() == 0
    finally:
        server.kill()
