"""The embedded index: SQLite (this release) against the npz index of 0.1.0, and Chroma.

Store part, at each size (synthetic unit vectors, real-looking ~1 KB texts, 10 chunks per
document), side by side in one run: building, a cold process's open + first search, search
p50/p95 with the query vector given, the commit of one changed document, the resident memory
of a process that searched. With ``--peers PYTHON`` (an environment holding chromadb, apsw
and sqlite-vec: ``benchmarks/peers.sh``) also sqlite-vec's KNN and Chroma's query on the same
vectors.

Pipeline part, with the model taken out (vectors from a cache, the real tokenizer and
chunker): first ingest of 1,000 and of 10,000 one-chunk files through
``VectorStoreTool.initialize_sync`` (the code of ``holodeck ingest``), the no-change re-run of
10,000 files, and Chroma's ``add`` of the same chunks and vectors.

    python benchmarks/bench_local_index.py [--sizes 10000 100000] [--peers PYTHON]
"""

from __future__ import annotations

import argparse
import hashlib
import json
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

import numpy as np
from _common import make_project, percentile, reload_tool
from baseline_npz_index import NpzIndex

from holodeck.embeddings.base import Embedder, TokenCounter
from holodeck.vectorstore.local import LocalIndexAdapter
from holodeck.vectorstore.records import ChunkFilters, ChunkRecord, DocState, chunk_id_for
from holodeck.vectorstore.store import VectorStore

HERE = Path(__file__).resolve().parent
DIMS = 384
PER_DOC = 10
WORDS = [
    *[
        "pressure",
        "flow",
        "boundary",
        "layer",
        "wing",
        "shock",
        "heat",
        "transfer",
        "surface",
        "velocity",
        "turbulent",
    ],
    *[
        "laminar",
        "model",
        "theory",
        "experiment",
        "measured",
        "results",
        "numbers",
        "plate",
        "cylinder",
        "cone",
        "drag",
    ],
    *[
        "lift",
        "mach",
        "subsonic",
        "supersonic",
        "hypersonic",
        "nozzle",
        "jet",
        "wake",
        "separation",
        "stagnation",
    ],
    *[
        "temperature",
        "viscous",
        "inviscid",
        "solution",
        "equations",
        "method",
        "approximate",
        "exact",
        "linear",
    ],
]


def texts(n: int, seed: int = 1) -> list[str]:
    """``n`` distinct sentences-of-words of about 1 KB each."""
    rng = random.Random(seed)
    out = []
    for i in range(n):
        words = [rng.choice(WORDS) for _ in range(150)]
        out.append(f"Note {i}: " + " ".join(words) + ".")
    return out


def unit_vectors(n: int, seed: int = 0) -> np.ndarray:
    vectors = np.random.default_rng(seed).standard_normal((n, DIMS)).astype(np.float32)
    return vectors / np.linalg.norm(vectors, axis=1, keepdims=True)


def records(doc: int, vectors: np.ndarray, contents: list[str]) -> list[ChunkRecord]:
    doc_id = f"book{doc % 20}/doc{doc:06d}.md"
    return [
        ChunkRecord(
            chunk_id=chunk_id_for("bench", "kb", doc_id, i),
            tenant_id="bench",
            library_id="kb",
            book_id=f"book{doc % 20}",
            doc_id=doc_id,
            chunk_index=i,
            content=contents[i],
            vector=vectors[i],
            embedding_model="bench-model",
            source_path=f"docs/{doc_id}",
            mtime=1.0,
            content_hash=hashlib.sha256(contents[i].encode()).hexdigest(),
            token_count=200,
        )
        for i in range(len(contents))
    ]


def state(recs: list[ChunkRecord]) -> DocState:
    return DocState(recs[0].doc_id, 1.0, 1000, "digest", len(recs))


COLD = """
import sys, time, numpy as np
sys.path.insert(0, {here!r})
def rss():
    for line in open("/proc/self/status"):
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
from holodeck.vectorstore.records import ChunkFilters
from {module} import {cls} as Index
query = np.load({query!r})
before = rss()
started = time.perf_counter()
index = Index(__import__("pathlib").Path({folder!r}))
hits = index.search("bench", query, 10, ChunkFilters(library_ids=["kb"]))
took = time.perf_counter() - started
assert len(hits) == 10
print(took, rss() - before, rss())
"""


