"""Ingestion and search on a generated corpus, through the same code as `holodeck ingest/search`.

Measures: first ingest throughput, a re-run with nothing changed, a re-run with one file
changed, search latency p50/p95, and peak memory. Usage:

    python benchmarks/bench_ingest.py [--files 1000]
"""

from __future__ import annotations

import argparse
import json
import random
import subprocess
import sys
import time
from pathlib import Path

from _common import make_project, peak_rss_mb, reload_tool, search_latency_ms

TOPICS = [
    "scheduling",
    "retries",
    "backups",
    "alerts",
    "billing",
    "workers",
    "queues",
    "tokens",
    "storage",
    "upgrades",
    "metrics",
    "logging",
    "permissions",
    "webhooks",
    "quotas",
    "caches",
]


def queries(n: int) -> list[str]:
    """Questions about the generated notes, for search latency."""
    return [
        f"which component handles {TOPICS[q % len(TOPICS)]} for team {q % 50}?" for q in range(n)
    ]


def corpus(files: int) -> dict[str, str]:
    """``files`` generated notes in one folder per topic, the same on every run."""
    rng = random.Random(7)
    return {f"{TOPICS[i % len(TOPICS)]}/note{i:05d}.md": document(i, rng) for i in range(files)}


def document(i: int, rng: random.Random) -> str:
    """A small markdown page with a title and a few distinct paragraphs (one or two chunks)."""
    topic = TOPICS[i % len(TOPICS)]
    paras = [
        f"Component {i} handles {topic} for team {rng.randint(1, 50)}. It keeps "
        f"{rng.randint(2, 90)} items per batch and reports to channel {rng.randint(100, 999)}."
        for _ in range(rng.randint(2, 5))
    ]
    return f"# Note {i} on {topic}\n\n" + "\n\n".join(paras) + "\n"


INDEX_MEMORY = """
import sys
import numpy as np
from holodeck.vectorstore.local import LocalIndexAdapter
from holodeck.vectorstore.records import ChunkFilters
def rss():
    for line in open("/proc/self/status"):
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
before = rss()
adapter = LocalIndexAdapter(__import__("pathlib").Path(sys.argv[1]))
adapter.search("bench", np.ones(384, dtype=np.float32) / 384**0.5, 5, ChunkFilters())
print((rss() - before) / 1024)
"""


def index_memory_mb(folder: Path) -> float:
    """Memory the loaded index adds to a process (contract: < 100 MB at 1,000 documents)."""
    out = subprocess.run(
        [sys.executable, "-c", INDEX_MEMORY, str(folder)],
        capture_output=True,
        text=True,
        check=True,
    )
    return round(float(out.stdout), 1)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--files", type=int, default=1000)
    parser.add_argument("--queries", type=int, default=200)
    args = parser.parse_args()
    docs = corpus(args.files)
    root, tool = make_project(docs)
    out: dict[str, float | int] = {"files": args.files}

    started = time.perf_counter()
    tool.initialize_sync()
    first = time.perf_counter() - started
    assert tool.summary is not None
    out.update(
        first_ingest_s=round(first, 2),
        chunks=tool.summary.chunks_total,
        files_per_s=round(args.files / first, 1),
        chunks_per_s=round(tool.summary.chunks_embedded / first, 1),
    )

    tool = reload_tool(root)  # a new run: the index is read back from disk
    started = time.perf_counter()
    tool.initialize_sync()
    out["rerun_unchanged_s"] = round(time.perf_counter() - started, 3)
    assert tool.summary is not None and tool.summary.chunks_embedded == 0

    changed = root / "docs" / next(iter(docs))
    changed.write_text(changed.read_text() + "\nOne more paragraph about a late change.\n")
    tool = reload_tool(root)
    started = time.perf_counter()
    tool.initialize_sync()
    out["rerun_one_changed_s"] = round(time.perf_counter() - started, 3)
    assert tool.summary is not None and tool.summary.changed == 1

    p50, p95 = search_latency_ms(tool, queries(args.queries))
    out.update(
        search_p50_ms=p50,
        search_p95_ms=p95,
        peak_rss_mb=round(peak_rss_mb(), 1),
        index_memory_mb=index_memory_mb(root / ".holodeck" / "index" / "kb"),
    )
    print(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()
