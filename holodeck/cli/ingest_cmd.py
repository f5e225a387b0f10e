"""``holodeck ingest``: bring every knowledge base in step with its files (``--watch``: and
keep it so, one pass per batch of saved changes, until Ctrl-C or SIGTERM)."""

from __future__ import annotations

import json
import signal
import threading
from types import FrameType

import click

from holodeck.cli.options import agent_argument, agent_option, agent_path
from holodeck.cli.progress import WatchReport, ingest_tools
from holodeck.config.loader import load_project
from holodeck.knowledge_base import KnowledgeBase
from holodeck.tools.watch import watch_tools


@click.command()
@agent_argument
@agent_option
@click.option("--force-ingest", is_flag=True, help="Re-ingest every file, whatever changed.")
@click.option("--tool", "tool_names", multiple=True, help="Only this tool (repeatable).")
@click.option("--json", "as_json", is_flag=True, help="Print the summary as JSON on stdout.")
@click.option(
    "--watch",
    is_flag=True,
    help="Then keep watching the sources and re-ingest what changes (Ctrl-C stops).",
)
@click.pass_context
def ingest(
    ctx: click.Context,
    agent_arg: str | None,
    agent_opt: str | None,
    force_ingest: bool,
    tool_names: tuple[str, ...],
    as_json: bool,
    watch: bool,
) -> None:
    """Ingest the documents of every vectorstore tool (only what changed)."""
    if watch and as_json:
        raise click.UsageError("--watch prints a summary line per pass; it does not take --json")
    project = load_project(agent_path(agent_opt, agent_arg))
    tools = KnowledgeBase.every(project, list(tool_names) or None)
    if not tools:
        raise click.UsageError(f"{project.agent_path.name} has no vectorstore tools to ingest")
    quiet = bool(ctx.obj.get("quiet"))
    try:
        if watch:
            _watch(tools, force_ingest, quiet)
            return
        ingest_tools(
            tools,
            force_ingest,
            quiet or as_json,
            show_summary=not as_json,
            first_ingest_line=True,
        )
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


def _watch(tools: list[KnowledgeBase], force: bool, quiet: bool) -> None:
    """The watch loop in the foreground until Ctrl-C or SIGTERM (then exit code 0)."""

    def terminate(signum: int, frame: FrameType | None) -> None:
        raise KeyboardInterrupt

    report = WatchReport(tools, quiet, ctrl_c_stops=True)
    previous = signal.signal(signal.SIGTERM, terminate)
    try:
        watch_tools(
            tools,
            threading.Event(),
            force=force,
            progress=report.progress,
            on_done=report.done,
            on_error=report.failed,
            on_ready=report.ready,
            on_settings=report.settings,
        )
    except KeyboardInterrupt:
        if not quiet:
            click.echo("Stopped watching.", err=True)
    finally:
        signal.signal(signal.SIGTERM, previous)
