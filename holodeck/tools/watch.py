"""Keep knowledge bases in step with their folders for as long as something runs.

One home for ``holodeck ingest --watch`` and ``holodeck serve``: a first pass ingests what
changed since the last run, then every debounced batch of file changes re-ingests the tools
whose ``source`` holds a changed path (incrementally: only the changed files cost anything).
The watcher starts before the first pass, so nothing saved during it is missed. A tool
whose source is one file has that file looked at on every tick instead (its folder may be a
whole project, virtualenv included: too much to watch). So are agent.yaml and the project's
config.yaml: an edit is applied where it can be, or said to need a restart (``reload``).

A pass that fails for one tool is reported through ``on_error`` and the loop goes on (the
next change retries); what the index already committed stays searchable. Hidden files and
folders (``.git``, ``.holodeck`` with the local index) and editor droppings never start a pass.

The watcher cannot name a file whose name is not UTF-8 (an archive from another system):
it then fails, at start for such a folder, at the first change for such a file. The loop
goes on by looking instead: every ``POLL_MS`` it compares what the folders hold, and a pass
first takes in whatever the failed batch held.
"""

from __future__ import annotations

import logging
import os
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager, nullcontext
from pathlib import Path

from watchfiles import Change, DefaultFilter, watch
from watchfiles._rust_notify import WatchfilesRustInternalError

from holodeck.errors import ConfigError
from holodeck.ingest.discover import IGNORE_FILE, path_text
from holodeck.ingest.status import IngestStatus, Progress
from holodeck.knowledge_base import KnowledgeBase
from holodeck.tools.initialize import ProgressFactory, initialize_tools
from holodeck.tools.reload import SettingsFiles, file_signature

log = logging.getLogger("holodeck.watch")

#: Changes are grouped until the folder is quiet for STEP_MS, and for at most DEBOUNCE_MS,
#: so saving a file, or copying a folder of them, is one pass rather than one per event.
STEP_MS = 300
DEBOUNCE_MS = 2_000
#: How often the watcher wakes with no change (to notice ``stop``, and to start pass one).
WAKE_MS = 200
#: How often the folders are looked at once the watcher has failed (see the module's doc).
POLL_MS = 1_000

#: A batch of changes; None when a batch was lost and every tool may have changed.
Batch = set[tuple[Change, str]] | None

#: Called when a tool's pass fails: (tool, error, is_first_pass). Raising stops the loop.
ErrorHandler = Callable[[KnowledgeBase, Exception, bool], None]

_JUNK = DefaultFilter()  # swap files, ~ backups, __pycache__, .git ...


class WatchStopped(Exception):
    """Raised inside a pass when ``stop`` is set: the pass ends after the file being stored
    (what is committed stays; the next run finishes the rest, as after a Ctrl-C)."""


class _OncePerMessage(logging.Filter):
    """Lets each distinct warning through once: a skipped file is not re-announced by
    every pass, only the first time (or when its reason changes)."""

    def __init__(self) -> None:
        super().__init__()
        self.seen: set[str] = set()

    def filter(self, record: logging.LogRecord) -> bool:
        message = record.getMessage()
        if message in self.seen:
            return False
        self.seen.add(message)
        return True


def watch_tools(
    tools: Sequence[KnowledgeBase],
    stop: threading.Event,
    *,
    force: bool = False,
    progress: ProgressFactory | None = None,
    on_done: Callable[[KnowledgeBase], None] | None = None,
    on_error: ErrorHandler | None = None,
    on_ready: Callable[[], None] | None = None,
    on_settings: Callable[[str], None] | None = None,
) -> None:
    """Ingest every tool, then re-ingest changed ones until ``stop`` is set (blocking).

    ``force`` applies to the first pass only. ``on_ready`` runs after the first pass, once
    the folders are being watched. An edit of the settings files is applied where it can
    be (``tools.reload``); ``on_settings`` shows what it did, or the error that kept the
    running settings. Ctrl-C in the main thread raises KeyboardInterrupt.
    """
    remotes = _RemoteSources(tools)  # fetched now: a first fetch makes the folder to watch
    for tool in tools:
        tool.check_source()  # a missing folder cannot be watched: its FileNotFoundError, now
    roots, recursive = watch_roots(tools)
    files = _FileSources(tools)
    settings = SettingsFiles(tools)
    stoppable = _stoppable(progress, stop)
    once = _OncePerMessage()
    ingest_log = logging.getLogger("holodeck.ingest")
    ingest_log.addFilter(once)
    try:
        first = True
        for changes in _batches(roots, recursive, stop):
            if first:  # the watcher is running: changes from now on are seen
                first = False
                run_pass(tools, force, stoppable, on_done, on_error, first_pass=True)
                if on_ready is not None and not stop.is_set():
                    on_ready()
                continue
            remotes.poll()  # a new commit or changed file fetched: its events start the pass
            changed = list(tools) if changes is None else tools_for(tools, changes)
            changed += [t for t in files.changed(already=changed) if t not in changed]
            if settings.edited():
                changed += [t for t in _reload(settings, on_settings) if t not in changed]
            if changed and not stop.is_set():
                if changes:
                    shown = ", ".join(sorted({path_text(p) for _, p in changes}))
                    log.debug("Changed: %s", shown)
                run_pass(changed, False, stoppable, on_done, on_error, first_pass=False)
    except WatchStopped:
        pass
    finally:
        ingest_log.removeFilter(once)


