"""Bring a set of tools in step with their files before they answer.

One home for what ``ingest``, ``search``, ``chat``, ``test`` (and any other front end) do
first; the caller only chooses how progress and summaries are shown.
"""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractContextManager, nullcontext

from holodeck.ingest.status import Progress
from holodeck.tools.vectorstore_tool import VectorStoreTool

#: Makes the progress callbacks of one tool's ingest, given the tool's name.
ProgressFactory = Callable[[str], AbstractContextManager[Progress]]


def initialize_tools(
    tools: list[VectorStoreTool],
    force: bool = False,
    progress: ProgressFactory | None = None,
    on_done: Callable[[VectorStoreTool], None] | None = None,
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
