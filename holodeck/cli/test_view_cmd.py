"""``holodeck test view``: the agent's run history as one self-contained HTML page (the
original HoloDeck's ``test view``), written next to the history and named on stdout."""

from __future__ import annotations

from pathlib import Path

import click

from holodeck.cli.options import agent_argument, agent_option, agent_path
from holodeck.config.config_file import _read_yaml
from holodeck.config.files import file_label
from holodeck.errors import ConfigError
from holodeck.testing.history import history_folder
from holodeck.testing.history_view import write_view

VIEW_FILE = "history.html"


@click.command("view")
@agent_argument
@agent_option
@click.option(
    "-o",
    "--output",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    help=f"Where to write the page (default: results/<agent>/{VIEW_FILE}).",
)
def view(agent_arg: str | None, agent_opt: str | None, output: Path | None) -> None:
    """Write the run history of the agent as one HTML page: pass rate and metrics over the
    runs, the latest run's cases, and a comparison of any two runs."""
    path = Path(agent_path(agent_opt, agent_arg)).resolve()
    if not path.is_file():
        raise ConfigError(f"{path}: agent file not found")
    data, _ = _read_yaml(path, file_label(path))
    name = data.get("name") if isinstance(data, dict) else None
    if not isinstance(name, str) or not name:
        raise ConfigError(f"{file_label(path)}:1: name: required (the history is kept by name)")
    folder = history_folder(path.parent, name)
    written = write_view(folder, name, output or folder / VIEW_FILE)
    click.echo(f"View: {written}")
