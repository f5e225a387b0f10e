"""The real ``holodeck serve --protocol rest`` in a subprocess, reached over plain HTTP.

The project is the serve tests' small space station with a ``model:`` pointing at the fake
OpenAI-compatible server (``fake_openai``): the real openai client, agent loop, index and
embedder code run; only the LLM and its embeddings answer from the script. The server
picks a free port itself (``--port 0``) and says which on stderr.
"""

from __future__ import annotations

import json
import re
import signal
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx2
from cli_helpers import write
from fake_openai import FakeOpenAI
from serve_helpers import DOCS, FAQ, server_env, wait_for

AGENT = """
name: station
description: Knowledge about a small space station.
model: {{provider: openai, name: fake-model, endpoint: "{url}", api_key: "${{OPENAI_API_KEY}}"}}
instructions: You answer questions about the station from its manuals.
tools:
  - type: vectorstore
    name: station_docs
    description: Search the station's manuals
    source: docs
    top_k: 3
"""
#: The airlock manual with headings: its passages carry a section path.
AIRLOCK = "# Airlock\n\n## Cycling\n\n" + DOCS["airlock.md"] + "\n"
#: How long a server may take to start on a loaded machine (interpreter, imports, index).
START_SECONDS = 120
STREAM = "/agent/station/chat/stream"
CHAT = "/agent/station/chat"


def make_model_project(root: Path, url: str) -> Path:
    """agent.yaml (the model at ``url``), docs/ with the station's three manuals."""
    write(root / "agent.yaml", AGENT.format(url=url))
    for name, text in DOCS.items():
        write(root / "docs" / name, text + "\n")
    write(root / "docs" / "airlock.md", AIRLOCK)
    write(root / "faq.md", FAQ)
    (root / "home").mkdir(parents=True, exist_ok=True)
    return root


class RestServer:
    """``holodeck serve --protocol rest --port 0 ARGS`` with its stderr in a file."""

    def __init__(
        self,
        project: Path,
        *args: str,
        env: dict[str, str] | None = None,
        protocol: str = "rest",
    ) -> None:
        self.err_path = project / "serve.err"
        self.proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "holodeck",
                "serve",
                "--protocol",
                protocol,
                "--port",
                "0",
                *args,
            ],
            cwd=project,
            env={**server_env(project), "OPENAI_API_KEY": "sk-test-fake", **(env or {})},
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=self.err_path.open("w"),
        )
        found = wait_for(
            lambda: re.search(r"REST(?: and AG-UI \(POST /awp\))? at (http://\S+)/", self.stderr()),
            START_SECONDS,
            self,
        )  # type: ignore[arg-type]
        self.url = found.group(1).replace("//0.0.0.0:", "//127.0.0.1:", 1)

    def stderr(self) -> str:
        return self.err_path.read_text()

    def wait_ready(self, headers: dict[str, str] | None = None) -> None:
        wait_for(
            lambda: httpx2.get(self.url + "/ready", headers=headers, timeout=30).status_code == 200,
            START_SECONDS,
            self,  # type: ignore[arg-type]
        )

    def stop(self, timeout: float = 30) -> int:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
        return self.proc.wait(timeout)

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()


def events(lines: Iterator[str]) -> Iterator[tuple[str, dict[str, Any]]]:
    """(event name, data) of each server-sent event; comments (keep-alives) skipped."""
    name, data = "message", ""
    for line in lines:
        if line.startswith(":"):
            continue
        if line.startswith("event:"):
            name = line[6:].strip()
        elif line.startswith("data:"):
            data += line[5:].strip()
        elif not line and data:
            yield name, json.loads(data)
            name, data = "message", ""


def stream(
    url: str, body: dict[str, Any], agent: str = "station", **kwargs: Any
) -> list[tuple[str, dict[str, Any]]]:
    """Every event of one streamed answer of ``agent``, read to the end."""
    path = f"/agent/{agent}/chat/stream"
    with httpx2.stream("POST", url + path, json=body, timeout=60, **kwargs) as response:
        assert response.status_code == 200, response.read()
        assert response.headers["content-type"].startswith("text/event-stream")
        return list(events(response.iter_lines()))


class GatedFakeOpenAI(FakeOpenAI):
    """The fake model whose embeddings wait until ``open`` is set: a first ingest that
    stays unfinished for as long as a test needs."""

    def __init__(self) -> None:
        super().__init__()
        self.open = threading.Event()

    def _embed(self, h: Any, body: dict[str, Any], record: Any) -> None:
        self.open.wait(300)
        super()._embed(h, body, record)
