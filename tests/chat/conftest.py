"""Copies of the example project (the repo's own index is never touched).

``example`` is already ingested (copied from one ingested once per session, mtimes kept), so
a test spends its time chatting; ``fresh_example`` has no index yet.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from cli_helpers import run_holodeck
from fake_openai import fake_openai  # noqa: F401  (the per-test fake LLM server fixture)

REPO = Path(__file__).resolve().parents[2]


def copy_example(target: Path) -> Path:
    """agent.yaml.example, examples/docs/ and an empty home/ under ``target``."""
    target.mkdir(parents=True, exist_ok=True)
    shutil.copy(REPO / "agent.yaml.example", target / "agent.yaml.example")
    shutil.copytree(REPO / "examples" / "docs", target / "examples" / "docs")
    (target / "home").mkdir()
    return target


@pytest.fixture
def fresh_example(tmp_path: Path) -> Path:
    """The example project with nothing ingested."""
    return copy_example(tmp_path / "project")


@pytest.fixture(scope="session")
def ingested_example(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = copy_example(tmp_path_factory.mktemp("chat") / "project")
    done = run_holodeck("ingest", "-a", "agent.yaml.example", cwd=root)
    assert done.returncode == 0, done.stderr
    return root


@pytest.fixture
def example(tmp_path: Path, ingested_example: Path) -> Path:
    """The example project with its local index built."""
    target = tmp_path / "project"
    shutil.copytree(ingested_example, target)
    return target
