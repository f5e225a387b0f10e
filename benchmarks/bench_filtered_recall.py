"""Filtered search's recall@10 against exact search in the same scope, by scope and query
kind, on real embeddings: holodeck's local index (one or more checkouts), Chroma and LanceDB.

The vectors are real: ``real_vectors.py``'s cache (the Debian documentation corpus chunked
and embedded with holodeck's own chunker and model). One index, one tenant, five libraries
cut from the chunks in a shuffled order of their documents: 50, 1,000, 20,000 and 40,000
chunks, and ``big`` with the rest (``--pad-to N`` pads ``big`` to N chunks with the scale
set's generated vectors, ``_vectors.py``, for sizes past the real ones). Books are the
corpus's sub-folders; one document in ten carries the tag ``t10``. Scopes: each library by
its filter, every library (no filter), a large and a small book and the tag inside ``big``.

Query kinds, ``--queries`` of each a scope (the same vectors for every system):
- ``near-dup``: a stored chunk of the scope, moved to cosine ~0.97, chosen among those whose
  ten nearest chunks of the whole index lie mostly outside the scope;
- ``sum``: the normalised sum of two stored chunks of the scope;
- ``random``: a random direction (a query about nothing the corpus holds);
- ``question``: a real question's embedding (``real_vectors.py``: Cranfield, NPL, and the
  real-folder questions about these manuals).

holodeck is searched through ``VectorStore`` in a new process per checkout (``--holodeck
NAME=PATH``: that checkout's code on the same index folder, so before and after are one
build), each scope once before its timed queries (files opened, as a long-lived tool has
them). The peers (``peers_filtered.py`` in ``benchmarks/peers.sh``'s environment) get the
same vectors, metadata and filters.

    python benchmarks/bench_filtered_recall.py --holodeck main=/work/main ann=. \\
        --peers $(benchmarks/peers.sh) [--pad-to 1000000] [--peer-queries 30]
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np
from _vectors import scale_vectors

HERE = Path(__file__).resolve().parent
CACHE = HERE / "results" / "real_vectors"
SIZES = {"lib50": 50, "lib1k": 1_000, "lib20k": 20_000, "lib40k": 40_000}
KINDS = ("near-dup", "sum", "random", "question")
#: Real chunks kept for library big at the least (its books and tag are real ones).
BIG_REAL = 10_000
WINDOW = 256
TENANT = "bench"

SEARCH = r"""
import json, sys, time
from pathlib import Path
import numpy as np
import holodeck
from holodeck.vectorstore.local import LocalIndexAdapter
from holodeck.vectorstore.records import ChunkFilters
from holodeck.vectorstore.store import VectorStore

work = Path(sys.argv[1])
cells = json.loads((work / "cells.json").read_text())
queries = np.load(work / "queries.npy")
store = VectorStore(LocalIndexAdapter(work / "holodeck"))
out = {"file": holodeck.__file__, "cells": {}}
for cell in cells:
    filters = ChunkFilters(**cell["filters"])
    store.search("bench", queries[cell["rows"][0]], 10, filters)  # opened, as a tool has it
    found, ms = [], []
    for row in cell["rows"]:
        t = time.perf_counter()
        hits = store.search("bench", queries[row], 10, filters)
        ms.append((time.perf_counter() - t) * 1000)
        found.append([int(h.record.chunk_id[1:]) for h in hits])
    out["cells"][cell["name"]] = {"found": found, "ms": ms}
