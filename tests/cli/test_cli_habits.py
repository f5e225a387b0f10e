"""Habits users bring from git, pip and ruff: flags after the command, config found from a
subfolder, no colour under NO_COLOR or in a pipe, errors that point at what the user has.

The real command (``run_holodeck``) or in a real pseudo-terminal (pexpect).
"""

from __future__ import annotations

import json
import os
import re
import sys
from pathlib import Path

import pexpect
import pytest
from cli_helpers import run_holodeck, write

AGENT = """
name: habits
tools:
  - type: vectorstore
    name: kb
    source: docs
test_cases:
  - name: rockets
    input: How do rockets fly?
    expected_sources: [rocket.md]
"""

#: An SGR sequence ("select graphic rendition": colour, bold, dim...). ``ESC[m`` and
#: ``ESC[0m`` only reset, which prompt_toolkit writes whatever the colour settings.
SGR = re.compile(r"\x1b\[([0-9;]*)m")


def styles(output: str) -> list[str]:
    """The SGR sequences of ``output`` that set a style (every one but the resets)."""
    return [m.group(0) for m in SGR.finditer(output) if m.group(1).strip("0;")]


def project(root: Path) -> Path:
    """A one-tool project with a test case, a folder below its docs and a skipped file."""
    write(root / "agent.yaml", AGENT)
    write(root / "docs" / "rocket.md", "# Rockets\n\nRockets fly by pushing hot exhaust gas out.\n")
    write(root / "docs" / "deep" / "space.md", "# Space\n\nSpace is mostly empty.\n")
    (root / "docs" / "diagram.png").write_bytes(b"\x89PNG\r\n")  # skipped with a warning
    return root


def run_in_terminal(args: list[str], cwd: Path, no_color: bool) -> tuple[str, int]:
    """``holodeck ARGS`` in a real pseudo-terminal: everything it printed, and its exit code."""
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("OPENAI_", "AZURE_")) and k not in ("NO_COLOR", "FORCE_COLOR")
    }
    env.update(HOME=str(cwd / "home"), TERM="xterm-256color", COLUMNS="100")
    if no_color:
        env["NO_COLOR"] = "1"
    output, status = pexpect.run(
        f"{sys.executable} -m holodeck {' '.join(args)}",
        cwd=str(cwd),
        env=env,
        withexitstatus=True,
        timeout=240,
        encoding="utf-8",
    )
    return output, status


# -- -v and -q before or after the command ---------------------------------------------------


@pytest.mark.parametrize(
    "args", [["-q", "ingest"], ["ingest", "-q"], ["ingest", "--quiet"]], ids=" ".join
)
def test_quiet_before_or_after_the_command(tmp_path: Path, args: list[str]) -> None:
    root = project(tmp_path)
    done = run_holodeck(*args, cwd=root)
    assert done.returncode == 0, done.stderr
    assert done.stderr == ""  # no progress, no warning about diagram.png
    assert done.stdout.startswith("kb: 2 new, 0 changed")  # the summary, on stdout


def test_not_quiet_shows_warnings_and_progress(tmp_path: Path) -> None:
    done = run_holodeck("ingest", cwd=project(tmp_path))
    assert done.returncode == 0, done.stderr
    assert "WARNING: Skipped diagram.png: unsupported file type .png" in done.stderr
    assert "kb: 2 new, 0 changed" in done.stderr


@pytest.mark.parametrize(
    "args", [["-v", "search", "rockets"], ["search", "-v", "rockets"], ["search", "rockets", "-v"]]
)
def test_verbose_before_or_after_the_command(tmp_path: Path, args: list[str]) -> None:
    root = project(tmp_path)
    done = run_holodeck(*args, cwd=root)
    assert done.returncode == 0, done.stderr
    assert f"DEBUG holodeck.cli: Agent file: {root.resolve() / 'agent.yaml'}" in done.stderr
    # search hides skipped-file warnings unless asked for everything
    assert "WARNING holodeck.ingest: Skipped diagram.png" in done.stderr
    assert "Source: docs/rocket.md" in done.stdout


def test_verbose_after_a_subcommand_shows_the_traceback(tmp_path: Path) -> None:
    write(tmp_path / "agent.yaml", "name: x\ntools:\n  - {type: vectorstore, name: kb, top_k: 0}\n")
    plain = run_holodeck("config", "show", cwd=tmp_path)
    assert plain.returncode == 2 and "Traceback" not in plain.stderr
    verbose = run_holodeck("config", "show", "--verbose", cwd=tmp_path)
    assert verbose.returncode == 2 and "Traceback" in verbose.stderr
    assert verbose.stderr.rstrip().splitlines()[-1] == plain.stderr.strip()


def test_verbose_wins_over_quiet_in_any_order(tmp_path: Path) -> None:
    root = project(tmp_path)
    for args in (["-q", "search", "rockets", "-v"], ["-v", "search", "rockets", "-q"]):
        done = run_holodeck(*args, cwd=root)
        assert "DEBUG holodeck.cli: Agent file:" in done.stderr, args


def test_every_command_lists_the_flags_in_its_help(tmp_path: Path) -> None:
    for args in (["ingest"], ["chat"], ["config", "show"], ["store", "info"], ["test"]):
        done = run_holodeck(*args, "--help", cwd=tmp_path)
        assert done.returncode == 0, done.stderr
        assert "-v, --verbose" in done.stdout and "-q, --quiet" in done.stdout, args


