"""The keyword side of a large SQLite index: each term's rows, read from a file beside it.

FTS5 computes ``bm25()`` for every row a query matches, and a question's common words match
a good part of a large index, so its scoring grows with the index. An index of
``POSTINGS_MIN_ROWS`` chunks or more also gets a postings file
(``keywords-<id>.postings``): for every term FTS5 holds, the rows holding it and how often
(the ``idents`` column counted twice, as the search weighs it), and each row's length in
tokens. It is read out of FTS5 itself (``fts5vocab``), so its terms are FTS5's to the byte.
A search adds each term's BM25 share over its rows with numpy: FTS5's formula with FTS5's
statistics (its row count and average row length, each term's current count of rows), the
terms in the same order, so the scores are ``bm25()``'s (the same rows, the same order) at
a fraction of the cost (see benchmarks/README.md, 'Speed and scale').

The file is a cache kept in step with the chunks as the vector files are (``vectors``):
written at an ingest's last step under a new name, recorded in ``keyword_files`` with the
point of ``chunks`` and ``changes`` it covers, the old file deleted after. What it lacks is
taken from SQLite exactly: rows added since are scored by FTS5 (their row ids are higher than
any in the file), rows deleted since (the ``changes`` log) are left out, and each term's
count of rows is corrected for both. A file that is missing, changed since it was written
(its seal: ``side_files``), unreadable or not what was recorded is never trusted: searches
use FTS5 alone, and the next ingest writes it anew.

This module holds which file a search trusts, its upkeep and the scoring; the file's
bytes, read out of FTS5 and memory-mapped back, are ``postings_file``'s.
"""

from __future__ import annotations

import logging
import math
import sqlite3
import threading
import uuid
from collections.abc import Callable
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from holodeck.text.analysis import BM25_B, BM25_K1
from holodeck.vectorstore.sqlite.postings_file import PostingsFile, read_postings, save
from holodeck.vectorstore.sqlite.query import Reader, in_snapshot
from holodeck.vectorstore.sqlite.schema import FTS_TOKENIZER
from holodeck.vectorstore.sqlite.side_files import (
    SEQS,
    Checked,
    Seal,
    check_seal,
    out_of_reach,
    remove_strays,
    save_whole,
    unchanged,
)

log = logging.getLogger("holodeck.vectorstore")

#: An index this large gets a postings file; below it FTS5 scores every match itself.
POSTINGS_MIN_ROWS = 20_000
#: The file is rewritten once the rows added or deleted since reach this many, or this share
#: of the index, whichever is more (until then FTS5 scores the added ones: few, so quick).
REWRITE_MIN_ROWS = 5_000
REWRITE_SHARE = 0.05
FILE_PREFIX = "keywords-"
FILE_SUFFIX = ".postings"

#: Query terms whose place in the file is kept (a term is looked up once per file).
_TERMS_KEPT = 65_536
#: What ``KeywordFile.term`` says of a term FTS5 reads as several tokens.
NOT_ONE_TOKEN = -1

_FILE = "SELECT file, chunk_seq, change_seq, rows, postings, checksum, stamp FROM keyword_files"


@dataclass(frozen=True)
class FileRow:
    """The row of ``keyword_files``: the file and what it covers."""

    file: str
    chunk_seq: int  # every chunk id up to this was read into it ...
    change_seq: int  # ... as it stood after this change
    rows: int  # chunks it holds
    postings: int  # (term, row) pairs it holds
    seal: Seal | None  # the file's, as written (None: an earlier version's file)


@dataclass
class View:
    """The file as a search sees it: what it covers and the rows deleted from it since."""

    row: FileRow
    file: PostingsFile
    deleted: np.ndarray  # int64, sorted
    grown: bool  # rows were added since (FTS5 holds them, the file does not)
    _norms: tuple[float, np.ndarray] | None = field(default=None, repr=False, compare=False)

    def norms(self, avgdl: float) -> np.ndarray:
        """``k1 x (1 - b + b x length / avgdl)`` of every row, as ``bm25()`` computes it;
        kept while FTS5's average row length stays the same (one pass a state, not one a
        term)."""
        kept = self._norms
        if kept is None or kept[0] != avgdl:
            lengths = self.file.lengths.astype(np.float64)
            kept = (avgdl, BM25_K1 * (1 - BM25_B + BM25_B * lengths / avgdl))
            self._norms = kept
        return kept[1]

    def holders(self, term: int | None) -> tuple[np.ndarray, np.ndarray]:
        """The term's rows still in the index, and its count in each."""
        docs, freqs = self.file.rows_of(term)
        if self.deleted.size and docs.size:
            keep = ~np.isin(docs, self.deleted, assume_unique=True)
            return docs[keep], freqs[keep]
        return docs, freqs


