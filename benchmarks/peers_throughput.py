"""Runs in the peers environment (benchmarks/peers.sh): Chroma's ``add`` of the chunk texts
`bench_throughput.py` ingested, embedded by Chroma through holodeck's own embedder (the same
int8 all-MiniLM-L6-v2 on the same onnxruntime), so both pay the same model: one ``add`` per
file (``per_file``), or in batches of 5,000 (``batched``). Or, as a script that feeds
Chroma a folder goes, the converted texts (``DOCS_JSON``, converted by holodeck: Chroma
reads no PDF) split by LangChain with the model's own tokenizer at the same 256 tokens and
50 of overlap, then added in batches: ``langchain_tokens`` (windows of tokens, the splitter
LangChain ships for sentence-transformers models) or ``langchain_recursive``
(``RecursiveCharacterTextSplitter`` measuring pieces in tokens). Prints JSON.
Not part of the product: only holodeck's embedder module is imported from the repository.

    peers_throughput.py ROWS_JSON DOCS_JSON per_file,batched,langchain_tokens
"""

from __future__ import annotations

import json
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import chromadb
from _langchain import model_tokens, splitters
from chromadb.api.types import Documents, EmbeddingFunction, Embeddings

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from holodeck.embeddings.local import LocalOnnxEmbedder

#: Documents per ``add`` call (under Chroma's max batch size of 5,461).
BATCH = 5000


class HolodeckEmbedding(EmbeddingFunction[Documents]):
    """Chroma's embedding function interface over holodeck's local embedder."""

    def __init__(self) -> None:
        self.embedder = LocalOnnxEmbedder.builtin()

    def __call__(self, input: Documents) -> Embeddings:
        return list(self.embedder.embed(list(input)))

    @staticmethod
    def name() -> str:
        return "holodeck-local"

    def get_config(self) -> dict[str, Any]:
        return {}

    @staticmethod
    def build_from_config(config: dict[str, Any]) -> HolodeckEmbedding:
        return HolodeckEmbedding()


def add_per_file(col: Any, rows: list[list[str]]) -> None:
    """One ``add`` per file, as a loop over a folder's files calls it."""
    by_doc: dict[str, list[list[str]]] = {}
    for row in rows:
        by_doc.setdefault(row[2], []).append(row)
    for doc_rows in by_doc.values():
        col.add(
            ids=[r[0] for r in doc_rows],
            documents=[r[1] for r in doc_rows],
            metadatas=[{"doc_id": r[2]} for r in doc_rows],
        )


def add_batched(col: Any, rows: list[list[str]]) -> None:
    """Everything in as few ``add`` calls as Chroma takes: the model sorts over them all."""
    for start in range(0, len(rows), BATCH):
        part = rows[start : start + BATCH]
        col.add(
            ids=[r[0] for r in part],
            documents=[r[1] for r in part],
            metadatas=[{"doc_id": r[2]} for r in part],
        )


def langchain_rows(docs: list[str], mode: str) -> list[list[str]]:
    """The converted texts split by LangChain, as rows of (id, text, document id)."""
    split = [SPLITTERS[mode](doc) for doc in docs]
    return [[f"{d}:{i}", t, str(d)] for d, texts in enumerate(split) for i, t in enumerate(texts)]


SPLITTERS = splitters()
rows = json.loads(Path(sys.argv[1]).read_text())
docs = json.loads(Path(sys.argv[2]).read_text())
modes = sys.argv[3].split(",")
function = HolodeckEmbedding()
function(["load the model before the clock starts"])
client = chromadb.PersistentClient(path=tempfile.mkdtemp(prefix="chroma-"))
out: dict[str, float] = {}
for mode in modes:
    col = client.create_collection(
        mode, embedding_function=function, metadata={"hnsw:space": "cosine"}
    )
    started = time.perf_counter()
    if mode.startswith("langchain_"):
        split = langchain_rows(docs, mode)
        out[f"split_{mode}_s"] = time.perf_counter() - started
        add_batched(col, split)
    else:
        split = rows
        (add_per_file if mode == "per_file" else add_batched)(col, rows)
    out[f"chroma_{mode}_s"] = time.perf_counter() - started
    assert col.count() == len(split)
    if mode.startswith("langchain_"):  # what the model was given (two special tokens each)
        out[f"{mode}_chunks"] = len(split)
        out[f"{mode}_tokens"] = sum(model_tokens(r[1]) for r in split)
print(json.dumps(out))
