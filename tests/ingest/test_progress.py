"""Progress that moves inside a big file, and a crash inside one that costs one slice.

A big file is embedded and stored in slices (one embedding window each), so the display
moves with every embedding call and a kill -9 in the middle loses one slice, not the file.
Real files, the real local model; the kill is a real SIGKILL of the real CLI.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import time
from pathlib import Path

import pytest
from cli_helpers import ingest_argv, run_holodeck, write

from holodeck.config.loader import load_project
from holodeck.ingest import embed_windows
from holodeck.ingest.status import IngestStatus, Progress
from holodeck.tools.vectorstore_tool import build_tools
from holodeck.vectorstore.local import LocalIndexAdapter

#: Chunks embedded and committed at once in these tests (the product's EMBED_WINDOW / 4).
WINDOW = 64

AGENT = """
name: progress-test
tools:
  - type: vectorstore
    name: kb
    source: docs
    chunk_size: 128
    chunk_overlap: 16
"""

WORDS = [
    "valve",
    "pump",
    "gauge",
    "relay",
    "filter",
    "boiler",
    "turbine",
    "sensor",
    "cable",
    "winch",
    "crane",
    "hatch",
]


def manual(sections: int) -> str:
    """A long manual of distinct sections of ~77 tokens: one chunk each at 128 tokens."""
    return "\n\n".join(
        f"Section {i}. The {WORDS[i % 12]} of bay {i} is inspected every {i % 9 + 2} days; "
        f"its log book {i * 7} records the pressure, the load and the crew on duty. "
        f"When reading {i * 3} exceeds the limit of chart {i % 17}, the {WORDS[(i + 5) % 12]} "
        f"team closes line {i * 11} and reports to the harbour office before shift {i % 4}."
        for i in range(sections)
    )


def test_progress_moves_and_slices_are_stored_within_one_large_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Windows a quarter of the product's and calls an eighth, so a quarter of the manual
    # has as many (what is tested is that they move and commit inside one file, not their
    # size).
    monkeypatch.setattr(embed_windows, "EMBED_WINDOW", WINDOW)
    monkeypatch.setattr(embed_windows, "EMBED_CALL_TOKENS", embed_windows.EMBED_CALL_TOKENS // 8)
    project = tmp_path / "proj"
    write(project / "agent.yaml", AGENT)
    write(project / "docs" / "manual.md", manual(160))  # about 160 chunks: three windows
    write(project / "docs" / "small.txt", "The spare keys hang in the office.\n")
    (tool,) = build_tools(load_project(project / "agent.yaml"))
    seen: list[tuple[IngestStatus, int]] = []  # each update, with the chunks stored by then
    finished: list[str] = []

    def update(status: IngestStatus) -> None:
        seen.append((status, tool.document_count))

    try:
        tool.initialize_sync(progress=Progress(advance=finished.append, update=update))
        total = tool.document_count
    finally:
        tool.close()

    assert sorted(finished) == ["manual.md", "small.txt"]
    before_manual = [(s, stored) for s, stored in seen if s.files_done < 2]
    inside = [(s, stored) for s, stored in before_manual if "manual.md" in s.current]
    # the display moved many times while the big file was embedding
    tokens = [s.tokens_embedded for s, _ in inside]
    assert len(set(tokens)) >= 6 and tokens == sorted(tokens)
    assert tokens[0] == 0  # shown as the model starts on it, not only after
    assert all(s.tokens_total >= s.tokens_embedded for s, _ in inside)
    # and its slices were committed along the way, not all at the end
    stored = sorted({n for _, n in inside})
    assert len([n for n in stored if 0 < n < total]) >= 2
    assert min(n for n in stored if n > 0) <= WINDOW + 1
    last = seen[-1][0]
    assert last.files_done == last.files_todo == 2
    assert last.tokens_embedded == last.tokens_total  # the estimate ends exact
    assert last.chunks_embedded == total


def _stored_chunks(folder: Path, doc_id: str) -> tuple[int, bool]:
    """Chunks of ``doc_id`` committed so far, and whether the document has its state."""
    if not (folder / "index.db").exists():
        return 0, False
    index = LocalIndexAdapter(folder)
    try:
        chunks = len(index.get_doc_chunks("progress-test", "kb", doc_id))
        return chunks, doc_id in index.doc_states("progress-test", "kb")
    finally:
        index.close()


def test_kill_9_inside_a_big_file_then_the_rerun_reuses_its_stored_slices(
    tmp_path: Path,
) -> None:
    project = tmp_path / "proj"
    write(project / "agent.yaml", AGENT)
    write(project / "docs" / "manual.md", manual(200))  # about 200 chunks: four windows
    env = dict(os.environ, HOME=str(tmp_path / "home"))
    proc = subprocess.Popen(
        ingest_argv(window=WINDOW),
        cwd=project,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    folder = project / ".holodeck" / "index" / "kb"
    try:
        while proc.poll() is None:  # however slow the machine (pytest-timeout bounds it)
            if _stored_chunks(folder, "manual.md")[0]:
                break  # its first slice is committed, the rest not yet
            time.sleep(0.05)
        assert proc.poll() is None, "the ingest finished before it could be killed"
    finally:
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
    committed, has_state = _stored_chunks(folder, "manual.md")
    assert committed > 0 and not has_state  # cut short inside the file

    rerun = run_holodeck("ingest", "--json", cwd=project)
    assert rerun.returncode == 0, rerun.stderr
    summary = json.loads(rerun.stdout)["tools"][0]
    total = summary["chunks_total"]
    assert summary["new"] == 1  # a document without state is redone...
    assert summary["chunks_reused"] == committed  # ...keeping every vector stored before
    assert 0 < summary["chunks_embedded"] == total - committed
    assert _stored_chunks(folder, "manual.md") == (total, True)
    index = LocalIndexAdapter(folder)
    try:
        chunks = index.get_doc_chunks("progress-test", "kb", "manual.md")
    finally:
        index.close()
    assert [c.chunk_index for c in chunks] == list(range(total))
    assert "Section 199." in chunks[-1].content


def long_pdf(path: Path, pages: int) -> Path:
    """A real PDF of ``pages`` pages, each a distinct short paragraph."""
    from fpdf import FPDF

    pdf = FPDF()
    pdf.set_font("helvetica", size=11)
    for n in range(1, pages + 1):
        pdf.add_page()
        pdf.multi_cell(
            0, 6, f"Page {n}. Tank {n} of the {WORDS[n % 12]} yard holds {n * 40} litres."
        )
    path.parent.mkdir(parents=True, exist_ok=True)
    pdf.output(str(path))
    return path


def test_a_piped_ingest_shows_progress_inside_a_long_pdf_and_a_big_file(tmp_path: Path) -> None:
    """The real command into a pipe: the pages of a long PDF as it is read, and the chunks of
    a file bigger than a window as they are embedded, each a count that moves."""
    project = tmp_path / "proj"
    write(project / "agent.yaml", AGENT)
    long_pdf(project / "docs" / "atlas.pdf", 120)
    write(project / "docs" / "manual.md", manual(160))  # about 160 chunks: five windows
    run = subprocess.run(
        ingest_argv(window=32), cwd=project, capture_output=True, text=True, timeout=600,
        env={**os.environ, "NO_COLOR": "1", "HOME": str(tmp_path)},
    )  # fmt: skip
    assert run.returncode == 0, run.stderr
    read = re.findall(r"^kb: reading atlas\.pdf: page (\d+)/120$", run.stderr, re.M)
    pages = [int(n) for n in read]
    assert len(pages) >= 5 and pages == sorted(pages) and pages[-1] == 120, run.stderr
    chunks = re.findall(r"· manual\.md \((\d+)/(\d+) chunks\)$", run.stderr, re.M)
    done = [int(n) for n, _ in chunks]
    assert len(set(done)) >= 3 and done == sorted(done), run.stderr
    (total,) = {int(total) for _, total in chunks}  # one file, one count of its chunks
    assert 150 < total < 170 and done[-1] <= total


def test_a_first_ingest_says_what_it_will_take_once(tmp_path: Path) -> None:
    """The first ingest of a library starts with one line: the files, the tokens expected
    from their sizes, the time with the local model, and that search need not wait; an
    unchanged re-run says nothing of it."""
    project = tmp_path / "proj"
    write(project / "agent.yaml", AGENT)
    write(project / "docs" / "manual.md", manual(40))
    write(project / "docs" / "small.txt", "The spare keys hang in the office.\n")
    first = run_holodeck("ingest", cwd=project)
    assert first.returncode == 0, first.stderr
    lines = [line for line in first.stderr.splitlines() if "first ingest" in line]
    assert len(lines) == 1, first.stderr
    match = re.fullmatch(
        r"kb: first ingest, 2 files, about ([\d.]+k?) tokens to embed: about \d+ (s|min) with "
        r"the local model \(3 min per million tokens on 2 idle cores\); search answers from "
        r"what is stored meanwhile",
        lines[0],
    )
    assert match, lines[0]
    # the estimate from sizes is near the tokens the run then counted as it chunked
    embedded = re.findall(r"· ([\d.]+k?)/\1 tokens", first.stderr)[-1]
    assert 0.67 < _count(match[1]) / _count(embedded) < 1.5, first.stderr
    again = run_holodeck("ingest", cwd=project)
    assert again.returncode == 0, again.stderr
    assert "first ingest" not in again.stderr
    write(project / "docs" / "new.txt", "The boiler is drained each spring.\n")
    more = run_holodeck("ingest", cwd=project)
    assert "first ingest" not in more.stderr  # a later ingest of new files is no first one


def _count(short: str) -> float:
    """``3.2k`` -> 3200.0, ``950`` -> 950.0 (the display's short counts)."""
    return float(short.rstrip("k")) * (1000 if short.endswith("k") else 1)
