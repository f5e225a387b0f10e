"""Files that try to hurt: swapped for a symlink after discovery, or one endless line
(issue 13, points 6 and 8; the other hostile files are in test_hostile_files.py).

A file replaced by a link to a secret between discovery and reading is never read; a file
the tokenizer sees as one giant token is still cut into chunks no longer than the bound, and
no search result shown or sent to the LLM is longer than that bound. Real files, the real
pipeline and model.
"""

from __future__ import annotations

import asyncio
import json
import os
import random
import re
import string
import threading
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
from cli_helpers import run_holodeck, write

import holodeck.ingest.prefetch as prefetch
from holodeck.config.loader import load_project
from holodeck.ingest.chunker import max_chunk_chars
from holodeck.ingest.convert import ConversionError, convert
from holodeck.ingest.discover import REASON_OUTSIDE, SourceFile, discover
from holodeck.tools.vectorstore_tool import VectorStoreTool, build_tools
from holodeck.vectorstore.records import ChunkRecord, chunk_id_for, text_hash

AGENT = """
name: hostile-test
tools:
  - type: vectorstore
    name: kb
    source: docs
    chunk_size: 128
    chunk_overlap: 16
"""
SECRET = "root:x:0:0:the password of the vault is hunter2\n"


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    root = tmp_path / "proj"
    write(root / "agent.yaml", AGENT)
    write(root / "docs" / "guide.md", "# Guide\n\nThe pumps are checked every morning.\n")
    write(root / "docs" / "notes.txt", "Plain notes about the night shift.\n")
    (tmp_path / "passwd").write_text(SECRET)
    monkeypatch.setenv("HOME", str(root / "home"))
    return root


@pytest.fixture
def tool(project: Path) -> Iterator[VectorStoreTool]:
    (made,) = build_tools(load_project(project / "agent.yaml"))
    yield made
    made.close()


def all_content(tool: VectorStoreTool) -> str:
    store = tool.store
    docs = store.doc_ids("hostile-test", "kb")
    return " ".join(r.content for d in docs for r in store.doc_chunks("hostile-test", "kb", d))


def test_a_file_swapped_for_a_link_after_discovery_is_never_read(
    project: Path, tool: VectorStoreTool, monkeypatch: pytest.MonkeyPatch
) -> None:
    real_convert = prefetch.convert

    def swap_then_convert(file: SourceFile, *args: object) -> object:
        if file.rel_path == "notes.txt":  # discovered as a plain file; now it is a link
            file.path.unlink()
            file.path.symlink_to(project.parent / "passwd")
        return real_convert(file, *args)

    monkeypatch.setattr(prefetch, "convert", swap_then_convert)
    tool.initialize_sync()

    assert tool.summary is not None
    reasons = {s["path"]: s["reason"] for s in tool.summary.skipped_files}
    assert reasons == {"notes.txt": REASON_OUTSIDE}
    assert tool.store.doc_ids("hostile-test", "kb") == {"guide.md"}
    assert "hunter2" not in all_content(tool)


def test_a_file_swapped_for_a_fifo_is_refused_without_blocking(project: Path) -> None:
    [notes] = [f for f in discover(project / "docs").files if f.rel_path == "notes.txt"]
    notes.path.unlink()
    os.mkfifo(notes.path)
    outcome: list[str] = []

    def read() -> None:
        try:
            convert(notes)
        except ConversionError as exc:
            outcome.append(exc.reason)

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    reader.join(timeout=120)  # a ceiling for a loaded machine: it returns once refused
    assert outcome == ["not a regular file"]


def test_a_link_inside_the_source_is_still_read(project: Path) -> None:
    os.symlink(project / "docs" / "guide.md", project / "docs" / "alias.md")
    [alias] = [f for f in discover(project / "docs").files if f.rel_path == "alias.md"]

    assert "pumps are checked" in convert(alias).text


def test_one_endless_line_is_cut_into_bounded_chunks(project: Path) -> None:
    rng = random.Random(13)
    blob = "".join(rng.choices(string.ascii_letters + string.digits, k=600_000))
    (project / "docs" / "dump.txt").write_text(blob)
    home = project / "home"

    result = run_holodeck("ingest", "--json", cwd=project, home=home)

    assert result.returncode == 0, result.stderr
    summary = json.loads(result.stdout)["tools"][0]
    assert summary["new"] == 3
    (tool,) = build_tools(load_project(project / "agent.yaml"))
    try:
        bound = max_chunk_chars(tool.chunk_size)
        chunks = tool.store.doc_chunks("hostile-test", "kb", "dump.txt")
        assert len(chunks) >= len(blob) // bound
        assert max(len(c.content) for c in chunks) <= bound
        assert "".join(c.content for c in sorted(chunks, key=lambda c: c.chunk_index)) == blob
    finally:
        tool.close()
    found = run_holodeck("search", blob[5000:5040], "--json", cwd=project, home=home)
    results = json.loads(found.stdout)["tools"][0]["results"]
    assert results and all(len(r["content"]) <= bound for r in results)


def test_a_giant_chunk_stored_before_the_bound_is_cut_when_shown(tool: VectorStoreTool) -> None:
    tool.initialize_sync()
    bound = max_chunk_chars(tool.chunk_size)
    giant = "pumps " * 50_000  # 300,000 characters, as an old ingest could store
    vector = tool.embedder.embed(["The pumps are checked every morning."])[0]
    tool.store.upsert_chunks(
        "hostile-test",
        [
            ChunkRecord(
                chunk_id=chunk_id_for("hostile-test", "kb", "old.md", 0),
                tenant_id="hostile-test",
                library_id="kb",
                book_id=".",
                doc_id="old.md",
                chunk_index=0,
                content=giant,
                vector=np.asarray(vector, dtype=np.float32),
                embedding_model=tool.embedder.model_id,
                source_path="docs/old.md",
                mtime=0.0,
                content_hash=text_hash(giant),
                token_count=128,
            )
        ],
    )

    results, _ = tool.find("when are the pumps checked?")
    assert "docs/old.md" in [r.source_path for r in results]
    assert all(len(r.content) <= bound for r in results)
    for_llm = asyncio.run(tool.search("when are the pumps checked?"))
    blocks = re.split(r"\n\n(?=\[\d+\] Score: )", for_llm.split("\n\n", 1)[1])
    assert len(blocks) == len(results)
    assert all(len(block.split("\n", 1)[1]) <= bound for block in blocks)
