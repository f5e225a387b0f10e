"""Progress display for ingestion: a rich bar per tool on a terminal, plain lines otherwise.

Both count tokens, the unit the model's time follows (``holodeck.ingest.status``), so they
move inside a big file and the time left is worth reading; a file bigger than a window
shows its own chunks embedded, and a long PDF its pages as they are read. A library's
first ingest starts with a line that says what it will take.
"""

from __future__ import annotations

import logging
import sys
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager
from functools import partial

import click
from rich.console import RenderableType
from rich.progress import BarColumn, TaskID, TaskProgressColumn, TextColumn
from rich.progress import Progress as RichProgress
from rich.text import Text

from holodeck.console import make_console
from holodeck.ingest.status import IngestStatus, Progress
from holodeck.knowledge_base import KnowledgeBase
from holodeck.redact import redact_url
from holodeck.tools.initialize import initialize_tools


def ingest_tools(
    tools: Sequence[KnowledgeBase],
    force: bool,
    quiet: bool,
    show_summary: bool = True,
    wait: bool = True,
    only_work: bool = False,
    first_ingest_line: bool = False,
) -> None:
    """Initialize each tool with a progress display; its one-line summary goes to stderr.

    Readers (search, chat, test) pass ``wait=False``: they never wait for another ingest.
    ``only_work`` (search) shows the summary only when files were ingested or removed, so
    a run with nothing to do prints nothing. ``first_ingest_line`` (``ingest``): a
    library's first ingest starts with what it will take.
    """

    def done(tool: KnowledgeBase) -> None:
        if not show_summary or quiet or not tool.summary:
            return
        if only_work and not tool.summary.did_work:
            return
        click.echo(tool.summary_line(), err=True)

    def progress(name: str) -> AbstractContextManager[Progress]:
        return ingest_progress(name, quiet, first_ingest_line)

    initialize_tools(tools, force, progress, done, wait)


class WatchReport:
    """What the watch loop shows (``ingest --watch``, ``serve``): a summary line per tool and
    pass (later passes with the time), one line per failure, a line once watching starts.

    ``first_pass_fails`` re-raises a failure of the first pass (``ingest --watch`` then stops
    with the error's exit code, as a plain ingest would); otherwise it is reported like any
    other and ``failures`` keeps it for whoever asks (``serve`` tells its clients). With
    ``quiet`` only the summary lines are shown, on stdout when ``stdout`` allows it (never
    for ``serve``: its stdout may be the MCP protocol's). ``ctrl_c_stops`` adds to the line
    that watching started how to stop it (``serve`` says so in its own banner).
    """

    def __init__(
        self,
        tools: Sequence[KnowledgeBase],
        quiet: bool,
        first_pass_fails: bool = True,
        stdout: bool = True,
        ctrl_c_stops: bool = False,
    ) -> None:
        self.tools = tools
        self.quiet = quiet
        self.first_pass_fails = first_pass_fails
        self.ctrl_c_stops = ctrl_c_stops  # ingest --watch: its start line says how to stop
        self.summaries_on_stdout = quiet and stdout
        self.watching = False
        self.failures: dict[str, str] = {}

    def progress(self, tool: str) -> AbstractContextManager[Progress]:
        """The usual progress display of one tool's pass."""
        return ingest_progress(tool, self.quiet, first_ingest_line=True)

    def done(self, tool: KnowledgeBase) -> None:
        self.failures.pop(tool.name, None)
        stamp = time.strftime("%H:%M:%S ") if self.watching else ""
        click.echo(stamp + tool.summary_line(), err=not self.summaries_on_stdout)

    def failed(self, tool: KnowledgeBase, exc: Exception, first_pass: bool) -> None:
        if first_pass and self.first_pass_fails:
            raise exc
        self.failures[tool.name] = redact_url(str(exc))
        logging.getLogger("holodeck.cli").debug("%s's pass failed", tool.name, exc_info=exc)  # -v
        stamp = time.strftime("%H:%M:%S ")
        click.echo(f"{stamp}Error: {tool.name}: {self.failures[tool.name]}", err=True)

    def settings(self, line: str) -> None:
        """An edit of agent.yaml: what was applied, what needs a restart, or its error."""
        click.echo(time.strftime("%H:%M:%S ") + line, err=True)

    def ready(self) -> None:
        self.watching = True
        if not self.quiet:
            folders = ", ".join(sorted({t.project.display(t.resolved.source) for t in self.tools}))
            stops = " (Ctrl-C stops)" if self.ctrl_c_stops else ""
            click.echo(f"Watching {folders} for changes{stops}", err=True)


