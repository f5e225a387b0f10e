"""Search output: the tool hands the LLM the contract's "Formatted Output Template" byte for
byte; ``holodeck search`` prints the compact view for people, with where each result is."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest
from cli_helpers import run_holodeck, write

from holodeck.config.loader import load_project
from holodeck.tools.vectorstore_tool import build_tools

AGENT = """
name: format-test
tools:
  - type: vectorstore
    name: kb
    source: data/docs
    top_k: 2
"""

DOCS = {
    "auth.md": "Authentication is handled via JWT tokens in the Authorization header.",
    "api.md": "The API endpoint /users accepts GET and POST requests.",
    "deploy.md": "Deploy the application using Docker containers on any host.",
}


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("fmt")
    write(root / "agent.yaml", AGENT)
    for name, text in DOCS.items():
        write(root / "data" / "docs" / name, text + "\n")
    assert run_holodeck("ingest", cwd=root).returncode == 0
    return root


def _found(project: Path, query: str) -> list[dict]:
    """What ``--json`` reports: ranks, scores, places."""
    data = json.loads(run_holodeck("search", query, "--json", cwd=project).stdout)
    results = data["tools"][0]["results"]
    assert [r["rank"] for r in results] == [1, 2]  # top_k
    assert results[0]["source_path"] == "data/docs/auth.md"
    assert results[0]["score"] >= results[1]["score"]
    assert [r["location"] for r in results] == ["line 1", "line 1"]
    return results


def test_tool_output_for_the_llm_matches_the_template_byte_for_byte(
    project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    query = "Which tokens handle authentication?"
    results = _found(project, query)
    s1, s2 = (f"{r['score']:.2f}" for r in results)
    second = results[1]["source_path"]
    expected = (
        "Found 2 result(s):\n"
        "\n"
        f"[1] Score: {s1} | Source: data/docs/auth.md\n"
        f"{DOCS['auth.md']}\n"
        "\n"
        f"[2] Score: {s2} | Source: {second}\n"
        f"{DOCS[Path(second).name]}"
    )
    monkeypatch.setenv("HOME", str(project / "home"))  # as run_holodeck runs the CLI
    (tool,) = build_tools(load_project(project / "agent.yaml"))
    try:
        tool.initialize_sync()
        assert asyncio.run(tool.search(query)) == expected
    finally:
        tool.close()


def test_piped_output_is_the_compact_view_with_where_each_result_is(project: Path) -> None:
    """Into a pipe, as on a terminal: per result its line (with its location), then the lines
    that best match, indented; not whole passages (issue 60, item 10)."""
    query = "Which tokens handle authentication?"
    results = _found(project, query)
    s1, s2 = (f"{r['score']:.2f}" for r in results)
    second = results[1]["source_path"]
    expected = (
        f"[1] Score: {s1} | Source: data/docs/auth.md | Location: line 1\n"
        f"    {DOCS['auth.md']}\n"
        f"[2] Score: {s2} | Source: {second} | Location: line 1\n"
        f"    {DOCS[Path(second).name]}\n"
    )
    result = run_holodeck("search", query, cwd=project)
    assert result.returncode == 0, result.stderr
    assert result.stdout == expected


def test_all_filtered_by_min_score(project: Path) -> None:
    result = run_holodeck("search", "JWT tokens", "--min-score", "0.99", cwd=project)
    assert result.stdout == "No results above similarity threshold 0.99\n"


def test_no_results_for_a_folder_that_does_not_exist_says_so(project: Path) -> None:
    result = run_holodeck("search", "JWT tokens", "--book", "no-such-folder", cwd=project)
    assert result.stdout == "No relevant results found for query: JWT tokens\n"
    assert "kb: no folder 'no-such-folder' in its documents (folders: .)" in result.stderr


def test_empty_query_is_a_usage_error(project: Path) -> None:
    result = run_holodeck("search", "   ", cwd=project)
    assert result.returncode == 2
    assert "Search query cannot be empty" in result.stderr


def test_a_nan_score_floor_is_refused(project: Path) -> None:
    result = run_holodeck("search", "--min-score", "nan", "tokens", cwd=project)
    assert (result.returncode, result.stdout) == (2, "")
    assert result.stderr.strip().splitlines()[-1] == (
        "Error: Invalid value for '--min-score': 'nan' is not a number 0.0<=x<=1.0"
    )


def test_a_query_that_is_not_utf8_is_searched_with_the_bad_bytes_replaced(project: Path) -> None:
    """A shell argument in another encoding: each bad byte becomes U+FFFD, and a warning
    says what was searched (it used to be exit 3, "Failed to generate query embedding")."""
    query = b"JWT tokens\xff in the header"  # argv bytes, as a Latin-1 terminal sends them
    # Its own process: how argv bytes reach the command is what is tested.
    result = run_holodeck(
        "search",
        "--no-ingest",
        "--json",
        query,
        cwd=project,
        own_process=True,  # type: ignore[arg-type]
    )
    assert result.returncode == 0, result.stderr
    found = json.loads(result.stdout)
    assert found["query"] == "JWT tokens\ufffd in the header"
    assert found["tools"][0]["results"][0]["source_path"] == "data/docs/auth.md"
    assert result.stderr.strip() == (
        "WARNING: The query holds bytes that are not UTF-8; searching for 'JWT tokens\ufffd in "
        "the header' (each bad byte replaced by \ufffd)"
    )
