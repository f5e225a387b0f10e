"""Print every query of the identifiers_qa set with the text of its labelled units.

This is the read-through check of the labels: a human reads each question next to the units
marked as answering it (score 2 first), without any retrieval model involved.
"""

from __future__ import annotations

import argparse
import csv
import json
from collections import defaultdict
from pathlib import Path

HERE = Path(__file__).parent


def load_jsonl(path: Path) -> dict[str, dict[str, str]]:
    """Read a JSONL file into a dict keyed by each record's _id."""
    with path.open(encoding="utf-8") as handle:
        return {rec["_id"]: rec for rec in map(json.loads, handle)}


def main() -> None:
    """Print the queries (optionally only some ids) with their labelled units."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("ids", nargs="*", help="query ids to show (default: all)")
    parser.add_argument("--chars", type=int, default=600, help="unit text shown per unit")
    args = parser.parse_args()
    corpus = load_jsonl(HERE / "corpus.jsonl")
    queries = load_jsonl(HERE / "queries.jsonl")
    labels: dict[str, list[tuple[int, str]]] = defaultdict(list)
    with (HERE / "qrels" / "test.tsv").open(encoding="utf-8") as handle:
        for row in csv.DictReader(handle, delimiter="\t"):
            labels[row["query-id"]].append((int(row["score"]), row["corpus-id"]))
    for qid, query in queries.items():
        if args.ids and qid not in args.ids:
            continue
        print(f"{qid} [{query['split']}] {query['text']}")
        for score, cid in sorted(labels[qid], reverse=True):
            unit = corpus[cid]
            text = unit["text"].replace("\n", " / ")[: args.chars]
            print(f"  {score} {cid} | {unit['title']}\n      {text}")
        print()


if __name__ == "__main__":
    main()
