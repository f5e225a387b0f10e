"""Incremental ingestion of one library: plan what changed, then embed and store the rest.

Chunks and document states are written through the ``VectorStore`` (which checks, then
passes to the adapter), the library's owner record through ``ownership``. The library is
locked, its owner claimed and its embedding model checked; then the plan moves renamed
documents, removes vanished ones and records touched ones (one commit), and the files
that changed go to ``embed_windows``, which converts, chunks, embeds and stores them
window by window.
"""

from __future__ import annotations

import hashlib
import logging
import time
from dataclasses import replace
from pathlib import Path, PurePosixPath

from holodeck import tracing
from holodeck.embeddings.base import Embedder
from holodeck.embeddings.catalog import setting_for
from holodeck.envvars import LOCK_TIMEOUT
from holodeck.errors import ConfigError, ValidationError
from holodeck.extras import require_for_types
from holodeck.ingest.discover import SourceFile, discover
from holodeck.ingest.embed_windows import WindowedIngest, _display_path
from holodeck.ingest.library import LibraryTarget, unchanged
from holodeck.ingest.skips import SkipReport
from holodeck.ingest.spans import file_span, traced_counts
from holodeck.ingest.status import Progress, expected_tokens
from holodeck.ingest.summary import IngestSummary
from holodeck.ownership import claim_for_ingest, library_owner, record_owner
from holodeck.vectorstore.records import DocState, IndexInfo, chunk_id_for
from holodeck.vectorstore.store import VectorStore

log = logging.getLogger("holodeck.ingest")

#: The version of the rules that turn a file into chunks (conversion, cleaning, chunking,
#: sections), recorded with each document's state. A document stored under another version
#: is chunked again by the next ingest, even when its file did not change, and its chunks
#: whose text is unchanged keep their vectors: an upgrade brings an index to the new rules
#: without re-embedding what they left alone. Raise it whenever those rules change.
CHUNKING_VERSION = 4
_VERSION_TAG = f"+chunks{CHUNKING_VERSION}"


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
    attributes = {
        "holodeck.tool.name": target.library_id,
        "holodeck.store": store.adapter.backend,
        "holodeck.ingest.force": force,
        "holodeck.embeddings.model": embedder.model_id,
    }
    with tracing.span(f"holodeck.ingest {target.library_id}", attributes) as span:
        summary = _ingest_library(store, embedder, target, force, progress, wait)
        span.set_all({f"holodeck.ingest.{k}": v for k, v in traced_counts(summary).items()})
        return summary


