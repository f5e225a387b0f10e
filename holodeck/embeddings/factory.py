"""Turns the ``embedding_model`` setting into an embedder.

One place decides what a model name means, so ingestion and search always agree. Remote
embedders (OpenAI-compatible) are added here next to the local ones.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path

from holodeck.config.llm import ModelConfig
from holodeck.embeddings.base import Embedder
from holodeck.embeddings.local import (
    BUILTIN_MODEL_ID,
    MODEL_FILE,
    TOKENIZER_FILE,
    LocalOnnxEmbedder,
)
from holodeck.errors import ConfigError

#: Names that select the built-in local model (all-MiniLM-L6-v2, int8 ONNX).
LOCAL_MODEL_ALIASES: frozenset[str] = frozenset(
    {
        "all-MiniLM-L6-v2",
        "sentence-transformers/all-MiniLM-L6-v2",
        BUILTIN_MODEL_ID,
    }
)


def is_local_model_name(name: str | None) -> bool:
    """Whether ``name`` selects the built-in local model (None means the default: it does)."""
    return name is None or name in LOCAL_MODEL_ALIASES


def is_local_model(embedding_model: str | None, project_root: Path) -> bool:
    """Whether ``embedding_model`` runs on this machine (the built-in model or a folder)."""
    return is_local_model_name(embedding_model) or _is_local_path(embedding_model, project_root)


def make_local_embedder(embedding_model: str | None, project_root: Path) -> Embedder:
    """The local embedder ``embedding_model`` names: the built-in one or a model folder.

    A folder is resolved against ``project_root`` and must hold ``model.onnx`` and
    ``tokenizer.json``. Building is cheap; the model loads on first use.
    """
    if is_local_model_name(embedding_model):
        return LocalOnnxEmbedder.builtin()
    assert embedding_model is not None
    folder = Path(project_root) / Path(embedding_model).expanduser()
    if folder.is_dir():
        return LocalOnnxEmbedder.from_folder(folder)
    raise ConfigError(
        f"embedding_model {embedding_model!r} is neither a local model name "
        f"({', '.join(sorted(LOCAL_MODEL_ALIASES))}) nor a folder holding "
        f"{MODEL_FILE} and {TOKENIZER_FILE} (looked in {folder})"
    )


def make_embedder(
    embedding_model: str | None, project_root: Path, model: ModelConfig | None
) -> Embedder:
    """The embedder for a tool: local names and folders run here, anything else remotely.

    A remote name goes to the provider of ``model`` (OpenAI, Azure OpenAI deployment, Ollama
    model) through its OpenAI-compatible embeddings API; without a ``model:`` it must be local.
    """
    if is_local_model(embedding_model, project_root):
        return make_local_embedder(embedding_model, project_root)
    assert embedding_model is not None
    if model is None:
        raise ConfigError(
            f"embedding_model {embedding_model!r} needs a provider: add a model: section to "
            f"agent.yaml, or use {', '.join(sorted(LOCAL_MODEL_ALIASES))} or a model folder"
        )
    make = REMOTE.get(model.provider)
    if make is None:
        raise ConfigError(
            f"embedding_model {embedding_model!r}: provider {model.provider} offers no "
            f"embeddings; use {', '.join(sorted(REMOTE))}"
        )
    from holodeck.config.envsubst import environment_for

    return make(embedding_model, model, environment_for(project_root))


def _openai_compatible(name: str, model: ModelConfig, env: Mapping[str, str]) -> Embedder:
    """An embedder on the OpenAI embeddings API of ``model``'s provider (imported here: the
    client loads slowly, and a local model needs none)."""
    from holodeck.embeddings.remote import OpenAIEmbedder

    return OpenAIEmbedder.from_config(name, model, env)


#: The remote embedder each ``model.provider`` gives (a new provider: its module and one
#: line here). All of today's speak the OpenAI embeddings API; anthropic offers none.
REMOTE: dict[str, Callable[[str, ModelConfig, Mapping[str, str]], Embedder]] = {
    "openai": _openai_compatible,
    "azure_openai": _openai_compatible,
    "ollama": _openai_compatible,
}


def _is_local_path(name: str | None, project_root: Path) -> bool:
    """Whether ``name`` is written as a path (``./m``, ``/m``, ``~/m``) or names a folder."""
    if name is None:
        return False
    return name.startswith((".", "/", "~")) or (Path(project_root) / name).is_dir()
