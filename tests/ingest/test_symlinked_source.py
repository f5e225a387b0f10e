"""A tool's ``source`` that is a symlink to a folder outside the project (a shared docs
checkout): the folder the user named is the library's source, so it never "moves"; only
files inside what it resolves to are read (the rule in docs/ingestion.md)."""

from __future__ import annotations

import json
from pathlib import Path

from cli_helpers import run_holodeck, write

AGENT = "name: linked\ntools:\n  - type: vectorstore\n    name: kb\n    source: docs\n"


def test_a_symlinked_source_is_the_source_as_named(tmp_path: Path) -> None:
    shared = tmp_path / "shared-docs"
    write(shared / "kiln.md", "# Kiln\n\nThe kiln fires stoneware at cone six.\n")
    write(tmp_path / "outside.md", "# Secret\n\nNothing here may be read.\n")
    (shared / "leak.md").symlink_to(tmp_path / "outside.md")
    project = tmp_path / "project"
    write(project / "agent.yaml", AGENT)
    (project / "docs").symlink_to(shared, target_is_directory=True)
    for _ in range(2):  # the second run finds everything as the first left it
        done = run_holodeck("ingest", "--json", cwd=project)
        assert done.returncode == 0, done.stdout + done.stderr
        assert "moved" not in done.stderr and "still exists" not in done.stderr
    summary = json.loads(done.stdout)["tools"][0]
    assert summary["unchanged"] == 1 and summary["new"] == 0 and summary["moved"] == 0
    found = run_holodeck("search", "--json", "kiln stoneware", cwd=project)
    assert found.returncode == 0 and "moved" not in found.stderr
    hits = json.loads(found.stdout)["tools"][0]["results"]
    assert {h["source_path"] for h in hits} == {"docs/kiln.md"}  # leak.md leads outside: unread
    assert "Nothing here may be read" not in found.stdout
