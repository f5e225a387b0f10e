"""The small interface every embedder implements, local or remote.

Ingestion and search only need: which model made a vector (so vectors of two models are
never mixed), how long vectors are, how many tokens the model reads, a token counter that
matches the model's own tokenizer, and a batch call.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol, runtime_checkable

import numpy as np


@runtime_checkable
class TokenCounter(Protocol):
    """Counts and locates tokens exactly as the embedding model's tokenizer does."""

    def count(self, text: str) -> int:
        """Tokens the model sees for ``text`` (including any special tokens it adds)."""
        ...

    def offsets(self, text: str) -> list[tuple[int, int]]:
        """Character span ``(start, end)`` of each token of ``text``, without special tokens."""
        ...

    @property
    def special_tokens(self) -> int:
        """How many special tokens the model adds around every input (e.g. 2 for BERT)."""
        ...


@runtime_checkable
class Embedder(Protocol):
    """Turns texts into vectors; every vector is float32 and L2-normalised."""

    @property
    def model_id(self) -> str:
        """Stable id stored with every record, e.g. ``all-MiniLM-L6-v2-onnx-int8``."""
        ...

    @property
    def dimensions(self) -> int:
        """Length of every vector this embedder returns."""
        ...

    @property
    def max_tokens(self) -> int:
        """Most tokens (special tokens included) the model reads from one input."""
        ...

    @property
    def tokens(self) -> TokenCounter:
        """The model's own tokenizer, for chunking."""
        ...

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """Vectors for ``texts``: a ``(len(texts), dimensions)`` float32 array, rows normalised.

        Raises ``holodeck.errors.EmbeddingError`` on failure; never returns zero vectors.
        """
        ...
