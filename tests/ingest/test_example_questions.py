"""On the example documents, hand-written questions find their file (real model).

The questions paraphrase their file (``telephone`` for ``phone``): the model alone puts it
first; the default hybrid ranking, where an incidental shared word also counts, keeps it
in the top three.
"""

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
def test_question_finds_its_file(tool, case: dict) -> None:  # type: ignore[no-untyped-def]
    by_meaning, _ = tool.find(case["question"], mode="semantic")
    assert by_meaning[0].source_path == case["expected_source"], by_meaning
    hybrid, _ = tool.find(case["question"])
    assert case["expected_source"] in [r.source_path for r in hybrid[:3]], hybrid
