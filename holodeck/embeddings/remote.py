"""Embeddings from an OpenAI-compatible API: OpenAI, Azure OpenAI, Ollama or any such server.

The same ``Embedder`` interface as the local model, so ingestion and search do not care
where vectors come from. Requests respect the API's limits (2,048 inputs and 300,000 tokens
each), a few run at once, and the openai client retries 429 / 5xx / timeouts with exponential
backoff and the server's Retry-After; 401 / 403 / 404 fail at once. Every vector is checked
(length, finite, non-zero) and L2-normalised: a bad response is an error, never stored.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from concurrent.futures import FIRST_EXCEPTION, ThreadPoolExecutor, wait

import numpy as np
import openai

from holodeck.config.llm import ModelConfig
from holodeck.embeddings.catalog import facts
from holodeck.embeddings.tiktoken_offline import TiktokenCounter
from holodeck.errors import EmbeddingError
from holodeck.providers import (
    Connection,
    connection_for,
    describe_error,
    make_sync_client,
)

log = logging.getLogger("holodeck.embeddings")

#: The embeddings API takes at most this many inputs per request.
MAX_INPUTS = 2048
#: ... and at most 300,000 tokens summed over them; keep a margin for tokenizer differences.
MAX_REQUEST_TOKENS = 250_000
#: Requests in flight at once: enough to hide latency, few enough to stay under rate limits.
IN_FLIGHT = 4
#: Tokens read per input when the model is unknown (an Ollama model, an Azure deployment).
UNKNOWN_MAX_TOKENS = {"azure_openai": 8191, "openai": 8191, "ollama": 512}


class OpenAIEmbedder:
    """``Embedder`` backed by ``POST /embeddings`` of an OpenAI-compatible provider."""

    def __init__(
        self,
        model: str,
        client: openai.OpenAI,
        conn: Connection,
        *,
        dimensions: int | None = None,
        max_tokens: int | None = None,
        batch_size: int = MAX_INPUTS,
        in_flight: int = IN_FLIGHT,
    ) -> None:
        """``dimensions`` None: learnt from the first response (one request if asked first)."""
        if not 1 <= batch_size <= MAX_INPUTS:
            raise ValueError(f"batch_size must be 1..{MAX_INPUTS}, got {batch_size}")
        known = facts(model)
        self._model = model
        self._client = client
        self._conn = conn
        self._dimensions = dimensions or (known.dimensions if known else None)
        self._max_tokens = max_tokens or (
            known.max_tokens if known else UNKNOWN_MAX_TOKENS.get(conn.provider, 512)
        )
        self._batch_size = batch_size
        self._in_flight = max(1, in_flight)
        self._counter: TiktokenCounter | None = None

    @classmethod
    def from_config(
        cls, embedding_model: str, model: ModelConfig, env: Mapping[str, str]
    ) -> OpenAIEmbedder:
        """The embedder of ``model.provider`` for ``embedding_model`` (a deployment on Azure)."""
        conn = connection_for(model, env)
        return cls(embedding_model, make_sync_client(conn), conn)

    # -- Embedder protocol -------------------------------------------------------------

    @property
    def model_id(self) -> str:
        """The model name as the provider knows it (stored with every vector)."""
        return self._model

    @property
    def dimensions(self) -> int:
        """Vector length: from the catalog, else asked of the API once."""
        if self._dimensions is None:
            self.embed(["dimensions"])
        assert self._dimensions is not None
        return self._dimensions

    @property
    def max_tokens(self) -> int:
        """Tokens the model reads per input (8191 for OpenAI's models)."""
        return self._max_tokens

    @property
    def tokens(self) -> TiktokenCounter:
        """tiktoken's encoding for the model (cl100k_base for names tiktoken does not know)."""
        if self._counter is None:
            self._counter = TiktokenCounter.for_model(self._model)
        return self._counter

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """L2-normalised float32 vectors for ``texts``, in input order."""
        if isinstance(texts, str):
            raise TypeError("embed() takes a sequence of texts, not one str")
        texts = list(texts)
        if not texts:
            return np.zeros((0, self.dimensions), dtype=np.float32)
        empty = [i for i, text in enumerate(texts) if not text.strip()]
        if empty:
            raise EmbeddingError(f"input {empty[0]} is empty; {self._model} cannot embed it")
        batches = self._batches(texts)
        if self._dimensions is None:  # learn the length from the first batch, then fan out
            first = self._request(texts[batches[0][0] : batches[0][1]])
            parts = {0: first}
            rest = batches[1:]
        else:
            parts, rest = {}, batches
        if rest:
            parts.update(self._parallel(texts, rest, offset=len(batches) - len(rest)))
        return np.concatenate([parts[i] for i in range(len(batches))], axis=0)

    # -- internals ---------------------------------------------------------------------

    def _batches(self, texts: list[str]) -> list[tuple[int, int]]:
        """``(start, end)`` slices of at most ``batch_size`` inputs and MAX_REQUEST_TOKENS."""
        out: list[tuple[int, int]] = []
        start, tokens = 0, 0
        for i, text in enumerate(texts):
            n = self.tokens.count(text)
            if i > start and (i - start >= self._batch_size or tokens + n > MAX_REQUEST_TOKENS):
                out.append((start, i))
                start, tokens = i, 0
            tokens += n
        out.append((start, len(texts)))
        return out

    def _parallel(
        self, texts: list[str], batches: list[tuple[int, int]], offset: int
    ) -> dict[int, np.ndarray]:
        """Run ``batches`` with a few requests in flight; the first failure stops the rest."""
        if len(batches) == 1:
            start, end = batches[0]
            return {offset: self._request(texts[start:end])}
        with ThreadPoolExecutor(max_workers=min(self._in_flight, len(batches))) as pool:
            futures = {
                pool.submit(self._request, texts[start:end]): offset + n
                for n, (start, end) in enumerate(batches)
            }
            done, pending = wait(futures, return_when=FIRST_EXCEPTION)
            for future in pending:
                future.cancel()
            for future in done:
                exc = future.exception()
                if exc is not None:
                    raise exc
            return {futures[f]: f.result() for f in futures}

    def _request(self, batch: list[str]) -> np.ndarray:
        """One API call: vectors for ``batch`` checked and normalised, or EmbeddingError."""
        try:
            response = self._client.embeddings.create(
                model=self._model, input=batch, encoding_format="float"
            )
        except openai.OpenAIError as exc:
            line = describe_error(exc, self._conn, self._model, what="embedding model")
            raise EmbeddingError(line) from exc
        data = sorted(response.data, key=lambda item: item.index)
        if len(data) != len(batch):
            raise EmbeddingError(
                f"{self._conn.label} returned {len(data)} embeddings for {len(batch)} inputs"
            )
        lengths = {len(item.embedding) for item in data}
        if len(lengths) != 1:
            raise EmbeddingError(
                f"{self._conn.label} returned vectors of mixed lengths {sorted(lengths)} "
                f"for {self._model}"
            )
        (width,) = lengths
        if self._dimensions is None:
            self._dimensions = width
            log.debug("%s makes %d-dimensional vectors", self._model, width)
        elif width != self._dimensions:
            raise EmbeddingError(
                f"{self._conn.label} returned {width}-dimensional vectors for {self._model}, "
                f"expected {self._dimensions}"
            )
        vectors = np.asarray([item.embedding for item in data], dtype=np.float32)
        norms = np.linalg.norm(vectors, axis=1)
        bad = ~np.isfinite(vectors).all(axis=1) | ~np.isfinite(norms) | (norms == 0)
        if bad.any():
            raise EmbeddingError(
                f"{self._conn.label} returned a zero or non-finite vector for {self._model} "
                f"(input {int(np.argmax(bad))} of its batch); refusing to store it"
            )
        return vectors / norms[:, None]