def _reload(
    settings: SettingsFiles, on_settings: Callable[[str], None] | None
) -> list[KnowledgeBase]:
    """Apply an edit of the settings files; the tools that took new settings."""
    show = on_settings or (lambda line: log.warning("%s", line))
    try:
        reloaded = settings.reload()
    except ConfigError as exc:
        show(f"{exc} (the running settings stay until the file loads)")
        return []
    for line in reloaded.lines:
        show(line)
    return reloaded.applied


def _batches(roots: Sequence[Path], recursive: bool, stop: threading.Event) -> Iterator[Batch]:
    """The watcher's batches (an empty one every WAKE_MS); once it fails, the folders'
    changes found by looking (see the module's doc), the first batch None."""
    try:
        yield from watch(
            *roots,
            watch_filter=None,  # decided per tool in tools_for
            debounce=DEBOUNCE_MS,
            step=STEP_MS,
            stop_event=stop,
            rust_timeout=WAKE_MS,
            yield_on_timeout=True,  # a tick every WAKE_MS: pass one, and the file sources
            debug=False,  # the watcher's debug output goes to stdout: the MCP protocol's
            recursive=recursive,
        )
        return
    except WatchfilesRustInternalError as exc:
        # Its message names the path already escaped (Rust's Debug form: \xE9, \u{1b}).
        log.info(
            "The file watcher cannot go on (%s); looking every %g s instead", exc, POLL_MS / 1000
        )
    seen = _listing(roots, recursive)
    yield None  # what the failed batch held, or the first pass
    while not stop.wait(POLL_MS / 1000):
        now = _listing(roots, recursive)
        yield {(Change.modified, p) for p in seen.keys() | now.keys() if seen.get(p) != now.get(p)}
        seen = now


def _listing(roots: Iterable[Path], recursive: bool) -> dict[str, tuple[int, int]]:
    """Every visible entry under ``roots`` (path: mtime in ns, size): what looking compares.
    Hidden entries are left out, as they never start a pass; links are not followed."""
    found: dict[str, tuple[int, int]] = {}
    folders = [os.fspath(root) for root in roots]
    while folders:
        try:
            with os.scandir(folders.pop()) as entries:
                listing = list(entries)
        except OSError:  # gone or unreadable: its entries are missing, so they changed
            continue
        for entry in listing:
            if entry.name.startswith("."):
                continue
            try:
                st = entry.stat(follow_symlinks=False)
            except OSError:
                continue
            found[entry.path] = (st.st_mtime_ns, st.st_size)
            if recursive and entry.is_dir(follow_symlinks=False):
                folders.append(entry.path)
    return found


def run_pass(
    tools: Sequence[KnowledgeBase],
    force: bool,
    progress: ProgressFactory | None,
    on_done: Callable[[KnowledgeBase], None] | None,
    on_error: ErrorHandler | None,
    first_pass: bool,
) -> None:
    """Ingest each tool in turn; one tool's failure never stops the others."""
    for tool in tools:
        try:
            initialize_tools([tool], force, progress, on_done)
        except WatchStopped:
            raise
        except Exception as exc:
            if on_error is None:
                raise
            on_error(tool, exc, first_pass)


