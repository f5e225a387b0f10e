"""Get an agent's tools ready: knowledge bases in step with their files, servers started.

One home for what ``ingest``, ``search``, ``chat``, ``test`` (and any other front end) do
first; the caller only chooses how progress, summaries and warnings are shown.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import AbstractContextManager, asynccontextmanager, nullcontext
from dataclasses import dataclass, field
from typing import TypeVar

from holodeck.config.loader import Project
from holodeck.ingest.status import Progress
from holodeck.knowledge_base import KnowledgeBase
from holodeck.tools.callables import CallableTool

#: Knowledge bases of one kind (the agent's tools, or plain ones).
KB = TypeVar("KB", bound=KnowledgeBase)
#: Makes the progress callbacks of one tool's ingest, given the tool's name.
ProgressFactory = Callable[[str], AbstractContextManager[Progress]]


def initialize_tools(
    tools: Sequence[KB],
    force: bool = False,
    progress: ProgressFactory | None = None,
    on_done: Callable[[KB], None] | None = None,
    wait: bool = True,
) -> None:
    """Initialize each tool in turn (incremental ingest, or all with ``force``).

    ``wait=False`` for readers: a library another process is ingesting is searched as it is.
    """
    for tool in tools:
        with progress(tool.name) if progress else nullcontext(Progress()) as callbacks:
            tool.initialize_sync(force_ingest=force, progress=callbacks, wait=wait or force)
        if on_done is not None:
            on_done(tool)


@dataclass
class Offered:
    """The tools besides the knowledge bases a model may call, and the servers that failed."""

    functions: list[CallableTool] = field(default_factory=list)
    failed: dict[str, str] = field(default_factory=dict)  # MCP tool name -> why


@asynccontextmanager
async def agent_functions(
    project: Project,
    functions: list[CallableTool],
    on_warning: Callable[[str], None],
) -> AsyncIterator[Offered]:
    """``functions`` (the imported function tools) plus every MCP server's tools, started.

    A server that does not start is one ``on_warning`` line and the others go on; every
    server is stopped when the block ends, however it ends (Ctrl-C included).
    """
    from holodeck.config.tool_configs import McpToolConfig
    from holodeck.tools.mcp_tool import McpServer, McpStartError

    servers = [McpServer(config, project) for config in project.agent.tools_of(McpToolConfig)]
    offered = Offered(list(functions))
    try:
        started = await asyncio.gather(*(s.start() for s in servers), return_exceptions=True)
        for server, result in zip(servers, started, strict=True):
            if isinstance(result, McpStartError):
                offered.failed[server.name] = str(result)
                on_warning(f"{result}; going on without its tools")
            elif isinstance(result, BaseException):
                raise result
            else:
                offered.functions += result
        yield offered
    finally:
        await asyncio.gather(*(s.close() for s in servers), return_exceptions=True)
