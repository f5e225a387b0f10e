"""The local index at 100k, 300k and 1M chunks, side by side with Chroma (and LanceDB).

Model-free: the scale set's vectors (``_vectors.py``) and real texts (both labelled sets'
abstracts, repeated), 10 chunks per document. For each size, in one run:

- **build**: holodeck through ``VectorStore`` (documents committed in windows of 256 chunks,
  as an ingest commits them, with full-text rows; then the ingest's last step, which writes
  the approximate index file); Chroma's ``add`` of the same ids, vectors, texts and
  tenant/library metadata in batches of 5,000; LanceDB's table and vector index.
- **search**, each in a new process that opens the index and answers 200 queries one at a
  time: semantic with the query vector given (k = 10), recall@10 against exact search of the
  same vectors, and holodeck's hybrid (the question's text and vector, k = 5, as
  ``holodeck search`` asks); the process's resident memory at the end (steady) and at its
  highest (peak, ``VmHWM``).

    python benchmarks/bench_scale.py --sizes 100000 300000 1000000 --peers $(benchmarks/peers.sh)

``--search-settings 256:40 512:100`` also searches the same file reading other numbers of
its lists (``nprobe``) and re-scoring other numbers of candidates exactly: recall@10 and
semantic p50 / p95 for each, from one build.

Each size prints holodeck's line first, then the whole row with the peers' numbers;
``--peer-names chroma`` leaves LanceDB out (its build takes as long as Chroma's).
"""

from __future__ import annotations

import argparse
import json
import random
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np
from _vectors import exact_top, recall, scale_vectors
from bench_local_index import PER_DOC, records, state
from bench_retrieval import EVAL, load

from holodeck.vectorstore.local import LocalIndexAdapter
from holodeck.vectorstore.sqlite import codes as sqlite_codes
from holodeck.vectorstore.sqlite import postings as sqlite_postings
from holodeck.vectorstore.sqlite import vector_upkeep as sqlite_vector_upkeep
from holodeck.vectorstore.store import VectorStore

HERE = Path(__file__).resolve().parent
QUERIES = 200
WINDOW_DOCS = 256 // PER_DOC

SEARCH = r"""
import json, sys, time
from pathlib import Path
import numpy as np
sys.path.insert(0, {here!r})
from holodeck.retrieval.hybrid import retrieve
from holodeck.vectorstore.local import LocalIndexAdapter
from holodeck.vectorstore.records import ChunkFilters
from holodeck.vectorstore.store import VectorStore

def status(key):
    for line in open("/proc/self/status"):
        if line.startswith(key):
            return int(line.split()[1]) / 1024

queries = np.load({work!r} + "/queries.npy")
questions = json.loads(Path({work!r} + "/questions.json").read_text())
store = VectorStore(LocalIndexAdapter(Path({folder!r})))
scope = ChunkFilters(library_ids=["kb"])
from holodeck.knowledge_base import settle
settle()  # as a tool's start-up ends
out = {{"found": [], "semantic_ms": [], "hybrid_ms": [], "hybrid_plain_ms": []}}
for q in queries:
    t = time.perf_counter()
    hits = store.search("bench", q, 10, scope)
    out["semantic_ms"].append((time.perf_counter() - t) * 1000)
    out["found"].append([h.record.chunk_id for h in hits])
from holodeck.retrieval import hybrid
for q, text in zip(queries, questions):  # with and without the keyword side's extras, in turn
    for key, extras in (("hybrid_ms", True), ("hybrid_plain_ms", False)):
        hybrid.EXPAND = hybrid.PAIRS = extras
        t = time.perf_counter()
        retrieve(store, "bench", text, q, 5, scope, "hybrid")
        out[key].append((time.perf_counter() - t) * 1000)
hybrid.EXPAND = hybrid.PAIRS = True
out["rss_mb"], out["peak_mb"] = status("VmRSS:"), status("VmHWM:")
from holodeck.vectorstore.sqlite import vectors as sqlite_vectors
out["settings"] = {{}}
for probes, candidates in {settings!r}:  # lists read, candidates ranked by the 8-bit codes
    sqlite_vectors.probes_for = lambda lists, probes=probes: probes
    sqlite_vectors.MIN_PROBES = 1
    sqlite_vectors.CANDIDATES = candidates
    found, ms = [], []
    for q in queries:
        t = time.perf_counter()
        hits = store.search("bench", q, 10, scope)
        ms.append((time.perf_counter() - t) * 1000)
        found.append([h.record.chunk_id for h in hits])
    out["settings"][f"{{probes}}:{{candidates}}"] = {{"found": found, "ms": ms}}
print(json.dumps(out))
"""


