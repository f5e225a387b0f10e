"""Incremental ingestion of one library: plan what changed, then convert, chunk, embed, store.

Every write goes through the ``VectorStore`` (which checks, then passes to the adapter). A
document is written whole: its old state and chunks go and its new chunks and state come in
together (one transaction on the SQLite index), so an interruption leaves the documents
committed so far intact and the re-run redoes the rest.
"""

from __future__ import annotations

import hashlib
import logging
import os
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any

import numpy as np

from holodeck.config.project_id import PROJECT_ID_FILE, library_owner
from holodeck.embeddings.base import Embedder
from holodeck.errors import ConfigError, EmbeddingError, IngestError, ValidationError
from holodeck.ingest.chunker import chunk_text
from holodeck.ingest.convert import ConversionError, convert
from holodeck.ingest.discover import DEFAULT_FILE_TYPES, SourceFile, discover
from holodeck.ingest.frontmatter import language_of, split_front_matter, tags_of
from holodeck.ingest.locations import locate
from holodeck.ingest.skips import SkipReport
from holodeck.vectorstore.errors import LibraryOwnedError
from holodeck.vectorstore.records import (
    ChunkRecord,
    DocState,
    IndexInfo,
    chunk_id_for,
    text_hash,
)
from holodeck.vectorstore.store import VectorStore

log = logging.getLogger("holodeck.ingest")

#: Chunks embedded together: big enough to keep the model busy, small enough to commit often.
EMBED_BATCH = 32
#: Seconds an ingest waits for another ingest of the same library before giving up
#: (``HOLODECK_LOCK_TIMEOUT`` overrides it).
LOCK_TIMEOUT = float(os.environ.get("HOLODECK_LOCK_TIMEOUT", "60"))


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

    def line(self) -> str:
        """The one-line summary a user reads after an ingest."""
        return (
            f"{self.tool}: {self.new} new, {self.changed} changed, {self.touched} touched, "
            f"{self.unchanged} unchanged, {self.removed} removed, {self.skipped + self.failed} "
            f"skipped; {self.chunks_embedded} chunks embedded, {self.chunks_total} stored "
            f"[{self.backend}] in {self.seconds:.2f} s"
        )


@dataclass
class Progress:
    """Callbacks for a progress display; all optional."""

    start: Callable[[int, int], None] = lambda files, todo: None
    advance: Callable[[str], None] = lambda rel_path: None
    embedded: Callable[[int], None] = lambda n: None


@dataclass
class LibraryTarget:
    """Where one library's chunks go and how they are made."""

    tenant_id: str
    library_id: str
    source: Path
    project_root: Path
    chunk_size: int
    chunk_overlap: int
    #: Extensions to ingest (lower case, with the dot) and gitignore-style patterns to leave out.
    file_types: tuple[str, ...] = DEFAULT_FILE_TYPES
    exclude: tuple[str, ...] = ()
    #: Who fills the library (``config.project_id.library_owner``); made from
    #: ``project_root`` and ``source`` when not given.
    owner: dict[str, str] | None = None
    #: Take the library over from another source (the agent names its ``tenant:`` itself).
    take_over: bool = False


@dataclass
class _Pending:
    """A document converted and chunked, waiting for its vectors."""

    file: SourceFile
    digest: str
    records: list[ChunkRecord]
    missing: list[int]  # indexes into records that still need a vector
    is_new: bool


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
    summary.skipped_files = [{"path": s.rel_path, "reason": s.reason} for s in found.skipped]
    if not found.files:
        skips.finish()
        raise ValidationError(
            f"{target.source}: no supported files to ingest "
            f"(file types of this tool: {' '.join(target.file_types)})"
        )
    timeout = LOCK_TIMEOUT if wait else 0.0
    with store.library_lock(target.tenant_id, target.library_id, timeout):
        _claim(store, target)  # before anything is removed: --force-ingest included
        summary.rebuilt = _check_model(store, embedder, target, force)
        run = _Run(store, embedder, target, summary, progress, force, skips)
        run.execute(found.files)
    skips.finish()
    summary.chunks_total = store.count(target.tenant_id, target.library_id)
    summary.seconds = time.perf_counter() - started
    return summary


def _claim(store: VectorStore, target: LibraryTarget) -> None:
    """Make sure this source may fill the library; another project's is refused (exit 2)."""
    owner = target.owner or library_owner(target.project_root, target.source)
    tenant, library = target.tenant_id, target.library_id
    try:
        claim = store.claim_library(tenant, library, owner, take_over=target.take_over)
    except LibraryOwnedError as exc:
        raise ConfigError(
            f"library {library!r} of tenant {tenant!r} in the {store.adapter.backend} index "
            f"belongs to another source: {exc.owner.get('description', '?')} (project id "
            f"{exc.owner.get('project_id', '?')}), not {owner['description']} (project id "
            f"{owner['project_id']}); nothing was changed. To keep both, set tenant: in "
            f"agent.yaml or rename the tool; to take it over, set tenant: {tenant} "
            f"explicitly; if both are one project, commit {PROJECT_ID_FILE.as_posix()} so "
            f"every checkout shares its id"
        ) from None
    if claim.outcome == "adopted":
        log.info(
            "Library %s of tenant %s had no owner record (made by an older holodeck); "
            "claimed for %s",
            library,
            tenant,
            owner["description"],
        )
    elif claim.outcome == "taken" and claim.previous is not None:
        log.warning(
            "Library %s of tenant %s belonged to %s; taken over by %s (tenant: is set in "
            "agent.yaml); its documents are replaced by this source's",
            library,
            tenant,
            claim.previous.get("description", "?"),
            owner["description"],
        )


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


