"""A project folder that is not what holodeck expects: one line naming the path, exit 2.

``.holodeck`` a file, ``.gitignore`` a folder: ``init`` writes nothing unless it can write
everything (a half-done init would make the next one say "already exists"), and ``ingest``,
``search`` and ``store info`` say what is in the way. ``init`` writes paths and phrases that
load back as written, a folder named ``${TOKEN}docs`` included.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from cli_helpers import run_holodeck, write


def listing(root: Path) -> list[str]:
    return sorted(p.relative_to(root).as_posix() for p in root.rglob("*"))


@pytest.mark.parametrize(
    ("blocker", "make", "says"),
    [
        (".holodeck", lambda p: p.write_text("not a folder\n"), "a file, not a folder"),
        (".gitignore", lambda p: p.mkdir(), "a folder, not a file"),
        ("agent.yaml", lambda p: p.mkdir(), "a folder, not a file"),
    ],
)
def test_init_writes_nothing_when_something_is_in_the_way(
    tmp_path: Path, blocker: str, make: Callable[[Path], object], says: str
) -> None:
    project = tmp_path / "proj"
    write(project / "docs" / "guide.md", "# Guide\n\nJobs are retried three times by default.\n")
    make(project / blocker)
    before = listing(project)
    refused = run_holodeck("init", cwd=project)
    assert (refused.returncode, refused.stdout) == (2, ""), refused.stdout + refused.stderr
    [line] = refused.stderr.strip().splitlines()
    assert line.startswith(f"Error: {project / blocker}: {says}; ") and line.endswith(
        "then run `holodeck init` again (nothing was written)"
    ), line
    assert listing(project) == before

    # Once the way is clear, init does the whole job (no "agent.yaml already exists").
    target = project / blocker
    target.rmdir() if target.is_dir() else target.unlink()
    done = run_holodeck("init", cwd=project)
    assert done.returncode == 0, done.stderr
    assert {"agent.yaml", ".holodeck/config.yaml", ".gitignore"} <= set(listing(project))


@pytest.fixture(scope="module")
def ingested(tmp_path_factory: pytest.TempPathFactory) -> Path:
    project = tmp_path_factory.mktemp("p")
    write(project / "docs" / "guide.md", "# Guide\n\nJobs are retried three times by default.\n")
    assert run_holodeck("init", cwd=project).returncode == 0
    assert run_holodeck("ingest", cwd=project).returncode == 0
    return project


@pytest.mark.parametrize(
    "args", [("ingest",), ("search", "retries"), ("search", "--no-ingest", "x"), ("store", "info")]
)
def test_a_holodeck_file_instead_of_the_folder_is_one_line(
    tmp_path: Path, ingested: Path, args: tuple[str, ...]
) -> None:
    project = tmp_path / "copy"
    write(project / "agent.yaml", (ingested / "agent.yaml").read_text())
    write(project / "docs" / "guide.md", (ingested / "docs" / "guide.md").read_text())
    write(project / ".holodeck", "something else's file\n")
    result = run_holodeck(*args, cwd=project)
    assert (result.returncode, result.stdout) == (2, ""), result.stdout + result.stderr
    assert result.stderr.strip() == (
        "Error: .holodeck: a file, not a folder; holodeck keeps the settings, id and local "
        "index of the project of agent.yaml in .holodeck/; rename or remove the file"
    )


def test_an_index_folder_that_is_a_file_is_one_line(tmp_path: Path, ingested: Path) -> None:
    project = tmp_path / "copy"
    write(project / "agent.yaml", (ingested / "agent.yaml").read_text())
    write(project / "docs" / "guide.md", (ingested / "docs" / "guide.md").read_text())
    write(project / ".holodeck" / "index", "not a folder\n")
    result = run_holodeck("ingest", cwd=project)
    assert result.returncode == 2, result.stdout + result.stderr
    assert result.stderr.strip().splitlines()[-1] == (
        f"Error: {project}/.holodeck/index/knowledge_base: cannot make the local index here: "
        f"{project}/.holodeck/index is a file, not a folder; rename or remove it"
    )


def test_init_writes_what_loads_back_as_written(tmp_path: Path) -> None:
    """A source named ``${TOKEN}docs`` and a phrase holding ``${REGION}`` are written as
    ``$${...}``, so agent.yaml loads (no variable is looked up) and the first test passes."""
    project = tmp_path / "proj"
    write(
        project / "${TOKEN}docs" / "deploy.md",
        "Deploys read the ${REGION} variable from the pipeline settings page of each stage.\n",
    )
    created = run_holodeck("init", "--source", "${TOKEN}docs", cwd=project)
    assert created.returncode == 0, created.stderr
    text = (project / "agent.yaml").read_text()
    assert 'source: "$${TOKEN}docs/"' in text and "$${REGION}" in text
    result = run_holodeck("test", cwd=project)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "1 case: 1 passed" in result.stdout
    shown = run_holodeck("search", "--no-ingest", "--json", "REGION variable", cwd=project)
    assert '"source_path": "${TOKEN}docs/deploy.md"' in shown.stdout
