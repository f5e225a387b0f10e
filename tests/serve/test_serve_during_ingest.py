"""Searches through ``holodeck serve`` never wait for a re-ingest, on every backend.

A large batch of files is dropped into the source while the server runs; while the watcher's
pass is still embedding them (its progress is on stderr, its summary line not yet), MCP
calls keep answering from what the index has committed, without errors, and the documents
already there are still found. Once the pass ends, the new documents are found too.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from cli_helpers import write
from mcp import Client
from serve_helpers import HttpServer, make_project, sources, wait_for

NEW_FILES = 20


def long_text(topic: int) -> str:
    """Distinct paragraphs, so every file costs several chunks to embed."""
    return "\n\n".join(
        f"Logbook {topic}, entry {i}: the survey drone {topic}-{i} mapped crater {i * 13} "
        f"and measured {i * 7} millisieverts near ridge {topic * 3 + i}. The pilot noted "
        f"dust storm {i} and recalibrated sensor array {topic}.{i} before returning."
        for i in range(6)
    )


@pytest.fixture(
    params=[
        "local",
        pytest.param("redis", marks=pytest.mark.redis),
        pytest.param("postgres", marks=pytest.mark.postgres),
    ]
)
def project(request: pytest.FixtureRequest, tmp_path: Path) -> Path:
    root = make_project(tmp_path / "station")
    if request.param != "local":
        prefix = "pg" if request.param == "postgres" else "redis"
        url = request.getfixturevalue(f"{prefix}_url")
        index = request.getfixturevalue(f"{prefix}_index_name")
        write(
            root / ".holodeck" / "config.yaml",
            f"vectorstore:\n  provider: {request.param}\n  connection_string: {url}\n"
            f"  index_name: {index}\n",
        )
    return root


def test_searches_answer_while_a_big_pass_is_running(project: Path) -> None:
    server = HttpServer(project)
    try:
        wait_for(lambda: "Watching" in server.stderr(), 120, server)
        asyncio.run(_search_during_pass(project, server))
        assert server.stop() == 0
    finally:
        server.kill()
    assert "Traceback" not in server.stderr()


async def _search_during_pass(project: Path, server: HttpServer) -> None:
    question = "How long does the airlock take to cycle?"
    async with Client(server.url) as client:
        for i in range(NEW_FILES):
            write(project / "docs" / "logs" / f"log{i:03d}.md", long_text(i))
        wait_for(lambda: f"{NEW_FILES} to ingest" in server.stderr(), 240, server)

        answered_during_pass = 0
        while f"station_docs: {NEW_FILES} new" not in server.stderr():
            result = await client.call_tool("station_docs", {"query": question})
            assert not result.is_error, result.content[0].text
            assert sources(result.structured_content)[0] == "docs/airlock.md"
            if f"station_docs: {NEW_FILES} new" not in server.stderr():
                answered_during_pass += 1
            await asyncio.sleep(0.2)  # as a user asks: searches back to back would starve the pass
        assert answered_during_pass > 0, "the pass ended before a search could run beside it"

        found = await client.call_tool("station_docs", {"query": "survey drone 17-3 crater"})
        assert any(s.startswith("docs/logs/") for s in sources(found.structured_content))
