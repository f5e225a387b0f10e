"""Search quality on the labelled sets: keyword, semantic, naive RRF and the default hybrid.

Each document becomes a .txt file of a project, ingested by `VectorStoreTool.initialize_sync`
(the code of `holodeck ingest`); queries go through `VectorStoreTool.find` (the code of
`holodeck search`) with top_k 100 in each mode. Naive RRF (k=60) fuses the same two candidate
lists the hybrid mode fuses. Over documents: several passages of one document count once, at
their best rank. The ingested project is kept under benchmarks/results/ and re-used.

    python benchmarks/bench_retrieval.py [--set cranfield] [--set vaswani_npl] [--backend redis]
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
import time
from collections import defaultdict
from pathlib import Path

import numpy as np
from _common import make_project, percentile, reload_tool

from holodeck.retrieval.hybrid import DEPTH
from holodeck.retrieval.passages import Scored, merge
from holodeck.tools.vectorstore_tool import VectorStoreTool
from holodeck.vectorstore.records import ChunkFilters

HERE = Path(__file__).resolve().parent
#: The labelled sets (``shared/eval`` beside the checkout, or ``$HOLODECK_EVAL``).
EVAL = Path(
    os.environ.get("HOLODECK_EVAL")
    or next((p / "shared" / "eval" for p in HERE.parents if (p / "shared" / "eval").is_dir()), ".")
)
TOP = 100
#: Sets built here from Debian's packages (``build_faq_sets.py``) beside the shared ones ...
SETS = HERE / "results" / "sets"
#: ... and the sets labelled by reading, kept in the repository.
KEPT = HERE / "data" / "sets"


def set_dir(name: str) -> Path:
    """Where a labelled set is: ``shared/eval/NAME``, ``benchmarks/data/sets/NAME`` or
    ``benchmarks/results/sets/NAME``."""
    for folder in (EVAL, KEPT):
        if (folder / name).is_dir():
            return folder / name
    return SETS / name


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


def ndcg(ranked: list[str], gains: dict[str, int], k: int = 10) -> float:
    dcg = sum(gains.get(d, 0) / math.log2(i + 2) for i, d in enumerate(ranked[:k]))
    ideal = sorted(gains.values(), reverse=True)[:k]
    idcg = sum(g / math.log2(i + 2) for i, g in enumerate(ideal))
    return dcg / idcg if idcg else 0.0


def metrics(ranked: list[str], gains: dict[str, int]) -> dict[str, float]:
    relevant = set(gains)
    first = next((i for i, d in enumerate(ranked[:10]) if d in relevant), None)
    return {
        "nDCG@10": ndcg(ranked, gains),
        "R@10": len(set(ranked[:10]) & relevant) / len(relevant),
        "R@100": len(set(ranked[:100]) & relevant) / len(relevant),
        "MRR@10": 0.0 if first is None else 1.0 / (first + 1),
    }


def documents(sources: list[str]) -> list[str]:
    """Document ids in rank order, each once (its best rank)."""
    return list(dict.fromkeys(Path(s).stem for s in sources))


def naive_rrf(tool: VectorStoreTool, query: str, k: int = 60) -> list[str]:
    """RRF over the very candidate lists the hybrid mode gets, merged into passages alike."""
    vector = tool.embedder.embed([query])[0]
    scope = ChunkFilters(library_ids=[tool.name])
    tenant = tool.project.tenant_id
    dense = tool.store.search(tenant, vector, DEPTH, scope)
    keyword = tool.store.keyword_search(tenant, query, DEPTH, scope)
    fused: dict[str, float] = defaultdict(float)
    records = {}
    for hits in (dense, keyword):
        for rank, hit in enumerate(hits):
            fused[hit.record.chunk_id] += 1.0 / (k + rank + 1)
            records[hit.record.chunk_id] = hit.record
    top = max(fused.values(), default=1.0)
    ranked = sorted(fused, key=lambda c: (-fused[c], c))
    scored = [Scored(records[c], fused[c] / top, 0.0) for c in ranked]
    return documents([p.best.record.source_path for p in merge(scored, TOP)])


def evaluate(tool: VectorStoreTool, queries: dict[str, str], qrels: dict) -> dict[str, dict]:
    rows: dict[str, dict] = {}
    runs = {
        "keyword (BM25)": lambda q: tool.find(q, top_k=TOP, mode="keyword"),
        "semantic (model alone)": lambda q: tool.find(q, top_k=TOP, mode="semantic"),
        "naive RRF k=60": None,
        "hybrid (default)": lambda q: tool.find(q, top_k=TOP, mode="hybrid"),
    }
    for name, run in runs.items():
        totals: dict[str, float] = defaultdict(float)
        latencies = []
        for qid, gains in qrels.items():
            started = time.perf_counter()
            if run is None:
                ranked = naive_rrf(tool, queries[qid])
            else:
                results, _ = run(queries[qid])
                ranked = documents([r.source_path for r in results])
            latencies.append((time.perf_counter() - started) * 1000)
            for key, value in metrics(ranked, gains).items():
                totals[key] += value
        row = {key: round(value / len(qrels), 3) for key, value in totals.items()}
        row["p50 ms"] = round(percentile(latencies, 50), 1)
        rows[name] = row
    return rows


def realdocs(
    modes: tuple[str, ...] = ("keyword", "semantic", "hybrid"), root: Path | None = None
) -> dict[str, dict]:
    """The real-folder question set (bench_realdocs.py's folder and questions.yaml) scored by
    place, not file: a result counts when it is the first to point at an answer's lines,
    pages, slides or sheet (an answer given as a heading, in a format without lines, at its
    file: results carry no heading path); nDCG@10, R@10 and MRR@10 over the tool's top 10."""
    import yaml
    from bench_realdocs import FOLDER, QUESTIONS
    from bench_realdocs import project as realdocs_project

    questions = yaml.safe_load(QUESTIONS.read_text())
    tool = reload_tool(realdocs_project(FOLDER, root or HERE / "results" / "realdocs"))
    tool.initialize_sync()
    rows: dict[str, dict] = {}
    for mode in modes:
        totals: dict[str, float] = defaultdict(float)
        for q in questions:
            results, _ = tool.find(q["question"], top_k=10, mode=mode)  # type: ignore[arg-type]
            for key, value in place_metrics(q, results).items():
                totals[key] += value
        rows[mode] = {key: round(value / len(questions), 3) for key, value in totals.items()}
    tool.close()
    return rows


def place_metrics(question: dict, results: list) -> dict[str, float]:
    """nDCG@10, R@10 and MRR@10 of a real-folder question's top 10 by place: a result counts
    when it is the first to point at one of the answers' lines, pages, slides or sheet."""
    from bench_realdocs import location_hit

    answers = question["answers"]
    found: set[int] = set()
    gains = []
    for r in results[:10]:
        hits = {
            i
            for i, a in enumerate(answers)
            if i not in found
            and r.doc_id == a["file"]
            and ("section" in a or location_hit(a, vars(r)))
        }
        gains.append(1 if hits else 0)
        found |= hits
    ideal = sum(1 / math.log2(i + 2) for i in range(min(len(answers), 10)))
    first = next((i for i, g in enumerate(gains) if g), None)
    return {
        "nDCG@10": sum(g / math.log2(i + 2) for i, g in enumerate(gains)) / ideal,
        "R@10": len(found) / len(answers),
        "MRR@10": 0.0 if first is None else 1.0 / (first + 1),
    }


def project_for(name: str, redis_url: str | None) -> VectorStoreTool:
    """The set's project under benchmarks/results/ (ingested once, then only re-checked)."""
    corpus, _, _ = load(set_dir(name))
    root = HERE / "results" / (name + ("-redis" if redis_url else ""))
    extra = ""
    if redis_url:
        extra = (
            f"    database:\n      provider: redis\n      connection_string: {redis_url}\n"
            f"      index_name: bench_{name}\n"
        )
    if not (root / "docs").exists():
        make_project({f"{did}.txt": text for did, text in corpus.items()}, root=root)
    else:  # the set changed since: its files follow, and the ingest below re-embeds them
        wanted = {f"{did}.txt": text for did, text in corpus.items()}
        for path in (root / "docs").glob("*.txt"):
            if path.name not in wanted:
                path.unlink()
        for name, text in wanted.items():
            path = root / "docs" / name
            if not path.exists() or path.read_text(encoding="utf-8") != text:
                path.write_text(text, encoding="utf-8")
    agent = (root / "agent.yaml").read_text().split("    database:")[0]
    (root / "agent.yaml").write_text(agent + extra)  # this run's server
    tool = reload_tool(root)
    started = time.perf_counter()
    tool.initialize_sync()
    assert tool.backend == ("redis" if redis_url else "local"), tool.fallback_reason
    print(f"{name}: index ready in {time.perf_counter() - started:.0f} s", file=sys.stderr)
    return tool


def latency(
    sizes: list[int],
    top_ks: list[int],
    keep: Path | None = None,
    count: int = 200,
    depth: int | None = None,
) -> None:
    """Search latency per mode at each size and top_k, query embedding included, on local
    indexes of real texts (both sets' documents, repeated) with synthetic vectors. ``keep``:
    a folder where each size's index is built once and re-used (to time two versions of the
    code on the very same index); ``depth``: hybrid at this many candidates a side as well."""
    import random
    import tempfile

    from bench_local_index import PER_DOC, records, state, unit_vectors

    from holodeck.embeddings.factory import make_embedder
    from holodeck.knowledge_base import settle
    from holodeck.retrieval import fusion, hybrid
    from holodeck.retrieval.fusion import SearchMode
    from holodeck.retrieval.hybrid import retrieve
    from holodeck.vectorstore.local import LocalIndexAdapter
    from holodeck.vectorstore.store import VectorStore

    texts, questions = [], []
    for name in ("cranfield", "vaswani_npl"):
        corpus, queries, _ = load(EVAL / name)
        texts += [t for t in corpus.values() if t]
        questions += list(queries.values())
    embedder = make_embedder("all-MiniLM-L6-v2", HERE, None)
    embedder.embed(["warm up"])
    sample = random.Random(1).sample(questions, 200)[:count]
    for size in sizes:
        folder = keep / str(size) if keep else Path(tempfile.mkdtemp(prefix="holodeck-lat-"))
        built = folder.exists()
        store = VectorStore(LocalIndexAdapter(folder))
        vectors = unit_vectors(size)
        for d in range(0 if built else size // PER_DOC):
            ids = range(d * PER_DOC, (d + 1) * PER_DOC)
            chunk_texts = [f"{texts[i % len(texts)]} ({i // len(texts)})" for i in ids]
            recs = records(d, vectors[d * PER_DOC : (d + 1) * PER_DOC], chunk_texts)
            store.write_document("bench", "kb", recs[0].doc_id, recs, state(recs))
        store.flush()  # as an ingest ends: 20,000 chunks and more get the vector index file
        settle()  # as a tool's start-up ends
        scope = ChunkFilters(library_ids=["kb"])
        for top_k in top_ks:
            row: dict[str, object] = {"chunks": size, "top_k": top_k}
            # each question in each mode in turn, so that a busy moment slows them alike
            names = ("semantic", "keyword", "hybrid", "hybrid without feedback")
            names += ("hybrid without keyword feedback", "hybrid without term pairs")
            names += (f"hybrid at {depth} a side",) if depth else ()
            times: dict[str, list[float]] = {name: [] for name in names}
            for question in sample[:1] + sample:
                for name in names:
                    mode: SearchMode = "hybrid" if name.startswith("hybrid") else name  # type: ignore[assignment]
                    feedback, default_depth = fusion.FEEDBACK_WEIGHT, hybrid.DEPTH
                    if name == "hybrid without feedback":  # the same searches, one step less
                        fusion.FEEDBACK_WEIGHT = 0.0
                    hybrid.EXPAND = name != "hybrid without keyword feedback"
                    hybrid.PAIRS = name != "hybrid without term pairs"
                    if depth and name.endswith("a side"):
                        hybrid.DEPTH = depth
                    started = time.perf_counter()  # the query's embedding included, as find()
                    vector = embedder.embed([question])[0]
                    retrieve(store, "bench", question, vector, top_k, scope, mode)
                    times[name].append((time.perf_counter() - started) * 1000)
                    fusion.FEEDBACK_WEIGHT, hybrid.DEPTH = feedback, default_depth
            for name in names:
                kept = times[name][1:]  # the first question warmed up
                row[name] = {
                    "p50 ms": round(percentile(kept, 50), 1),
                    "p95 ms": round(percentile(kept, 95), 1),
                }
            print(json.dumps(row), flush=True)
        store.adapter.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--set", dest="sets", action="append", help="cranfield, vaswani_npl, faq_perl, ..."
    )
    parser.add_argument(
        "--backend", choices=["local", "redis"], default="local", help="redis: starts its own"
    )
    parser.add_argument("--latency", type=int, nargs="*", help="sizes for search latency")
    parser.add_argument(
        "--top-k", type=int, nargs="*", default=[5], help="top_k of the latency runs (5)"
    )
    parser.add_argument("--keep", type=Path, help="build the latency indexes once, here")
    parser.add_argument("--queries", type=int, default=200, help="queries per latency run")
    parser.add_argument("--depth", type=int, help="latency: also hybrid at this many a side")
    parser.add_argument(
        "--ann-min-rows",
        type=int,
        help="give a library of this many chunks the approximate index file (to measure its "
        "quality on the small labelled sets; by default they are searched exactly)",
    )
    parser.add_argument(
        "--postings-min-rows",
        type=int,
        help="give an index of this many chunks the keyword postings file (to measure its "
        "answers on the small labelled sets; by default FTS5 scores them)",
    )
    parser.add_argument(
        "--text-alone",
        action="store_true",
        help="embed and keyword-index each chunk without its heading path (records."
        "SECTION_IN_TEXT off), to compare; the real folder's project is then "
        "results/realdocs-text-alone",
    )
    args = parser.parse_args()
    if args.text_alone:
        from holodeck.vectorstore import records

        records.SECTION_IN_TEXT = False
    if args.ann_min_rows is not None:
        from holodeck.vectorstore.sqlite import vector_upkeep as sqlite_vector_upkeep

        sqlite_vector_upkeep.ANN_MIN_ROWS = args.ann_min_rows
    if args.postings_min_rows is not None:
        from holodeck.vectorstore.sqlite import postings as sqlite_postings

        sqlite_postings.POSTINGS_MIN_ROWS = args.postings_min_rows
    if args.latency is not None:
        latency(args.latency or [10_000, 100_000], args.top_k, args.keep, args.queries, args.depth)
        return
    sets = args.sets or ["cranfield", "vaswani_npl"]
    if "realdocs" in sets:
        sets.remove("realdocs")
        root = HERE / "results" / ("realdocs-text-alone" if args.text_alone else "realdocs")
        report = {"set": "realdocs", "backend": "local", "rows": realdocs(root=root)}
        print(json.dumps(report, indent=1), flush=True)
    server = None
    if args.backend == "redis":
        sys.path.insert(0, str(HERE.parent / "tests"))
        from redis_server import RedisServer

        server = RedisServer()
        server.start()
    try:
        for name in sets:
            _, queries, qrels = load(set_dir(name))
            for url in [server.url if server else None]:
                tool = project_for(name, url)
                report = {"set": name, "backend": tool.backend, "queries": len(qrels)}
                report["rows"] = evaluate(tool, queries, qrels)
                print(json.dumps(report, indent=1), flush=True)
                tool.close()
    finally:
        if server:
            server.cleanup()


if __name__ == "__main__":
    np.seterr(all="ignore")
    main()
