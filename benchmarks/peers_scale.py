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
