"""`holodeck search` never works in silence: when it ingests changed files first, progress
and the summary line show on stderr (plain lines in a pipe, a bar on a terminal); when
nothing changed, nothing but the results is printed; `--no-ingest` searches what is indexed.

The real CLI (and in a real terminal, through pexpect and pyte), real files,
the real local model.
"""

from __future__ import annotations

import json
from pathlib import Path

from cli_helpers import run_holodeck, write
from terminal import screens, spawn_holodeck

AGENT = """
name: search-ingest
tools:
  - type: vectorstore
    name: kb
    source: docs
    chunk_size: 128
    chunk_overlap: 16
"""


def project_with_notes(tmp_path: Path) -> Path:
    project = tmp_path / "proj"
    write(project / "agent.yaml", AGENT)
    write(project / "docs" / "pumps.md", "# Pumps\n\nThe pumps are checked every morning.\n")
    write(project / "docs" / "keys.txt", "The spare keys hang in the office.\n")
    write(project / "docs" / "boats.md", "# Boats\n\nThe ferry leaves at noon on Sundays.\n")
    return project


def doc_ids(result_stdout: str) -> list[str]:
    return [r["doc_id"] for r in json.loads(result_stdout)["tools"][0]["results"]]


def test_search_shows_its_ingest_on_stderr_and_nothing_when_nothing_changed(
    tmp_path: Path,
) -> None:
    project = project_with_notes(tmp_path)

    first = run_holodeck("search", "when are the pumps checked", cwd=project)
    assert first.returncode == 0, first.stderr
    lines = [line for line in first.stderr.splitlines() if not line.startswith("INFO:")]
    assert lines[0] == "kb: 3 files, 3 to ingest"
    assert any(line.startswith("kb: 100% · 3/3 files · 3 chunks") for line in lines)
    assert lines[-1].startswith("kb: 3 new, 0 changed")
    assert "pumps.md" in first.stdout

    again = run_holodeck("search", "when are the pumps checked", cwd=project)
    assert again.returncode == 0
    assert again.stderr == ""
    assert again.stdout == first.stdout

    write(project / "docs" / "light.txt", "The lighthouse keeper winds the lamp clock at dusk.\n")
    quiet = run_holodeck("-q", "search", "lighthouse keeper", "--json", cwd=project)
    assert quiet.stderr == ""  # -q: the ingest happens, nothing is said
    assert doc_ids(quiet.stdout)[0] == "light.txt"


def test_no_ingest_searches_what_is_indexed_now(tmp_path: Path) -> None:
    project = project_with_notes(tmp_path)
    never = run_holodeck("search", "pumps", "--no-ingest", cwd=project)
    assert never.returncode == 0
    assert "kb: nothing is indexed yet; run `holodeck ingest`" in never.stderr

    assert run_holodeck("ingest", cwd=project).returncode == 0
    write(project / "docs" / "light.txt", "The lighthouse keeper winds the lamp clock at dusk.\n")
    stale = run_holodeck("search", "lighthouse keeper", "--no-ingest", "--json", cwd=project)
    assert stale.returncode == 0
    assert stale.stderr == ""
    assert "light.txt" not in doc_ids(stale.stdout)

    fresh = run_holodeck("search", "lighthouse keeper", "--json", cwd=project)
    assert fresh.returncode == 0
    assert "kb: 4 files, 1 to ingest" in fresh.stderr
    assert "kb: 1 new, 0 changed, 0 touched, 3 unchanged" in fresh.stderr
    assert doc_ids(fresh.stdout)[0] == "light.txt"


def test_search_on_a_terminal_draws_a_bar_naming_the_file_it_embeds(tmp_path: Path) -> None:
    project = project_with_notes(tmp_path)
    sections = "\n\n".join(
        f"Section {i}. Valve {i} of bay {i * 3} is inspected every {i % 9 + 2} days and "
        f"its log book {i * 7} records the pressure, the load and the crew on duty."
        for i in range(400)
    )
    write(project / "docs" / "handbook.md", sections)
    size = (100, 160)
    child = spawn_holodeck("search", "valve inspection", cwd=project, size=size, no_color=False)
    lines = screens(child, size)
    bars = [
        (frame[i], frame[i + 1])
        for frame in lines
        for i in range(len(frame) - 1)
        if frame[i].startswith("kb ") and " tokens" in frame[i]
    ]
    assert bars, "no progress bar was drawn"
    assert any("%" in bar and "files ·" in bar and "chunks ·" in bar for bar, _ in bars)
    assert any(under.strip().startswith("embedding handbook.md") for _, under in bars)
    assert len({bar for bar, _ in bars}) >= 2  # it moved (rich redraws 10 times a second)
    final = "\n".join(lines[-1])
    assert "kb: 4 new, 0 changed" in final  # the bar goes, the summary line stays
    assert "handbook.md" in final  # among the results
