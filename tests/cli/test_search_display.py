"""`holodeck search` for people: on a terminal, what chat shows (per result where it is, then
the lines that best match, highlighted; --full for whole passages); a query that starts with
"-" is searched; in a pipe, the same compact view, plain; --json the whole record.

The real CLI in a real terminal (pexpect and pyte), real files, the real local model.
"""

from __future__ import annotations

import json
import re
import shutil
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


def on_terminal(project: Path, *args: str, columns: int = 100) -> list[str]:
    """The screen `holodeck search ARGS` leaves on a terminal ``columns`` wide."""
    size = (200, columns)
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


def test_a_pipe_gets_the_terminals_compact_view_and_json_the_whole_record(project: Path) -> None:
    query = "which gauge does the operator check in step 7?"
    piped = run_holodeck("search", "--no-ingest", query, cwd=project)
    assert piped.returncode == 0, piped.stderr
    lines = piped.stdout.splitlines()
    headers = [i for i, line in enumerate(lines) if line.startswith("[")]
    assert lines[0].startswith("[1] Score: ") and "| Source: docs/git-merge.txt" in lines[0]
    assert "| Location: lines " in lines[0] and "| Section: git-merge(1) › EXAMPLES" in lines[0]
    # per result its line and at most 3 lines around the best match, not the whole passage
    assert all(b - a <= 4 for a, b in zip(headers, [*headers[1:], len(lines)], strict=True))
    assert all(line.startswith("    ") for line in lines if not line.startswith("["))
    assert any("gauge 7" in line for line in lines)
    assert "Step 39" not in piped.stdout and "\x1b" not in piped.stdout
    assert all(len(line) <= 100 for line in lines if not line.startswith("["))

    whole = run_holodeck("search", "--no-ingest", "--full", query, cwd=project)
    assert "Step 39" in whole.stdout and len(whole.stdout) > len(piped.stdout)

    record = json.loads(run_holodeck("search", "--no-ingest", "--json", query, cwd=project).stdout)
    best = record["tools"][0]["results"][0]  # the passage whole, as --full prints it
    assert best["content"] in whole.stdout and best["content"].count("\n") > 10
    assert f"| Location: {best['location']} |" in lines[0]


def test_a_query_starting_with_a_dash_is_searched(project: Path) -> None:
    found = run_holodeck("search", "--no-ff", cwd=project)
    assert found.returncode == 0, found.stderr
    assert found.stdout.startswith("[1] Score: ")
    assert "| Source: docs/git-merge.txt | Location: lines " in found.stdout
    assert "| Section: git-merge(1) › " in found.stdout

    mistyped = run_holodeck("search", "--top-kk", "3", "ferry", cwd=project)
    assert mistyped.returncode == 2
    assert "No such option '--top-kk'. Did you mean '--top-k'?" in mistyped.stderr


REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def example(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The repository's example project (agent.yaml.example, examples/docs), ingested."""
    root = tmp_path_factory.mktemp("example")
    shutil.copy(REPO / "agent.yaml.example", root / "agent.yaml")
    shutil.copytree(REPO / "examples" / "docs", root / "examples" / "docs")
    assert run_holodeck("ingest", cwd=root).returncode == 0
    return root


def test_a_narrow_terminal_shows_each_location_and_the_sentence_that_answers(
    example: Path,
) -> None:
    """Issue 60, item 9: on 80 columns the long section path is shortened in its middle,
    never the location; the snippet is the sentence that answers, not one that only
    repeats the question's words ("... never count as failed and are never retried")."""
    query = "How many times is a failing task retried?"
    found = run_holodeck("search", "--json", "--no-ingest", query, cwd=example)
    results = json.loads(found.stdout)["tools"][0]["results"]
    assert results[0]["source_path"] == "examples/docs/guides/retries.md"
    assert len(results[0]["section"]) > 40  # too long for the line beside path and location

    # the answer's sentence: in the best chunk, or in a neighbour merged into it, which the
    # header then names too
    best = results[0]
    (holder,) = [
        loc for start, end, loc in best["places"] if "3 attempts" in best["content"][start:end]
    ]
    shown = f" (shown: {holder.split()[1]})" if holder != best["location"] else ""

    lines = on_terminal(example, query, columns=80)
    headers = [line for line in lines if re.match(r"\[\d+\] ", line)]
    assert len(headers) == len(results)  # one line each: nothing wrapped
    assert headers[0].endswith(f" · {best['location']}{shown}"), headers[0]
    for header, result in zip(headers, results, strict=True):
        assert len(header) <= 80 and f" · {result['location']}" in header, header
    # a long section gives way in its middle, the path and the location stay whole
    shortened = [
        (header, result)
        for header, result in zip(headers, results, strict=True)
        if result["section"] and result["section"] not in header
    ]
    assert shortened, headers
    for header, result in shortened:
        assert f"{result['source_path']} › " in header or f"{result['source_path']} · " in header
        kept = header.split(f"{result['source_path']} › ", 1)[-1].rsplit(" · ", 1)[0]
        assert "…" in kept or " › " not in header, header

    first = lines[lines.index(headers[0]) + 1 : lines.index(headers[1])]
    assert 1 <= len(first) <= 3
    assert "3 attempts in total" in " ".join(first), first
