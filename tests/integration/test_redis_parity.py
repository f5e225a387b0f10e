"""Done-when 1: ingestion and search with Redis give the memory adapter's results.

For HNSW and FLAT and each of COSINE, L2 and IP, the same corpus ingested into Redis and into
the embedded default (the memory adapter plus persistence) gives the same top results with
the same scores (to 1e-3), through the real ingestion pipeline and the same local model.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from cli_helpers import run_holodeck, write
from rankings import assert_same_ranking
from redis_project import CORPUS, QUERIES, database_yaml, holodeck_json, write_docs

from holodeck.config.loader import load_project
from holodeck.embeddings.local import LocalOnnxEmbedder
from holodeck.tools.vectorstore_tool import VectorStoreTool

pytestmark = pytest.mark.redis

K = 5
#: Small chunks, so most documents have several and the ranking has something to order.
CHUNKING = "    chunk_size: 32\n    chunk_overlap: 8\n"

Ranking = list[tuple[str, float]]
#: Redis computes distances in float32 its own way (L2 and IP converted to a similarity).
PARITY_TOL = 1e-3


def make_tool(root: Path, database: str, embedder: LocalOnnxEmbedder) -> VectorStoreTool:
    """A project at ``root`` with one tool ``kb`` over the corpus, and that tool."""
    write_docs(root / "docs", CORPUS)
    write(
        root / "agent.yaml",
        "name: parity\ntools:\n  - type: vectorstore\n    name: kb\n    source: docs\n"
        + CHUNKING
        + database,
    )
    project = load_project(root / "agent.yaml")
    return VectorStoreTool(project.tools[0], project, embedder)


def rankings(tool: VectorStoreTool) -> dict[str, Ranking]:
    """Per query, the top-K chunk ids with their scores by meaning (the vectors are the same
    on both stores, so these must be too), and the best chunk of the default hybrid mode
    (its keyword side is each backend's own BM25, so only the winner must agree)."""
    out = {}
    for query in QUERIES:
        results, _ = tool.find(query, top_k=K, mode="semantic")
        out[query] = [(r.chunk_id, r.score) for r in results]
        hybrid, _ = tool.find(query, top_k=1)
        out[f"hybrid: {query}"] = [(hybrid[0].doc_id, 0.0)]
    return out


@pytest.fixture(scope="module")
def embedder() -> LocalOnnxEmbedder:
    """One model for every tool of the module (loading it is the slow part)."""
    return LocalOnnxEmbedder.builtin()


@pytest.fixture(scope="module")
def reference(
    tmp_path_factory: pytest.TempPathFactory, embedder: LocalOnnxEmbedder
) -> Iterator[dict[str, Ranking]]:
    """The embedded default's rankings, ingested once for the module."""
    root = tmp_path_factory.mktemp("reference")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("HOME", str(root / "home"))  # no user-level config may redirect it
        tool = make_tool(root, "", embedder)
        tool.initialize_sync()
    assert tool.backend == "local"
    ranked = rankings(tool)
    # The corpus and queries make sense: each query finds its own document first.
    for query, doc in zip(QUERIES, CORPUS, strict=True):
        results, _ = tool.find(query, top_k=1)
        assert results[0].doc_id == doc, (query, results[0].doc_id)
    tool.close()
    yield ranked


@pytest.mark.parametrize("algorithm", ["HNSW", "FLAT"])
@pytest.mark.parametrize("metric", ["COSINE", "L2", "IP"])
def test_redis_ranks_like_the_memory_adapter(
    tmp_path: Path,
    redis_url: str,
    redis_index_name: str,
    embedder: LocalOnnxEmbedder,
    reference: dict[str, Ranking],
    algorithm: str,
    metric: str,
) -> None:
    tool = make_tool(
        tmp_path, database_yaml(redis_url, redis_index_name, algorithm, metric), embedder
    )
    tool.initialize_sync()
    assert tool.backend == "redis" and tool.fallback_reason is None
    assert tool.summary is not None and tool.summary.new == len(CORPUS)
    stats = tool.store.adapter.stats(tool.project.tenant_id, "kb")
    assert (stats["algorithm"], stats["metric"]) == (algorithm, metric)
    assert stats["chunks"] == tool.summary.chunks_total > len(CORPUS)
    got = rankings(tool)
    tool.close()
    for query in QUERIES:
        assert_same_ranking(got[query], reference[query], tol=PARITY_TOL)


def test_cli_search_on_redis_equals_the_embedded_default(
    tmp_path: Path, redis_url: str, redis_index_name: str
) -> None:
    """The same check through ``holodeck ingest`` and ``holodeck search --json``."""
    write_docs(tmp_path / "docs", CORPUS)
    tool = "  - type: vectorstore\n    name: {name}\n    source: docs\n" + CHUNKING
    write(
        tmp_path / "agent.yaml",
        "name: parity\ntools:\n"
        + tool.format(name="on_redis")
        + database_yaml(redis_url, redis_index_name)
        + tool.format(name="on_local"),
    )
    ingested, _ = holodeck_json("ingest", cwd=tmp_path)
    backends = {t["tool"]: (t["backend"], t["fallback"]) for t in ingested["tools"]}
    assert backends == {"on_redis": ("redis", None), "on_local": ("local", None)}
    result = run_holodeck(
        "search", "proofing dough in the fridge", "--top-k", str(K), "--json",
        "--mode", "semantic", cwd=tmp_path,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    found = {t["tool"]: t["results"] for t in json.loads(result.stdout)["tools"]}
    on_redis = [((r["doc_id"], r["chunk_index"]), r["score"]) for r in found["on_redis"]]
    on_local = [((r["doc_id"], r["chunk_index"]), r["score"]) for r in found["on_local"]]
    assert on_redis[0][0][0] == "kitchen/bread.md"
    assert_same_ranking(
        [(str(key), score) for key, score in on_redis],
        [(str(key), score) for key, score in on_local],
        tol=PARITY_TOL,
    )
