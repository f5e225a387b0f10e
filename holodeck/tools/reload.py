"""An edit of agent.yaml (or the project's config.yaml) while ``ingest --watch`` or ``serve``
runs: applied at once when a running process can, else said to need a restart.

What a pass or a search reads from the tool's settings on each use (``exclude``,
``file_types``, ``limits``, ``top_k``, ``min_similarity_score``, ``search_mode``,
``description``) is applied: the tool takes the new settings and is passed again, so files
newly excluded leave the index and newly included ones come in. What decides how the stored
chunks were made or where they live (the source, the embedding model and its provider, the
chunking, the database, the tenant, which tools there are) cannot change under a running
index: that tool keeps all its running settings and one line says to restart. An edit that
does not load keeps every running setting and shows the config error's line; so does an
edited embedding model that the restart could not use (checked as the restart would).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from holodeck.config.files import file_label
from holodeck.config.loader import (
    LOCAL_MODEL_NAMES,
    PROJECT_CONFIG,
    Project,
    ResolvedTool,
    load_project,
)
from holodeck.knowledge_base import KnowledgeBase

#: Settings whose change means the stored chunks must be made again: a restart alone does
#: not apply it, ``--force-ingest`` does.
REBUILDS = ("embedding_model", "chunk_size", "chunk_overlap", "embedding provider")


@dataclass
class Reloaded:
    """What one edit did: the tools that took new settings (to be passed again now), and
    the lines to show (what was applied, what needs a restart)."""

    applied: list[KnowledgeBase] = field(default_factory=list)
    lines: list[str] = field(default_factory=list)


class SettingsFiles:
    """The settings files of the running tools' project, and their (mtime, size) when last
    looked at: an edit that has held still for one tick is reloaded (the editor is done)."""

    def __init__(self, tools: Sequence[KnowledgeBase]) -> None:
        self.tools = list(tools)
        project = tools[0].project
        self.agent_path = project.agent_path
        self.paths = (project.agent_path, project.root / PROJECT_CONFIG)
        self.seen = self._signature()
        self.done = self.seen

    def _signature(self) -> tuple[tuple[int, int] | None, ...]:
        return tuple(file_signature(p) for p in self.paths)

    def edited(self) -> bool:
        """Whether the files changed and have since held still for a tick."""
        now = self._signature()
        if now != self.seen:
            self.seen = now  # still being written: wait one tick
            return False
        if now == self.done:
            return False
        self.done = now
        return True

    def reload(self) -> Reloaded:
        """Load the edited files and apply what can be; a ``ConfigError`` when they do not
        load (nothing running changes)."""
        project = load_project(self.agent_path)
        label = file_label(self.agent_path)
        out = Reloaded()
        running = {t.name for t in self.tools}
        added = sorted({t.name for t in project.tools} - running)
        removed = sorted(running - {t.name for t in project.tools})
        if added or removed:
            what = "; ".join(
                part
                for part in (
                    f"tools added: {', '.join(added)}" if added else "",
                    f"tools removed: {', '.join(removed)}" if removed else "",
                )
                if part
            )
            out.lines.append(f"{label} changed ({what}): restart to serve or watch them")
        for tool in self.tools:
            new = next((t for t in project.tools if t.name == tool.name), None)
            if new is None:
                continue
            live, fixed = _changes(tool, new, project)
            if {"embedding_model", "embedding provider"} & set(fixed):
                _check_embedder(new, project)  # the advice to restart must be one that works
            if fixed:
                out.lines.append(_restart_line(label, tool.name, fixed))
            elif live:
                tool.resolved, tool.project = new, project
                out.applied.append(tool)
                out.lines.append(f"{label} changed: {tool.name}: {', '.join(live)} applied")
        if not out.lines:
            out.lines.append(f"{label} changed: nothing the running tools use")
        return out


def _changes(
    tool: KnowledgeBase, new: ResolvedTool, project: Project
) -> tuple[list[str], list[str]]:
    """The settings of ``tool`` that differ in ``new``: (applied live, needing a restart).
    The source, database and model are compared as resolved (a project config's database,
    the provider's default model)."""
    old = tool.resolved
    before, after = old.config.model_dump(), new.config.model_dump()
    differ = [k for k in after if k != "type" and before.get(k) != after[k]]
    resolved = ("source", "database", "embedding_model")
    fixed = [k for k in differ if k in REBUILDS and k not in resolved]
    fixed += [k for k in resolved if getattr(old, k) != getattr(new, k)]
    if old.embedding_model not in LOCAL_MODEL_NAMES and _dump(
        tool.project.agent.embedding_model_config
    ) != _dump(project.agent.embedding_model_config):
        fixed.append("embedding provider")
    if tool.project.tenant_id != project.tenant_id:
        fixed.append("tenant")
    live = [k for k in differ if k not in (*REBUILDS, *resolved)]
    return live, fixed


def _check_embedder(tool: ResolvedTool, project: Project) -> None:
    """Make the embedder an edited tool names, as the restart would (cheap: no model is
    loaded, no request made): a ``ConfigError`` (the line the restart would end with) when
    it cannot be, such as a remote model name without a provider."""
    from holodeck.embeddings.factory import make_embedder  # only an edit of the model asks

    make_embedder(tool.embedding_model, project.root, project.agent.embedding_model_config)


def _restart_line(label: str, name: str, fixed: list[str]) -> str:
    """The line for a tool whose edit cannot be applied while running."""
    how = "restart with `holodeck ingest --force-ingest`, which embeds every file again"
    if not any(k in REBUILDS for k in fixed):
        how = "restart to apply it"
    return (
        f"{label} changed: {name}: {', '.join(fixed)} cannot change while running; "
        f"{name} keeps its running settings ({how})"
    )


def _dump(model: Any) -> str:
    return model.model_dump_json() if model is not None else ""


def file_signature(path: Path) -> tuple[int, int] | None:
    """A file's (mtime in ns, size), None when it is missing: what looking compares."""
    try:
        st = path.stat()
    except OSError:
        return None
    return st.st_mtime_ns, st.st_size