def _stoppable(progress: ProgressFactory | None, stop: threading.Event) -> ProgressFactory:
    """The caller's progress display, plus a check of ``stop`` after every stored file
    and every embedding call (a big file stops between its slices)."""

    @contextmanager
    def factory(name: str) -> Iterator[Progress]:
        with progress(name) if progress else nullcontext(Progress()) as shown:

            def update(status: IngestStatus) -> None:  # also follows every stored file
                shown.update(status)
                if stop.is_set():
                    raise WatchStopped

            yield Progress(start=shown.start, advance=shown.advance, update=update)

    return factory


def watch_roots(tools: Iterable[KnowledgeBase]) -> tuple[list[Path], bool]:
    """The folders to watch and whether recursively: every folder source (nested ones once).

    A file source is not watched through its folder, which may be a whole project with a
    virtualenv in it; ``_FileSources`` looks at it on every tick instead. With file sources
    only, their folders are watched, not recursively, to tick and to catch replacements.
    """
    sources = {_real(t.resolved.source) for t in tools}
    folders = sorted(s for s in sources if s.is_dir())
    if not folders:
        return sorted({s.parent for s in sources}), False
    roots: list[Path] = []
    for folder in folders:
        if not any(folder.is_relative_to(r) for r in roots):
            roots.append(folder)
    return roots, True


class _RemoteSources:
    """The tools whose source lives elsewhere (a git repository, web files, an S3 prefix),
    each fetched every ``poll`` seconds (its ``source: {poll: ...}``, 60 by default). A fetch
    that brings a new commit checks it out, and one that finds a changed file or object
    rewrites it, so the watcher sees the files change. An unreachable source warns and keeps
    the last copy."""

    def __init__(self, tools: Iterable[KnowledgeBase]) -> None:
        self.tools = [t for t in tools if t.resolved.config.remote is not None]
        self.due: dict[str, float] = {}
        for tool in self.tools:
            tool.fetch_source()
            self._schedule(tool)

    def _schedule(self, tool: KnowledgeBase) -> None:
        remote = tool.resolved.config.remote
        assert remote is not None
        self.due[tool.name] = time.monotonic() + remote.poll

    def poll(self) -> None:
        """Fetch each source whose interval is up."""
        now = time.monotonic()
        for tool in self.tools:
            if now >= self.due[tool.name]:
                try:
                    tool.fetch_source()
                except ConfigError as exc:  # no copy either: said, retried next time
                    log.warning("%s", exc)
                self._schedule(tool)


class _FileSources:
    """The tools whose source is one file, and that file's (mtime, size) when last looked at:
    a change that has held still for one tick starts a pass (an editor is done writing)."""

    def __init__(self, tools: Iterable[KnowledgeBase]) -> None:
        self.tools = [t for t in tools if not t.resolved.source.is_dir()]
        self.seen = {t.name: file_signature(t.resolved.source) for t in self.tools}
        self.done = dict(self.seen)

    def changed(self, already: Sequence[KnowledgeBase]) -> list[KnowledgeBase]:
        """The file tools due for a pass; ``already`` are being passed for their events."""
        due = []
        for tool in self.tools:
            now = file_signature(tool.resolved.source)
            if tool in already:
                self.seen[tool.name] = self.done[tool.name] = now
            elif now != self.seen[tool.name]:
                self.seen[tool.name] = now  # still being written: wait one tick
            elif now != self.done[tool.name]:
                self.done[tool.name] = now
                due.append(tool)
        return due


def tools_for(
    tools: Iterable[KnowledgeBase], changes: set[tuple[Change, str]]
) -> list[KnowledgeBase]:
    """The tools a batch of changes concerns: a path inside the tool's source that is neither
    hidden (relative to the source) nor an editor's temporary file, or the source's
    ``.holodeckignore`` (its patterns decide what the index holds)."""
    wanted: list[KnowledgeBase] = []
    for tool in tools:
        source = _real(tool.resolved.source)
        for change, raw in changes:
            path = Path(raw)
            if not _JUNK(change, raw):
                continue
            if path in (source, source / IGNORE_FILE) or _visible_inside(path, source):
                wanted.append(tool)
                break
    return wanted


def _visible_inside(path: Path, folder: Path) -> bool:
    """``path`` is under ``folder`` and no part of it below ``folder`` is hidden."""
    try:
        parts = path.relative_to(folder).parts
    except ValueError:
        return False
    return bool(parts) and not any(p.startswith(".") for p in parts)


def _real(path: Path) -> Path:
    """The path with symlinks resolved, as the watcher reports it."""
    return Path(os.path.realpath(path))
