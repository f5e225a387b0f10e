"""Remote embeddings (OpenAI-compatible) against the fake server: the real openai client."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
from cli_helpers import run_holodeck, write
from fake_openai import FakeOpenAI, error, unit_vector, vectors

from holodeck.config.llm import ModelConfig
from holodeck.config.loader import load_project
from holodeck.embeddings.base import Embedder
from holodeck.embeddings.factory import make_embedder
from holodeck.embeddings.local import LocalOnnxEmbedder
from holodeck.embeddings.remote import MAX_INPUTS, OpenAIEmbedder
from holodeck.embeddings.tiktoken_offline import TiktokenCounter
from holodeck.errors import ConfigError, EmbeddingError
from holodeck.providers import Connection, make_sync_client
from holodeck.tools.vectorstore_tool import VectorStoreTool
from holodeck.vectorstore.records import indexed_text

KEY = "sk-embed-test-key"


@pytest.fixture
def server() -> Iterator[FakeOpenAI]:
    with FakeOpenAI(dimensions=8) as fake:
        yield fake


def embedder(server: FakeOpenAI, model: str = "fake-embed", **kwargs: object) -> OpenAIEmbedder:
    conn = Connection("openai", server.url, KEY, "OPENAI_API_KEY")
    return OpenAIEmbedder(model, make_sync_client(conn), conn, **kwargs)  # type: ignore[arg-type]


def expected(texts: list[str], dims: int) -> np.ndarray:
    return np.asarray([unit_vector(t, dims) for t in texts], dtype=np.float32)


def test_it_is_an_embedder(server: FakeOpenAI) -> None:
    emb = embedder(server, "text-embedding-3-small")
    assert isinstance(emb, Embedder)
    assert emb.dimensions == 1536 and emb.max_tokens == 8191  # from the catalog: no request
    assert isinstance(emb.tokens, TiktokenCounter) and emb.tokens.special_tokens == 0
    assert emb.tokens.encoding.name == "cl100k_base"
    assert server.requests == []


def test_batches_of_at_most_2048_inputs_in_order(server: FakeOpenAI) -> None:
    texts = [f"chunk number {i}" for i in range(2 * MAX_INPUTS + 5)]
    out = embedder(server, dimensions=8).embed(texts)

    sizes = sorted(len(r["input"]) for r in server.embedding_requests())
    assert sizes == [5, MAX_INPUTS, MAX_INPUTS]
    assert all(r["model"] == "fake-embed" for r in server.embedding_requests())
    assert out.shape == (len(texts), 8) and out.dtype == np.float32
    np.testing.assert_allclose(out, expected(texts, 8), atol=1e-6)  # each row its own text
    np.testing.assert_allclose(np.linalg.norm(out, axis=1), 1.0, atol=1e-6)


def test_requests_stay_under_the_token_limit(server: FakeOpenAI) -> None:
    texts = ["word " * 100_000, "word " * 100_000, "word " * 100_000]  # 300k tokens in all
    embedder(server, dimensions=8).embed(texts)
    assert sorted(len(r["input"]) for r in server.embedding_requests()) == [1, 2]


def test_retries_429_honouring_retry_after(server: FakeOpenAI) -> None:
    server.embeddings.push(error(429, "slow down", headers={"Retry-After": "1"}))
    started = time.perf_counter()
    out = embedder(server, dimensions=8).embed(["hello"])
    assert time.perf_counter() - started >= 1.0
    assert [r.status for r in server.requests] == [429, 200]
    np.testing.assert_allclose(out, expected(["hello"], 8), atol=1e-6)


def test_retries_server_errors(server: FakeOpenAI) -> None:
    server.embeddings.push(error(500), error(503, headers={"retry-after-ms": "10"}))
    embedder(server, dimensions=8).embed(["hello"])
    assert [r.status for r in server.requests] == [500, 503, 200]


@pytest.mark.parametrize(
    ("status", "words"),
    [
        (401, "refused the API key (401); check OPENAI_API_KEY"),
        (403, "denied access to embedding model 'fake-embed' (403)"),
        (404, "embedding model 'fake-embed' not found"),
    ],
)
def test_fails_fast_with_one_line(server: FakeOpenAI, status: int, words: str) -> None:
    server.embeddings.push(error(status, f"no: {KEY}"))
    with pytest.raises(EmbeddingError) as caught:
        embedder(server, dimensions=8).embed(["hello"])
    assert words in str(caught.value)
    assert KEY not in str(caught.value) and "\n" not in str(caught.value)
    assert len(server.requests) == 1  # not retried


def test_a_response_of_another_length_is_refused(server: FakeOpenAI) -> None:
    server.embeddings.push(vectors(16))
    with pytest.raises(EmbeddingError, match=r"returned 16-dimensional vectors .* expected 8"):
        embedder(server, dimensions=8).embed(["hello"])


def test_zero_vectors_are_refused(server: FakeOpenAI) -> None:
    server.embeddings.push(vectors(8, zero=True))
    with pytest.raises(EmbeddingError, match="zero or non-finite vector"):
        embedder(server, dimensions=8).embed(["hello"])


def test_empty_input_is_refused_before_any_request(server: FakeOpenAI) -> None:
    with pytest.raises(EmbeddingError, match="input 1 is empty"):
        embedder(server, dimensions=8).embed(["a", "  "])
    assert server.requests == []


def test_unknown_model_learns_its_length_from_the_api(server: FakeOpenAI) -> None:
    cfg = ModelConfig(provider="ollama", name="llama3", endpoint=server.url)
    emb = make_embedder("nomic-embed-text", Path("."), cfg)
    assert isinstance(emb, OpenAIEmbedder)
    assert emb.dimensions == 8
    assert server.embedding_requests()[0]["model"] == "nomic-embed-text"
    assert server.requests[0].path == "/v1/embeddings"


def test_factory_keeps_local_names_local(tmp_path: Path) -> None:
    cfg = ModelConfig(provider="openai", name="gpt", api_key="sk-x")
    assert isinstance(make_embedder("all-MiniLM-L6-v2", tmp_path, cfg), LocalOnnxEmbedder)
    assert isinstance(make_embedder("text-embedding-3-small", tmp_path, cfg), OpenAIEmbedder)


def _ollama_project(root: Path, server: FakeOpenAI) -> Path:
    write(root / "docs" / "a.md", "# Alpha\nThe alpha service restarts nightly.\n")
    write(root / "docs" / "b.md", "# Beta\nBeta jobs retry three times.\n")
    return write(
        root / "agent.yaml",
        f"""
        name: remote-agent
        model: {{provider: ollama, name: llama3, endpoint: "{server.url}"}}
        tools:
          - type: vectorstore
            name: kb
            source: docs/
            embedding_model: nomic-embed-text
        """,
    )


def test_index_dimensions_are_checked(tmp_path: Path, server: FakeOpenAI) -> None:
    """An index built with 8-dimensional vectors refuses a model that now makes 16."""
    path = _ollama_project(tmp_path, server)
    project = load_project(path)
    tool = VectorStoreTool(project.tools[0], project)
    tool.initialize_sync()
    assert tool.document_count == 2
    # the text the chunk was embedded as (its section's path, then its text): its vector
    results, _ = tool.find(indexed_text("# Beta\nBeta jobs retry three times.", "Beta"))
    assert results[0].source_path == "docs/b.md" and results[0].score > 0.99
    tool.close()

    server.dimensions = 16  # the same model name now answers with other vectors
    fresh = OpenAIEmbedder.from_config("nomic-embed-text", project.agent.model, {})  # type: ignore[arg-type]
    again = VectorStoreTool(project.tools[0], project, embedder=fresh)
    with pytest.raises(ConfigError, match=r"built with nomic-embed-text \(8 dims\).*16 dims") as e:
        again.initialize_sync()
    assert "embedding_model:" not in str(e.value)  # no line keeps a model that changed
    assert "documents: 2, chunks: 2" in str(e.value) and "through ollama" in str(e.value)
    again.close()


def test_cli_ingest_with_openai_embeddings(tmp_path: Path, server: FakeOpenAI) -> None:
    """The default for provider openai is text-embedding-3-small, chunked by its tokens."""
    server.dimensions = 1536
    write(tmp_path / "docs" / "a.md", "# Alpha\n" + "Alpha words. " * 300)
    write(
        tmp_path / "agent.yaml",
        f"""
        name: openai-agent
        model: {{provider: openai, name: gpt-4o-mini, endpoint: "{server.url}",
                 api_key: "${{OPENAI_API_KEY}}"}}
        tools:
          - type: vectorstore
            name: kb
            source: docs/
            chunk_size: 200
            chunk_overlap: 20
        """,
    )
    done = run_holodeck("ingest", cwd=tmp_path, env={"OPENAI_API_KEY": KEY})
    assert done.returncode == 0, done.stderr
    (request,) = server.embedding_requests()
    assert request["model"] == "text-embedding-3-small"
    assert server.requests[0].headers["authorization"] == f"Bearer {KEY}"
    counter = TiktokenCounter.for_model("text-embedding-3-small")
    assert len(request["input"]) >= 4
    assert all(counter.count(chunk) <= 200 for chunk in request["input"])


def test_cli_ingest_bad_key_is_one_line(tmp_path: Path, server: FakeOpenAI) -> None:
    server.embeddings.push(error(401, f"Incorrect API key provided: {KEY}"))
    _ollama_project(tmp_path, server)
    done = run_holodeck("ingest", cwd=tmp_path)
    assert done.returncode == 3
    assert "refused the API key (401)" in done.stderr
    assert "Traceback" not in done.stderr and KEY not in done.stderr
