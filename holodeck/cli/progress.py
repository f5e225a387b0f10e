"""Progress display for ingestion: a rich bar per tool on a terminal, plain lines otherwise."""

from __future__ import annotations

import sys
import time
from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager

import click
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)
from rich.progress import Progress as RichProgress

from holodeck.console import make_console
from holodeck.ingest.pipeline import Progress
from holodeck.redact import redact_url
from holodeck.tools.initialize import initialize_tools
from holodeck.tools.vectorstore_tool import VectorStoreTool


def ingest_tools(
    tools: list[VectorStoreTool],
    force: bool,
    quiet: bool,
    show_summary: bool = True,
    wait: bool = True,
) -> None:
    """Initialize each tool with a progress display; its one-line summary goes to stderr.

    Readers (search, chat, test) pass ``wait=False``: they never wait for another ingest.
    """

    def done(tool: VectorStoreTool) -> None:
        if show_summary and not quiet and tool.summary:
            click.echo(tool.summary_line(), err=True)

    initialize_tools(tools, force, lambda name: ingest_progress(name, quiet), done, wait)


class WatchReport:
    """What the watch loop shows (``ingest --watch``, ``serve``): a summary line per tool and
    pass (later passes with the time), one line per failure, a line once watching starts.

    ``first_pass_fails`` re-raises a failure of the first pass (``ingest --watch`` then stops
    with the error's exit code, as a plain ingest would); otherwise it is reported like any
    other and ``failures`` keeps it for whoever asks (``serve`` tells its clients). With
    ``quiet`` only the summary lines are shown, on stdout when ``stdout`` allows it (never
    for ``serve``: its stdout may be the MCP protocol's).
    """

    def __init__(
        self,
        tools: list[VectorStoreTool],
        quiet: bool,
        first_pass_fails: bool = True,
        stdout: bool = True,
    ) -> None:
        self.tools = tools
        self.quiet = quiet
        self.first_pass_fails = first_pass_fails
        self.summaries_on_stdout = quiet and stdout
        self.watching = False
        self.failures: dict[str, str] = {}

    def progress(self, tool: str) -> AbstractContextManager[Progress]:
        """The usual progress display of one tool's pass."""
        return ingest_progress(tool, self.quiet)

    def done(self, tool: VectorStoreTool) -> None:
        self.failures.pop(tool.name, None)
        stamp = time.strftime("%H:%M:%S ") if self.watching else ""
        click.echo(stamp + tool.summary_line(), err=not self.summaries_on_stdout)

    def failed(self, tool: VectorStoreTool, exc: Exception, first_pass: bool) -> None:
        if first_pass and self.first_pass_fails:
            raise exc
        self.failures[tool.name] = redact_url(str(exc))
        stamp = time.strftime("%H:%M:%S ")
        click.echo(f"{stamp}Error: {tool.name}: {self.failures[tool.name]}", err=True)

    def ready(self) -> None:
        self.watching = True
        if not self.quiet:
            folders = ", ".join(sorted({t.project.display(t.resolved.source) for t in self.tools}))
            click.echo(f"Watching {folders} for changes", err=True)


@contextmanager
def ingest_progress(tool: str, quiet: bool = False) -> Iterator[Progress]:
    """Callbacks that draw ``tool``'s progress on stderr while the block runs."""
    if quiet:
        yield Progress()
        return
    if not sys.stderr.isatty():
        yield _plain(tool)
        return
    console = make_console(stderr=True)
    columns = (
        TextColumn("[bold]{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TextColumn("files · {task.fields[chunks]} chunks embedded"),
        TimeElapsedColumn(),
        TimeRemainingColumn(),
    )
    with RichProgress(*columns, console=console, transient=True) as bar:
        task = bar.add_task(tool, total=None, chunks=0)
        state = {"chunks": 0}

        def start(files: int, todo: int) -> None:
            bar.update(task, total=todo)

        def advance(rel_path: str) -> None:
            bar.advance(task)

        def embedded(n: int) -> None:
            state["chunks"] += n
            bar.update(task, chunks=state["chunks"])

        yield Progress(start=start, advance=advance, embedded=embedded)


def _plain(tool: str) -> Progress:
    """One line when work starts and one every 10 % of the files, for logs and CI."""
    state = {"todo": 0, "done": 0, "step": 1}

    def start(files: int, todo: int) -> None:
        state.update(todo=todo, done=0, step=max(1, todo // 10))
        if todo:
            click.echo(f"{tool}: {files} files, {todo} to ingest", err=True)

    def advance(rel_path: str) -> None:
        state["done"] += 1
        if state["done"] % state["step"] == 0 or state["done"] == state["todo"]:
            click.echo(f"{tool}: {state['done']}/{state['todo']} files", err=True)

    return Progress(start=start, advance=advance)
