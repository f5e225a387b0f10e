"""Leaving files out on purpose (``exclude:``, ``.holodeckignore``) and being told about the
files left out for a reason: once per run, then only a count while nothing changes.

Real files, the real CLI (run_holodeck), the real local model.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from cli_helpers import run_holodeck, write

AGENT = """
name: ignore-test
tools:
  - type: vectorstore
    name: kb
    source: docs
"""


def ingest(project: Path, *args: str) -> tuple[dict, str]:
    result = run_holodeck(*args, "ingest", "--json", cwd=project)
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)["tools"][0], result.stderr


def warnings(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines() if line.startswith("WARNING: Skipped")]


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "proj"
    docs = root / "docs"
    write(root / "agent.yaml", AGENT)
    write(docs / "guide.md", "# Guide\n\nThe pumps are checked every morning.\n")
    write(docs / "drafts" / "idea.md", "# Idea\n\nA half-baked plan for a second reactor.\n")
    write(docs / "logs" / "run.txt", "run 1 finished without errors\n")
    write(docs / "notes" / "secret.md", "# Secret\n\nThe vault code is 1234.\n")
    write(docs / "notes" / "keep.md", "# Keep\n\nThe spare keys hang in the office.\n")
    (docs / "photo.png").write_bytes(b"\x89PNG\r\n\x1a\n" + b"\x00" * 16)
    (docs / "drafts" / "sketch.png").write_bytes(b"\x89PNG\r\n\x1a\n" + b"\x00" * 16)
    return root


def test_exclude_and_holodeckignore_leave_files_out_silently(project: Path) -> None:
    write(project / "agent.yaml", AGENT + "    exclude: ['drafts/', '*.txt']\n")
    write(project / "docs" / ".holodeckignore", "# private notes\nnotes/secret.md\n")

    summary, stderr = ingest(project)

    assert summary["new"] == 2  # guide.md, notes/keep.md
    assert [s["path"] for s in summary["skipped_files"]] == ["photo.png"]
    assert warnings(stderr) == ["WARNING: Skipped photo.png: unsupported file type .png"]
    assert "drafts" not in stderr and "secret" not in stderr and "run.txt" not in stderr
    found = run_holodeck("search", "vault code", "--json", cwd=project)
    sources = {r["source_path"] for r in json.loads(found.stdout)["tools"][0]["results"]}
    assert sources == {"docs/guide.md", "docs/notes/keep.md"}


def test_a_file_that_becomes_excluded_loses_its_chunks(project: Path) -> None:
    first, _ = ingest(project)
    assert first["new"] == 5

    write(project / "docs" / ".holodeckignore", "secret.md\nlogs\n")
    second, stderr = ingest(project)

    assert (second["removed"], second["unchanged"]) == (2, 3)
    found = run_holodeck("search", "vault code", "--json", cwd=project)
    sources = {r["source_path"] for r in json.loads(found.stdout)["tools"][0]["results"]}
    assert "docs/notes/secret.md" not in sources and "docs/logs/run.txt" not in sources
    assert "secret" not in stderr


def test_a_bad_pattern_is_one_line_naming_where_it_is(project: Path) -> None:
    write(project / "agent.yaml", AGENT + "    exclude: ['drafts/', '!']\n")
    result = run_holodeck("ingest", cwd=project)
    assert result.returncode == 2
    assert result.stderr.strip() == (
        "Error: agent.yaml:6: tools[0].exclude[1]: not a valid gitignore-style pattern (got '!')"
    )

    write(project / "agent.yaml", AGENT + "    exclude: ['drafts/', '[z-a]bad']\n")
    result = run_holodeck("ingest", cwd=project)
    assert result.returncode == 2
    assert result.stderr.strip() == (
        "Error: agent.yaml:6: tools[0].exclude[1]: not a valid gitignore-style pattern (bad "
        "character range z-a) (got '[z-a]bad')"
    )

    write(project / "agent.yaml", AGENT)
    for text, shown, why in (
        ("\\", "'\\\\'", ""),
        ("[z-a]bad", "'[z-a]bad'", " (bad character range z-a)"),
    ):
        write(project / "docs" / ".holodeckignore", f"drafts/\n{text}\n")
        for args in (("ingest",), ("search", "anything")):
            result = run_holodeck(*args, cwd=project)
            assert result.returncode == 2
            [line] = result.stderr.strip().splitlines()
            assert line.endswith(
                f"docs/.holodeckignore:2: {shown} is not a valid gitignore pattern{why}; fix "
                "or remove that line"
            ), line


def test_skips_are_warned_once_then_counted_while_nothing_changes(project: Path) -> None:
    _, first = ingest(project)
    assert sorted(warnings(first)) == [
        "WARNING: Skipped drafts/sketch.png: unsupported file type .png",
        "WARNING: Skipped photo.png: unsupported file type .png",
    ]

    summary, again = ingest(project)
    assert warnings(again) == []
    assert "kb: 2 files skipped (see -v)" in again
    assert summary["skipped"] == 2  # the summary still counts them

    _, verbose = ingest(project, "-v")
    assert len([line for line in verbose.splitlines() if "Skipped " in line]) == 2

    (project / "docs" / "empty.md").write_bytes(b"")
    _, changed = ingest(project)
    assert warnings(changed) == ["WARNING: Skipped empty.md: empty file"]
    assert "kb: 2 other files skipped (see -v)" in changed


def test_two_tools_on_one_folder_warn_each_file_once_per_run(project: Path) -> None:
    second_tool = "  - type: vectorstore\n    name: kb2\n    source: docs\n"
    write(project / "agent.yaml", AGENT + second_tool)
    result = run_holodeck("ingest", cwd=project)
    assert result.returncode == 0, result.stderr
    assert sorted(warnings(result.stderr)) == [
        "WARNING: Skipped drafts/sketch.png: unsupported file type .png",
        "WARNING: Skipped photo.png: unsupported file type .png",
    ]


def test_a_quiet_search_does_not_use_up_the_warnings(project: Path) -> None:
    assert run_holodeck("search", "pumps", cwd=project).returncode == 0
    _, stderr = ingest(project)
    assert len(warnings(stderr)) == 2
