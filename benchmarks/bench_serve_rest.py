"""``holodeck serve --protocol rest`` under load: 50 concurrent sessions against the fake
OpenAI-compatible model (``tests/fake_openai.py``), the real server in a subprocess.

Each turn is what a user's question costs with a model: one model request that asks for a
search, the search (query embedding from the fake, the local index), a second request
that answers, streamed. The fake model takes a fixed time per request (``--model-ms``), so
the server's overhead is a turn's end-to-end time minus that. Reported: time to the first
event (``stream_start``) and to the first text, p50 / p95; the overhead p50 / p95; the
server's resident memory before and after 1,000 sessions (one turn each).

    .venv/bin/python benchmarks/bench_serve_rest.py [--sessions 50] [--turns 4] [--model-ms 100]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx2
from _common import percentile

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
from fake_openai import FakeOpenAI, Reply, text, tool_calls

AGENT = """name: bench
model: {{provider: openai, name: fake-model, endpoint: "{url}", api_key: "${{OPENAI_API_KEY}}"}}
instructions: Answer from the notes.
tools:
  - type: vectorstore
    name: notes
    description: Search the field notes
    source: docs
"""


def make_project(url: str, files: int) -> Path:
    root = Path(tempfile.mkdtemp(prefix="holodeck-bench-rest-"))
    (root / "agent.yaml").write_text(AGENT.format(url=url))
    for i in range(files):
        path = root / "docs" / f"note{i:03d}.md"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(f"# Note {i}\n\nDrone {i} mapped crater {i * 13} near ridge {i % 31}.\n")
    return root


def responder(model_seconds: float) -> Any:
    """A search first, then an answer; each request takes ``model_seconds``."""

    def reply(body: dict[str, Any]) -> Reply:
        messages = body.get("messages") or [{}]
        answered = messages[-1].get("role") == "tool"  # this turn's search came back
        got = (
            text("Drone 7 mapped crater 91 near ridge 7, as the notes say.")
            if answered
            else tool_calls(("notes", {"query": "which crater did drone 7 map?"}))
        )
        got.wait = model_seconds
        return got

    return reply


class Server:
    def __init__(self, root: Path) -> None:
        env = {**os.environ, "OPENAI_API_KEY": "sk-bench", "NO_COLOR": "1"}
        self.err = root / "serve.err"
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "holodeck", "serve", "--protocol", "rest", "--port", "0",
             "--rate-limit", "100000"],
            cwd=root, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
            stderr=self.err.open("w"),
        )  # fmt: skip
        deadline = time.monotonic() + 120
        while not (found := re.search(r"at (http://\S+)/", self.err.read_text())):
            if self.proc.poll() is not None or time.monotonic() > deadline:
                raise SystemExit(f"the server did not start:\n{self.err.read_text()}")
            time.sleep(0.2)
        self.url = found.group(1)
        while httpx2.get(self.url + "/ready", timeout=30).status_code != 200:
            time.sleep(0.2)

    def rss_mb(self) -> float:
        status = Path(f"/proc/{self.proc.pid}/status").read_text()
        return int(re.search(r"VmRSS:\s+(\d+)", status).group(1)) / 1024  # type: ignore[union-attr]

    def cpu_seconds(self) -> float:
        """User plus system CPU time the server has used so far."""
        fields = Path(f"/proc/{self.proc.pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

    def stop(self) -> None:
        self.proc.send_signal(signal.SIGTERM)
        self.proc.wait(30)


async def turn(
    client: httpx2.AsyncClient, url: str, session_id: str | None
) -> tuple[str, float, float, float]:
    """One streamed turn: its session id, seconds to the first event, to the first text, to
    the end."""
    body: dict[str, Any] = {"message": "Which crater did drone 7 map?"}
    if session_id:
        body["session_id"] = session_id
    started = time.perf_counter()
    first = first_text = 0.0
    name = ""
    async with client.stream("POST", url + "/agent/bench/chat/stream", json=body) as response:
        assert response.status_code == 200, await response.aread()
        async for line in response.aiter_lines():
            if line.startswith("event:"):
                name = line[6:].strip()
                first = first or time.perf_counter() - started
                if name == "message_delta" and not first_text:
                    first_text = time.perf_counter() - started
            elif line.startswith("data:") and name == "stream_start":
                session_id = json.loads(line[5:])["session_id"]
            elif line.startswith("data:") and name == "error":
                raise SystemExit(f"a turn failed: {line}")
    assert session_id is not None
    return session_id, first, first_text, time.perf_counter() - started


async def conversations(url: str, sessions: int, turns: int) -> list[tuple[float, float, float]]:
    """``sessions`` conversations at once, ``turns`` turns each."""
    limits = httpx2.Limits(max_connections=sessions + 10)
    async with httpx2.AsyncClient(timeout=120, limits=limits) as client:

        async def one() -> list[tuple[float, float, float]]:
            session_id, out = None, []
            for _ in range(turns):
                session_id, *times = await turn(client, url, session_id)
                out.append(tuple(times))
            return out  # type: ignore[return-value]

        done = await asyncio.gather(*(one() for _ in range(sessions)))
    return [t for per in done for t in per]


async def many_sessions(url: str, count: int, at_once: int) -> None:
    """``count`` new sessions of one turn each, ``at_once`` at a time."""
    gate = asyncio.Semaphore(at_once)
    async with httpx2.AsyncClient(timeout=120) as client:

        async def one() -> None:
            async with gate:
                await turn(client, url, None)

        await asyncio.gather(*(one() for _ in range(count)))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sessions", type=int, default=50)
    parser.add_argument("--turns", type=int, default=4)
    parser.add_argument("--model-ms", type=float, default=100.0)
    parser.add_argument("--total-sessions", type=int, default=1000)
    args = parser.parse_args()
    model_seconds = args.model_ms / 1000
    with FakeOpenAI() as model:
        model.responder = responder(model_seconds)
        # http.server listens with a backlog of 5: 50 clients at once would wait for SYN
        # retries (a second each), which is the fake's cost, not the server's
        model._server.socket.listen(256)
        root = make_project(model.url, 40)
        server = Server(root)
        try:
            asyncio.run(conversations(server.url, 5, 1))  # warm up: imports, connections
            started, cpu, own = time.perf_counter(), server.cpu_seconds(), time.process_time()
            times = asyncio.run(conversations(server.url, args.sessions, args.turns))
            wall, cpu = time.perf_counter() - started, server.cpu_seconds() - cpu
            own = time.process_time() - own
            rss_before = server.rss_mb()
            asyncio.run(many_sessions(server.url, args.total_sessions, args.sessions))
            rss_after = server.rss_mb()
            active = httpx2.get(server.url + "/health", timeout=30).json()["active_sessions"]
        finally:
            server.stop()
    first = [t[0] * 1000 for t in times]
    first_text = [t[1] * 1000 for t in times]
    overhead = [(t[2] - 2 * model_seconds) * 1000 for t in times]  # two model requests a turn
    print(f"{args.sessions} concurrent sessions x {args.turns} turns ({len(times)} turns in "
          f"{wall:.1f} s); the model takes {args.model_ms:.0f} ms a request, 2 requests a turn")
    print("| measure | p50 | p95 |\n|---|---:|---:|")
    print(f"| time to the first event (stream_start) | {percentile(first, 50):.1f} ms | "
          f"{percentile(first, 95):.1f} ms |")
    print(f"| time to the first text (message_delta) | {percentile(first_text, 50):.1f} ms | "
          f"{percentile(first_text, 95):.1f} ms |")
    print(f"| server overhead over the model's time, per turn | {percentile(overhead, 50):.1f} ms "
          f"| {percentile(overhead, 95):.1f} ms |")
    print(f"CPU per turn: the server {cpu / len(times) * 1000:.1f} ms, the clients and the "
          f"fake model {own / len(times) * 1000:.1f} ms (load average "
          f"{os.getloadavg()[0]:.1f} on {os.cpu_count()} cores)")
    print(f"server RSS: {rss_before:.0f} MiB after the concurrent run, {rss_after:.0f} MiB after "
          f"{args.total_sessions} more sessions ({active} kept)")


if __name__ == "__main__":
    main()
