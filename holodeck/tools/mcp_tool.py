"""MCP tools: an MCP server's tools offered to the model, through the official SDK's client.

A ``type: mcp`` tool is a server: started as a subprocess (stdio: ``command``, ``args``,
``env``, ``env_file``; its working folder is agent.yaml's) or reached at ``url`` (streamable
``http`` or ``sse``, with ``headers``). At start its tools are listed and each is offered to
the model as ``<name>__<tool>`` (so two servers' tools never collide). ``request_timeout``
bounds every call; the server's stderr goes to the log (``-v`` shows it, the last lines go
into a start failure). Each server lives in a task of its own that owns the SDK's client (an
anyio context must end in the task that began it); ``close`` ends it, and the SDK stops the
process and its children, on Ctrl-C too.
"""

from __future__ import annotations

import asyncio
import functools
import hashlib
import json
import logging
import os
import re
import threading
from collections import deque
from contextlib import AsyncExitStack, suppress
from typing import Any, TextIO

import httpx2
import mcp_types as types
from mcp import Client, StdioServerParameters
from mcp.client.sse import sse_client
from mcp.client.stdio import stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client

from holodeck.config.envsubst import read_dotenv
from holodeck.config.loader import Project
from holodeck.config.tool_configs import McpToolConfig
from holodeck.tools.callables import CallableTool, ToolError, ToolUnavailable, bounded

log = logging.getLogger("holodeck.mcp")

#: Seconds to start a server and list its tools, unless its ``timeout`` says otherwise.
DEFAULT_START_TIMEOUT = 60.0
#: Seconds ``close`` waits for a server's task (the SDK's own shutdown is bounded too).
CLOSE_TIMEOUT = 15.0
#: Lines of a server's stderr a start failure quotes.
STDERR_TAIL = 5
#: The longest function name the model APIs take.
MAX_FUNCTION_NAME = 64
_INVALID = re.compile(r"[^A-Za-z0-9_-]")


class McpStartError(Exception):
    """A server did not start (or did not list its tools): one line naming the tool."""


