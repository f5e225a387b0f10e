"""``holodeck serve``: the knowledge bases as an MCP server (stdio, or ``--http``), or the
agent itself over HTTP (``--protocol rest``: the original HoloDeck's REST API and a chat
page)."""

from __future__ import annotations

import click

from holodeck.cli.agent_setup import agent_of
from holodeck.cli.options import agent_argument, agent_option, agent_path
from holodeck.cli.progress import WatchReport
from holodeck.config.loader import load_project
from holodeck.extras import require
from holodeck.tools.vectorstore_tool import build_tools

#: The original HoloDeck's port for ``serve``.
DEFAULT_PORT = 8000
#: Same as holodeck.serve.limits.DEFAULT_RATE_PER_MINUTE (not imported: the MCP path
#: should not load the REST server's modules).
DEFAULT_RATE_PER_MINUTE = 60
#: Same as holodeck.agent.loop.DEFAULT_MAX_TOOL_ROUNDS (not imported: openai loads slowly).
DEFAULT_MAX_TOOL_ROUNDS = 5


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
    help="Serve --http or --protocol rest on an address other machines can reach without "
    "HOLODECK_SERVE_TOKEN "
    "(a proxy or firewall in front guards it); refused otherwise.",
)
@click.option("--tool", "tool_names", multiple=True, help="Only this tool (repeatable; MCP).")
@click.option(
    "--protocol",
    type=click.Choice(["mcp", "rest", "ag-ui"]),
    default="mcp",
    show_default=True,
    help="mcp: the knowledge bases as MCP tools (stdio, or --http). rest: the agent itself "
    "over HTTP (the original HoloDeck's REST API, SSE streaming, a chat page at /). ag-ui: "
    "rest plus the AG-UI protocol at POST /awp.",
)
@click.option(
    "--port",
    type=click.IntRange(0, 65535),
    default=DEFAULT_PORT,
    show_default=True,
    help="Port of --protocol rest (0 picks a free one).",
)
@click.option(
    "--host",
    default="127.0.0.1",
    show_default=True,
    help="Address --protocol rest binds (0.0.0.0: every interface; needs the token).",
)
@click.option(
    "--cors-origins",
    default="",
    metavar="ORIGINS",
    help="Comma-separated origins whose pages may call --protocol rest (none by default).",
)
@click.option(
    "--rate-limit",
    type=click.IntRange(1, 100_000),
    default=DEFAULT_RATE_PER_MINUTE,
    show_default=True,
    help="Chat requests per minute per client address (--protocol rest; 429 beyond it).",
)
@click.option(
    "--max-tool-rounds",
    type=click.IntRange(1, 50),
    default=DEFAULT_MAX_TOOL_ROUNDS,
    show_default=True,
    help="Rounds of tool calls the LLM may make per message (--protocol rest).",
)
@click.pass_context
def serve(
    ctx: click.Context,
    agent_arg: str | None,
    agent_opt: str | None,
    http: str | None,
    no_auth: bool,
    tool_names: tuple[str, ...],
    protocol: str,
    port: int,
    host: str,
    cors_origins: str,
    rate_limit: int,
    max_tool_rounds: int,
) -> None:
    """Serve the knowledge bases over MCP, or the agent over HTTP; keep them in step with
    their files.

    MCP (the default): one MCP tool per vectorstore tool. stdio by default (stdout is the
    protocol's; progress and logs go to stderr), streamable HTTP with --http.

    --protocol rest: the agent holodeck chat runs (its model, instructions and tools;
    retrieval-only without model:) at http://HOST:PORT: POST /agent/NAME/chat (JSON) and
    /agent/NAME/chat/stream (server-sent events), sessions, /health, /ready, and a chat
    page at /. Ctrl-C or SIGTERM stops it.

    Over HTTP (either protocol), with HOLODECK_SERVE_TOKEN set in the environment, every
    request must carry 'Authorization: Bearer <token>' (401 otherwise; the chat page asks
    for it). An address other machines can reach (0.0.0.0, a LAN address) is served with a
    warning, and refused without the token unless --no-auth is given.
    """
    if protocol in ("rest", "ag-ui"):
        if http is not None or tool_names:
            raise click.UsageError(
                f"--http and --tool are for MCP; --protocol {protocol} takes --host and --port"
            )
        if protocol == "ag-ui":
            require("ag-ui", "ag_ui", feature="serve --protocol ag-ui")
        _serve_rest(
            ctx,
            agent_path(agent_opt, agent_arg),
            host,
            port,
            no_auth,
            cors_origins,
            rate_limit,
            max_tool_rounds,
            agui=protocol == "ag-ui",
        )
        return
    source = ctx.get_parameter_source
    rest_only = ("port", "host", "cors_origins", "rate_limit", "max_tool_rounds")
    given = [n for n in rest_only if source(n) is not click.core.ParameterSource.DEFAULT]
    if given:
        flag = "--" + given[0].replace("_", "-")
        raise click.UsageError(
            f"{flag} is for --protocol rest (MCP over HTTP takes --http [HOST:]PORT)"
        )
    from holodeck.serve.run import HttpEndpoint, WatchHooks
    from holodeck.serve.run import serve as run_server
    from holodeck.serve.tools import build_server

    if no_auth and http is None:
        raise click.UsageError("--no-auth is for --http or --protocol rest")
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


def _serve_rest(
    ctx: click.Context,
    path: str,
    host: str,
    port: int,
    no_auth: bool,
    cors_origins: str,
    rate_limit: int,
    max_tool_rounds: int,
    agui: bool,
) -> None:
    """``--protocol rest`` or ``ag-ui``: the agent chat runs, its knowledge bases watched."""
    from holodeck.serve.rest_run import RestOptions, serve_rest
    from holodeck.serve.run import HttpEndpoint, WatchHooks

    origins = tuple(o.strip() for o in cors_origins.split(",") if o.strip())
    project = load_project(path, calls_model=True)  # it answers with the model
    template, tools, functions = agent_of(project, max_tool_rounds, "serve")
    quiet = bool(ctx.obj.get("quiet"))
    report = WatchReport(tools, quiet, first_pass_fails=False, stdout=False)
    hooks = WatchHooks(report.progress, report.done, report.failed, report.ready, report.settings)
    serve_rest(
        template,
        functions,
        RestOptions(HttpEndpoint(host, port, no_auth), origins, rate_limit, agui),
        hooks=hooks,
        announce=lambda line: None if quiet else click.echo(line, err=True),
        warn=lambda line: click.echo(f"Warning: {line}", err=True),
    )
