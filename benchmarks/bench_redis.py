"""Benchmark of the redis adapter: upsert throughput, search latency and concurrent QPS.

Starts a disposable Redis with the Query Engine (``tests/redis_server.py``; or ``--url`` for
an existing server), loads N chunks of random normalised vectors through ``VectorStore``,
then for HNSW and FLAT measures:

- upsert throughput (chunks/s, one document of ``--doc-size`` chunks per call, as ingest does);
- single-client search latency p50/p95 (k=10, tenant filter, whole records returned);
- queries per second with ``--clients`` threads, each with its own connection;
- recall@10 against exact brute force (FLAT is exact, so its recall is the sanity check).

Usage: ``python benchmarks/bench_redis.py [--n 10000] [--dims 384] [--clients 10]``.
Every phase is bounded (``--seconds`` for the concurrent one), so a run takes well under a
minute on a laptop.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import threading
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))  # for redis_server

from redis_server import RedisServer

from holodeck.vectorstore.records import ChunkRecord, IndexInfo, chunk_id_for
from holodeck.vectorstore.redis.adapter import RedisIndexAdapter
from holodeck.vectorstore.store import VectorStore

TENANT, LIBRARY, MODEL = "bench", "lib", "bench-model"
CONTENT = ("Redis vector search benchmark chunk text. " * 40)[:1500]  # ~ a 300-token chunk


def unit_rows(rng: np.random.Generator, n: int, dims: int) -> np.ndarray:
    """``n`` random L2-normalised float32 vectors."""
    m = rng.normal(size=(n, dims)).astype(np.float32)
    return m / np.linalg.norm(m, axis=1, keepdims=True)


def records_for(vectors: np.ndarray, doc_size: int) -> list[list[ChunkRecord]]:
    """The chunks grouped by document (``doc_size`` each), as the ingester writes them."""
    docs: list[list[ChunkRecord]] = []
    for start in range(0, len(vectors), doc_size):
        doc = f"book{start // 10_000}/doc{start // doc_size}.md"
        docs.append(
            [
                ChunkRecord(
                    chunk_id=chunk_id_for(TENANT, LIBRARY, doc, i),
                    tenant_id=TENANT,
                    library_id=LIBRARY,
                    book_id=doc.split("/")[0],
                    doc_id=doc,
                    chunk_index=i,
                    content=CONTENT,
                    vector=vectors[start + i],
                    embedding_model=MODEL,
                    source_path=f"/corpus/{doc}",
                    mtime=1.0,
                    content_hash=f"h{start + i}",
                    token_count=300,
                    tags=["bench"],
                    language="en",
                )
                for i in range(min(doc_size, len(vectors) - start))
            ]
        )
    return docs


def percentile(values: list[float], q: float) -> float:
    return float(np.percentile(np.asarray(values), q))


def run(url: str, algorithm: str, args: argparse.Namespace) -> dict[str, float]:
    """One algorithm: load, then time searches alone and under concurrency."""
    rng = np.random.default_rng(0)
    vectors = unit_rows(rng, args.n, args.dims)
    queries = unit_rows(rng, args.queries, args.dims)
    docs = records_for(vectors, args.doc_size)
    index = f"bench_{algorithm.lower()}"
    adapter = RedisIndexAdapter(url, index, algorithm=algorithm, metric="COSINE")  # type: ignore[arg-type]
    adapter.recreate(IndexInfo(MODEL, args.dims))
    store = VectorStore(adapter)

    start = time.perf_counter()
    for doc in docs:
        store.upsert_chunks(TENANT, doc)
    upsert_s = time.perf_counter() - start
    assert adapter.total_count() == args.n

    for q in queries[:10]:  # warm-up
        store.search(TENANT, q, args.k)
    latencies, recalls = [], []
    for q in queries:
        t0 = time.perf_counter()
        hits = store.search(TENANT, q, args.k)
        latencies.append((time.perf_counter() - t0) * 1000)
        exact = set(np.argsort(-(vectors @ q))[: args.k].tolist())
        got = {int(h.record.content_hash[1:]) for h in hits}
        recalls.append(len(exact & got) / args.k)

    done = [0] * args.clients
    stop = threading.Event()
    barrier = threading.Barrier(args.clients + 1)

    def client(slot: int) -> None:
        own = VectorStore(RedisIndexAdapter(url, index, algorithm=algorithm))  # type: ignore[arg-type]
        own.describe_index()
        barrier.wait()
        i = slot
        while not stop.is_set():
            own.search(TENANT, queries[i % len(queries)], args.k)
            done[slot] += 1
            i += args.clients
        own.adapter.close()

    threads = [threading.Thread(target=client, args=(s,)) for s in range(args.clients)]
    for t in threads:
        t.start()
    barrier.wait()
    t0 = time.perf_counter()
    time.sleep(args.seconds)
    stop.set()
    for t in threads:
        t.join()
    qps = sum(done) / (time.perf_counter() - t0)

    adapter.recreate(IndexInfo(MODEL, args.dims))  # leave nothing big behind on --url servers
    adapter.close()
    return {
        "upsert_per_s": args.n / upsert_s,
        "p50_ms": statistics.median(latencies),
        "p95_ms": percentile(latencies, 95),
        "qps": qps,
        "recall": float(np.mean(recalls)),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--url", help="use this Redis (with the Query Engine) instead of a new one")
    parser.add_argument("--n", type=int, default=10_000, help="chunks to load")
    parser.add_argument("--dims", type=int, default=384)
    parser.add_argument("--doc-size", type=int, default=100, help="chunks per upsert call")
    parser.add_argument("--queries", type=int, default=300, help="single-client queries")
    parser.add_argument("--k", type=int, default=10)
    parser.add_argument("--clients", type=int, default=10, help="concurrent clients (threads)")
    parser.add_argument("--seconds", type=float, default=5.0, help="concurrent phase length")
    args = parser.parse_args()

    server = None if args.url else RedisServer()
    if server is not None:
        server.start()
    url = args.url or server.url  # type: ignore[union-attr]
    try:
        results = {algo: run(url, algo, args) for algo in ("HNSW", "FLAT")}
    finally:
        if server is not None:
            server.cleanup()

    print(
        f"\nredis adapter: {args.n} chunks x {args.dims} dims, k={args.k}, "
        f"{args.clients} concurrent clients\n"
    )
    header = f"{'algo':<6}{'upsert/s':>10}{'p50 ms':>9}{'p95 ms':>9}{'QPS':>9}{'recall@k':>10}"
    print(header)
    print("-" * len(header))
    for algo, r in results.items():
        print(
            f"{algo:<6}{r['upsert_per_s']:>10.0f}{r['p50_ms']:>9.2f}{r['p95_ms']:>9.2f}"
            f"{r['qps']:>9.0f}{r['recall']:>10.3f}"
        )


if __name__ == "__main__":
    main()