def texts_for(size: int) -> list[str]:
    """``size`` chunk texts: both sets' abstracts, repeated (each copy numbered)."""
    abstracts: list[str] = []
    for name in ("cranfield", "vaswani_npl"):
        corpus, _, _ = load(EVAL / name)
        abstracts += [t for t in corpus.values() if t]
    return [f"{abstracts[i % len(abstracts)]} ({i // len(abstracts)})" for i in range(size)]


def questions() -> list[str]:
    found: list[str] = []
    for name in ("cranfield", "vaswani_npl"):
        _, queries, _ = load(EVAL / name)
        found += list(queries.values())
    return random.Random(1).sample(found, QUERIES)


#: The build's phases timed apart: (name, object, attribute wrapped by a timer).
PHASES = [
    ("vector lists (k-means)", sqlite_vector_upkeep.VectorUpkeep, "_trained"),
    ("vector assignment and 4-bit codes", sqlite_vector_upkeep.VectorUpkeep, "_add_rows"),
    ("8-bit codes", sqlite_codes.Scale, "encode"),
    ("vector files written", sqlite_vector_upkeep, "save_whole"),
    ("keyword postings", sqlite_postings.KeywordFile, "upkeep"),
]


@contextmanager
def timed_phases() -> Iterator[dict[str, float]]:
    """Seconds spent in each of ``PHASES`` while the block runs (nested ones counted in
    both: the 8-bit codes are made inside the assignment's loop)."""
    spent = dict.fromkeys([name for name, _, _ in PHASES], 0.0)
    originals = [(owner, attr, getattr(owner, attr)) for _, owner, attr in PHASES]

    def timer(name: str, fn: Callable[..., Any]) -> Callable[..., Any]:
        def run(*args: Any, **kwargs: Any) -> Any:
            started = time.perf_counter()
            try:
                return fn(*args, **kwargs)
            finally:
                spent[name] += time.perf_counter() - started

        return run

    for (name, owner, attr), (_, _, fn) in zip(PHASES, originals, strict=True):
        setattr(owner, attr, timer(name, fn))
    try:
        yield spent
    finally:
        for owner, attr, fn in originals:
            setattr(owner, attr, fn)


def holodeck_build(
    folder: Path, vectors: np.ndarray, texts: list[str]
) -> tuple[float, dict[str, float]]:
    """Seconds to build the index of ``vectors`` and ``texts``, and ms per chunk by phase."""
    store = VectorStore(LocalIndexAdapter(folder))
    with timed_phases() as spent:
        started = time.perf_counter()
        _write_documents(store, vectors, texts)
        writes = time.perf_counter() - started
        store.flush()  # the ingest's last step: the approximate index file
        took = time.perf_counter() - started
    store.adapter.close()
    phases = {"SQLite writes": writes, **spent}
    return took, {name: round(s * 1000 / len(vectors), 4) for name, s in phases.items()}


def _write_documents(store: VectorStore, vectors: np.ndarray, texts: list[str]) -> None:
    """Every document, committed in windows as an ingest commits them."""
    docs = len(vectors) // PER_DOC
    for first in range(0, docs, WINDOW_DOCS):
        with store.batch():  # one commit per window, as the ingest commits
            for d in range(first, min(docs, first + WINDOW_DOCS)):
                part = slice(d * PER_DOC, (d + 1) * PER_DOC)
                recs = records(d, vectors[part], texts[part])
                store.write_document("bench", "kb", recs[0].doc_id, recs, state(recs))


