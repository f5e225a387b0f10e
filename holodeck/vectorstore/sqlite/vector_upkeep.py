"""The writer's upkeep of the vector index files: which library's file to build, patch,
drop or stamp anew, and writing it (lists drawn by k-means, then every row's 4-bit and 8-bit
codes) whole on disk, sealed, before the database names it. Apart from the search
(``vectors``): only an ingest's last step writes files, while every process that searches
opens them.
"""

from __future__ import annotations

import contextlib
import logging
import math
import sqlite3
import uuid
from collections.abc import Callable
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any

import numpy as np

from holodeck.vectorstore.progress import build_progress
from holodeck.vectorstore.sqlite import codes as sqlite_codes
from holodeck.vectorstore.sqlite import lists as sqlite_lists
from holodeck.vectorstore.sqlite.matrix import blocks, load
from holodeck.vectorstore.sqlite.query import Reader, in_snapshot
from holodeck.vectorstore.sqlite.side_files import SEQS, Seal, remove_strays, save_whole
from holodeck.vectorstore.sqlite.vector_file import (
    FILE_PREFIX,
    FILE_SUFFIX,
    OLD_SUFFIXES,
    SINCE,
    Base,
    FileRow,
    check_base,
    file_rows,
)

log = logging.getLogger("holodeck.vectorstore")

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
#: A file whose library has grown or shrunk so far that the right number of lists is this
#: many times the file's (or a fraction as small) is rebuilt instead of patched.
RELIST_FACTOR = 4
#: Vectors added to a file per call while it is built (progress moves after each).
BUILD_ROWS = 16384


class VectorUpkeep:
    """Keeps the vector index files of one SQLite index in step with its chunks.

    ``dims`` gives the index's vector length; ``folder`` is where the files live (None:
    exact search only, no files).
    """

    def __init__(self, reader: Reader, dims: Callable[[], int], folder: Path | None) -> None:
        self._reader = reader
        self._dims = dims
        self._folder = folder

    def upkeep(self, writing: Callable[[], AbstractContextManager[sqlite3.Connection]]) -> None:
        """Bring each library's file in step with the chunks: build it once a library is
        large, rewrite it once it lacks many rows, drop it once the library is small again,
        and remove stray files. The caller holds the index's write lock (an ingest's end)."""
        if self._folder is None:
            return
        plans = in_snapshot(self._reader, self._plan_upkeep)
        for lib, action, base in plans:
            if action == "drop":
                with writing() as db:
                    db.execute("DELETE FROM vector_files WHERE lib = ?", (lib,))
            elif action == "restamp":
                assert base is not None
                with writing() as db:  # the same bytes, stamped anew (a copy, a restore)
                    db.execute(
                        "UPDATE vector_files SET stamp = coalesce(?, stamp), "
                        "codes_stamp = coalesce(?, codes_stamp) WHERE lib = ? AND file = ?",
                        (*base.restamps, lib, base.row.file),
                    )
            else:
                self._write_file(lib, writing, patch=action == "patch")
        self._remove_strays()

    def _plan_upkeep(self, db: sqlite3.Connection) -> list[tuple[int, str, Base | None]]:
        """What each library's file needs: ``build``, ``patch``, ``drop`` or ``restamp``
        (its bytes sound, its stamp changed), with the file as checked (none: nothing)."""
        rows = file_rows(db)
        plans: list[tuple[int, str, Base | None]] = []
        for (lib,) in db.execute("SELECT id FROM libraries").fetchall():
            row = rows.get(lib)
            n = db.execute("SELECT count(*) FROM chunks WHERE lib = ?", (lib,)).fetchone()[0]
            if row is None:
                if n >= ANN_MIN_ROWS:
                    plans.append((lib, "build", None))
                continue
            base, why = check_base(db, self._folder, row, self._dims)
            if base is None:
                log.warning("Rebuilding the vector index file %s: %s", row.file, why)
                plans.append((lib, "build", None))
                continue
            added = db.execute(
                f"SELECT count(*) FROM chunks WHERE lib = ? {SINCE}",
                (lib, row.chunk_seq, row.change_seq),
            ).fetchone()[0]
            changed = db.execute(
                "SELECT count(*) FROM changes WHERE seq > ?", (row.change_seq,)
            ).fetchone()[0]
            # The library's size is its rows now: ``changes`` also holds the rows added and
            # removed again since the file (each forced rebuild's), so the file's count plus
            # those added less those changed counted a re-embedded library twice and
            # dropped the file of every other rebuild (issue 61, item 2).
            size = n
            if size < ANN_MIN_ROWS // 2:
                plans.append((lib, "drop", base))
            elif added + changed >= max(PATCH_MIN_ROWS, row.count * PATCH_SHARE):
                share = (row.removed + changed) / max(row.count, 1)
                rebuild = share > REBUILD_REMOVED_SHARE or not _fits(base.view, size)
                plans.append((lib, "build" if rebuild else "patch", base))
            elif base.restamps != (None, None):
                plans.append((lib, "restamp", base))
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
                old = file_rows(db).get(lib)
                seqs = dict(db.execute(SEQS).fetchall())
                where: str = ""
                args: tuple[Any, ...] = ()
                assigning: AbstractContextManager[None] = contextlib.nullcontext()
                if patch and old is not None:
                    index, removed, kept = self._patched(db, old)
                    where, args = SINCE, (old.chunk_seq, old.change_seq)
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
        codes_seal = save_whole(
            lambda path: sqlite_codes.write(path, kept.scale, ids, codes), self._folder, code_name
        )
        seal = _save_whole(index, self._folder, name)
        with writing() as db:  # the file is whole on disk before the database names it
            db.execute(
                "INSERT OR REPLACE INTO vector_files (lib, file, chunk_seq, change_seq, count, "
                "removed, checksum, stamp, codes_checksum, codes_stamp) "
                "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    lib, name, int(seqs.get("chunks", 0)), int(seqs.get("changes", 0)),
                    index.ntotal, removed, seal.checksum, seal.stamp, codes_seal.checksum,
                    codes_seal.stamp,
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
        sample = load(db, lib, self._dims(), "AND id % ? = 0", (step,)).vectors
        if sample.shape[0] < lists:  # ids with gaps on the step: take every row instead
            sample = load(db, lib, self._dims()).vectors
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

    def _patched(self, db: sqlite3.Connection, old: FileRow) -> tuple[Any, int, sqlite_codes.Codes]:
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
            for block in blocks(db, sql, (lib, *args), n, BUILD_ROWS):
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
            named = {row.file for row in file_rows(db).values()}
        named |= {sqlite_codes.path_of(self._folder / name).name for name in named}
        for suffix in (FILE_SUFFIX, FILE_SUFFIX + sqlite_codes.SUFFIX, *OLD_SUFFIXES):
            remove_strays(self._folder, FILE_PREFIX, suffix, named)


def lists_for(rows: int) -> int:
    """The lists of a library of ``rows`` vectors: the power of two nearest
    ``rows / ROWS_PER_LIST`` (at least 1)."""
    return 1 << max(0, round(math.log2(max(rows / ROWS_PER_LIST, 1))))


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


def _save_whole(index: Any, folder: Path, name: str) -> Seal:
    """Save ``index`` as ``folder/name`` whole or not at all; its seal."""
    import faiss

    def save(path: str) -> None:
        # Through Python's file, not faiss's: faiss ignores a failed close (a short file).
        with open(path, "wb") as fh:
            faiss.write_index(index, faiss.PyCallbackIOWriter(fh.write))  # type: ignore[attr-defined]

    return save_whole(save, folder, name)
