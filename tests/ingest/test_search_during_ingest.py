"""Readers never wait for the writer: search and chat started while an ingest runs answer
from the documents committed so far; a second ingest, and ``holodeck test`` (which judges
only a whole index), wait for it and past their bound stop with a clear line.

Real files, the real model, the real CLI in subprocesses beside a running `holodeck ingest`.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from cli_helpers import ingest_argv, run_holodeck, write

from holodeck.vectorstore.local import LocalIndexAdapter

AGENT = """
name: busy
tools:
  - type: vectorstore
    name: kb
    source: docs
test_cases:
  - name: finds-a-committed-file
    input: Which crane reports to the lighthouse station on the northern breakwater?
    expected_sources: [docs/note000.md]
"""


def committed(folder: Path) -> set[str]:
    """Documents with chunks committed (a note cut by a window's end has its first chunks
    stored, and searchable, before its state is)."""
    if not (folder / "index.db").exists():
        return set()
    index = LocalIndexAdapter(folder)
    try:
        return set(index.doc_ids("busy", "kb"))
    finally:
        index.close()


def test_readers_answer_from_what_is_committed_while_an_ingest_runs(tmp_path: Path) -> None:
    project = tmp_path / "proj"
    write(project / "agent.yaml", AGENT)
    for i in range(50):  # ~100 chunks, windows of 32: the first is committed, the next not yet
        first = (  # one note stands out, however many are committed when the readers ask
            "The crane of topic 0 is the only one that reports to the lighthouse station on "
            "the northern breakwater, every morning before the ferries leave."
            if i == 0
            else f"The crane of topic {i} reports to station {i * 7} every {i % 5 + 1} "
            f"hours; its operator logs the load in journal {i * 13}."
        )
        paragraphs = [first] + [
            f"Section {j} of note {i}: the winch {j} on deck {i} is greased weekly, its cable "
            f"{j * i} is inspected for frayed strands, and the brake pads {j + i} are measured "
            f"against the limits in the manual before the shift {j} begins at pier {i + j}."
            for j in range(12)
        ]
        write(project / "docs" / f"note{i:03d}.md", f"# Note {i}\n\n" + "\n\n".join(paragraphs))
    env = dict(os.environ, HOME=str(tmp_path / "home"), NO_COLOR="1")
    ingest = subprocess.Popen(
        ingest_argv(window=32),
        cwd=project,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    folder = project / ".holodeck" / "index" / "kb"
    try:
        # However slow the machine, wait for its first window to be committed...
        while "note000.md" not in committed(folder):
            assert ingest.poll() is None, "the ingest ended before its first commit was seen"
            time.sleep(0.1)
        # ...then freeze it there: it holds its lock (maybe a write transaction too) and
        # cannot finish, so every reader below meets a running ingest, and one that waited
        # for it would never answer.
        ingest.send_signal(signal.SIGSTOP)
        with ThreadPoolExecutor() as pool:  # all at once, as several users would
            runs = [
                pool.submit(run_holodeck, "search", "lighthouse crane", "--json", cwd=project),
                pool.submit(run_holodeck, "chat", cwd=project, stdin="lighthouse crane\n"),
                pool.submit(run_holodeck, "test", cwd=project, env={"HOLODECK_LOCK_TIMEOUT": "1"}),
                pool.submit(
                    run_holodeck, "ingest", cwd=project, env={"HOLODECK_LOCK_TIMEOUT": "1"}
                ),
            ]
            search, chat, tested, second = (run.result() for run in runs)
        done = committed(folder)
    finally:
        ingest.kill()
        ingest.wait()

    assert search.returncode == 0, search.stderr
    assert "another ingest is running" in search.stderr
    results = json.loads(search.stdout)["tools"][0]["results"]
    assert results and results[0]["doc_id"] == "note000.md", search.stdout + search.stderr
    assert {r["doc_id"] for r in results} <= done  # only what was committed
    assert chat.returncode == 0, chat.stderr
    assert "docs/note000.md" in chat.stdout
    assert tested.returncode == 3, tested.stdout + tested.stderr  # not judged half-built
    assert "waiting up to 1 s" in tested.stderr and "no case was run" in tested.stderr
    assert "Running" not in tested.stdout and "Traceback" not in tested.stderr
    assert second.returncode == 3
    assert "another ingest of library 'kb' is running" in second.stderr
    assert "Traceback" not in second.stderr
