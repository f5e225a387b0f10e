"""The vector side of the SQLite index: the nearest chunks of a query vector.

SQLite holds every vector (float32 BLOBs in ``vectors``) and is the truth. A small library is
searched exactly: its vectors are read once per process into one matrix and scanned with
numpy. A library of ``ANN_MIN_ROWS`` chunks or more also gets an approximate index file beside
the database (``vectors-<lib>-<id>.ivf``: faiss's inverted file of 4-bit fast-scan codes, 48
bytes a 384-dim vector, read whole by a process that searches the library) and its 8-bit
codes (``codes``, memory-mapped); a search scans the lists nearest the query by the
4-bit codes, ranks their best candidates by the 8-bit codes (the 4-bit ones are too coarse
to rank them) and re-scores the best few exactly with their float32 vectors from SQLite. A
filter leaving few rows ranks those rows by their 8-bit codes directly. An inverted file, not
a graph: its recall is set when searching (how many lists are read and candidates ranked),
and it builds in a fraction of an HNSW graph's time (see benchmarks/README.md, 'Speed and
scale').

The file is a cache kept in step with the chunk table, never ahead of it: an ingest commits
its chunks first; its last step (``upkeep``, under the index's lock) writes a new file under a
new name, then records the file and the point of the ``changes`` log it covers in
``vector_files`` (one small transaction), then deletes the old file. A kill at any point leaves
either the old file recorded or the new one, and stray files are removed by the next upkeep.
Whatever the file lacks (rows committed after it, rows deleted or moved since) a search
takes from SQLite exactly: the file's results minus the rows changed since, plus an exact
scan of the rows added since. A file or its codes missing, unreadable or holding another
count than recorded is never trusted: searches go exact and say so, and the next upkeep
rebuilds both with a progress bar.
"""

from __future__ import annotations

import contextlib
import logging
import math
import sqlite3
import threading
import uuid
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from holodeck.vectorstore.progress import build_progress
from holodeck.vectorstore.records import ChunkFilters, ChunkHit
from holodeck.vectorstore.sqlite import codes as sqlite_codes
from holodeck.vectorstore.sqlite import lists as sqlite_lists
from holodeck.vectorstore.sqlite import query as sqlite_query
from holodeck.vectorstore.sqlite.query import (
    Reader,
    allowed_ids,
    in_snapshot,
    records_by_id,
    scope_libs,
)
from holodeck.vectorstore.sqlite.side_files import (
    SEQS,
    out_of_reach,
    remove_strays,
    save_whole,
)

log = logging.getLogger("holodeck.vectorstore")

#: Vectors read per block when a library's matrix is loaded.
LOAD_ROWS = 4096
#: The memory map a matrix is loaded through (the database's first bytes; the rest is read).
LOAD_MMAP_BYTES = 1 << 30

#: A library this large gets an approximate index file; below it, exact search.
ANN_MIN_ROWS = 20_000
#: The file is rewritten when the rows it lacks (added, deleted or moved since) reach this
#: many, or this share of the library, whichever is more; until then searches scan them.
PATCH_MIN_ROWS = 5_000
PATCH_SHARE = 0.01
#: Past this share of removed entries a file is rebuilt (its lists trained anew) instead of
#: patched: the lists were drawn from vectors that are mostly gone.
REBUILD_REMOVED_SHARE = 0.2
#: Vectors per list: a library of n gets the power of two nearest n / ROWS_PER_LIST lists,
#: drawn by k-means (in two levels for many lists: ``lists``) from a sample of
#: TRAIN_PER_LIST vectors a list in KMEANS_ROUNDS rounds: a larger sample draws better lists
#: and builds slower (see benchmarks/README.md, 'Speed and scale').
ROWS_PER_LIST = 128
TRAIN_PER_LIST = 50
KMEANS_ROUNDS = 10
#: Each vector is kept in the file as a 4-bit code per DIMS_PER_PART dimensions relative to
#: its list's centre: faiss's fast-scan codes, scanned in SIMD blocks, faster than int8
#: vectors at the same recall since the best candidates are ranked again anyway.
CODE_BITS = 4
DIMS_PER_PART = 4
#: A search reads sqrt(PROBE_FACTOR x lists) lists: more lists, better recall, slower search
#: (see benchmarks/README.md, 'Speed and scale').
PROBE_FACTOR = 16
#: A file whose library has grown or shrunk so far that the right number of lists is this
#: many times the file's (or a fraction as small) is rebuilt instead of patched.
RELIST_FACTOR = 4
#: A search reads at least this many lists (every list of a file of up to 1,024).
MIN_PROBES = 1024
#: Candidates taken from the lists by their 4-bit codes and ranked by their 8-bit codes
#: (``codes``); the best RESCORED of those (at least ``k``) are re-scored exactly.
CANDIDATES = 3000
RESCORED = 40
#: Vectors added to a file per call while it is built (progress moves after each).
BUILD_ROWS = 16384
FILE_PREFIX = "vectors-"
FILE_SUFFIX = ".ivf"
#: Files of earlier versions (usearch's HNSW graph): never read, rebuilt at the next ingest.
OLD_SUFFIXES = (".usearch",)

