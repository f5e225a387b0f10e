"""The changed files of one ingest, converted, chunked, embedded and stored window by window.

A document is written whole: its old state and chunks go and its new chunks and state come
in together (one transaction on the SQLite index), so an interruption leaves the documents
committed so far intact and the re-run redoes the rest. A document bigger than one
embedding window is written in slices (the first replaces the old chunks, the last brings
the state), so a crash inside a long PDF loses the windows being embedded (two at
most), not the file: the re-run reuses the vectors of the slices already stored.

Chunks are embedded in windows of ``EMBED_WINDOW``, sorted by length across the window so
each model call pads little, while a worker thread converts the next files
(``prefetch``). The next window's calls are queued while one window's run, and a window is
stored while the next embeds, so the model never waits on the rest of the pipeline.
Progress moves after every embedding call, counted in tokens.
"""

from __future__ import annotations

from bisect import bisect_left
from collections import deque
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor, as_completed
from dataclasses import dataclass, replace
from functools import partial
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING

import numpy as np

from holodeck.embeddings.base import Embedder
from holodeck.embeddings.spans import traced_embed
from holodeck.errors import EmbeddingError, ValidationError
from holodeck.ingest.discover import SourceFile, path_text
from holodeck.ingest.library import LibraryTarget
from holodeck.ingest.spans import file_span
from holodeck.ingest.status import IngestStatus, Progress, TokenEstimate
from holodeck.ingest.summary import IngestSummary
from holodeck.vectorstore.records import (
    ChunkRecord,
    DocState,
    chunk_id_for,
    indexed_text,
    text_hash,
)
from holodeck.vectorstore.store import VectorStore

if TYPE_CHECKING:
    from holodeck.ingest.prefetch import Prepared

#: Chunks embedded as one window: sorted by length across it, so each model call holds
#: chunks of about one length and pads little. A window is also what a crash can lose and
#: how long a first search waits for a first commit.
EMBED_WINDOW = 256
#: Tokens per embedding call within a window: progress moves after each call.
EMBED_CALL_TOKENS = 8192
#: Embedding calls run at once. With two, the next call is tokenized and queued while the
#: model runs this one, so the model never waits for a call to end, a window to be stored
#: or the next one to be cut (with the local model its sessions go straight on to the
#: next call's batches; a remote API sees at most two calls' requests).
EMBED_CALLS_IN_FLIGHT = 2
#: Chunks the worker thread prepares ahead of the window being embedded.
PREPARE_AHEAD = 2 * EMBED_WINDOW


@dataclass
class _Doc:
    """A document converted and chunked, embedded and stored one window at a time."""

    file: SourceFile
    digest: str
    records: list[ChunkRecord]
    missing: list[int]  # indexes into records that still need a vector, ascending
    is_new: bool
    queued: int = 0  # records handed to windows so far
    embedded: int = 0  # of missing, embedded so far
    failed: bool = False

    def take(self, room: int) -> tuple[_Slice, int]:
        """The next records of this document holding at most ``room`` chunks to embed,
        and the room left in the window after them."""
        start = self.queued
        first = bisect_left(self.missing, start)
        left = len(self.missing) - first
        if left <= room:
            end, used = len(self.records), left
        else:
            end, used = self.missing[first + room], room
        self.queued = end
        return _Slice(self, start, end), room - used

    def state(self) -> DocState:
        """The state recorded with the document's last slice."""
        f = self.file
        return DocState(f.rel_path, f.mtime, f.size, self.digest, len(self.records))


@dataclass
class _Slice:
    """Records ``start:end`` of one document, embedded and stored in one window."""

    doc: _Doc
    start: int
    end: int

    def missing(self) -> list[int]:
        """The indexes of this slice's records that need a vector."""
        m = self.doc.missing
        return m[bisect_left(m, self.start) : bisect_left(m, self.end)]


