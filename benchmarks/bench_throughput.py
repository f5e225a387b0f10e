"""Cold ingest of real files against the raw embedder and Chroma's ``add``, same model.

The embedding model is nearly all of an ingest, so the question is how close holodeck gets
to the model alone, and whether a peer does better. On a mixed subset of the real
documentation corpus (``shared/tools/build-docs-corpus.sh``: PDFs, Markdown, text), each
round measures, one after the other on the same machine:

- holodeck: a cold ``VectorStoreTool.initialize_sync`` (the code of ``holodeck ingest``) on
  a fresh copy of the files: discovery, conversion, chunking, embedding, the local index;
- raw: ``LocalOnnxEmbedder.embed`` alone on the very chunk texts holodeck stored, in one
  call (sorted by length over all of them: the least padding there can be);
- chroma: a Chroma collection whose embedding function is the same embedder (so both pay
  the same model), ``add`` of the same chunk texts with ids and metadata: one call per file
  (as a loop over a folder goes) and in batches of 5,000 (Chroma's best case); run by
  ``peers_throughput.py`` in the peers' environment (``peers.sh``);
- prepare: what a script feeding Chroma must do first, which Chroma's ``add`` does not:
  convert and chunk the files, one after the other, with holodeck's own converter and
  chunker (the very chunks Chroma is handed). ``prepare_chroma_*`` adds it to each add.
- chroma ``langchain_tokens`` / ``langchain_recursive``: a script feeding Chroma a folder as
  users write one: the files converted by holodeck's converter (``convert_s``: Chroma reads
  no PDF), split by LangChain with the model's tokenizer at the same 256 tokens and 50 of
  overlap (windows of tokens, the splitter LangChain ships for sentence-transformers
  models; or its recursive splitter), added in batches. ``prepare_chroma_langchain_*``
  adds the conversion.

The model is loaded and warmed before each clock starts. Ratios are taken within a round
(the machine's load moves between rounds); rounds rotate the order, so each run comes
first in turn. Usage:

    python benchmarks/bench_throughput.py CORPUS_DIR [--peers $(benchmarks/peers.sh)]
        [--rounds 3] [--chroma per_file,batched,langchain_tokens,langchain_recursive]
        [--no-raw]
"""

from __future__ import annotations

import argparse
import contextlib
import json
import shutil
import statistics
import subprocess
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from _common import make_project

from holodeck.config.file_types import DEFAULT_FILE_TYPES
from holodeck.embeddings.hf_tokenizer import HFTokenCounter
from holodeck.embeddings.local import BUILTIN_TOKENIZER
from holodeck.ingest.convert import ConversionError, convert
from holodeck.ingest.discover import discover
from holodeck.ingest.prefetch import prepare

#: The agent's defaults (make_project({}) sets no chunking).
CHUNK_SIZE, CHUNK_OVERLAP = 256, 50

HERE = Path(__file__).resolve().parent


def pick(corpus: Path, kind: str, count: int, max_bytes: int) -> list[Path]:
    """``count`` files of one kind spread evenly over the corpus's sorted paths."""
    files = sorted(
        p for p in corpus.rglob(f"*.{kind}") if 0 < p.stat().st_size <= max_bytes and p.is_file()
    )
    step = len(files) / count
    return [files[int(i * step)] for i in range(min(count, len(files)))]


def subset(corpus: Path, pdf: int, md: int, txt: int) -> list[Path]:
    """The mixed subset: PDFs up to 250 KB, Markdown up to 60 KB, text up to 40 KB (keeps a
    round to minutes while mixing manuals, API pages and man pages)."""
    return (
        pick(corpus, "pdf", pdf, 250_000)
        + pick(corpus, "md", md, 60_000)
        + pick(corpus, "txt", txt, 40_000)
    )


def holodeck_round(corpus: Path, files: list[Path]) -> dict[str, Any]:
    """A cold ingest of a fresh copy of ``files``; returns timings and the stored chunks."""
    root, tool = make_project({})
    for path in files:
        target = root / "docs" / path.relative_to(corpus)
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(path, target)
    embedder = tool.embedder
    embedder.embed(["load the model before the clock starts"])
    model_s = [0.0]
    embed = embedder.embed
    running = [0, 0.0]  # calls in flight (the pipeline overlaps two), since when
    lock = threading.Lock()

    def timed_embed(texts: Any) -> Any:
        """Counts the time at least one call runs: the model's share of the clock."""
        with lock:
            if running[0] == 0:
                running[1] = time.perf_counter()
            running[0] += 1
        try:
            return embed(texts)
        finally:
            with lock:
                running[0] -= 1
                if running[0] == 0:
                    model_s[0] += time.perf_counter() - running[1]

    embedder.embed = timed_embed  # type: ignore[method-assign]
    started = time.perf_counter()
    tool.initialize_sync()
    seconds = time.perf_counter() - started
    embedder.embed = embed  # type: ignore[method-assign]
    summary = tool.summary
    assert summary is not None
    store = tool.store
    tenant = tool.project.tenant_id
    chunks = [
        (rec.chunk_id, rec.content, rec.doc_id)
        for doc in sorted(store.doc_ids(tenant, tool.name))
        for rec in store.doc_chunks(tenant, tool.name, doc)
    ]
    tool.close()
    shutil.rmtree(root)
    # a counter of its own: the embedder's keeps the ids it counts, which would spare the
    # raw call the tokenizing that a user's call pays
    counter = HFTokenCounter.from_file(BUILTIN_TOKENIZER)
    return {
        "seconds": seconds,
        "model_s": model_s[0],
        "files": summary.new,
        "skipped": summary.skipped + summary.failed,
        "chunks": chunks,
        "tokens": sum(counter.count(text) for _, text, _ in chunks),
        "embedder": embedder,
    }


