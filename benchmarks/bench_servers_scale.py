"""PostgreSQL (pgvector) beside the local index and Redis, model-free, at one size per run.

The scale set's vectors and texts of ``bench_scale.py`` (10 chunks per document), written
through ``VectorStore`` as an ingest writes them (documents committed in windows of 256
chunks), into each backend in turn; then, for each, 200 queries one at a time: semantic with
the query vector given (k = 10) and its recall@10 against exact search of the same vectors,
and holodeck's hybrid (the question's text and vector, k = 5, as ``holodeck search`` asks).
Servers: a disposable Redis 8 with the Query Engine and a PostgreSQL 18 with pgvector 0.8,
both from PyPI (``tests/redis_server.py``, ``tests/postgres_server.py``); their memory is
Redis's ``used_memory`` and the size on disk of PostgreSQL's tables and indexes.

    python benchmarks/bench_servers_scale.py --size 100000 [--backends local redis postgres]
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "tests"))  # the servers' helpers

from _vectors import exact_top, recall, scale_vectors  # noqa: E402
from bench_scale import QUERIES, _write_documents, chunk_id_rows, questions, summary, texts_for  # noqa: E402
from postgres_server import PostgresServer, fresh_database  # noqa: E402
from redis_server import RedisServer  # noqa: E402

from holodeck.retrieval.hybrid import retrieve  # noqa: E402
from holodeck.vectorstore.adapter import IndexAdapter  # noqa: E402
from holodeck.vectorstore.local import LocalIndexAdapter  # noqa: E402
from holodeck.vectorstore.postgres import PostgresIndexAdapter  # noqa: E402
from holodeck.vectorstore.records import ChunkFilters  # noqa: E402
from holodeck.vectorstore.redis.adapter import RedisIndexAdapter  # noqa: E402
from holodeck.vectorstore.store import VectorStore  # noqa: E402


def measure(
    adapter: IndexAdapter,
    vectors: np.ndarray,
    texts: list[str],
    queries: np.ndarray,
    asked: list[str],
    truth: np.ndarray,
) -> dict[str, Any]:
    """Build ``adapter``'s index, then search it: the numbers of one backend."""
    store = VectorStore(adapter)
    started = time.perf_counter()
    _write_documents(store, vectors, texts)
    store.flush()
    built = time.perf_counter() - started
    scope = ChunkFilters(library_ids=["kb"])
    rows = chunk_id_rows(len(vectors))
    found, semantic = [], []
    for q in queries:
        t = time.perf_counter()
        hits = store.search("bench", q, 10, scope)
        semantic.append((time.perf_counter() - t) * 1000)
        found.append([rows[h.record.chunk_id] for h in hits])
    hybrid = []
    for q, text in zip(queries, asked, strict=True):
        t = time.perf_counter()
        retrieve(store, "bench", text, q, 5, scope, "hybrid")
        hybrid.append((time.perf_counter() - t) * 1000)
    return {
        "build_s": round(built, 1),
        "recall@10": round(recall(found, truth), 4),
        "semantic_p50_p95_ms": summary(semantic),
        "hybrid_p50_p95_ms": summary(hybrid),
    }


def postgres_mb(url: str, index: str) -> float:
    import psycopg

    with psycopg.connect(url) as conn:
        row = conn.execute(
            "SELECT sum(pg_total_relation_size(c.oid)) FROM pg_class c "
            "WHERE c.relkind = 'r' AND c.relname LIKE %s",
            (index + "_%",),
        ).fetchone()
    return round(float(row[0] if row and row[0] else 0) / 2**20, 1)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--size", type=int, default=100_000)
    parser.add_argument("--backends", nargs="+", default=["local", "redis", "postgres"])
    args = parser.parse_args()
    run_started = time.perf_counter()
    vectors = scale_vectors(args.size)
    queries = scale_vectors(QUERIES, seed=99, topics_of=args.size)
    truth = exact_top(vectors, queries)
    texts = texts_for(args.size)
    asked = questions()
    row: dict[str, Any] = {"chunks": args.size}
    work = Path(tempfile.mkdtemp(prefix="holodeck-servers-"))
    try:
        for backend in args.backends:
            if backend == "local":
                adapter: IndexAdapter = LocalIndexAdapter(work / "local")
                row["local"] = measure(adapter, vectors, texts, queries, asked, truth)
                adapter.close()
                disk = sum(p.stat().st_size for p in (work / "local").iterdir())
                row["local"]["disk_mb"] = round(disk / 2**20, 1)
            elif backend == "redis":
                with RedisServer() as server:
                    adapter = RedisIndexAdapter(server.url, "bench")
                    row["redis"] = measure(adapter, vectors, texts, queries, asked, truth)
                    import redis

                    used = redis.Redis.from_url(server.url).info("memory")["used_memory"]
                    row["redis"]["server_memory_mb"] = round(used / 2**20, 1)
                    adapter.close()
            elif backend == "postgres":
                with PostgresServer() as server:
                    url = fresh_database(server.url(), "bench")
                    adapter = PostgresIndexAdapter(url, "bench")
                    row["postgres"] = measure(adapter, vectors, texts, queries, asked, truth)
                    adapter.close()
                    row["postgres"]["tables_and_indexes_mb"] = postgres_mb(url, "bench")
            print(json.dumps({backend: row[backend]}), flush=True)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    row["run_s"] = round(time.perf_counter() - run_started)
    print(json.dumps(row), flush=True)


if __name__ == "__main__":
    main()