def _ingest_library(
    store: VectorStore,
    embedder: Embedder,
    target: LibraryTarget,
    force: bool,
    progress: Progress | None,
    wait: bool,
) -> IngestSummary:
    started = time.perf_counter()
    progress = progress or Progress()
    summary = IngestSummary(tool=target.library_id, backend=store.adapter.backend)
    found = discover(target.source, target.file_types, target.exclude)
    skips = SkipReport(
        target.project_root,
        target.tenant_id,
        target.library_id,
        target.source,
        target.limits.model_dump(),
    )
    for s in found.skipped:
        skips.skip(s.rel_path, s.reason)
        file_span(s.rel_path, None, skip_reason=s.reason)
    summary.skipped = len(found.skipped)
    if not found.files:
        skips.finish()
        raise ValidationError(
            f"{target.source}: no supported files to ingest "
            f"(file types of this tool: {' '.join(target.file_types)})"
        )
    require_for_types(
        {PurePosixPath(f.rel_path).suffix.lower() for f in found.files},
        f"tool {target.library_id}",
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
    summary.skipped_files = [
        {"path": path, "reason": why, "as_before": path in skips.as_before}
        for path, why in skips.entries
    ]
    summary.chunks_total = store.count(target.tenant_id, target.library_id)
    summary.seconds = time.perf_counter() - started
    return summary


def _check_model(
    store: VectorStore, embedder: Embedder, target: LibraryTarget, force: bool
) -> bool:
    """Refuse to mix embedding models; with ``force``, rebuild. Returns True when rebuilt.

    The refusal is a configuration matter (exit code 2) and names both ways out: keep the
    model the index was built with (the line for agent.yaml), or rebuild (what it re-embeds
    and where it sends it)."""
    info = store.describe_index()
    wanted = IndexInfo(embedder.model_id, embedder.dimensions)
    if info is None or info == wanted:
        return False
    # The same name making vectors of another length (a model pulled again): no line keeps it.
    same_name = info.embedding_model == wanted.embedding_model
    keep = "" if same_name else _keep_model(info.embedding_model, target)
    others = store.total_count() - store.count(target.tenant_id, target.library_id)
    if others > 0:  # a rebuild would drop them: --force-ingest is no way out here
        raise ConfigError(
            f"the shared index holds {others} chunks of other libraries made with "
            f"{info.embedding_model}; {keep + ', or ' if keep else ''}give this tool its own "
            f"database index_name to use {wanted.embedding_model}"
        )
    if not force:
        either = f"either {keep} (nothing is re-embedded), or rebuild it" if keep else "rebuild it"
        raise ConfigError(
            f"{target.library_id}: the index was built with {info.embedding_model} "
            f"({info.dimensions} dims) but the tool now uses {wanted.embedding_model} "
            f"({wanted.dimensions} dims); {either}: `holodeck ingest --force-ingest` "
            f"{_rebuild_cost(store, embedder, target)}"
        )
    log.warning(
        "Embedding model changed (%s -> %s): rebuilding %s",
        info.embedding_model,
        wanted.embedding_model,
        target.library_id,
    )
    store.rebuild(wanted)
    return True


def _keep_model(model_id: str, target: LibraryTarget) -> str:
    """How to keep the model the index was built with: the agent.yaml line, and where."""
    setting = setting_for(model_id)
    value = f"embedding_model: {setting}" if setting else "embedding_model: <its folder>"
    kept = setting or f"the model folder it was built with ({model_id})"
    where = target.model_key or "the tool in its agent file"
    if target.model_key_set:
        return f"keep {kept}: set `{value}` on {where}"
    return f"keep {kept}: add `{value}` to {where}"


def _rebuild_cost(store: VectorStore, embedder: Embedder, target: LibraryTarget) -> str:
    """What a rebuild re-embeds (documents, chunks, about how many of the new model's
    tokens) and where those go: a paid API is named, so nobody pays for it unawares."""
    tenant, library = target.tenant_id, target.library_id
    docs = store.doc_ids(tenant, library)
    chunks = tokens = 0
    for doc in docs:
        for rec in store.doc_chunks(tenant, library, doc):
            chunks += 1
            tokens += embedder.tokens.count(rec.content)
    where = f"through {target.model_provider}" if target.model_provider else "locally"
    return (
        f"re-embeds all it holds (documents: {len(docs):,}, chunks: {chunks:,}, about "
        f"{tokens:,} tokens) {where} with {embedder.model_id}"
    )


class _Run:
    """One ingest pass: plan, then embed and store the changed files (``WindowedIngest``)."""

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
        #: The source folder moved (same project): stored documents get their new paths.
        self.relocate = False

    def execute(self, files: list[SourceFile]) -> None:
        states = self.store.doc_states(self.t.tenant_id, self.t.library_id)
        with self.store.batch():  # removals and touched files: one commit, not one each
            todo = self._plan(files, states)
        self.progress.start(len(files), len(todo))
        if todo and not states:  # nothing stored yet: say what the first ingest will take
            tokens = expected_tokens([f for f, _ in todo])
            self.progress.first_ingest(len(todo), tokens, self.t.model_provider or "")
        if todo:
            windows = WindowedIngest(
                self.store,
                self.embedder,
                self.t,
                self.summary,
                self.progress,
                self.force,
                self._fail,
            )
            windows.run(todo, set(states))
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
            if state is None and self._over_limit_as_before(f, ""):
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
            if state is None and self._over_limit_as_before(f, digest):
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

    def _over_limit_as_before(self, f: SourceFile, digest: str) -> bool:
        """Skip, unconverted, a file that was past a limit last time and has not changed
        since (by size and mtime, or by ``digest`` once hashed); not under ``--force``."""
        if self.force:
            return False
        reason = self.skips.over_limit_as_before(f.rel_path, f.mtime, f.size, digest, _VERSION_TAG)
        if reason:
            self._fail(f.rel_path, reason)
        return bool(reason)

    def _fail(
        self, rel_path: str, reason: str, over_limit: tuple[float, int, str] | None = None
    ) -> None:
        """A file that cannot be ingested: warn, count it, and go on with the others; one
        past a limit (``over_limit``: its mtime, size and hash) is remembered as such."""
        file_span(rel_path, None if over_limit is None else over_limit[1], skip_reason=reason)
        if over_limit is not None:
            self.skips.remember_over_limit(rel_path, reason, *over_limit)
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
