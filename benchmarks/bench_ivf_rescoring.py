"""Where the inverted file's recall is lost on real embeddings, and what each way of
re-scoring costs: which lists are read, how many candidates are re-scored, and with what.

One file as holodeck builds it (``sqlite_vector_upkeep.new_index``: 4-bit fast-scan codes, a list
per 128 rows, trained on 50 a list) over ``real_vectors.py``'s cache (real chunks of the
Debian documentation corpus, holodeck's model), searched for the exact top 10 of the whole
file and of a scope (a random share of the rows, faiss's id selector in the scan, as a book
or tag filter is). Query kinds as in bench_filtered_recall.py: real questions, random
directions, near-copies (a stored chunk plus noise). Strategies:

- ``main``: today's search (the first ``probes_for`` lists, 40 candidates re-scored exactly);
- ``bands m=M``: ``_ivf_bands.nearest``, lists read in doubling bands while a band could
  hold a better row, every candidate within M x the largest code error seen of the k-th best
  re-scored exactly;
- ``lists=L exact=R``: L lists read, their best R by the 4-bit codes re-scored exactly;
- ``lists=L sq8=R``: L lists read, their best R by the 4-bit codes re-scored with 8-bit
  scalar codes held in memory (384 bytes a vector), the best 40 of those exactly
  (``exact=E``: the best E).

Exact vectors come from memory here; the product reads them from SQLite, so the ``exact``
column (rows re-scored exactly per query) is the cost the timings leave out.

    python benchmarks/bench_ivf_rescoring.py [--queries 40] [--scope-share 0.3]
"""

from __future__ import annotations

import argparse
import json
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import _ivf_bands
import faiss
import numpy as np

from holodeck.vectorstore.sqlite import vector_upkeep as sqlite_vector_upkeep
from holodeck.vectorstore.sqlite import vectors as sqlite_vectors

HERE = Path(__file__).resolve().parent
CACHE = HERE / "results" / "real_vectors"
K = 10
EXACT = 40

Search = Callable[[np.ndarray, Any], tuple[np.ndarray, int]]


def _unit(x: np.ndarray) -> np.ndarray:
    return (x / np.linalg.norm(x, axis=-1, keepdims=True)).astype(np.float32)


def _exact_top(vectors: np.ndarray, ids: np.ndarray, query: np.ndarray, k: int) -> np.ndarray:
    scores = vectors[ids] @ query
    return ids[np.argsort(-scores, kind="stable")[:k]]


def build(vectors: np.ndarray, rng: np.random.Generator) -> tuple[Any, int]:
    """One vector index file over ``vectors`` as holodeck builds it, and its list count."""
    n, dims = vectors.shape
    lists = sqlite_vector_upkeep.lists_for(n)
    index = sqlite_vector_upkeep.new_index(dims, lists)
    index.train(vectors[rng.choice(n, lists * sqlite_vector_upkeep.TRAIN_PER_LIST, replace=False)])
    index.add(vectors)
    return index, lists


