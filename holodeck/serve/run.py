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

import anyio
import uvicorn
from mcp.server import Server
from mcp.server.stdio import stdio_server

from holodeck.envvars import LOCK_TIMEOUT, REDIS_LOCK_TTL
from holodeck.errors import ConfigError
from holodeck.knowledge_base import KnowledgeBase
from holodeck.tools.initialize import ProgressFactory
from holodeck.tools.vectorstore_tool import VectorStoreTool
from holodeck.tools.watch import ErrorHandler, watch_tools

log = logging.getLogger("holodeck.serve")

#: How long a stop waits for the watcher to finish the file it is storing.
WATCHER_JOIN_SECONDS = 10.0
#: How long an HTTP shutdown waits for open client connections.
HTTP_GRACE_SECONDS = 3
MCP_PATH = "/mcp"


@dataclass(frozen=True)
class HttpEndpoint:
    """Where ``--http`` listens."""

    host: str
    port: int


@dataclass
class WatchHooks:
    """How the watch loop's passes are shown (the CLI renders them)."""

    progress: ProgressFactory | None = None
    on_done: Callable[[KnowledgeBase], None] | None = None
    on_error: ErrorHandler | None = None
    on_ready: Callable[[], None] | None = None


def serve(
    server: Server,
    tools: list[VectorStoreTool],
    *,
    http: HttpEndpoint | None,
    hooks: WatchHooks,
    announce: Callable[[str], None],
) -> None:
    """Serve until the client leaves (stdio EOF), Ctrl-C or SIGTERM; keep indexes in step."""
    for setting in (LOCK_TIMEOUT, REDIS_LOCK_TTL):  # the watcher's: a bad value fails now
        setting.read()
    for tool in tools:  # fail before serving: a missing source, an unreachable store
        tool.check_source()
        _ = tool.store, tool.embedder  # opened here, once, not by racing threads
    sock = _listen(http) if http else None
    stop = threading.Event()
    watcher = threading.Thread(
        target=_watch, args=(tools, stop, hooks), name="holodeck-watch", daemon=True
    )
    watcher.start()
    names = ", ".join(t.name for t in tools)
    try:
        if sock is not None:
            host, port = sock.getsockname()[:2]
            shown = f"[{host}]" if ":" in host else host
            announce(f"Serving {names} over MCP at http://{shown}:{port}{MCP_PATH}")
            anyio.run(_serve_http, server, sock)
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
        )
    except Exception as exc:
        log.error("Watching the sources stopped (%s); searches go on without updates", exc)
        log.debug("Watcher failure", exc_info=True)


def _listen(http: HttpEndpoint) -> socket.socket:
    """Bind the HTTP port now, so a port in use is an error before any work is done."""
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
            f"--http {http.host}:{http.port}: cannot listen there ({exc.strerror or exc}); "
            "choose another port, or 0 for any free one"
        ) from None
    return sock


async def _serve_stdio(server: Server) -> None:
    async with anyio.create_task_group() as group:
        group.start_soon(_on_signal, group.cancel_scope.cancel)
        async with stdio_server(stdin=_StdinLines()) as (read, write):  # type: ignore[arg-type]
            await server.run(read, write, server.create_initialization_options())
        group.cancel_scope.cancel()  # the client closed stdin: done


async def _serve_http(server: Server, sock: socket.socket) -> None:
    app = server.streamable_http_app(streamable_http_path=MCP_PATH, host=sock.getsockname()[0])
    config = uvicorn.Config(
        app,
        log_config=None,  # uvicorn's own config logs to stdout; its warnings reach stderr
        log_level="warning",
        access_log=False,
        timeout_graceful_shutdown=HTTP_GRACE_SECONDS,
    )
    web = _Uvicorn(config)

    def shut_down() -> None:
        if web.should_exit:
            web.force_exit = True
        web.should_exit = True

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