class Tokens:
    """Query terms as FTS5's tokenizer makes them (the file's terms are FTS5's tokens): a
    term is written into a small in-memory FTS5 table and read back from its vocabulary."""

    def __init__(self) -> None:
        self._local = threading.local()

    def of(self, term: str) -> list[str]:
        db: sqlite3.Connection | None = getattr(self._local, "db", None)
        if db is None:
            db = sqlite3.connect(":memory:", isolation_level=None, check_same_thread=False)
            db.execute(f"CREATE VIRTUAL TABLE probe USING fts5(x, tokenize={FTS_TOKENIZER!r})")
            db.execute("CREATE VIRTUAL TABLE probe_terms USING fts5vocab(probe, instance)")
            self._local.db = db
        db.execute("INSERT INTO probe (rowid, x) VALUES (1, ?)", (term,))
        try:
            return [r[0] for r in db.execute("SELECT term FROM probe_terms ORDER BY offset")]
        finally:
            db.execute("DELETE FROM probe")


class KeywordFile:
    """The index's postings file for one process: opened once, followed as it is rewritten."""

    def __init__(self, reader: Reader, folder: Path | None) -> None:
        self._reader = reader
        self._folder = folder
        self._lock = threading.Lock()
        #: The file opened: its row, the file, and what its seal's check found.
        self._opened: tuple[FileRow, PostingsFile, Checked] | None = None
        self._view: tuple[tuple[Any, ...], View | None] | None = None
        self._warned: set[str] = set()
        self._tokens = Tokens()
        self._terms: dict[str, int | None] = {}  # of the file opened: a term's position

    def view(self, db: sqlite3.Connection) -> View | None:
        """The file as of ``db``'s snapshot, if there is one to trust (None: FTS5 alone)."""
        if self._folder is None:
            return None
        state = _state(db)
        with self._lock:
            if self._view is not None and self._view[0] == state and self._unchanged():
                return self._view[1]
        row = _file_row(db)
        view = None
        if row is not None:
            file, why = self._open(db, row)
            if file is None:
                if row.file not in self._warned:
                    self._warned.add(row.file)
                    log.warning(
                        "The keyword index file %s does not match the database (%s); "
                        "searching with SQLite's full-text index until `holodeck ingest` "
                        "rewrites it",
                        row.file,
                        why,
                    )
            else:
                last = db.execute("SELECT max(id) FROM chunks").fetchone()[0] or 0
                view = View(row, file, _deleted(db, row), last > row.chunk_seq)
        with self._lock:
            self._view = (state, view)
        return view

    def term(self, view: View, term: str) -> int | None:
        """The position of a query term among the file's terms (None: no row holds it);
        ``NOT_ONE_TOKEN`` when FTS5 reads it as a phrase of several tokens (or none)."""
        with self._lock:
            if self._opened is None or self._opened[1] is not view.file:
                return self._find(view.file, term)
            if term not in self._terms:
                if len(self._terms) >= _TERMS_KEPT:
                    self._terms.clear()
                self._terms[term] = self._find(view.file, term)
            return self._terms[term]

    def _find(self, file: PostingsFile, term: str) -> int | None:
        tokens = self._tokens.of(term)
        return file.find(tokens[0]) if len(tokens) == 1 else NOT_ONE_TOKEN

    def _open(self, db: sqlite3.Connection, row: FileRow) -> tuple[PostingsFile | None, str]:
        """The recorded file, memory-mapped, or None and why it cannot be trusted."""
        assert self._folder is not None
        with self._lock:
            if self._opened is not None and self._opened[0] == row and self._unchanged():
                return self._opened[1], ""
            self._opened, self._terms = None, {}
        why = out_of_reach(db, row.chunk_seq, row.change_seq)
        if why:
            return None, why
        checked = check_seal(self._folder / row.file, row.seal)
        if checked.why:  # its bytes are not the ones written: not even parsed
            return None, checked.why
        try:
            file = PostingsFile(self._folder / row.file)
        except (OSError, ValueError, KeyError) as exc:
            return None, f"it cannot be read ({exc})"
        if (file.rows, file.postings) != (row.rows, row.postings):
            return None, (
                f"it holds {file.rows:,} rows and {file.postings:,} postings, "
                f"the database says {row.rows:,} and {row.postings:,}"
            )
        with self._lock:
            self._opened, self._terms = (row, file, checked), {}
        return file, ""

    def _unchanged(self) -> bool:
        """Whether the file opened is still as it was found sound (one ``stat``: a write
        would reach its mapped pages). Under the lock."""
        assert self._folder is not None
        opened = self._opened
        return opened is None or unchanged(self._folder / opened[0].file, opened[2].stamp)

    def file_name(self) -> str | None:
        with self._reader.reading() as db:
            row = _file_row(db)
        return None if row is None else row.file

    # -- the writer's upkeep -------------------------------------------------------------
    def upkeep(self, writing: Callable[[], AbstractContextManager[sqlite3.Connection]]) -> None:
        """Write the file once the index is large, again once it lacks many rows, drop it
        once the index is small; remove stray files. Under the index's write lock."""
        if self._folder is None:
            return
        action = in_snapshot(self._reader, self._plan)
        if action == "drop":
            with writing() as db:
                db.execute("DELETE FROM keyword_files")
        elif action == "write":
            self._write(writing)
        elif action == "restamp":
            with self._lock:
                assert self._opened is not None
                row, _, checked = self._opened
            with writing() as db:  # the same bytes, stamped anew (a copy, a restore)
                db.execute(
                    "UPDATE keyword_files SET stamp = ? WHERE file = ?", (checked.restamp, row.file)
                )
        named = set() if action == "drop" else {self.file_name()}
        remove_strays(self._folder, FILE_PREFIX, FILE_SUFFIX, {n for n in named if n})

    def _plan(self, db: sqlite3.Connection) -> str | None:
        """``write``, ``drop``, ``restamp`` (its bytes sound, its stamp changed) or None (the
        file is good as it is, or there is none to be)."""
        total = int(db.execute("SELECT count(*) FROM chunks").fetchone()[0])
        row = _file_row(db)
        if row is None:
            return "write" if total >= POSTINGS_MIN_ROWS else None
        if total < POSTINGS_MIN_ROWS // 2:
            return "drop"
        file, why = self._open(db, row)
        if file is None:
            log.warning("Rewriting the keyword index file %s: %s", row.file, why)
            return "write"
        added = db.execute("SELECT count(*) FROM chunks WHERE id > ?", (row.chunk_seq,))
        changed = added.fetchone()[0] + _deleted(db, row).size
        if changed >= max(REWRITE_MIN_ROWS, row.rows * REWRITE_SHARE):
            return "write"
        with self._lock:
            restamp = self._opened is not None and self._opened[2].restamp is not None
        return "restamp" if restamp else None

    def _write(self, writing: Callable[[], AbstractContextManager[sqlite3.Connection]]) -> None:
        """Read every term's rows out of FTS5 into a new file, then record it."""
        assert self._folder is not None
        name = f"{FILE_PREFIX}{uuid.uuid4().hex[:12]}{FILE_SUFFIX}"
        # what the file covers, and the rows read, from one snapshot
        seqs, (arrays, rows) = in_snapshot(
            self._reader,
            lambda db: (dict(db.execute(SEQS).fetchall()), read_postings(db, POSTINGS_MIN_ROWS)),
        )
        seal = save_whole(lambda path: save(path, arrays, rows), self._folder, name)
        with writing() as db:  # the file is whole on disk before the database names it
            db.execute("DELETE FROM keyword_files")
            db.execute(
                "INSERT INTO keyword_files (file, chunk_seq, change_seq, rows, postings, "
                "checksum, stamp) VALUES (?, ?, ?, ?, ?, ?, ?)",
                (
                    name, int(seqs.get("chunks", 0)), int(seqs.get("changes", 0)), rows,
                    int(arrays["docs"].size), seal.checksum, seal.stamp,
                ),
            )  # fmt: skip
        log.debug("Wrote %s: %d rows, %d postings", name, rows, arrays["docs"].size)


