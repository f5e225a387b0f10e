"""LangChain's text splitters as a script feeding a vector store would set them up for
holodeck's local model: the model's own tokenizer, 256 tokens with its two special tokens,
50 of overlap. One home for `peers_throughput.py` and `peers_chunking.py`; imported only in
the peers' environment (benchmarks/peers.sh), never by the product."""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path

from langchain_text_splitters import RecursiveCharacterTextSplitter
from langchain_text_splitters.base import Tokenizer, split_text_on_tokens
from tokenizers import Tokenizer as HFTokenizer

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from holodeck.embeddings.local import BUILTIN_TOKENIZER

#: Text tokens per chunk and overlap: 256 with the model's two special tokens, 50 shared.
TOKENS, OVERLAP = 254, 50

# The model's tokenizer file pads to 128 by default: a count must see the text alone.
_HF = HFTokenizer.from_file(str(BUILTIN_TOKENIZER))
_HF.no_truncation()
_HF.no_padding()


def encode(text: str) -> list[int]:
    """The model's token ids of ``text``, without its special tokens."""
    return list(_HF.encode(text, add_special_tokens=False).ids)


def model_tokens(text: str) -> int:
    """What the model reads of ``text``: its tokens and two special ones, at most 256."""
    return min(len(encode(text)) + 2, TOKENS + 2)


def splitters() -> dict[str, Callable[[str], list[str]]]:
    """LangChain's token-window splitter (what it ships for sentence-transformers models)
    and its recursive splitter measuring pieces in the same tokens, by mode name."""
    windows = Tokenizer(OVERLAP, TOKENS, _HF.decode, encode)
    recursive = RecursiveCharacterTextSplitter(
        chunk_size=TOKENS, chunk_overlap=OVERLAP, length_function=lambda t: len(encode(t))
    )
    return {
        "langchain_tokens": lambda text: split_text_on_tokens(text=text, tokenizer=windows),
        "langchain_recursive": recursive.split_text,
    }
