"""A result's section is the heading its shown text sits under: never a later heading the
chunk runs into, nor an AsciiDoc admonition or a list entry taken for a title.

Real files (an AsciiDoc tutorial as .adoc, and a Markdown guide), the real CLI in a real
terminal, the real model.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from cli_helpers import run_holodeck, write
from terminal import final_screen, spawn_holodeck

AGENT = """
name: labels-test
tools:
  - type: vectorstore
    name: kb
    source: docs
    file_types: [.md, .adoc]
    chunk_size: 128
    chunk_overlap: 16
"""

GUIDE = """\
# Getting started

## 3. Open the dashboard

Open the dashboard from the start menu. The dashboard shows every job of the team in one
list, with its owner, its last run and whether that run passed.

## 4. Create your first job

Press New job in the top bar and give the job a name that says what it does. Pick the
folder the job reads from and the schedule it runs on; a job without a schedule runs only
when someone presses Run. Each job keeps the log of its last fifty runs, and a failing run
is retried up to three times before the job is marked as failed and its owner is told by
mail. Jobs can be copied, paused and deleted from the same list, and a deleted job keeps
its logs for a week in case it was deleted by mistake.
"""

WALK = """\
= My First Object Walk

== Setting Up

Create a new branch from `master` and open a new file for the command handler.

NOTE: `trace_printf()` differs from `printf()` in that it can be turned on or
off at runtime, so the debug output of the walk goes there.

[NOTE]
====
Instead of using the shorthand `add_head_to_pending()`, you could fill in a
`setup_revision_opt` yourself, which gives finer control over where the walk starts.
====

== Main porcelain commands

linkgit:git-add[1]::
\tAdd file contents to the index.

linkgit:git-range-diff[1]::
\tCompare two commit ranges, for instance two versions of a branch.

linkgit:git-rebase[1]::
\tReapply commits on top of another base tip.
"""


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("labels")
    write(root / "agent.yaml", AGENT)
    write(root / "docs" / "guide.md", GUIDE)
    write(root / "docs" / "walk.adoc", WALK)
    result = run_holodeck("ingest", cwd=root)
    assert result.returncode == 0, result.stderr
    return root


def heading_above(text: str, phrase: str) -> str:
    """The title of the last heading above ``phrase`` in a Markdown or AsciiDoc file."""
    before = text[: text.index(phrase)]
    titles = re.findall(r"^(?:#{1,6}|={1,5}) (.+)$", before, re.MULTILINE)
    return titles[-1]


def shown_on_terminal(project: Path, query: str) -> tuple[str, list[str]]:
    """The first result's header and the lines of text shown under it, on a real terminal."""
    size = (60, 160)
    child = spawn_holodeck("search", query, "--top-k", "1", "--no-ingest", cwd=project, size=size)
    lines = [line for line in final_screen(child, size) if line.strip()]
    return lines[0], [line.strip().strip("…").strip() for line in lines[1:]]


def best(project: Path, query: str) -> dict:
    found = run_holodeck("search", query, "--top-k", "1", "--no-ingest", "--json", cwd=project)
    assert found.returncode == 0, found.stderr
    return json.loads(found.stdout)["tools"][0]["results"][0]


@pytest.mark.parametrize(
    ("doc", "source", "query"),
    [
        ("guide.md", GUIDE, "open the dashboard from the start menu to see each job's owner"),
        ("guide.md", GUIDE, "how many times is a failing run retried"),
        ("walk.adoc", WALK, "fill in setup_revision_opt for finer control where the walk starts"),
        ("walk.adoc", WALK, "trace_printf can be turned on or off at runtime"),
        ("walk.adoc", WALK, "compare two commit ranges, two versions of a branch"),
    ],
)
def test_the_section_is_the_heading_above_the_shown_text(
    project: Path, doc: str, source: str, query: str
) -> None:
    result = best(project, query)
    assert result["source_path"] == f"docs/{doc}"
    path = result["section"].split(" › ")
    titles = re.findall(r"^(?:#{1,6}|={1,5}) (.+)$", source, re.MULTILINE)
    assert set(path) <= set(titles), path  # no admonition, block or list entry in it
    title = path[-1]
    header, shown = shown_on_terminal(project, query)
    assert f"docs/{doc} › {result['section']}" in header
    words = [line for line in shown if len(line) > 20]
    assert words, shown
    for line in words:  # every line of text shown sits under the section named
        phrase = next(p for p in (line[:40], line[-40:]) if p in source)
        assert heading_above(source, phrase) == title, (line, result["section"])