def fts5_averages(db: sqlite3.Connection) -> tuple[int, float]:
    """FTS5's own row count and average row length in tokens (its ``averages`` record:
    SQLite varints, the rows then each column's tokens), the numbers ``bm25()`` uses."""
    row = db.execute("SELECT block FROM chunks_fts_data WHERE id = 1").fetchone()
    values, data, i = [], bytes(row[0]) if row else b"", 0
    while i < len(data):
        value, i = _varint(data, i)
        values.append(value)
    if not values or values[0] == 0:
        return 0, 0.0
    return values[0], float(sum(values[1:])) / float(values[0])


def _varint(data: bytes, i: int) -> tuple[int, int]:
    """One SQLite varint (big-endian, 7 bits a byte, the ninth byte whole) at ``i``."""
    value = 0
    for n in range(9):
        byte = data[i + n]
        if n == 8:
            return (value << 8) | byte, i + 9
        value = (value << 7) | (byte & 0x7F)
        if byte < 0x80:
            return value, i + n + 1
    raise AssertionError("unreachable")


def idf(total: int, hits: int) -> float:
    """FTS5's BM25 IDF (fts5_aux.c): never below a millionth, even for a word most rows hold."""
    value = math.log((total - hits + 0.5) / (hits + 0.5))
    return 1e-6 if value <= 0.0 else value


