"""An index folder that cannot be written (a read-only mount, a folder without write
permission): search answers from the stored index, with one warning when the sources changed
since; ingest, forced or not, is one line naming the folder and the fix, exit 2; once the
folder is writable again the next ingest does only what changed.

The real CLI and the real model. As root (where a permission does not stop a write) the folder
is bind-mounted read-only; elsewhere its write permission is taken away.
"""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from cli_helpers import error_line, run_holodeck, write

AGENT = """
name: frozen
tools:
  - type: vectorstore
    name: kb
    source: docs
"""
QUERY = "kiwi papaya note 7"


@contextlib.contextmanager
def read_only(folder: Path) -> Iterator[None]:
    """``folder`` that this process cannot write, for the block."""
    if os.geteuid() != 0:
        modes = {p: p.stat().st_mode for p in (folder, *folder.iterdir())}
        for path in modes:
            path.chmod(0o555 if path.is_dir() else 0o444)
        try:
            yield
        finally:
            for path, mode in modes.items():
                path.chmod(mode)
        return
    bind = subprocess.run(["mount", "--bind", str(folder), str(folder)], capture_output=True)
    if bind.returncode != 0:
        pytest.skip(f"as root only a read-only mount stops a write: {bind.stderr.decode()}")
    try:
        subprocess.run(["mount", "-o", "remount,ro,bind", str(folder)], check=True)
        with pytest.raises(OSError):
            (folder / "probe").touch()
        yield
    finally:
        subprocess.run(["umount", "--lazy", str(folder)], check=True)


def results(done: subprocess.CompletedProcess[str]) -> list[str]:
    assert done.returncode == 0, done.stderr
    return [r["chunk_id"] for r in json.loads(done.stdout)["tools"][0]["results"]]


def test_a_read_only_index_answers_searches_and_ingest_says_how_to_fix_it(
    tmp_path: Path,
) -> None:
    project = tmp_path / "proj"
    write(project / "agent.yaml", AGENT)
    fruits = ["apple", "kiwi", "papaya", "mango", "lime", "fig", "pear"]
    for i in range(30):
        text = f"{fruits[i % 7]} {fruits[(i + 2) % 7]} note {i} of the orchard log.\n"
        write(project / "docs" / f"n{i:02}.md", text)
    assert run_holodeck("ingest", cwd=project).returncode == 0
    search = ("search", QUERY, "--json", "--top-k", "5")
    sound = results(run_holodeck(*search, "--no-ingest", cwd=project))
    folder = project / ".holodeck" / "index" / "kb"
    files = sorted(p.name for p in folder.iterdir())

    with read_only(folder):
        quiet = run_holodeck(*search, "--no-ingest", cwd=project)
        assert results(quiet) == sound and quiet.stderr == ""
        unchanged = run_holodeck(*search, cwd=project)  # nothing to ingest: nothing to say
        assert results(unchanged) == sound and unchanged.stderr == ""

        write(project / "docs" / "new.md", "A new note about kiwi trees.\n")
        stale = run_holodeck(*search, cwd=project)
        assert results(stale) == sound  # what is stored, not the new note
        (warning,) = stale.stderr.strip().splitlines()
        assert warning.startswith(
            f"WARNING: kb: not updated: cannot write the local index in {folder}"
        )
        assert "make the folder writable" in warning

        for args in (("ingest",), ("ingest", "--force-ingest")):
            line = error_line(run_holodeck(*args, cwd=project))
            assert line.startswith(f"Error: cannot write the local index in {folder}: "), line
            assert "make the folder writable and run again" in line, line
        assert sorted(p.name for p in folder.iterdir()) == files  # nothing written or moved

    again = run_holodeck("ingest", cwd=project)
    assert again.returncode == 0, again.stderr
    assert "1 new, 0 changed, 0 touched, 30 unchanged" in again.stderr