class _Run:
    """One ingest pass: plan, then process documents in embedding-sized batches."""

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
        self.pending: list[_Pending] = []

    def execute(self, files: list[SourceFile]) -> None:
        t = self.t
        states = self.store.doc_states(t.tenant_id, t.library_id)
        present = {f.rel_path for f in files}
        for doc_id in sorted(set(states) - present):
            self._remove(doc_id)
        todo: list[tuple[SourceFile, str]] = []
        for f in files:
            state = states.get(f.rel_path)
            if state and not self.force and state.mtime == f.mtime and state.size == f.size:
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
                self.summary.touched += 1
                self.store.set_doc_state(
                    t.tenant_id,
                    t.library_id,
                    DocState(f.rel_path, f.mtime, f.size, digest, state.chunk_count),
                )
                continue
            todo.append((f, digest))
        self.progress.start(len(files), len(todo))
        for f, digest in todo:
            is_new = f.rel_path not in states
            try:
                prepared = self._prepare(f, digest, is_new)
            except ValidationError as exc:  # an id this backend cannot store
                self._fail(f.rel_path, str(exc))
                prepared = False
            if not prepared:
                if not is_new:
                    self._remove(f.rel_path, count=False)  # its old text is stale: it goes too
                self.progress.advance(f.rel_path)  # stored files advance once written
            if sum(len(p.missing) for p in self.pending) >= EMBED_BATCH:
                self._write_pending()
        self._write_pending()
        self._remove_orphans()
        self.store.flush()

    def _prepare(self, f: SourceFile, digest: str, is_new: bool) -> bool:
        """Convert and chunk one file, reusing the vectors of chunks whose text is unchanged."""
        t = self.t
        tags: list[str] = []
        language: str | None = None
        try:
            converted = convert(f)
            text, body_start = converted.text, 0
            if f.path.suffix.lower() == ".md":
                meta, body = split_front_matter(text, name=f.rel_path)
                tags, language = tags_of(meta), language_of(meta)
                body_start = len(text) - len(body)  # chunks of the body, lines of the file
            body = text[body_start:]
            chunks = chunk_text(body, self.embedder.tokens, t.chunk_size, t.chunk_overlap)
            spans = ((c.start + body_start, c.end + body_start) for c in chunks)
            locations = locate(text, converted.anchors, spans)
        except ConversionError as exc:
            self._fail(f.rel_path, exc.reason)
            return False
        except Exception as exc:  # one bad file never stops an ingest, whatever went wrong
            log.debug("converting %s failed", f.rel_path, exc_info=True)  # -v: the traceback
            self._fail(f.rel_path, _failure(exc))
            return False
        if not chunks:
            self._fail(f.rel_path, "empty file")
            return False
        old = {}
        if not self.force:
            for rec in self.store.doc_chunks(t.tenant_id, t.library_id, f.rel_path):
                if rec.embedding_model == self.embedder.model_id:
                    old[rec.content_hash] = rec.vector
        source_path = _display_path(f.path, t.project_root)
        book = str(PurePosixPath(f.rel_path).parent)
        records: list[ChunkRecord] = []
        missing: list[int] = []
        for i, chunk in enumerate(chunks):
            h = text_hash(chunk.text)
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
                    tags=tags,
                    language=language,
                    location=locations[i],
                )
            )
        self.summary.chunks_reused += len(records) - len(missing)
        self.pending.append(_Pending(f, digest, records, missing, is_new))
        return True

    def _write_pending(self) -> None:
        """Embed every pending chunk that needs it in one batch, then store each document."""
        if not self.pending:
            return
        texts = [p.records[i].content for p in self.pending for i in p.missing]
        if texts:
            try:
                vectors = self.embedder.embed(texts)
            except EmbeddingError:
                raise
            except Exception as exc:
                raise EmbeddingError(f"embedding failed: {exc}") from exc
            row = 0
            for p in self.pending:
                for i in p.missing:
                    p.records[i].vector = vectors[row]
                    row += 1
            self.summary.chunks_embedded += len(texts)
            self.progress.embedded(len(texts))
        t = self.t
        for p in self.pending:
            doc = p.file.rel_path
            state = DocState(doc, p.file.mtime, p.file.size, p.digest, len(p.records))
            try:
                self.store.write_document(t.tenant_id, t.library_id, doc, p.records, state)
            except ValidationError as exc:  # an id this backend cannot store: nothing written
                self._fail(doc, str(exc))
                if not p.is_new:
                    self.store.remove_document(t.tenant_id, t.library_id, doc)
                self.progress.advance(doc)
                continue
            if p.is_new:
                self.summary.new += 1
            else:
                self.summary.changed += 1
            self.progress.advance(doc)
        self.pending.clear()

    def _fail(self, rel_path: str, reason: str) -> None:
        """A file that cannot be ingested: warn, count it, and go on with the others."""
        self.skips.skip(rel_path, reason)
        self.summary.failed += 1
        self.summary.skipped_files.append({"path": rel_path, "reason": reason})

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


def _failure(exc: Exception) -> str:
    """Why a file could not be converted, parsed or chunked, in a few words."""
    if isinstance(exc, RecursionError):
        return "nested too deeply to process (RecursionError)"
    if isinstance(exc, MemoryError):
        return "too large to process in memory (MemoryError)"
    first = (str(exc).strip().splitlines() or [""])[0]
    first = first if len(first) <= 120 else first[:117] + "..."
    return f"{type(exc).__name__}: {first}" if first else type(exc).__name__


def _file_hash(path: Path) -> str:
    """sha256 of a file's bytes: decides changed versus only touched."""
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def _display_path(path: Path, root: Path) -> str:
    """The path shown as ``Source:``: relative to the project root when inside it."""
    try:
        return path.relative_to(root).as_posix()
    except ValueError:
        return str(path)
