"""Write queries.jsonl and qrels/test.tsv of the py_prose_qa set from labels.txt.

labels.txt holds one question a line as ``answer-id | other-ids-or-dash | question``, in the
order they were written while reading the pages; the answer unit gets score 2, the others 1.
Queries are numbered in that order and split by number (odd tune, even check), so the split
is fixed before anyone ranks on the set.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

HERE = Path(__file__).parent


def parse(line: str) -> tuple[str, list[str], str]:
    """Answer id, other relevant ids and question text of one labels.txt line."""
    answer, others, question = (part.strip() for part in line.split("|", 2))
    extra = [] if others == "-" else [x.strip() for x in others.split(",") if x.strip()]
    return answer, extra, question


def main() -> int:
    """Write the two files; return 1 if a label names a unit the corpus lacks."""
    with (HERE / "corpus.jsonl").open(encoding="utf-8") as f:
        known = {json.loads(line)["_id"] for line in f}
    rows = [parse(x) for x in (HERE / "labels.txt").read_text(encoding="utf-8").splitlines() if x]
    errors = 0
    queries: list[dict[str, str]] = []
    qrels: list[tuple[str, str, int]] = []
    for n, (answer, extra, question) in enumerate(rows, start=1):
        qid = f"q{n:03d}"
        queries.append({"_id": qid, "text": question, "split": "tune" if n % 2 else "check"})
        for cid, score in [(answer, 2), *((x, 1) for x in extra)]:
            if cid not in known:
                print(f"{qid}: unknown unit {cid}", file=sys.stderr)
                errors += 1
            if cid == answer and score == 1:
                print(f"{qid}: answer unit repeated as score 1", file=sys.stderr)
                errors += 1
            qrels.append((qid, cid, score))
    with (HERE / "queries.jsonl").open("w", encoding="utf-8") as f:
        for q in queries:
            f.write(json.dumps(q, ensure_ascii=False) + "\n")
    (HERE / "qrels").mkdir(exist_ok=True)
    with (HERE / "qrels" / "test.tsv").open("w", encoding="utf-8") as f:
        f.write("query-id\tcorpus-id\tscore\n")
        for qid, cid, score in qrels:
            f.write(f"{qid}\t{cid}\t{score}\n")
    print(f"{len(queries)} queries, {len(qrels)} qrels")
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
