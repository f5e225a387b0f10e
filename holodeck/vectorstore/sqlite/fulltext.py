"""The keyword side of the SQLite index: BM25 over FTS5, from the postings file of a large
index (``postings``: the same scores, summed with numpy), otherwise from FTS5 itself,
scoring only the rows that can still be among the best.

``holodeck.text.analysis`` says what a query asks (terms, identifiers); this module
says how FTS5 is asked for it: inside the tenant's scope, ``ORDER BY`` the BM25 score with a
``LIMIT``, so only the best rows leave SQLite and only those are read back as records.

FTS5 computes BM25 for every row its expression matches before the ``LIMIT`` applies, and a
question's common words match most of a large index. So the search stops early (MaxScore:
Turtle and Flood, 1995): a term adds less than ``(k1 + 1) x`` its IDF to any row's score, so
once the rarest terms' best rows give a ``k``-th score above what the commoner terms could
add up to together, a row holding only common terms cannot reach the top ``k``; only the
rows holding a rarer term are scored, each with every term of the query. Exact: the same
rows with the same scores (to the last bit) as scoring every match.
"""

from __future__ import annotations

import json
import math
import sqlite3
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from holodeck.text.analysis import (
    BM25_K1,
    is_compound,
    query_terms,
)
from holodeck.vectorstore.records import ChunkFilters, ChunkHit, ChunkRecord
from holodeck.vectorstore.sqlite import query as sqlite_query
from holodeck.vectorstore.sqlite.postings import (
    NOT_ONE_TOKEN,
    KeywordFile,
    View,
    fts5_averages,
    scores,
)
from holodeck.vectorstore.sqlite.postings import idf as _idf
from holodeck.vectorstore.sqlite.query import (
    Reader,
    filter_sql,
    library_count,
    records_by_id,
    scope_libs,
)

#: The float32 vectors of row ids (those still there), e.g. ``VectorIndex.vectors_of``.
VectorsOf = Callable[[list[int]], dict[int, np.ndarray]]

#: Column weights of ``bm25()``: ``words``, then ``idents`` (a compound counts twice).
_BM25 = "bm25(chunks_fts, 1.0, 2.0)"
#: Safety margin on that bound against rounding: pruning needs the bound strictly higher.
_MARGIN = 1e-9
#: The first pass scores the rarest terms' rows until they hold this many times ``k`` (a
#: floor for the ``k``-th best score; more rows, a higher floor, at their cost).
_FIRST_PASS_ROWS = 4
#: Pruning pays only on a large index: below this many rows its first pass costs more than
#: it saves (see benchmarks/README.md, 'Speed and scale', "The keyword side stops early").
PRUNE_MIN_ROWS = 50_000
#: Terms whose counts are kept per state of the index (a search and its scale ask the same).
_COUNTS_KEPT = 4096


