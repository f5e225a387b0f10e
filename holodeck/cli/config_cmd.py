"""``holodeck config show`` and ``holodeck config schema``."""

from __future__ import annotations

import json
from typing import Any

import click

from holodeck.cli.options import agent_option, agent_path
from holodeck.cli.store_cmd import source_lines
from holodeck.config.loader import Project, ResolvedTool, load_project
from holodeck.config.models import AgentConfig
from holodeck.config.tool_configs import FunctionToolConfig, McpToolConfig
from holodeck.config.vectorstore_tool import DatabaseConfig
from holodeck.embeddings.catalog import effective_chunk_size, facts
from holodeck.ingest.git_source import GitRepository
from holodeck.ingest.s3_source import S3Files
from holodeck.ingest.url_source import WebFiles
from holodeck.redact import redact_url

#: Seconds ``config show`` waits for a Redis to answer before it reports the fallback.
PROBE_TIMEOUT = 2.0


@click.group()
def config() -> None:
    """Inspect the resolved configuration."""


@config.command("show")
@agent_option
@click.option("--json", "as_json", is_flag=True, help="Print JSON (stable, for scripts).")
def show(agent_opt: str | None, as_json: bool) -> None:
    """Print the resolved configuration: per tool, its database and where that came from."""
    project = load_project(agent_path(agent_opt))
    data = describe_project(project)
    if as_json:
        click.echo(json.dumps(data, indent=2))
        return
    click.echo(render_text(data))


@config.command("schema")
def schema() -> None:
    """Print the JSON Schema of agent.yaml (for editors' autocompletion)."""
    click.echo(json.dumps(agent_schema(), indent=2))


def agent_schema() -> dict[str, Any]:
    """JSON Schema of agent.yaml, generated from the pydantic models."""
    out = AgentConfig.model_json_schema()
    out["$schema"] = "https://json-schema.org/draft/2020-12/schema"
    out["title"] = "HoloDeck agent.yaml"
    return out


def describe_tool(
    project: Project, tool: ResolvedTool, in_use: str | None = None
) -> dict[str, Any]:
    """One tool's resolved settings, as plain JSON-able values (passwords redacted).

    ``in_use`` is the store the tool would really use now (``probe``), since an unreachable
    Redis means the embedded fallback; probed here when not given.
    """
    cfg = tool.config
    db = tool.database
    if db is None:
        database: dict[str, Any] = {
            "provider": "local",
            "path": f".holodeck/index/{tool.name}/index.db",
            "origin": tool.database_origin,
        }
    else:
        database = {
            "provider": db.provider,
            "connection_string": redact_url(db.connection_string),
            "index_name": db.index_name,
            "vector_algorithm": db.vector_algorithm,
            "distance_metric": db.distance_metric,
            "origin": tool.database_origin,
        }
    known = facts(tool.embedding_model)
    return {
        "name": cfg.name,
        "description": cfg.description,
        "source": project.display(tool.source),
        "database": database,
        "embedding_model": tool.embedding_model,
        "embedding_dimensions": known.dimensions if known else None,
        "chunk_size": effective_chunk_size(tool.embedding_model, cfg.chunk_size),
        "chunk_size_requested": cfg.chunk_size,
        "chunk_size_set": "chunk_size" in cfg.model_fields_set,  # in agent.yaml, or the default
        "chunk_overlap": cfg.chunk_overlap,
        "top_k": cfg.top_k,
        "search_mode": cfg.search_mode,
        "min_similarity_score": cfg.min_similarity_score,
        "in_use": in_use if in_use is not None else probe(db),
        "git": git.describe() if (git := GitRepository.of(tool, project.root)) else None,
        "urls": web.describe() if (web := WebFiles.of(tool, project.root)) else None,
        "s3": s3.describe() if (s3 := S3Files.of(tool, project.root)) else None,
    }


