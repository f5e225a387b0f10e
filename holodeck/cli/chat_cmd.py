"""``holodeck chat``: talk to the agent, which searches its knowledge bases to answer."""

from __future__ import annotations

import logging
import sys
from typing import TYPE_CHECKING

import click

from holodeck.cli.interrupts import run_interruptible
from holodeck.cli.options import agent_argument, agent_option, agent_path
from holodeck.cli.progress import ingest_tools
from holodeck.config.loader import load_project
from holodeck.tools.vectorstore_tool import build_tools

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
    from holodeck.agent.loop import Agent  # imports openai: only when chatting
    from holodeck.tools.function_tool import load_function_tools

    project = load_project(agent_path(agent_opt, agent_arg), calls_model=True)
    tools = build_tools(project)
    if not tools and project.agent.model is None:
        raise click.UsageError(
            f"{project.agent_path.name} has neither a model: nor vectorstore tools: "
            "there is nothing to chat with"
        )
    agent = Agent.from_project(project, tools, max_tool_rounds)  # a missing key fails here
    # Function tools are imported now: a missing function is exit 2 before any ingest.
    functions = load_function_tools(project) if not agent.retrieval_only else []
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
