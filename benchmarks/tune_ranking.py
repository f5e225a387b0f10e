"""Every ranking variant on every labelled set, tune and check halves apart, in one table.

Each set is ingested once (the project bench_retrieval.py keeps under benchmarks/results/);
the store's answers and the query embeddings are remembered per query, so a variant of the
fusion (module constants set for the run: ``--variant NAME:hybrid.PAIRS=0,fusion.X=0.3``)
costs only the fusion. Each set is split into the queries a rule may be chosen on (``tune``)
and the ones only scored (``check``); the held-out sets are ``check`` whole. nDCG@10 over
documents (a document's passages count once, at their best rank), top_k 100 as
bench_retrieval.py asks; the real folder by place at top_k 10, with file@1 and how many
questions get five results from one file.

    python benchmarks/tune_ranking.py --set cranfield --set py_prose_qa \
        --variant main: --variant nopairs:hybrid.PAIRS=0 [--modes keyword semantic]
"""

from __future__ import annotations

import argparse
import importlib
import json
import sys
import zlib
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
from _common import reload_tool
from bench_retrieval import documents, load, metrics, place_metrics, project_for, set_dir

from holodeck.tools.vectorstore_tool import VectorStoreTool

HERE = Path(__file__).resolve().parent
#: Sets no ranking rule may be chosen on: every query is scored, none tuned on.
HELD_OUT = frozenset({"debian_prose_qa", "identifiers_qa"})
TOP = 100


class Remembered:
    """A store whose search answers are remembered per argument (the index does not change
    during a run), so each variant pays only for the fusion."""

    def __init__(self, store: Any) -> None:
        self._store = store
        self._memo: dict[tuple, Any] = {}

    def __getattr__(self, name: str) -> Any:
        method = getattr(self._store, name)
        if name not in {
            "search",
            "keyword_search",
            "keyword_scale",
            "keyword_idfs",
            "identifier_holders",
        }:
            return method

        def remembered(*args: Any) -> Any:
            key = (name, *(_key(a) for a in args))
            if key not in self._memo:
                self._memo[key] = method(*args)
            value = self._memo[key]
            return (
                list(value)
                if isinstance(value, list)
                else dict(value)
                if isinstance(value, dict)
                else value
            )

        return remembered


def _key(value: Any) -> Any:
    if isinstance(value, np.ndarray):
        return value.tobytes()
    if isinstance(value, (list, tuple, set, frozenset)):
        return tuple(sorted(map(str, value)))
    return repr(value)


class RememberedEmbedder:
    """The tool's embedder with each query's vector kept."""

    def __init__(self, embedder: Any) -> None:
        self._embedder = embedder
        self._memo: dict[str, np.ndarray] = {}

    def __getattr__(self, name: str) -> Any:
        return getattr(self._embedder, name)

    def embed(self, texts: list[str]) -> list[np.ndarray]:
        missing = [t for t in texts if t not in self._memo]
        if missing:
            for text, vector in zip(missing, self._embedder.embed(missing), strict=True):
                self._memo[text] = vector
        return [self._memo[t] for t in texts]


def remembering(tool: VectorStoreTool) -> VectorStoreTool:
    tool._store = Remembered(tool.store)  # type: ignore[assignment]
    tool._embedder = RememberedEmbedder(tool.embedder)  # type: ignore[assignment]
    return tool


def split_of(set_name: str, qid: str, row_split: str | None) -> str:
    """``tune`` or ``check``: the set's own split where it has one, else by a hash of the id."""
    if set_name in HELD_OUT:
        return "check"
    if row_split in ("tune", "dev"):
        return "tune"
    if row_split == "check":
        return "check"
    return "tune" if zlib.crc32(qid.encode()) % 2 == 0 else "check"


Scorer = Callable[[str], dict[str, float]]


def labelled_set(name: str) -> tuple[VectorStoreTool, list[tuple[str, str, Scorer]]]:
    """The set's tool and its queries: (split, query, scorer of a mode's ranking)."""
    tool = remembering(project_for(name, None))
    _, queries, qrels = load(set_dir(name))
    splits: dict[str, str | None] = {}
    for line in (set_dir(name) / "queries.jsonl").read_text().splitlines():
        row = json.loads(line)
        splits[row["_id"]] = row.get("split")
    rows = []
    for qid, gains in qrels.items():

        def scorer(mode: str, q: str = queries[qid], g: dict = gains) -> dict[str, float]:
            results, _ = tool.find(q, top_k=TOP, mode=mode)  # type: ignore[arg-type]
            ranked = documents([r.source_path for r in results])
            out = metrics(ranked, g)
            files = [r.source_path for r in results[:5]]
            out["one file@5"] = float(len(files) == 5 and len(set(files)) == 1)
            out["hit@10"] = float(out["MRR@10"] > 0)  # an answer anywhere in the top 10
            return out

        rows.append((split_of(name, qid, splits.get(qid)), queries[qid], scorer))
    return tool, rows


