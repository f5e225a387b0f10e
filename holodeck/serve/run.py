"""Run the MCP server over stdio or streamable HTTP, with the watch loop beside it.

The server answers at once: the first ingest (what changed since the last run) runs in the
watcher's thread, so an MCP client that starts the server never times out waiting for it; a
search meanwhile answers from what the index already holds. Searches run in worker threads,
the watcher writes in its own, and the index adapters are safe for one writer and many
readers, so a search never waits for a re-ingest.

In stdio mode stdout is the protocol's: nothing else writes to it (progress and logs go to
stderr), and stdin is read by a daemon thread so a SIGTERM never waits for a read that may
never end. Ctrl-C and SIGTERM stop both transports cleanly: in-flight searches finish, the
watcher stops after the file it is storing, the indexes are closed.

Over HTTP, ``HOLODECK_SERVE_TOKEN`` makes every request need its bearer token, and an address
other machines can reach is refused without one unless ``--no-auth`` says a proxy guards it
(``holodeck.serve.auth``).
"""

from __future__ import annotations

import asyncio
import io
import logging
import signal
import socket
import sys
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import uvicorn
from mcp.server import Server
from mcp.server.stdio import stdio_server

from holodeck.config.envsubst import read_dotenv
from holodeck.envvars import LOCK_TIMEOUT, REDIS_LOCK_TTL, SERVE_TOKEN
from holodeck.errors import ConfigError
from holodeck.knowledge_base import KnowledgeBase
from holodeck.serve.auth import BearerAuth, exposure, is_loopback
from holodeck.serve.spans import TracedRequests
from holodeck.tools.initialize import ProgressFactory
from holodeck.tools.vectorstore_tool import VectorStoreTool
from holodeck.tools.watch import ErrorHandler, watch_tools

log = logging.getLogger("holodeck.serve")

#: How long a stop waits for the watcher to finish the file it is storing.
WATCHER_JOIN_SECONDS = 10.0
#: How long an HTTP shutdown waits for open client connections.
HTTP_GRACE_SECONDS = 3
#: How long an idle HTTP connection is kept open: far longer than clients keep one (httpx,
#: the MCP SDK's client, drops its own much sooner), so the client always closes first.
#: Closing at the client's own limit, a busy server would reset a connection whose next
#: request it had not read yet, and that call would fail with a ReadError.
HTTP_KEEP_ALIVE_SECONDS = 120
MCP_PATH = "/mcp"


@dataclass(frozen=True)
class HttpEndpoint:
    """Where ``--http`` listens, and whether ``--no-auth`` lets it serve other machines
    without a token."""

    host: str
    port: int
    no_auth: bool = False


@dataclass
class WatchHooks:
    """How the watch loop's passes are shown (the CLI renders them)."""

    progress: ProgressFactory | None = None
    on_done: Callable[[KnowledgeBase], None] | None = None
    on_error: ErrorHandler | None = None
    on_ready: Callable[[], None] | None = None
    on_settings: Callable[[str], None] | None = None


def serve(
    server: Server,
    tools: list[VectorStoreTool],
    *,
    http: HttpEndpoint | None,
    hooks: WatchHooks,
    announce: Callable[[str], None],
    warn: Callable[[str], None],
) -> None:
    """Serve until the client leaves (stdio EOF), Ctrl-C or SIGTERM; keep indexes in step.

    ``announce`` shows what it serves where (``-q`` drops it); ``warn`` what the user must
    know whatever the verbosity: an HTTP server other machines can reach.
    """
    for setting in (LOCK_TIMEOUT, REDIS_LOCK_TTL):  # the watcher's: a bad value fails now
        setting.read()
    names = ", ".join(t.name for t in tools)
    token = SERVE_TOKEN.read() if http else None
    if http and token is None and tools:
        _warn_of_dotenv_token(tools[0].project.root, warn)
    if http and http.no_auth and token:
        raise ConfigError(
            f"--no-auth and {SERVE_TOKEN.name} contradict each other: unset "
            f"{SERVE_TOKEN.name} to serve without authentication, or drop --no-auth"
        )
    sock = _listen(http) if http else None
    try:
        url, warning = _where(sock, http, token, names) if sock and http else ("", None)
        for tool in tools:  # fail before serving: a missing source, an unreachable store
            tool.check_source()
            _ = tool.store, tool.embedder  # opened here, once, not by racing threads
    except BaseException:
        if sock is not None:
            sock.close()
        raise
    stop = threading.Event()
    watcher = threading.Thread(
        target=_watch, args=(tools, stop, hooks), name="holodeck-watch", daemon=True
    )
    watcher.start()
    try:
        if sock is not None:
            announce(f"Serving {names} over MCP at {url} (Ctrl-C stops)")
            if warning:
                warn(warning)
            anyio.run(_serve_http, server, sock, token)
        else:
            hint = " (for an MCP client; Ctrl-C stops)" if sys.stdin.isatty() else ""
            announce(f"Serving {names} over MCP on stdio{hint}")
            anyio.run(_serve_stdio, server)
        announce("Stopped serving")
    finally:
        stop.set()
        watcher.join(WATCHER_JOIN_SECONDS)
        if not watcher.is_alive():  # else it still writes: the process exit ends it
            for tool in tools:
                tool.close()


def _watch(tools: list[VectorStoreTool], stop: threading.Event, hooks: WatchHooks) -> None:
    """The watcher thread: a failure of the loop itself is reported, the server goes on."""
    try:
        watch_tools(
            tools,
            stop,
            progress=hooks.progress,
            on_done=hooks.on_done,
            on_error=hooks.on_error,
            on_ready=hooks.on_ready,
            on_settings=hooks.on_settings,
        )
    except Exception as exc:
        log.error("Watching the sources stopped (%s); searches go on without updates", exc)
        log.debug("Watcher failure", exc_info=True)


