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
its chunks first; its last step (``vector_upkeep``, under the index's lock) writes a new file
under a new name, then records the file and the point of the ``changes`` log it covers in
``vector_files`` (one small transaction), then deletes the old file. A kill at any point leaves
either the old file recorded or the new one, and stray files are removed by the next upkeep.
Whatever the file lacks (rows committed after it, rows deleted or moved since) a search
takes from SQLite exactly: the file's results minus the rows changed since, plus an exact
scan of the rows added since. A file or its codes missing, changed since they were written
(their seals: ``side_files``), unreadable or holding another count than recorded is never
trusted: searches go exact and say so, and the next upkeep rebuilds both with a progress bar.

This module holds the search; the file is written by ``vector_upkeep``, named and
checked by ``vector_file``, and vectors are read out of SQLite into a ``matrix``.
"""

from __future__ import annotations

import contextlib
import logging
import math
import sqlite3
import threading
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from holodeck.vectorstore.records import ChunkFilters, ChunkHit
from holodeck.vectorstore.sqlite import query as sqlite_query
from holodeck.vectorstore.sqlite import vector_upkeep as sqlite_vector_upkeep
from holodeck.vectorstore.sqlite.matrix import Matrix, load
from holodeck.vectorstore.sqlite.query import (
    Reader,
    allowed_ids,
    records_by_id,
    scope_libs,
)
from holodeck.vectorstore.sqlite.side_files import SEQS
from holodeck.vectorstore.sqlite.vector_file import SINCE, Base, FileRow, check_base, file_rows

log = logging.getLogger("holodeck.vectorstore")

#: A search reads sqrt(PROBE_FACTOR x lists) lists: more lists, better recall, slower search
#: (see benchmarks/README.md, 'Speed and scale').
PROBE_FACTOR = 16
#: A search reads at least this many lists (every list of a file of up to 1,024).
MIN_PROBES = 1024
#: Candidates taken from the lists by their 4-bit codes and ranked by their 8-bit codes
#: (``codes``); the best RESCORED of those (at least ``k``) are re-scored exactly.
CANDIDATES = 3000
RESCORED = 40
#: A cut at CANDIDATES is unsure when the 10th best 8-bit estimate stands less than this
#: many deviations of the 4-bit codes' error above the last candidate's 4-bit estimate (a
#: query near nothing the library holds: its scores are flat); the search then takes twice
#: the candidates, once (chosen on bench_ivf_rescoring's file and queries; see
#: benchmarks/README.md, "An unsure cut takes more candidates").
UNSURE_CUT = 4.5
#: ... measured at this rank (or ``k``, when fewer are asked): the best ten are what a search
#: must get exactly; a deeper list (hybrid's candidates) is ranked again by the fusion.
UNSURE_RANK = 10


@dataclass
class _Library:
    """What one process searches for one library: the file (if any and trusted), the rows
    it lacks in memory (``tail``) and the ids it holds that changed since (``gone``)."""

    base: Base | None
    row: FileRow | None  # the row the library was opened with (even when not trusted)
    tail: Matrix
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
        self._upkeep = sqlite_vector_upkeep.VectorUpkeep(reader, dims, folder)

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
        chosen = ids[best].tolist()
        with self._reader.reading() as db:
            records = records_by_id(db, chosen)
        found = vectors[best]  # a copy: each record keeps its own row
        clipped = np.clip(scores[best], 0.0, 1.0).tolist()
        hits = []
        for row, (row_id, score) in enumerate(zip(chosen, clipped, strict=True)):
            rec = records.get(row_id)
            if rec is not None:  # deleted since the vectors were read
                rec.vector = found[row]
                hits.append(ChunkHit(rec, score))
        return hits

    def _search_library(self, lib: int, query: np.ndarray, k: int, filters: ChunkFilters) -> Matrix:
        """The library's best ``k`` (at most) with their exact float32 vectors."""
        library = self._library(lib)
        with self._reader.reading() as db:
            allowed = allowed_ids(db, lib, filters)
        parts = [_best_of(library.tail, query, k, allowed, self._similarities)]
        if library.base is not None:
            parts.append(self._search_base(library, query, k, allowed))
        return Matrix(
            np.concatenate([p.ids for p in parts]), np.concatenate([p.vectors for p in parts])
        )

    def _search_base(
        self, library: _Library, query: np.ndarray, k: int, allowed: np.ndarray | None
    ) -> Matrix:
        """The file's best ``k`` in scope, less the rows changed since, with their exact
        float32 vectors from SQLite: the candidates (``_candidates``) ranked by their 8-bit
        codes, the best few re-scored exactly."""
        keys, estimates = self._candidates(library, query, k, allowed)
        best = keys[_top(estimates, max(RESCORED, k))]
        return _best_of(self._read_vectors(best), query, k, None, self._similarities)

    @staticmethod
    def _candidates(
        library: _Library, query: np.ndarray, k: int, allowed: np.ndarray | None
    ) -> tuple[np.ndarray, np.ndarray]:
        """The rows of the file a search ranks (in scope, unchanged since: the tail has the
        others) and their 8-bit estimates: every allowed row when a filter leaves few, else
        the CANDIDATES best by their 4-bit codes in the lists nearest the query; more when
        most of those were changed since, and twice as many, once, when the cut is unsure
        (``_unsure``)."""
        base = library.base
        assert base is not None

        def unchanged(ids: np.ndarray) -> np.ndarray:
            return ~np.isin(ids, library.gone) & ~np.isin(ids, library.tail.ids)

        if allowed is not None and allowed.size <= sqlite_vector_upkeep.ANN_MIN_ROWS:
            keys = allowed[unchanged(allowed)]
            return keys, base.codes.scores(keys, query)
        lists = int(base.view.nlist)
        probes = min(lists, max(probes_for(lists), MIN_PROBES))
        wanted = min(CANDIDATES, base.row.count)
        chosen = _selector(allowed)
        widened = False
        while True:
            found, rough = _probe(base.view, query, wanted, probes, chosen)
            more = found.size >= wanted and wanted < base.row.count  # a cut that can widen
            if more and (~np.isin(found, library.gone)).sum() < k:
                wanted = min(wanted * 4, base.row.count)  # most were changed since
                continue
            kept = unchanged(found)
            keys, estimates = found[kept], base.codes.scores(found[kept], query)
            if widened or not more or not _unsure(rough[kept], estimates, min(k, UNSURE_RANK)):
                return keys, estimates
            widened, wanted = True, min(wanted * 2, base.row.count)

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

    def _read_vectors(self, ids: np.ndarray) -> Matrix:
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
        return Matrix(np.array(order, dtype=np.int64), vectors.reshape(-1, dims))

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
            base = None if library is None else library.base
            if base is not None and self._folder is not None and not base.unchanged(self._folder):
                library = None  # written to since it was found sound: checked again
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
            rows = file_rows(db)
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
            fresh = load(db, lib, self._dims(), SINCE, (seen[0], seen[1]))
            library.tail = Matrix(
                np.concatenate([tail.ids[keep], fresh.ids]),
                np.concatenate([tail.vectors[keep], fresh.vectors]),
            )
            if library.base is not None and changed.size:
                library.gone = np.union1d(library.gone, changed)

    def _open_library(self, db: sqlite3.Connection, lib: int) -> _Library:
        """Open the library's file if it can be trusted; load what it lacks."""
        row = file_rows(db).get(lib)
        base = self._open_base(db, row) if row is not None else None
        if base is None:
            return _Library(None, row, load(db, lib, self._dims()))
        covered = (base.row.chunk_seq, base.row.change_seq)
        gone = [r[0] for r in db.execute("SELECT id FROM changes WHERE seq > ?", covered[1:])]
        return _Library(
            base,
            row,
            load(db, lib, self._dims(), SINCE, covered),
            np.unique(np.array(gone, np.int64)),
        )

    def _open_base(self, db: sqlite3.Connection, row: FileRow) -> Base | None:
        """The recorded file, read, if it is what was recorded (else None, said)."""
        base, why = check_base(db, self._folder, row, self._dims)
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

    # -- the writer's upkeep -------------------------------------------------------------
    def upkeep(self, writing: Callable[[], AbstractContextManager[sqlite3.Connection]]) -> None:
        """Bring each library's file in step with the chunks (``VectorUpkeep.upkeep``)."""
        self._upkeep.upkeep(writing)

    def file_in_use(self, lib: int) -> str | None:
        """The library's file if its searches use it: recorded and trusted, checked as a
        search checks it (for ``store info``)."""
        with self._lock:
            library = self._libraries.get(lib)
        if library is not None:
            return None if library.base is None else library.base.row.file
        with self._reader.reading() as db:
            row = file_rows(db).get(lib)
            base = None if row is None else self._open_base(db, row)
        return None if base is None else base.row.file


def probes_for(lists: int) -> int:
    """How many of a file's ``lists`` a search reads."""
    return max(1, math.ceil(math.sqrt(PROBE_FACTOR * lists)))


def _probe(
    view: Any, query: np.ndarray, wanted: int, probes: int, chosen: Any
) -> tuple[np.ndarray, np.ndarray]:
    """The ids of the ``wanted`` best entries (or fewer) in the ``probes`` lists nearest to
    ``query``, among the ``chosen`` ids (None: all), and their 4-bit estimates, best first."""
    import faiss

    params = faiss.SearchParametersIVF()
    params.nprobe = probes
    if chosen is not None:
        params.sel = chosen
    rough, ids = view.search(np.ascontiguousarray(query[None, :]), wanted, params=params)
    found = ids[0] >= 0
    return ids[0][found].astype(np.int64), rough[0][found]


def _unsure(rough: np.ndarray, estimates: np.ndarray, k: int) -> bool:
    """Whether a cut of the candidates by their 4-bit estimates (``rough``, best first) may
    have left out one of the best ``k``: the ``k``-th best 8-bit estimate stands less than
    ``UNSURE_CUT`` deviations of the 4-bit error (their difference, on these candidates)
    above the last candidate's 4-bit estimate."""
    if estimates.size <= k:
        return False
    error = float(np.std(rough - estimates))
    kth = float(np.partition(estimates, estimates.size - k)[estimates.size - k])
    return error > 0 and kth - float(rough[-1]) < UNSURE_CUT * error


def _selector(allowed: np.ndarray | None) -> Any:
    """faiss's filter for the ``allowed`` ids (None: no filter)."""
    if allowed is None:
        return None
    import faiss

    return faiss.IDSelectorBatch(np.ascontiguousarray(allowed, dtype=np.int64))


def _best_of(
    matrix: Matrix,
    query: np.ndarray,
    k: int,
    allowed: np.ndarray | None,
    similarities: Callable[[np.ndarray, np.ndarray], np.ndarray],
) -> Matrix:
    """The ``k`` rows of ``matrix`` (among ``allowed`` ids) nearest to ``query``."""
    rows = np.arange(matrix.ids.size)
    if allowed is not None:
        rows = rows[np.isin(matrix.ids, allowed)]
    if rows.size == 0:
        return Matrix(np.zeros(0, np.int64), np.zeros((0, matrix.vectors.shape[1]), np.float32))
    vectors = matrix.vectors[rows] if allowed is not None else matrix.vectors
    top = _top(similarities(vectors, query), k)
    return Matrix(matrix.ids[rows[top]], matrix.vectors[rows[top]])


def _top(scores: np.ndarray, k: int) -> np.ndarray:
    """Positions of the ``k`` best scores, best first (ties: the earlier row first)."""
    cut = np.argpartition(-scores, k - 1)[:k] if scores.size > k else np.arange(scores.size)
    return cut[np.lexsort((cut, -scores[cut]))]
