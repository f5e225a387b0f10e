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
from pathlib import Path

from _edits import edit_summary
from _langchain import model_tokens, splitters

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
        fills += [model_tokens(c) for c in before[:-1]]
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
