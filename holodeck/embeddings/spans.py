"""An ``embeddings`` span (GenAI semantic conventions) around each call to an embedding model.

Ingest calls the model from worker threads: the span is made the child of the span that
was current where the call was queued.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from holodeck import tracing
from holodeck.embeddings.base import Embedder

Embed = Callable[..., np.ndarray]


def traced_embed(embedder: Embedder) -> Embed:
    """``embedder.embed`` (``tokens``: how many the texts hold, when known), each call in
    an ``embeddings {model}`` span (tracing on)."""
    if not tracing.on():
        return lambda texts, tokens=None: embedder.embed(texts)
    parent = tracing.current()

    def embed(texts: Sequence[str], tokens: int | None = None) -> np.ndarray:
        attributes = {
            tracing.OPERATION: "embeddings",
            tracing.REQUEST_MODEL: embedder.model_id,
            tracing.INPUT_TOKENS: tokens,
            "holodeck.embeddings.texts": len(texts),
        }
        with tracing.span(f"embeddings {embedder.model_id}", attributes, parent=parent) as span:
            vectors = embedder.embed(texts)
            span.set("holodeck.embeddings.dimensions", int(vectors.shape[1]))
            return vectors

    return embed
