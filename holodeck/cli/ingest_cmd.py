"""``holodeck ingest``: bring every knowledge base in step with its files."""

from __future__ import annotations

import json

import click

from holodeck.cli.options import agent_argument, agent_option, agent_path
from holodeck.cli.progress import ingest_tools
from holodeck.config.loader import load_project
from holodeck.tools.vectorstore_tool import build_tools


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
        ingest_tools(tools, force_ingest, quiet or as_json, show_summary=not as_json)
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
                click.echo(tool.summary_line())
    finally:
        for tool in tools:
            tool.close()
