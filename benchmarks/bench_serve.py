"""``holodeck serve`` as an MCP host sees it: call latency over stdio and streamable HTTP,
the same while a re-ingest runs beside it, and how soon a saved file is searchable.

The real command in a subprocess, the official MCP client, the embedded model and local
index (or ``--redis URL``: that server, one index made for the run).

    .venv/bin/python benchmarks/bench_serve.py [--files 200] [--calls 100] [--batch 40]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from _common import percentile
from mcp import Client, StdioServerParameters
from mcp.client.stdio import stdio_client

QUERIES = [
    "Which station measured the highest pressure?",
    "calibration of sensor arrays",
    "dust storms near the ridge",
    "what did the pilot report on return?",
    "crater mapping results",
]


def note(i: int, paragraphs: int = 2) -> str:
    return "\n\n".join(
        f"Field note {i}.{p}: survey drone {i} mapped crater {i * 13 + p} and measured "
        f"{(i * 7 + p) % 97} millisieverts near ridge {i % 31}. Pressure at station "
        f"{i % 17} read {900 + i % 113} hPa; sensor array {i}.{p} was recalibrated."
        for p in range(paragraphs)
    )


def make_project(files: int, redis: str | None) -> Path:
    root = Path(tempfile.mkdtemp(prefix="holodeck-bench-serve-"))
    (root / "agent.yaml").write_text(
        "name: bench-serve\ntools:\n  - type: vectorstore\n    name: kb\n    source: docs\n"
    )
    if redis:
        (root / ".holodeck").mkdir()
        (root / ".holodeck" / "config.yaml").write_text(
            f"vectorstore:\n  provider: redis\n  connection_string: {redis}\n"
            f"  index_name: bench_serve_{os.getpid()}\n"
        )
    for i in range(files):
        path = root / "docs" / f"part{i % 8}" / f"note{i:04d}.md"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(note(i))
    subprocess.run([sys.executable, "-m", "holodeck", "-q", "ingest"], cwd=root, check=True)
    return root


async def timed_calls(client: Client, calls: int) -> list[float]:
    latencies = []
    for i in range(calls):
        started = time.perf_counter()
        result = await client.call_tool("kb", {"query": QUERIES[i % len(QUERIES)]})
        latencies.append((time.perf_counter() - started) * 1000)
        assert not result.is_error, result.content[0].text
    return latencies


def show(label: str, latencies: list[float]) -> None:
    p50, p95 = percentile(latencies, 50), percentile(latencies, 95)
    print(f"{label:<44} {len(latencies):>5} calls  p50 {p50:7.1f} ms  p95 {p95:7.1f} ms")


async def during_pass(client: Client, root: Path, errlog: Path, batch: int) -> list[float]:
    """Drop ``batch`` new files, then call until the pass's summary line is printed."""
    for i in range(batch):
        path = root / "docs" / "new" / f"late{i:04d}.md"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(note(10_000 + i, paragraphs=6))
    while f"{batch} to ingest" not in errlog.read_text():
        await asyncio.sleep(0.05)
    latencies: list[float] = []
    started = time.perf_counter()
    while f"kb: {batch} new" not in errlog.read_text():
        latencies.extend(await timed_calls(client, 1))
    print(f"(the pass took about {time.perf_counter() - started:.1f} s)")
    return latencies


async def save_to_searchable(client: Client, root: Path, rounds: int = 5) -> list[float]:
    """Seconds from writing a file with a new word to the first call that finds it."""
    seconds = []
    for r in range(rounds):
        word = f"Quixotrel{r}"
        path = root / "docs" / f"fresh{r}.md"
        started = time.perf_counter()
        path.write_text(f"The {word} beacon blinks green twice per minute near dock {r}.\n")
        while True:
            result = await client.call_tool("kb", {"query": f"{word} beacon"})
            found = [x["source_path"] for x in result.structured_content["tools"][0]["results"]]
            if f"docs/fresh{r}.md" in found:
                break
            await asyncio.sleep(0.05)
        seconds.append(time.perf_counter() - started)
        await asyncio.sleep(1)
    return seconds


async def run_stdio(root: Path, calls: int, batch: int) -> None:
    errlog = root / "stdio.err"
    params = StdioServerParameters(
        command=sys.executable, args=["-m", "holodeck", "serve"], cwd=root
    )
    with errlog.open("w") as err:
        async with Client(stdio_client(params, errlog=err)) as client:
            await timed_calls(client, 5)  # warm up: the model loads on the first call
            show("stdio, idle", await timed_calls(client, calls))
            show(
                "stdio, during a re-ingest of new files",
                await during_pass(client, root, errlog, batch),
            )
            seconds = await save_to_searchable(client, root)
            print(
                f"saved file -> searchable: median {sorted(seconds)[len(seconds) // 2]:.2f} s, "
                f"max {max(seconds):.2f} s ({len(seconds)} files)"
            )


async def run_http(root: Path, calls: int) -> None:
    errlog = root / "http.err"
    with errlog.open("w") as err:
        proc = subprocess.Popen(
            [sys.executable, "-m", "holodeck", "serve", "--http", "127.0.0.1:0"],
            cwd=root,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=err,
        )
        try:
            while not (found := re.search(r"at (http://\S+/mcp)", errlog.read_text())):
                await asyncio.sleep(0.1)
            async with Client(found.group(1)) as client:
                await timed_calls(client, 5)
                show("streamable HTTP, idle", await timed_calls(client, calls))
        finally:
            proc.terminate()
            proc.wait()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--files", type=int, default=200)
    parser.add_argument("--calls", type=int, default=100)
    parser.add_argument("--batch", type=int, default=40, help="files dropped in during serving")
    parser.add_argument("--redis", default=None, help="redis://... to serve from Redis")
    args = parser.parse_args()
    root = make_project(args.files, args.redis)
    print(f"{args.files} notes, backend {'redis' if args.redis else 'local'}")
    asyncio.run(run_stdio(root, args.calls, args.batch))
    asyncio.run(run_http(root, args.calls))


if __name__ == "__main__":
    main()