class McpServer:
    """One ``type: mcp`` tool of agent.yaml: its connection, in a task of its own."""

    def __init__(self, config: McpToolConfig, project: Project) -> None:
        self.config = config
        self.project = project
        self.site = project.where(config.name)
        self.client: Client | None = None
        self.tools: list[types.Tool] = []
        self._task: asyncio.Task[None] | None = None
        self._ready = asyncio.Event()
        self._stop = asyncio.Event()
        self._stderr = _StderrLog(config.name) if config.transport == "stdio" else None

    @property
    def name(self) -> str:
        """The tool's name in agent.yaml."""
        return self.config.name

    async def start(self) -> list[CallableTool]:
        """Start (or reach) the server and list its tools; McpStartError when it cannot."""
        self._task = asyncio.create_task(self._run(), name=f"mcp-{self.name}")
        waiter = asyncio.create_task(self._ready.wait())
        timeout = self.config.timeout or DEFAULT_START_TIMEOUT
        try:
            done, _ = await asyncio.wait(
                {self._task, waiter}, timeout=timeout, return_when=asyncio.FIRST_COMPLETED
            )
        finally:
            waiter.cancel()
        if self._task in done or not done:
            reason = self._failure() if done else f"no answer within {timeout:g} s"
            await self.close()
            raise McpStartError(
                f"{self.site} ({self.name}): the MCP server did not start: {reason}"
            )
        if self._stderr is not None:
            self._stderr.parent_done()
        return self._callables()

    async def close(self) -> None:
        """Stop the server (or leave it, for a remote one) and wait for the task to end."""
        self._stop.set()
        task = self._task
        if task is not None and not task.done():
            try:
                await asyncio.wait_for(asyncio.shield(task), CLOSE_TIMEOUT)
            except TimeoutError:
                task.cancel()
                with suppress(BaseException):
                    await task
            except BaseException:  # a failure already reported, or our own cancellation
                pass
        if self._stderr is not None:
            self._stderr.parent_done()

    async def _run(self) -> None:
        """The task owning the client: connect, list the tools, wait until told to stop."""
        async with AsyncExitStack() as stack:
            client = await stack.enter_async_context(await self._client(stack))
            tools: list[types.Tool] = []
            cursor: str | None = None
            while True:  # every page of the listing
                listing = await client.list_tools(cursor=cursor)
                tools += listing.tools
                cursor = listing.next_cursor
                if not cursor:
                    break
            self.client, self.tools = client, tools
            self._ready.set()
            await self._stop.wait()
            self.client = None

    async def _client(self, stack: AsyncExitStack) -> Client:
        """The SDK's client over the configured transport."""
        cfg = self.config
        if cfg.transport == "stdio":
            assert cfg.command is not None and self._stderr is not None
            params = StdioServerParameters(
                command=cfg.command,
                args=cfg.args,
                env=self._environment(),
                cwd=self.project.root,
                encoding=cfg.encoding,
            )
            return Client(stdio_client(params, errlog=self._stderr.writer()))
        assert cfg.url is not None
        timeout = httpx2.Timeout(cfg.timeout or 30.0, read=cfg.sse_read_timeout or 300.0)
        if cfg.transport == "sse":
            return Client(
                sse_client(
                    cfg.url,
                    headers=cfg.headers,
                    timeout=cfg.timeout or 5.0,
                    sse_read_timeout=cfg.sse_read_timeout or 300.0,
                )
            )
        http = await stack.enter_async_context(
            create_mcp_http_client(headers=cfg.headers, timeout=timeout)
        )
        transport = streamable_http_client(
            cfg.url, http_client=http, terminate_on_close=cfg.terminate_on_close
        )
        return Client(transport)

    def _environment(self) -> dict[str, str]:
        """What the server gets on top of the SDK's minimal environment (PATH, HOME...).

        ``env_file`` first, ``env`` over it, and ``config`` as JSON in ``MCP_CONFIG``.
        """
        env: dict[str, str] = {}
        if self.config.env_file:  # read as the project's .env is: one line for a bad file
            path = self.project.root / self.config.env_file
            if path.is_file():
                env.update(read_dotenv(path))
        env.update(self.config.env or {})
        if self.config.config is not None:
            env["MCP_CONFIG"] = json.dumps(self.config.config)
        return env

    def _failure(self) -> str:
        """Why the task ended before the server was ready, with its last stderr lines."""
        assert self._task is not None
        exc = self._task.exception() if not self._task.cancelled() else None
        reason = _reason(exc) if exc is not None else "it stopped"
        tail = self._stderr.tail() if self._stderr is not None else ""
        return f"{reason}{f' (its stderr: {tail})' if tail else ''}"

    def _callables(self) -> list[CallableTool]:
        """One function per listed tool, named ``<server>__<tool>``."""
        if not self.config.load_tools:
            return []
        out: list[CallableTool] = []
        taken: set[str] = set()
        for tool in self.tools:
            name = function_name(self.name, tool.name, taken)
            taken.add(name)
            out.append(
                CallableTool(
                    name=name,
                    description=tool.description or tool.title or f"{tool.name} ({self.name})",
                    parameters=dict(tool.input_schema or {"type": "object", "properties": {}}),
                    kind="mcp",
                    run=functools.partial(self.call, tool.name),
                    aliases=(self.name, tool.name),
                )
            )
        return out

    async def call(self, remote: str, arguments: dict[str, Any]) -> str:
        """Call the server's tool ``remote``; its text, or a ToolError the model reads."""
        client = self.client
        if client is None or self._task is None or self._task.done():
            raise ToolUnavailable(f"the MCP server {self.name} is not running")
        timeout = self.config.request_timeout
        try:
            result = await asyncio.wait_for(
                client.call_tool(remote, arguments, read_timeout_seconds=timeout), timeout + 5
            )
        except TimeoutError:
            raise ToolError(
                f"{self.name} did not answer within {timeout:g} s (request_timeout)"
            ) from None
        except Exception as exc:
            log.debug("MCP call %s of %s failed", remote, self.name, exc_info=True)
            if "timed out" in str(exc):  # the SDK's own request timeout
                raise ToolError(
                    f"{self.name} did not answer within {timeout:g} s (request_timeout)"
                ) from None
            if self._task.done() or _connection_lost(exc):
                raise ToolUnavailable(
                    f"the MCP server {self.name} stopped ({_reason(exc)})"
                ) from exc
            raise ToolError(f"{self.name}: {_reason(exc)}") from exc
        text = bounded(result_text(result))
        if result.is_error:
            raise ToolError(text or f"{remote} failed")
        return text


