"""Which approximate index to keep beside SQLite: usearch, faiss-cpu, hnswlib, sqlite-vec.

Runs in the peers' environment (``benchmarks/peers.sh``: none of these but usearch is a
product dependency). The same scale-set vectors (``_vectors.py``) for each, HNSW at the same
settings (16 links per node, depth 128 to build and to search), cosine; one query at a time on
one thread, asked for 40 candidates as holodeck asks for k = 10. Per library: build time (2
threads where the library has them), recall@10 against exact search of its first 10 and of
its 40 re-scored exactly (what holodeck does with the float32 vectors), search p50 / p95,
file size, and a fresh process's resident memory after
opening the saved file and answering every query (``added``: over the interpreter and numpy).

    $(benchmarks/peers.sh) benchmarks/bench_ann_libraries.py --size 100000
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
from _vectors import exact_top, recall, scale_vectors

HERE = Path(__file__).resolve().parent
M, EF = 16, 128
QUERIES = 300


def build(name: str, vectors: np.ndarray, path: Path) -> None:
    """Build ``name``'s index over ``vectors`` and save it to ``path``."""
    n, dims = vectors.shape
    keys = np.arange(n, dtype=np.uint64)
    if name.startswith("usearch"):
        from usearch.index import Index

        dtype = name.split("-")[1]
        index = Index(
            ndim=dims, metric="cos", dtype=dtype, connectivity=M,
            expansion_add=EF, expansion_search=EF,
        )  # fmt: skip
        index.add(keys, vectors, threads=2)
        index.save(str(path))
    elif name.startswith("faiss"):
        import faiss

        faiss.omp_set_num_threads(2)
        if name == "faiss-f32":
            index = faiss.IndexHNSWFlat(dims, M, faiss.METRIC_INNER_PRODUCT)
        else:
            index = faiss.IndexHNSWSQ(
                dims, faiss.ScalarQuantizer.QT_8bit, M, faiss.METRIC_INNER_PRODUCT
            )
            index.train(vectors)
        index.hnsw.efConstruction = EF
        index.add(vectors)
        faiss.write_index(index, str(path))
    elif name == "hnswlib-f32":
        import hnswlib

        index = hnswlib.Index(space="cosine", dim=dims)
        index.init_index(max_elements=n, M=M, ef_construction=EF)
        index.add_items(vectors, keys, num_threads=2)
        index.save_index(str(path))
    elif name == "sqlite-vec-f32":
        import apsw
        import sqlite_vec

        db = apsw.Connection(str(path))
        db.enable_load_extension(True)
        db.load_extension(sqlite_vec.loadable_path())
        db.execute(
            f"CREATE VIRTUAL TABLE v USING vec0(embedding float[{dims}] distance_metric=cosine)"
        )
        with db:
            db.executemany(
                "INSERT INTO v (rowid, embedding) VALUES (?, ?)",
                ((i + 1, vectors[i].tobytes()) for i in range(n)),
            )
        db.close()


SEARCH = r"""
import json, sys, time
import numpy as np
def rss():
    for line in open("/proc/self/status"):
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
name, path, queries_file, dims = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
queries = np.load(queries_file)
base = rss()
started = time.perf_counter()
if name.startswith("usearch"):
    from usearch.index import Index
    index = Index.restore(path, view=True)
    index.expansion_search = 128
    run = lambda q: index.search(q, 40, threads=1).keys.tolist()
elif name.startswith("faiss"):
    import faiss
    faiss.omp_set_num_threads(1)
    index = faiss.read_index(path)
    index.hnsw.efSearch = 128
    run = lambda q: index.search(q[None, :], 40)[1][0].tolist()
elif name.startswith("hnswlib"):
    import hnswlib
    index = hnswlib.Index(space="cosine", dim=dims)
    index.load_index(path)
    index.set_ef(128)
    index.set_num_threads(1)
    run = lambda q: index.knn_query(q, 40)[0][0].tolist()
else:
    import apsw, sqlite_vec
    db = apsw.Connection(path)
    db.enable_load_extension(True)
    db.load_extension(sqlite_vec.loadable_path())
    sql = "SELECT rowid - 1 FROM v WHERE embedding MATCH ? AND k = 40"
    run = lambda q: [r[0] for r in db.execute(sql, (q.tobytes(),))]
opened = time.perf_counter() - started
found, times = [], []
for q in queries:
    t = time.perf_counter()
    found.append(run(q))
    times.append((time.perf_counter() - t) * 1000)
print(json.dumps({"open_s": opened, "found": found, "times": times, "rss_added_mb": rss() - base}))
"""


def rescored(found: list[list[int]], vectors: np.ndarray, queries: np.ndarray) -> list[list[int]]:
    """Each query's candidates ordered by their exact cosine (float32)."""
    out = []
    for rows, q in zip(found, queries, strict=True):
        rows = [r for r in rows if 0 <= r < len(vectors)]
        out.append([rows[i] for i in np.argsort(-(vectors[rows] @ q))])
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--size", type=int, default=100_000)
    parser.add_argument(
        "--libraries",
        nargs="+",
        default=[
            "usearch-i8",
            "usearch-f16",
            "faiss-sq8",
            "faiss-f32",
            "hnswlib-f32",
            "sqlite-vec-f32",
        ],
    )
    args = parser.parse_args()
    vectors = scale_vectors(args.size)
    queries = scale_vectors(QUERIES, seed=99, topics_of=args.size)
    truth = exact_top(vectors, queries)
    work = Path(tempfile.mkdtemp(prefix="holodeck-ann-"))
    np.save(work / "queries.npy", queries)
    for name in args.libraries:
        path = work / name
        started = time.perf_counter()
        build(name, vectors, path)
        built = time.perf_counter() - started
        out = subprocess.run(
            [sys.executable, "-c", SEARCH, name, str(path), str(work / "queries.npy"), "384"],
            capture_output=True, text=True, check=True,
        )  # fmt: skip
        got = json.loads(out.stdout)
        times = sorted(got["times"])
        row = {
            "library": name,
            "chunks": args.size,
            "build_s": round(built, 1),
            "recall@10": round(recall(got["found"], truth), 4),
            "recall@10_rescored": round(recall(rescored(got["found"], vectors, queries), truth), 4),
            "p50_ms": round(statistics.median(times), 3),
            "p95_ms": round(times[int(0.95 * len(times))], 3),
            "open_s": round(got["open_s"], 3),
            "file_mb": round(os.path.getsize(path) / 2**20, 1),
            "search_process_rss_added_mb": round(got["rss_added_mb"], 1),
        }
        print(json.dumps(row), flush=True)
        path.unlink()


if __name__ == "__main__":
    main()
