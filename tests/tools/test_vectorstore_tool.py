"""The contract's Python API: initialize/search, their exceptions and messages, the definition."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from cli_helpers import write

from holodeck.config.loader import load_project
from holodeck.errors import ValidationError
from holodeck.tools.vectorstore_tool import VectorStoreTool, build_tools


def make_tool(tmp_path: Path, extra: str = "", source: str = "docs") -> VectorStoreTool:
    write(
        tmp_path / "agent.yaml",
        f"name: api-test\ntools:\n  - type: vectorstore\n    name: kb\n    source: {source}\n"
        f"    description: Semantic search over product documentation\n{extra}",
    )
    return build_tools(load_project(tmp_path / "agent.yaml"))[0]


def test_search_before_initialize_is_refused(tmp_path: Path) -> None:
    tool = make_tool(tmp_path)
    with pytest.raises(RuntimeError, match=r"^VectorStoreTool must be initialized before search$"):
        asyncio.run(tool.search("anything"))


def test_missing_source_is_file_not_found(tmp_path: Path) -> None:
    tool = make_tool(tmp_path, source="nowhere")
    with pytest.raises(FileNotFoundError, match="nowhere"):
        asyncio.run(tool.initialize())
    assert tool.is_initialized is False


def test_no_supported_files_is_validation_error_naming_the_source(tmp_path: Path) -> None:
    write(tmp_path / "docs" / "image.png", "not really")
    tool = make_tool(tmp_path)
    with pytest.raises(ValidationError, match="docs"):
        asyncio.run(tool.initialize())


def test_initialize_search_and_counts(tmp_path: Path) -> None:
    write(tmp_path / "docs" / "a.md", "The reactor is cooled by liquid sodium.\n")
    write(tmp_path / "docs" / "sub" / "b.txt", "Bananas are rich in potassium.\n")
    tool = make_tool(tmp_path, extra="    min_similarity_score: 0.2\n")
    asyncio.run(tool.initialize())
    assert tool.is_initialized and tool.document_count == 2
    out = asyncio.run(tool.search("what cools the reactor?"))
    assert out.startswith("Found 1 result(s):\n\n[1] Score: ")
    assert "| Source: docs/a.md\nThe reactor is cooled by liquid sodium." in out
    with pytest.raises(ValueError, match=r"^Search query cannot be empty$"):
        asyncio.run(tool.search("  "))
    # force_ingest re-embeds everything
    asyncio.run(tool.initialize(force_ingest=True))
    assert tool.summary is not None and tool.summary.chunks_embedded == 2


def test_tool_definition_is_the_contracts(tmp_path: Path) -> None:
    tool = make_tool(tmp_path)
    assert tool.tool_definition() == {
        "name": "kb",
        "description": "Semantic search over product documentation",
        "parameters": {
            "type": "object",
            "properties": {
                "query": {"type": "string", "description": "Natural language search query"}
            },
            "required": ["query"],
        },
    }