print(json.dumps(out))
"""


def load_real(
    cache: Path, indexes: list[Path]
) -> tuple[np.ndarray, list[dict[str, Any]], np.ndarray]:
    """The real vectors: the cache's (its parts so far while ``real_vectors.py`` is still
    embedding) and those of holodeck indexes named (chunks a real ``holodeck ingest``
    embedded); their chunks' metadata; and the questions' vectors."""
    if (cache / "vectors.npy").is_file():
        parts = [np.load(cache / "vectors.npy")]
    else:
        parts = [np.load(p) for p in sorted(cache.glob("part-*.npy"))]
    lines = (cache / "chunks.jsonl").read_text().splitlines()
    meta = [json.loads(line) for line in lines[: sum(len(p) for p in parts)]]
    for index in indexes:
        name = index.stem if index.name != "index.db" else index.parents[3].name
        with sqlite3.connect(index) as db:
            rows = db.execute(
                "SELECT c.doc_id, c.book_id, c.token_count, c.content, v.vector "
                "FROM chunks c JOIN vectors v ON v.id = c.id ORDER BY c.id"
            ).fetchall()
        parts.append(np.frombuffer(b"".join(r[4] for r in rows), np.float32).reshape(len(rows), -1))
        meta += [
            {"path": f"{name}/{doc}", "top": name, "sub": f"{name}/{book}", "tokens": tokens, "text": text}  # noqa: E501
            for doc, book, tokens, text, _ in rows
        ]  # fmt: skip
    return np.concatenate(parts), meta, np.load(cache / "questions.npy")


def layout(meta: list[dict[str, Any]], pad: int) -> dict[str, Any]:
    """Each row's library, book, tags and document, in the shuffled order of documents."""
    paths = sorted({m["path"] for m in meta})
    rank = {p: r for r, p in enumerate(np.random.default_rng(0).permutation(paths))}
    order = sorted(range(len(meta)), key=lambda i: (rank[meta[i]["path"]], i))
    lib = np.empty(len(meta) + pad, dtype=object)
    start = 0
    for name, size in SIZES.items():  # a size the real chunks cannot fill (and leave big
        if start + size > len(meta) - BIG_REAL:  # some) is left out
            continue
        lib[order[start : start + size]] = name
        start += size
    lib[order[start:]] = "big"
    lib[len(meta) :] = "big"
    book = [m["sub"] for m in meta] + [f"pad/{i % 50}" for i in range(pad)]
    doc = [m["path"] for m in meta] + [f"pad/{i % 50}/{i // 10}" for i in range(pad)]
    tagged = [int(hashlib.sha1(d.encode()).hexdigest(), 16) % 10 == 0 for d in doc]
    return {"lib": lib, "book": np.array(book), "doc": doc, "tag": np.array(tagged)}


def scopes(lay: dict[str, Any]) -> list[tuple[str, dict[str, Any], np.ndarray]]:
    """(name, ChunkFilters arguments, row mask) of every scope searched."""
    lib, book, tag = lay["lib"], lay["book"], lay["tag"]
    names = [n for n in (*SIZES, "big") if np.any(lib == n)]
    out = [(name, {"library_ids": [name]}, lib == name) for name in names]
    out.append(("all", {}, np.ones(len(lib), dtype=bool)))
    names, counts = np.unique(book[lib == "big"], return_counts=True)
    real = np.array([not n.startswith("pad/") for n in names])
    names, counts = names[real], counts[real]
    for want, label in ((5_000, "book-large"), (300, "book-small")):
        chosen = str(names[np.argmin(np.abs(counts - want))])
        out.append((label, {"library_ids": ["big"], "book_ids": [chosen]}, (lib == "big") & (book == chosen)))  # fmt: skip  # noqa: E501
    out.append(("tag", {"library_ids": ["big"], "tags": ["t10"]}, (lib == "big") & tag))
    return out


def unit(x: np.ndarray) -> np.ndarray:
    return (x / np.linalg.norm(x, axis=-1, keepdims=True)).astype(np.float32)


def make_queries(
    vectors: np.ndarray, real: int, mask: np.ndarray, kind: str, n: int, questions: np.ndarray,
    seed: int,
) -> np.ndarray:  # fmt: skip
    """``n`` queries of one kind for the scope ``mask``."""
    rng = np.random.default_rng(seed)
    inside = np.flatnonzero(mask)
    real_inside = inside[inside < real]
    if kind == "random":
        return unit(rng.standard_normal((n, vectors.shape[1])))
    if kind == "question":
        return questions[rng.choice(len(questions), n, replace=len(questions) < n)]
    if kind == "sum":
        a, b = rng.choice(inside, n), rng.choice(inside, n)
        return unit(vectors[a] + vectors[b])
    # near-dup: among a sample of the scope's real chunks, those whose ten nearest chunks of
    # the (real part of the) index lie most outside the scope
    sample = rng.choice(real_inside, min(len(real_inside), max(5 * n, 500)), replace=False)
    outside = np.empty(len(sample))
    for start in range(0, len(sample), 100):
        part = sample[start : start + 100]
        scores = vectors[part] @ vectors[:real].T
        scores[np.arange(len(part)), part] = -np.inf  # not itself
        near = np.argpartition(-scores, 10, axis=1)[:, :10]
        outside[start : start + len(part)] = np.mean(~mask[near], axis=1)
    chosen = sample[np.argsort(-outside, kind="stable")[:n]]
    noise = rng.standard_normal((len(chosen), vectors.shape[1])) * (
        0.25 / np.sqrt(vectors.shape[1])
    )
    return unit(vectors[chosen] + noise)


