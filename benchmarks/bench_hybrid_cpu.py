"""Two checkouts' hybrid search on one index, taking turns: CPU time per question (all
threads of the process, which a loaded machine changes far less than wall time), wall p50 /
p95, and whether every answer is the same (chunk ids and scores to 6 places).

The index is a size folder of ``bench_hybrid_peers.py --work DIR`` (``DIR/100000``: the
holodeck index, ``queries.npy`` and ``questions.json``, bench_scale's vectors and texts); each
checkout runs in its own process (``--holodeck NAME=PATH``, its code on the same index), the
questions asked twice and the second pass counted, k = 5 in hybrid mode as ``holodeck
search`` asks.

    python benchmarks/bench_hybrid_cpu.py --index WORK/100000 \\
        --holodeck before=/path/to/old after=. [--turns 4]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

CHILD = """
import json, sys, time
sys.path.insert(0, sys.argv[1])
from pathlib import Path
import numpy as np
import holodeck
from holodeck.knowledge_base import settle
from holodeck.retrieval.hybrid import retrieve
from holodeck.vectorstore.local import LocalIndexAdapter
from holodeck.vectorstore.records import ChunkFilters
from holodeck.vectorstore.store import VectorStore
assert holodeck.__file__.startswith(sys.argv[1]), holodeck.__file__
work = Path(sys.argv[2])
vectors = np.load(work / "queries.npy")
questions = json.loads((work / "questions.json").read_text())
store = VectorStore(LocalIndexAdapter(work / "holodeck"))
scope = ChunkFilters(library_ids=["kb"])
settle()
cpu, wall, answers = [], [], []
for counted in (False, True):
    for i, question in enumerate(questions):
        c, t = time.process_time(), time.perf_counter()
        found, _ = retrieve(store, "bench", question, vectors[i], 5, scope, "hybrid")
        if counted:
            wall.append((time.perf_counter() - t) * 1000)
            cpu.append((time.process_time() - c) * 1000)
            answers.append([[p.best.record.chunk_id, round(p.score, 6)] for p in found])
json.dump({"cpu": cpu, "wall": wall, "answers": answers}, open(sys.argv[3], "w"))
"""


def _pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--index", type=Path, required=True)
    ap.add_argument("--holodeck", nargs=2, required=True, metavar="NAME=PATH")
    ap.add_argument("--turns", type=int, default=4)
    args = ap.parse_args()
    trees = [tuple(spec.split("=", 1)) for spec in args.holodeck]
    print(
        "| turn | " + " | ".join(f"{n} CPU p50 / wall p50 / p95 ms" for n, _ in trees) + " | same |"
    )
    print("|---:|" + "---:|" * (len(trees) + 1))
    with tempfile.TemporaryDirectory() as tmp:
        for turn in range(1, args.turns + 1):
            runs = {}
            order = trees if turn % 2 else trees[::-1]  # who goes first alternates
            for name, path in order:
                out = Path(tmp) / f"{name}.json"
                started = time.perf_counter()
                subprocess.run(
                    [
                        sys.executable,
                        "-c",
                        CHILD,
                        str(Path(path).resolve()),
                        str(args.index),
                        str(out),
                    ],
                    check=True,
                )
                runs[name] = json.loads(out.read_text())
                runs[name]["took"] = time.perf_counter() - started
            cells = [
                f"{_pct(runs[n]['cpu'], 0.5):.1f} / {_pct(runs[n]['wall'], 0.5):.1f} / "
                f"{_pct(runs[n]['wall'], 0.95):.1f}"
                for n, _ in trees
            ]
            (a, _), (b, _) = trees
            same = sum(x == y for x, y in zip(runs[a]["answers"], runs[b]["answers"], strict=True))
            print(f"| {turn} | " + " | ".join(cells) + f" | {same} of {len(runs[a]['answers'])} |")


if __name__ == "__main__":
    main()