def function_name(server: str, tool: str, taken: set[str]) -> str:
    """``<server>__<tool>`` as the model APIs take it: [A-Za-z0-9_-], at most 64 characters."""
    name = _INVALID.sub("_", f"{server}__{tool}")
    if len(name) > MAX_FUNCTION_NAME or name in taken:
        digest = hashlib.sha1(f"{server}/{tool}".encode()).hexdigest()[:8]
        name = f"{name[: MAX_FUNCTION_NAME - 9]}_{digest}"
    return name


def result_text(result: types.CallToolResult) -> str:
    """The text of a tool result: its text parts, a note for each other part."""
    parts: list[str] = []
    for block in result.content:
        if isinstance(block, types.TextContent):
            parts.append(block.text)
        elif isinstance(block, types.EmbeddedResource):
            resource = block.resource
            text = getattr(resource, "text", None)
            parts.append(text if isinstance(text, str) else f"[resource {resource.uri}]")
        elif isinstance(block, types.ResourceLink):
            parts.append(f"[resource {block.uri}]")
        else:
            mime = getattr(block, "mime_type", None) or block.type
            parts.append(f"[{block.type} content ({mime}) not shown]")
    if not parts and result.structured_content is not None:
        parts.append(json.dumps(result.structured_content, ensure_ascii=False))
    return "\n".join(parts)


def _reason(exc: BaseException) -> str:
    """An exception as a short reason (an ExceptionGroup by its first leaf)."""
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    text = str(exc) or type(exc).__name__
    if isinstance(exc, OSError) and exc.filename:
        return f"cannot run {exc.filename!r}: {exc.strerror}"
    return text if text.startswith(type(exc).__name__) else f"{type(exc).__name__}: {text}"


def _connection_lost(exc: BaseException) -> bool:
    """Whether a call failed because the connection (or the process) is gone."""
    names = {type(e).__name__ for e in _leaves(exc)}
    return bool(names & {"ClosedResourceError", "BrokenResourceError", "EndOfStream"}) or (
        "closed" in str(exc).lower()
    )


def _leaves(exc: BaseException) -> list[BaseException]:
    if isinstance(exc, BaseExceptionGroup):
        return [leaf for inner in exc.exceptions for leaf in _leaves(inner)]
    return [exc]


class _StderrLog:
    """A stdio server's stderr: each line to the debug log, the last ones kept for errors."""

    def __init__(self, name: str) -> None:
        self.name = name
        self._lines: deque[str] = deque(maxlen=STDERR_TAIL)
        self._write: TextIO | None = None
        self._reader: threading.Thread | None = None

    def writer(self) -> TextIO:
        """The write end of a pipe for the subprocess; a daemon thread reads the other."""
        read_fd, write_fd = os.pipe()
        self._write = os.fdopen(write_fd, "w")
        reader = os.fdopen(read_fd, "r", encoding="utf-8", errors="replace")
        self._reader = threading.Thread(target=self._read, args=(reader,), daemon=True)
        self._reader.start()
        return self._write

    def _read(self, reader: TextIO) -> None:
        with reader:
            for line in reader:
                line = line.rstrip()
                if line:
                    self._lines.append(line)
                    log.debug("MCP server %s: %s", self.name, line)

    def parent_done(self) -> None:
        """Close holodeck's copy of the write end (the child keeps its own)."""
        if self._write is not None:
            with suppress(OSError):
                self._write.close()
            self._write = None

    def tail(self) -> str:
        """The last lines, once what the (stopped) server wrote has been read."""
        self.parent_done()
        if self._reader is not None:
            self._reader.join(1.0)
        return " | ".join(self._lines)
