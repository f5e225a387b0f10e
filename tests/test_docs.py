"""The documentation a user reads is the program's: every command and option is in the CLI
reference, which is what ``--help`` prints today, and the pages build without a warning."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import click
from cogapp import Cog

from holodeck.cli.main import cli

REPO = Path(__file__).resolve().parents[1]
CLI_PAGE = REPO / "docs" / "cli.md"


def commands(group: click.Group, path: tuple[str, ...] = ()) -> Iterator[tuple[str, click.Command]]:
    """Every command under ``group``, by its full name."""
    ctx = click.Context(group, info_name="holodeck")
    for name in group.list_commands(ctx):
        command = group.get_command(ctx, name)
        assert command is not None
        yield " ".join(("holodeck", *path, name)), command
        if isinstance(command, click.Group):
            yield from commands(command, (*path, name))


def test_the_cli_reference_is_what_help_prints_today() -> None:
    """``cog --check``: regenerating docs/cli.md from ``--help`` changes nothing (else: run
    ``make docs-cli``)."""
    assert Cog().main(["cog", "--check", str(CLI_PAGE)]) == 0


def test_every_command_and_option_is_in_the_cli_reference() -> None:
    page = CLI_PAGE.read_text(encoding="utf-8")
    missing = []
    for name, command in commands(cli):
        section = page.split(f"### {name}\n", 1)
        if len(section) == 1:
            missing.append(name)
            continue
        text = section[1].split("\n### ", 1)[0]
        for param in command.params:
            if isinstance(param, click.Option) and not param.hidden:
                missing += [f"{name} {o}" for o in param.opts if o not in text]
    assert not missing


def test_the_docs_build_without_a_warning(tmp_path: Path) -> None:
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1"}
    run = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "-d", str(tmp_path / "site")],
        cwd=REPO, capture_output=True, text=True, env=env, timeout=300,
    )  # fmt: skip
    assert run.returncode == 0, run.stderr
    assert (tmp_path / "site" / "cli" / "index.html").is_file()


def test_every_benchmark_section_is_on_a_docs_page() -> None:
    """Each ``##`` section of benchmarks/README.md lies inside a snippet section that a page
    under docs/benchmarks/ includes, so a new benchmark cannot go missing from the docs."""
    readme = (REPO / "benchmarks" / "README.md").read_text(encoding="utf-8").splitlines()
    pages = "\n".join(p.read_text(encoding="utf-8") for p in (REPO / "docs").rglob("*.md"))
    included = set(re.findall(r'--8<-- "benchmarks/README\.md:(\w+)"', pages))
    section, outside = None, []
    for line in readme:
        if marker := re.fullmatch(r"<!-- --8<-- \[(start|end):(\w+)\] -->", line):
            section = marker[2] if marker[1] == "start" else None
        elif line.startswith("## ") and section not in included:
            outside.append(line)
    assert outside == [], f"benchmark sections on no docs page: {outside}"
