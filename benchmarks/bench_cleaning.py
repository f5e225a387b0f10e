"""What goes into the chunks of a real corpus: readable passages, or tables of contents, index
pages, link lists and fragments.

Every file of the given folders (all types on) is converted and chunked by `prepare` (the code
`holodeck ingest` runs on each file, in its worker thread) with the local model's tokenizer
at 256 tokens and 50 of overlap; no model runs. Each chunk is classified by
benchmarks/_junk.py (rules written for counting, not the product's). Per file type: files,
chunks, tokens, and the chunks that are a table of contents or index, a link list, or a
fragment of under 15 words; plus chunks with a section path. Usage:

    python benchmarks/bench_cleaning.py DIR [DIR...] [--json] [--examples 3]

The corpus: /work/shared/tools/build-docs-corpus.sh CORPUS/docs and
benchmarks/realdocs/build_html_corpus.sh CORPUS/html.
"""

from __future__ import annotations

import argparse
import json
import time
from collections import Counter, defaultdict
from pathlib import Path

from _junk import kind

from holodeck.embeddings.local import BUILTIN_TOKENIZER, HFTokenCounter
from holodeck.ingest.discover import discover
from holodeck.ingest.prefetch import prepare

TYPES = [".txt", ".md", ".pdf", ".html", ".htm", ".docx", ".pptx", ".xlsx"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("folders", type=Path, nargs="+")
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--examples", type=int, default=0, help="junk chunks shown per kind")
    args = parser.parse_args()
    counter = HFTokenCounter.from_file(BUILTIN_TOKENIZER)
    table: dict[str, Counter[str]] = defaultdict(Counter)
    examples: dict[str, list[str]] = defaultdict(list)
    started = time.process_time()
    for folder in args.folders:
        for file in discover(folder, file_types=TYPES).files:
            suffix = ".html" if file.path.suffix.lower() == ".htm" else file.path.suffix.lower()
            row = table[suffix]
            row["files"] += 1
            item = prepare(file, counter, 256, 50)
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
                    if len(examples[k]) < args.examples:
                        examples[k].append(f"{file.rel_path}: {chunk.text[:300]!r}")
    total: Counter[str] = Counter()
    for row in table.values():
        total.update(row)
    table["all"] = total
    cpu = time.process_time() - started
    if args.json:
        print(json.dumps({"cpu_s": round(cpu, 1), "types": table, "examples": examples}, indent=1))
        return
    cols = ["files", "failed", "chunks", "tokens", "toc", "links", "fragment", "with section"]
    print("| type | " + " | ".join(cols) + " |")
    print("|---|" + "---:|" * len(cols))
    for suffix, row in sorted(table.items(), key=lambda kv: (kv[0] == "all", kv[0])):
        print(f"| {suffix} | " + " | ".join(f"{row[c]:,}" for c in cols) + " |")
    print(f"\n{cpu:.0f} CPU s")
    for k, shown in examples.items():
        print(f"\n{k}:")
        for line in shown:
            print("  " + line)


if __name__ == "__main__":
    main()
