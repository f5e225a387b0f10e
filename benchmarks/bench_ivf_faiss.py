"""faiss's IVF on the scale set: build time, recall@10 and latency.

The settings bench of the vector file (``sqlite_vector_upkeep``: lists, k-means sample, lists
read, codes) without a database: vectors in memory, the index built as the product builds
it (``--kind fastscan``, 4-bit codes) or with the int8 vectors it used before (``--kind
sq8``), saved and searched memory-mapped, one query at a time on one thread, 40 candidates
re-scored exactly in float32 as ``sqlite_vectors`` does. ``bench_scale.py`` measures the
product's own file:

    python benchmarks/bench_ivf_faiss.py 1000000 --lists 8192 --probes 256 362 --kind sq8
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

import faiss  # type: ignore[import-not-found]
import numpy as np
from _vectors import exact_top, recall, scale_vectors

from holodeck.vectorstore.sqlite.vector_upkeep import new_index

CANDIDATES = 40
#: Training vectors per list (k-means' sample).
TRAIN_PER_LIST = 50


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("size", type=int)
    parser.add_argument("--lists", type=int, default=4096)
    parser.add_argument("--probes", type=int, nargs="+", default=[64, 128, 256])
    parser.add_argument("--per-list", type=int, default=TRAIN_PER_LIST)
    parser.add_argument("--niter", type=int, default=10, help="k-means rounds (faiss: 10)")
    parser.add_argument("--kind", choices=["fastscan", "sq8"], default="fastscan")
    args = parser.parse_args()
    vectors = scale_vectors(args.size)
    queries = scale_vectors(200, seed=99, topics_of=args.size)
    truth = exact_top(vectors, queries)
    started = time.perf_counter()
    if args.kind == "fastscan":
        index = new_index(vectors.shape[1], args.lists)
    else:
        index = faiss.IndexIVFScalarQuantizer(
            faiss.IndexFlatIP(vectors.shape[1]),
            vectors.shape[1],
            args.lists,
            faiss.ScalarQuantizer.QT_8bit,
            faiss.METRIC_INNER_PRODUCT,
        )
    index.cp.niter = args.niter
    sample = np.random.default_rng(0).choice(
        args.size, min(args.size, args.lists * args.per_list), replace=False
    )
    index.train(vectors[sample])
    trained = time.perf_counter() - started
    for start in range(0, args.size, 100_000):
        stop = min(args.size, start + 100_000)
        index.add_with_ids(vectors[start:stop], np.arange(start, stop, dtype=np.int64))
    built = time.perf_counter() - started
    with tempfile.TemporaryDirectory() as folder:
        path = str(Path(folder) / "ivf.index")
        faiss.write_index(index, path)
        size_mb = Path(path).stat().st_size / 2**20
        del index
        mapped = faiss.read_index(path, faiss.IO_FLAG_MMAP)
        faiss.omp_set_num_threads(1)
        print(f"{args.size:,} vectors, {args.lists} lists, {args.kind}: build {built:.1f} s "
              f"(k-means {trained:.1f} s), file {size_mb:.0f} MB")  # fmt: skip
        for probes in args.probes:
            mapped.nprobe = probes
            found, ms = [], []
            for query in queries:
                t = time.perf_counter()
                _, ids = mapped.search(query[None, :], CANDIDATES)
                candidates = ids[0][ids[0] >= 0]
                exact = vectors[candidates] @ query
                found.append(candidates[np.argsort(-exact)[:10]].tolist())
                ms.append((time.perf_counter() - t) * 1000)
            print(
                f"  nprobe {probes}: recall@10 {recall(found, truth):.4f}, "
                f"p50 {np.median(ms):.2f} ms, p95 {np.percentile(ms, 95):.2f} ms"
            )


if __name__ == "__main__":
    main()
