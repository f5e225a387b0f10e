"""Build (once) the cache of real embeddings the filtered-recall benchmark searches.

Every file of the Debian documentation corpus (/work/corpus/docs and /work/corpus/html:
Python, git, Node, LaTeX, R and Debian manuals as txt, md, html and pdf) is converted with
holodeck's own converter, cut with holodeck's chunker (``CHUNK_TOKENS`` tokens a chunk, far
smaller than an ingest's so the corpus gives over 100,000 chunks) and embedded with
holodeck's built-in model (all-MiniLM-L6-v2, int8 ONNX). Real questions (the Cranfield and
NPL query sets in shared/eval, about aerodynamics and electronics, so mostly off the corpus;
and the real-folder questions in benchmarks/realdocs, about these manuals) are embedded too.

Writes ``benchmarks/results/real_vectors/``: ``vectors.npy`` (float32, n x 384, in chunk
order), ``chunks.jsonl`` (one line a chunk: the file's corpus path, its top folder and its
sub-folder, the chunk's tokens), ``questions.npy`` and ``questions.jsonl``. Embedding is done
in parts saved as it goes (``part-*.npy``), so a killed run resumes where it stopped.

    nice -n 10 python benchmarks/real_vectors.py [--limit N]
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np

from holodeck.embeddings.local import LocalOnnxEmbedder
from holodeck.ingest.chunker import chunk_text
from holodeck.ingest.convert import ConversionError, convert
from holodeck.ingest.discover import SourceFile

ROOTS = (Path("/work/corpus/docs"), Path("/work/corpus/html"))
QUESTION_SETS = (
    Path("/work/shared/eval/cranfield/queries.jsonl"),
    Path("/work/shared/eval/vaswani_npl/queries.jsonl"),
)
REALDOCS_QUESTIONS = Path(__file__).parent / "realdocs" / "questions.yaml"
OUT = Path(__file__).parent / "results" / "real_vectors"
CHUNK_TOKENS = 128
OVERLAP_TOKENS = 16
PART = 4096
SUFFIXES = {".txt", ".md", ".html", ".htm", ".pdf", ".rst"}


def chunks_of_corpus(embedder: LocalOnnxEmbedder) -> list[dict[str, object]]:
    """Every chunk of the corpus, in a fixed order (files sorted by path)."""
    out: list[dict[str, object]] = []
    counter = embedder.tokens
    for root in ROOTS:
        files = sorted(p for p in root.rglob("*") if p.is_file() and p.suffix.lower() in SUFFIXES)
        for path in files:
            rel = path.relative_to(root).as_posix()
            st = path.stat()
            source = SourceFile(path, rel, st.st_mtime, st.st_size, str(root))
            try:
                text = convert(source).text
            except ConversionError:
                continue
            parts = rel.split("/")
            top = f"{root.name}/{parts[0]}"
            sub = f"{top}/{parts[1]}" if len(parts) > 2 else top
            for chunk in chunk_text(text, counter, CHUNK_TOKENS, OVERLAP_TOKENS):
                out.append(
                    {"path": f"{root.name}/{rel}", "top": top, "sub": sub,
                     "tokens": chunk.token_count, "text": chunk.text}
                )  # fmt: skip
        print(f"{root}: {len(out):,} chunks so far", flush=True)
    return out


def questions() -> list[dict[str, str]]:
    """The real questions: Cranfield, NPL and the real-folder set."""
    out = []
    for path in QUESTION_SETS:
        for line in path.read_text().splitlines():
            out.append({"set": path.parent.name, "text": json.loads(line)["text"]})
    if REALDOCS_QUESTIONS.is_file():
        import yaml

        data = yaml.safe_load(REALDOCS_QUESTIONS.read_text())
        items = data.get("questions", data) if isinstance(data, dict) else data
        for item in items:
            text = item.get("question") or item.get("q") if isinstance(item, dict) else None
            if text:
                out.append({"set": "realdocs", "text": str(text)})
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--limit", type=int, default=0, help="embed at most this many chunks")
    args = ap.parse_args()
    OUT.mkdir(parents=True, exist_ok=True)
    embedder = LocalOnnxEmbedder.builtin()
    meta_path = OUT / "chunks.jsonl"
    if meta_path.is_file():
        chunks = [json.loads(line) for line in meta_path.read_text().splitlines()]
        if args.limit and len(chunks) > args.limit:  # a resumed run cut to fewer chunks
            chunks = chunks[: args.limit]
            meta_path.write_text("".join(json.dumps(c) + "\n" for c in chunks))
    else:
        started = time.monotonic()
        chunks = chunks_of_corpus(embedder)
        if args.limit:
            chunks = chunks[: args.limit]
        meta_path.write_text("".join(json.dumps(c) + "\n" for c in chunks))
        print(f"{len(chunks):,} chunks in {time.monotonic() - started:.0f} s", flush=True)
    qs = questions()
    qv = embedder.embed([q["text"] for q in qs])
    np.save(OUT / "questions.npy", qv)
    (OUT / "questions.jsonl").write_text("".join(json.dumps(q) + "\n" for q in qs))
    print(f"{len(qs)} questions embedded", flush=True)
    started = time.monotonic()
    for start in range(0, len(chunks), PART):
        part = OUT / f"part-{start // PART:05d}.npy"
        if part.is_file():
            continue
        texts = [str(c["text"]) for c in chunks[start : start + PART]]
        np.save(part, embedder.embed(texts))
        done = min(start + PART, len(chunks))
        rate = (done - start) / max(time.monotonic() - started, 1e-9)
        print(f"embedded {done:,} of {len(chunks):,} ({rate:.0f}/s this run)", flush=True)
        started = time.monotonic()
    parts = sorted(OUT.glob("part-*.npy"))
    vectors = np.concatenate([np.load(p) for p in parts]).astype(np.float32)
    assert vectors.shape[0] == len(chunks), (vectors.shape, len(chunks))
    np.save(OUT / "vectors.npy", vectors)
    for p in parts:
        p.unlink()
    print(f"wrote {OUT / 'vectors.npy'}: {vectors.shape}", file=sys.stderr)


if __name__ == "__main__":
    main()
