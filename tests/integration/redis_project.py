"""Shared pieces of the Redis integration tests: a small corpus, config snippets, snapshots.

Tests drive the real ``holodeck`` command (``run_holodeck``) against the real Redis; these
helpers only write files and read what ended up in Redis, through the redis adapter.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import numpy as np
from cli_helpers import run_holodeck, write

from holodeck.vectorstore.redis.adapter import RedisIndexAdapter

#: Six short documents on distinct subjects (two of them long enough for several chunks).
CORPUS: dict[str, str] = {
    "space/telescopes.md": (
        "# Telescopes\n\nA reflecting telescope gathers light with a curved primary mirror. "
        "Larger mirrors collect more photons, so faint galaxies become visible.\n\n"
        "Adaptive optics bend a thin mirror hundreds of times a second to undo the blur "
        "that turbulence in the atmosphere adds to starlight."
    ),
    "space/rockets.md": (
        "# Rockets\n\nA rocket carries its own oxidiser, so its engines work in vacuum. "
        "Liquid hydrogen and liquid oxygen give the highest exhaust velocity of common "
        "propellants."
    ),
    "kitchen/bread.md": (
        "# Sourdough bread\n\nA sourdough starter is a culture of wild yeast and lactic acid "
        "bacteria. Feed it flour and water daily; bake when it doubles within six hours.\n\n"
        "Proof the dough overnight in the fridge for a more sour crumb and a blistered crust."
    ),
    "kitchen/coffee.txt": (
        "Espresso is brewed by forcing water at about nine bars of pressure through finely "
        "ground coffee for twenty-five seconds."
    ),
    "garden/tomatoes.md": (
        "# Tomatoes\n\nTomato plants need six to eight hours of sun. Water the soil, not the "
        "leaves, to avoid blight; pinch out side shoots on cordon varieties."
    ),
    "garden/compost.txt": (
        "A compost heap needs a balance of green nitrogen-rich waste and brown carbon-rich "
        "waste. Turn it every two weeks so the microbes get oxygen."
    ),
}

QUERIES = [
    "how does a telescope mirror work",
    "what fuel do rocket engines burn",
    "feeding a sourdough starter",
    "how much pressure for espresso",
    "keeping tomato plants healthy",
    "turning a compost pile",
]


def write_docs(folder: Path, docs: dict[str, str]) -> None:
    """Write ``docs`` (relative path -> text) under ``folder``."""
    for rel, text in docs.items():
        path = folder / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text + "\n", encoding="utf-8")


def long_text(topic: str, paragraphs: int) -> str:
    """Distinct paragraphs, one small chunk each at ``chunk_size: 64``."""
    return "\n\n".join(
        f"Paragraph {i} about {topic}. The {topic} unit number {i} handles case {i * 7} "
        f"and reports its state to station {i * 3}. Operators check gauge {i} every "
        f"{i + 2} hours and log the reading in journal {i * 11}."
        for i in range(paragraphs)
    )


def database_yaml(
    url: str, index: str, algorithm: str = "HNSW", metric: str = "COSINE", indent: int = 4
) -> str:
    """A tool's ``database:`` block at ``indent`` spaces (``url`` quoted as written)."""
    pad = " " * indent
    return (
        f"{pad}database:\n"
        f"{pad}  provider: redis\n"
        f"{pad}  connection_string: {json.dumps(url)}\n"
        f"{pad}  index_name: {index}\n"
        f"{pad}  vector_algorithm: {algorithm}\n"
        f"{pad}  distance_metric: {metric}\n"
    )


def global_config(path: Path, url: str, index: str | None = None) -> None:
    """A ``.holodeck/config.yaml`` (project or user level) with a Redis ``vectorstore``."""
    text = f"vectorstore:\n  provider: redis\n  connection_string: {json.dumps(url)}\n"
    if index:
        text += f"  index_name: {index}\n"
    write(path, text)


def holodeck_json(
    *args: str, cwd: Path, env: dict[str, str] | None = None
) -> tuple[dict[str, Any], subprocess.CompletedProcess[str]]:
    """Run a ``--json`` command that must succeed; its parsed stdout and the raw result."""
    result = run_holodeck(*args, "--json", cwd=cwd, env=env)
    assert result.returncode == 0, result.stdout + result.stderr
    return json.loads(result.stdout), result


def snapshot(url: str, index: str, tenant: str, library: str) -> dict[str, Any]:
    """What one library holds in a Redis index: document states and every chunk with vector."""
    adapter = RedisIndexAdapter(url, index)
    try:
        states = {
            d: (s.content_hash, s.chunk_count, s.size, s.mtime)
            for d, s in adapter.doc_states(tenant, library).items()
        }
        chunks: dict[str, tuple[Any, ...]] = {}
        for doc in adapter.doc_ids(tenant, library) | set(states):
            for rec in adapter.get_doc_chunks(tenant, library, doc):
                chunks[rec.chunk_id] = (
                    rec.doc_id, rec.book_id, rec.chunk_index, rec.content, rec.source_path,
                    rec.content_hash, rec.embedding_model, rec.vector,
                )  # fmt: skip
        return {
            "states": states,
            "chunks": chunks,
            "count": adapter.count(tenant, library),
            "total": adapter.total_count(),
            "info": adapter.describe(),
        }
    finally:
        adapter.close()


def assert_same_library(got: dict[str, Any], want: dict[str, Any]) -> None:
    """Two snapshots hold the same documents, chunks, texts and (to 1e-4) vectors."""
    assert got["info"] == want["info"]
    assert got["states"] == want["states"]
    assert got["count"] == want["count"] == len(want["chunks"])
    assert got["total"] == want["total"]
    assert set(got["chunks"]) == set(want["chunks"])
    for chunk_id, wanted in want["chunks"].items():
        have = got["chunks"][chunk_id]
        assert have[:-1] == wanted[:-1], chunk_id
        np.testing.assert_allclose(have[-1], wanted[-1], atol=1e-4)
