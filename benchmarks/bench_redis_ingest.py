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
import json
import sys
import time
import uuid
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))  # for redis_server

from _common import make_project, reload_tool, search_latency_ms
from bench_ingest import corpus
from bench_ingest import queries as questions
from redis_server import RedisServer, drop_index


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

    p50, p95 = search_latency_ms(tool, questions(queries))
    out.update(search_p50_ms=p50, search_p95_ms=p95)
    tool.close()
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--url", help="use this Redis (with the Query Engine) instead of a new one")
    parser.add_argument("--files", type=int, default=300)
    parser.add_argument("--queries", type=int, default=100)
    args = parser.parse_args()
    docs = corpus(args.files)

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
        drop_index(url, index)  # leave nothing behind on a --url server
        if server is not None:
            server.cleanup()
    print(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
