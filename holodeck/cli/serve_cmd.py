"""``holodeck serve``: the knowledge bases as an MCP server (stdio, or ``--http``)."""

from __future__ import annotations

import click

from holodeck.cli.options import agent_argument, agent_option, agent_path
from holodeck.cli.progress import WatchReport
from holodeck.config.loader import load_project
from holodeck.tools.vectorstore_tool import build_tools


def parse_endpoint(value: str) -> tuple[str, int]:
    """``[HOST:]PORT`` (``[::1]:PORT`` for IPv6) -> (host, port); the host is 127.0.0.1."""
    host, sep, port = value.rpartition(":")
    host = host.strip("[]") if sep else "127.0.0.1"
    if not port.isdigit() or int(port) > 65535 or not host:
        raise click.BadParameter(
            f"{value!r} is not [HOST:]PORT (e.g. 8000, 127.0.0.1:8000, 0.0.0.0:8000)",
            param_hint="--http",
        )
    return host, int(port)


@click.command()
@agent_argument
@agent_option
@click.option(
    "--http",
    "http",
    metavar="[HOST:]PORT",
    default=None,
    help="Serve streamable HTTP at http://HOST:PORT/mcp (host 127.0.0.1 unless given; "
    "port 0 picks a free one) instead of stdio.",
)
@click.option(
    "--no-auth",
    "no_auth",
    is_flag=True,
    help="Serve --http on an address other machines can reach without HOLODECK_SERVE_TOKEN "
    "(a proxy or firewall in front guards it); refused otherwise.",
)
@click.option("--tool", "tool_names", multiple=True, help="Only this tool (repeatable).")
@click.pass_context
def serve(
    ctx: click.Context,
    agent_arg: str | None,
    agent_opt: str | None,
    http: str | None,
    no_auth: bool,
    tool_names: tuple[str, ...],
) -> None:
    """Serve the knowledge bases over MCP, keeping them in step with their files.

    One MCP tool per vectorstore tool. stdio by default (stdout is the protocol's; progress
    and logs go to stderr). Ctrl-C or SIGTERM stops it.

    Over HTTP, with HOLODECK_SERVE_TOKEN set in the environment, every request must carry
    'Authorization: Bearer <token>' (401 otherwise). An address other machines can reach
    (0.0.0.0, a LAN address) is served with a warning, and refused without the token
    unless --no-auth is given.
    """
    from holodeck.serve.run import HttpEndpoint, WatchHooks
    from holodeck.serve.run import serve as run_server
    from holodeck.serve.tools import build_server

    if no_auth and http is None:
        raise click.UsageError("--no-auth is for --http")
    endpoint = HttpEndpoint(*parse_endpoint(http), no_auth=no_auth) if http is not None else None
    project = load_project(agent_path(agent_opt, agent_arg))
    tools = build_tools(project, list(tool_names) or None)
    if not tools:
        raise click.UsageError(f"{project.agent_path.name} has no vectorstore tools to serve")
    quiet = bool(ctx.obj.get("quiet"))
    report = WatchReport(tools, quiet, first_pass_fails=False, stdout=False)
    server = build_server(
        tools,
        name=project.agent.name,
        instructions=project.agent.description,
        failures=report.failures,
    )
    hooks = WatchHooks(report.progress, report.done, report.failed, report.ready, report.settings)
    run_server(
        server,
        tools,
        http=endpoint,
        hooks=hooks,
        announce=lambda line: None if quiet else click.echo(line, err=True),
        warn=lambda line: click.echo(f"Warning: {line}", err=True),
    )
