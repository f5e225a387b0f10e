"""The agent.yaml shapes of the tools that are not knowledge bases: Python functions and MCP
servers, with the keys (and meanings) the original HoloDeck gives them.

``type: function`` calls a function of a Python file next to agent.yaml; ``type: mcp`` starts
(``command``) or reaches (``url``) an MCP server and offers the model every tool it lists.
Running them is ``holodeck.tools.function_tool`` and ``holodeck.tools.mcp_tool``.
"""

from __future__ import annotations

import re
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, ConfigDict, Field, field_validator, model_validator

from holodeck.config.base import Float, MaybeFloat, StrictModel

_NAME_RE = re.compile(r"^[A-Za-z0-9_]+$")
_IDENTIFIER_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
#: JSON Schema types a ``parameters:`` entry may name (``float`` is the original's word
#: for ``number``).
PARAMETER_TYPES = ("string", "integer", "number", "float", "boolean", "array", "object")
#: Seconds one call of a function or MCP tool may take, unless its ``request_timeout`` says.
DEFAULT_REQUEST_TIMEOUT: float = 60


def tool_name(value: str) -> str:
    """A tool's name: the LLM function name, so letters, digits and underscores only."""
    if not _NAME_RE.match(value):
        raise ValueError("must be non-empty and use only letters, digits and underscores")
    return value


#: The ``name`` of every tool.
ToolName = Annotated[str, AfterValidator(tool_name)]


class FunctionParameter(StrictModel):
    """One argument of a function tool, as ``parameters:`` describes it.

    Other JSON Schema keywords (``minimum``, ``pattern``, ``items``...) are passed on to the
    model as written, as the original does.
    """

    model_config = ConfigDict(extra="allow")

    type: Literal["string", "integer", "number", "float", "boolean", "array", "object"] | None = (
        None
    )
    description: str | None = None
    enum: list[Any] | None = Field(default=None, min_length=1)
    default: Any = None


class FunctionToolConfig(StrictModel):
    """A Python function the model can call (``type: function``)."""

    type: Literal["function"]
    name: ToolName = Field(description="Tool identifier: letters, digits and underscores.")
    description: str | None = Field(
        default=None, description="Shown to the LLM; defaults to the function's docstring."
    )
    file: str = Field(min_length=1, description="Python file, relative to agent.yaml.")
    function: str = Field(min_length=1, description="Name of the function in that file.")
    parameters: dict[str, FunctionParameter] | None = Field(
        default=None,
        description="The arguments' schema; default: from the signature, hints and docstring.",
    )
    # holodeck's own (the original gives a function no time limit): the MCP tools' key and
    # meaning, so that no call can hold up a chat or a test run.
    request_timeout: Float = Field(
        default=DEFAULT_REQUEST_TIMEOUT, gt=0, description="Seconds one call may take."
    )

    @field_validator("function")
    @classmethod
    def _identifier(cls, value: str) -> str:
        if not _IDENTIFIER_RE.match(value):
            raise ValueError("must be a Python function name (letters, digits, underscores)")
        return value


class McpToolConfig(StrictModel):
    """An MCP server whose tools the model can call (``type: mcp``).

    A local server is started with ``command`` and ``args`` (stdio); a remote one is reached
    at ``url`` (``transport: http``, streamable HTTP, the default with a url; or ``sse``).
    """

    type: Literal["mcp"]
    name: ToolName = Field(description="Prefix of the server's tools: <name>__<tool>.")
    description: str | None = None
    transport: Literal["stdio", "http", "sse"] | None = Field(
        default=None, description="stdio with command:, http (streamable) or sse with url:."
    )
    command: str | None = Field(default=None, min_length=1, description="Starts the server.")
    args: list[str] = Field(default_factory=list)
    env: dict[str, str] | None = Field(
        default=None, description="Added to a minimal environment (PATH, HOME...): secrets here."
    )
    env_file: str | None = Field(default=None, description=".env file, relative to agent.yaml.")
    encoding: str = "utf-8"
    url: str | None = None
    headers: dict[str, str] | None = None
    timeout: MaybeFloat = Field(
        default=None, gt=0, description="Seconds to connect and list the tools (default 60)."
    )
    sse_read_timeout: MaybeFloat = Field(default=None, gt=0)
    terminate_on_close: bool = True
    config: dict[str, Any] | None = Field(
        default=None, description="Given to a stdio server as JSON in its MCP_CONFIG variable."
    )
    load_tools: bool = Field(default=True, description="Offer the server's tools to the model.")
    request_timeout: Float = Field(
        default=DEFAULT_REQUEST_TIMEOUT, gt=0, description="Seconds one call may take."
    )
    registry_name: str | None = Field(default=None, description="Where it came from (kept only).")

    @field_validator("url")
    @classmethod
    def _url(cls, value: str | None) -> str | None:
        if value is not None and not value.startswith(("http://", "https://")):
            raise ValueError("must start with http:// or https://")
        return value

    @model_validator(mode="after")
    def _one_way_in(self) -> McpToolConfig:
        if self.transport is None:
            self.transport = "stdio" if self.url is None else "http"
        if self.transport == "stdio":
            if self.command is None:
                raise ValueError(
                    "a stdio server needs command: (and args:); a remote one needs url:"
                )
            if self.url is not None:
                raise ValueError("url: is for transport http or sse, not stdio")
        elif self.url is None:
            raise ValueError(f"transport {self.transport} needs url:")
        elif self.command is not None:
            raise ValueError(
                f"command: starts a stdio server; transport {self.transport} uses url:"
            )
        return self
