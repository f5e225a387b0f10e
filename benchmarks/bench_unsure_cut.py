"""The unsure-cut rule's sweep (``vectors.UNSURE_CUT``): on one file of real vectors as holodeck
builds it, for each query kind, recall@10 with the 4-bit cut at 3,000 candidates and at 6,000,
how far the 10th best 8-bit estimate stands above the last candidate's 4-bit one (in
deviations of the 4-bit error), and what each threshold would give and how often it widens.

The tuning set of that rule: ``real_vectors.py``'s cache, the whole file and a 40 % scope
(faiss's id selector, as a filter), its own queries (real questions, random directions,
near-copies of stored chunks); ``bench_filtered_recall.py`` is the check it was not chosen on.

    python benchmarks/bench_unsure_cut.py [--queries 100]
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

import faiss
import numpy as np
from bench_ivf_rescoring import CACHE, EXACT, K, _exact_top, _unit, build

THRESHOLDS = (4.0, 4.5, 5.0)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--queries", type=int, default=100)
    ap.add_argument("--cache", type=Path, default=CACHE)
    args = ap.parse_args()
    faiss.omp_set_num_threads(1)
    vectors = np.load(args.cache / "vectors.npy")
    questions = np.load(args.cache / "questions.npy").astype(np.float32)
    n, dims = vectors.shape
    rng = np.random.default_rng(0)
    index, lists = build(vectors, rng)
    sq = faiss.ScalarQuantizer(dims, faiss.ScalarQuantizer.QT_8bit)
    sq.train(vectors[np.random.default_rng(1).choice(n, 20_000, replace=False)])
    codes = sq.compute_codes(vectors)
    q = args.queries
    picks = rng.choice(n, q, replace=False)
    noise = _unit(rng.standard_normal((q, dims)))
    kinds = {
        "question": questions[rng.choice(len(questions), q, replace=False)],
        "random": _unit(rng.standard_normal((q, dims))),
        "near-copy": _unit(vectors[picks] + 0.15 * noise),
    }
    scope = np.sort(rng.choice(n, int(n * 0.4), replace=False)).astype(np.int64)

    def cut(query: np.ndarray, chosen: Any, wanted: int) -> tuple[np.ndarray, np.ndarray, set]:
        params = faiss.SearchParametersIVF()
        params.nprobe = lists
        if chosen is not None:
            params.sel = chosen
        rough, ids = index.search(query[None, :], wanted, params=params)
        held = ids[0] >= 0
        ids, rough = ids[0][held], rough[0][held]
        estimates = sq.decode(codes[ids]) @ query
        best = ids[np.argsort(-estimates, kind="stable")[:EXACT]]
        return rough, estimates, set(_exact_top(vectors, best, query, K).tolist())

    print("| scope | query | recall 3,000 | recall 6,000 | gap p10 / p50 / p90 |", end="")
    print("".join(f" at {t}: recall (widened) |" for t in THRESHOLDS))
    print("|---|---|---:|---:|---:|" + "---:|" * len(THRESHOLDS))
    for name, (allowed, chosen) in {
        "all": (np.arange(n), None),
        "40% of rows": (scope, faiss.IDSelectorBatch(scope)),
    }.items():
        for kind, queries in kinds.items():
            rows = []
            for query in queries:
                truth = set(_exact_top(vectors, allowed, query, K).tolist())
                rough, estimates, found = cut(query, chosen, 3000)
                _, _, wider = cut(query, chosen, 6000)
                error = float(np.std(rough - estimates))
                kth = float(np.sort(estimates)[-K])
                gap = (kth - float(rough[-1])) / error
                rows.append((len(found & truth) / K, len(wider & truth) / K, gap))
            r = np.array(rows)
            cells = []
            for t in THRESHOLDS:
                widen = r[:, 2] < t
                cells.append(
                    f" {np.where(widen, r[:, 1], r[:, 0]).mean():.3f} ({widen.mean():.2f}) |"
                )
            p10, p50, p90 = np.percentile(r[:, 2], [10, 50, 90])
            print(
                f"| {name} | {kind} | {r[:, 0].mean():.3f} | {r[:, 1].mean():.3f} | "
                f"{p10:.1f} / {p50:.1f} / {p90:.1f} |" + "".join(cells),
                flush=True,
            )


if __name__ == "__main__":
    main()
