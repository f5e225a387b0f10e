"""Tools the model calls that are not knowledge bases: Python functions and MCP servers' tools.

Each is a ``CallableTool``: the function definition the model sees and a coroutine that runs
a call. A call's problem the model can act on (bad arguments, the function raised, the server
answered with an error) is a ``ToolError``: its text goes back to the model as the tool's
result. A server that is gone is a ``ToolUnavailable``: the model reads that too, and
``holodeck test`` counts it as a runtime error, not the agent's mistake.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, Literal

#: Characters of a result the model (and the chat) gets: a runaway tool cannot flood it.
MAX_OUTPUT_CHARS = 20_000

CallKind = Literal["function", "mcp"]


class ToolError(Exception):
    """A call failed in a way the model should read (and may correct)."""


class ToolUnavailable(ToolError):
    """The tool cannot run at all (its MCP server stopped or never started)."""


@dataclass
class CallableTool:
    """One function the model can call."""

    name: str  # the function name the model sees
    description: str
    parameters: dict[str, Any]  # JSON Schema of the arguments
    kind: CallKind
    run: Callable[[dict[str, Any]], Awaitable[str]]
    #: Other names ``expected_tools`` may give it: the MCP server's tool name in agent.yaml
    #: and the tool's own name on the server.
    aliases: tuple[str, ...] = field(default=())

    def definition(self) -> dict[str, Any]:
        """The ``function`` of a chat request's ``tools`` entry."""
        return {"name": self.name, "description": self.description, "parameters": self.parameters}


def bounded(text: str) -> str:
    """``text`` cut to ``MAX_OUTPUT_CHARS``, saying so."""
    if len(text) <= MAX_OUTPUT_CHARS:
        return text
    cut = len(text) - MAX_OUTPUT_CHARS
    return text[:MAX_OUTPUT_CHARS] + f"\n[... {cut:,} more characters not shown]"