@contextmanager
def ingest_progress(
    tool: str, quiet: bool = False, first_ingest_line: bool = False
) -> Iterator[Progress]:
    """Callbacks that draw ``tool``'s progress on stderr while the block runs (and, with
    ``first_ingest_line``, the line a library's first ingest starts with).

    Nothing is drawn until the model starts on the first chunks (``status.current`` is
    set): a run with nothing to embed (nothing changed, or only a file that fails again)
    shows nothing at all.
    """
    if quiet:
        yield Progress()
        return
    display = _Bar(tool) if sys.stderr.isatty() else _Lines(tool)
    try:
        yield Progress(
            start=display.start,
            update=display.update,
            first_ingest=partial(_first_ingest, tool) if first_ingest_line else _nothing,
            reading=display.reading,
        )
    finally:
        display.close()


#: Seconds the local model takes per million tokens on the development machine's 2 idle
#: cores, a cold ingest of real files (docs/ingestion.md, "A first ingest").
LOCAL_SECONDS_PER_MILLION_TOKENS = 175


def _first_ingest(tool: str, files: int, tokens: int, provider: str) -> None:
    """The line a library's first ingest starts with: what it will take, and that search
    need not wait for it."""
    what = f"{tool}: first ingest, {files:,} files, about {_short(tokens)} tokens to embed"
    if provider:
        what += f" through {provider}"
    else:
        seconds = tokens * LOCAL_SECONDS_PER_MILLION_TOKENS / 1_000_000
        rate = _duration(LOCAL_SECONDS_PER_MILLION_TOKENS)
        what += (
            f": about {_duration(seconds)} with the local model "
            f"({rate} per million tokens on 2 idle cores)"
        )
    click.echo(f"{what}; search answers from what is stored meanwhile", err=True)


def _nothing(*args: object) -> None:
    """A callback that shows nothing."""


def _duration(seconds: float) -> str:
    """``10 s``, ``4 min``, ``1 h 20 min``: an estimate, rounded as one."""
    if seconds < 60:
        return f"{max(5, round(seconds / 5) * 5)} s"
    minutes = round(seconds / 60)
    if minutes < 60:
        return f"{minutes} min"
    return f"{minutes // 60} h {minutes % 60} min" if minutes % 60 else f"{minutes // 60} h"


class _Bar:
    """A rich bar over the tokens to embed: files, chunks and tokens done and the time left
    on one line, the file being embedded on the next (80 columns hold both), and under it
    the pages of a PDF being read, while one is."""

    def __init__(self, tool: str) -> None:
        self.tool = tool
        self.clock = _Clock()
        self.bar: _TwoLineProgress | None = None
        self.task: TaskID | None = None
        self.lock = threading.Lock()  # reading() comes from the converting thread

    #: Pages from which a PDF read before the model starts draws the bar.
    LONG_PDF = 20

    def start(self, files: int, todo: int) -> None:
        pass

    def _started(self) -> tuple[_TwoLineProgress, TaskID]:
        if self.bar is None or self.task is None:
            self.bar = _TwoLineProgress(
                TextColumn("[bold]{task.description}"),
                BarColumn(bar_width=12),
                TaskProgressColumn(),
                TextColumn("{task.fields[counts]}", markup=False),
                console=make_console(stderr=True),
                transient=True,
            )
            self.bar.start()
            self.task = self.bar.add_task(self.tool, total=None, counts="")
        return self.bar, self.task

    def update(self, status: IngestStatus) -> None:
        with self.lock:
            if self.bar is None and not status.current:
                return
            bar, task = self._started()
            bar.current = f"  embedding {status.current}" if status.current else ""
            left = self.clock.left(status)
            bar.update(
                task,
                total=max(status.tokens_total, status.tokens_embedded, 1),
                completed=status.tokens_embedded,
                counts=_counts(status) + (f" · {left} left" if left else ""),
            )

    def reading(self, rel_path: str, done: int, total: int) -> None:
        with self.lock:
            if self.bar is None and total < self.LONG_PDF:
                return  # a short PDF before the model starts: nothing worth drawing yet
            bar, _ = self._started()
            bar.reading = f"  reading {rel_path}: page {done:,}/{total:,}" if done < total else ""

    def close(self) -> None:
        if self.bar is not None:
            self.bar.stop()