def _warn_of_dotenv_token(project_root: Path, warn: Callable[[str], None]) -> None:
    """Say so when the project's ``.env`` sets the token: serve reads it only from its
    environment (``.env`` fills ``${...}`` of the config files), so that server asks none."""
    dotenv = project_root / ".env"
    if not dotenv.is_file():
        return
    try:
        values = read_dotenv(dotenv)
    except ConfigError:  # the config's loading reads it too, and says what is wrong
        return
    if SERVE_TOKEN.name in values:
        warn(
            f".env sets {SERVE_TOKEN.name}, which serve reads only from the environment: "
            f"this server asks no token; export {SERVE_TOKEN.name} in the shell that starts "
            "it to require one"
        )


def _where(
    sock: socket.socket, http: HttpEndpoint, token: str | None, names: str
) -> tuple[str, str | None]:
    """The URL served and the warning it needs; ``ConfigError`` for an open port that
    ``--no-auth`` did not ask for. Judged by the address bound, so a host name counts as
    what it resolved to."""
    host, port = sock.getsockname()[:2]
    shown = f"[{host}]" if ":" in host else host
    url = f"http://{shown}:{port}{MCP_PATH}"
    warning = exposure(
        url,
        f"{http.host}:{http.port}",
        loopback=is_loopback(host),
        token=token,
        no_auth=http.no_auth,
        names=names,
    )
    return url, warning


def _listen(http: HttpEndpoint, flag: str = "--http") -> socket.socket:
    """Bind the HTTP port now, so a port in use is an error before any work is done;
    ``flag`` names the option the error line points at."""
    try:
        family, kind, proto, _, address = socket.getaddrinfo(
            http.host, http.port, type=socket.SOCK_STREAM
        )[0]
        sock = socket.socket(family, kind, proto)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(address)
        sock.listen(128)
    except OSError as exc:
        raise ConfigError(
            f"{flag} {http.host}:{http.port}: cannot listen there ({exc.strerror or exc}); "
            "choose another port, or 0 for any free one"
        ) from None
    return sock


async def _serve_stdio(server: Server) -> None:
    async with anyio.create_task_group() as group:
        group.start_soon(_on_signal, group.cancel_scope.cancel)
        async with stdio_server(stdin=_StdinLines()) as (read, write):  # type: ignore[arg-type]
            await server.run(read, write, server.create_initialization_options())
        group.cancel_scope.cancel()  # the client closed stdin: done


async def _serve_http(server: Server, sock: socket.socket, token: str | None) -> None:
    """Serve HTTP on ``sock``; with a token, every request needs it (``BearerAuth``)."""
    # the SDK turns its Host/Origin checks on when this is 127.0.0.1 or ::1
    mcp_app = server.streamable_http_app(streamable_http_path=MCP_PATH, host=sock.getsockname()[0])
    app = TracedRequests(mcp_app)
    await serve_asgi(BearerAuth(app, token) if token else app, sock)


async def serve_asgi(
    app: Any, sock: socket.socket, on_shutdown: Callable[[], None] | None = None
) -> None:
    """Serve the ASGI ``app`` on ``sock`` with uvicorn until a signal: the first lets open
    requests finish (``on_shutdown`` runs then too), the second ends them."""
    config = uvicorn.Config(
        app,
        log_config=None,  # uvicorn's own config logs to stdout; its warnings reach stderr
        log_level="warning",
        access_log=False,
        timeout_graceful_shutdown=HTTP_GRACE_SECONDS,
        timeout_keep_alive=HTTP_KEEP_ALIVE_SECONDS,
    )
    web = _Uvicorn(config)

    def shut_down() -> None:
        if web.should_exit:
            web.force_exit = True
        web.should_exit = True
        if on_shutdown is not None:
            on_shutdown()

    async with anyio.create_task_group() as group:
        group.start_soon(_on_signal, shut_down)
        await web.serve(sockets=[sock])
        group.cancel_scope.cancel()


async def _on_signal(handler: Callable[[], None]) -> None:
    """Call ``handler`` on every SIGINT or SIGTERM."""
    with anyio.open_signal_receiver(signal.SIGINT, signal.SIGTERM) as signals:
        async for _ in signals:
            handler()


class _Uvicorn(uvicorn.Server):
    """uvicorn without its own signal handlers: ``serve`` handles the signals of both
    transports in one place (uvicorn would re-raise them once it has shut down)."""

    @contextmanager
    def capture_signals(self) -> Iterator[None]:
        yield


class _StdinLines:
    """stdin's lines for the stdio transport, read by a daemon thread.

    The SDK reads stdin in a worker thread that a shutdown must wait for, and a client may
    keep stdin open while it sends SIGTERM; a daemon thread is simply left behind.
    """

    def __init__(self) -> None:
        self._loop = asyncio.get_running_loop()
        self._lines: asyncio.Queue[str] = asyncio.Queue()
        stream = io.TextIOWrapper(
            io.FileIO(sys.stdin.fileno(), "rb", closefd=False), encoding="utf-8", errors="replace"
        )
        threading.Thread(
            target=self._read, args=(stream,), name="holodeck-stdin", daemon=True
        ).start()

    def _read(self, stream: io.TextIOWrapper) -> None:
        for line in stream:
            self._put(line)
        self._put("")  # end of input

    def _put(self, line: str) -> None:
        with suppress(RuntimeError):  # the loop has closed: nobody is listening any more
            self._loop.call_soon_threadsafe(self._lines.put_nowait, line)

    def __aiter__(self) -> _StdinLines:
        return self

    async def __anext__(self) -> str:
        line = await self._lines.get()
        if not line:
            raise StopAsyncIteration
        return line