def strategies(index: Any, vectors: np.ndarray) -> dict[str, Search]:
    """Each strategy: query, selector -> (top ids, rows re-scored exactly)."""
    lists = int(index.nlist)
    sq = faiss.ScalarQuantizer(vectors.shape[1], faiss.ScalarQuantizer.QT_8bit)
    sq.train(vectors[np.random.default_rng(1).choice(len(vectors), 20_000, replace=False)])
    codes = sq.compute_codes(vectors)

    def fixed(nprobe: int, wanted: int, q: np.ndarray, chosen: Any) -> np.ndarray:
        params = faiss.SearchParametersIVF()
        params.nprobe = nprobe
        if chosen is not None:
            params.sel = chosen
        _, ids = index.search(q[None, :], wanted, params=params)
        return ids[0][ids[0] >= 0]

    def main(q: np.ndarray, chosen: Any) -> tuple[np.ndarray, int]:
        ids = fixed(sqlite_vectors.probes_for(lists), EXACT, q, chosen)
        return _exact_top(vectors, ids, q, K), ids.size

    def bands(margin: float) -> Search:
        def run(q: np.ndarray, chosen: Any) -> tuple[np.ndarray, int]:
            read = [0]

            def exact(ids: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
                read[0] += ids.size
                return ids, vectors[ids]

            _ivf_bands.MARGIN_FACTOR = margin
            first = sqlite_vectors.probes_for(lists)
            ids, _ = _ivf_bands.nearest(index, q, K, first, chosen, exact, np.zeros(0, np.int64))
            return ids, read[0]

        return run

    def sq8(nprobe: int, wanted: int, exact: int = EXACT) -> Search:
        def run(q: np.ndarray, chosen: Any) -> tuple[np.ndarray, int]:
            ids = fixed(nprobe, wanted, q, chosen)
            approx = sq.decode(codes[ids]) @ q
            best = ids[np.argsort(-approx, kind="stable")[:exact]]
            return _exact_top(vectors, best, q, K), best.size

        return run

    def exact_only(nprobe: int, wanted: int) -> Search:
        def run(q: np.ndarray, chosen: Any) -> tuple[np.ndarray, int]:
            ids = fixed(nprobe, wanted, q, chosen)
            return _exact_top(vectors, ids, q, K), ids.size

        return run

    out: dict[str, Search] = {"main": main}
    for wanted in (EXACT, 1_000):
        out[f"lists={lists} exact={wanted}"] = exact_only(lists, wanted)
    for margin in (0.75, 1.5):
        out[f"bands m={margin}"] = bands(margin)
    for nprobe in (sqlite_vectors.probes_for(lists), lists):
        for wanted in (1_000, 3_000):
            out[f"lists={nprobe} sq8={wanted}"] = sq8(nprobe, wanted)
    for wanted, exact in ((3_000, 64), (4_000, EXACT), (4_000, 64)):
        out[f"lists={lists} sq8={wanted} exact={exact}"] = sq8(lists, wanted, exact)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--queries", type=int, default=40)
    ap.add_argument("--scope-share", type=float, default=0.3)
    ap.add_argument("--cache", type=Path, default=CACHE)
    ap.add_argument("--out", type=Path, default=HERE / "results" / "ivf_rescoring.json")
    args = ap.parse_args()
    faiss.omp_set_num_threads(1)  # one query at a time on one core, as a search runs
    vectors = np.load(args.cache / "vectors.npy")
    questions = np.load(args.cache / "questions.npy").astype(np.float32)
    n, dims = vectors.shape
    rng = np.random.default_rng(0)
    started = time.perf_counter()
    index, lists = build(vectors, rng)
    print(f"{n:,} real vectors, {lists} lists, built in {time.perf_counter() - started:.1f} s")
    picks = rng.choice(n, args.queries, replace=False)
    asked = questions[rng.choice(len(questions), args.queries, replace=False)]
    random = _unit(rng.standard_normal((args.queries, dims)))
    noise = _unit(rng.standard_normal((args.queries, dims)))
    kinds = {"question": asked, "random": random, "near-copy": _unit(vectors[picks] + 0.15 * noise)}
    scope = np.sort(rng.choice(n, int(n * args.scope_share), replace=False)).astype(np.int64)
    scopes = {"all": (np.arange(n), None), f"{args.scope_share:.0%} of rows": (scope, scope)}
    rows = []
    print("| scope | query | strategy | recall@10 | p50 ms | p95 ms | exact rows |")
    print("|---|---|---|---:|---:|---:|---:|")
    for scope_name, (allowed, selected) in scopes.items():
        chosen = None if selected is None else faiss.IDSelectorBatch(selected)
        for kind, queries in kinds.items():
            truth = [set(_exact_top(vectors, allowed, q, K).tolist()) for q in queries]
            for name, search in strategies(index, vectors).items():
                found, ms, read = [], [], []
                for q in queries:
                    t = time.perf_counter()
                    ids, exact = search(q, chosen)
                    ms.append((time.perf_counter() - t) * 1000)
                    found.append(set(ids.tolist()))
                    read.append(exact)
                recall = float(np.mean([len(f & t) / K for f, t in zip(found, truth, strict=True)]))
                row = {
                    "scope": scope_name, "kind": kind, "strategy": name, "recall": recall,
                    "p50": float(np.percentile(ms, 50)), "p95": float(np.percentile(ms, 95)),
                    "exact": float(np.mean(read)),
                }  # fmt: skip
                rows.append(row)
                print(
                    f"| {scope_name} | {kind} | {name} | {recall:.3f} | {row['p50']:.1f} | "
                    f"{row['p95']:.1f} | {row['exact']:.0f} |",
                    flush=True,
                )
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps({"vectors": n, "lists": lists, "rows": rows}, indent=1))


if __name__ == "__main__":
    main()