class TermCounts:
    """How many rows hold each query term, kept while the index does not change: the BM25
    bounds of a keyword search and the keyword scale of the same query ask the same counts,
    and counting a common term reads its whole list of rows."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._state: tuple[Any, ...] | None = None
        self._counts: dict[str, int] = {}
        self._total = 0

    def of(self, db: sqlite3.Connection, terms: list[str]) -> tuple[int, dict[str, int]]:
        """The rows of the index, and how many hold each term (keyed by ``casefold``)."""
        own = not db.in_transaction
        if own:
            db.execute("BEGIN")  # the state and the counts from one snapshot
        try:
            state = (
                *db.execute("SELECT name, seq FROM sqlite_sequence ORDER BY name").fetchall(),
                db.execute("SELECT value FROM meta WHERE key = 'epoch'").fetchone(),
            )
            with self._lock:
                if state != self._state or len(self._counts) > _COUNTS_KEPT:
                    self._state, self._counts = state, {}
                    self._total = int(db.execute("SELECT count(*) FROM chunks").fetchone()[0])
                known, total = dict(self._counts), self._total
            missing = {t.casefold(): t for t in terms if t.casefold() not in known}
            for key, term in missing.items():
                known[key] = int(
                    db.execute(
                        "SELECT count(*) FROM chunks_fts WHERE chunks_fts MATCH ?",
                        (fts5_phrase(term),),
                    ).fetchone()[0]
                )
        finally:
            if own:
                db.execute("COMMIT")
        with self._lock:
            if self._state == state:
                self._counts.update({key: known[key] for key in missing})
        return total, {t.casefold(): known[t.casefold()] for t in terms}


def keyword_search(
    reader: Reader,
    counts: TermCounts,
    keywords: KeywordFile | None,
    tenant_id: str,
    query: str,
    k: int,
    filters: ChunkFilters,
    prune: bool = True,
    vectors_of: VectorsOf | None = None,
) -> list[ChunkHit]:
    """BM25 over the full-text index inside the tenant's scope (score: higher is better).

    A large index is scored from its postings file (``keywords``, ``postings``) and
    FTS5 scores only the rows added since. Without one, ``prune``: score only the rows that
    can reach the top ``k`` on an index of ``PRUNE_MIN_ROWS`` or more (False: every match,
    the same answer); a large index is searched in parts of its row ids at once, each on its
    own connection: on its own FTS5 uses one core. ``vectors_of`` gives the hits' vectors
    (None: read with the records).
    """
    terms = query_terms(query)
    if k <= 0 or not terms:
        return []
    with reader.reading() as db:
        scope_of = _scope(db, tenant_id, filters)
        if scope_of is None:
            return []
        libs, where, args = scope_of
        joined = bool(where) or len(libs) != library_count(db)
        first, last = db.execute(
            "SELECT (SELECT min(id) FROM chunks), (SELECT max(id) FROM chunks)"
        ).fetchone()
        if first is None:
            return []
        plan = _file_plan(db, keywords, terms)
        total, hits = (plan.total, plan.hits) if plan else counts.of(db, terms)
    # Rarest first, in every plan: BM25 adds the terms' shares in this order, so a row
    # scores the same, to the last bit, whichever rows were scored beside it.
    ranked = sorted(terms, key=lambda t: hits[t.casefold()])
    phrases = [fts5_phrase(t) for t in ranked]
    if plan is not None:
        found = _from_file(reader, plan, ranked, phrases, (libs, where, args, joined), last, k)
    else:
        # a term adds less than (k1 + 1) x its IDF (the column weights scale its count, not this)
        bounds = [(BM25_K1 + 1) * _idf(total, hits[t.casefold()]) for t in ranked]
        ranking = _Ranking(reader, libs, where, args, first, last, k, joined)
        essential = len(phrases)
        if prune and total >= PRUNE_MIN_ROWS:
            essential = _essential(
                ranking, phrases, bounds, [hits[t.casefold()] for t in ranked], k
            )
        if essential == len(phrases):
            found = ranking.best(" OR ".join(phrases))
        else:
            found = ranking.best(*_split(phrases, essential))
    records = _with_vectors(reader, [row_id for row_id, _ in found], vectors_of)
    return [ChunkHit(records[i], float(score)) for i, score in found if i in records]


def _with_vectors(
    reader: Reader, ids: list[int], vectors_of: VectorsOf | None
) -> dict[int, ChunkRecord]:
    """The records of ``ids`` with their vectors: read with them, or from ``vectors_of``
    (a record whose vector is gone, deleted in between, is left out)."""
    with reader.reading() as db:
        records = records_by_id(db, ids, with_vectors=vectors_of is None)
    if vectors_of is None:
        return records
    vectors = vectors_of([i for i in ids if i in records])
    for i in list(records):
        if i in vectors:
            records[i].vector = vectors[i]
        else:
            del records[i]
    return records


@dataclass
class _FilePlan:
    """A query asked of the postings file: FTS5's statistics now, each term's rows."""

    view: View
    total: int  # FTS5's rows
    avgdl: float  # FTS5's average row length
    hits: dict[str, int]  # rows holding each term now (keyed by ``casefold``)
    holders: dict[str, tuple[np.ndarray, np.ndarray]]  # the file's rows of each, and counts


def _file_plan(
    db: sqlite3.Connection, keywords: KeywordFile | None, terms: list[str]
) -> _FilePlan | None:
    """The query's plan on the postings file, or None: no file to trust, or a term FTS5
    reads as a phrase of several tokens (scored by FTS5, which knows their positions)."""
    view = keywords.view(db) if keywords is not None else None
    if view is None or keywords is None:
        return None
    total, avgdl = fts5_averages(db)
    hits: dict[str, int] = {}
    holders: dict[str, tuple[np.ndarray, np.ndarray]] = {}
    for term in terms:
        key = term.casefold()
        if key in hits:
            continue
        position = keywords.term(view, term)
        if position == NOT_ONE_TOKEN:
            return None
        holders[key] = view.holders(position)
        added = 0
        if view.grown:  # the rows since hold it too
            added = db.execute(
                "SELECT count(*) FROM chunks_fts WHERE chunks_fts MATCH ? AND rowid > ?",
                (fts5_phrase(term), view.row.chunk_seq),
            ).fetchone()[0]
        hits[key] = int(holders[key][0].size) + int(added)
    return _FilePlan(view, total, avgdl, hits, holders)


def _from_file(
    reader: Reader,
    plan: _FilePlan,
    ranked: list[str],
    phrases: list[str],
    scope: tuple[list[int], str, list[Any], bool],
    last: int,
    k: int,
) -> list[tuple[int, float]]:
    """The best ``k`` rows: the file's rows scored with numpy, the rows added since it was
    written by FTS5, inside the scope."""
    libs, where, args, joined = scope
    shares = [
        (*plan.holders[t.casefold()], _idf(plan.total, plan.hits[t.casefold()])) for t in ranked
    ]
    total = scores(plan.view, shares, plan.avgdl)
    rows = np.flatnonzero(total > 0)
    found = _best_in_scope(reader, rows, total[rows], k, scope)
    chunk_seq = plan.view.row.chunk_seq
    if last > chunk_seq:
        ranking = _Ranking(reader, libs, where, args, chunk_seq + 1, last, k, joined)
        found += ranking.best(" OR ".join(phrases))
    return sorted(found, key=_best_first)[:k]


def _best_in_scope(
    reader: Reader,
    rows: np.ndarray,
    values: np.ndarray,
    k: int,
    scope: tuple[list[int], str, list[Any], bool],
) -> list[tuple[int, float]]:
    """The best ``k`` of ``rows`` (ties: the lower row id) that lie inside the scope: the
    whole index needs no look; otherwise the best are looked up, more until ``k`` are in."""
    libs, where, args, joined = scope
    wanted = k if not joined else 4 * k
    while True:
        best = _best_rows(rows, values, wanted)
        if not joined:
            kept = best
        else:
            with reader.reading() as db:
                inside = {
                    r[0]
                    for r in db.execute(
                        "SELECT c.id FROM chunks c WHERE c.id IN (SELECT value FROM json_each(?)) "
                        f"AND c.lib IN ({','.join('?' * len(libs))}){where}",
                        (json.dumps(rows[best].tolist()), *libs, *args),
                    )
                }
            kept = best[np.isin(rows[best], np.fromiter(inside, np.int64, len(inside)))]
        if kept.size >= k or best.size == rows.size:
            return [(int(rows[i]), float(values[i])) for i in kept[:k]]
        wanted *= 8


def _best_rows(rows: np.ndarray, values: np.ndarray, m: int) -> np.ndarray:
    """Positions of the best ``m`` values, best first, ties by the lower row (all the rows
    tied with the ``m``-th are kept, so which of them come first is never chance)."""
    if values.size > m:
        kth = np.partition(values, values.size - m)[values.size - m]
        picked = np.flatnonzero(values >= kth)
    else:
        picked = np.arange(values.size)
    return picked[np.lexsort((rows[picked], -values[picked]))]


def _essential(
    ranking: _Ranking, phrases: list[str], bounds: list[float], hits: list[int], k: int
) -> int:
    """How many of the rarest ``phrases`` a row must hold one of to reach the top ``k``.

    A first pass scores the rows of the rarest phrases (about ``_FIRST_PASS_ROWS x k``) on
    every phrase: their ``k``-th best is a floor of the top ``k``'s last score. A row
    holding none of the first ``j`` phrases scores below the sum of the others' bounds; the
    answer is the first ``j`` whose rest sums below that floor (all: no pruning).
    """
    rest = [math.fsum(bounds[j:]) * (1 + _MARGIN) for j in range(len(bounds) + 1)]
    held, first = 0, len(phrases)
    for j, n in enumerate(hits, start=1):
        held += n
        if held >= _FIRST_PASS_ROWS * k:
            first = j
            break
    if first >= len(phrases) - 1:  # the common terms' rows are few: score them all
        return len(phrases)
    floor = ranking.kth(phrases, first)
    if floor is None:
        return len(phrases)
    return next((j for j in range(1, len(phrases)) if rest[j] < floor), len(phrases))


def _split(phrases: list[str], rare: int) -> tuple[str, str]:
    """Expressions matching the rows that hold one of the first ``rare`` phrases, each row
    once, scored on every phrase (in their order): without the others, then with them."""
    held, others = " OR ".join(phrases[:rare]), " OR ".join(phrases[rare:])
    return f"({held}) NOT ({others})", f"({held}) AND ({others})"


class _Ranking:
    """The best ``k`` rows of an FTS5 expression (or of several, each matching other rows)
    inside the tenant's scope, in parts of the row ids on the read threads."""

    def __init__(
        self,
        reader: Reader,
        libs: list[int],
        where: str,
        args: list[Any],
        first: int,
        last: int,
        k: int,
        joined: bool,
    ) -> None:
        self._reader, self._k, self._all = reader, k, (first, last)
        self._parts = sqlite_query.id_ranges(first, last, reader.read_workers())
        if not joined:
            # the usual case, one library per index: no join to filter by library
            self._arm = (
                f"SELECT rowid AS id, -{_BM25} AS score FROM chunks_fts "
                "WHERE chunks_fts MATCH ? AND rowid BETWEEN ? AND ?"
            )
            self._scope: tuple[Any, ...] = ()
        else:
            self._arm = (
                f"SELECT c.id AS id, -{_BM25} AS score FROM chunks_fts "
                "JOIN chunks c ON c.id = chunks_fts.rowid "
                f"WHERE chunks_fts MATCH ? AND c.lib IN ({','.join('?' * len(libs))}){where} "
                "AND chunks_fts.rowid BETWEEN ? AND ?"
            )
            self._scope = (*libs, *args)

    def kth(self, phrases: list[str], rare: int) -> float | None:
        """The ``k``-th best score of the rows holding one of the first ``rare`` phrases,
        scored on every phrase (None: fewer rows). Each row is scored on the rare phrases
        alone and, if it holds another, on all of them (the higher is its score): FTS5
        counts a phrase's rows for its IDF per expression, and a common phrase in both
        expressions would be counted twice."""
        held, others = " OR ".join(phrases[:rare]), " OR ".join(phrases[rare:])
        sql = (
            f"SELECT max(score) AS best FROM ({self._arm} UNION ALL {self._arm}) "
            "GROUP BY id ORDER BY best DESC LIMIT 1 OFFSET ?"
        )
        values = [
            v for e in (held, f"({held}) AND ({others})") for v in (e, *self._scope, *self._all)
        ]
        with self._reader.reading() as db:
            row = db.execute(sql, (*values, self._k - 1)).fetchone()
        return None if row is None else float(row[0])

    def best(self, *expressions: str) -> list[tuple[int, float]]:
        """Row ids and scores, best first (ties: the lower row id first)."""
        sql = " UNION ALL ".join([self._arm] * len(expressions))
        sql += " ORDER BY score DESC, id LIMIT ?"

        def part(lo: int, hi: int) -> list[tuple[int, float]]:
            values = [v for e in expressions for v in (e, *self._scope, lo, hi)]
            with self._reader.reading() as db:
                return db.execute(sql, (*values, self._k)).fetchall()

        if len(self._parts) == 1:
            return part(*self._parts[0])
        found = self._reader.read_pool().map(lambda p: part(*p), self._parts)
        return sorted((row for rows in found for row in rows), key=_best_first)[: self._k]


