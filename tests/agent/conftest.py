"""One small knowledge base, ingested once per module, and the fake LLM server."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from cli_helpers import write
from fake_openai import FakeOpenAI

from holodeck.config.loader import Project, load_project
from holodeck.tools.vectorstore_tool import VectorStoreTool, build_tools

API_KEY = "sk-test-0123456789abcdef"

DOCS = {
    "guides/retries.md": """
        # Retries
        A failed job is retried three times in total, with exponential backoff starting at
        30 seconds. Set retry.max_attempts to change it.
        """,
    "guides/auth.md": """
        # Authentication
        API requests carry a bearer token in the Authorization header. Tokens expire after
        12 hours and are created with `skyline token create`.
        """,
    "operations/backup.md": """
        # Backups
        The scheduler database is backed up every night at 02:00 to the configured bucket.
        """,
}


def make_project(root: Path, model: str) -> Path:
    """A project with DOCS under docs/ and an agent.yaml whose ``model:`` block is ``model``."""
    for rel, text in DOCS.items():
        write(root / "docs" / rel, text)
    return write(
        root / "agent.yaml",
        f"""
        name: test-agent
        {model}
        instructions:
          inline: You answer from the knowledge base.
        tools:
          - type: vectorstore
            name: knowledge_base
            description: Semantic search over product documentation
            source: docs/
            embedding_model: all-MiniLM-L6-v2
            top_k: 2
        """,
    )


@pytest.fixture(scope="module")
def server() -> Iterator[FakeOpenAI]:
    """One fake LLM server per module; ``reset`` between tests."""
    with FakeOpenAI() as fake:
        yield fake


@pytest.fixture
def llm(server: FakeOpenAI) -> FakeOpenAI:
    """The module's server with no scripted replies and no recorded requests."""
    server.reset()
    return server


@pytest.fixture(scope="module")
def kb(
    tmp_path_factory: pytest.TempPathFactory, server: FakeOpenAI
) -> Iterator[tuple[Project, list[VectorStoreTool]]]:
    """The project (model: openai at the fake server) and its initialized tools."""
    root = tmp_path_factory.mktemp("agent")
    model = (
        "model: {provider: openai, name: fake-model, endpoint: '"
        + server.url
        + "', api_key: '${OPENAI_API_KEY}'}"
    )
    path = make_project(root, model)
    (root / ".env").write_text(f"OPENAI_API_KEY={API_KEY}\n", encoding="utf-8")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("HOME", str(root / "home"))
        mp.delenv("OPENAI_API_KEY", raising=False)
        project = load_project(path)
        tools = build_tools(project)
        for tool in tools:
            tool.initialize_sync()
        yield project, tools
        for tool in tools:
            tool.close()


from fake_openai import fake_openai  # noqa: E402, F401  (the per-test server fixture)
