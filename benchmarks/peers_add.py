"""Runs in the peers environment (benchmarks/peers.sh): Chroma's ``add`` of the chunks and
vectors `bench_local_index.py` ingested, one call per file (as an ingest of files goes) and
in one batch. Prints JSON. Not part of the product."""

from __future__ import annotations

import json
import sys
import tempfile
import time
from pathlib import Path

import chromadb
import numpy as np

work = Path(sys.argv[1])
vectors = np.load(work / "add_vectors.npy")
rows = json.loads((work / "add_rows.json").read_text())
out: dict[str, float] = {}

client = chromadb.PersistentClient(path=tempfile.mkdtemp(prefix="chroma-"))
col = client.create_collection("per_file", metadata={"hnsw:space": "cosine"})
started = time.perf_counter()
for (chunk_id, text, doc_id), vector in zip(rows, vectors, strict=True):
    col.add(ids=[chunk_id], embeddings=[vector], documents=[text], metadatas=[{"doc_id": doc_id}])
out["chroma_add_per_file_s"] = time.perf_counter() - started

col = client.create_collection("batched", metadata={"hnsw:space": "cosine"})
started = time.perf_counter()
for start in range(0, len(rows), 5000):
    part = rows[start : start + 5000]
    col.add(
        ids=[r[0] for r in part],
        embeddings=vectors[start : start + len(part)],
        documents=[r[1] for r in part],
        metadatas=[{"doc_id": r[2]} for r in part],
    )
out["chroma_add_batched_s"] = time.perf_counter() - started
print(json.dumps(out))
