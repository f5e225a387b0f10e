"""``holodeck serve --protocol rest``: the agent ``holodeck chat`` runs, over HTTP, while
the watch loop keeps its knowledge bases in step with the files.

The same parts as MCP ``serve --http`` (``holodeck.serve.run``): the port bound before any
work, the watcher thread, uvicorn with one place for Ctrl-C and SIGTERM, the bearer token
of ``HOLODECK_SERVE_TOKEN`` and the rule for an address other machines can reach. Every
session gets its own ``Agent`` (its own history) sharing one LLM client, the function tools
and the MCP servers, which run for as long as the server does.
"""

from __future__ import annotations

import socket
import threading
from collections.abc import Callable
from dataclasses import dataclass

import anyio
from sse_starlette.sse import AppStatus
from starlette.middleware.cors import CORSMiddleware
from starlette.routing import BaseRoute
from starlette.types import ASGIApp, Receive, Scope, Send

from holodeck.agent.loop import Agent
from holodeck.envvars import LOCK_TIMEOUT, REDIS_LOCK_TTL, SERVE_TOKEN
from holodeck.errors import ConfigError
from holodeck.serve.auth import BearerAuth, exposure, is_loopback
from holodeck.serve.limits import RateLimiter
from holodeck.serve.readiness import Readiness
from holodeck.serve.rest_app import build_app
from holodeck.serve.run import (
    WATCHER_JOIN_SECONDS,
    HttpEndpoint,
    WatchHooks,
    _listen,
    _warn_of_dotenv_token,
    _watch,
    serve_asgi,
)
from holodeck.serve.sessions import SessionStore
from holodeck.serve.turns import ServerState
from holodeck.tools.callables import CallableTool
from holodeck.tools.initialize import agent_functions

#: Paths anyone may GET with a token set: the page's own files (they hold no data; the
#: page then asks for the token) and the liveness check orchestrators call.
PUBLIC_PATHS = ("/", "/health")
PUBLIC_PREFIX = "/static/"


@dataclass(frozen=True)
class RestOptions:
    """How ``--protocol rest`` listens and whom it lets in."""

    endpoint: HttpEndpoint
    cors_origins: tuple[str, ...] = ()
    rate_per_minute: int = 60
    agui: bool = False  # also POST /awp, the AG-UI protocol


def serve_rest(
    template: Agent,
    functions: list[CallableTool],
    options: RestOptions,
    *,
    hooks: WatchHooks,
    announce: Callable[[str], None],
    warn: Callable[[str], None],
) -> None:
    """Serve ``template``'s agent until Ctrl-C or SIGTERM; keep its indexes in step.

    ``template`` holds the LLM client every session shares (it is closed at the end);
    ``functions`` are the imported function tools.
    """
    for setting in (LOCK_TIMEOUT, REDIS_LOCK_TTL):  # the watcher's: a bad value fails now
        setting.read()
    tools = template.tools
    token = SERVE_TOKEN.read()
    if token is None:
        _warn_of_dotenv_token(template.project.root, warn)
    endpoint = options.endpoint
    if endpoint.no_auth and token:
        raise ConfigError(
            f"--no-auth and {SERVE_TOKEN.name} contradict each other: unset "
            f"{SERVE_TOKEN.name} to serve without authentication, or drop --no-auth"
        )
    sock = _listen(endpoint, flag="--host/--port")
    try:
        host, port = sock.getsockname()[:2]
        url = f"http://{f'[{host}]' if ':' in host else host}:{port}/"
        warning = exposure(
            url,
            f"{endpoint.host} (port {endpoint.port})",
            loopback=is_loopback(host),
            token=token,
            no_auth=endpoint.no_auth,
            names=f"agent {template.project.agent.name}'s knowledge",
            flag="--host",
        )
        for tool in tools:  # fail before serving: a missing source, an unreachable store
            tool.check_source()
            _ = tool.store, tool.embedder  # opened here, once, not by racing threads
    except BaseException:
        sock.close()
        raise
    readiness = Readiness(tools)
    stop = threading.Event()
    watcher = threading.Thread(
        target=_watch, args=(tools, stop, readiness.wrap(hooks)), name="holodeck-watch", daemon=True
    )
    if tools:
        watcher.start()
    try:
        mode = " (retrieval-only: no model)" if template.retrieval_only else ""
        protocols = "REST and AG-UI (POST /awp)" if options.agui else "REST"
        announce(f"Serving agent {template.project.agent.name} over {protocols} at {url}{mode}")
        if warning:
            warn(warning)
        anyio.run(_serve, template, functions, options, readiness, sock, token, warn)
        announce("Stopped serving")
    finally:
        stop.set()
        if watcher.is_alive():
            watcher.join(WATCHER_JOIN_SECONDS)
        if not watcher.is_alive():  # else it still writes: the process exit ends it
            for tool in tools:
                tool.close()


async def _serve(
    template: Agent,
    functions: list[CallableTool],
    options: RestOptions,
    readiness: Readiness,
    sock: socket.socket,
    token: str | None,
    warn: Callable[[str], None],
) -> None:
    """The MCP servers started, the app built on them, uvicorn until a signal."""
    try:
        if template.retrieval_only:
            await _serve_app(template, [], options, readiness, sock, token)
            return
        async with agent_functions(template.project, functions, warn) as offered:
            await _serve_app(template, offered.functions, options, readiness, sock, token)
    finally:
        await template.close()


async def _serve_app(
    template: Agent,
    functions: list[CallableTool],
    options: RestOptions,
    readiness: Readiness,
    sock: socket.socket,
    token: str | None,
) -> None:
    def make_agent() -> Agent:
        return Agent(
            template.project,
            template.tools,
            template.client,
            template.max_tool_rounds,
            template.connection,
            functions,
        )

    make_agent()  # a clash of tool names fails now, not at the first message
    state = ServerState(
        agent_name=template.project.agent.name,
        sessions=SessionStore(make_agent),
        readiness=readiness,
        limiter=RateLimiter(options.rate_per_minute),
        retrieval_only=template.retrieval_only,
    )
    extra: list[BaseRoute] = []
    if options.agui:
        from holodeck.serve.agui import agui_route

        extra.append(agui_route(state))
    app: ASGIApp = build_app(state, extra)
    if token:
        app = _PublicOrBearer(app, token)
    if options.cors_origins:  # outermost: a preflight carries no token and needs no answer
        app = CORSMiddleware(
            app,
            allow_origins=list(options.cors_origins),
            allow_methods=["GET", "POST", "DELETE"],
            allow_headers=["Authorization", "Content-Type"],
        )

    def end_streams() -> None:
        # open event streams end now (their turns cancelled), rather than being cut off
        # with a traceback when uvicorn's grace period is over; sse-starlette learns of a
        # shutdown from uvicorn's own signal handler, which serve_asgi leaves out
        AppStatus.should_exit = True

    await serve_asgi(app, sock, on_shutdown=end_streams)


class _PublicOrBearer:
    """The token on every request but a GET of the page's files and of ``/health``."""

    def __init__(self, app: ASGIApp, token: str) -> None:
        self._app = app
        self._guarded = BearerAuth(app, token)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        path = scope.get("path", "")
        public = scope["type"] == "http" and scope.get("method") in ("GET", "HEAD")
        if public and (path in PUBLIC_PATHS or path.startswith(PUBLIC_PREFIX)):
            await self._app(scope, receive, send)
        else:
            await self._guarded(scope, receive, send)
