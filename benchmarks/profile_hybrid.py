"""CPU by stage of hybrid questions on a cached index (``build_hybrid_index.py``): each
question asked once to warm up, then once under cProfile; prints, per stage, the CPU ms per
question (cumulative, so a stage's row includes what it calls) and the rows read from SQLite
as records per question. The semantic side runs in the calling thread here (cProfile sees
one thread), so the whole question's CPU is the sum of both sides'.

    python benchmarks/profile_hybrid.py --index benchmarks/data/hybrid/100000
"""

from __future__ import annotations

import argparse
import cProfile
import json
import pstats
from concurrent.futures import Future
from pathlib import Path

import numpy as np

from holodeck.knowledge_base import settle
from holodeck.retrieval import hybrid
from holodeck.retrieval.hybrid import retrieve
from holodeck.vectorstore.local import LocalIndexAdapter
from holodeck.vectorstore.records import ChunkFilters
from holodeck.vectorstore.sqlite import query as sqlite_query
from holodeck.vectorstore.store import VectorStore

#: (stage, module file's tail, function name): the functions whose cumulative time is a stage.
STAGES = [
    ("retrieve (whole question)", "retrieval/hybrid.py", "retrieve"),
    ("semantic side (vectors.search)", "sqlite/vectors.py", "search"),
    ("keyword side (fulltext.keyword_search)", "sqlite/fulltext.py", "keyword_search"),
    ("keyword scale", "sqlite/fulltext.py", "keyword_scale"),
    ("identifier holders", "sqlite/fulltext.py", "identifier_holders"),
    ("record rows read (records_by_id)", "sqlite/query.py", "records_by_id"),
    ("texts read later (contents_of)", "sqlite/query.py", "contents_of"),
    ("term pairs (paired)", "retrieval/term_pairs.py", "paired"),
    ("fusion (fuse, both passes)", "retrieval/fusion.py", "fuse"),
    ("feedback words (expansion_words)", "retrieval/expansion.py", "expansion_words"),
    ("feedback rescoring (rescored)", "retrieval/expansion.py", "rescored"),
    ("passages (merge)", "retrieval/passages.py", "merge"),
    ("passages (spread)", "retrieval/passages.py", "spread"),
]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--index", type=Path, required=True)
    args = ap.parse_args()
    vectors = np.load(args.index / "queries.npy")
    questions = json.loads((args.index / "questions.json").read_text())
    store = VectorStore(LocalIndexAdapter(args.index / "holodeck"))
    scope = ChunkFilters(library_ids=["kb"])
    settle()
    hybrid._BOTH_SIDES = _Inline()  # type: ignore[assignment]
    for i, question in enumerate(questions):  # warm: files opened, pages cached
        retrieve(store, "bench", question, vectors[i], 5, scope, "hybrid")
    rows, texts = [0], [0]
    make = sqlite_query.record

    def counted(row, blob):  # type: ignore[no-untyped-def]
        rows[0] += 1
        texts[0] += bool(row[7])
        return make(row, blob)

    sqlite_query.record = counted  # type: ignore[assignment]
    reads = getattr(sqlite_query, "contents_of", None)
    if reads is not None:

        def texts_counted(db, ids):  # type: ignore[no-untyped-def]
            texts[0] += len(ids)  # records
            return reads(db, ids)

        for module in _modules():
            if getattr(module, "contents_of", None) is reads:
                module.contents_of = texts_counted
    profile = cProfile.Profile()
    profile.enable()
    for i, question in enumerate(questions):
        retrieve(store, "bench", question, vectors[i], 5, scope, "hybrid")
    profile.disable()
    n = len(questions)
    stats = pstats.Stats(profile).stats  # type: ignore[attr-defined]
    print("| stage | CPU ms / question (cProfile) |")
    print("|---|---:|")
    for stage, tail, name in STAGES:
        spent = sum(
            v[3] for (file, _, func), v in stats.items() if file.endswith(tail) and func == name
        )
        print(f"| {stage} | {spent * 1000 / n:.2f} |")
    print(f"| record rows read from SQLite per question | {rows[0] / n:.0f} |")
    print(f"| of them (or later) with their text | {texts[0] / n:.0f} |")


class _Inline:
    """An executor that runs what it is given at once, in the calling thread."""

    def submit(self, fn, *args):  # type: ignore[no-untyped-def]
        done: Future = Future()  # type: ignore[type-arg]
        done.set_result(fn(*args))
        return done


def _modules() -> list:  # type: ignore[type-arg]
    import sys

    return [m for name, m in sys.modules.items() if name.startswith("holodeck.") and m]


if __name__ == "__main__":
    main()
