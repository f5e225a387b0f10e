"""Helpers for the chat tests: an agent.yaml with a model: block pointing at the fake server."""

from __future__ import annotations

from pathlib import Path


def with_model(
    project: Path, url: str, api_key: str | None = "${OPENAI_API_KEY}", **extra: str
) -> Path:
    """agent.yaml: the example with a model: block pointing at ``url``, local embeddings.

    Local embeddings keep the example's real retrieval; ``extra`` adds keys to model:.
    """
    text = (project / "agent.yaml.example").read_text(encoding="utf-8")
    fields = ", ".join(
        [
            "provider: openai",
            "name: fake-model",
            f'endpoint: "{url}"',
            *([f'api_key: "{api_key}"'] if api_key else []),
            *[f"{k}: {v}" for k, v in extra.items()],
        ]
    )
    text = text.replace("\ntools:\n", f"\nmodel: {{{fields}}}\n\ntools:\n", 1)
    text = text.replace(
        "    # embedding_model: all-MiniLM-L6-v2", "    embedding_model: all-MiniLM-L6-v2", 1
    )
    path = project / "agent.yaml"
    path.write_text(text, encoding="utf-8")
    return path