_FILES = "SELECT lib, file, chunk_seq, change_seq, count, removed FROM vector_files"
#: Rows of a library the file made at (chunk_seq, change_seq) lacks.
_SINCE = "AND (id > ? OR id IN (SELECT id FROM changes WHERE seq > ?))"


@dataclass
class _Matrix:
    """Vectors loaded by this process: row i is chunk ``ids[i]``."""

    ids: np.ndarray  # int64
    vectors: np.ndarray  # float32, (n, dims)
    _order: np.ndarray | None = None  # ids' sorting positions, made when first asked

    def rows_of(self, ids: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Which of ``ids`` this matrix holds (a mask), and their rows."""
        if self.ids.size == 0 or ids.size == 0:
            return np.zeros(ids.size, dtype=bool), np.zeros(0, dtype=np.int64)
        if self._order is None:
            self._order = np.argsort(self.ids)
        at = np.minimum(np.searchsorted(self.ids, ids, sorter=self._order), self.ids.size - 1)
        rows = self._order[at]
        held = self.ids[rows] == ids
        return held, rows[held]


@dataclass(frozen=True)
class _FileRow:
    """A library's row of ``vector_files``: the file and what it covers."""

    lib: int
    file: str
    chunk_seq: int  # every chunk id up to this was considered ...
    change_seq: int  # ... and every change up to this one
    count: int  # vectors in the file (removed ones excluded)
    removed: int  # entries removed from it since it was built


@dataclass
class _Base:
    """A library's approximate index file as this process opened it."""

    row: _FileRow
    view: Any  # faiss.IndexIVFPQFastScan, read from the file
    codes: sqlite_codes.Codes  # the file's 8-bit codes, memory-mapped


@dataclass
class _Library:
    """What one process searches for one library: the file (if any and trusted), the rows
    it lacks in memory (``tail``) and the ids it holds that changed since (``gone``)."""

    base: _Base | None
    row: _FileRow | None  # the row the library was opened with (even when not trusted)
    tail: _Matrix
    gone: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))


