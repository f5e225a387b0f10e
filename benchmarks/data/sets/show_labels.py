"""Print every question of a set labelled by reading with the text of its labelled units.

Used to read the labels once through by eye; it also fails loudly when a qrel names a unit
or query that does not exist, or a query has no score-2 unit.

    python benchmarks/data/sets/show_labels.py py_prose_qa
"""

from __future__ import annotations

import csv
import json
import sys
from collections import defaultdict
from pathlib import Path

HERE = Path(__file__).parent


def load_jsonl(path: Path) -> dict[str, dict[str, str]]:
    """Records of a JSON-lines file keyed by their _id."""
    with path.open(encoding="utf-8") as f:
        return {r["_id"]: r for r in map(json.loads, f)}


def main(name: str) -> int:
    """Print the labels of set ``name``; return 1 if any label is broken."""
    folder = HERE / name
    corpus = load_jsonl(folder / "corpus.jsonl")
    queries = load_jsonl(folder / "queries.jsonl")
    rels: dict[str, list[tuple[int, str]]] = defaultdict(list)
    with (folder / "qrels" / "test.tsv").open(encoding="utf-8") as f:
        for row in csv.DictReader(f, delimiter="\t"):
            rels[row["query-id"]].append((int(row["score"]), row["corpus-id"]))
    errors = 0
    for qid, query in queries.items():
        print(f"{qid} [{query['split']}] {query['text']}")
        labels = sorted(rels.get(qid, []), reverse=True)
        if not any(score == 2 for score, _ in labels):
            print("  !! no score-2 unit")
            errors += 1
        for score, cid in labels:
            unit = corpus.get(cid)
            if unit is None:
                print(f"  !! unknown unit {cid}")
                errors += 1
                continue
            print(f"  {score} {cid} ({unit['title']})\n      {unit['text']}")
    for qid in set(rels) - set(queries):
        print(f"!! qrels name unknown query {qid}")
        errors += 1
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
