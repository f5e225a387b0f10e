"""Opening a local ONNX embedding model: its file hashed and verified, sessions on it, and
what its inputs and output are.

The bytes hashed are the bytes run: the file is read, checked against the expected hash and
the one first seen, and sessions are opened on those bytes. A model holodeck cannot use
(inputs it cannot feed, no token-embedding output, vectors of the wrong width) is refused
here, before anything is embedded; a custom model's token limit is read from its folder.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from holodeck.embeddings.hf_tokenizer import _load_tokenizer
from holodeck.errors import EmbeddingError

if TYPE_CHECKING:
    import onnxruntime

#: Max tokens of a custom model whose files do not say.
DEFAULT_MAX_TOKENS = 512

_INPUT_NAMES = ("input_ids", "attention_mask", "token_type_ids")
_INT_TYPES: dict[str, type[np.signedinteger[Any]]] = {
    "tensor(int64)": np.int64,
    "tensor(int32)": np.int32,
}


@dataclass(frozen=True)
class ModelIO:
    """How a model is fed and read: the types of its integer inputs, the output used (a
    ``sentence_embedding`` is pooled already) and its vector width, when the model fixes it."""

    input_types: dict[str, type[np.signedinteger[Any]]]
    output_name: str
    pooled_output: bool
    dimensions: int | None


class ModelFile:
    """One ``model.onnx``: its sha256, its verified bytes, and sessions opened on them.

    ``fix_hint`` ends every message about a file that is missing, damaged or unusable.
    """

    def __init__(self, path: Path, expected_sha256: str | None, fix_hint: str) -> None:
        self.path = path
        self.expected_sha256 = expected_sha256
        self.fix_hint = fix_hint
        #: The hash first seen (for the model id, or when the model was first read).
        self.sha256: str | None = None

    def hash(self) -> str:
        """sha256 of the model file, streamed (for the id, before the model is needed)."""
        try:
            with self.path.open("rb") as f:
                return hashlib.file_digest(f, "sha256").hexdigest()
        except OSError as e:
            raise EmbeddingError(f"cannot read embedding model {self.path}: {e}") from e

    def verified_bytes(self) -> bytes:
        """The model file's bytes, checked against the expected and the first-seen hash."""
        try:
            data = self.path.read_bytes()
        except OSError as e:
            raise EmbeddingError(
                f"cannot read embedding model {self.path}: {e}; {self.fix_hint}"
            ) from e
        sha256 = hashlib.sha256(data).hexdigest()
        if self.expected_sha256 is not None and sha256 != self.expected_sha256:
            raise EmbeddingError(
                f"embedding model {self.path} is damaged or replaced (sha256 "
                f"{sha256[:12]}…, expected {self.expected_sha256[:12]}…); {self.fix_hint}"
            )
        if self.sha256 is not None and sha256 != self.sha256:
            raise EmbeddingError(
                f"embedding model {self.path} changed while holodeck was running; re-run"
            )
        self.sha256 = sha256
        return data

    def open_session(
        self, data: bytes, threads: int, optimize: bool = True
    ) -> onnxruntime.InferenceSession:
        """A session on ``data`` using ``threads`` threads (0: one per core), its graph
        optimised by onnxruntime unless ``optimize`` is off."""
        import onnxruntime  # slow to import: only when a model is really needed

        options = onnxruntime.SessionOptions()
        options.intra_op_num_threads = threads
        if not optimize:
            options.graph_optimization_level = onnxruntime.GraphOptimizationLevel.ORT_DISABLE_ALL
        options.log_severity_level = 3  # errors only: warnings about optimisations are noise
        # Its threads wait for work asleep, not spinning: spinning kept both cores busy for a
        # while after each query's embedding, slowing the search that follows it, and gained
        # nothing measurable on an ingest's batches.
        options.add_session_config_entry("session.intra_op.allow_spinning", "0")
        try:
            session = onnxruntime.InferenceSession(
                data, sess_options=options, providers=["CPUExecutionProvider"]
            )
        except Exception as e:  # onnxruntime raises its own exception types
            raise EmbeddingError(
                f"cannot load embedding model {self.path}: {e}; {self.fix_hint}"
            ) from e
        return session

    def inspect(self, session: onnxruntime.InferenceSession, dimensions: int | None) -> ModelIO:
        """Map the model's inputs and choose its output; fail early on an unusable model.

        ``dimensions``, when known, is the width the vectors must have.
        """
        types: dict[str, type[np.signedinteger[Any]]] = {}
        for node in session.get_inputs():
            if node.name not in _INPUT_NAMES or node.type not in _INT_TYPES:
                raise EmbeddingError(
                    f"embedding model {self.path} has an unsupported input "
                    f"{node.name!r} ({node.type}); supported: integer {', '.join(_INPUT_NAMES)}"
                )
            types[node.name] = _INT_TYPES[node.type]
        if "input_ids" not in types:
            raise EmbeddingError(f"embedding model {self.path} has no 'input_ids' input")

        outputs = {node.name: node for node in session.get_outputs()}
        # A model's own pooling ("sentence_embedding": batch x dims, e.g. CLS pooling for some
        # models) beats ours; otherwise mean-pool the token embeddings (batch x seq x dims).
        pooled = outputs.get("sentence_embedding")
        tokens = [node for node in outputs.values() if len(node.shape) == 3]
        tokens.sort(key=lambda node: node.name not in ("last_hidden_state", "token_embeddings"))
        if pooled is not None and len(pooled.shape) == 2:
            chosen = pooled
        elif tokens:
            chosen = tokens[0]
        else:
            raise EmbeddingError(
                f"embedding model {self.path} has no token-embedding output "
                f"(found: {', '.join(outputs)}); expected 'last_hidden_state'"
            )
        width = chosen.shape[-1]
        if isinstance(width, int):
            if dimensions is not None and width != dimensions:
                raise EmbeddingError(
                    f"embedding model {self.path} makes {width}-dimensional vectors, "
                    f"expected {dimensions}; {self.fix_hint}"
                )
            dimensions = width
        return ModelIO(types, chosen.name, chosen is pooled, dimensions)


def read_max_tokens(tokenizer_path: Path) -> int:
    """A custom model's limit: sentence-transformers config, tokenizer truncation or 512."""
    folder = tokenizer_path.parent
    st_config = _read_json(folder / "sentence_bert_config.json").get("max_seq_length")
    if isinstance(st_config, int) and st_config > 0:
        return st_config
    truncation = _load_tokenizer(tokenizer_path).truncation
    if truncation and truncation.get("max_length"):
        return int(truncation["max_length"])
    configured = _read_json(folder / "tokenizer_config.json").get("model_max_length")
    if isinstance(configured, int) and 0 < configured <= 1_000_000:  # HF uses 1e30 for "none"
        return configured
    return DEFAULT_MAX_TOKENS


def _read_json(path: Path) -> dict[str, Any]:
    """An optional JSON config file; {} when absent."""
    if not path.is_file():
        return {}
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as e:
        raise EmbeddingError(f"cannot read {path}: {e}") from e
    return data if isinstance(data, dict) else {}