def exact(
    vectors: np.ndarray, mask: np.ndarray, queries: np.ndarray, k: int = 10
) -> list[list[int]]:
    """The exact top ``k`` rows of the scope for each query."""
    rows = np.flatnonzero(mask)
    scores = queries @ vectors[rows].T if len(rows) < 200_000 else None
    out = []
    for i, q in enumerate(queries):
        s = scores[i] if scores is not None else vectors[rows] @ q
        top = np.argpartition(-s, min(k, len(s) - 1))[:k] if len(s) > k else np.arange(len(s))
        out.append(rows[top[np.argsort(-s[top])]].tolist())
    return out


def build_holodeck(
    folder: Path, vectors: np.ndarray, meta: list[dict[str, Any]], lay: dict[str, Any]
) -> float:
    """Write every row through ``VectorStore`` (a commit per window of documents, as an ingest
    commits), then the ingest's last step (the approximate index files)."""
    from holodeck.vectorstore.local import LocalIndexAdapter
    from holodeck.vectorstore.records import ChunkRecord, DocState
    from holodeck.vectorstore.store import VectorStore

    store = VectorStore(LocalIndexAdapter(folder))
    docs: dict[tuple[str, str], list[int]] = {}
    for row, (lib, doc) in enumerate(zip(lay["lib"], lay["doc"], strict=True)):
        docs.setdefault((str(lib), doc), []).append(row)
    started = time.perf_counter()
    items = list(docs.items())
    for first in range(0, len(items), WINDOW // 8):
        with store.batch():
            for (lib, doc), rows in items[first : first + WINDOW // 8]:
                recs = [
                    ChunkRecord(
                        chunk_id=f"c{row}", tenant_id=TENANT, library_id=lib,
                        book_id=str(lay["book"][row]), doc_id=doc, chunk_index=i,
                        content=meta[row]["text"] if row < len(meta) else f"padding {row}",
                        vector=vectors[row], embedding_model="bench-model",
                        source_path=doc, mtime=1.0, content_hash=f"h{row}",
                        token_count=int(meta[row]["tokens"]) if row < len(meta) else 100,
                        tags=["t10"] if lay["tag"][row] else [],
                    )
                    for i, row in enumerate(rows)
                ]  # fmt: skip
                store.write_document(TENANT, lib, doc, recs, DocState(doc, 1.0, 1, "d", len(recs)))
    store.flush()
    took = time.perf_counter() - started
    store.adapter.close()
    return took


def summary(found: list[list[int]], truth: list[list[int]], ms: list[float]) -> dict[str, float]:
    """recall@10 against the truth, p50 and p95 latency."""
    r = [len(set(f[:10]) & set(t)) / max(1, len(t)) for f, t in zip(found, truth, strict=False)]
    ordered = sorted(ms)
    return {
        "recall": round(float(np.mean(r)), 3),
        "p50": round(float(np.median(ordered)), 2),
        "p95": round(ordered[min(len(ordered) - 1, int(0.95 * len(ordered)))], 2),
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--holodeck", nargs="+", default=[f"this={HERE.parent}"], metavar="NAME=PATH")
    ap.add_argument("--pad-to", type=int, default=0, help="pad library big to this many chunks")
    ap.add_argument("--queries", type=int, default=100)
    ap.add_argument("--peers", help="python of benchmarks/peers.sh's environment")
    ap.add_argument("--peer-names", nargs="*", default=["chroma", "lancedb"])
    ap.add_argument("--peer-queries", type=int, default=0, help="fewer queries a cell for peers")
    ap.add_argument("--work", type=Path, help="keep the indexes here (reused when present)")
    ap.add_argument("--out", type=Path, default=HERE / "results" / "filtered_recall.json")
    ap.add_argument("--cache", type=Path, default=CACHE, help="real_vectors.py's output")
    ap.add_argument(
        "--index", type=Path, nargs="*", default=[], help="also these index.db's vectors"
    )
    args = ap.parse_args()
    vectors, meta, questions = load_real(args.cache, args.index)
    real = len(vectors)
    lay = layout(meta, 0)
    big_real = int(np.sum(lay["lib"] == "big"))
    pad = max(0, args.pad_to - big_real)
    if pad:
        vectors = np.concatenate([vectors, scale_vectors(pad, seed=3)])
        lay = layout(meta, pad)
    work = args.work or Path(tempfile.mkdtemp(prefix="holodeck-filtered-"))
    work.mkdir(parents=True, exist_ok=True)
    cells, all_queries, truth = [], [], {}
    for s, (name, filters, mask) in enumerate(scopes(lay)):
        for q, kind in enumerate(KINDS):
            qs = make_queries(vectors, real, mask, kind, args.queries, questions, 100 * s + q)
            start = sum(len(x) for x in all_queries)
            all_queries.append(qs)
            cell = f"{name}/{kind}"
            cells.append({"name": cell, "filters": filters, "rows": list(range(start, start + len(qs))), "size": int(mask.sum())})  # fmt: skip  # noqa: E501
            truth[cell] = exact(vectors, mask, qs)
    np.save(work / "queries.npy", np.concatenate(all_queries))
    (work / "cells.json").write_text(json.dumps(cells))
    result: dict[str, Any] = {"chunks": len(vectors), "real": real, "pad": pad, "cells": {}}
    folder = work / "holodeck"
    if not (folder / "index.db").exists():
        result["holodeck_build_s"] = round(build_holodeck(folder, vectors, meta, lay), 1)
        print(f"holodeck built in {result['holodeck_build_s']} s", flush=True)
    for spec in args.holodeck:
        label, path = spec.split("=", 1)
        env = {**os.environ, "PYTHONPATH": str(Path(path).resolve())}
        out = json.loads(
            subprocess.run(
                [sys.executable, "-c", SEARCH, str(work)], env=env, capture_output=True,
                text=True, check=True, cwd=work,  # not this checkout's holodeck by the cwd
            ).stdout
        )  # fmt: skip
        print(f"holodeck {label}: {out['file']}", flush=True)
        for cell in cells:
            got = out["cells"][cell["name"]]
            row = summary(got["found"], truth[cell["name"]], got["ms"])
            result["cells"].setdefault(cell["name"], {"size": cell["size"]})[
                f"holodeck-{label}"
            ] = row
            print(cell["name"], label, row, flush=True)
    if args.peers:
        np.save(work / "vectors.npy", vectors)
        (work / "layout.json").write_text(json.dumps({
            "lib": [str(x) for x in lay["lib"]], "book": lay["book"].tolist(), "tag": lay["tag"].tolist(),  # noqa: E501
            "peer_queries": args.peer_queries,
        }))  # fmt: skip
        peer = subprocess.run(
            [args.peers, str(HERE / "peers_filtered.py"), str(work), *args.peer_names],
            capture_output=True, text=True,
        )  # fmt: skip
        if peer.returncode:
            print(peer.stderr[-3000:], file=sys.stderr)
        for line in peer.stdout.splitlines():
            got = json.loads(line)
            name = got.pop("name")
            if "error" in got:
                result[f"{name}_error"] = got["error"]
                print(name, got["error"], flush=True)
                continue
            result[f"{name}_build_s"] = got["build_s"]
            for cell in cells:
                g = got["cells"][cell["name"]]
                want = truth[cell["name"]][: len(g["found"])]
                row = summary(g["found"], want, g["ms"])
                result["cells"][cell["name"]][name] = row
                print(cell["name"], name, row, flush=True)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=1))
    print(table(result))
    if not args.work:
        shutil.rmtree(work, ignore_errors=True)


def table(result: dict[str, Any]) -> str:
    """The results as a Markdown table: recall@10 (p50 / p95 ms) per system."""
    systems = sorted({k for c in result["cells"].values() for k in c if k != "size"})
    lines = ["| scope (chunks) | query | " + " | ".join(systems) + " |"]
    lines.append("|---|---|" + "---:|" * len(systems))
    for name, cell in result["cells"].items():
        scope, kind = name.split("/")
        vals = []
        for s in systems:
            r = cell.get(s)
            vals.append(f"{r['recall']:.3f} ({r['p50']:.1f} / {r['p95']:.1f})" if r else "")
        lines.append(f"| {scope} ({cell['size']:,}) | {kind} | " + " | ".join(vals) + " |")
    return "\n".join(lines)


if __name__ == "__main__":
    main()
