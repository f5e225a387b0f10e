"""Progress display for ingestion: a rich bar per tool on a terminal, plain lines otherwise."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import contextmanager

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