def chunk_id_rows(size: int) -> dict[str, int]:
    """Row number in the vectors of each chunk id ``records`` gives."""
    from holodeck.vectorstore.records import chunk_id_for

    return {
        chunk_id_for("bench", "kb", f"book{d % 20}/doc{d:06d}.md", i): d * PER_DOC + i
        for d in range(size // PER_DOC)
        for i in range(PER_DOC)
    }


def summary(times: list[float]) -> tuple[float, float]:
    ordered = sorted(times)
    return round(float(np.median(ordered)), 2), round(ordered[int(0.95 * len(ordered))], 2)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[100_000, 300_000, 1_000_000])
    parser.add_argument("--peers", help="python of benchmarks/peers.sh's environment")
    parser.add_argument(
        "--peer-names", nargs="+", default=["chroma", "lancedb"], help="peers to build and search"
    )
    parser.add_argument(
        "--search-settings",
        nargs="*",
        default=[],
        metavar="PROBES:CANDIDATES",
        help="also search the same file reading these many lists, ranking these many by codes",
    )
    parser.add_argument(
        "--build-only", action="store_true", help="time the build and its phases, no search"
    )
    args = parser.parse_args()
    settings = [tuple(int(x) for x in s.split(":")) for s in args.search_settings]
    for size in args.sizes:
        run_started = time.perf_counter()
        work = Path(tempfile.mkdtemp(prefix="holodeck-scale-"))
        try:
            vectors = scale_vectors(size)
            queries = scale_vectors(QUERIES, seed=99, topics_of=size)
            np.save(work / "queries.npy", queries)
            (work / "questions.json").write_text(json.dumps(questions()))
            truth = exact_top(vectors, queries)
            texts = texts_for(size)
            row: dict[str, object] = {"chunks": size}
            folder = work / "holodeck"
            took, phases = holodeck_build(folder, vectors, texts)
            row["holodeck_build_s"] = round(took, 1)
            row["holodeck_build_ms_per_chunk"] = round(took * 1000 / size, 4)
            row["holodeck_build_phases_ms_per_chunk"] = phases
            if args.build_only:
                shutil.rmtree(folder)
                print(json.dumps(row), flush=True)
                continue
            code = SEARCH.format(
                here=str(HERE), work=str(work), folder=str(folder), settings=settings
            )
            out = json.loads(
                subprocess.run(
                    [sys.executable, "-c", code], capture_output=True, text=True, check=True
                ).stdout
            )
            rows = chunk_id_rows(size)
            found = [[rows[c] for c in ids] for ids in out["found"]]
            row["holodeck_recall@10"] = round(recall(found, truth), 4)
            row["holodeck_semantic_p50_p95_ms"] = summary(out["semantic_ms"])
            row["holodeck_hybrid_p50_p95_ms"] = summary(out["hybrid_ms"])
            row["holodeck_hybrid_without_feedback_or_pairs_p50_p95_ms"] = summary(
                out["hybrid_plain_ms"]
            )
            row["holodeck_rss_steady_peak_mb"] = (round(out["rss_mb"]), round(out["peak_mb"]))
            for name, other in out["settings"].items():  # recall@10, semantic p50 / p95
                hits = [[rows[c] for c in ids] for ids in other["found"]]
                row[f"holodeck_at_{name}"] = (round(recall(hits, truth), 4), *summary(other["ms"]))
            row["holodeck_disk_mb"] = round(sum(p.stat().st_size for p in folder.iterdir()) / 2**20)
            shutil.rmtree(folder)
            print(json.dumps(row), flush=True)  # holodeck's part, before the peers' long builds
            if args.peers:
                np.save(work / "vectors.npy", vectors)
                np.save(work / "truth.npy", truth)
                (work / "texts.json").write_text(json.dumps(texts))
                del vectors, texts
                peer = subprocess.run(
                    [args.peers, str(HERE / "peers_scale.py"), str(work), *args.peer_names],
                    capture_output=True,
                    text=True,
                )
                if peer.returncode:
                    print(peer.stderr[-3000:], file=sys.stderr)
                for line in peer.stdout.splitlines():
                    row.update(json.loads(line))
            row["run_s"] = round(time.perf_counter() - run_started)
            print(json.dumps(row), flush=True)
        finally:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
