"""Hybrid search side by side with LanceDB's full-text plus vector search (issue 39).

For each size, bench_scale's data (the scale set's vectors, both labelled sets' abstracts
repeated, its 200 questions with their query vectors): holodeck's local index built as
``bench_scale.holodeck_build`` builds it, and a LanceDB table of the same ids, vectors and
texts with its vector index (``peers_scale.build_lance``) and its native full-text index on
the text (``peers_scale.build_lance_hybrid``). Then, in each round, one new search process
per engine opens its index and both answer the same queries one at a time, taking turns
query by query (the first of each pair alternates): semantic (the vector, k = 10) as a
control, then hybrid (the question's text and vector, k = 5): holodeck through ``retrieve``
as ``holodeck search`` calls it, LanceDB through ``search(query_type="hybrid")`` with its
default reranker. Each process times its own calls, so the turns' pipes are not counted.

    python benchmarks/bench_hybrid_peers.py --sizes 100000 1000000 --rounds 2 \\
        --peers $(bash benchmarks/peers.sh)

``--work DIR`` keeps the built indexes in DIR/SIZE and reuses them when run again.
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
from _vectors import exact_top, recall, scale_vectors
from bench_scale import QUERIES, chunk_id_rows, holodeck_build, questions, summary, texts_for

HERE = Path(__file__).resolve().parent

SERVE = r"""
import json, sys, time
from pathlib import Path
import numpy as np
sys.path.insert(0, {root!r})
from holodeck.retrieval.hybrid import retrieve
from holodeck.vectorstore.local import LocalIndexAdapter
from holodeck.vectorstore.records import ChunkFilters
from holodeck.vectorstore.store import VectorStore
from holodeck.knowledge_base import settle

def status(key):
    for line in open("/proc/self/status"):
        if line.startswith(key):
            return int(line.split()[1]) / 1024

queries = np.load({work!r} + "/queries.npy")
questions = json.loads(Path({work!r} + "/questions.json").read_text())
store = VectorStore(LocalIndexAdapter(Path({folder!r})))
scope = ChunkFilters(library_ids=["kb"])
settle()  # as a tool's start-up ends
print(json.dumps({{"ready": True}}), flush=True)
for line in sys.stdin:
    kind, index = line.split()
    q, text = queries[int(index)], questions[int(index)]
    t = time.perf_counter()
    if kind == "hybrid":
        passages, _ = retrieve(store, "bench", text, q, 5, scope, "hybrid")
        ids = []
    else:
        ids = [h.record.chunk_id for h in store.search("bench", q, 10, scope)]
    ms = (time.perf_counter() - t) * 1000
    print(json.dumps({{"ms": ms, "ids": ids}}), flush=True)
print(json.dumps({{"rss": status("VmRSS:"), "peak": status("VmHWM:")}}), flush=True)
"""


class Engine:
    """One engine's search process, answering one query per line sent."""

    def __init__(self, name: str, argv: list[str]) -> None:
        self.name = name
        self.proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        assert json.loads(self.read())["ready"]

    def read(self) -> str:
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline()
        if not line:
            raise RuntimeError(f"{self.name}'s search process ended (exit {self.proc.wait()})")
        return line

    def ask(self, kind: str, index: int) -> dict:
        assert self.proc.stdin is not None
        self.proc.stdin.write(f"{kind} {index}\n")
        self.proc.stdin.flush()
        return json.loads(self.read())

    def finish(self) -> dict:
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        last = json.loads(self.read())
        self.proc.wait()
        return last


def build(work: Path, peers: str, size: int) -> dict:
    """Both engines' indexes of ``size`` chunks in ``work`` and their build seconds."""
    vectors = scale_vectors(size)
    np.save(work / "queries.npy", scale_vectors(QUERIES, seed=99, topics_of=size))
    (work / "questions.json").write_text(json.dumps(questions()))
    texts = texts_for(size)
    took, _ = holodeck_build(work / "holodeck", vectors, texts)
    out: dict = {"holodeck_build_s": round(took, 1)}
    folder = work / "holodeck"
    out["holodeck_disk_mb"] = round(sum(p.stat().st_size for p in folder.iterdir()) / 2**20)
    np.save(work / "vectors.npy", vectors)
    (work / "texts.json").write_text(json.dumps(texts))
    del vectors, texts
    code = (
        f"import sys; sys.path.insert(0, {str(HERE)!r}); from pathlib import Path; "
        f"import peers_scale; peers_scale.build_lance_hybrid(Path({str(work)!r}))"
    )
    lance = subprocess.run([peers, "-c", code], capture_output=True, text=True, check=True)
    out.update(json.loads(lance.stdout.splitlines()[-1]))
    out["lancedb_build_s"] = round(out["lancedb_vector_build_s"] + out["lancedb_fts_build_s"], 1)
    return out


