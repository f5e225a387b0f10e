"""Search quality on a labelled set in BEIR layout (default Cranfield: 1,400 abstracts, 225
queries, graded qrels; also ``shared/eval/vaswani_npl``).

Each document becomes a .txt file of a project; queries go through `VectorStoreTool.find`,
the code path of `holodeck search`. Reports nDCG@10 and Recall@10 over documents (several
chunks of one document count once, at their best rank). Usage:

    python benchmarks/bench_cranfield.py [SET_DIR]     # e.g. ../shared/eval/vaswani_npl
"""

from __future__ import annotations

import argparse
import json
import math
import time
from collections import defaultdict
from pathlib import Path

from _common import make_project, peak_rss_mb

HERE = Path(__file__).resolve().parent


def load(data: Path) -> tuple[dict[str, str], dict[str, str], dict[str, dict[str, int]]]:
    corpus = {}
    for line in (data / "corpus.jsonl").read_text().splitlines():
        row = json.loads(line)
        corpus[row["_id"]] = (row.get("title", "") + "\n\n" + row["text"]).strip()
    queries = {}
    for line in (data / "queries.jsonl").read_text().splitlines():
        row = json.loads(line)
        queries[row["_id"]] = row["text"]
    qrels: dict[str, dict[str, int]] = defaultdict(dict)
    for line in (data / "qrels" / "test.tsv").read_text().splitlines()[1:]:
        qid, did, score = line.split("\t")
        if int(score) > 0:
            qrels[qid][did] = int(score)
    return corpus, queries, qrels


def _default_set() -> Path:
    """``shared/eval/cranfield`` beside the checkout (or beside its parent, for worktrees)."""
    for base in (HERE.parent.parent, HERE.parent.parent.parent):
        if (base / "shared/eval/cranfield").is_dir():
            return base / "shared/eval/cranfield"
    return HERE.parent.parent / "shared/eval/cranfield"


def ndcg_at_k(ranked: list[str], gains: dict[str, int], k: int = 10) -> float:
    dcg = sum(gains.get(d, 0) / math.log2(i + 2) for i, d in enumerate(ranked[:k]))
    ideal = sorted(gains.values(), reverse=True)[:k]
    idcg = sum(g / math.log2(i + 2) for i, g in enumerate(ideal))
    return dcg / idcg if idcg else 0.0


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("data", type=Path, nargs="?", default=_default_set(), help="BEIR folder")
    args = parser.parse_args()
    corpus, queries, qrels = load(args.data)
    _, tool = make_project({f"{did}.txt": text for did, text in corpus.items()}, top_k=30)
    started = time.perf_counter()
    tool.initialize_sync()
    ingest_s = time.perf_counter() - started
    ndcgs, recalls, latencies = [], [], []
    for qid, gains in qrels.items():
        started = time.perf_counter()
        results, _ = tool.find(queries[qid])
        latencies.append(time.perf_counter() - started)
        ranked: list[str] = []
        for r in results:
            did = Path(r.source_path).stem
            if did not in ranked:
                ranked.append(did)
        ndcgs.append(ndcg_at_k(ranked, gains))
        recalls.append(len(set(ranked[:10]) & set(gains)) / len(gains))
    assert tool.summary is not None
    print(
        json.dumps(
            {
                "set": args.data.name,
                "documents": len(corpus),
                "chunks": tool.summary.chunks_total,
                "queries": len(ndcgs),
                "ingest_s": round(ingest_s, 1),
                "ndcg@10": round(sum(ndcgs) / len(ndcgs), 4),
                "recall@10": round(sum(recalls) / len(recalls), 4),
                "mean_query_ms": round(1000 * sum(latencies) / len(latencies), 1),
                "peak_rss_mb": round(peak_rss_mb(), 1),
            },
            indent=2,
        )
    )


if __name__ == "__main__":
    main()
