"""Ingestion into Redis through the real pipeline, next to the embedded local index.

The same generated corpus (``bench_ingest.document``: small markdown notes, one or two chunks
each) is ingested by ``VectorStoreTool`` exactly as ``holodeck ingest`` does, once into a
Redis index and once into the local default, so the cost of the backend shows beside the
cost of the model. Measures: first ingest (files/s, chunks/s), a re-run with nothing changed
(a new tool object, as a new CLI run), and search latency through the tool (query embedding
included). The model's share is timed apart (``embedding_s``), since on a small CPU it is
nearly all of an ingest: what is left is what the backend costs. Starts a disposable Redis
with the Query Engine unless ``--url`` is given.

Usage: ``python benchmarks/bench_redis_ingest.py [--files 300] [--queries 100]``
"""

from __future__ import annotations

import argparse
import contextlib
import json
import random
import sys
import time
import uuid
from pathlib import Path
from typing import Any

import redis

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))  # for redis_server

from _common import make_project, percentile, reload_tool
from bench_ingest import TOPICS, document
from redis_server import RedisServer


def drop(url: str, index: str) -> None:
    """Remove the index, its chunks and every ``<index>:*`` key (meta, states, locks)."""
    client = redis.Redis.from_url(url)
    try:
        with contextlib.suppress(redis.exceptions.ResponseError):  # never created
            client.execute_command("FT.DROPINDEX", index, "DD")
        keys = list(client.scan_iter(match=f"{index}:*", count=1000))
        for start in range(0, len(keys), 1000):
            client.delete(*keys[start : start + 1000])
    finally:
        client.close()


def measure(root: Path, files: int, queries: int) -> dict[str, Any]:
    """First ingest, unchanged re-run and search latency for the project at ``root``."""
    tool = reload_tool(root)
    tool.embedder.embed(["load the model before the clock starts"])
    embed_s = [0.0]
    embed = tool.embedder.embed

    def timed_embed(texts: Any) -> Any:
        t0 = time.perf_counter()
        try:
            return embed(texts)
        finally:
            embed_s[0] += time.perf_counter() - t0

    tool.embedder.embed = timed_embed  # type: ignore[method-assign]
    started = time.perf_counter()
    tool.initialize_sync()
    first = time.perf_counter() - started
    summary = tool.summary
    assert summary is not None and summary.new == files
    rest = first - embed_s[0]  # discovery, conversion, chunking and the store's writes
    out: dict[str, Any] = {
        "backend": tool.backend,
        "files": files,
        "chunks": summary.chunks_total,
        "first_ingest_s": round(first, 2),
        "files_per_s": round(files / first, 1),
        "chunks_per_s": round(summary.chunks_embedded / first, 1),
        "embedding_s": round(embed_s[0], 2),
        "all_but_embedding_s": round(rest, 2),
        "files_per_s_without_embedding": round(files / rest, 1),
    }
    tool.close()

    tool = reload_tool(root)
    started = time.perf_counter()
    tool.initialize_sync()
    out["rerun_unchanged_s"] = round(time.perf_counter() - started, 3)
    assert tool.summary is not None and tool.summary.unchanged == files

    tool.find("warm up the model")
    latencies = []
    for q in range(queries):
        query = f"which component handles {TOPICS[q % len(TOPICS)]} for team {q % 50}?"
        started = time.perf_counter()
        tool.find(query)
        latencies.append((time.perf_counter() - started) * 1000)
    out.update(
        search_p50_ms=round(percentile(latencies, 50), 1),
        search_p95_ms=round(percentile(latencies, 95), 1),
    )
    tool.close()
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--url", help="use this Redis (with the Query Engine) instead of a new one")
    parser.add_argument("--files", type=int, default=300)
    parser.add_argument("--queries", type=int, default=100)
    args = parser.parse_args()
    rng = random.Random(7)
    docs = {
        f"{TOPICS[i % len(TOPICS)]}/note{i:05d}.md": document(i, rng) for i in range(args.files)
    }

    server = None if args.url else RedisServer()
    if server is not None:
        server.start()
    url: str = args.url or server.url  # type: ignore[union-attr]
    index = f"bench_ingest_{uuid.uuid4().hex[:8]}"
    database = (
        f"    database:\n      provider: redis\n      connection_string: {json.dumps(url)}\n"
        f"      index_name: {index}\n"
    )
    try:
        local_root, _ = make_project(docs)
        redis_root, _ = make_project(docs, extra=database)
        results = [
            measure(redis_root, args.files, args.queries),
            measure(local_root, args.files, args.queries),
        ]
    finally:
        drop(url, index)  # leave nothing behind on a --url server
        if server is not None:
            server.cleanup()
    print(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
