"""Runs in the peers environment (benchmarks/peers.sh): LangChain's splitters on the
documents `bench_chunking.py` chunked, at the same 256 tokens (the model's two special
tokens included) and 50 of overlap, measured in the model's own tokens; the same edits,
counting the chunks whose text is new (a store keyed by chunk text embeds them again).
Prints one JSON line per splitter. Not part of the product.

    peers_chunking.py DOCUMENTS_JSON
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from pathlib import Path

from langchain_text_splitters import RecursiveCharacterTextSplitter
from langchain_text_splitters.base import Tokenizer, split_text_on_tokens
from tokenizers import Tokenizer as HFTokenizer

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from _edits import edit_summary

from holodeck.embeddings.local import BUILTIN_TOKENIZER

TOKENS, OVERLAP = 254, 50

HF = HFTokenizer.from_file(str(BUILTIN_TOKENIZER))
HF.no_truncation()
HF.no_padding()


def encode(text: str) -> list[int]:
    """The model's token ids of ``text``, without its special tokens."""
    return list(HF.encode(text, add_special_tokens=False).ids)


def splitters() -> dict[str, Callable[[str], list[str]]]:
    """LangChain's token-window splitter and its recursive splitter, both in model tokens."""
    windows = Tokenizer(OVERLAP, TOKENS, HF.decode, encode)
    recursive = RecursiveCharacterTextSplitter(
        chunk_size=TOKENS, chunk_overlap=OVERLAP, length_function=lambda t: len(encode(t))
    )
    return {
        "langchain_tokens": lambda text: split_text_on_tokens(text=text, tokenizer=windows),
        "langchain_recursive": recursive.split_text,
    }


data = json.loads(Path(sys.argv[1]).read_text())
edit = data["edit"]
for name, split in splitters().items():
    chunks = 0
    fills: list[int] = []
    changed: list[int] = []
    for doc in data["documents"]:
        text = doc["text"]
        before = split(text)
        chunks += len(before)
        # the last chunk is whatever is left; the model reads at most 256 tokens
        fills += [min(len(encode(c)) + 2, 256) for c in before[:-1]]
        kept = set(before)
        for at in doc["edits"]:
            after = split(text[:at] + edit + text[at:])
            changed.append(sum(1 for c in after if c not in kept))
    print(
        json.dumps(
            {
                "splitter": name,
                "documents": len(data["documents"]),
                **edit_summary(chunks, fills, changed),
            }
        ),
        flush=True,
    )
