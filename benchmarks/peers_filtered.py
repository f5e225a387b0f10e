"""Runs in the peers environment (benchmarks/peers.sh) for ``bench_filtered_recall.py``: Chroma
(HNSW, cosine) and LanceDB (IVF_HNSW_SQ, cosine, filters applied before the vector search)
built on the very vectors, libraries, books and tags holodeck got, then searched with the same
filters. Prints one JSON line per peer. Not part of the product.

    peers_filtered.py WORK [NAME...]
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

BATCH = 5000


def chroma(work: Path, vectors: np.ndarray, lay: dict[str, Any]) -> tuple[float, Any]:
    import chromadb

    client = chromadb.PersistentClient(path=str(work / "chroma"))
    col = client.create_collection("bench", metadata={"hnsw:space": "cosine"})
    started = time.perf_counter()
    for start in range(0, len(vectors), BATCH):
        stop = min(len(vectors), start + BATCH)
        col.add(
            ids=[str(i) for i in range(start, stop)],
            embeddings=vectors[start:stop],
            metadatas=[
                {"library": lay["lib"][i], "book": lay["book"][i], "t10": bool(lay["tag"][i])}
                for i in range(start, stop)
            ],
        )
    took = time.perf_counter() - started

    def run(q: np.ndarray, filters: dict[str, Any]) -> list[int]:
        parts: list[dict[str, Any]] = []
        if "library_ids" in filters:
            parts.append({"library": filters["library_ids"][0]})
        if "book_ids" in filters:
            parts.append({"book": filters["book_ids"][0]})
        if "tags" in filters:
            parts.append({"t10": True})
        where = None if not parts else parts[0] if len(parts) == 1 else {"$and": parts}
        got = col.query(query_embeddings=[q], n_results=10, where=where)
        return [int(i) for i in got["ids"][0]]

    return took, run


def lance(work: Path, vectors: np.ndarray, lay: dict[str, Any]) -> tuple[float, Any]:
    import lancedb
    import pyarrow as pa

    db = lancedb.connect(str(work / "lance"))
    started = time.perf_counter()
    data = pa.table(
        {
            "id": pa.array(range(len(vectors)), pa.int64()),
            "library": pa.array(lay["lib"]),
            "book": pa.array(lay["book"]),
            "t10": pa.array(lay["tag"], pa.bool_()),
            "vector": pa.FixedSizeListArray.from_arrays(
                pa.array(vectors.reshape(-1)), vectors.shape[1]
            ),
        }
    )
    table = db.create_table("bench", data)
    table.create_index(metric="cosine", vector_column_name="vector", index_type="IVF_HNSW_SQ")
    for column in ("library", "book"):
        table.create_scalar_index(column)
    took = time.perf_counter() - started

    def run(q: np.ndarray, filters: dict[str, Any]) -> list[int]:
        parts = []
        if "library_ids" in filters:
            parts.append(f"library = '{filters['library_ids'][0]}'")
        if "book_ids" in filters:
            parts.append(f"book = '{filters['book_ids'][0]}'")
        if "tags" in filters:
            parts.append("t10 = true")
        search = table.search(q).metric("cosine").limit(10).select(["id"])
        if parts:
            search = search.where(" AND ".join(parts), prefilter=True)
        return [int(r["id"]) for r in search.to_list()]

    return took, run


BUILDERS = {"chroma": chroma, "lancedb": lance}


def main() -> None:
    work = Path(sys.argv[1])
    vectors = np.ascontiguousarray(np.load(work / "vectors.npy"))
    lay = json.loads((work / "layout.json").read_text())
    cells = json.loads((work / "cells.json").read_text())
    queries = np.load(work / "queries.npy")
    limit = int(lay.get("peer_queries") or 0)
    for name in sys.argv[2:] or list(BUILDERS):
        try:
            took, run = BUILDERS[name](work, vectors, lay)
        except Exception as exc:  # a peer that fails is reported, not hidden
            print(json.dumps({"name": name, "error": repr(exc)[:300]}), flush=True)
            continue
        out: dict[str, Any] = {"name": name, "build_s": round(took, 1), "cells": {}}
        for cell in cells:
            rows = cell["rows"][:limit] if limit else cell["rows"]
            run(queries[rows[0]], cell["filters"])  # warm, as holodeck's first search is
            found, ms = [], []
            for row in rows:
                started = time.perf_counter()
                found.append(run(queries[row], cell["filters"]))
                ms.append((time.perf_counter() - started) * 1000)
            out["cells"][cell["name"]] = {"found": found, "ms": ms}
            print(f"{name} {cell['name']} done", file=sys.stderr, flush=True)
        print(json.dumps(out), flush=True)


if __name__ == "__main__":
    main()