# -- agent.yaml found from a subfolder -------------------------------------------------------


def test_commands_find_agent_yaml_from_a_nested_folder(tmp_path: Path) -> None:
    root = project(tmp_path / "repo")
    (root / ".git").mkdir()
    nested = root / "docs" / "deep"

    shown = run_holodeck("config", "show", "--json", cwd=nested, home=tmp_path / "home")
    assert shown.returncode == 0, shown.stderr
    data = json.loads(shown.stdout)
    assert data["agent_file"] == str(root.resolve() / "agent.yaml")
    assert data["project_root"] == str(root.resolve())
    assert data["tools"][0]["source"] == "docs"  # relative to the agent file, not the cwd
    text = run_holodeck("config", "show", cwd=nested, home=tmp_path / "home")
    assert text.stdout.splitlines()[0].endswith(f"from {root.resolve() / 'agent.yaml'}")

    ingested = run_holodeck("ingest", cwd=nested, home=tmp_path / "home")
    assert ingested.returncode == 0, ingested.stderr
    assert "kb: 2 new" in ingested.stderr
    assert (root / ".holodeck" / "index").is_dir()  # the project's index, not the cwd's
    assert not (nested / ".holodeck").exists()
    found = run_holodeck("search", "how do rockets fly", cwd=nested, home=tmp_path / "home")
    assert "Source: docs/rocket.md" in found.stdout


@pytest.mark.parametrize("git", ["folder", "file"])  # a worktree or submodule has a .git file
def test_discovery_stops_at_the_repository_root(tmp_path: Path, git: str) -> None:
    project(tmp_path)  # an agent.yaml above the repository: not this repository's
    repo = tmp_path / "repo"
    nested = repo / "src" / "pkg"
    nested.mkdir(parents=True)
    if git == "folder":
        (repo / ".git").mkdir()
    else:
        (repo / ".git").write_text("gitdir: /elsewhere/.git/worktrees/repo\n")

    done = run_holodeck("config", "show", cwd=nested, home=tmp_path / "home")
    assert done.returncode == 2
    assert done.stderr == (
        f"Error: no agent.yaml in {nested.resolve()} or its parents up to the repository root "
        f"{repo.resolve()}; create one with `holodeck init`, or pass -a PATH\n"
    )

    # The repository root itself is searched (the stop is inclusive).
    write(repo / "agent.yaml", AGENT.replace("name: habits", "name: inner"))
    done = run_holodeck("config", "show", "--json", cwd=nested, home=tmp_path / "home")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["agent_file"] == str(repo.resolve() / "agent.yaml")


def test_no_agent_file_points_to_init_and_a_path(tmp_path: Path) -> None:
    (tmp_path / ".git").mkdir()  # keep the search inside this test's folder
    done = run_holodeck("ingest", cwd=tmp_path)
    assert done.returncode == 2
    assert done.stderr == (
        f"Error: no agent.yaml in {tmp_path.resolve()} (a repository's root); "
        "create one with `holodeck init`, or pass -a PATH\n"
    )
    missing = run_holodeck("chat", "-a", "nope.yaml", cwd=tmp_path)
    assert missing.returncode == 2
    assert missing.stderr == (
        "Error: nope.yaml: agent file not found "
        "(check the path, or create one with `holodeck init`)\n"
    )
    for out in (done.stderr, missing.stderr):
        assert "agent.yaml.example" not in out  # an installed package has no such file


def test_explicit_path_is_relative_to_the_current_folder(tmp_path: Path) -> None:
    root = project(tmp_path / "repo")
    (root / ".git").mkdir()
    other = write(root / "docs" / "deep" / "agent.yaml", AGENT.replace("docs", "."))
    done = run_holodeck("config", "show", "--json", cwd=root / "docs", home=tmp_path / "home")
    assert json.loads(done.stdout)["agent_file"] == str(root.resolve() / "agent.yaml")
    done = run_holodeck(
        "config", "show", "--json", "-a", "deep/agent.yaml", cwd=root / "docs", home=tmp_path
    )
    assert json.loads(done.stdout)["agent_file"] == str(other.resolve())


# -- NO_COLOR and pipes ----------------------------------------------------------------------


def test_no_color_in_a_terminal_means_no_styles(tmp_path: Path) -> None:
    root = project(tmp_path)
    coloured, status = run_in_terminal(["test"], root, no_color=False)
    assert status == 0, coloured
    assert "PASS" in coloured and styles(coloured)  # a terminal gets colours by default

    plain, status = run_in_terminal(["test", "--force-ingest"], root, no_color=True)
    assert status == 0, plain
    assert "PASS" in plain
    assert styles(plain) == [], plain


def test_output_to_a_pipe_has_no_escape_codes(tmp_path: Path) -> None:
    root = project(tmp_path)
    for args in (["test"], ["search", "rockets"], ["config", "show"], ["ingest"]):
        done = run_holodeck(*args, cwd=root, env={"NO_COLOR": ""})  # unset: colours allowed
        assert done.returncode == 0, done.stderr
        assert "\x1b" not in done.stdout + done.stderr, args
