"""Runs in the peers environment (benchmarks/peers.sh): sqlite-vec KNN and Chroma's query over
the vectors `bench_local_index.py` saved, with numpy brute force in the same process as the
yardstick. Prints JSON. Not part of the product (it must not depend on these packages)."""

from __future__ import annotations

import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

import apsw
import chromadb
import numpy as np
import sqlite_vec


def p50_ms(run, queries) -> float:  # type: ignore[no-untyped-def]
    times = []
    for q in queries:
        started = time.perf_counter()
        run(q)
        times.append((time.perf_counter() - started) * 1000)
    return statistics.median(times)


work = Path(sys.argv[1])
vectors = np.load(work / "vectors.npy")
queries = np.load(work / "queries.npy")
n, dims = vectors.shape
out: dict[str, float] = {}

db = apsw.Connection(str(work / f"vec{n}.db"))
db.enable_load_extension(True)
db.load_extension(sqlite_vec.loadable_path())
db.execute(
    f"CREATE VIRTUAL TABLE v USING vec0(lib INTEGER PARTITION KEY, "
    f"embedding float[{dims}] distance_metric=cosine)"
)
with db:
    db.executemany(
        "INSERT INTO v (rowid, lib, embedding) VALUES (?, 1, ?)",
        ((i + 1, vectors[i].tobytes()) for i in range(n)),
    )
knn = "SELECT rowid, distance FROM v WHERE embedding MATCH ? AND lib = 1 AND k = 10"
out["sqlite_vec_search_p50_ms"] = p50_ms(
    lambda q: db.execute(knn, (q.tobytes(),)).fetchall(), queries
)
out["numpy_bruteforce_p50_ms"] = p50_ms(lambda q: np.argpartition(-(vectors @ q), 10)[:10], queries)

client = chromadb.PersistentClient(path=tempfile.mkdtemp(prefix="chroma-"))
col = client.create_collection("bench", metadata={"hnsw:space": "cosine"})
for start in range(0, n, 5000):
    stop = min(n, start + 5000)
    col.add(
        ids=[str(i) for i in range(start, stop)],
        embeddings=vectors[start:stop],
        metadatas=[{"tenant_id": "bench", "library_id": "kb"} for _ in range(start, stop)],
    )
out["chroma_search_p50_ms"] = p50_ms(
    lambda q: col.query(query_embeddings=[q], n_results=10), queries
)
out["chroma_filtered_search_p50_ms"] = p50_ms(
    lambda q: col.query(
        query_embeddings=[q],
        n_results=10,
        where={"$and": [{"tenant_id": "bench"}, {"library_id": "kb"}]},
    ),
    queries,
)
print(json.dumps(out))
