"""What goes into the chunks of a real corpus: readable passages, or tables of contents, index
pages, link lists and fragments; before and after the cleaning of issue 23.

Every file of the given folders (all types on) is converted and chunked by `prepare` (the code
`holodeck ingest` runs on each file, in its worker thread) with the local model's tokenizer
at 256 tokens and 50 of overlap; no model runs. Each chunk is classified by
benchmarks/_junk.py (rules written for counting, not the product's). Per file type: files,
chunks, tokens, and the chunks that are a table of contents or index, a link list, or a
fragment of under 15 words; plus chunks with a section path. What the cleaning itself took
out is counted as it runs (where the code has it): PDF pages left out as contents or index,
contents lines cut from pages that keep text, running head/foot lines and page numbers cut,
Markdown lines blanked (comments, link-reference definitions). Usage:

    python benchmarks/bench_cleaning.py DIR [DIR...] [--json] [--examples 3]
    python benchmarks/bench_cleaning.py DIR [DIR...] --before REV   # REV's code beside this one

``--before REV`` runs both sides at once, each in its own process (REV's ``holodeck/`` taken
with ``git archive`` into a temporary folder and put first on PYTHONPATH), and prints
before -> after per type. Each side converts every file once (HTML and PDF conversion is
nearly all the time: the whole corpus is ~150 MB); progress goes to stderr.

The corpus: /work/shared/tools/build-docs-corpus.sh CORPUS/docs and
benchmarks/realdocs/build_html_corpus.sh CORPUS/html.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from collections import Counter, defaultdict
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from _junk import kind

HERE = Path(__file__).resolve().parent
TYPES = [".txt", ".md", ".pdf", ".html", ".htm", ".docx", ".pptx", ".xlsx"]
JUNK = ["chunks", "tokens", "toc", "links", "fragment", "with section"]
CLEANED = [
    "pdf pages",
    "contents pages",
    "index pages",
    "contents lines",
    "running lines",
    "markdown lines blanked",
]

#: The row of the file being prepared, for the counting wrappers.
_current: dict[str, Counter[str]] = {}


def _nonblank(lines: Sequence[str]) -> int:
    return sum(bool(x.strip()) for x in lines)


def _count_cleaning() -> None:
    """Wrap the cleaning functions `convert` calls so each file's row counts what they took
    out (no second conversion). Code from before the cleaning has none: nothing to count."""
    try:
        from holodeck.ingest import clean, convert
    except ImportError:
        return

    def pdf_pages(pages: Sequence[str]) -> list[str]:
        kept = clean.pdf_pages(pages)
        row = _current["row"]
        running = clean._running_lines(pages)
        for number, (page, out) in enumerate(zip(pages, kept, strict=True)):
            row["pdf pages"] += 1
            lines = page.splitlines()
            if not page.strip():
                continue
            rest = clean._without_contents(lines)
            if not out:
                if number >= len(pages) * 2 / 3 and clean._is_index(lines):
                    row["index pages"] += 1
                elif len(rest) < len(lines):
                    row["contents pages"] += 1
                else:  # nothing but a running head and a page number
                    row["running lines"] += _nonblank(lines)
                continue
            row["contents lines"] += _nonblank(lines) - _nonblank(rest)
            row["running lines"] += _nonblank(rest) - _nonblank(clean._trim_edges(rest, running))
        return kept

    def clean_markdown(text: str) -> str:
        out = clean.clean_markdown(text)
        lines_in, lines_out = text.splitlines(), out.splitlines()
        _current["row"]["markdown lines blanked"] += _nonblank(lines_in) - _nonblank(lines_out)
        return out

    convert.pdf_pages = pdf_pages  # type: ignore[attr-defined]
    convert.clean_markdown = clean_markdown  # type: ignore[attr-defined]


def measure(folders: list[Path], examples_per_kind: int) -> dict[str, Any]:
    """Every file of ``folders`` prepared by the code on ``sys.path``, counted per type."""
    from holodeck.embeddings.hf_tokenizer import HFTokenCounter
    from holodeck.embeddings.local import BUILTIN_TOKENIZER
    from holodeck.ingest.discover import discover
    from holodeck.ingest.prefetch import prepare

    _count_cleaning()
    counter = HFTokenCounter.from_file(BUILTIN_TOKENIZER)
    table: dict[str, Counter[str]] = defaultdict(Counter)
    examples: dict[str, list[str]] = defaultdict(list)
    slowest: list[tuple[float, str]] = []
    started = time.process_time()
    files = [f for folder in folders for f in discover(folder, file_types=TYPES).files]
    for n, file in enumerate(files, 1):
        suffix = ".html" if file.path.suffix.lower() == ".htm" else file.path.suffix.lower()
        row = _current["row"] = table[suffix]
        row["files"] += 1
        cpu = time.process_time()
        item = prepare(file, counter, 256, 50)
        slowest.append((time.process_time() - cpu, file.rel_path))
        if n % 100 == 0 or n == len(files):
            print(f"{n}/{len(files)} files, {time.process_time() - started:.0f} CPU s",
                  file=sys.stderr, flush=True)  # fmt: skip
        if item.failure:
            row["failed"] += 1
            continue
        sections = getattr(item, "sections", None) or [""] * len(item.chunks)
        for chunk, section in zip(item.chunks, sections, strict=True):
            row["chunks"] += 1
            row["tokens"] += chunk.token_count
            row["with section"] += bool(section)
            k = kind(chunk.text)
            if k:
                row[k] += 1
                if len(examples[k]) < examples_per_kind:
                    examples[k].append(f"{file.rel_path}: {chunk.text[:300]!r}")
    total: Counter[str] = Counter()
    for row in table.values():
        total.update(row)
    table["all"] = total
    slowest.sort(reverse=True)
    return {
        "cpu_s": round(time.process_time() - started, 1),
        "types": table,
        "examples": examples,
        "slowest": [f"{cpu:.1f} s {name}" for cpu, name in slowest[:5]],
    }


def _side(folders: list[Path], code: Path | None, out: Path) -> subprocess.Popen[bytes]:
    """This script measuring ``folders`` in a new process (``code`` first on its path)."""
    env = dict(os.environ)
    if code is not None:
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(code), env.get("PYTHONPATH")]))
    command = [sys.executable, __file__, *map(str, folders), "--json"]
    return subprocess.Popen(command, cwd=HERE, env=env, stdout=out.open("wb"))


def before_after(folders: list[Path], rev: str) -> tuple[dict[str, Any], dict[str, Any]]:
    """Both sides measured at once: ``rev``'s code and this checkout's."""
    with tempfile.TemporaryDirectory(prefix="bench-cleaning-") as tmp:
        code = Path(tmp) / "code"
        code.mkdir()
        git = ["git", "-C", str(HERE.parent), "archive", rev, "holodeck"]
        archive = subprocess.run(git, check=True, capture_output=True).stdout
        subprocess.run(["tar", "-x", "-C", str(code)], input=archive, check=True)
        outs = Path(tmp) / "before.json", Path(tmp) / "after.json"
        sides = [_side(folders, code, outs[0]), _side(folders, None, outs[1])]
        for side in sides:
            if side.wait():
                raise SystemExit(f"a side failed (exit {side.returncode})")
        before, after = (json.loads(p.read_text()) for p in outs)
    return before, after


def _table(before: dict[str, Any] | None, after: dict[str, Any]) -> str:
    """Markdown rows per type: ``before -> after`` (or this code's count alone)."""
    types = sorted(after["types"], key=lambda t: (t == "all", t))
    cols = ["files", "failed", *JUNK]
    lines = ["| type | " + " | ".join(cols) + " |", "|---|" + "---:|" * len(cols)]
    for t in types:
        a = after["types"][t]
        b = before["types"].get(t, {}) if before else None
        cells = [
            f"{a.get(c, 0):,}"
            if b is None or c == "files" or b.get(c, 0) == a.get(c, 0)
            else f"{b.get(c, 0):,} -> {a.get(c, 0):,}"
            for c in cols
        ]
        lines.append(f"| {t} | " + " | ".join(cells) + " |")
    cleaned = [(t, after["types"][t]) for t in types]
    if any(row.get(c) for _, row in cleaned for c in CLEANED):
        lines += ["", "| type | " + " | ".join(CLEANED) + " |", "|---|" + "---:|" * len(CLEANED)]
        for t, row in cleaned:
            if any(row.get(c) for c in CLEANED):
                lines.append(f"| {t} | " + " | ".join(f"{row.get(c, 0):,}" for c in CLEANED) + " |")
    cpu = f"{before['cpu_s']:.0f} -> " if before else ""
    lines.append(f"\nCPU s: {cpu}{after['cpu_s']:.0f}")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("folders", type=Path, nargs="+")
    parser.add_argument("--before", metavar="REV", help="also measure REV's code, side by side")
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--examples", type=int, default=0, help="junk chunks shown per kind")
    args = parser.parse_args()
    folders = [f.resolve() for f in args.folders]
    if args.before:
        before, after = before_after(folders, args.before)
        if args.json:
            print(json.dumps({"before": before, "after": after}, indent=1))
            return
        print(_table(before, after))
        for name, side in (("before", before), ("after", after)):
            print(f"\nslowest files {name}: " + "; ".join(side["slowest"]))
        return
    result = measure(folders, args.examples)
    if args.json:
        print(json.dumps(result, indent=1))
        return
    print(_table(None, result))
    for k, shown in result["examples"].items():
        print(f"\n{k}:")
        for line in shown:
            print("  " + line)


if __name__ == "__main__":
    main()
