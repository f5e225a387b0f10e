"""`holodeck search` for people: on a terminal, what chat shows (per result where it is, then
the lines that best match, highlighted; --full for whole passages); a query that starts with
"-" is searched; in a pipe, the contract's text with each result's location and section.

The real CLI in a real terminal (pexpect and pyte), real files, the real local model.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from cli_helpers import run_holodeck, write
from terminal import final_screen, spawn_holodeck

AGENT = """
name: search-display
tools:
  - type: vectorstore
    name: kb
    source: docs
    top_k: 3
"""

LONG = " ".join(
    f"Step {i}: the operator checks gauge {i} and writes its reading in the log book."
    for i in range(1, 40)
)
MANUAL = f"""\
git-merge(1)
============

OPTIONS
-------

--no-ff::
\tCreate a merge commit in all cases, even when the merge could instead be resolved
\tas a fast-forward.

EXAMPLES
--------

Merge a topic branch::
+
{LONG}
"""


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("display")
    write(root / "agent.yaml", AGENT)
    write(root / "docs" / "git-merge.txt", MANUAL)
    write(root / "docs" / "ferry.md", "# Ferry\n\nThe ferry leaves at noon on Sundays.\n")
    assert run_holodeck("ingest", cwd=root).returncode == 0
    return root


def on_terminal(project: Path, *args: str) -> list[str]:
    """The screen `holodeck search ARGS` leaves on a 100-column terminal."""
    size = (200, 100)
    child = spawn_holodeck("search", *args, "--no-ingest", cwd=project, size=size, no_color=False)
    return final_screen(child, size)


def test_a_terminal_shows_where_each_result_is_and_the_lines_that_match(project: Path) -> None:
    lines = on_terminal(project, "which gauge does the operator check in step 7?")

    first = lines[0]
    assert first.startswith("[1] ") and "docs/git-merge.txt › git-merge(1) › EXAMPLES" in first
    assert " · lines " in first
    numbered = [i for i, line in enumerate(lines) if line.startswith("[")]
    assert all(b - a <= 4 for a, b in zip(numbered, [*numbered[1:], len(lines)], strict=True))
    assert any("gauge 7" in line for line in lines)  # the passage that best matches
    assert len(lines) <= 4 * 3

    whole = on_terminal(project, "which gauge does the operator check in step 7?", "--full")
    assert len(whole) > len(lines)
    assert any("Step 39" in line for line in whole)


def test_a_query_starting_with_a_dash_is_searched(project: Path) -> None:
    found = run_holodeck("search", "--no-ff", cwd=project)
    assert found.returncode == 0, found.stderr
    assert found.stdout.startswith("Found ")
    assert "Source: docs/git-merge.txt (lines " in found.stdout
    assert "| Section: git-merge(1) › " in found.stdout

    mistyped = run_holodeck("search", "--top-kk", "3", "ferry", cwd=project)
    assert mistyped.returncode == 2
    assert "No such option '--top-kk'. Did you mean '--top-k'?" in mistyped.stderr
