"""The spans of ``holodeck serve`` (``holodeck.tracing``): one server span per HTTP request
(the chat API and MCP over HTTP) and one per MCP tool call, each continuing the caller's
trace when it sends a ``traceparent`` (the W3C header, or MCP's ``_meta``)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping, MutableMapping
from typing import Any

from holodeck import tracing

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
App = Callable[[Scope, Receive, Send], Awaitable[None]]


class TracedRequests:
    """ASGI middleware: each HTTP request in a ``{METHOD} {path}`` server span."""

    def __init__(self, app: App) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or not tracing.on():
            await self.app(scope, receive, send)
            return
        headers = {k.decode("latin-1"): v.decode("latin-1") for k, v in scope.get("headers", [])}
        method, path = scope.get("method", "GET"), scope.get("path", "/")
        attributes = {"http.request.method": method, "url.path": path}
        with tracing.span(f"{method} {path}", attributes, kind="server", carrier=headers) as span:

            async def sent(message: Message) -> None:
                if message["type"] == "http.response.start":
                    status = int(message["status"])
                    span.set("http.response.status_code", status)
                    if status >= 500:
                        span.fail(str(status))
                await send(message)

            await self.app(scope, receive, sent)


def mcp_call_span(tool: str, meta: Mapping[str, Any] | None) -> Any:
    """A ``tools/call {tool}`` server span (MCP semantic conventions), continuing the trace
    of a ``traceparent`` in the request's ``_meta``."""
    carrier = {k: v for k, v in (meta or {}).items() if isinstance(v, str)} or None
    attributes = {"mcp.method.name": "tools/call", tracing.TOOL_NAME: tool}
    return tracing.span(f"tools/call {tool}", attributes, kind="server", carrier=carrier)
