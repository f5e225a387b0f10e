"""``holodeck ingest``: bring every knowledge base in step with its files."""

from __future__ import annotations

import json

import click

from holodeck.cli.options import agent_argument, agent_option, agent_path
from holodeck.cli.progress import ingest_progress
from holodeck.config.loader import load_project
from holodeck.tools.vectorstore_tool import VectorStoreTool, build_tools


def initialize_tools(
    tools: list[VectorStoreTool], force: bool, quiet: bool, show_summary: bool = True
) -> None:
    """Initialize each tool with a progress display; print its one-line summary to stderr."""
    for tool in tools:
        with ingest_progress(tool.name, quiet) as progress:
            tool.initialize_sync(force_ingest=force, progress=progress)
        if show_summary and not quiet and tool.summary:
            click.echo(summary_line(tool), err=True)


def summary_line(tool: VectorStoreTool) -> str:
    """The summary line, plus the fallback when the configured store was not reachable."""
    assert tool.summary is not None
    line = tool.summary.line()
    if tool.fallback_reason:
        line += f" (fallback: {tool.fallback_reason})"
    return line


@click.command()
@agent_argument
@agent_option
@click.option("--force-ingest", is_flag=True, help="Re-ingest every file, whatever changed.")
@click.option("--tool", "tool_names", multiple=True, help="Only this tool (repeatable).")
@click.option("--json", "as_json", is_flag=True, help="Print the summary as JSON on stdout.")
@click.pass_context
def ingest(
    ctx: click.Context,
    agent_arg: str | None,
    agent_opt: str | None,
    force_ingest: bool,
    tool_names: tuple[str, ...],
    as_json: bool,
) -> None:
    """Ingest the documents of every vectorstore tool (only what changed)."""
    project = load_project(agent_path(agent_opt, agent_arg))
    tools = build_tools(project, list(tool_names) or None)
    if not tools:
        raise click.UsageError(f"{project.agent_path.name} has no vectorstore tools to ingest")
    quiet = bool(ctx.obj.get("quiet"))
    try:
        initialize_tools(tools, force_ingest, quiet or as_json, show_summary=not as_json)
        if as_json:
            out = []
            for tool in tools:
                assert tool.summary is not None
                data = tool.summary.as_dict()
                data["fallback"] = tool.fallback_reason
                out.append(data)
            click.echo(json.dumps({"tools": out}, indent=2))
        elif quiet:
            for tool in tools:
                click.echo(summary_line(tool))
    finally:
        for tool in tools:
            tool.close()
