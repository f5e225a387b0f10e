"""PDF text quality and cost: markitdown's PDF path (before) against holodeck's pypdfium2 path.

For every PDF under a folder (the real corpus of ``shared/tools/build-docs-corpus.sh``), the
text of each converter is split on whitespace; a token holding a run of more than 25
letters is counted as glued (real words that long are rare; "BeawarethatRCbugs..." is the
typical case). Reports the glued share, pages, words and CPU seconds of each. Usage:

    python benchmarks/bench_pdf_text.py CORPUS_DIR [--limit N]
"""

from __future__ import annotations

import argparse
import io
import json
import os
import re
import time
from pathlib import Path

from holodeck.ingest.convert import convert
from holodeck.ingest.discover import discover

_GLUED = re.compile(r"[^\W\d_]{26,}")


def markitdown_text(path: Path) -> str:
    """The old path: markitdown's PdfConverter (pdfplumber, then pdfminer)."""
    from markitdown import StreamInfo
    from markitdown.converters import PdfConverter

    with path.open("rb") as stream:
        data = io.BytesIO(stream.read())
    return str(PdfConverter().convert(data, StreamInfo(extension=".pdf")).markdown or "")


def measure(name: str, texts: dict[str, str], cpu: float, failed: int) -> dict[str, object]:
    tokens = [t for text in texts.values() for t in text.split()]
    glued = sum(1 for t in tokens if _GLUED.search(t))
    return {
        "converter": name,
        "files": len(texts),
        "failed": failed,
        "words": len(tokens),
        "glued": glued,
        "glued_share_pct": round(100 * glued / max(1, len(tokens)), 2),
        "cpu_s": round(cpu, 1),
    }


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("corpus", type=Path)
    parser.add_argument("--limit", type=int, default=0, help="only the first N PDFs")
    args = parser.parse_args()
    pdfs = [f for f in discover(args.corpus, file_types=[".pdf"]).files]
    if args.limit:
        pdfs = pdfs[: args.limit]
    rows = []
    for name in ("markitdown", "holodeck"):
        texts: dict[str, str] = {}
        failed = 0
        pages = 0
        started = time.process_time()
        for f in pdfs:
            try:
                if name == "markitdown":
                    texts[f.rel_path] = markitdown_text(f.path)
                else:
                    converted = convert(f)
                    texts[f.rel_path] = converted.text
                    pages += len(converted.anchors.starts) if converted.anchors else 0
            except Exception:  # a converter that fails on a file: count it, go on
                failed += 1
        row = measure(name, texts, time.process_time() - started, failed)
        if pages:
            row["pages_with_text"] = pages
        rows.append(row)
        print(json.dumps(row), flush=True)
    print(json.dumps({"pdfs": len(pdfs), "cpu_count": os.cpu_count()}))


if __name__ == "__main__":
    main()