class VectorIndex:
    """Nearest-vector search over one SQLite index, for one process.

    ``dims`` gives the index's vector length; ``on_rebuilt`` is called when another process
    rebuilt the index (another model, ``--force-ingest``), so the owner re-reads its info.
    ``folder`` is where approximate index files live (None: exact search only).
    """

    def __init__(
        self,
        reader: Reader,
        dims: Callable[[], int],
        on_rebuilt: Callable[[], None],
        folder: Path | None = None,
    ) -> None:
        self._reader = reader
        self._dims = dims
        self._on_rebuilt = on_rebuilt
        self._folder = folder
        self._libraries: dict[int, _Library] = {}
        self._seen: tuple[int, int, str] | None = None  # chunks seq, changes seq, epoch
        self._lock = threading.Lock()
        self._warned: set[tuple[int, str]] = set()

    # -- searching ---------------------------------------------------------------------
    def preload(self, tenant_id: str, filters: ChunkFilters) -> None:
        """Open (load) the scope's libraries now, as their first search would."""
        with self._reader.reading() as db:
            libs = scope_libs(db, tenant_id, filters)
        for lib in libs:
            self._library(lib)

    def search(
        self, tenant_id: str, vector: np.ndarray, k: int, filters: ChunkFilters
    ) -> list[ChunkHit]:
        """The ``k`` nearest chunks of the tenant's scope, best first, with their vectors."""
        with self._reader.reading() as db:
            libs = scope_libs(db, tenant_id, filters)
        if not libs or k <= 0:
            return []
        query = np.asarray(vector, dtype=np.float32)
        found = [self._search_library(lib, query, k, filters) for lib in libs]
        ids = np.concatenate([f.ids for f in found])
        if ids.size == 0:
            return []
        vectors = np.concatenate([f.vectors for f in found])
        scores = vectors @ query if vectors.shape[0] else np.zeros(0, dtype=np.float32)
        best = _top(scores, k)
        with self._reader.reading() as db:
            records = records_by_id(db, ids[best].tolist())
        hits = []
        for i in best:
            rec = records.get(int(ids[i]))
            if rec is not None:  # deleted since the vectors were read
                rec.vector = vectors[i].copy()
                hits.append(ChunkHit(rec, float(np.clip(scores[i], 0.0, 1.0))))
        return hits

    def _search_library(
        self, lib: int, query: np.ndarray, k: int, filters: ChunkFilters
    ) -> _Matrix:
        """The library's best ``k`` (at most) with their exact float32 vectors."""
        library = self._library(lib)
        with self._reader.reading() as db:
            allowed = allowed_ids(db, lib, filters)
        parts = [_best_of(library.tail, query, k, allowed, self._similarities)]
        if library.base is not None:
            parts.append(self._search_base(library, query, k, allowed))
        return _Matrix(
            np.concatenate([p.ids for p in parts]), np.concatenate([p.vectors for p in parts])
        )

    def _search_base(
        self, library: _Library, query: np.ndarray, k: int, allowed: np.ndarray | None
    ) -> _Matrix:
        """The file's best ``k`` in scope, less the rows changed since, with their exact
        float32 vectors from SQLite: candidates from the lists nearest the query by their
        4-bit codes (or every allowed row, when a filter leaves few), ranked by their 8-bit
        codes, the best few re-scored exactly."""
        base = library.base
        assert base is not None
        codes = base.codes
        if allowed is not None and allowed.size <= ANN_MIN_ROWS:
            keys = allowed
        else:
            lists = int(base.view.nlist)
            probes = min(lists, max(probes_for(lists), MIN_PROBES))
            wanted = min(CANDIDATES, base.row.count)
            chosen = _selector(allowed)
            while True:
                keys = _probe(base.view, query, wanted, probes, chosen)
                if keys.size < wanted or (~np.isin(keys, library.gone)).sum() >= k:
                    break
                wanted = min(wanted * 4, base.row.count)  # most were changed since
        # the rows the file holds unchanged (the tail has the others)
        keys = keys[~np.isin(keys, library.gone) & ~np.isin(keys, library.tail.ids)]
        estimates = codes.scores(keys, query)
        best = keys[_top(estimates, max(RESCORED, k))]
        return _best_of(self._read_vectors(best), query, k, None, self._similarities)

    def vectors_of(self, ids: list[int]) -> dict[int, np.ndarray]:
        """The float32 vectors of these row ids (those still there): from the matrices this
        process holds (a library searched exactly holds all its rows) without a read, the
        rest from SQLite. (A row's vector never changes: a replaced chunk gets a new id.)"""
        wanted = np.asarray(ids, dtype=np.int64)
        found: dict[int, np.ndarray] = {}
        with self._following():  # as a search would: never a matrix of before a rebuild
            matrices = [library.tail for library in self._libraries.values()]
        for matrix in matrices:
            held, rows = matrix.rows_of(wanted)
            found.update(zip(wanted[held].tolist(), matrix.vectors[rows], strict=True))
            wanted = wanted[~held]
        if wanted.size:
            rest = self._read_vectors(wanted)
            found.update(zip(rest.ids.tolist(), rest.vectors, strict=True))
        return found

    def _read_vectors(self, ids: np.ndarray) -> _Matrix:
        """The float32 vectors of ``ids`` from SQLite (those still there)."""
        dims = self._dims()
        found: dict[int, bytes] = {}
        with self._reader.reading() as db:
            for start in range(0, ids.size, 500):  # SQLite's bound on variables
                part = ids[start : start + 500].tolist()
                marks = ",".join("?" * len(part))
                found.update(
                    db.execute(f"SELECT id, vector FROM vectors WHERE id IN ({marks})", part)
                )
        order = [i for i in ids.tolist() if i in found]
        vectors = np.frombuffer(b"".join(found[i] for i in order), dtype=np.float32)
        return _Matrix(np.array(order, dtype=np.int64), vectors.reshape(-1, dims))

    def _similarities(self, vectors: np.ndarray, query: np.ndarray) -> np.ndarray:
        """``vectors @ query``; a large matrix in parts on the read threads.

        Not OpenBLAS's own threads: they spin on the cores for a while after each product,
        which slowed the keyword side of a hybrid search running beside it by a fifth.
        """
        if vectors.shape[0] == 0:
            return np.zeros(0, dtype=np.float32)
        parts = sqlite_query.id_ranges(0, vectors.shape[0] - 1, self._reader.read_workers())
        if len(parts) == 1:
            return vectors @ query
        found = self._reader.read_pool().map(
            lambda part: np.einsum("ij,j->i", vectors[part[0] : part[1] + 1], query), parts
        )
        return np.concatenate(list(found))

    # -- keeping up with other processes -----------------------------------------------
    def _library(self, lib: int) -> _Library:
        """The library as searched now, brought up to date with what is committed."""
        with self._following() as db:
            library = self._libraries.get(lib)
            if library is None:
                library = self._open_library(db, lib)
                self._libraries[lib] = library
            return library

    @contextlib.contextmanager
    def _following(self) -> Iterator[sqlite3.Connection]:
        """This process's libraries brought up to date with what is committed, under the
        lock, and the snapshot they were brought to, for the reads after it."""
        with self._lock, self._reader.reading() as db:
            db.execute("BEGIN")  # one snapshot for the look at the log and the reads after it
            try:
                self._follow_changes(db)
                yield db
            finally:
                db.execute("COMMIT")

    def _follow_changes(self, db: sqlite3.Connection) -> None:
        """Apply what other connections committed since the last look (cheap when nothing)."""
        seqs = dict(db.execute(SEQS).fetchall())
        epoch = db.execute("SELECT value FROM meta WHERE key = 'epoch'").fetchone()
        now = (int(seqs.get("chunks", 0)), int(seqs.get("changes", 0)), epoch[0] if epoch else "")
        seen, self._seen = self._seen, now
        if seen is not None and seen[2] != now[2]:  # rebuilt (--force-ingest): start over
            self._libraries.clear()
            self._on_rebuilt()
            return
        if self._libraries:  # a file written since (an ingest's last step): opened anew
            rows = _file_rows(db)
            for lib in [lib for lib, lb in self._libraries.items() if lb.row != rows.get(lib)]:
                del self._libraries[lib]
        if seen is None or seen == now or not self._libraries:
            return
        oldest = db.execute("SELECT min(seq) FROM changes").fetchone()[0]
        if now[1] > seen[1] and (oldest if oldest is not None else now[1] + 1) > seen[1] + 1:
            self._libraries.clear()  # the log was trimmed past what we saw: reload
            return
        changed = np.array(
            [r[0] for r in db.execute("SELECT id FROM changes WHERE seq > ?", (seen[1],))],
            dtype=np.int64,
        )
        for lib, library in self._libraries.items():
            tail = library.tail
            keep = ~np.isin(tail.ids, changed) if changed.size else slice(None)
            fresh = self._load(db, lib, _SINCE, (seen[0], seen[1]))
            library.tail = _Matrix(
                np.concatenate([tail.ids[keep], fresh.ids]),
                np.concatenate([tail.vectors[keep], fresh.vectors]),
            )
            if library.base is not None and changed.size:
                library.gone = np.union1d(library.gone, changed)

    def _open_library(self, db: sqlite3.Connection, lib: int) -> _Library:
        """Open the library's file if it can be trusted; load what it lacks."""
        row = _file_rows(db).get(lib)
        base = self._open_base(db, row) if row is not None else None
        if base is None:
            return _Library(None, row, self._load(db, lib))
        covered = (base.row.chunk_seq, base.row.change_seq)
        gone = [r[0] for r in db.execute("SELECT id FROM changes WHERE seq > ?", covered[1:])]
        return _Library(
            base, row, self._load(db, lib, _SINCE, covered), np.unique(np.array(gone, np.int64))
        )

    def _open_base(self, db: sqlite3.Connection, row: _FileRow) -> _Base | None:
        """The recorded file, read, if it is what was recorded (else None, said)."""
        base, why = self._check_base(db, row)
        key = (row.lib, row.file)
        if base is None and key not in self._warned:
            self._warned.add(key)
            log.warning(
                "The vector index file %s does not match the database (%s); searching "
                "exactly until `holodeck ingest` rebuilds it",
                row.file,
                why,
            )
        return base

    def _check_base(self, db: sqlite3.Connection, row: _FileRow) -> tuple[_Base | None, str]:
        """The recorded file, read, or None and why it cannot be trusted."""
        assert self._folder is not None
        path = self._folder / row.file
        if row.file.endswith(OLD_SUFFIXES):
            why = "an earlier version's kind of file"
        elif path.is_file() and not sqlite_codes.path_of(path).exists():
            why = "an earlier version's kind of file (no 8-bit codes beside it)"
        else:
            why = out_of_reach(db, row.chunk_seq, row.change_seq)
        if not why:
            try:
                view = _open_view(path)
                codes = sqlite_codes.read(sqlite_codes.path_of(path), self._dims())
            except (OSError, ValueError, RuntimeError) as exc:
                why = f"it cannot be read ({str(exc).strip().splitlines()[-1]})"
            else:
                if view.ntotal != row.count:
                    why = f"it holds {view.ntotal:,} vectors, the database says {row.count:,}"
                elif codes.ids.size != row.count:
                    why = f"its codes hold {codes.ids.size:,} vectors, not {row.count:,}"
                else:
                    return _Base(row, view, codes), ""
        return None, why

    def _load(
        self, db: sqlite3.Connection, lib: int, where: str = "", args: tuple[Any, ...] = ()
    ) -> _Matrix:
        """Read vectors of one library into a preallocated matrix (no per-row copies kept).
        Counted on the chunks' index (one row per vector) so the vectors are read once."""
        dims = self._dims()
        count = f"SELECT count(*) FROM chunks WHERE lib = ? {where}"
        n = db.execute(count, (lib, *args)).fetchone()[0]
        ids = np.empty(n, dtype=np.int64)
        vectors = np.empty((n, dims), dtype=np.float32)
        end = 0
        for block in _blocks(
            db, f"SELECT id, vector FROM vectors WHERE lib = ? {where}", (lib, *args), n
        ):
            start, end = end, end + len(block)
            ids[start:end] = [row_id for row_id, _ in block]
            data = b"".join(blob for _, blob in block)
            vectors[start:end] = np.frombuffer(data, dtype=np.float32).reshape(-1, dims)
        return _Matrix(ids[:end], vectors[:end])

    # -- the writer's upkeep -------------------------------------------------------------
    def upkeep(self, writing: Callable[[], AbstractContextManager[sqlite3.Connection]]) -> None:
        """Bring each library's file in step with the chunks: build it once a library is
        large, rewrite it once it lacks many rows, drop it once the library is small again,
        and remove stray files. The caller holds the index's write lock (an ingest's end)."""
        if self._folder is None:
            return
        plans = in_snapshot(self._reader, self._plan_upkeep)
        for lib, action in plans:
            if action == "drop":
                with writing() as db:
                    db.execute("DELETE FROM vector_files WHERE lib = ?", (lib,))
            else:
                self._write_file(lib, writing, patch=action == "patch")
        self._remove_strays()

    def _plan_upkeep(self, db: sqlite3.Connection) -> list[tuple[int, str]]:
        """What each library's file needs: ``build``, ``patch`` or ``drop`` (none: nothing)."""
        rows = _file_rows(db)
        plans = []
        for (lib,) in db.execute("SELECT id FROM libraries").fetchall():
            row = rows.get(lib)
            if row is None:
                n = db.execute("SELECT count(*) FROM chunks WHERE lib = ?", (lib,)).fetchone()[0]
                if n >= ANN_MIN_ROWS:
                    plans.append((lib, "build"))
                continue
            base, why = self._check_base(db, row)
            if base is None:
                log.warning("Rebuilding the vector index file %s: %s", row.file, why)
                plans.append((lib, "build"))
                continue
            added = db.execute(
                f"SELECT count(*) FROM chunks WHERE lib = ? {_SINCE}",
                (lib, row.chunk_seq, row.change_seq),
            ).fetchone()[0]
            changed = db.execute(
                "SELECT count(*) FROM changes WHERE seq > ?", (row.change_seq,)
            ).fetchone()[0]
            size = row.count + added - changed
            if size < ANN_MIN_ROWS // 2:
                plans.append((lib, "drop"))
            elif added + changed >= max(PATCH_MIN_ROWS, row.count * PATCH_SHARE):
                share = (row.removed + changed) / max(row.count, 1)
                rebuild = share > REBUILD_REMOVED_SHARE or not _fits(base.view, size)
                plans.append((lib, "build" if rebuild else "patch"))
        return plans

    def _write_file(
        self,
        lib: int,
        writing: Callable[[], AbstractContextManager[sqlite3.Connection]],
        patch: bool,
    ) -> None:
        """Write the library's file anew (or patched from the current one), then record it."""
        assert self._folder is not None
        name = f"{FILE_PREFIX}{lib}-{uuid.uuid4().hex[:12]}{FILE_SUFFIX}"
        with self._reader.reading() as db:
            db.execute("BEGIN")  # what the file covers, and the rows read, from one snapshot
            try:
                old = _file_rows(db).get(lib)
                seqs = dict(db.execute(SEQS).fetchall())
                where: str = ""
                args: tuple[Any, ...] = ()
                assigning: AbstractContextManager[None] = contextlib.nullcontext()
                if patch and old is not None:
                    index, removed, kept = self._patched(db, old)
                    where, args = _SINCE, (old.chunk_seq, old.change_seq)
                else:
                    index, lists, scale = self._trained(db, lib)
                    removed, kept = 0, sqlite_codes.Codes.empty(scale)
                    assigning = lists.assigning(index)
                with assigning:
                    ids, codes = self._add_rows(db, index, lib, where, args, kept.scale)
            finally:
                db.execute("COMMIT")
        ids = np.concatenate([kept.ids, ids])
        codes = np.concatenate([kept.codes.reshape(-1, index.d), codes])
        if ids.size > 1 and not bool(np.all(ids[1:] > ids[:-1])):  # a patch re-added old ids
            order = np.argsort(ids)
            ids, codes = ids[order], codes[order]
        code_name = sqlite_codes.path_of(self._folder / name).name
        save_whole(
            lambda path: sqlite_codes.write(path, kept.scale, ids, codes), self._folder, code_name
        )
        _save_whole(index, self._folder, name)
        with writing() as db:  # the file is whole on disk before the database names it
            db.execute(
                "INSERT OR REPLACE INTO vector_files VALUES (?, ?, ?, ?, ?, ?)",
                (
                    lib, name, int(seqs.get("chunks", 0)), int(seqs.get("changes", 0)),
                    index.ntotal, removed,
                ),
            )  # fmt: skip
        log.debug("Wrote %s: %d vectors (%s)", name, index.ntotal, "patched" if patch else "built")

    def _trained(
        self, db: sqlite3.Connection, lib: int
    ) -> tuple[Any, sqlite_lists.Lists, sqlite_codes.Scale]:
        """An empty inverted file whose lists k-means drew from an even sample of the
        library's vectors (every n-th row, read in one pass without the others' vectors),
        those lists (which assign the rows added next), and the 8-bit codes' scale drawn
        from the same sample."""
        n = db.execute("SELECT count(*) FROM chunks WHERE lib = ?", (lib,)).fetchone()[0]
        lists = lists_for(n)
        step = max(1, n // (lists * TRAIN_PER_LIST))
        sample = self._load(db, lib, "AND id % ? = 0", (step,)).vectors
        if sample.shape[0] < lists:  # ids with gaps on the step: take every row instead
            sample = self._load(db, lib).vectors
        index = new_index(self._dims(), lists)
        count = f"{sample.shape[0]:,}"
        log.info(
            "Drawing the %s lists of library %d's vector index from %s vectors", lists, lib, count
        )
        drawn = sqlite_lists.draw(sample, lists, KMEANS_ROUNDS)
        index.quantizer.add(drawn.centres)
        with drawn.assigning(index):
            index.train(sample)  # its lists are drawn: faiss trains the 4-bit codes only
        if not index.is_trained:
            raise RuntimeError(f"faiss could not train {lists} lists on {sample.shape[0]} vectors")
        return index, drawn, sqlite_codes.Scale.of(sample)

    def _patched(
        self, db: sqlite3.Connection, old: _FileRow
    ) -> tuple[Any, int, sqlite_codes.Codes]:
        """The library's current file loaded whole, without the rows changed since; how
        many entries were removed from it since it was built; and its codes, less the same
        rows."""
        import faiss

        assert self._folder is not None
        index = faiss.read_index(str(self._folder / old.file))
        codes = sqlite_codes.read(sqlite_codes.path_of(self._folder / old.file), index.d)
        sql = "SELECT id FROM changes WHERE seq > ?"
        changed = np.array([r[0] for r in db.execute(sql, (old.change_seq,))], dtype=np.int64)
        removed = int(index.remove_ids(faiss.IDSelectorBatch(changed))) if changed.size else 0
        keep = ~np.isin(codes.ids, changed)
        kept = sqlite_codes.Codes(codes.scale, codes.ids[keep], codes.codes[keep])
        return index, old.removed + removed, kept

    def _add_rows(
        self,
        db: sqlite3.Connection,
        index: Any,
        lib: int,
        where: str,
        args: tuple[Any, ...],
        scale: sqlite_codes.Scale,
    ) -> tuple[np.ndarray, np.ndarray]:
        """Add the library's rows matching ``where`` to ``index``, with progress; their ids
        and 8-bit codes."""
        found: list[tuple[np.ndarray, np.ndarray]] = []
        sql = f"SELECT count(*) FROM chunks WHERE lib = ? {where}"
        n = db.execute(sql, (lib, *args)).fetchone()[0]
        sql = f"SELECT id, vector FROM vectors WHERE lib = ? {where}"
        with build_progress(f"vector index of library {lib}", n, ANN_MIN_ROWS) as advance:
            for block in _blocks(db, sql, (lib, *args), n, BUILD_ROWS):
                keys = np.array([row_id for row_id, _ in block], dtype=np.int64)
                data = b"".join(blob for _, blob in block)
                vectors = np.frombuffer(data, dtype=np.float32).reshape(len(block), -1)
                index.add_with_ids(vectors, keys)
                found.append((keys, scale.encode(vectors)))
                advance(len(block))
        if not found:
            return np.zeros(0, np.int64), np.zeros((0, index.d), np.uint8)
        return np.concatenate([f[0] for f in found]), np.concatenate([f[1] for f in found])

    def _remove_strays(self) -> None:
        """Delete the files no row names: replaced ones, and what a kill left."""
        assert self._folder is not None
        with self._reader.reading() as db:
            named = {row.file for row in _file_rows(db).values()}
        named |= {sqlite_codes.path_of(self._folder / name).name for name in named}
        for suffix in (FILE_SUFFIX, FILE_SUFFIX + sqlite_codes.SUFFIX, *OLD_SUFFIXES):
            remove_strays(self._folder, FILE_PREFIX, suffix, named)

    def file_names(self) -> dict[int, str]:
        """The file of each library that has one (for ``store info``)."""
        with self._reader.reading() as db:
            return {lib: row.file for lib, row in _file_rows(db).items()}


def _file_rows(db: sqlite3.Connection) -> dict[int, _FileRow]:
    return {row[0]: _FileRow(*row) for row in db.execute(_FILES)}


def lists_for(rows: int) -> int:
    """The lists of a library of ``rows`` vectors: the power of two nearest
    ``rows / ROWS_PER_LIST`` (at least 1)."""
    return 1 << max(0, round(math.log2(max(rows / ROWS_PER_LIST, 1))))


def probes_for(lists: int) -> int:
    """How many of a file's ``lists`` a search reads."""
    return max(1, math.ceil(math.sqrt(PROBE_FACTOR * lists)))


def new_index(dims: int, lists: int) -> Any:
    """An untrained inverted file: ``lists`` lists, inner product (cosine on the unit
    vectors the store holds), each vector kept relative to its list's centre as
    ``code_parts(dims)`` 4-bit product-quantiser codes, which faiss scans in SIMD blocks."""
    import faiss  # only a large library pays for the import

    index = faiss.IndexIVFPQFastScan(
        faiss.IndexFlatIP(dims), dims, lists, code_parts(dims), CODE_BITS,
        faiss.METRIC_INNER_PRODUCT,
    )  # fmt: skip
    index.pq.cp.min_points_per_centroid = 1  # the sample is chosen small on purpose: no warning
    return index


def code_parts(dims: int) -> int:
    """The product quantiser's parts: one per ``DIMS_PER_PART`` dimensions (a divisor of
    ``dims``: fewer dimensions a part when they do not divide evenly)."""
    per = next(p for p in range(DIMS_PER_PART, 0, -1) if dims % p == 0)
    return dims // per


def _fits(index: Any, rows: int) -> bool:
    """Whether a file is of this version's kind and its lists still suit a library of
    ``rows`` (else its next rewrite is a rebuild, not a patch)."""
    import faiss

    if not isinstance(index, faiss.IndexIVFPQFastScan):
        return False
    if code_parts(index.d) != index.pq.M or index.pq.nbits != CODE_BITS:
        return False
    ratio = lists_for(rows) / index.nlist
    return 1 / RELIST_FACTOR < ratio < RELIST_FACTOR


def _save_whole(index: Any, folder: Path, name: str) -> None:
    """Save ``index`` as ``folder/name`` whole or not at all."""
    import faiss

    save_whole(lambda path: faiss.write_index(index, path), folder, name)


def _open_view(path: Path) -> Any:
    """The inverted file at ``path`` (faiss refuses a file cut short anywhere). Lists of
    int8 vectors (an earlier file) are memory-mapped; fast-scan lists faiss reads whole, 48
    bytes a 384-dim vector."""
    import faiss

    if not path.is_file():
        raise FileNotFoundError(f"{path.name} is missing")
    view = faiss.read_index(str(path), faiss.IO_FLAG_MMAP)
    if not isinstance(view, faiss.IndexIVF):
        raise ValueError("not an inverted file")
    return view


def _probe(view: Any, query: np.ndarray, wanted: int, probes: int, chosen: Any) -> np.ndarray:
    """The ids of the ``wanted`` best entries (or fewer) in the ``probes`` lists nearest to
    ``query``, among the ``chosen`` ids (None: all)."""
    import faiss

    params = faiss.SearchParametersIVF()
    params.nprobe = probes
    if chosen is not None:
        params.sel = chosen
    _, ids = view.search(np.ascontiguousarray(query[None, :]), wanted, params=params)
    found = ids[0]
    return found[found >= 0].astype(np.int64)


def _selector(allowed: np.ndarray | None) -> Any:
    """faiss's filter for the ``allowed`` ids (None: no filter)."""
    if allowed is None:
        return None
    import faiss

    return faiss.IDSelectorBatch(np.ascontiguousarray(allowed, dtype=np.int64))


def _blocks(
    db: sqlite3.Connection, sql: str, args: tuple[Any, ...], n: int, rows: int = LOAD_ROWS
) -> Iterator[list[tuple[int, bytes]]]:
    """The rows of ``sql`` (at most ``n``) in blocks, read through a memory map (no read
    call per page), unmapped after: the mapped pages would stay counted in the process's
    memory beside the matrix."""
    db.execute(f"PRAGMA mmap_size = {LOAD_MMAP_BYTES}")
    try:
        cursor = db.execute(sql, args)
        done = 0
        while done < n:
            block = cursor.fetchmany(min(rows, n - done))
            if not block:
                break
            done += len(block)
            yield block
        cursor.close()
    finally:
        db.execute("PRAGMA mmap_size = 0")


def _best_of(
    matrix: _Matrix,
    query: np.ndarray,
    k: int,
    allowed: np.ndarray | None,
    similarities: Callable[[np.ndarray, np.ndarray], np.ndarray],
) -> _Matrix:
    """The ``k`` rows of ``matrix`` (among ``allowed`` ids) nearest to ``query``."""
    rows = np.arange(matrix.ids.size)
    if allowed is not None:
        rows = rows[np.isin(matrix.ids, allowed)]
    if rows.size == 0:
        return _Matrix(np.zeros(0, np.int64), np.zeros((0, matrix.vectors.shape[1]), np.float32))
    vectors = matrix.vectors[rows] if allowed is not None else matrix.vectors
    top = _top(similarities(vectors, query), k)
    return _Matrix(matrix.ids[rows[top]], matrix.vectors[rows[top]])


def _top(scores: np.ndarray, k: int) -> np.ndarray:
    """Positions of the ``k`` best scores, best first (ties: the earlier row first)."""
    cut = np.argpartition(-scores, k - 1)[:k] if scores.size > k else np.arange(scores.size)
    return cut[np.lexsort((cut, -scores[cut]))]