def cold_open(module: str, cls: str, folder: Path, query_file: Path) -> tuple[float, float, float]:
    """Seconds for open + first search in a new process; memory it added; its whole RSS.
    The median of 5 processes: this VM's first touch of fresh memory varies 10x."""
    code = COLD.format(
        here=str(HERE), module=module, cls=cls, folder=str(folder), query=str(query_file)
    )
    runs = []
    for _ in range(5):
        out = subprocess.run(
            [sys.executable, "-c", code], capture_output=True, text=True, check=True
        )
        runs.append(tuple(float(x) for x in out.stdout.split()))
    took, added, whole = (statistics.median(r[i] for r in runs) for i in range(3))
    return took, added, whole


def latencies(search: object, queries: np.ndarray) -> tuple[float, float]:
    times = []
    for q in queries:
        started = time.perf_counter()
        search(q)  # type: ignore[operator]
        times.append((time.perf_counter() - started) * 1000)
    return percentile(times, 50), percentile(times, 95)


def store_part(size: int, work: Path, peers: str | None) -> dict[str, object]:
    """Build both indexes with the same chunks and measure them side by side."""
    vectors = unit_vectors(size)
    contents = texts(size)
    docs = []
    for d in range(size // PER_DOC):
        part = slice(d * PER_DOC, (d + 1) * PER_DOC)
        docs.append(records(d, vectors[part], contents[part]))
    queries = unit_vectors(200, seed=99)
    query_file = work / "query.npy"
    np.save(query_file, queries[0])
    result: dict[str, object] = {"chunks": size}

    sqlite_dir, npz_dir = work / f"sqlite{size}", work / f"npz{size}"
    store = VectorStore(LocalIndexAdapter(sqlite_dir))
    started = time.perf_counter()
    for recs in docs:
        store.write_document("bench", "kb", recs[0].doc_id, recs, state(recs))
    result["sqlite_build_s"] = time.perf_counter() - started
    npz = NpzIndex(npz_dir)
    started = time.perf_counter()
    for recs in docs:
        npz.upsert(recs)
        npz.set_doc_state("bench", "kb", state(recs))
    npz.flush()
    result["npz_build_s"] = time.perf_counter() - started

    for name, module, cls, folder in (
        ("sqlite", "holodeck.vectorstore.local", "LocalIndexAdapter", sqlite_dir),
        ("npz", "baseline_npz_index", "NpzIndex", npz_dir),
    ):
        took, added, whole = cold_open(module, cls, folder, query_file)
        result[f"{name}_cold_open_search_s"] = took
        result[f"{name}_rss_added_mb"] = added
        result[f"{name}_rss_mb"] = whole

    scope = ChunkFilters(library_ids=["kb"])
    reader = VectorStore(LocalIndexAdapter(sqlite_dir))
    reader.search("bench", queries[0], 10, scope)
    result["sqlite_search_p50_ms"], result["sqlite_search_p95_ms"] = latencies(
        lambda q: reader.search("bench", q, 10, scope), queries
    )
    npz_reader = NpzIndex(npz_dir)
    npz_reader.search("bench", queries[0], 10, scope)
    result["npz_search_p50_ms"], result["npz_search_p95_ms"] = latencies(
        lambda q: npz_reader.search("bench", q, 10, scope), queries
    )

    changed = records(7, unit_vectors(PER_DOC, seed=5), texts(PER_DOC, seed=5))
    started = time.perf_counter()
    store.write_document("bench", "kb", changed[0].doc_id, changed, state(changed))
    result["sqlite_commit_one_doc_ms"] = (time.perf_counter() - started) * 1000
    started = time.perf_counter()
    npz.delete_by_doc("bench", "kb", changed[0].doc_id)
    npz.upsert(changed)
    npz.set_doc_state("bench", "kb", state(changed))
    npz.flush()
    result["npz_commit_one_doc_ms"] = (time.perf_counter() - started) * 1000
    # the reader follows that commit: the next search reads only the changed rows
    started = time.perf_counter()
    reader.search("bench", queries[1], 10, scope)
    result["sqlite_first_search_after_commit_ms"] = (time.perf_counter() - started) * 1000

    if peers:
        np.save(work / "vectors.npy", vectors)
        np.save(work / "queries.npy", queries)
        out = subprocess.run(
            [peers, str(HERE / "peers_search.py"), str(work)],
            capture_output=True,
            text=True,
            check=True,
        )
        result.update(json.loads(out.stdout))
    shutil.rmtree(npz_dir)
    return result


class CachedVectors:
    """The embedded model's tokenizer with the model taken out: vectors from a cache.

    Measures everything an ingest does except the model. The cache is filled before the
    clock starts with a fixed unit vector per text (derived from its hash), as Chroma's
    ``add`` is handed its vectors ready; a text not in it gets its vector made on the spot.
    """

    def __init__(self, real: Embedder, texts: Sequence[str] = ()) -> None:
        self._real = real
        self._cache = {text: self._make(text) for text in texts}
        self.misses = 0

    @property
    def model_id(self) -> str:
        return self._real.model_id

    @property
    def dimensions(self) -> int:
        return self._real.dimensions

    @property
    def max_tokens(self) -> int:
        return self._real.max_tokens

    @property
    def tokens(self) -> TokenCounter:
        return self._real.tokens

    def _make(self, text: str) -> np.ndarray:
        seed = int.from_bytes(hashlib.blake2b(text.encode(), digest_size=8).digest(), "big")
        vec = np.random.default_rng(seed).standard_normal(self.dimensions).astype(np.float32)
        return vec / np.linalg.norm(vec)

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        out = np.empty((len(texts), self.dimensions), dtype=np.float32)
        for i, text in enumerate(texts):
            vec = self._cache.get(text)
            if vec is None:
                self.misses += 1
                vec = self._make(text)
            out[i] = vec
        return out


def one_chunk_files(n: int) -> dict[str, str]:
    rng = random.Random(3)
    return {
        f"team{i % 40}/note{i:05d}.md": f"# Note {i}\n\nComponent {i} handles "
        + " ".join(rng.choice(WORDS) for _ in range(40))
        + ".\n"
        for i in range(n)
    }


def pipeline_part(peers: str | None, work: Path) -> dict[str, object]:
    """1,000 and 10,000 one-chunk files through the real pipeline, model taken out."""
    result: dict[str, object] = {}
    for files in (1_000, 10_000):
        contents = one_chunk_files(files)
        root, tool = make_project(contents, root=work / f"files{files}")
        tool._embedder = cached = CachedVectors(
            tool.embedder, [t.strip() for t in contents.values()]
        )
        started = time.perf_counter()
        tool.initialize_sync()
        result[f"ingest_{files}_files_s"] = time.perf_counter() - started
        assert cached.misses == 0, "every chunk is one whole file: its vector is cached"
        tool.close()
        if files == 10_000:
            again = reload_tool(root)
            started = time.perf_counter()
            again.initialize_sync()
            result["rerun_10000_unchanged_s"] = time.perf_counter() - started
            assert again.summary is not None and again.summary.unchanged == files
            if peers:
                store = again.store
                rows = [
                    (c.chunk_id, c.content, c.vector, c.doc_id)
                    for doc in sorted(store.doc_ids("bench", "kb"))
                    for c in store.doc_chunks("bench", "kb", doc)
                ]
                np.save(work / "add_vectors.npy", np.stack([r[2] for r in rows]))
                (work / "add_rows.json").write_text(json.dumps([[r[0], r[1], r[3]] for r in rows]))
                out = subprocess.run(
                    [peers, str(HERE / "peers_add.py"), str(work)],
                    capture_output=True,
                    text=True,
                    check=True,
                )
                result.update(json.loads(out.stdout))
            again.close()
    result["scaling_10k_over_1k"] = result["ingest_10000_files_s"] / result["ingest_1000_files_s"]  # type: ignore[operator]
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000])
    parser.add_argument("--peers", help="python of an environment with chromadb, apsw, sqlite-vec")
    parser.add_argument("--skip-pipeline", action="store_true")
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="holodeck-bench-index-"))
    try:
        for size in args.sizes:
            print(json.dumps(store_part(size, work, args.peers), indent=1), flush=True)
        if not args.skip_pipeline:
            print(json.dumps(pipeline_part(args.peers, work), indent=1), flush=True)
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