class WindowedIngest:
    """The files an ingest pass planned to ingest: filled into windows as the worker
    prepares them, each window embedded and then stored.

    ``fail(rel_path, reason, over_limit=(mtime, size, digest))`` is the pass's: a file that
    cannot be ingested is warned about and counted (one past a limit remembered, so it is not
    converted again while it stays as it is), and the others go on.
    """

    def __init__(
        self,
        store: VectorStore,
        embedder: Embedder,
        target: LibraryTarget,
        summary: IngestSummary,
        progress: Progress,
        force: bool,
        fail: Callable[..., None],
    ) -> None:
        self.store = store
        self.embedder = embedder
        self.t = target
        self.summary = summary
        self.progress = progress
        self.force = force
        self._fail = fail
        self.status = IngestStatus(files_todo=0)
        self.estimate = TokenEstimate([])

    def run(self, todo: list[tuple[SourceFile, str]], stored: set[str]) -> None:
        """Fill windows from the files the worker prepares; embed and store each window."""
        digests = {f.rel_path: digest for f, digest in todo}
        self.estimate = TokenEstimate([f for f, _ in todo])
        self.status = IngestStatus(files_todo=len(todo), tokens_total=self.estimate.total())
        # converters (chardet, pypdfium2, markitdown) load only when there are files to read
        from holodeck.ingest.prefetch import Prefetcher, prepare

        t = self.t
        work = partial(
            prepare,
            counter=self.embedder.tokens,
            chunk_size=t.chunk_size,
            overlap=t.chunk_overlap,
            limits=t.limits,
            owner=f"of tool {t.library_id} in {t.settings_file}",
            reading=self.progress.reading,
        )
        calls = ThreadPoolExecutor(EMBED_CALLS_IN_FLIGHT, thread_name_prefix="holodeck-call")
        try:
            with Prefetcher([f for f, _ in todo], work, PREPARE_AHEAD) as ahead:
                doc: _Doc | None = None  # the document being cut into windows
                embedding: deque[tuple[list[_Slice], list[_Call]]] = deque()
                while True:
                    window: list[_Slice] = []
                    room = EMBED_WINDOW
                    while room > 0:
                        if doc is None or doc.failed:
                            item = ahead.next()
                            if item is None:
                                break
                            rel = item.file.rel_path
                            doc = self._open(item, digests[rel], rel not in stored)
                            continue
                        piece, room = doc.take(room)
                        window.append(piece)
                        if doc.queued == len(doc.records):
                            doc = None
                    if window:
                        embedding.append((window, self._start_embedding(window, calls)))
                        if len(embedding) < 2:
                            continue  # the next window's calls queue behind this one's
                    if not embedding:
                        break
                    done, started = embedding.popleft()
                    self._finish_embedding(done, started)
                    self._store(done)
        finally:
            calls.shutdown(cancel_futures=True)

    def _open(self, item: Prepared, digest: str, is_new: bool) -> _Doc | None:
        """A prepared file as a document to embed, reusing the vectors of chunks whose text
        is unchanged; None (warned, counted, its stale chunks removed) when it failed."""
        f = item.file
        try:
            if item.failure is not None:
                raise _Failed(item.failure)
            doc = self._document(item, digest, is_new)
        except (_Failed, ValidationError) as exc:  # ValidationError: an id it cannot store
            measured = (f.mtime, f.size, digest) if item.over_limit else None
            self._fail(f.rel_path, str(exc), over_limit=measured)
            if not is_new:  # its old text is stale: it goes too
                self.store.remove_document(self.t.tenant_id, self.t.library_id, f.rel_path)
            self.estimate.skipped(f)
            self._finished(f.rel_path)
            return None
        tokens = sum(doc.records[i].token_count for i in doc.missing)
        file_span(
            f.rel_path,
            f.size,
            status="new" if is_new else "changed",
            chunks=len(doc.records),
            chunks_reused=len(doc.records) - len(doc.missing),
            tokens_to_embed=tokens,
        )
        self.estimate.chunked(f, tokens)
        self.summary.chunks_reused += len(doc.records) - len(doc.missing)
        return doc

    def _document(self, item: Prepared, digest: str, is_new: bool) -> _Doc:
        t, f = self.t, item.file
        old = {}
        if not self.force:  # a document without state may still hold slices of a killed run
            for rec in self.store.doc_chunks(t.tenant_id, t.library_id, f.rel_path):
                if rec.embedding_model == self.embedder.model_id:
                    old[rec.content_hash] = rec.vector
        source_path = _display_path(f.path, t.project_root)
        book = str(PurePosixPath(f.rel_path).parent)
        records: list[ChunkRecord] = []
        missing: list[int] = []
        for i, chunk in enumerate(item.chunks):
            section = item.sections[i] if item.sections else ""
            h = text_hash(indexed_text(chunk.text, section))
            vector = old.get(h)
            if vector is None:
                missing.append(i)
                vector = np.zeros(0, dtype=np.float32)  # placeholder until embedded
            records.append(
                ChunkRecord(
                    chunk_id=chunk_id_for(t.tenant_id, t.library_id, f.rel_path, i),
                    tenant_id=t.tenant_id,
                    library_id=t.library_id,
                    book_id=book,
                    doc_id=f.rel_path,
                    chunk_index=i,
                    content=chunk.text,
                    vector=vector,
                    embedding_model=self.embedder.model_id,
                    source_path=source_path,
                    mtime=f.mtime,
                    content_hash=h,
                    token_count=chunk.token_count,
                    tags=item.tags,
                    language=item.language,
                    location=item.locations[i],
                    section=section,
                )
            )
        return _Doc(f, digest, records, missing, is_new)

    def _start_embedding(self, window: list[_Slice], calls: ThreadPoolExecutor) -> list[_Call]:
        """Queue the model calls of every chunk of the window that needs a vector, in calls
        of chunks of about one length (sorted across the window)."""
        wanted = [(s.doc, i) for s in window if not s.doc.failed for i in s.missing()]
        wanted.sort(key=lambda w: w[0].records[w[1]].token_count)
        parts: list[tuple[list[tuple[_Doc, int]], int]] = []
        chunks: list[tuple[_Doc, int]] = []
        tokens = 0
        for w in wanted:
            chunks.append(w)
            tokens += w[0].records[w[1]].token_count
            if tokens >= EMBED_CALL_TOKENS:
                parts.append((chunks, tokens))
                chunks, tokens = [], 0
        if chunks:
            parts.append((chunks, tokens))
        embed = traced_embed(self.embedder)
        started = []
        for part, size in parts:
            texts = [_embedded(doc.records[i]) for doc, i in part]
            started.append(_Call(part, size, calls.submit(embed, texts, size)))
        return started

    def _finish_embedding(self, window: list[_Slice], started: list[_Call]) -> None:
        """Wait for the window's calls, placing their vectors; the display moves after each
        call, in the order they end (two run at once, on one queue of batches)."""
        if not started:
            return
        self.status = replace(self.status, current=_describe(window))
        self.progress.update(self.status)  # the display shows what the model works on
        by_future = {call.future: call for call in started}
        for future in as_completed(by_future):
            call = by_future[future]
            try:
                vectors = future.result()
            except EmbeddingError:
                raise
            except Exception as exc:
                raise EmbeddingError(f"embedding failed: {exc}") from exc
            for (doc, i), vector in zip(call.chunks, vectors, strict=True):
                doc.records[i].vector = vector
                doc.embedded += 1
            self.summary.chunks_embedded += len(call.chunks)
            self.status = replace(
                self.status,
                current=_describe(window),
                chunks_embedded=self.status.chunks_embedded + len(call.chunks),
                tokens_embedded=self.status.tokens_embedded + call.tokens,
                tokens_total=self.estimate.total(),
            )
            self.progress.update(self.status)

    def _store(self, window: list[_Slice]) -> None:
        """Commit the window's slices together: each a whole document, or one slice of a big
        one, stored whole or not at all."""
        with self.store.batch():
            for piece in window:
                self._store_slice(piece)

    def _store_slice(self, piece: _Slice) -> None:
        """One slice in; a document's last slice brings its state and counts it done."""
        t, doc = self.t, piece.doc
        if doc.failed:
            return
        rel = doc.file.rel_path
        records = doc.records[piece.start : piece.end]
        last = piece.end == len(doc.records)
        state = doc.state() if last else None
        try:
            if piece.start == 0:
                self.store.write_document(t.tenant_id, t.library_id, rel, records, state)
            else:
                self.store.append_to_document(t.tenant_id, t.library_id, rel, records, state)
        except ValidationError as exc:  # an id this backend cannot store
            doc.failed = True
            self._fail(rel, str(exc))
            if piece.start > 0 or not doc.is_new:
                self.store.remove_document(t.tenant_id, t.library_id, rel)
            self._finished(rel)
            return
        if last:
            if doc.is_new:
                self.summary.new += 1
            else:
                self.summary.changed += 1
            self._finished(rel)

    def _finished(self, rel_path: str) -> None:
        """A file is done (stored or failed): the display moves on."""
        self.status = replace(
            self.status,
            files_done=self.status.files_done + 1,
            tokens_total=self.estimate.total(),
        )
        self.progress.advance(rel_path)
        self.progress.update(self.status)


