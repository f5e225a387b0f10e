"""``holodeck chat``: talk to the agent, which searches its knowledge bases to answer."""

from __future__ import annotations

import logging
import sys
from typing import TYPE_CHECKING

import click

from holodeck.cli.agent_setup import agent_of
from holodeck.cli.interrupts import run_interruptible
from holodeck.cli.options import agent_argument, agent_option, agent_path
from holodeck.cli.progress import ingest_tools
from holodeck.config.loader import load_project

if TYPE_CHECKING:
    from holodeck.agent.loop import Agent
    from holodeck.tools.callables import CallableTool

#: Same as holodeck.agent.loop.DEFAULT_MAX_TOOL_ROUNDS (not imported: openai loads slowly).
DEFAULT_MAX_TOOL_ROUNDS = 5


@click.command()
@agent_argument
@agent_option
@click.option("--force-ingest", is_flag=True, help="Re-ingest every file before chatting.")
@click.option(
    "--max-tool-rounds",
    type=click.IntRange(1, 50),
    default=DEFAULT_MAX_TOOL_ROUNDS,
    show_default=True,
    help="Rounds of tool calls the LLM may make per message.",
)
@click.pass_context
def chat(
    ctx: click.Context,
    agent_arg: str | None,
    agent_opt: str | None,
    force_ingest: bool,
    max_tool_rounds: int,
) -> None:
    """Chat with the agent (retrieval-only when agent.yaml has no model:).

    On a terminal: line editing, history, /help for commands. Piped: each input line is one
    message and each answer is printed as plain text.
    """
    project = load_project(agent_path(agent_opt, agent_arg), calls_model=True)
    agent, tools, functions = agent_of(project, max_tool_rounds, "chat with")
    quiet = bool(ctx.obj.get("quiet"))
    interactive = sys.stdin.isatty() and sys.stdout.isatty()
    try:
        ingest_tools(tools, force_ingest, quiet, wait=False)
        code = run_interruptible(_chat(agent, interactive, functions))
    finally:
        for tool in tools:
            tool.close()
    ctx.exit(code)


async def _chat(agent: Agent, interactive: bool, functions: list[CallableTool]) -> int:
    """The session, with the MCP servers running for as long as it lasts."""
    from holodeck.chat.session import ChatSession
    from holodeck.tools.initialize import agent_functions

    try:
        if agent.retrieval_only:
            return await ChatSession(agent, interactive=interactive).run()
        async with agent_functions(agent.project, functions, _warn) as offered:
            agent.offer(offered.functions)
            return await ChatSession(agent, interactive=interactive).run()
    finally:
        await agent.close()


def _warn(line: str) -> None:
    logging.getLogger("holodeck.chat").warning("%s", line)