def describe_project(project: Project) -> dict[str, Any]:
    """The whole resolved configuration as plain values."""
    model = project.agent.model
    probed: dict[str, str] = {}  # one probe per server, however many tools share it
    for tool in project.tools:
        if tool.database and tool.database.connection_string not in probed:
            probed[tool.database.connection_string] = probe(tool.database)
    return {
        "agent_file": str(project.agent_path),
        "project_root": str(project.root),
        "name": project.agent.name,
        "tenant": project.tenant_id,
        "model": None
        if model is None
        else {
            "provider": model.provider,
            "name": model.name,
            "endpoint": redact_url(model.endpoint) if model.endpoint else None,
            "api_key": "***" if model.api_key else None,
        },
        "tools": [
            describe_tool(
                project, t, probed[t.database.connection_string] if t.database else "local"
            )
            for t in project.tools
        ],
        "functions": [
            {
                "name": t.name,
                "file": t.file,
                "function": t.function,
                "parameters": list(t.parameters) if t.parameters is not None else None,
                "request_timeout": t.request_timeout,
            }
            for t in project.agent.tools_of(FunctionToolConfig)
        ],
        "mcp_servers": [describe_server(t) for t in project.agent.tools_of(McpToolConfig)],
    }


def describe_server(tool: McpToolConfig) -> dict[str, Any]:
    """An MCP tool as config show prints it: how it is reached (headers and env unshown)."""
    return {
        "name": tool.name,
        "transport": tool.transport,
        "command": [tool.command, *tool.args] if tool.command else None,
        "url": redact_url(tool.url) if tool.url else None,
        "request_timeout": tool.request_timeout,
        "load_tools": tool.load_tools,
    }


def probe(database: DatabaseConfig | None) -> str:
    """The store in use (``vectorstore.factory.probe``), imported only when a tool needs it."""
    if database is None:
        return "local"
    from holodeck.vectorstore.factory import probe as probe_store

    return probe_store(database, PROBE_TIMEOUT)


def render_text(data: dict[str, Any]) -> str:
    """The human-readable form of ``describe_project``."""
    lines = [f"Agent {data['name']} (tenant {data['tenant']}) from {data['agent_file']}"]
    model = data["model"]
    lines.append(
        f"Model: {model['provider']} {model['name']}"
        if model
        else "Model: none (retrieval-only: chat and test search the knowledge bases directly)"
    )
    if not (data["tools"] or data["functions"] or data["mcp_servers"]):
        lines.append("No tools.")
    for tool in data["tools"]:
        db = tool["database"]
        if db["provider"] == "local":
            where = f"local index at {db['path']}"
        else:
            where = (
                f"{db['provider']} {db['connection_string']} index {db['index_name']} "
                f"({db['vector_algorithm']}, {db['distance_metric']})"
            )
        size = f"{tool['chunk_size']} tokens"
        if tool["chunk_size"] != tool["chunk_size_requested"]:
            size += (
                f" (asked {tool['chunk_size_requested']}; the model reads {tool['chunk_size']})"
                if tool["chunk_size_set"]
                else f" (all the model reads; the default is {tool['chunk_size_requested']})"
            )
        dims = f", {tool['embedding_dimensions']} dims" if tool["embedding_dimensions"] else ""
        min_score = tool["min_similarity_score"]
        lines += [
            "",
            f"Tool {tool['name']}",
            f"  source:          {tool['source']}",
            f"  database:        {where}",
            f"  from:            {db['origin']}",
            f"  in use:          {tool['in_use']}",
            f"  embedding model: {tool['embedding_model']}{dims}",
            f"  chunk size:      {size}",
            f"  chunk overlap:   {tool['chunk_overlap']} tokens",
            f"  top_k:           {tool['top_k']}",
            f"  search mode:     {tool['search_mode']}",
            f"  min score:       {'none' if min_score is None else min_score}",
            *source_lines(tool),
        ]
    for function in data["functions"]:
        params = function["parameters"]
        shown = "from its signature" if params is None else ", ".join(params) or "none"
        lines += [
            "",
            f"Tool {function['name']} (function)",
            f"  calls:           {function['function']} in {function['file']}",
            f"  parameters:      {shown}",
            f"  call timeout:    {function['request_timeout']:g} s",
        ]
    for server in data["mcp_servers"]:
        where = (
            f"  command:         {' '.join(server['command'])}"
            if server["command"]
            else f"  url:             {server['url']}"
        )
        offered = (
            f"every tool it lists, as {server['name']}__<tool>"
            if server["load_tools"]
            else "none (load_tools: false)"
        )
        lines += [
            "",
            f"Tool {server['name']} (MCP server, {server['transport']})",
            where,
            f"  tools offered:   {offered}",
            f"  call timeout:    {server['request_timeout']:g} s",
        ]
    return "\n".join(lines)
