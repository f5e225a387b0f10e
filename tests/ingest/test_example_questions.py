"""On the example documents, hand-written questions find their file at rank 1 (real model)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
import yaml

from holodeck.config.loader import load_project
from holodeck.tools.vectorstore_tool import build_tools

REPO = Path(__file__).resolve().parents[2]
QUESTIONS = yaml.safe_load((Path(__file__).parent / "example_questions.yaml").read_text())


@pytest.fixture(scope="module")
def tool(tmp_path_factory: pytest.TempPathFactory):  # type: ignore[no-untyped-def]
    root = tmp_path_factory.mktemp("example")
    shutil.copy(REPO / "agent.yaml.example", root / "agent.yaml")
    shutil.copytree(REPO / "examples", root / "examples")
    (tool,) = build_tools(load_project(root / "agent.yaml"))
    tool.initialize_sync()
    return tool


@pytest.mark.parametrize("case", QUESTIONS, ids=[q["expected_source"] for q in QUESTIONS])
def test_question_finds_its_file_first(tool, case: dict) -> None:  # type: ignore[no-untyped-def]
    results, _ = tool.find(case["question"])
    ranked = [r.source_path for r in results]
    assert ranked[0] == case["expected_source"], ranked
