"""The agent a command runs (``chat``, ``serve --protocol rest``): its knowledge bases, the
agent itself and its function tools, made and checked in one place so both refuse alike."""

from __future__ import annotations

from typing import TYPE_CHECKING

import click

from holodeck.config.loader import Project
from holodeck.tools.vectorstore_tool import VectorStoreTool, build_tools

if TYPE_CHECKING:
    from holodeck.agent.loop import Agent
    from holodeck.tools.callables import CallableTool


def agent_of(
    project: Project, max_tool_rounds: int, purpose: str
) -> tuple[Agent, list[VectorStoreTool], list[CallableTool]]:
    """The agent of ``project``, its vectorstore tools and its function tools; a file with
    neither a model nor a knowledge base has nothing to ``purpose`` (a usage error)."""
    from holodeck.agent.loop import Agent  # imports openai: only for a command that talks
    from holodeck.tools.function_tool import load_function_tools

    tools = build_tools(project)
    if not tools and project.agent.model is None:
        raise click.UsageError(
            f"{project.agent_path.name} has neither a model: nor vectorstore tools: "
            f"there is nothing to {purpose}"
        )
    agent = Agent.from_project(project, tools, max_tool_rounds)  # a missing key fails here
    # Function tools are imported now: a missing function is exit 2 before any ingest.
    functions = load_function_tools(project) if not agent.retrieval_only else []
    return agent, tools, functions