def scores(
    view: View, shares: list[tuple[np.ndarray, np.ndarray, float]], avgdl: float
) -> np.ndarray:
    """Each file row's BM25 (indexed by row id; 0: holds none of the terms) from each
    term's ``(rows, counts, idf)``: the shares added in that order with ``bm25()``'s
    arithmetic (``idf x (f x (k1 + 1)) / (f + norm)``, each step the same IEEE operation),
    so a row scores what FTS5 gives it. In place, each term's rows turned into indexes and
    floats once (a count as a float is exactly the count, times ``k1 + 1`` the same product
    either way): a few passes of numpy a term, not a dozen. It does not stop early as
    MaxScore does: on a large index its looks at the k-th best score cost more than the rows
    they spare."""
    norms = view.norms(avgdl)
    total = np.zeros(norms.size, dtype=np.float64)
    for docs, freqs, weight in shares:
        if not docs.size:
            continue
        rows = docs.astype(np.intp)  # numpy would convert it at each indexing otherwise
        counts = freqs.astype(np.float64)
        share = norms.take(rows)
        share += counts  # f + norm
        counts *= BM25_K1 + 1.0
        np.divide(counts, share, out=share)  # f x (k1 + 1) / (f + norm)
        share *= weight
        np.add.at(total, rows, share)  # each row once
    return total


def _state(db: sqlite3.Connection) -> tuple[Any, ...]:
    return (
        *db.execute(SEQS).fetchall(),
        db.execute("SELECT value FROM meta WHERE key = 'epoch'").fetchone(),
        db.execute(_FILE).fetchone(),
    )


def _file_row(db: sqlite3.Connection) -> FileRow | None:
    row = db.execute(_FILE).fetchone()
    if row is None:
        return None
    file, chunk_seq, change_seq, rows, postings, checksum, stamp = row
    seal = None if checksum is None else Seal(checksum, stamp)
    return FileRow(file, chunk_seq, change_seq, rows, postings, seal)


def _deleted(db: sqlite3.Connection, row: FileRow) -> np.ndarray:
    """The file's rows deleted since it was written (moved ones keep their words)."""
    found = db.execute(
        "SELECT DISTINCT id FROM changes WHERE seq > ? AND id <= ? "
        "AND id NOT IN (SELECT id FROM chunks)",
        (row.change_seq, row.chunk_seq),
    ).fetchall()
    return np.sort(np.array([r[0] for r in found], dtype=np.int64))
