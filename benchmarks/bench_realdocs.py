"""Search quality on a real folder: the question set of benchmarks/realdocs/questions.yaml.

The folder (built by benchmarks/realdocs/build_folder.py: git, Node.js, Python, R, Debian and
LaTeX manuals as .txt .md .html .pdf .docx .pptx .xlsx, with their tables of contents,
sidebars and link blocks) is copied into a project under benchmarks/results/ and ingested by
`VectorStoreTool.initialize_sync` (the code of `holodeck ingest`); each question goes through
`VectorStoreTool.find` (the code of `holodeck search`) at the tool's top_k of 5. Per question:

- file@1, file@5: an answering file is the first result / among the five;
- location@5: a result of an answering file overlaps the answer's lines, pages or slides,
  names its sheet, or has the answer's heading in its section path;
- junk: the top-5 results that are a table of contents or index, a link list, or a fragment
  of under 15 words (benchmarks/_junk.py).

    python benchmarks/bench_realdocs.py [--folder DIR] [--project DIR] [--split dev|check]
        [--mode hybrid|semantic|keyword] [--show-misses] [--json]

``--folder`` defaults to $HOLODECK_REALDOCS or /work/corpus/realfolder; the project to
benchmarks/results/realdocs (copied from the folder once, then ingested incrementally: after a
change to conversion or chunking, pass --force-ingest).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import sys
import time
from pathlib import Path
from typing import Any

import yaml
from _common import reload_tool
from _junk import kind

HERE = Path(__file__).resolve().parent
QUESTIONS = HERE / "realdocs" / "questions.yaml"
FOLDER = Path(os.environ.get("HOLODECK_REALDOCS", "/work/corpus/realfolder"))
FILE_TYPES = "[.txt, .md, .pdf, .html, .docx, .pptx, .xlsx]"
_RANGE = re.compile(r"^(?P<unit>[a-z]+?)s? (?P<lo>\d+)(?:-(?P<hi>\d+))?$")
_UNITS = {"lines": "line", "pages": "page", "slides": "slide"}


def project(folder: Path, root: Path) -> Path:
    """A project whose one tool indexes a copy of ``folder`` with every file type enabled."""
    if not (root / "docs").exists():
        shutil.copytree(folder, root / "docs")
    (root / "agent.yaml").write_text(
        "name: realdocs\ntools:\n  - type: vectorstore\n    name: kb\n    source: docs\n"
        f"    top_k: 5\n    file_types: {FILE_TYPES}\n"
    )
    return root


def _norm(text: str) -> str:
    return " ".join(text.replace("¶", " ").replace("#", " ").split()).casefold()


def location_hit(answer: dict[str, Any], result: dict[str, Any]) -> bool:
    """Whether ``result`` (a search --json result) points at the answer's place."""
    location = result.get("location") or ""
    if "section" in answer:
        path = result.get("section") or ""
        return _norm(answer["section"]) in _norm(path)
    if "sheet" in answer:
        return location in (f"sheet {answer['sheet']}",) or answer["sheet"] in location
    for key, unit in _UNITS.items():
        if key in answer:
            m = _RANGE.match(location)
            if not m or m["unit"] != unit:
                return False
            lo, hi = int(m["lo"]), int(m["hi"] or m["lo"])
            want_lo, want_hi = answer[key]
            return lo <= want_hi and want_lo <= hi
    return False


def score(question: dict[str, Any], results: list[dict[str, Any]]) -> dict[str, Any]:
    """The measures of one question's top five results."""
    files = {a["file"] for a in question["answers"]}

    def answers(r: dict[str, Any]) -> list[dict[str, Any]]:
        return [a for a in question["answers"] if r["doc_id"] == a["file"]]

    kinds = [kind(r["content"]) for r in results[:5]]
    return {
        "id": question["id"],
        "split": question["split"],
        "file@1": bool(results) and results[0]["doc_id"] in files,
        "file@5": any(r["doc_id"] in files for r in results[:5]),
        "location@5": any(location_hit(a, r) for r in results[:5] for a in answers(r)),
        "junk": sum(k is not None for k in kinds),
        "toc": kinds.count("toc"),
        "links": kinds.count("links"),
        "fragment": kinds.count("fragment"),
        "top": [
            f"{r['doc_id']} ({r.get('location') or '-'}) {r.get('section') or ''}".rstrip()
            + (f" [{k}]" if k else "")
            for r, k in zip(results[:5], kinds, strict=False)
        ],
    }


def summary(rows: list[dict[str, Any]]) -> dict[str, Any]:
    n = len(rows)
    return {
        "questions": n,
        "file@1": sum(r["file@1"] for r in rows),
        "file@5": sum(r["file@5"] for r in rows),
        "location@5": sum(r["location@5"] for r in rows),
        "junk in top 5": sum(r["junk"] for r in rows),
        "toc": sum(r["toc"] for r in rows),
        "links": sum(r["links"] for r in rows),
        "fragment": sum(r["fragment"] for r in rows),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--folder", type=Path, default=FOLDER)
    parser.add_argument("--project", type=Path, default=HERE / "results" / "realdocs")
    parser.add_argument("--questions", type=Path, default=QUESTIONS)
    parser.add_argument("--split", choices=["dev", "check"], default=None)
    parser.add_argument("--mode", choices=["hybrid", "semantic", "keyword"], default=None)
    parser.add_argument("--force-ingest", action="store_true")
    parser.add_argument("--show-misses", action="store_true", help="print each miss's top 5")
    parser.add_argument("--json", action="store_true", help="every question's row as JSON")
    parser.add_argument(
        "--text-alone",
        action="store_true",
        help="embed and keyword-index each chunk without its heading path (records."
        "SECTION_IN_TEXT off), to compare; use a --project of its own",
    )
    args = parser.parse_args()
    if args.text_alone:
        from holodeck.vectorstore import records

        records.SECTION_IN_TEXT = False
    questions = yaml.safe_load(args.questions.read_text())
    if args.split:
        questions = [q for q in questions if q["split"] == args.split]
    tool = reload_tool(project(args.folder, args.project))
    started = time.perf_counter()
    tool.initialize_sync(force_ingest=args.force_ingest)
    print(f"index ready in {time.perf_counter() - started:.0f} s: {tool.summary_line()}",
          file=sys.stderr)  # fmt: skip
    rows = []
    for q in questions:
        results, _ = tool.find(q["question"], mode=args.mode)
        rows.append(score(q, [vars(r) for r in results]))
    tool.close()
    report: dict[str, Any] = {"all": summary(rows)}
    for split in ("dev", "check"):
        part = [r for r in rows if r["split"] == split]
        if part:
            report[split] = summary(part)
    if args.json:
        report["rows"] = rows
    print(json.dumps(report, indent=1))
    if args.show_misses:
        for r in rows:
            if not (r["file@1"] and r["location@5"]) or r["junk"]:
                flags = "".join(f" {k}" for k in ("file@1", "file@5", "location@5") if not r[k])
                print(f"\n{r['id']}: missed{flags or ' nothing'}; junk {r['junk']}")
                for line in r["top"]:
                    print(f"   {line}")


if __name__ == "__main__":
    main()
