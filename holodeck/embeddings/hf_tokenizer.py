"""Token counting with a Hugging Face ``tokenizers`` tokenizer, as a local model reads text.

The chunker counts every chunk with the tokenizer of the model that embeds it; the counter
can keep the ids it counted, so the model takes them instead of tokenizing the same text
again.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from pathlib import Path

import numpy as np
from tokenizers import Tokenizer

from holodeck.errors import EmbeddingError


class HFTokenCounter:
    """``TokenCounter`` over a Hugging Face ``tokenizers`` tokenizer, without truncation.

    Truncation is off so counts are exact for texts of any length (a chunk that counts
    ``<= max_tokens`` is read entirely by the model). The embedder's own counter keeps the
    token ids of the last texts it counted (``keep``): the chunker counts every chunk, and
    the model then takes those ids instead of tokenizing the same text a second time.
    """

    def __init__(self, tokenizer: Tokenizer, keep: int = 0) -> None:
        tokenizer.no_truncation()
        tokenizer.no_padding()
        self._tokenizer = tokenizer
        self._special_tokens = tokenizer.num_special_tokens_to_add(is_pair=False)
        self._keep = keep
        self._kept: OrderedDict[str, np.ndarray] = OrderedDict()
        self._kept_lock = threading.Lock()

    @classmethod
    def from_file(cls, path: Path, keep: int = 0) -> HFTokenCounter:
        """Counter for a ``tokenizer.json``, keeping the ids of the last ``keep`` texts."""
        return cls(_load_tokenizer(path), keep)

    def count(self, text: str) -> int:
        """Tokens the model sees for ``text``, special tokens included."""
        ids = self._tokenizer.encode(text).ids
        if self._keep:
            with self._kept_lock:
                self._kept[text] = np.asarray(ids, dtype=np.int64)
                if len(self._kept) > self._keep:
                    self._kept.popitem(last=False)
        return len(ids)

    def take(self, text: str) -> np.ndarray | None:
        """The ids of ``text`` if it was among the last texts counted (then forgotten)."""
        with self._kept_lock:
            return self._kept.pop(text, None)

    def offsets(self, text: str) -> list[tuple[int, int]]:
        """Character span of each token, special tokens excluded."""
        return list(self._tokenizer.encode(text, add_special_tokens=False).offsets)

    @property
    def special_tokens(self) -> int:
        """Special tokens added to every input (2 for BERT: [CLS] and [SEP])."""
        return self._special_tokens


def _load_tokenizer(path: Path) -> Tokenizer:
    """A ``tokenizers`` tokenizer from a ``tokenizer.json``; EmbeddingError if unusable."""
    try:
        return Tokenizer.from_file(str(path))
    except Exception as e:  # tokenizers raises plain Exception for bad files
        raise EmbeddingError(f"cannot load tokenizer {path}: {e}") from e
