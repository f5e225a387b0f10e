"""``KnowledgeBase``: one folder of documents an agent can search, as a library object.

The commands open their knowledge bases here and print what they return: ``open`` (one of
an agent.yaml's ``vectorstore`` tools) or ``every``, ``ingest`` (incremental: only what
changed), ``find`` (ranked passages), ``info`` (what the store holds), and the start-up
policy of a process that answers few queries (``quick_start``, ``settle``). The agent's
tool (``tools.vectorstore_tool.VectorStoreTool``) is a knowledge base with the contract's
tool face added (its ``async search(query) -> str``; hence ``find`` here). ::

    from holodeck import KnowledgeBase

    with KnowledgeBase.open("agent.yaml") as kb:
        kb.ingest()
        results, _ = kb.find("How many times is a failing task retried?", top_k=3)
        print(results[0].source_path, results[0].content)
"""

from __future__ import annotations

import functools
import gc
import logging
import os
import re
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Self

from holodeck import tracing
from holodeck.config.agent_file import find_agent_file
from holodeck.config.file_types import DEFAULT_FILE_TYPES
from holodeck.config.files import file_label
from holodeck.config.loader import Project, ResolvedTool, load_project
from holodeck.config.yaml_lines import line_of
from holodeck.embeddings.base import Embedder
from holodeck.embeddings.catalog import effective_chunk_size
from holodeck.embeddings.spans import traced_embed
from holodeck.envvars import LOCK_TIMEOUT
from holodeck.errors import ConfigError, DamagedIndex, IndexFull, IndexNotWritable, IngestRunning
from holodeck.ingest.chunker import max_chunk_chars
from holodeck.ingest.git_source import GitRepository, GitState, blob_url
from holodeck.ingest.library import LibraryTarget, is_current
from holodeck.ingest.s3_source import S3Files
from holodeck.ingest.url_source import WebFiles
from holodeck.ownership import check_readable
from holodeck.results import SearchResult, View, below_threshold, no_results, render
from holodeck.retrieval.fusion import SearchMode
from holodeck.retrieval.hybrid import retrieve
from holodeck.vectorstore.factory import open_index
from holodeck.vectorstore.local import LocalIndexAdapter
from holodeck.vectorstore.records import ChunkFilters
from holodeck.vectorstore.store import VectorStore

if TYPE_CHECKING:
    from holodeck.ingest.status import Progress
    from holodeck.ingest.summary import IngestSummary

log = logging.getLogger("holodeck.tools")

_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f]")
#: Code points no encoder takes: what Python makes of bytes that are not UTF-8.
_SURROGATE = re.compile("[\ud800-\udfff]")
MAX_QUERY_CHARS = 4000
#: Tools already warned that their chunk_size was capped (warn once per process).
_WARNED_CHUNK_SIZE: set[str] = set()


