"""Options every command shares: how the agent file is found."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import click

F = Callable[..., Any]


def agent_option(func: F) -> F:
    """``-a/--agent PATH``, default ``./agent.yaml``."""
    return click.option(
        "-a",
        "--agent",
        "agent_opt",
        type=click.Path(dir_okay=False),
        default=None,
        help="Agent file (default: ./agent.yaml).",
    )(func)


def agent_argument(func: F) -> F:
    """An optional positional AGENT, the same as ``-a``."""
    return click.argument("agent_arg", metavar="[AGENT]", required=False, type=click.Path())(func)


def agent_path(agent_opt: str | None, agent_arg: str | None = None) -> str:
    """The agent file from ``-a`` or the positional argument; both at once must agree."""
    if agent_opt and agent_arg and agent_opt != agent_arg:
        raise click.UsageError("give the agent file either as AGENT or with -a, not both")
    return agent_opt or agent_arg or "agent.yaml"
