"""usearch's HNSW alone on the scale set: build time and recall@10 by links per node.

Sorts out what holds recall as a library grows (the graph's links, or the search depth)
without a whole ``bench_scale.py`` run: int8 vectors as holodeck's file keeps them, 40
candidates re-scored exactly in float32, as ``sqlite_vectors`` does.

    python benchmarks/bench_hnsw_links.py 300000 --links 16 32
"""

from __future__ import annotations

import argparse
import time

import numpy as np
from _vectors import exact_top, recall, scale_vectors
from usearch.index import Index

CANDIDATES = 40


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("size", type=int)
    parser.add_argument("--links", type=int, nargs="+", default=[16, 32])
    parser.add_argument("--expansion-add", type=int, default=128)
    parser.add_argument("--depths", type=int, nargs="+", default=[128, 512])
    args = parser.parse_args()
    vectors = scale_vectors(args.size)
    queries = scale_vectors(200, seed=99, topics_of=args.size)
    truth = exact_top(vectors, queries)
    keys = np.arange(args.size, dtype=np.uint64)
    for links in args.links:
        index = Index(
            ndim=vectors.shape[1], metric="cos", dtype="i8",
            connectivity=links, expansion_add=args.expansion_add,
        )  # fmt: skip
        started = time.perf_counter()
        for start in range(0, args.size, 8192):
            index.add(keys[start : start + 8192], vectors[start : start + 8192], threads=0)
        build = time.perf_counter() - started
        for depth in args.depths:
            index.expansion_search = depth
            found, started = [], time.perf_counter()
            for query in queries:
                ids = np.asarray(index.search(query, CANDIDATES, threads=1).keys, dtype=np.int64)
                found.append(ids[np.argsort(-(vectors[ids] @ query))[:10]].tolist())
            ms = (time.perf_counter() - started) / len(queries) * 1000
            print(
                f"{args.size:,} vectors, {links} links, insertion depth {args.expansion_add}: "
                f"build {build:.0f} s; search depth {depth}: recall@10 "
                f"{recall(found, truth):.4f}, {ms:.1f} ms a query",
                flush=True,
            )


if __name__ == "__main__":
    main()
