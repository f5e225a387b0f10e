"""A project to serve, and the real ``holodeck serve`` reached with the official MCP client.

The server is the real command in a subprocess (stdio: started by the SDK's stdio client;
HTTP: on a free loopback port it picks itself, read from its stderr), with the real model
and the real local index.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import TextIO

from cli_helpers import write
from mcp import Client, StdioServerParameters
from mcp.client.stdio import stdio_client

AGENT = """
name: serve-test
description: Knowledge about a small space station.
tools:
  - type: vectorstore
    name: station_docs
    description: Search the station's manuals
    source: docs
    top_k: 3
  - type: vectorstore
    name: faq
    source: faq.md
"""

DOCS = {
    "airlock.md": "The airlock cycles in ninety seconds. Crew must wear helmets before "
    "opening the outer hatch of the airlock.",
    "garden.md": "The hydroponic garden grows tomatoes and basil under red LED lamps, "
    "watered every six hours.",
    "reactor.txt": "The fusion reactor is inspected every Tuesday; its coolant loop holds "
    "forty litres of heavy water.",
}
FAQ = "# FAQ\n\nVisitors may dock at bay three between 08:00 and 18:00 station time.\n"


def make_project(root: Path) -> Path:
    """agent.yaml, docs/ (three files), faq.md and an empty home/ under ``root``."""
    write(root / "agent.yaml", AGENT)
    for name, text in DOCS.items():
        write(root / "docs" / name, text + "\n")
    write(root / "faq.md", FAQ)
    (root / "home").mkdir(parents=True, exist_ok=True)
    return root


def server_env(project: Path) -> dict[str, str]:
    """The environment the server runs in: the test's own HOME, no OpenAI keys."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "AZURE_"))}
    env["HOME"] = str(project / "home")
    env["NO_COLOR"] = "1"
    return env


@asynccontextmanager
async def stdio_session(project: Path, errlog: TextIO) -> AsyncIterator[Client]:
    """``holodeck serve`` over stdio, started by the SDK's client (its stderr to ``errlog``)."""
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "holodeck", "serve"],
        cwd=project,
        env=server_env(project),
    )
    async with Client(stdio_client(params, errlog=errlog)) as client:
        yield client


class HttpServer:
    """``holodeck serve --http 127.0.0.1:0`` in a subprocess; stdout and stderr to files.

    ``http`` binds elsewhere (``0.0.0.0:0``: every interface; the client then connects over
    loopback), ``env`` adds variables to the server's environment.
    """

    def __init__(
        self,
        project: Path,
        *args: str,
        http: str = "127.0.0.1:0",
        env: dict[str, str] | None = None,
    ) -> None:
        self.project = project
        self.err_path = project / "serve.err"
        self.out_path = project / "serve.out"
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "holodeck", "serve", "--http", http, *args],
            cwd=project,
            env={**server_env(project), **(env or {})},
            stdin=subprocess.DEVNULL,
            stdout=self.out_path.open("w"),
            stderr=self.err_path.open("w"),
        )
        found = wait_for(lambda: re.search(r"at (http://\S+/mcp)", self.stderr()), 120, self)
        self.url = found.group(1).replace("//0.0.0.0:", "//127.0.0.1:", 1)

    def stderr(self) -> str:
        return self.err_path.read_text()

    def stdout(self) -> str:
        return self.out_path.read_text()

    def stop(self, sig: int = signal.SIGTERM, timeout: float = 30) -> int:
        """Send ``sig`` and wait for the exit code."""
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
        return self.proc.wait(timeout)

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()


def wait_for(check: Callable[[], object], timeout: float, server: HttpServer | None = None):  # type: ignore[no-untyped-def]
    """Poll ``check`` until it returns something truthy; fail after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while True:
        got = check()
        if got:
            return got
        if server is not None and server.proc.poll() is not None:
            raise AssertionError(
                f"the server exited ({server.proc.returncode}):\n{server.stderr()}"
            )
        if time.monotonic() > deadline:
            raise AssertionError(f"not within {timeout} s")
        time.sleep(0.2)


def sources(structured: dict) -> list[str]:
    """The ranked source paths of a one-tool result (MCP structured content or search --json)."""
    (tool,) = structured["tools"]
    return [r["source_path"] for r in tool["results"]]