def keyword_scale(
    reader: Reader, counts: TermCounts, keywords: KeywordFile | None, query: str
) -> float:
    """The sum of the query terms' IDFs as FTS5's ``bm25()`` computes them (each phrase's
    matching rows over all rows), a compound weighed as its column (``idents``: 2)."""
    terms = query_terms(query)
    if not terms:
        return 0.0
    with reader.reading() as db:
        plan = _file_plan(db, keywords, terms)
        total, hits = (plan.total, plan.hits) if plan else counts.of(db, terms)
    return sum((2.0 if is_compound(t) else 1.0) * _idf(total, hits[t.casefold()]) for t in terms)


def keyword_idfs(
    reader: Reader, counts: TermCounts, keywords: KeywordFile | None, words: Sequence[str]
) -> dict[str, float]:
    """Each word's IDF as FTS5's ``bm25()`` computes it, keyed by ``casefold``."""
    terms = list({w.casefold(): w for w in words}.values())
    if not terms:
        return {}
    with reader.reading() as db:
        plan = _file_plan(db, keywords, terms)
        total, hits = (plan.total, plan.hits) if plan else counts.of(db, terms)
    return {t.casefold(): _idf(total, hits[t.casefold()]) for t in terms}


def identifier_holders(
    reader: Reader,
    tenant_id: str,
    identifier: str,
    limit: int,
    filters: ChunkFilters,
    vectors_of: VectorsOf | None = None,
) -> list[ChunkHit]:
    """Chunks of the tenant's scope holding ``identifier`` whole (at most ``limit``)."""
    if limit <= 0:
        return []
    with reader.reading() as db:
        scope_of = _scope(db, tenant_id, filters)
        if scope_of is None:
            return []
        libs, where, args = scope_of
        sql = (
            "SELECT c.id FROM chunks_fts JOIN chunks c ON c.id = chunks_fts.rowid "
            f"WHERE chunks_fts MATCH ? AND c.lib IN ({','.join('?' * len(libs))}){where} "
            "ORDER BY c.id LIMIT ?"
        )
        ids = [r[0] for r in db.execute(sql, (fts5_identifier(identifier), *libs, *args, limit))]
    records = _with_vectors(reader, ids, vectors_of)
    return [ChunkHit(records[i], 0.0) for i in ids if i in records]


def _scope(
    db: sqlite3.Connection, tenant_id: str, filters: ChunkFilters
) -> tuple[list[int], str, list[Any]] | None:
    """The tenant's libraries inside ``filters`` and the filters' SQL (None: no library)."""
    libs = scope_libs(db, tenant_id, filters)
    if not libs:
        return None
    where, args = filter_sql(filters)
    return libs, where, args


def _best_first(row: tuple[int, float]) -> tuple[float, int]:
    """Order of ranked rows: best score first, ties by row id (as the SQL orders them)."""
    return -row[1], row[0]


def fts5_phrase(term: str) -> str:
    """``term`` as an FTS5 string (quoted: nothing in it is syntax)."""
    return '"' + term.replace('"', '""') + '"'


def fts5_identifier(identifier: str) -> str:
    """An FTS5 MATCH expression finding chunks that hold ``identifier`` whole."""
    return "{idents} : " + fts5_phrase(identifier)
