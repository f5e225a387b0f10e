"""``holodeck serve --trace FILE``: one server span per HTTP request and per MCP tool call,
continuing the caller's trace (``traceparent``), the agent's turn below it (issue 45)."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import anyio
import httpx2
from cli_helpers import run_holodeck
from fake_openai import FakeOpenAI, text, tool_calls
from mcp import Client, StdioServerParameters
from mcp.client.stdio import stdio_client
from rest_helpers import CHAT, RestServer, make_model_project
from serve_helpers import make_project, server_env

TRACE_ID = "4bf92f3577b34da6a3ce929d0e0e4736"
PARENT_ID = "00f067aa0ba902b7"
TRACEPARENT = f"00-{TRACE_ID}-{PARENT_ID}-01"


def spans(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def test_a_rest_request_is_a_server_span_in_the_callers_trace(
    tmp_path: Path, fake_openai: FakeOpenAI
) -> None:
    project = make_model_project(tmp_path / "station", fake_openai.url)
    server = RestServer(project, "--trace", "serve.jsonl")
    try:
        server.wait_ready()
        fake_openai.chat.push(
            tool_calls(("station_docs", {"query": "airlock cycle time"})),
            text("The airlock cycles in ninety seconds."),
        )
        reply = httpx2.post(
            server.url + CHAT,
            json={"message": "How long is the airlock?"},
            headers={"traceparent": TRACEPARENT},
            timeout=60,
        )
        assert reply.status_code == 200, reply.text
        assert server.stop() == 0
    finally:
        server.kill()
    found = spans(project / "serve.jsonl")
    (request,) = [s for s in found if s["name"] == f"POST {CHAT}"]
    assert request["kind"] == "SpanKind.SERVER"
    assert request["context"]["trace_id"] == f"0x{TRACE_ID}"
    assert request["parent_id"] == f"0x{PARENT_ID}"
    assert request["attributes"]["http.response.status_code"] == 200
    (turn,) = [s for s in found if s["name"] == "invoke_agent station"]
    assert turn["parent_id"] == request["context"]["span_id"]
    calls = [s for s in found if s["parent_id"] == turn["context"]["span_id"]]
    assert sorted(s["name"] for s in calls) == [
        "chat fake-model",
        "chat fake-model",
        "execute_tool station_docs",
    ]
    usage = [s["attributes"].get("gen_ai.usage.input_tokens") for s in calls if "chat" in s["name"]]
    assert all(isinstance(n, int) and n > 0 for n in usage)  # whole answers carry usage


def test_an_mcp_tool_call_is_a_server_span_in_the_callers_trace(tmp_path: Path) -> None:
    project = make_project(tmp_path)
    assert run_holodeck("ingest", cwd=project).returncode == 0  # the tool is ready at once
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "holodeck", "serve", "--trace", "mcp.jsonl"],
        cwd=project,
        env=server_env(project),
    )

    async def call() -> None:
        with (project / "serve.err").open("w") as errlog:
            async with Client(stdio_client(params, errlog=errlog)) as client:
                result = await client.call_tool(
                    "station_docs", {"query": "airlock"}, meta={"traceparent": TRACEPARENT}
                )
                assert not result.is_error

    anyio.run(call)
    found = spans(project / "mcp.jsonl")
    (tool,) = [s for s in found if s["name"] == "tools/call station_docs"]
    assert tool["kind"] == "SpanKind.SERVER"
    assert tool["context"]["trace_id"] == f"0x{TRACE_ID}"
    assert tool["parent_id"] == f"0x{PARENT_ID}"
    assert tool["attributes"]["mcp.method.name"] == "tools/call"
    (search,) = [s for s in found if s["name"] == "execute_tool station_docs"]
    assert search["parent_id"] == tool["context"]["span_id"]
    assert search["attributes"]["holodeck.search.results"] >= 1
