"""Runs in the peers environment (benchmarks/peers.sh) for ``bench_scale.py``: Chroma and
LanceDB built on the very vectors and texts holodeck got, then searched from a new process
each (200 queries, vector given, k = 10). Prints one JSON line per peer. Not part of the
product (it must not depend on these packages).

    peers_scale.py WORK [NAME...]    build each (default: chroma lancedb), then search it in a
                                     new process
    peers_scale.py WORK search NAME  (the search process)
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
from _vectors import recall

BATCH = 5000


def status(key: str) -> float:
    """A ``/proc/self/status`` memory line in MiB."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(key):
            return int(line.split()[1]) / 1024
    return 0.0


def build_chroma(work: Path, vectors: np.ndarray, texts: list[str]) -> float:
    import chromadb

    client = chromadb.PersistentClient(path=str(work / "chroma"))
    col = client.create_collection("bench", metadata={"hnsw:space": "cosine"})
    started = time.perf_counter()
    for start in range(0, len(vectors), BATCH):
        stop = min(len(vectors), start + BATCH)
        col.add(
            ids=[str(i) for i in range(start, stop)],
            embeddings=vectors[start:stop],
            documents=texts[start:stop],
            metadatas=[{"tenant_id": "bench", "library_id": "kb"}] * (stop - start),
        )
    return time.perf_counter() - started


def build_lance(work: Path, vectors: np.ndarray, texts: list[str]) -> float:
    import lancedb
    import pyarrow as pa

    db = lancedb.connect(str(work / "lance"))
    started = time.perf_counter()
    table = None
    for start in range(0, len(vectors), 100_000):
        stop = min(len(vectors), start + 100_000)
        data = pa.table(
            {
                "id": pa.array(range(start, stop), pa.int64()),
                "text": pa.array(texts[start:stop]),
                "vector": pa.FixedSizeListArray.from_arrays(
                    pa.array(vectors[start:stop].reshape(-1)), vectors.shape[1]
                ),
            }
        )
        if table is None:
            table = db.create_table("bench", data)
        else:
            table.add(data)
    assert table is not None
    table.create_index(metric="cosine", vector_column_name="vector", index_type="IVF_HNSW_SQ")
    return time.perf_counter() - started


BUILDERS = {"chroma": build_chroma, "lancedb": build_lance}


def search(work: Path, name: str) -> None:
    queries = np.load(work / "queries.npy")
    if name == "chroma":
        import chromadb

        col = chromadb.PersistentClient(path=str(work / "chroma")).get_collection("bench")

        def run(q: np.ndarray) -> list[int]:
            got = col.query(query_embeddings=[q], n_results=10)
            return [int(i) for i in got["ids"][0]]
    else:
        import lancedb

        table = lancedb.connect(str(work / "lance")).open_table("bench")

        def run(q: np.ndarray) -> list[int]:
            got = table.search(q).metric("cosine").limit(10).select(["id", "text"]).to_list()
            return [int(r["id"]) for r in got]

    found, times = [], []
    for q in queries:
        started = time.perf_counter()
        found.append(run(q))
        times.append((time.perf_counter() - started) * 1000)
    print(
        json.dumps(
            {"found": found, "times": times, "rss": status("VmRSS:"), "peak": status("VmHWM:")}
        )
    )


def disk_mb(folder: Path) -> int:
    """Bytes of every file under ``folder``, in MiB."""
    return round(sum(p.stat().st_size for p in folder.rglob("*") if p.is_file()) / 2**20)


