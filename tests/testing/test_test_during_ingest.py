"""``holodeck test`` started while another process's first ingest is filling the index waits
for it, says so, then judges the whole index (issue 42, item 7).

Two real processes: ``holodeck ingest`` of a folder of many windows, frozen after its first
commit, and ``holodeck test`` started then. The ingest goes on only once the test has said it
waits, so the test can neither see the whole index by luck nor pass without waiting.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

from cli_helpers import holodeck_env, ingest_argv, write

from holodeck.vectorstore.local import LocalIndexAdapter

AGENT = """
name: filling
tools:
  - type: vectorstore
    name: kb
    source: docs
test_cases:
  - name: finds-the-last-file
    input: Which heron nests on the roof of the tide gauge at the southern pier?
    expected_sources: [docs/note059.md]
"""


def committed(folder: Path) -> set[str]:
    if not (folder / "index.db").exists():
        return set()
    index = LocalIndexAdapter(folder)
    try:
        return set(index.doc_ids("filling", "kb"))
    finally:
        index.close()


def write_notes(docs: Path, count: int) -> None:
    """Notes of a few chunks each; only the last one answers the case's question."""
    for i in range(count):
        first = (
            "The grey heron nests on the roof of the tide gauge at the southern pier, and "
            "the harbour master counts its chicks each spring."
            if i == count - 1
            else f"The crane of topic {i} reports to station {i * 7} every {i % 5 + 1} hours."
        )
        paragraphs = [first] + [
            f"Section {j} of note {i}: the winch {j} on deck {i} is greased weekly, its cable "
            f"{j * i} is inspected for frayed strands, and the brake pads {j + i} are measured "
            f"against the limits in the manual before the shift {j} begins at pier {i + j}."
            for j in range(10)
        ]
        write(docs / f"note{i:03d}.md", f"# Note {i}\n\n" + "\n\n".join(paragraphs))


def test_a_test_run_waits_for_an_ingest_filling_the_index_then_judges_it_whole(
    tmp_path: Path,
) -> None:
    project = tmp_path / "proj"
    write(project / "agent.yaml", AGENT)
    write_notes(project / "docs", 60)
    env = holodeck_env(project, env={"HOLODECK_LOCK_TIMEOUT": "600"})
    ingest = subprocess.Popen(
        ingest_argv(window=32),
        cwd=project,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    folder = project / ".holodeck" / "index" / "kb"
    tested: subprocess.Popen[str] | None = None
    try:
        deadline = time.monotonic() + 120
        while not committed(folder):  # its first window is in, the last note is not
            assert ingest.poll() is None, "the ingest ended before its first commit was seen"
            assert time.monotonic() < deadline, "no commit within 120 s"
            time.sleep(0.1)
        ingest.send_signal(signal.SIGSTOP)
        assert "note059.md" not in committed(folder)

        tested = subprocess.Popen(
            [sys.executable, "-m", "holodeck", "test"],
            cwd=project,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        said_wait = threading.Event()
        errors: list[str] = []

        def read_stderr() -> None:
            assert tested is not None and tested.stderr is not None
            for line in tested.stderr:
                errors.append(line)
                if "waiting up to 600 s" in line:
                    said_wait.set()

        reader = threading.Thread(target=read_stderr, daemon=True)
        reader.start()
        # The test says it waits (the old one judged at once and ended instead).
        while not said_wait.is_set() and tested.poll() is None:
            said_wait.wait(0.2)
        ingest.send_signal(signal.SIGCONT)
        assert ingest.wait(timeout=300) == 0
        out, _ = tested.communicate(timeout=300)
        reader.join(timeout=10)
    finally:
        for proc in (ingest, tested):
            if proc is not None and proc.poll() is None:
                os.kill(proc.pid, signal.SIGCONT)
                proc.kill()
                proc.wait()

    stderr = "".join(errors)
    assert tested.returncode == 0, out + stderr  # judged on the whole index
    assert "PASS  finds-the-last-file" in out and "1 passed" in out
    assert said_wait.is_set(), stderr
    assert "kb: another ingest is running; waiting up to 600 s" in stderr
