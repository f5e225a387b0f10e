"""Measures the built-in local embedder: model load time and throughput on full-size chunks.

Why: ingestion time is dominated by embedding, so this is the number that tells a user how
long a folder takes. Run on an idle machine: ``python benchmarks/bench_embed.py [--chunks 128]``.
"""

from __future__ import annotations

import argparse
import os
import random
import time

from holodeck.embeddings.local import LocalOnnxEmbedder
from holodeck.ingest.chunker import chunk_text

_WORDS = [
    "the",
    "a",
    "of",
    "to",
    "and",
    "in",
    "is",
    "for",
    "on",
    "with",
    "as",
    "by",
    "at",
    "from",
    "that",
    "this",
    "model",
    "data",
    "search",
    "index",
    "document",
    "question",
    "answer",
    "vector",
    "token",
    "paragraph",
    "knowledge",
    "retrieval",
    "embedding",
    "system",
    "user",
    "file",
    "folder",
    "result",
    "query",
    "server",
    "cache",
    "network",
    "memory",
    "performance",
    "quality",
]


def _text(words: int, seed: int = 0) -> str:
    """Prose-like text: sentences of common words, paragraphs of a few sentences."""
    rng = random.Random(seed)
    paragraphs, count = [], 0
    while count < words:
        sentences = []
        for _ in range(rng.randint(2, 6)):
            n = rng.randint(6, 20)
            sentences.append(" ".join(rng.choice(_WORDS) for _ in range(n)).capitalize() + ".")
            count += n
        paragraphs.append(" ".join(sentences))
    return "\n\n".join(paragraphs)


def main() -> None:
    """Print load time, chunk sizes and chunks per second."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--chunks", type=int, default=128, help="chunks to embed (default 128)")
    args = parser.parse_args()

    started = time.perf_counter()
    embedder = LocalOnnxEmbedder.builtin()
    built = time.perf_counter() - started
    started = time.perf_counter()
    embedder.embed(["warm up"])  # reads, hash-checks and opens the model
    loaded = time.perf_counter() - started

    counter = embedder.tokens
    chunks: list[str] = []
    words = args.chunks * 230
    while len(chunks) < args.chunks:
        # Without overlap and with the window rule, chunks are 128-256 tokens; keep the big ones.
        found = chunk_text(_text(words, seed=len(chunks)), counter, embedder.max_tokens, 0)
        chunks += [c.text for c in found if c.token_count >= 230][: args.chunks - len(chunks)]
    tokens = sum(counter.count(c) for c in chunks)

    started, cpu_started = time.perf_counter(), time.process_time()
    embedder.embed(chunks)
    elapsed, cpu = time.perf_counter() - started, time.process_time() - cpu_started

    print(f"cpus: {os.cpu_count()}")
    print(f"build embedder: {built:.3f} s (no model load)")
    print(f"model load (read, sha256 check, onnxruntime session, 1 tiny input): {loaded:.2f} s")
    print(
        f"chunks: {len(chunks)}, mean {tokens / len(chunks):.0f} tokens (max {embedder.max_tokens})"
    )
    print(f"embed: {elapsed:.2f} s -> {len(chunks) / elapsed:.1f} chunks/s")
    # On a busy machine wall time suffers; CPU time shows what the model itself costs.
    print(f"cpu time: {cpu:.2f} s -> {len(chunks) / cpu:.1f} chunks per cpu-second")


if __name__ == "__main__":
    main()