def main() -> None:
    work = Path(sys.argv[1])
    if sys.argv[2:3] == ["search"]:
        search(work, sys.argv[3])
        return
    names = sys.argv[2:] or list(BUILDERS)
    vectors = np.load(work / "vectors.npy", mmap_mode="r")
    texts = json.loads((work / "texts.json").read_text())
    truth = np.load(work / "truth.npy")
    for name in names:
        build = BUILDERS[name]
        try:
            took = build(work, np.ascontiguousarray(vectors), texts)
        except Exception as exc:  # a peer that fails here is reported, not hidden
            print(json.dumps({f"{name}_error": repr(exc)[:300]}), flush=True)
            continue
        out = subprocess.run(
            [sys.executable, __file__, str(work), "search", name],
            capture_output=True,
            text=True,
            check=True,
        )
        got = json.loads(out.stdout)
        times = sorted(got["times"])
        print(
            json.dumps(
                {
                    f"{name}_build_s": round(took, 1),
                    f"{name}_recall@10": round(recall(got["found"], truth), 4),
                    f"{name}_semantic_p50_p95_ms": (
                        round(float(np.median(times)), 2),
                        round(times[int(0.95 * len(times))], 2),
                    ),
                    f"{name}_rss_steady_peak_mb": (round(got["rss"]), round(got["peak"])),
                    f"{name}_disk_mb": disk_mb(work / ("chroma" if name == "chroma" else "lance")),
                }
            ),
            flush=True,
        )


if __name__ == "__main__":
    main()


def build_lance_hybrid(work: Path) -> None:
    """LanceDB's table and vector index as ``build_lance`` makes them, then its full-text
    index on the text column (LanceDB's native one, not tantivy), for
    ``bench_hybrid_peers.py``: prints each part's seconds and the versions as one JSON line."""
    import lancedb
    import pyarrow as pa

    vectors = np.load(work / "vectors.npy")
    texts = json.loads((work / "texts.json").read_text())
    vector_s = build_lance(work, vectors, texts)
    del vectors, texts
    table = lancedb.connect(str(work / "lance")).open_table("bench")
    started = time.perf_counter()
    table.create_fts_index("text", use_tantivy=False)
    fts_s = time.perf_counter() - started
    print(
        json.dumps(
            {
                "lancedb_vector_build_s": round(vector_s, 1),
                "lancedb_fts_build_s": round(fts_s, 1),
                "lancedb_indices": [str(i) for i in table.list_indices()],
                "lancedb_disk_mb": disk_mb(work / "lance"),
                "lancedb": lancedb.__version__,
                "pyarrow": pa.__version__,
            }
        ),
        flush=True,
    )


def serve_lance(work: Path) -> None:
    """Answers ``bench_hybrid_peers.py``'s queries one at a time from stdin (``hybrid I`` or
    ``semantic I``, one a line), printing each one's milliseconds and ids, so its process can
    take turns with holodeck's. Hybrid: the question's text and vector, k = 5, LanceDB's
    default reranker; semantic: the vector, k = 10, as ``search`` asks."""
    import lancedb

    queries = np.load(work / "queries.npy")
    questions = json.loads((work / "questions.json").read_text())
    table = lancedb.connect(str(work / "lance")).open_table("bench")
    print(json.dumps({"ready": True}), flush=True)
    reranker = ""
    for line in sys.stdin:
        kind, index = line.split()
        q, text = queries[int(index)], questions[int(index)]
        started = time.perf_counter()
        if kind == "hybrid":
            query = (
                table.search(query_type="hybrid")
                .vector(q)
                .text(text)
                .metric("cosine")
                .limit(5)
                .select(["id", "text"])
            )
            got = query.to_list()
        else:
            got = table.search(q).metric("cosine").limit(10).select(["id", "text"]).to_list()
        ms = (time.perf_counter() - started) * 1000
        if kind == "hybrid" and not reranker:
            chosen = query._reranker  # the one LanceDB chose: none was given
            reranker = f"{type(chosen).__name__}{vars(chosen)}"
        print(json.dumps({"ms": ms, "ids": [int(r["id"]) for r in got]}), flush=True)
    print(
        json.dumps({"reranker": reranker, "rss": status("VmRSS:"), "peak": status("VmHWM:")}),
        flush=True,
    )
