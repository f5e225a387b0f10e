"""What a newcomer types gets a plain answer (issue 60, items 13 and 14).

A mistyped command is offered the nearest one; the top-level help shows each command's
summary whole; ``holodeck test`` prints each case once and has ``--json``; the original
HoloDeck's commands and flags that holodeck lacks say in one line what they were and what
to use. All through the real commands on a project made by the real ``holodeck init``.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from cli_helpers import error_line, run_holodeck

from holodeck.cli.original_cli import COMMANDS, FLAGS

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "handbook"
    root.mkdir()
    made = run_holodeck("init", cwd=root)
    assert made.returncode == 0, made.stderr
    return root


def test_a_mistyped_command_is_offered_the_nearest(project: Path) -> None:
    for typed, meant in (("serch", "search"), ("ingets", "ingest"), ("tset", "test")):
        done = run_holodeck(typed, "x", cwd=project)
        assert done.returncode == 2
        assert f"Error: No such command '{typed}'. Did you mean '{meant}'?" in done.stderr
    far = run_holodeck("frobnicate", cwd=project)
    assert far.returncode == 2 and "Did you mean" not in far.stderr


def test_the_top_level_help_shows_every_summary_whole(project: Path) -> None:
    shown = run_holodeck("--help", cwd=project, env={"COLUMNS": "80"})
    assert shown.returncode == 0
    commands = shown.stdout.split("Commands:\n", 1)[1]
    assert "..." not in commands
    assert max(len(line) for line in commands.splitlines()) <= 80
    flat = " ".join(commands.split())
    assert (
        "search Search the knowledge bases (ingesting whatever changed first, with its "
        "progress on stderr; --no-ingest searches what is indexed now)." in flat
    )
    assert "ingest Ingest the documents of every vectorstore tool (only what changed)." in flat


def failing_case(project: Path) -> None:
    agent = project / "agent.yaml"
    agent.write_text(
        agent.read_text()
        + '  - name: "missing-source"\n'
        + '    input: "Which kinds of files does the knowledge base index?"\n'
        + '    expected_sources: ["nowhere.md"]\n'
    )


def test_test_prints_each_case_once(project: Path) -> None:
    failing_case(project)
    done = run_holodeck("test", cwd=project)
    assert done.returncode == 1, done.stdout + done.stderr
    for name, verdict in (("starter-document", "PASS"), ("missing-source", "FAIL")):
        lines = [line for line in done.stdout.splitlines() if name in line]
        assert len(lines) == 1, done.stdout
        assert lines[0].startswith(f"{verdict:<5} {name}")
    (missing,) = [line for line in done.stdout.splitlines() if "missing-source" in line]
    assert "rank -, failed: sources" in missing
    assert "2 cases: 1 passed, 1 failed, 0 errors" in done.stdout


def test_test_json_is_the_whole_run_on_stdout(project: Path) -> None:
    failing_case(project)
    done = run_holodeck("test", "--json", "--report", "report.json", cwd=project)
    assert done.returncode == 1, done.stderr
    printed = json.loads(done.stdout)  # nothing else on stdout
    written = json.loads((project / "report.json").read_text())
    assert printed.keys() == written.keys()
    assert printed["verdict"] == "failed" and printed["summary"]["exit_code"] == 1
    assert (printed["summary"]["passed"], printed["summary"]["failed"]) == (1, 1)
    cases = {c["name"]: c for c in printed["cases"]}
    assert cases["starter-document"]["status"] == "passed"
    assert [c["check"] for c in cases["missing-source"]["checks"]] == ["expected_sources"]
    assert "metrics" in cases["starter-document"]
    assert "missing-source" in done.stderr  # the lines, for a person, on stderr

    passing = run_holodeck("test", "--json", "-k", "starter", cwd=project)
    assert passing.returncode == 0, passing.stderr
    assert json.loads(passing.stdout)["verdict"] == "passed"


#: Each flag with a value where it takes one, so only the flag is unknown.
_VALUES = {"--output": "r.json", "--parallel-test-cases": "2", "-n": "2", "-m": "5"}


@pytest.mark.parametrize(
    "command, flag", sorted(FLAGS), ids=[f"{c or 'holodeck'} {f}" for c, f in sorted(FLAGS)]
)
def test_each_flag_of_the_original_says_what_to_use(project: Path, command: str, flag: str) -> None:
    args = [command] if command else []
    args += [flag, *([_VALUES[flag]] if flag in _VALUES else [])]
    line = error_line(run_holodeck(*args, cwd=project, stdin=""))
    where = " ".join(["holodeck", *([command] if command else []), flag])
    assert line == f"Error: {where}: {FLAGS[(command, flag)]}"
    assert "No such option" not in line


def test_a_flag_of_the_original_given_to_any_command(project: Path) -> None:
    for args in (("--observability", "ingest"), ("test", "--observability"), ("chat", "-o")):
        line = error_line(run_holodeck(*args, cwd=project))
        assert "here: agent.yaml's observability: block (enabled: true)" in line


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_each_command_of_the_original_says_what_to_use(project: Path, command: str) -> None:
    line = error_line(run_holodeck(*command.split(), "x", cwd=project))
    assert line == f"Error: holodeck {command}: {COMMANDS[command]}"


def test_coming_from_holodeck_lists_them_all() -> None:
    page = (REPO / "docs" / "coming-from-holodeck.md").read_text()
    rows = [line for line in page.splitlines() if line.startswith("| `holodeck")]
    listed = " ".join(rows)
    for command in COMMANDS:
        assert f"`holodeck {command}`" in listed, command
    for command, flag in FLAGS:
        assert re.search(rf"[` ]{re.escape(flag)}[` ]", listed), (command, flag)