class _TwoLineProgress(RichProgress):
    """rich's Progress with lines under the bars: the file being embedded, the PDF being
    read."""

    current = ""
    reading = ""

    def get_renderables(self) -> Iterable[RenderableType]:
        yield self.make_tasks_table(self.tasks)
        for line in (self.current, self.reading):
            if line:
                yield Text(line, no_wrap=True, overflow="ellipsis")


class _Lines:
    """Plain lines for logs and CI: one when the model starts, then one at every tenth of
    the tokens or every ``EVERY`` seconds, whichever comes first; and one at every tenth of
    the pages of a PDF of at least ``LONG_PDF`` pages being read."""

    EVERY = 30.0
    LONG_PDF = 100

    def __init__(self, tool: str) -> None:
        self.tool = tool
        self.clock = _Clock()
        self.files = 0
        self.last = 0.0
        self.next_tenth = 1
        self.shown = False
        self.lock = threading.Lock()  # reading() comes from the converting thread

    def start(self, files: int, todo: int) -> None:
        self.files = files

    def reading(self, rel_path: str, done: int, total: int) -> None:
        if total >= self.LONG_PDF and done * 10 // total > (done - 1) * 10 // total:
            with self.lock:
                click.echo(f"{self.tool}: reading {rel_path}: page {done:,}/{total:,}", err=True)

    def update(self, status: IngestStatus) -> None:
        left = self.clock.left(status)
        if not self.shown:
            if not status.current:
                return
            self.shown = True
            self.last = time.monotonic()
            with self.lock:
                click.echo(
                    f"{self.tool}: {self.files} files, {status.files_todo} to ingest", err=True
                )
        now = time.monotonic()
        total = max(status.tokens_total, status.tokens_embedded, 1)
        tenth = status.tokens_embedded * 10 // total
        if tenth < self.next_tenth and now - self.last < self.EVERY:
            return
        if tenth >= 10 and status.files_done < status.files_todo:
            return  # all embedded: the last line waits for the files to be stored
        self.next_tenth = tenth + 1
        self.last = now
        parts = [f"{self.tool}: {100 * status.tokens_embedded // total}%", _counts(status)]
        if left:
            parts.append(f"{left} left")
        parts.append(status.current)
        with self.lock:
            click.echo(" · ".join(parts), err=True)

    def close(self) -> None:
        pass


class _Clock:
    """The time left, from the tokens embedded since the model started and the rate so far
    (steadier than a rate over the last few calls: calls differ in length)."""

    def __init__(self) -> None:
        self.started: float | None = None

    def left(self, status: IngestStatus) -> str:
        """``0:03:10``, or "" until the rate is known or once every token is embedded."""
        if self.started is None:
            if status.current:
                self.started = time.monotonic()
            return ""
        done, total = status.tokens_embedded, status.tokens_total
        if not 0 < done < total:
            return ""
        whole = int((time.monotonic() - self.started) * (total - done) / done)
        return f"{whole // 3600}:{whole % 3600 // 60:02d}:{whole % 60:02d}"


def _counts(status: IngestStatus) -> str:
    """``3/12 files · 1,024 chunks · 260k/742k tokens``."""
    tokens = max(status.tokens_total, status.tokens_embedded)
    return (
        f"{status.files_done}/{status.files_todo} files · {status.chunks_embedded:,} chunks · "
        f"{_short(status.tokens_embedded)}/{_short(tokens)} tokens"
    )


def _short(n: int) -> str:
    """A count as a reader skims it: 950, 12.3k, 4.1M."""
    if n < 1000:
        return str(n)
    if n < 1_000_000:
        return f"{n / 1000:.1f}k" if n < 10_000 else f"{n // 1000}k"
    return f"{n / 1_000_000:.1f}M"


@contextmanager
def build_bar(title: str, total: int) -> Iterator[Callable[[int], None]]:
    """A bar on stderr for one long build, gone when it ends."""
    with RichProgress(console=make_console(stderr=True), transient=True) as bar:
        task = bar.add_task(title, total=total)
        yield lambda n: bar.advance(task, n)
