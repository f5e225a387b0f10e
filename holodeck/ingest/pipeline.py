"""Incremental ingestion of one library: plan what changed, then convert, chunk, embed, store.

Chunks and document states are written through the ``VectorStore`` (which checks, then
passes to the adapter), the library's owner record through ``ownership``. A document is
written whole: its old state and chunks go and its new chunks and state come in
together (one transaction on the SQLite index), so an interruption leaves the documents
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

import hashlib
import logging
import time
from bisect import bisect_left
from collections import deque
from concurrent.futures import Future, ThreadPoolExecutor, as_completed
from dataclasses import asdict, dataclass, field, replace
from functools import partial
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING, Any

import numpy as np

from holodeck.embeddings.base import Embedder
from holodeck.envvars import LOCK_TIMEOUT
from holodeck.errors import EmbeddingError, IngestError, ValidationError
from holodeck.ingest.discover import SourceFile, discover
from holodeck.ingest.library import LibraryTarget, unchanged
from holodeck.ingest.skips import SkipReport
from holodeck.ingest.status import IngestStatus, Progress, TokenEstimate
from holodeck.ownership import claim_for_ingest, library_owner, record_owner
from holodeck.vectorstore.records import (
    ChunkRecord,
    DocState,
    IndexInfo,
    chunk_id_for,
    indexed_text,
    text_hash,
)
from holodeck.vectorstore.store import VectorStore

if TYPE_CHECKING:
    from holodeck.ingest.prefetch import Prepared

log = logging.getLogger("holodeck.ingest")

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
#: The version of the rules that turn a file into chunks (conversion, cleaning, chunking,
#: sections), recorded with each document's state. A document stored under another version
#: is chunked again by the next ingest, even when its file did not change, and its chunks
#: whose text is unchanged keep their vectors: an upgrade brings an index to the new rules
#: without re-embedding what they left alone. Raise it whenever those rules change.
CHUNKING_VERSION = 3
_VERSION_TAG = f"+chunks{CHUNKING_VERSION}"


@dataclass
class IngestSummary:
    """What one ingest did, for the one-line summary and ``--json``."""

    tool: str
    backend: str
    new: int = 0
    changed: int = 0
    touched: int = 0
    unchanged: int = 0
    removed: int = 0
    moved: int = 0
    skipped: int = 0
    failed: int = 0
    chunks_embedded: int = 0
    chunks_reused: int = 0
    chunks_total: int = 0
    seconds: float = 0.0
    rebuilt: bool = False
    skipped_files: list[dict[str, str]] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        """Plain values for JSON output."""
        return asdict(self)

    @property
    def did_work(self) -> bool:
        """Files were ingested, moved or removed (a file failing again, as it did last time,
        and files only touched are not news)."""
        return bool(self.new + self.changed + self.removed + self.moved)

    def line(self) -> str:
        """The one-line summary a user reads after an ingest (``moved`` only when some were)."""
        moved = f"{self.moved} moved, " if self.moved else ""
        return (
            f"{self.tool}: {self.new} new, {self.changed} changed, {self.touched} touched, "
            f"{self.unchanged} unchanged, {self.removed} removed, {moved}"
            f"{self.skipped + self.failed} skipped; {self.chunks_embedded} chunks embedded, "
            f"{self.chunks_total} stored [{self.backend}] in {self.seconds:.2f} s"
        )


def ingest_library(
    store: VectorStore,
    embedder: Embedder,
    target: LibraryTarget,
    *,
    force: bool = False,
    progress: Progress | None = None,
    wait: bool = True,
) -> IngestSummary:
    """Bring one library in step with its source folder; returns what was done.

    With ``wait=False`` (readers: search, chat, test) another running ingest of the library
    raises ``IngestRunning`` at once instead of being waited for.
    """
    started = time.perf_counter()
    progress = progress or Progress()
    summary = IngestSummary(tool=target.library_id, backend=store.adapter.backend)
    found = discover(target.source, target.file_types, target.exclude)
    skips = SkipReport(target.project_root, target.tenant_id, target.library_id, target.source)
    for s in found.skipped:
        skips.skip(s.rel_path, s.reason)
    summary.skipped = len(found.skipped)
    if not found.files:
        skips.finish()
        raise ValidationError(
            f"{target.source}: no supported files to ingest "
            f"(file types of this tool: {' '.join(target.file_types)})"
        )
    # Seconds to wait for another ingest of the library; readers do not wait (but a bad
    # HOLODECK_LOCK_TIMEOUT is said by every command that ingests, never ignored).
    timeout = LOCK_TIMEOUT.read()
    timeout = timeout if wait else 0.0
    owner = target.owner or library_owner(target.project_root, target.source)
    with store.library_lock(target.tenant_id, target.library_id, timeout):
        moved = claim_for_ingest(  # before anything is removed: --force included
            store.adapter,
            target.tenant_id,
            target.library_id,
            owner,
            take_over=target.take_over,
            agent_name=target.agent_name,
            project_root=target.project_root,
        )
        summary.rebuilt = _check_model(store, embedder, target, force)
        run = _Run(store, embedder, target, summary, progress, force, skips)
        run.relocate = moved is not None
        run.execute(found.files)
        if moved is not None:  # every document follows now: the record may say so
            record_owner(store.adapter, target.tenant_id, target.library_id, owner)
    skips.finish()
    summary.skipped_files = [{"path": path, "reason": why} for path, why in skips.entries]
    summary.chunks_total = store.count(target.tenant_id, target.library_id)
    summary.seconds = time.perf_counter() - started
    return summary


def _check_model(
    store: VectorStore, embedder: Embedder, target: LibraryTarget, force: bool
) -> bool:
    """Refuse to mix embedding models; with ``force``, rebuild. Returns True when rebuilt."""
    info = store.describe_index()
    wanted = IndexInfo(embedder.model_id, embedder.dimensions)
    if info is None or info == wanted:
        return False
    others = store.total_count() - store.count(target.tenant_id, target.library_id)
    if others > 0:  # a rebuild would drop them: --force-ingest is no way out here
        raise IngestError(
            f"the shared index holds {others} chunks of other libraries made with "
            f"{info.embedding_model}; give this tool its own database index_name to use "
            f"{wanted.embedding_model}"
        )
    if not force:
        raise IngestError(
            f"the index of {target.library_id!r} was built with {info.embedding_model} "
            f"({info.dimensions} dims) but the tool now uses {wanted.embedding_model} "
            f"({wanted.dimensions} dims); run `holodeck ingest --force-ingest` to rebuild it"
        )
    log.warning(
        "Embedding model changed (%s -> %s): rebuilding %s",
        info.embedding_model,
        wanted.embedding_model,
        target.library_id,
    )
    store.rebuild(wanted)
    return True


@dataclass
class _Doc:
    """A document converted and chunked, embedded and stored one window at a time."""

    file: SourceFile
    digest: str
    records: list[ChunkRecord]
    missing: list[int]  # indexes into records that still need a vector, ascending
    is_new: bool
    queued: int = 0  # records handed to windows so far
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


class _Run:
    """One ingest pass: plan, then embed and store the changed files window by window."""

    def __init__(
        self,
        store: VectorStore,
        embedder: Embedder,
        target: LibraryTarget,
        summary: IngestSummary,
        progress: Progress,
        force: bool,
        skips: SkipReport,
    ) -> None:
        self.store = store
        self.embedder = embedder
        self.t = target
        self.summary = summary
        self.progress = progress
        self.force = force
        self.skips = skips
        self.status = IngestStatus(files_todo=0)
        self.estimate = TokenEstimate([])
        #: The source folder moved (same project): stored documents get their new paths.
        self.relocate = False

    def execute(self, files: list[SourceFile]) -> None:
        states = self.store.doc_states(self.t.tenant_id, self.t.library_id)
        with self.store.batch():  # removals and touched files: one commit, not one each
            todo = self._plan(files, states)
        self.progress.start(len(files), len(todo))
        if todo:
            self._ingest(todo, set(states))
        self._remove_orphans()
        self.store.flush()

    def _plan(
        self, files: list[SourceFile], states: dict[str, DocState]
    ) -> list[tuple[SourceFile, str]]:
        """Move renamed documents, remove vanished ones, record touched ones; the files to
        ingest, hashed.

        A new file with the content of a vanished one (same bytes, same type) takes its
        chunks and vectors (a move: metadata only, no re-embedding); so do the
        documents of a source folder the project moved (``relocate``).
        """
        t = self.t
        present = {f.rel_path for f in files}
        vanished = {d: states[d] for d in sorted(set(states) - present)}
        movable = {} if self.force else _by_content(vanished)
        todo: list[tuple[SourceFile, str]] = []
        older = 0  # documents chunked by an older version of the rules
        for f in files:
            state = states.get(f.rel_path)
            current = state is not None and state.content_hash.endswith(_VERSION_TAG)
            older += state is not None and not current
            if state and current and not self.force and unchanged(state, f):
                if not (self.relocate and self._move(f.rel_path, f, state.content_hash)):
                    self.summary.unchanged += 1
                continue
            try:
                digest = _file_hash(f.path)
            except OSError as exc:
                self._fail(f.rel_path, f"cannot read: {exc.strerror or exc}")
                if state:
                    self._remove(f.rel_path, count=False)
                continue
            if state and not self.force and state.content_hash == digest:
                if not (self.relocate and self._move(f.rel_path, f, digest)):
                    self.summary.touched += 1
                    self.store.set_doc_state(
                        t.tenant_id,
                        t.library_id,
                        DocState(f.rel_path, f.mtime, f.size, digest, state.chunk_count),
                    )
                continue
            old = movable.pop((digest, PurePosixPath(f.rel_path).suffix.lower()), None)
            if state is None and old is not None and self._move(old, f, digest):
                del vanished[old]
                continue
            todo.append((f, digest))
        if older and not self.force:
            log.info(
                "%s: %d documents were chunked by an older holodeck; chunking them again "
                "(chunks whose text is unchanged keep their vectors)",
                t.library_id,
                older,
            )
        for doc_id in vanished:
            self._remove(doc_id)
        return todo

    def _move(self, old_id: str, f: SourceFile, digest: str) -> bool:
        """Store the chunks of document ``old_id`` as those of ``f`` (renamed, or under a
        moved source folder), vectors and all; False when there is nothing to move (the
        chunks already say so, or they are not whole or of this model)."""
        t = self.t
        records = self.store.doc_chunks(t.tenant_id, t.library_id, old_id)
        source_path = _display_path(f.path, t.project_root)
        if old_id == f.rel_path and all(r.source_path == source_path for r in records):
            return False
        expected = [r.chunk_index for r in records] == list(range(len(records)))
        if (
            not records
            or not expected
            or any(r.embedding_model != self.embedder.model_id for r in records)
        ):
            return False
        book = str(PurePosixPath(f.rel_path).parent)
        moved = [
            replace(
                r,
                chunk_id=chunk_id_for(t.tenant_id, t.library_id, f.rel_path, r.chunk_index),
                doc_id=f.rel_path,
                book_id=book,
                source_path=source_path,
                mtime=f.mtime,
            )
            for r in records
        ]
        state = DocState(f.rel_path, f.mtime, f.size, digest, len(moved))
        self.store.write_document(t.tenant_id, t.library_id, f.rel_path, moved, state)
        if old_id != f.rel_path:
            self.store.remove_document(t.tenant_id, t.library_id, old_id)
        self.summary.moved += 1
        return True

    def _ingest(self, todo: list[tuple[SourceFile, str]], stored: set[str]) -> None:
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
            self._fail(f.rel_path, str(exc))
            if not is_new:
                self._remove(f.rel_path, count=False)  # its old text is stale: it goes too
            self.estimate.skipped(f)
            self._finished(f.rel_path)
            return None
        tokens = sum(doc.records[i].token_count for i in doc.missing)
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
        embed = self.embedder.embed
        return [
            _Call(part, size, calls.submit(embed, [_embedded(doc.records[i]) for doc, i in part]))
            for part, size in parts
        ]

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
            self.summary.chunks_embedded += len(call.chunks)
            self.status = replace(
                self.status,
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

    def _fail(self, rel_path: str, reason: str) -> None:
        """A file that cannot be ingested: warn, count it, and go on with the others."""
        self.skips.skip(rel_path, reason)
        self.summary.failed += 1

    def _remove(self, doc_id: str, count: bool = True) -> None:
        """Take a document out of the index: its state and its chunks."""
        self.store.remove_document(self.t.tenant_id, self.t.library_id, doc_id)
        self.summary.removed += int(count)

    def _remove_orphans(self) -> None:
        """Chunks without a document state whose file has since gone (a backend without
        transactions interrupted between a document's chunks and its state)."""
        t = self.t
        states = self.store.doc_states(t.tenant_id, t.library_id)
        expected = sum(s.chunk_count for s in states.values())
        if self.store.count(t.tenant_id, t.library_id) == expected:
            return
        for doc_id in self.store.doc_ids(t.tenant_id, t.library_id) - set(states):
            removed = self.store.remove_document(t.tenant_id, t.library_id, doc_id)
            log.debug("Removed %d orphan chunks of %s", removed, doc_id)


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
    """The file a window embeds most of, and how many others share the window."""
    counts: dict[str, int] = {}
    for piece in window:
        rel = piece.doc.file.rel_path
        counts[rel] = counts.get(rel, 0) + len(piece.missing())
    main = max(counts, key=lambda rel: counts[rel])
    return main if len(counts) == 1 else f"{main} (+{len(counts) - 1})"


def _by_content(states: dict[str, DocState]) -> dict[tuple[str, str], str]:
    """Documents by (file hash, lower-case suffix): a new file with the same bytes and type
    is chunked the same, so it can take their chunks."""
    found: dict[tuple[str, str], str] = {}
    for doc_id, state in states.items():
        found.setdefault((state.content_hash, PurePosixPath(doc_id).suffix.lower()), doc_id)
    return found


def _file_hash(path: Path) -> str:
    """sha256 of a file's bytes, tagged with the chunking rules' version: decides changed
    versus only touched (and chunked by these rules or older ones)."""
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest() + _VERSION_TAG


def _display_path(path: Path, root: Path) -> str:
    """The path shown as ``Source:``: relative to the project root when inside it."""
    try:
        return path.relative_to(root).as_posix()
    except ValueError:
        return str(path)
