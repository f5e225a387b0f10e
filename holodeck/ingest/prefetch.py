"""Convert and chunk the next files in a worker thread while the current chunks embed.

The embedding model is most of an ingest, but converting a PDF or chunking a long file is
CPU work too; done in turn they add up. onnxruntime and pypdfium2 release the GIL, so a
thread that prepares the next files while the model runs hides most of that time. The
worker only reads files and computes: everything that touches the index (reused vectors,
writes) stays in the caller's thread, so no store connection is shared between threads.

It runs ahead by at most ``ahead_chunks`` chunks, so a folder of huge files never sits in
memory at once. One bad file never stops it: whatever goes wrong is handed over as that
file's failure.
"""

from __future__ import annotations

import logging
import threading
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial

from holodeck.config.file_limits import FileLimits
from holodeck.embeddings.base import TokenCounter
from holodeck.ingest.chunker import Chunk, chunk_text
from holodeck.ingest.convert import ConversionError, OverLimit, convert
from holodeck.ingest.discover import REASON_EMPTY, SourceFile
from holodeck.ingest.frontmatter import language_of, split_front_matter, tags_of
from holodeck.ingest.locations import locate
from holodeck.ingest.sections import section_anchors, section_paths

log = logging.getLogger("holodeck.ingest")


@dataclass
class Prepared:
    """One file converted and chunked, or why it could not be (``failure``)."""

    file: SourceFile
    chunks: list[Chunk] = field(default_factory=list)
    locations: list[str] = field(default_factory=list)
    sections: list[str] = field(default_factory=list)
    tags: list[str] = field(default_factory=list)
    language: str | None = None
    failure: str | None = None
    #: The failure is a limit passed (the same file under the same limits fails again).
    over_limit: bool = False


def prepare(
    file: SourceFile,
    counter: TokenCounter,
    chunk_size: int,
    overlap: int,
    limits: FileLimits | None = None,
    owner: str = "",
    reading: Callable[[str, int, int], None] | None = None,
) -> Prepared:
    """Convert one file and cut it into chunks with their locations; never raises.

    A file past one of ``limits`` fails with the limit's key followed by ``owner`` (``of
    tool kb in agent.yaml``): where to raise it. ``reading(rel_path, pages read, pages)``
    follows a PDF page by page.
    """
    on_page = None if reading is None else partial(reading, file.rel_path)
    try:
        converted = convert(file, limits, on_page)
        text, body_start = converted.text, 0
        tags: list[str] = []
        language: str | None = None
        if file.path.suffix.lower() == ".md":
            meta, body = split_front_matter(text, name=file.rel_path)
            tags, language = tags_of(meta), language_of(meta)
            body_start = len(text) - len(body)  # chunks of the body, lines of the file
        headings = [h for h in converted.headings if h.offset >= body_start]
        starts = [h.offset - body_start for h in headings]  # a chunk lies in one section
        chunks = chunk_text(text[body_start:], counter, chunk_size, overlap, starts)
        spans = [(c.start + body_start, c.end + body_start) for c in chunks]
        sections = section_paths(headings, spans)
        # A page's heading anchor (``#bleeding-air``) opens in a browser: it names the
        # place where the page has one, its paragraph number where it has none.
        anchored = section_anchors(headings, spans)
        counted = locate(text, converted.anchors, spans)
        locations = [a or c for a, c in zip(anchored, counted, strict=True)]
    except OverLimit as exc:
        reason = f"{exc.reason} {owner}" if owner else exc.reason
        return Prepared(file, failure=reason, over_limit=True)
    except ConversionError as exc:
        return Prepared(file, failure=exc.reason)
    except Exception as exc:  # one bad file never stops an ingest, whatever went wrong
        log.debug("converting %s failed", file.rel_path, exc_info=True)  # -v: the traceback
        return Prepared(file, failure=failure_reason(exc))
    if not chunks:
        return Prepared(file, failure=REASON_EMPTY)
    return Prepared(file, chunks, locations, sections, tags, language)


def failure_reason(exc: BaseException) -> str:
    """Why a file could not be converted, parsed or chunked, in a few words."""
    if isinstance(exc, RecursionError):
        return "nested too deeply to process (RecursionError)"
    if isinstance(exc, MemoryError):
        return "too large to process in memory (MemoryError)"
    first = (str(exc).strip().splitlines() or [""])[0]
    first = first if len(first) <= 120 else first[:117] + "..."
    return f"{type(exc).__name__}: {first}" if first else type(exc).__name__


class Prefetcher:
    """Prepares ``files`` in order in a worker thread; ``next()`` hands them over in order.

    Use as a context manager: leaving it (normally or by an exception) tells the worker to
    stop after the file it is on.
    """

    def __init__(
        self,
        files: list[SourceFile],
        work: Callable[[SourceFile], Prepared],
        ahead_chunks: int,
    ) -> None:
        self._files = files
        self._work = work
        self._ahead = ahead_chunks
        self._ready: deque[Prepared] = deque()
        self._queued_chunks = 0
        self._finished = False
        self._stopped = False
        self._error: BaseException | None = None
        self._cond = threading.Condition()
        self._thread = threading.Thread(target=self._run, name="holodeck-prefetch", daemon=True)

    def __enter__(self) -> Prefetcher:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        with self._cond:
            self._stopped = True
            self._cond.notify_all()
        if exc[0] is None:
            self._thread.join()

    def next(self) -> Prepared | None:
        """The next prepared file in order, waiting for it; None when every file was handed."""
        with self._cond:
            while not self._ready and not self._finished:
                self._cond.wait()
            if self._error is not None:
                raise self._error
            if not self._ready:
                return None
            item = self._ready.popleft()
            self._queued_chunks -= len(item.chunks)
            self._cond.notify_all()
            return item

    def _run(self) -> None:
        try:
            for file in self._files:
                with self._cond:
                    while self._queued_chunks >= self._ahead and not self._stopped:
                        self._cond.wait()
                    if self._stopped:
                        return
                item = self._work(file)
                with self._cond:
                    self._ready.append(item)
                    self._queued_chunks += len(item.chunks)
                    self._cond.notify_all()
        except BaseException as exc:  # a bug, not a bad file: the caller raises it
            with self._cond:
                self._error = exc
        finally:
            with self._cond:
                self._finished = True
                self._cond.notify_all()
