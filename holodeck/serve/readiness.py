"""Whether the REST server's knowledge bases have finished their first ingest, and how far
each one has got: what ``/ready`` answers (503 with this progress until then).

The watch loop runs in a thread of its own; it reports here through the same hooks the
command's display uses (``wrap`` chains them), and a request reads a snapshot under a lock.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager, nullcontext
from dataclasses import dataclass
from typing import Any

from holodeck.ingest.status import IngestStatus, Progress
from holodeck.knowledge_base import KnowledgeBase
from holodeck.serve.run import WatchHooks
from holodeck.tools.watch import ErrorHandler


@dataclass
class ToolProgress:
    """One knowledge base's first pass: pending, ingesting, done or failed."""

    state: str = "pending"
    files_todo: int = 0
    files_done: int = 0
    error: str | None = None


class Readiness:
    """The first pass of every tool; ready once the watch loop says it is watching."""

    def __init__(self, tools: Sequence[KnowledgeBase]) -> None:
        self._lock = threading.Lock()
        self._tools = {tool.name: ToolProgress() for tool in tools}
        self._ready = not self._tools  # nothing to ingest: ready at once

    @property
    def ready(self) -> bool:
        with self._lock:
            return self._ready

    def snapshot(self) -> dict[str, Any]:
        """What ``/ready`` shows: ready or not, and each tool's progress."""
        with self._lock:
            tools = [{"name": name, **vars(p)} for name, p in self._tools.items()]
            ready = self._ready
        done = sum(t["files_done"] for t in tools)
        todo = sum(t["files_todo"] for t in tools)
        detail = (
            "the knowledge bases are ready"
            if ready
            else f"first ingest of the knowledge bases running: {done} of {todo} file(s) done"
        )
        return {"ready": ready, "detail": detail, "tools": tools}

    def wrap(self, hooks: WatchHooks) -> WatchHooks:
        """``hooks`` that also report here (the display still gets every call)."""

        def progress(name: str) -> AbstractContextManager[Progress]:
            return self._progress(name, hooks.progress(name) if hooks.progress else None)

        def on_done(tool: KnowledgeBase) -> None:
            self._set(tool.name, state="done", error=None)
            if hooks.on_done:
                hooks.on_done(tool)

        def on_error(tool: KnowledgeBase, exc: Exception, first_pass: bool) -> None:
            self._set(tool.name, state="failed", error=str(exc))
            if hooks.on_error:
                hooks.on_error(tool, exc, first_pass)

        def on_ready() -> None:
            with self._lock:
                self._ready = True
            if hooks.on_ready:
                hooks.on_ready()

        error_handler: ErrorHandler = on_error
        return WatchHooks(progress, on_done, error_handler, on_ready, hooks.on_settings)

    @contextmanager
    def _progress(
        self, name: str, shown: AbstractContextManager[Progress] | None
    ) -> Iterator[Progress]:
        with shown or nullcontext(Progress()) as inner:

            def start(files: int, todo: int) -> None:
                self._set(name, state="ingesting", files_todo=todo, files_done=0)
                inner.start(files, todo)

            def advance(rel_path: str) -> None:
                with self._lock:
                    self._tools[name].files_done += 1
                inner.advance(rel_path)

            def update(status: IngestStatus) -> None:
                inner.update(status)

            yield Progress(start=start, advance=advance, update=update)

    def _set(self, name: str, **fields: Any) -> None:
        with self._lock:
            progress = self._tools.setdefault(name, ToolProgress())
            for key, value in fields.items():
                setattr(progress, key, value)
