"""``holodeck store info``: what each tool's index holds, read from the store itself.

``config show`` says what is configured; this says what is there: the backend really in use
(an unreachable Redis falls back to the embedded index, with the same warning as ingest), the
index's algorithm, metric, model and dimensions, and the documents and chunks of this agent's
tenant and the tool's library. It reads only: nothing is ingested or created.
"""

from __future__ import annotations

import json
from typing import Any

import click

from holodeck.cli.options import agent_option, agent_path
from holodeck.config.loader import Project, load_project
from holodeck.knowledge_base import KnowledgeBase


@click.group()
def store() -> None:
    """Inspect the vector stores behind the knowledge bases."""


@store.command("info")
@agent_option
@click.option("--tool", "tool_names", multiple=True, help="Only this tool (repeatable).")
@click.option("--json", "as_json", is_flag=True, help="Print JSON (stable, for scripts).")
def info(agent_opt: str | None, tool_names: tuple[str, ...], as_json: bool) -> None:
    """Per tool: backend, index, algorithm, metric, model, dimensions, documents and chunks."""
    project = load_project(agent_path(agent_opt))
    tools = [project.tool(n) for n in tool_names] if tool_names else project.tools
    if not tools:
        raise click.UsageError(f"{project.agent_path.name} has no vectorstore tools")
    data = {
        "agent_file": str(project.agent_path),
        "tenant": project.tenant_id,
        "tools": [tool_info(project, t.name) for t in tools],
    }
    click.echo(json.dumps(data, indent=2) if as_json else render_text(data))


def tool_info(project: Project, tool_name: str) -> dict[str, Any]:
    """``KnowledgeBase.info`` of one tool, its index closed again."""
    with KnowledgeBase(project.tool(tool_name), project) as kb:
        return kb.info()


def source_lines(tool: dict[str, Any]) -> list[str]:
    """A remote source's state, for ``store info`` and ``config show``: a git source's
    remote, ref and commits; each web file's URL and last fetch; an S3 prefix's objects."""
    lines: list[str] = []
    if git := tool.get("git"):
        path = f" (path {git['path']})" if git["path"] else ""
        fetched = f"{git['commit'][:12]} at {git['fetched_at']}" if git["commit"] else "not yet"
        lines += [
            f"  git remote:      {git['remote']}",
            f"  git ref:         {git['ref']}{path}",
            f"  fetched:         {fetched}",
            f"  commit indexed:  {git['indexed_commit'] or 'none yet'}",
        ]
    for web in tool.get("urls") or []:
        lines.append(f"  url:             {web['url']} (fetched {web['fetched_at'] or 'not yet'})")
    if s3 := tool.get("s3"):
        lines += [
            f"  s3:              s3://{s3['bucket']}/{s3['prefix']}",
            f"  objects:         {s3['objects']} (fetched {s3['fetched_at'] or 'not yet'})",
        ]
    return lines


def render_text(data: dict[str, Any]) -> str:
    """The human-readable form of ``store info``."""
    lines = [f"Tenant {data['tenant']} (agent {data['agent_file']})"]
    for t in data["tools"]:
        backend = t["backend"] + (f" at {t['url']}" if t["url"] else "")
        if t["fallback"]:
            backend += f" (fallback: {t['fallback']})"
        model = (
            f"{t['embedding_model']}, {t['dimensions']} dims"
            if t["embedding_model"]
            else "none yet (nothing ingested)"
        )
        lines += [
            "",
            f"Tool {t['tool']}",
            f"  backend:         {backend}",
            f"  index:           {t['index']} ({t['algorithm']}, {t['metric']})",
            f"  model:           {model}",
            f"  documents:       {t['documents']}",
            f"  chunks:          {t['chunks']}",
        ]
        lines += source_lines(t)
    return "\n".join(lines)