class KnowledgeBase:
    """One knowledge base: a ``vectorstore`` tool's folder, its index and its model."""

    def __init__(
        self, tool: ResolvedTool, project: Project, embedder: Embedder | None = None
    ) -> None:
        self.resolved = tool
        self.project = project
        self._embedder = embedder
        self._store: VectorStore | None = None
        self.is_initialized = False
        self.summary: IngestSummary | None = None
        self.fallback_reason: str | None = None
        self._project_id: str | None = None
        #: The tool's git repository (None for a folder source), fetched once by
        #: ``initialize_sync`` (``fetch_source``; ``ingest --watch`` polls it).
        self.git = GitRepository.of(tool, project.root)
        #: The tool's web files or S3 objects (``source: {urls: [...]}``, ``{s3: ...}``),
        #: fetched like a git source.
        self.web: WebFiles | S3Files | None = WebFiles.of(tool, project.root) or S3Files.of(
            tool, project.root
        )
        self._fetched: GitState | None = None
        self._web_fetched = False

    def fetch_source(self) -> GitState | None:
        """Bring a remote source's copy up to date: a git checkout to the ref's newest
        commit, web files and S3 objects that changed (each warns and keeps the last copy
        when unreachable); the git state, None for any other source."""
        if self.web is not None:
            self.web.sync()
            self._web_fetched = True
        if self.git is None:
            return None
        self._fetched = self.git.sync()
        return self._fetched

    def git_state(self) -> dict[str, Any] | None:
        """A git source's remote (redacted), ref, path, checked-out and indexed commits."""
        return self.git.describe() if self.git is not None else None

    @classmethod
    def open(cls, agent: str | os.PathLike[str] = "agent.yaml", name: str | None = None) -> Self:
        """The knowledge base ``name`` of the agent file ``agent``, or of the one a folder's
        commands would use (``agent.yaml`` there or in the nearest parent); without a name,
        its only ``vectorstore`` tool. Nothing is read from the index yet."""
        path = Path(agent)
        if path.is_dir():
            path = find_agent_file(path, "create one with `holodeck init`")
        project = load_project(path)
        if name is None:
            names = [t.name for t in project.tools]
            if len(names) != 1:
                raise ConfigError(
                    f"{project.agent_path}: name one knowledge base of "
                    f"{', '.join(names) or 'none'} (KnowledgeBase.open(..., name=...))"
                )
            name = names[0]
        return cls(project.tool(name), project)

    @classmethod
    def every(cls, project: Project, names: Sequence[str] | None = None) -> list[Self]:
        """One per ``vectorstore`` tool of ``project`` (or just the ``names`` given)."""
        chosen = [project.tool(n) for n in names] if names else project.tools
        return [cls(t, project) for t in chosen]

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def ingest(
        self, force: bool = False, progress: Progress | None = None, wait: bool = True
    ) -> IngestSummary | None:
        """Bring the index in step with the folder (only what changed; everything with
        ``force``); the summary, or None when ``wait`` is False and another process was
        ingesting."""
        self.initialize_sync(force, progress, wait)
        return self.summary

    def info(self) -> dict[str, Any]:
        """What the store holds for this knowledge base: backend, index, algorithm, metric,
        model, dimensions, documents, chunks, and the fallback when Redis was unreachable;
        refused, as a search is, when the library is another project's."""
        self.check_readable()
        stats = self.store.adapter.stats(self.project.tenant_id, self.name)
        if stats["backend"] == "local":
            stats["index"] = self.project.display(Path(stats["index"]))
        info = {"tool": self.name, "library": self.name, **stats, "fallback": self.fallback_reason}
        if self.git is not None:
            info["git"] = self.git_state()
        if isinstance(self.web, WebFiles):
            info["urls"] = self.web.describe()
        if isinstance(self.web, S3Files):
            info["s3"] = self.web.describe()
        return info

    @property
    def name(self) -> str:
        """The tool's name: the LLM function name and the library id."""
        return self.resolved.name

    @property
    def embedder(self) -> Embedder:
        """The tool's embedder, made on first use (cheap: the model loads when it embeds)."""
        if self._embedder is None:
            self._embedder = shared_embedder(self.resolved, self.project)
        return self._embedder

    @property
    def store(self) -> VectorStore:
        """The tool's store; opening it may fall back from Redis to the local index."""
        return self._open_store()

    def _open_store(self, rebuild_unreadable: bool = False) -> VectorStore:
        if self._store is None:
            opened = open_index(
                self.resolved.database, self.project.root, self.name, rebuild_unreadable
            )
            self.fallback_reason = opened.fallback_reason
            self._store = VectorStore(opened.adapter)
        return self._store

    @property
    def backend(self) -> str:
        """Which backend holds the index: ``local``, ``memory`` or ``redis``."""
        return self.store.adapter.backend

    @property
    def document_count(self) -> int:
        """Number of chunks stored for this tool (refused, as a search is, when the library
        is another project's)."""
        self.check_readable()
        return self.store.adapter.count(self.project.tenant_id, self.name)

    def preload(self) -> None:
        """Read what this tool's first search needs (the vectors of a library searched
        exactly): a shell search does it while the model opens."""
        self.check_readable()
        self.store.adapter.preload(self.project.tenant_id, ChunkFilters(library_ids=[self.name]))

    def check_readable(self) -> None:
        """Reading follows writing (``ownership.check_readable``): a library another project
        fills is refused unless the agent names its tenant explicitly; one this project filled
        from another source folder is read with a warning."""
        self._project_id = check_readable(
            lambda: self.store.adapter,
            self.project.tenant_id,
            self.name,
            agent_name=self.project.agent.name,
            explicit_tenant=self.project.agent.tenant is not None,
            root=self.project.root,
            source=self.resolved.source,
            project_id=self._project_id,
        )

    @property
    def chunk_size(self) -> int:
        """The effective chunk size: never more tokens than the model reads."""
        requested = self.resolved.config.chunk_size
        return min(
            effective_chunk_size(self.resolved.embedding_model, requested),
            self.embedder.max_tokens,
        )

    def summary_line(self) -> str:
        """The last ingest's one-line summary, plus the fallback when the store was unreachable."""
        if self.summary is None:
            return f"{self.name}: not ingested"
        line = self.summary.line()
        if self.fallback_reason:
            line += f" (fallback: {self.fallback_reason})"
        return line

    def check_source(self) -> Path:
        """The source path; FileNotFoundError (the contract's) naming the field when missing."""
        source = self.resolved.source
        if not source.exists() and self.git is not None and self._fetched is not None:
            raise FileNotFoundError(
                f"{self.project.display(self.project.agent_path)}: tools[{self.name}].source.path: "
                f"{self.git.spec.path} is not a folder of {self.git.shown} at "
                f"{self._fetched.ref} (commit {self._fetched.commit[:12]})"
            )
        if not source.exists():
            raise FileNotFoundError(
                f"{self.project.display(self.project.agent_path)}: tools[{self.name}].source: "
                f"{self.resolved.config.source} does not exist (relative to {self.project.root})"
            )
        return source

    def initialize_sync(
        self, force_ingest: bool = False, progress: Progress | None = None, wait: bool = True
    ) -> None:
        """The blocking body of ``initialize``, for callers without an event loop.

        ``wait=False`` is for readers (search, chat): when another process is ingesting this
        library, say so in one line and answer from what it has committed so far. Otherwise
        (ingest, test) say so and wait for it, at most ``HOLODECK_LOCK_TIMEOUT``.
        """
        if (self.git is not None and self._fetched is None) or (
            self.web is not None and not self._web_fetched
        ):
            self.fetch_source()  # once per KnowledgeBase; ``ingest --watch`` polls it
        source = self.check_source()
        cfg = self.resolved.config
        requested = cfg.chunk_size
        size = self.chunk_size
        asked = "chunk_size" in cfg.model_fields_set
        if size < requested and asked and self.name not in _WARNED_CHUNK_SIZE:
            _WARNED_CHUNK_SIZE.add(self.name)
            log.warning(
                "Tool %s: chunk_size %d is more than %s reads; using %d tokens "
                "(set chunk_size: %d to silence this)",
                self.name,
                requested,
                self.embedder.model_id,
                size,
                size,
            )
        store = self._open_store(rebuild_unreadable=force_ingest)
        try:
            self.summary = self._ingest(store, source, force_ingest, progress, wait=False)
        except IngestRunning:
            if not wait:
                log.info(
                    "%s: another ingest is running; answering from what it has stored so far",
                    self.name,
                )
                self.summary = None
            else:  # said at once, so a wait is never taken for a hang
                log.info(
                    "%s: another ingest is running; waiting up to %g s for it to finish "
                    "(HOLODECK_LOCK_TIMEOUT sets how long)",
                    self.name,
                    LOCK_TIMEOUT.read(),
                )
                self.summary = self._ingest(store, source, force_ingest, progress, wait=True)
        except (IndexFull, IndexNotWritable) as exc:
            if wait:
                raise
            log.warning("%s: not updated: %s", self.name, exc)
            self.summary = None
        self._record_commit()
        self.is_initialized = True
        settle()

    def _record_commit(self) -> None:
        """After an ingest of a git checkout: say what the commits changed, and record the
        commit the index now holds."""
        if self.git is None or self._fetched is None or self.summary is None:
            return
        new, old = self._fetched.commit, self._fetched.indexed_commit
        if old and old != new:
            changes = self.git.changes(old, new)
            said = (
                ", ".join(f"{n} {kind}" for kind, n in sorted(changes.items())) or "no files"
                if changes is not None
                else "not in the clone (history rewritten?): files compared instead"
            )
            log.info("%s: %s..%s: %s", self.name, old[:12], new[:12], said)
        self.git.mark_indexed(new)
        self._fetched.indexed_commit = new

    def _ingest(
        self,
        store: VectorStore,
        source: Path,
        force: bool,
        progress: Progress | None,
        wait: bool,
    ) -> IngestSummary:
        """``ingest_library`` of this tool; a forced one that finds the local database
        damaged (damage SQLite's check of its pages cannot see, such as a stored text) moves
        it aside and ingests again into a new one."""
        from holodeck.ingest.pipeline import ingest_library  # only a tool that ingests

        target = self._target(source)
        try:
            return ingest_library(
                store, self.embedder, target, force=force, progress=progress, wait=wait
            )
        except DamagedIndex as exc:
            if not force or not isinstance(store.adapter, LocalIndexAdapter):
                raise
            store.adapter.start_anew(exc)
        return ingest_library(
            store, self.embedder, target, force=True, progress=progress, wait=wait
        )

    def is_current(self) -> bool:
        """Whether the index already holds the source as it is now (one ``stat`` per file,
        no lock, no write: ``ingest.library.is_current``); a reader then has nothing to ingest.
        False when the source is missing: the ingest says why."""
        source = self.resolved.source
        if not source.exists():
            return False
        if is_current(self.store, self.embedder.model_id, self._target(source)):
            self.is_initialized = True
            settle()
            return True
        return False

    def _target(self, source: Path) -> LibraryTarget:
        """Where this tool's chunks go and how they are made."""
        cfg = self.resolved.config
        size = self.chunk_size
        return LibraryTarget(
            tenant_id=self.project.tenant_id,
            library_id=self.name,
            source=source,
            project_root=self.project.root,
            chunk_size=size,
            chunk_overlap=min(cfg.chunk_overlap, size // 2),
            file_types=tuple(dict.fromkeys(cfg.file_types or DEFAULT_FILE_TYPES)),
            exclude=tuple(cfg.exclude),
            limits=cfg.limits,
            settings_file=self.project.agent_path.name,
            take_over=self.project.agent.tenant is not None,
            agent_name=self.project.agent.name,
            model_key=self._model_key(),
            model_key_set="embedding_model" in cfg.model_fields_set,
            model_provider=self._model_provider(),
        )

    def _model_key(self) -> str:
        """Where this tool's ``embedding_model:`` is written in agent.yaml, or would go."""
        project, name = self.project, self.name
        index = next(i for i, t in enumerate(project.agent.tools) if t.name == name)
        label = file_label(project.agent_path)
        if "embedding_model" in self.resolved.config.model_fields_set:
            line = line_of(project.node, ("tools", index, "embedding_model"))
            return f"{label} line {line} (tools[{index}].embedding_model)"
        line = line_of(project.node, ("tools", index, "source"))
        return f"tools[{index}] ({name}) of {label}, below its source: on line {line}"

    def _model_provider(self) -> str:
        """Who embeds with this tool's model: the provider (and endpoint), empty when local."""
        from holodeck.embeddings.factory import is_local_model  # loads the local model's code

        model = self.project.agent.embedding_model_config
        if model is None or is_local_model(self.resolved.embedding_model, self.project.root):
            return ""
        return model.provider + (f" at {model.endpoint}" if model.endpoint else "")

    def render(
        self,
        query: str,
        results: list[SearchResult],
        total: int,
        min_score: float | None = None,
        *,
        view: View = "contract",
    ) -> str:
        """A result list as text in ``view`` (``results.render``; ``total`` = hits before the
        score filter); no results is the contract's sentence in every view."""
        if results:
            return render(results, view, query).plain
        if min_score is None:
            min_score = self.resolved.config.min_similarity_score
        if total and min_score is not None:
            return below_threshold(min_score)
        return no_results(query)

    def find(
        self,
        query: str,
        *,
        top_k: int | None = None,
        min_score: float | None = None,
        filters: ChunkFilters | None = None,
        mode: SearchMode | None = None,
    ) -> tuple[list[SearchResult], int]:
        """Ranked passages for ``query`` and how many chunks were found before ``min_score``."""
        query = clean_query(query)
        cfg = self.resolved.config
        k = top_k or cfg.top_k
        searched = mode or cfg.search_mode
        attributes = self._span_attributes(k, searched)
        with tracing.span(f"execute_tool {self.name}", attributes, reuse=True) as span:
            span.content("holodeck.search.query", query)
            results, total = self._find(query, k, min_score, filters, searched)
            span.set_all(
                {
                    "holodeck.store": self.backend,
                    "holodeck.search.results": len(results),
                    "holodeck.search.found": total,
                    "holodeck.search.top_score": results[0].score if results else None,
                    "holodeck.search.filters": _filter_names(filters),
                }
            )
            if results:
                span.content("holodeck.search.sources", [r.source_path for r in results])
                span.content("holodeck.search.passages", [r.content for r in results])
            return results, total

    def _span_attributes(self, k: int, mode: str) -> dict[str, Any]:
        """The search span's own attributes: the tool, its store, the mode and top_k."""
        return {
            tracing.OPERATION: "execute_tool",
            tracing.TOOL_NAME: self.name,
            tracing.TOOL_TYPE: "datastore",
            "holodeck.search.mode": mode,
            "holodeck.search.top_k": k,
            "holodeck.embeddings.model": self.embedder.model_id,
        }

    def _find(
        self,
        query: str,
        k: int,
        min_score: float | None,
        filters: ChunkFilters | None,
        mode: SearchMode,
    ) -> tuple[list[SearchResult], int]:
        self.check_readable()
        cfg = self.resolved.config
        threshold = cfg.min_similarity_score if min_score is None else min_score
        try:
            vector = traced_embed(self.embedder)([query])[0]
        except Exception as exc:  # the contract turns every embedding failure into this
            raise RuntimeError(f"Failed to generate query embedding: {exc}") from exc
        scope = filters or ChunkFilters()
        scope = ChunkFilters(
            library_ids=[self.name],
            book_ids=scope.book_ids,
            tags=scope.tags,
            language=scope.language,
        )
        passages, total = retrieve(
            self.store,
            self.project.tenant_id,
            query,
            vector,
            k,
            scope,
            mode,
            threshold,
        )
        # Chunks are made within this bound; a passage of several chunks, or one stored before
        # the bound existed, is cut to it: no result shown or sent to the LLM is longer.
        bound = max_chunk_chars(self.chunk_size)
        results = []
        for rank, passage in enumerate(passages, start=1):
            best = passage.best.record
            content = passage.text_within(bound)
            results.append(
                SearchResult(
                    rank=rank,
                    score=passage.score,
                    source_path=best.source_path,
                    content=content,
                    chunk_id=best.chunk_id,
                    doc_id=best.doc_id,
                    book_id=best.book_id,
                    library_id=best.library_id,
                    chunk_index=best.chunk_index,
                    similarity=passage.similarity,
                    location=passage.location,
                    section=passage.section,
                    span=passage.span,
                    places=passage.places_within(content),
                    chunks=[c.record.chunk_index for c in passage.chunks],
                )
            )
        if self.git is not None:
            self._name_commit(results)
        if self.web is not None:
            for r in results:
                r.url = self.web.url_of(r.doc_id)
        return results, total

    def _name_commit(self, results: list[SearchResult]) -> None:
        """Each result of a git source names its file in the repository, the commit it was
        indexed at and, on github.com or gitlab.com, a link to its lines there."""
        assert self.git is not None
        state = self.git_state() or {}
        commit = state.get("indexed_commit") or state.get("commit") or ""
        prefix = f"{self.git.spec.path}/" if self.git.spec.path else ""
        for r in results:
            r.repo_path = prefix + r.doc_id
            r.commit = commit
            if commit:
                r.url = blob_url(self.git.spec.git, commit, r.repo_path, r.location) or ""

    def close(self) -> None:
        """Release the index (connections, file handles)."""
        if self._store is not None:
            self._store.adapter.close()


def _filter_names(filters: ChunkFilters | None) -> list[str] | None:
    """Which filters a search had (books, tags, language), not their values."""
    if filters is None:
        return None
    named = [("books", filters.book_ids), ("tags", filters.tags), ("language", filters.language)]
    return [name for name, value in named if value] or None


def clean_query(query: str) -> str:
    """Sanitise a query before embedding: control characters out, length bounded, and bytes
    that were not UTF-8 (a shell argument in another encoding, a lone surrogate in JSON)
    replaced by U+FFFD, with a warning: they cannot be embedded as they are."""
    if not isinstance(query, str) or not query.strip():
        raise ValueError("Search query cannot be empty")
    text = _CONTROL.sub(" ", query).strip()[:MAX_QUERY_CHARS]
    fixed = _SURROGATE.sub("\ufffd", text)
    if fixed != text:
        log.warning(
            "The query holds bytes that are not UTF-8; searching for %r (each bad byte "
            "replaced by \ufffd)",
            fixed,
        )
    return fixed


_EMBEDDERS: dict[tuple[str, str, str], Embedder] = {}


def shared_embedder(tool: ResolvedTool, project: Project) -> Embedder:
    """One embedder per model and project, so tools that share a model load it once."""
    model = project.agent.embedding_model_config  # embedding_provider, else model
    key = (tool.embedding_model, str(project.root), model.model_dump_json() if model else "")
    if key not in _EMBEDDERS:
        from holodeck.embeddings.factory import make_embedder

        _EMBEDDERS[key] = make_embedder(tool.embedding_model, project.root, model)
    return _EMBEDDERS[key]


def settle() -> None:
    """Keep what is loaded by now (modules, the model, the index's handles: all of it lives
    as long as the process) out of every later garbage collection. A search makes thousands
    of short-lived records, and each full collection they set off would walk all of it
    (benchmarks/README.md measures what that costs a search). ``gc.freeze`` costs nothing
    itself, and a frozen object is still freed when nothing refers to it (only cycles among
    them stay). And numpy's own BLAS gets one thread (``_one_blas_thread``)."""
    gc.freeze()
    _one_blas_thread()


@functools.cache
def _one_blas_thread() -> None:
    """Run numpy's OpenBLAS (the wheels' ``scipy_openblas``) on one thread: a search's
    products are small, and OpenBLAS's threads spin and wait for a core, so on a busy machine
    one product took many times as long on two threads as on one (benchmarks/README.md,
    "One BLAS thread"). faiss's own OpenBLAS, whose threads the k-means of an ingest uses,
    is left as it is; large products of a search are already cut into parts on the read
    threads."""
    from threadpoolctl import threadpool_limits

    threadpool_limits(limits={"libscipy_openblas": 1})


def quick_start(kbs: Sequence[KnowledgeBase]) -> Callable[[], None]:
    """Start opening the local models of ``kbs`` for one query each (the quickest start),
    in the background while their files are checked; returns what to call before an ingest,
    which embeds many: it waits for them and closes those sessions, so the ingest reopens
    each with onnxruntime's optimisation."""
    from holodeck.embeddings.local import LocalOnnxEmbedder

    models = {id(kb.embedder): kb.embedder for kb in kbs}
    local = [m for m in models.values() if isinstance(m, LocalOnnxEmbedder)]
    for model in local:
        model.quick_start = True
    opening = [model.open_in_background() for model in local]

    def for_many() -> None:
        for thread in opening:
            thread.join()
        for model in local:
            model.quick_start = False
            model.close_session()

    return for_many
