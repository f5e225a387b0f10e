"""``holodeck search`` prints the contract's "Formatted Output Template" byte for byte."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from cli_helpers import run_holodeck, write

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


def test_output_matches_the_template_byte_for_byte(project: Path) -> None:
    query = "Which tokens handle authentication?"
    data = json.loads(run_holodeck("search", query, "--json", cwd=project).stdout)
    results = data["tools"][0]["results"]
    assert [r["rank"] for r in results] == [1, 2]  # top_k
    assert results[0]["source_path"] == "data/docs/auth.md"
    assert results[0]["score"] >= results[1]["score"]
    s1, s2 = (f"{r['score']:.2f}" for r in results)
    second = results[1]["source_path"]
    expected = (
        "Found 2 result(s):\n"
        "\n"
        f"[1] Score: {s1} | Source: data/docs/auth.md\n"
        f"{DOCS['auth.md']}\n"
        "\n"
        f"[2] Score: {s2} | Source: {second}\n"
        f"{DOCS[Path(second).name]}\n"
    )
    result = run_holodeck("search", query, cwd=project)
    assert result.returncode == 0, result.stderr
    assert result.stdout == expected


def test_all_filtered_by_min_score(project: Path) -> None:
    result = run_holodeck("search", "JWT tokens", "--min-score", "0.99", cwd=project)
    assert result.stdout == "No results above similarity threshold 0.99\n"


def test_no_results(project: Path) -> None:
    result = run_holodeck("search", "JWT tokens", "--book", "no-such-folder", cwd=project)
    assert result.stdout == "No relevant results found for query: JWT tokens\n"


def test_empty_query_is_a_usage_error(project: Path) -> None:
    result = run_holodeck("search", "   ", cwd=project)
    assert result.returncode == 2
    assert "Search query cannot be empty" in result.stderr
