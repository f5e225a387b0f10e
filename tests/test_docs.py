"""The documentation a user reads is the program's: every command and option is in the CLI
reference, which is what ``--help`` prints today, and the pages build without a warning."""

from __future__ import annotations

import html
import os
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import click
import yaml
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


#: What only someone working on HoloDeck needs: it belongs on docs/contributing.md.
CONTRIBUTOR_WORDS = (
    "pytest",
    "randomly-seed",
    "tests/cli_helpers.py",
    "tests/rankings.py",
    "HOLODECK_TESTS_OWN_PROCESS",
    "make test",
    "make lint",
    "make bench",
)


def test_the_home_page_is_for_users_and_contributing_has_its_own_page(tmp_path: Path) -> None:
    """The built home page says what HoloDeck is, how to install it and the first commands,
    with no word of the test suite; that material is on the Contributing page, in the nav."""
    site = _build(tmp_path)
    page = (site / "index.html").read_text(encoding="utf-8")
    home = _article(page)
    assert "pip install" in home and "holodeck ingest" in home and "holodeck search" in home
    assert [w for w in CONTRIBUTOR_WORDS if w in home] == []
    contributing = _article((site / "contributing" / "index.html").read_text(encoding="utf-8"))
    for word in ("randomly-seed", "tests/cli_helpers.py", "make test", "make bench"):
        assert word in contributing
    nav = yaml.safe_load((REPO / "mkdocs.yml").read_text(encoding="utf-8"))["nav"]
    assert {"Contributing": "contributing.md"} in nav
    assert re.search(r'<a href="contributing/" class="md-nav__link">', page)


def test_no_code_is_cut_at_the_right_edge(tmp_path: Path) -> None:
    """Code blocks wrap inside the page (the site's stylesheet), and the CLI reference's help
    sits in the block the stylesheet sets small enough to show its 88 columns whole."""
    site = _build(tmp_path)
    css = (site / "stylesheets" / "extra.css").read_text(encoding="utf-8")
    rules = dict(re.findall(r"([^{}]+)\{([^}]*)\}", re.sub(r"/\*.*?\*/", "", css, flags=re.S)))
    rules = {k.strip(): v for k, v in rules.items()}
    assert "white-space: pre-wrap" in rules[".md-typeset pre > code"]
    assert "font-size" in rules[".md-typeset .cli-help pre > code"]
    for page in ("index.html", "cli/index.html", "contributing/index.html"):
        assert "stylesheets/extra.css" in (site / page).read_text(encoding="utf-8")
    cli_html = (site / "cli" / "index.html").read_text(encoding="utf-8")
    helps = cli_html.split('<div class="cli-help">', 1)
    assert len(helps) == 2 and helps[0].count("<pre") == 0 and "Usage: holodeck" in helps[1]
    blocks = CLI_PAGE.read_text(encoding="utf-8").split("```text\n")[1:]
    lines = [line for block in blocks for line in block.split("\n```", 1)[0].splitlines()]
    assert lines and max(map(len, lines)) <= 88


def _build(tmp_path: Path) -> Path:
    """The site, built strict into ``tmp_path``."""
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1"}
    run = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "-d", str(tmp_path / "site")],
        cwd=REPO, capture_output=True, text=True, env=env, timeout=300,
    )  # fmt: skip
    assert run.returncode == 0, run.stderr
    return tmp_path / "site"


def _article(page: str) -> str:
    """The text of a built page's article, tags out."""
    match = re.search(r"<article.*?</article>", page, re.DOTALL)
    assert match is not None
    return html.unescape(re.sub(r"<[^>]+>", "", match[0]))