def raw_round(embedder: Any, texts: list[str]) -> float:
    """The embedder alone on ``texts``, one call."""
    started = time.perf_counter()
    embedder.embed(texts)
    return time.perf_counter() - started


def chroma_round(
    peers: str, chunks: list[tuple[str, str, str]], docs: list[str], modes: str
) -> dict[str, float]:
    """Chroma's ``add`` through the same model, in the peers' environment: of holodeck's
    chunks, or of the converted texts ``docs`` split by LangChain."""
    with tempfile.TemporaryDirectory(prefix="bench-chroma-") as work:
        rows, texts = Path(work) / "rows.json", Path(work) / "docs.json"
        rows.write_text(json.dumps(chunks))
        texts.write_text(json.dumps(docs))
        out = subprocess.run(
            [peers, str(HERE / "peers_throughput.py"), str(rows), str(texts), modes],
            capture_output=True,
            text=True,
            check=True,
        )
    return dict(json.loads(out.stdout.strip().splitlines()[-1]))


def prepare_round(corpus: Path, files: list[Path]) -> tuple[float, float, list[str]]:
    """What a script feeding Chroma must do before ``add``: convert and chunk every file,
    one after the other, with holodeck's own converter and chunker (so the chunks are the
    very ones Chroma is handed). Returns that time, the conversion's alone, and the texts."""
    root, tool = make_project({})
    for path in files:
        target = root / "docs" / path.relative_to(corpus)
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(path, target)
    found = discover(root / "docs", DEFAULT_FILE_TYPES, ())
    counter = HFTokenCounter.from_file(BUILTIN_TOKENIZER)
    counter.count("load the tokenizer before the clock starts")
    started = time.perf_counter()
    for file in found.files:
        prepare(file, counter, CHUNK_SIZE, CHUNK_OVERLAP)
    seconds = time.perf_counter() - started
    docs: list[str] = []
    started = time.perf_counter()
    for file in found.files:
        with contextlib.suppress(ConversionError):  # no text layer: holodeck skips it too
            docs.append(convert(file).text)
    converting = time.perf_counter() - started
    tool.close()
    shutil.rmtree(root)
    return seconds, converting, docs


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("corpus", type=Path)
    parser.add_argument("--peers", help="python of benchmarks/peers.sh (adds Chroma)")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--pdf", type=int, default=30)
    parser.add_argument("--md", type=int, default=30)
    parser.add_argument("--txt", type=int, default=90)
    parser.add_argument("--chroma", default="per_file,batched", help="Chroma's add modes")
    parser.add_argument("--no-raw", action="store_true", help="leave out the raw call")
    args = parser.parse_args()
    files = subset(args.corpus, args.pdf, args.md, args.txt)
    rounds: list[dict[str, float]] = []
    shape: dict[str, Any] = {}
    chunks: list[tuple[str, str, str]] = []
    runs = ["holodeck"] + ([] if args.no_raw else ["raw"]) + (["chroma"] if args.peers else [])
    for r in range(args.rounds):
        measured: dict[str, float] = {}
        # every run in turn comes first (round 1: holodeck, whose chunks the others take)
        for name in runs[r % len(runs) :] + runs[: r % len(runs)]:
            if name == "holodeck":
                ran = holodeck_round(args.corpus, files)
                chunks = ran["chunks"]
                embedder = ran["embedder"]
                shape = {
                    "files": len(files),
                    "ingested": ran["files"],
                    "skipped": ran["skipped"],
                    "chunks": len(chunks),
                    "tokens": ran["tokens"],
                }
                measured["holodeck_s"] = ran["seconds"]
                measured["holodeck_model_s"] = ran["model_s"]
            elif name == "raw":
                measured["raw_s"] = raw_round(embedder, [text for _, text, _ in chunks])
            else:
                assert args.peers
                prepared, converting, docs = prepare_round(args.corpus, files)
                measured["prepare_s"], measured["convert_s"] = prepared, converting
                measured.update(chroma_round(args.peers, chunks, docs, args.chroma))
                for mode in args.chroma.split(","):
                    before = converting if mode.startswith("langchain_") else prepared
                    measured[f"prepare_chroma_{mode}_s"] = before + measured[f"chroma_{mode}_s"]
        for key in [k for k in measured if k.endswith("_s")]:
            if key.startswith(("chroma_", "prepare_chroma_", "raw_")):
                measured[f"{key[:-2]}_over_holodeck"] = measured[key] / measured["holodeck_s"]
        rounds.append({k: round(v, 3) for k, v in measured.items()})
        print(json.dumps({"round": r + 1, **rounds[-1]}), flush=True)
    medians = {k: round(statistics.median(x[k] for x in rounds), 3) for k in rounds[0]}
    print(json.dumps({**shape, "median": medians}, indent=2))


if __name__ == "__main__":
    main()
