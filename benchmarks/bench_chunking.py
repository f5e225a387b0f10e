"""How full chunks are, and how many change when one paragraph is edited (chunk reuse).

Chunks the .txt and .md files of a folder (the real corpus of
``shared/tools/build-docs-corpus.sh``) with the local model's tokenizer at 256 tokens and
50 of overlap (what `holodeck ingest` uses), then, in documents of six chunks or more, adds
one sentence at the start of a random paragraph and counts the chunks whose text is new
(each would be embedded again). Then chunks one endless line (``--blob-mb`` of random
letters and digits, no space: one token to the MiniLM tokenizer) and reports the time,
the longest chunk and the peak memory. No model runs: this is the chunker alone. Usage:

    python benchmarks/bench_chunking.py CORPUS_DIR [--files 120] [--seed 7] [--blob-mb 5]
        [--peers $(benchmarks/peers.sh)]

With ``--peers``, LangChain's splitters (``peers_chunking.py``, in the peers' environment)
chunk the same documents at the same 256 tokens and 50 of overlap and take the same edits.
"""

from __future__ import annotations

import argparse
import json
import random
import string
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any

from _common import peak_rss_mb
from _edits import edit_summary

from holodeck.embeddings.hf_tokenizer import HFTokenCounter
from holodeck.embeddings.local import BUILTIN_TOKENIZER
from holodeck.ingest.chunker import chunk_text, max_chunk_chars
from holodeck.ingest.discover import discover

EDIT = "A brand new opening sentence, added by an editor. "


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("corpus", type=Path)
    parser.add_argument("--files", type=int, default=120, help="documents sampled")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--blob-mb", type=float, default=5.0, help="size of the endless line")
    parser.add_argument("--peers", help="python of benchmarks/peers.sh (adds LangChain)")
    args = parser.parse_args()
    counter = HFTokenCounter.from_file(BUILTIN_TOKENIZER)
    files = [f.path for f in discover(args.corpus, file_types=[".txt", ".md"]).files]
    rng = random.Random(args.seed)
    rng.shuffle(files)
    fills: list[int] = []
    changed: list[int] = []
    documents: list[dict[str, Any]] = []  # for the peers: each text, and where it was edited
    chunks_total = 0
    started = time.process_time()
    for path in files[: args.files]:
        text = path.read_text(encoding="utf-8", errors="replace")[:60_000]
        chunks = chunk_text(text, counter, 256, 50)
        chunks_total += len(chunks)
        fills += [c.token_count for c in chunks[:-1]]  # the last chunk is whatever is left
        documents.append({"text": text, "edits": []})
        if len(chunks) < 6:
            continue
        paragraphs = [i for i in range(2, len(text)) if text[i - 2 : i] == "\n\n"]
        before = {c.text for c in chunks}
        for _ in range(2):
            at = rng.choice(paragraphs)
            documents[-1]["edits"].append(at)
            after = chunk_text(text[:at] + EDIT + text[at:], counter, 256, 50)
            changed.append(sum(1 for c in after if c.text not in before))
    print(
        json.dumps(
            {
                "documents": min(args.files, len(files)),
                **edit_summary(chunks_total, fills, changed),
                "cpu_s": round(time.process_time() - started, 1),
            }
        )
    )
    if args.peers:
        with tempfile.TemporaryDirectory(prefix="bench-chunking-") as work:
            given = Path(work) / "documents.json"
            given.write_text(json.dumps({"edit": EDIT, "documents": documents}))
            script = Path(__file__).resolve().parent / "peers_chunking.py"
            subprocess.run([args.peers, str(script), str(given)], check=True)
    size = int(args.blob_mb * 1_000_000)
    blob = "".join(rng.choices(string.ascii_letters + string.digits, k=size))
    started = time.process_time()
    pieces = chunk_text(blob, counter, 256, 50)
    print(
        json.dumps(
            {
                "endless_line_mb": args.blob_mb,
                "chunks": len(pieces),
                "longest_chunk_chars": max(len(c.text) for c in pieces),
                "bound_chars": max_chunk_chars(256),
                "cpu_s": round(time.process_time() - started, 1),
                "peak_rss_mb": round(peak_rss_mb(), 1),
            }
        )
    )


if __name__ == "__main__":
    main()