def measure(work: Path, peers: str, size: int) -> dict:
    """One round: a new search process per engine, the queries asked of both in turns."""
    holodeck = Engine(
        "holodeck",
        [
            sys.executable,
            "-c",
            SERVE.format(root=str(HERE.parent), work=str(work), folder=str(work / "holodeck")),
        ],
    )
    code = (
        f"import sys; sys.path.insert(0, {str(HERE)!r}); from pathlib import Path; "
        f"import peers_scale; peers_scale.serve_lance(Path({str(work)!r}))"
    )
    lance = Engine("lancedb", [peers, "-c", code])
    ms: dict[str, list[float]] = {}
    found: dict[str, list[list]] = {"holodeck": [], "lancedb": []}
    for kind in ("semantic", "hybrid"):
        for i in range(QUERIES):
            turns = (holodeck, lance) if i % 2 == 0 else (lance, holodeck)
            for engine in turns:
                got = engine.ask(kind, i)
                ms.setdefault(f"{engine.name}_{kind}", []).append(got["ms"])
                if kind == "semantic":
                    found[engine.name].append(got["ids"])
    ends = {e.name: e.finish() for e in (holodeck, lance)}
    vectors = np.load(work / "vectors.npy", mmap_mode="r")
    truth = exact_top(np.ascontiguousarray(vectors), np.load(work / "queries.npy"))
    rows = chunk_id_rows(size)
    row: dict = {}
    for name in ("holodeck", "lancedb"):
        hits = found[name] if name == "lancedb" else [[rows[c] for c in f] for f in found[name]]
        row[f"{name}_hybrid_p50_p95_ms"] = summary(ms[f"{name}_hybrid"])
        row[f"{name}_semantic_p50_p95_ms"] = summary(ms[f"{name}_semantic"])
        row[f"{name}_recall@10"] = round(recall(hits, truth), 4)
        row[f"{name}_rss_steady_peak_mb"] = (round(ends[name]["rss"]), round(ends[name]["peak"]))
    row["hybrid_p50_p95_ratio_holodeck_over_lancedb"] = tuple(
        round(h / lan, 2)
        for h, lan in zip(
            row["holodeck_hybrid_p50_p95_ms"], row["lancedb_hybrid_p50_p95_ms"], strict=True
        )
    )
    row["lancedb_reranker"] = ends["lancedb"]["reranker"]
    return row


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[100_000, 1_000_000])
    parser.add_argument("--peers", required=True, help="python of benchmarks/peers.sh's venv")
    parser.add_argument("--rounds", type=int, default=2, help="search rounds on each build")
    parser.add_argument("--work", type=Path, help="keep (and reuse) the indexes in DIR/SIZE")
    args = parser.parse_args()
    for size in args.sizes:
        started = time.perf_counter()
        if args.work:
            work = args.work / str(size)
            work.mkdir(parents=True, exist_ok=True)
        else:
            work = Path(tempfile.mkdtemp(prefix="holodeck-hybrid-peers-"))
        try:
            built = work / "built.json"
            if not built.exists():  # a build cut short is started again
                for part in ("holodeck", "lance"):
                    shutil.rmtree(work / part, ignore_errors=True)
                built.write_text(json.dumps(build(work, args.peers, size)))
            row = {"chunks": size, **json.loads(built.read_text())}
            print(json.dumps(row), flush=True)
            for round_ in range(1, args.rounds + 1):
                out = {"chunks": size, "round": round_, **measure(work, args.peers, size)}
                print(json.dumps(out), flush=True)
            print(json.dumps({"chunks": size, "run_s": round(time.perf_counter() - started)}))
        finally:
            if not args.work:
                shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