@dataclass
class _Call:
    """One embedding call queued for a window: its chunks, their tokens, its vectors."""

    chunks: list[tuple[_Doc, int]]
    tokens: int
    future: Future[np.ndarray]


class _Failed(Exception):
    """A prepared file that cannot be ingested; the message is the reason shown."""


def _embedded(rec: ChunkRecord) -> str:
    """The text a chunk's vector is made from (``indexed_text``)."""
    return indexed_text(rec.content, rec.section)


def _describe(window: list[_Slice]) -> str:
    """The file a window embeds most of, and how many others share the window; for a file
    bigger than a window, how far into it the model is (``big.txt (120/900 chunks)``)."""
    counts: dict[str, int] = {}
    docs: dict[str, _Doc] = {}
    for piece in window:
        rel = piece.doc.file.rel_path
        counts[rel] = counts.get(rel, 0) + len(piece.missing())
        docs[rel] = piece.doc
    main = max(counts, key=lambda rel: counts[rel])
    doc = docs[main]
    if len(doc.missing) > EMBED_WINDOW:
        return f"{main} ({doc.embedded:,}/{len(doc.missing):,} chunks)"
    return main if len(counts) == 1 else f"{main} (+{len(counts) - 1})"


def _display_path(path: Path, root: Path) -> str:
    """The path shown as ``Source:``: relative to the project root when inside it, written
    as ``path_text`` writes names."""
    try:
        return path_text(path.relative_to(root).as_posix())
    except ValueError:
        return path_text(str(path))
