"""``holodeck init``: a new project whose first ingest and first test pass with no edits.

The real CLI (run_holodeck), the real local model and index, real documents.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import yaml
from cli_helpers import run_holodeck, write

REPO = Path(__file__).resolve().parents[2]


def ok(result) -> str:  # type: ignore[no-untyped-def]
    assert result.returncode == 0, result.stdout + result.stderr
    return result.stdout


def test_init_in_an_empty_folder_then_ingest_and_test_pass(tmp_path: Path) -> None:
    project = tmp_path / "Acme Handbook"
    project.mkdir()
    out = ok(run_holodeck("init", cwd=project))
    assert "Created agent.yaml" in out and "docs/getting-started.md" in out
    agent = yaml.safe_load((project / "agent.yaml").read_text())
    assert agent["name"] == "acme-handbook"
    assert [t["source"] for t in agent["tools"]] == ["docs/"]
    assert len(agent["test_cases"]) == 1
    assert (project / "docs" / "getting-started.md").is_file()
    assert ".holodeck/index/" in (project / ".gitignore").read_text().splitlines()
    config = (project / ".holodeck" / "config.yaml").read_text()
    assert "# vectorstore:" in config and yaml.safe_load(config) is None  # all comments

    shown = json.loads(ok(run_holodeck("config", "show", "--json", cwd=project)))
    assert shown["tools"][0]["database"]["provider"] == "local"
    ok(run_holodeck("ingest", cwd=project))
    tested = run_holodeck("test", cwd=project)
    assert tested.returncode == 0, tested.stdout + tested.stderr
    assert "1 passed" in tested.stdout


def test_the_example_case_is_made_from_the_users_own_documents(tmp_path: Path) -> None:
    project = tmp_path / "skyline"
    shutil.copytree(REPO / "examples" / "docs", project / "docs")
    ok(run_holodeck("init", cwd=project))
    agent = yaml.safe_load((project / "agent.yaml").read_text())
    case = agent["test_cases"][0]
    (expected,) = case["expected_sources"]
    assert (project / "docs" / expected).is_file()
    text = (project / "docs" / expected).read_text()
    assert all(word in text for word in case["input"].split())  # a phrase of that file
    assert not (project / "docs" / "getting-started.md").exists()  # no starter among real docs
    ok(run_holodeck("ingest", cwd=project))
    tested = run_holodeck("test", cwd=project)
    assert tested.returncode == 0, tested.stdout + tested.stderr


def test_source_option_and_a_folder_of_pdfs_only(tmp_path: Path) -> None:
    project = tmp_path / "ops"
    manuals = project / "manuals"
    manuals.mkdir(parents=True)
    shutil.copy(REPO / "examples/docs/operations/backup-and-restore.pdf", manuals)
    out = ok(run_holodeck("init", "ops", "--source", "manuals", cwd=tmp_path))
    assert "cd ops" in out  # the next step says where to run it
    agent = yaml.safe_load((project / "agent.yaml").read_text())
    assert agent["tools"][0]["source"] == "manuals/"
    assert agent["test_cases"][0]["expected_sources"] == ["backup-and-restore.pdf"]
    ok(run_holodeck("ingest", cwd=project))
    ok(run_holodeck("test", cwd=project))


def test_a_missing_source_is_one_line_and_nothing_is_written(tmp_path: Path) -> None:
    result = run_holodeck("init", "--source", "nowhere", cwd=tmp_path)
    assert result.returncode == 2
    assert result.stderr.count("\n") == 1 and "nowhere" in result.stderr
    assert "Traceback" not in result.stderr
    assert not (tmp_path / "agent.yaml").exists() and not (tmp_path / ".gitignore").exists()


def test_never_overwrites_without_force(tmp_path: Path) -> None:
    write(tmp_path / "agent.yaml", "name: mine\n")
    write(tmp_path / ".holodeck" / "config.yaml", "# my settings\n")
    write(tmp_path / ".gitignore", "node_modules/\n.holodeck/index/")
    result = run_holodeck("init", cwd=tmp_path)
    assert result.returncode == 2 and "--force" in result.stderr
    assert (tmp_path / "agent.yaml").read_text() == "name: mine\n"
    assert not (tmp_path / "docs").exists()

    shutil.copy(REPO / "examples/docs/README.txt", tmp_path / "notes.txt")
    out = ok(run_holodeck("init", "--force", "--source", "notes.txt", cwd=tmp_path))
    assert "Overwrote agent.yaml" in out
    agent = yaml.safe_load((tmp_path / "agent.yaml").read_text())
    assert agent["tools"][0]["source"] == "notes.txt"
    # --force rewrites the config too; the .gitignore keeps its lines, the entry is not repeated
    assert "vectorstore:" in (tmp_path / ".holodeck" / "config.yaml").read_text()
    gitignore = (tmp_path / ".gitignore").read_text().splitlines()
    assert gitignore.count(".holodeck/index/") == 1 and "node_modules/" in gitignore


def test_an_existing_project_config_is_kept(tmp_path: Path) -> None:
    write(tmp_path / ".holodeck" / "config.yaml", "# shared settings\n")
    out = ok(run_holodeck("init", cwd=tmp_path))
    assert "Kept .holodeck/config.yaml" in out
    assert (tmp_path / ".holodeck" / "config.yaml").read_text() == "# shared settings\n"
    assert (tmp_path / "agent.yaml").is_file()


def test_init_enables_the_opt_in_types_the_folder_holds_and_q_is_quiet(tmp_path: Path) -> None:
    manuals = tmp_path / "manuals"
    write(manuals / "guide.md", "# Guide\n\nThe ferry leaves at noon on Sundays and holidays.\n")
    write(manuals / "api" / "dgram.html", "<html><body><h1>UDP</h1><p>Sockets.</p></body></html>")
    write(manuals / "api" / "old.HTM", "<html><body><p>The old dome.</p></body></html>")

    made = run_holodeck("init", "--source", "manuals", cwd=tmp_path)
    assert made.returncode == 0, made.stderr
    assert "Enabled .html .htm in file_types (1 .html, 1 .htm in manuals/)" in made.stdout
    tool = yaml.safe_load((tmp_path / "agent.yaml").read_text())["tools"][0]
    assert tool["file_types"] == [".txt", ".md", ".pdf", ".csv", ".json", ".html", ".htm"]
    ingested = run_holodeck("ingest", "--json", cwd=tmp_path)
    assert ingested.returncode == 0, ingested.stderr
    summary = json.loads(ingested.stdout)["tools"][0]
    assert (summary["new"], summary["skipped"]) == (3, 0)  # nothing left out, no warning

    quiet = tmp_path / "quiet"
    write(quiet / "docs" / "notes.md", "# Notes\n\nThe night log is kept in the red binder.\n")
    silent = run_holodeck("init", "-q", cwd=quiet)
    assert silent.returncode == 0 and silent.stdout == "" and silent.stderr == ""
    assert "file_types" not in (quiet / "agent.yaml").read_text()  # only defaults there
