"""What is known about embedding models without loading them: vector length, tokens read.

Lets ``config show`` and the index checks answer instantly; the model itself loads only
when something must be embedded.
"""

from __future__ import annotations

import re
from dataclasses import dataclass


@dataclass(frozen=True)
class ModelFacts:
    """Static facts about a named embedding model."""

    dimensions: int
    max_tokens: int
    kind: str  # "local" or "openai"


LOCAL_DEFAULT = "all-MiniLM-L6-v2"
LOCAL_MODEL_ID = "all-MiniLM-L6-v2-onnx-int8"

KNOWN_MODELS: dict[str, ModelFacts] = {
    LOCAL_DEFAULT: ModelFacts(384, 256, "local"),
    "sentence-transformers/all-MiniLM-L6-v2": ModelFacts(384, 256, "local"),
    LOCAL_MODEL_ID: ModelFacts(384, 256, "local"),
    "text-embedding-3-small": ModelFacts(1536, 8191, "openai"),
    "text-embedding-3-large": ModelFacts(3072, 8191, "openai"),
    "text-embedding-ada-002": ModelFacts(1536, 8191, "openai"),
}


def setting_for(model_id: str) -> str | None:
    """The ``embedding_model:`` value that selects the model stored as ``model_id``; None for
    a model folder (its id is the folder's name and a hash of its file, not its path)."""
    if model_id == LOCAL_MODEL_ID:
        return LOCAL_DEFAULT
    if model_id not in KNOWN_MODELS and re.search(r"-[0-9a-f]{12}$", model_id):
        return None
    return model_id


def facts(model: str) -> ModelFacts | None:
    """Known facts about ``model``, or None (a custom folder, an Ollama or Azure name)."""
    return KNOWN_MODELS.get(model)


def effective_chunk_size(model: str, requested: int) -> int:
    """The chunk size actually used: never more tokens than the model reads."""
    known = facts(model)
    return min(requested, known.max_tokens) if known else requested
