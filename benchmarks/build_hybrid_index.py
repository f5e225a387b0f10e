"""Builds (once) the holodeck side of ``bench_hybrid_peers.py``'s size folder, cached under
``benchmarks/data/hybrid/SIZE`` with a manifest (size, seeds, commit, build seconds), so
``bench_hybrid_cpu.py --index`` runs on it without LanceDB; a folder whose manifest matches
is reused.

    python benchmarks/build_hybrid_index.py --size 100000
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
from pathlib import Path

import numpy as np
from _vectors import scale_vectors
from bench_scale import QUERIES, holodeck_build, questions, texts_for

HERE = Path(__file__).resolve().parent


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--size", type=int, default=100_000)
    ap.add_argument("--data", type=Path, default=HERE / "data" / "hybrid")
    args = ap.parse_args()
    work = args.data / str(args.size)
    manifest = work / "manifest.json"
    wanted = {"size": args.size, "vector_seed": 0, "query_seed": 99}
    if manifest.exists() and {k: v for k, v in json.loads(manifest.read_text()).items()
                              if k in wanted} == wanted:  # fmt: skip
        print(f"reusing {work}: {manifest.read_text()}")
        return
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    vectors = scale_vectors(args.size)
    np.save(work / "queries.npy", scale_vectors(QUERIES, seed=99, topics_of=args.size))
    (work / "questions.json").write_text(json.dumps(questions()))
    took, _ = holodeck_build(work / "holodeck", vectors, texts_for(args.size))
    commit = subprocess.run(
        ["git", "rev-parse", "HEAD"], capture_output=True, text=True, cwd=HERE
    ).stdout.strip()
    manifest.write_text(json.dumps({**wanted, "commit": commit, "build_s": round(took, 1)}))
    print(manifest.read_text())


if __name__ == "__main__":
    main()
