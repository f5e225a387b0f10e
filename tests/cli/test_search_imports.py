"""A shell `holodeck search` on the local index imports only what answering needs.

Start-up is most of a shell search's cost, and every module imported is paid for on every
search: the ingest pipeline, its converters, locks, progress bars, the watcher, a stemmer,
and the Redis, OpenAI and MCP clients stay out of a search that does not use them. Read
from the real CLI's own ``-X importtime`` report (every module the process imported).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from cli_helpers import run_holodeck, write

AGENT = """
name: imports
tools:
  - type: vectorstore
    name: kb
    source: docs
"""

#: Not needed to answer a query from the local index (the tool's config asks for none).
NEVER = (
    "holodeck.ingest.pipeline",
    "holodeck.ingest.embed_windows",
    "holodeck.ingest.prefetch",
    "holodeck.ingest.convert",
    "holodeck.cli.progress",
    "holodeck.tools.initialize",
    "holodeck.tools.watch",
    "holodeck.vectorstore.redis.adapter",
    "holodeck.embeddings.remote",
    "filelock",
    "watchfiles",
    "chardet",
    "markitdown",
    "pypdfium2",
    "pathspec",
    "redis",
    "redisvl",
    "openai",
    "mcp",
    "asyncio",
    "rich",
    "faiss",  # a small library is searched exactly
    "opentelemetry",  # tracing off: the SDK is imported only for --trace or observability:
    "holodeck.tracing.sdk",
)


def imported(*args: str, cwd: Path, command: str = "search", stdin: str = "") -> set[str]:
    """Every module a `holodeck COMMAND` process imported."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "AZURE_"))}
    env["HOME"] = str(cwd / "home")
    result = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "holodeck", command, *args],
        cwd=cwd,
        env=env,
        input=stdin,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr
    assert "[1] Score:" in result.stdout or command != "search"
    return {
        line.rsplit("|", 1)[1].strip()
        for line in result.stderr.splitlines()
        if line.startswith("import time:") and "|" in line
    }


def unwanted(modules: set[str]) -> list[str]:
    return sorted(m for m in modules if any(m == n or m.startswith(n + ".") for n in NEVER))


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("imports")
    write(root / "agent.yaml", AGENT)
    write(root / "docs" / "pumps.md", "# Pumps\n\nThe pumps are checked every morning.\n")
    write(root / "docs" / "ferry.txt", "The ferry leaves at noon on Sundays.\n")
    assert run_holodeck("ingest", cwd=root).returncode == 0
    return root


def test_a_search_without_ingest_imports_only_what_answering_needs(project: Path) -> None:
    modules = imported("--no-ingest", "when are the pumps checked", cwd=project)
    assert unwanted(modules) == []
    assert {"onnxruntime", "holodeck.vectorstore.sqlite.fulltext"} <= modules


def test_the_default_search_checks_files_without_the_pipeline_when_nothing_changed(
    project: Path,
) -> None:
    modules = imported("when are the pumps checked", cwd=project)
    assert unwanted(modules) == []
    assert "holodeck.ingest.discover" in modules  # it did look at the files

    write(project / "docs" / "keys.txt", "The spare keys hang in the office.\n")
    modules = imported("where are the spare keys", cwd=project)  # now it has work to do
    assert "holodeck.ingest.pipeline" in modules and "filelock" in modules


def test_retrieval_only_test_and_chat_load_no_llm_client(tmp_path: Path) -> None:
    """Without a model: section nothing asks an LLM, so its client (1.5 s of CPU to import
    openai) is never loaded by `holodeck test` or `holodeck chat`."""
    write(tmp_path / "agent.yaml", AGENT + TEST_CASE)
    write(tmp_path / "docs" / "pumps.md", "# Pumps\n\nThe pumps are checked every morning.\n")
    for command, stdin in (("test", ""), ("chat", "when are the pumps checked?\n")):
        modules = imported(cwd=tmp_path, command=command, stdin=stdin)
        clients = sorted(m for m in modules if m.split(".")[0] in ("openai", "anthropic"))
        assert clients == [], command
        assert "onnxruntime" in modules  # it did search


TEST_CASE = """
test_cases:
  - name: pumps
    input: when are the pumps checked?
    expected_content: [morning]
"""
