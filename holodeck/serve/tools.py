"""Vectorstore tools as MCP tools, on the official SDK's low-level ``Server``.

Each tool keeps its function definition's name, description and input schema (one required
string ``query``), so an MCP client's LLM sees exactly what ``holodeck chat`` gives its LLM. A
call returns the formatted text the LLM reads, and as structured content the JSON that
``holodeck search --json --tool NAME`` prints, for programs that want scores and ids.

Every failure of a call (empty query, embedding error, lost Redis, an index still being built
for the first time) is a tool error carrying the message (``is_error``: the client's LLM
reads it and can try again); an unknown tool name is a protocol error. Searches run in worker
threads and read what the index has committed: they never wait for a re-ingest.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

import anyio
import mcp_types as types
from mcp.server import Server, ServerRequestContext
from mcp.shared.exceptions import MCPError

from holodeck import __version__
from holodeck.errors import HoloDeckError
from holodeck.knowledge_base import clean_query
from holodeck.redact import redact_url
from holodeck.results import search_json, tool_results_json
from holodeck.serve.spans import mcp_call_span
from holodeck.tools.vectorstore_tool import VectorStoreTool

log = logging.getLogger("holodeck.serve")


def build_server(
    tools: list[VectorStoreTool],
    *,
    name: str,
    instructions: str | None = None,
    failures: Mapping[str, str] | None = None,
) -> Server:
    """An MCP server offering ``tools``; ``failures`` holds why a tool's last ingest failed."""
    by_name = {tool.name: tool for tool in tools}
    broken = failures if failures is not None else {}

    async def list_tools(
        ctx: ServerRequestContext, params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        # listed anew each time: an edited description is served at once (tools.reload)
        return types.ListToolsResult(tools=[mcp_tool(tool) for tool in tools])

    async def call_tool(
        ctx: ServerRequestContext, params: types.CallToolRequestParams
    ) -> types.CallToolResult:
        tool = by_name.get(params.name)
        if tool is None:
            known = ", ".join(by_name) or "none"
            raise MCPError(types.INVALID_PARAMS, f"Unknown tool: {params.name} (tools: {known})")
        query = (params.arguments or {}).get("query")
        with mcp_call_span(params.name, _meta(params)):
            return await anyio.to_thread.run_sync(call_search, tool, query, broken.get(tool.name))

    def input_schema(tool_name: str) -> dict[str, object] | None:
        tool = by_name.get(tool_name)
        return tool.tool_definition()["parameters"] if tool else None

    return Server(
        name,
        version=__version__,
        title=f"HoloDeck: {name}",
        instructions=instructions,
        get_tool_input_schema=input_schema,
        on_list_tools=list_tools,
        on_call_tool=call_tool,
    )


def _meta(params: types.CallToolRequestParams) -> dict[str, Any] | None:
    """The request's ``_meta`` (where a client puts its ``traceparent``), as a plain dict."""
    meta = getattr(params, "meta", None)
    if meta is None:
        return None
    return meta if isinstance(meta, dict) else meta.model_dump(by_alias=True)


def mcp_tool(tool: VectorStoreTool) -> types.Tool:
    """The MCP listing of a tool: its function definition for the LLM, marked read-only."""
    definition = tool.tool_definition()
    return types.Tool(
        name=definition["name"],
        description=definition["description"],
        input_schema=definition["parameters"],
        annotations=types.ToolAnnotations(
            read_only_hint=True, idempotent_hint=True, open_world_hint=False
        ),
    )


def call_search(tool: VectorStoreTool, query: object, failure: str | None) -> types.CallToolResult:
    """One search as an MCP result (blocking: runs in a worker thread)."""
    try:
        text = clean_query(query)  # type: ignore[arg-type]  # not a str: "cannot be empty"
        if not tool.is_initialized and tool.document_count == 0:
            return _error(_not_ready(tool, failure))
        results, total = tool.find(text)
    except Exception as exc:  # every failure reaches the client as a tool error
        log.debug("Search of %s failed", tool.name, exc_info=True)
        return _error(str(exc) if _expected(exc) else f"{type(exc).__name__}: {exc}")
    return types.CallToolResult(
        content=[types.TextContent(text=tool.render(text, results, total, view="model"))],
        structured_content=search_json(text, [tool_results_json(tool.name, results, total)]),
    )


def _not_ready(tool: VectorStoreTool, failure: str | None) -> str:
    """Why a tool with nothing indexed yet cannot answer (the message of a search before
    ``initialize`` first)."""
    prefix = "VectorStoreTool must be initialized before search"
    if failure:
        return f"{prefix}: ingesting {tool.name} failed: {failure}"
    return f"{prefix}: {tool.name} is being ingested for the first time; try again shortly"


def _expected(exc: Exception) -> bool:
    """Errors whose message already reads as a line for the user: the tool contract's
    (docs/contract.md) and holodeck's own."""
    return isinstance(exc, (ValueError, RuntimeError, HoloDeckError, FileNotFoundError))


def _error(message: str) -> types.CallToolResult:
    return types.CallToolResult(
        content=[types.TextContent(text=redact_url(message))], is_error=True
    )