def realdocs_set() -> tuple[VectorStoreTool, list[tuple[str, str, Scorer]]]:
    """The real folder's questions, scored by place at top_k 10 (as bench_retrieval.py)."""
    import yaml
    from bench_realdocs import FOLDER, QUESTIONS
    from bench_realdocs import project as realdocs_project

    questions = yaml.safe_load(QUESTIONS.read_text())
    tool = reload_tool(realdocs_project(FOLDER, HERE / "results" / "realdocs"))
    tool.initialize_sync()
    remembering(tool)
    rows = []
    for q in questions:

        def scorer(mode: str, q: dict = q) -> dict[str, float]:
            results, _ = tool.find(q["question"], top_k=10, mode=mode)  # type: ignore[arg-type]
            out = place_metrics(q, results)
            files = {a["file"] for a in q["answers"]}
            top5 = [r.doc_id for r in results[:5]]
            return {
                **out,
                "file@1": float(bool(results) and results[0].doc_id in files),
                "file@5": float(any(d in files for d in top5)),
                "one file@5": float(len(top5) == 5 and len(set(top5)) == 1),
            }

        rows.append((split_of("realdocs", q["id"], q.get("split")), q["question"], scorer))
    return tool, rows


def apply(settings: dict[str, str]) -> dict[str, Any]:
    """Set ``module.NAME`` constants (``holodeck.retrieval.`` is implied); returns the old
    values to restore."""
    old = {}
    for dotted, raw in settings.items():
        module_name, attr = dotted.rsplit(".", 1)
        if not module_name.startswith("holodeck."):
            module_name = "holodeck.retrieval." + module_name
        module = importlib.import_module(module_name)
        current = getattr(module, attr)
        old[dotted] = current
        value: Any = raw
        if isinstance(current, bool):
            value = raw not in ("0", "false", "False", "")
        elif isinstance(current, int):
            value = int(raw)
        elif isinstance(current, float):
            value = float(raw)
        setattr(module, attr, value)
    return old


def restore(old: dict[str, Any]) -> None:
    """Put back the values ``apply`` replaced."""
    for dotted, value in old.items():
        module_name, attr = dotted.rsplit(".", 1)
        if not module_name.startswith("holodeck."):
            module_name = "holodeck.retrieval." + module_name
        setattr(importlib.import_module(module_name), attr, value)


def parse_variant(text: str) -> tuple[str, dict[str, str]]:
    name, _, body = text.partition(":")
    settings = dict(item.split("=", 1) for item in body.split(",") if item)
    return name, settings


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--set", action="append", required=True, help="a set name, or realdocs")
    parser.add_argument("--variant", action="append", default=[], help="NAME:mod.ATTR=V,...")
    parser.add_argument("--modes", nargs="*", default=["keyword", "semantic"])
    parser.add_argument("--metric", default="nDCG@10")
    parser.add_argument("--json", type=Path, help="write every number here")
    parser.add_argument("--per-query", type=Path, help="write each query's metric here")
    args = parser.parse_args()
    variants = [parse_variant(v) for v in args.variant] or [("hybrid", {})]
    table: dict[tuple[str, str], dict[str, dict[str, float]]] = {}
    each: dict[str, dict[str, dict[str, float]]] = defaultdict(lambda: defaultdict(dict))
    for set_name in args.set:
        tool, rows = realdocs_set() if set_name == "realdocs" else labelled_set(set_name)
        runs: list[tuple[str, str, dict[str, str]]] = [(m, m, {}) for m in args.modes]
        runs += [(name, "hybrid", settings) for name, settings in variants]
        for label, mode, settings in runs:
            old = apply(settings)
            try:
                sums: dict[str, dict[str, float]] = defaultdict(lambda: defaultdict(float))
                counts: dict[str, int] = defaultdict(int)
                for split, query, scorer in rows:
                    scores = scorer(mode)
                    each[set_name][f"{split}\t{query}"][label] = scores[args.metric]
                    for key, value in scores.items():
                        sums[split][key] += value
                        sums["all"][key] += value
                    counts[split] += 1
                    counts["all"] += 1
            finally:
                apply(
                    {k: str(v) if not isinstance(v, bool) else str(int(v)) for k, v in old.items()}
                )
            for split, total in sums.items():
                cell = {k: v / counts[split] for k, v in total.items()}
                cell["n"] = counts[split]
                table.setdefault((set_name, split), {})[label] = cell
            print(
                f"{set_name:24} {label:18} "
                + "  ".join(
                    f"{s}={sums[s][args.metric] / counts[s]:.4f}" for s in sorted(sums) if counts[s]
                ),
                file=sys.stderr,
                flush=True,
            )
        tool.close()
    labels = [m for m in args.modes] + [name for name, _ in variants]
    print("\n| set | split | n | " + " | ".join(labels) + " |")
    print("|---|---|---:|" + "---:|" * len(labels))
    for (set_name, split), cells in table.items():
        n = next(iter(cells.values()))["n"]
        print(
            f"| {set_name} | {split} | {n:.0f} | "
            + " | ".join(f"{cells[label][args.metric]:.4f}" for label in labels if label in cells)
            + " |"
        )
    if args.per_query:
        args.per_query.write_text(json.dumps(each, indent=1, sort_keys=True))
    if args.json:
        args.json.write_text(
            json.dumps({f"{s}/{p}": c for (s, p), c in table.items()}, indent=1, sort_keys=True)
        )


if __name__ == "__main__":
    main()
