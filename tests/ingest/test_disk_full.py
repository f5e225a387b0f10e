"""A disk that fills during an ingest: one line naming the index folder and the fix (exit 3,
a runtime failure; never "rebuild it" with --force-ingest), the index as the last commit left
it (searched as before), and the next ingest with room finishes the job.

Where the room runs out: the database (its log grows past the limit) and the vector and
keyword files beside it (written at the end of an ingest). How: a limit on file size for the
ingest's process (``ulimit -f``, SIGXFSZ ignored, as a shell sets it), which any machine
allows, and a small tmpfs filled up to a few kilobytes, where this machine allows a mount.
The real CLI in real processes, the real model.
"""

from __future__ import annotations

import contextlib
import json
import os
import resource
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from cli_helpers import holodeck_env, run_holodeck, write

AGENT = """
name: full
tools:
  - type: vectorstore
    name: kb
    source: docs
"""
FRUITS = ["apple", "banana", "kiwi", "papaya", "mango", "grape", "lemon", "lime", "peach"]
QUERY = "kiwi papaya note 17"
#: The side files' thresholds lowered, in the ingest's own process, so 300 chunks get them.
SMALL_SIDE_FILES = (
    "import holodeck.vectorstore.sqlite.vector_upkeep as v, "
    "holodeck.vectorstore.sqlite.postings as p; "
    "v.ANN_MIN_ROWS = 200; p.POSTINGS_MIN_ROWS = 200; "
)


def write_docs(docs: Path, first: int, last: int) -> None:
    for i in range(first, last):
        words = " ".join(FRUITS[(i + k) % len(FRUITS)] for k in range(3))
        write(docs / f"d{i:03}.md", f"# Note {i}\n\n{words} note {i} of the orchard log.\n")


def ingest(project: Path, *, small_side_files: bool, file_size: int | None = None) -> str:
    """``holodeck ingest`` in its own process, its files limited to ``file_size`` bytes;
    what it printed on stderr (its exit code is checked by the caller through the text)."""

    def limit() -> None:
        if file_size is not None:
            signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # a failed write, not a kill
            resource.setrlimit(resource.RLIMIT_FSIZE, (file_size, file_size))

    code = (SMALL_SIDE_FILES if small_side_files else "") + (
        "from holodeck.cli.main import main; main()"
    )
    done = subprocess.run(
        [sys.executable, "-c", code, "ingest"],
        cwd=project,
        env=holodeck_env(project),
        preexec_fn=limit,
        capture_output=True,
        text=True,
        timeout=240,
    )
    return f"rc={done.returncode}\n{done.stderr}"


def searched(project: Path) -> list[str]:
    done = run_holodeck("search", QUERY, "--no-ingest", "--json", "--top-k", "5", cwd=project)
    assert done.returncode == 0, done.stderr
    assert "Traceback" not in done.stderr
    return [r["chunk_id"] for r in json.loads(done.stdout)["tools"][0]["results"]]


def documents(project: Path) -> int:
    done = run_holodeck("store", "info", "--json", cwd=project)
    assert done.returncode == 0, done.stderr
    return int(json.loads(done.stdout)["tools"][0]["documents"])


def side_files(folder: Path) -> list[str]:
    return sorted(p.suffix for p in folder.iterdir() if p.suffix in (".ivf", ".sq8", ".postings"))


@contextlib.contextmanager
def full_tmpfs(folder: Path, leave: int) -> Iterator[Path]:
    """``folder`` (its files kept) on a tmpfs of its own, filled up to ``leave`` bytes; the
    filler file, whose removal frees the room. Skips where the machine refuses the mount."""
    saved = folder.with_name(folder.name + "-saved")
    folder.rename(saved)
    folder.mkdir()
    mounted = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=8m", "tmpfs", str(folder)],
        capture_output=True,
        text=True,
    )
    if mounted.returncode != 0:
        folder.rmdir()
        saved.rename(folder)
        pytest.skip(f"this machine refuses a tmpfs mount: {mounted.stderr.strip()}")
    try:
        for path in saved.iterdir():
            (folder / path.name).write_bytes(path.read_bytes())
        filler = folder / "filler"
        with open(filler, "wb", buffering=0) as fh, contextlib.suppress(OSError):
            while fh.write(b"\0" * 4096):  # until the tmpfs refuses
                pass
        size = filler.stat().st_size
        os.truncate(filler, max(0, size - leave))
        yield filler
    finally:
        subprocess.run(["umount", "-l", str(folder)], check=False)


@pytest.mark.parametrize("how", ["file-size limit", "full tmpfs"])
@pytest.mark.parametrize("where", ["database", "side files"])
def test_a_full_disk_mid_ingest_keeps_the_index_and_the_next_ingest_finishes(
    tmp_path: Path, how: str, where: str
) -> None:
    project = tmp_path / "proj"
    write(project / "agent.yaml", AGENT)
    docs = project / "docs"
    folder = project / ".holodeck" / "index" / "kb"
    write_docs(docs, 0, 300)
    first = run_holodeck("ingest", cwd=project)
    assert first.returncode == 0, first.stderr
    assert side_files(folder) == []  # the default thresholds: none yet
    before = searched(project)
    if where == "database":
        write_docs(docs, 300, 600)  # the log of these 300 passes any limit below
    # The side files are written by the next ingest (lowered thresholds), the database grows
    # by the new notes: either needs more than is left.
    room = 16 * 1024
    with contextlib.ExitStack() as stack:
        if how == "full tmpfs":
            filler = stack.enter_context(full_tmpfs(folder, leave=room))
            said = ingest(project, small_side_files=True)
        else:
            said = ingest(project, small_side_files=True, file_size=room)
        assert said.startswith("rc=3\n"), said
        assert "Traceback" not in said
        (line,) = [ln for ln in said.splitlines() if "Error" in ln]
        assert line.startswith(f"Error: cannot write the local index in {folder}: "), line
        assert "what is stored is kept" in line, line
        assert ("ulimit -f" if how == "file-size limit" else "the disk is full") in line, line
        assert "--force-ingest" not in line  # nothing to rebuild
        assert not [p for p in folder.iterdir() if p.name.endswith(".tmp")]

        # The last good state, whole: the same answers, the same documents.
        assert searched(project) == before
        assert documents(project) == 300
        assert side_files(folder) == []

        if how == "full tmpfs":
            filler.unlink()
        again = ingest(project, small_side_files=True)
        assert again.startswith("rc=0\n"), again
        added = 300 if where == "database" else 0
        assert f"{added} new, 0 changed, 0 touched, 300 unchanged" in again, again
        assert documents(project) == 300 + added
        assert side_files(folder) == [".ivf", ".postings", ".sq8"]
        checked = run_holodeck("search", QUERY, "--no-ingest", cwd=project)
        assert checked.returncode == 0 and "does not match" not in checked.stderr
