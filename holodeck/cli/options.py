"""Options every command shares: how the agent file is found.

Without ``-a`` (or a positional AGENT) a command looks for ``agent.yaml`` where git, ruff and
pytest look for their own configuration: in the current folder, then in each parent, so the
commands work from anywhere inside a project. The search stops at the first folder holding
``.git`` (a repository's root: an agent file above it belongs to something else) or at the
filesystem root. The project root is then the folder of the file found.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Callable
from pathlib import Path
from typing import Any

import click

from holodeck.config.agent_file import find_agent_file

F = Callable[..., Any]

#: How every "no agent file" message ends: what the user can do about it.
AGENT_HINT = "create one with `holodeck init`, or pass -a PATH"

log = logging.getLogger("holodeck.cli")


def agent_option(func: F) -> F:
    """``-a/--agent PATH``, default: ``agent.yaml`` here or in the nearest parent folder."""
    return click.option(
        "-a",
        "--agent",
        "agent_opt",
        type=click.Path(dir_okay=False),
        default=None,
        help="Agent file (default: agent.yaml here or in the nearest parent folder).",
    )(func)


def agent_argument(func: F) -> F:
    """An optional positional AGENT, the same as ``-a``."""
    return click.argument("agent_arg", metavar="[AGENT]", required=False, type=click.Path())(func)


def agent_path(agent_opt: str | None, agent_arg: str | None = None) -> str:
    """The agent file from ``-a`` or the positional argument, else the one ``find_agent_file``
    finds from the current folder; ``-a`` and AGENT at once must agree."""
    if agent_opt and agent_arg and agent_opt != agent_arg:
        raise click.UsageError("give the agent file either as AGENT or with -a, not both")
    given = agent_opt or agent_arg
    if given:
        return given
    found = find_agent_file(Path.cwd(), AGENT_HINT)
    log.debug("Agent file: %s", found)
    return str(found)


class FiniteRange(click.FloatRange):
    """``click.FloatRange`` that also refuses ``nan`` (it compares false with every bound,
    so the range alone lets it through); ``inf`` is already out of any finite range."""

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        number = super().convert(value, param, ctx)
        if math.isnan(number):
            self.fail(f"{value!r} is not a number {self._describe_range()}", param, ctx)
        return number
