"""``postgres``: chunks in PostgreSQL with pgvector, on the database server a team already runs.

``PostgresIndexAdapter`` is the ``IndexAdapter`` of this backend. One index is a set of tables
named after ``index_name``: ``<name>_chunks`` (records, their vector, their keyword terms),
``<name>_docs`` (document states), ``<name>_owners`` (who fills each library), ``<name>_stats``
(chunk and term totals, kept by triggers) and ``<name>_meta`` (model, dimensions, algorithm,
metric and the schema version, moved on by the numbered ``MIGRATIONS``).

- Nearest vectors: pgvector's ``<=>``/``<->``/``<#>``, filtered by tenant and library in the
  same query: an exact scan (FLAT, and HNSW below ``HNSW_FROM`` chunks), or pgvector's HNSW
  index, built whole by the ingest that passes that size (pgvector 0.8's iterative index
  scan keeps a filtered query from coming back short).
- Keyword matches: BM25 computed inside PostgreSQL with the constants and IDF every other
  backend uses, over each chunk's Porter stems (``holodeck.text.analysis``) kept as a
  ``jsonb`` map of term counts with a GIN index; the GIN index finds the candidates, the SQL
  scores them. Not ``tsvector`` with ``ts_rank_cd``: that ranks without IDF (a chunk repeating
  a common query word beats the one holding its rare word) and in units fusion cannot divide
  by ``keyword_scale``, so PostgreSQL would rank unlike ``local`` and ``redis``.
  Identifiers (``PURPLE-OTTER``, ``--no-ff``) are a ``text[]`` with its own GIN index, found
  whole.
- Every write of a document is one transaction (``batch`` wraps several in one); readers
  never wait (MVCC). Each thread has its own connection, so a search beside an ingest reads
  only what is committed. An ingest holds a session advisory lock on its library, which the
  server frees when the holder dies (kill -9).
- Unreachable at start: ``ConnectionError`` (the factory warns and falls back to the local
  index, as for Redis); lost after that: an ``IngestError`` naming the redacted URL.
"""

from __future__ import annotations

import hashlib
import logging
import math
import threading
import time
from collections import Counter
from collections.abc import Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager
from typing import Any, Literal, cast

import numpy as np
import psycopg
from pgvector.psycopg import register_vector
from psycopg import sql
from psycopg.types.json import Jsonb

from holodeck.errors import ConfigError, IngestError, IngestRunning, ValidationError
from holodeck.redact import redact, redact_url
from holodeck.text.analysis import (
    BM25_B,
    BM25_K1,
    idents_text,
    is_compound,
    query_terms,
    stems_text,
    word_stems,
)
from holodeck.vectorstore.records import (
    ChunkFilters,
    ChunkHit,
    ChunkRecord,
    DocState,
    IndexInfo,
    indexed_text,
)

log = logging.getLogger("holodeck.vectorstore")

Algorithm = Literal["HNSW", "FLAT"]
Metric = Literal["COSINE", "L2", "IP"]

#: pgvector's operator and HNSW operator class for each distance metric.
_OPERATORS = {"COSINE": ("<=>", "vector_cosine_ops"), "L2": ("<->", "vector_l2_ops"),
              "IP": ("<#>", "vector_ip_ops")}  # fmt: skip
#: Candidates an HNSW search keeps per query (pgvector's default is 40): recall near exact
#: for the few hundred a hybrid search asks.
EF_SEARCH = 100
#: Chunks in the whole index from which ``flush`` builds the HNSW index (below it every
#: search is an exact scan: a few milliseconds), and the memory its build may take.
HNSW_FROM = 20_000
HNSW_BUILD_MEMORY = "512MB"
#: Chunks written by one INSERT statement (a document's slice is at most 256).
INSERT_ROWS = 256
#: Columns of a chunk row, in the order ``_record`` reads them.
_COLUMNS = (
    "chunk_id", "tenant_id", "library_id", "book_id", "doc_id", "chunk_index", "content",
    "embedding", "embedding_model", "source_path", "mtime", "content_hash", "token_count",
    "tags", "language", "location", "section",
)  # fmt: skip
_WRITTEN = (*_COLUMNS, "terms", "term_count", "idents")

#: The schema, one numbered step at a time: a new version adds a step, never edits one.
#: ``{x}`` names are the index's tables (``_names``); each step runs in one transaction.
MIGRATIONS: dict[int, list[str]] = {
    1: [
        """CREATE TABLE {chunks} (
            chunk_id text PRIMARY KEY, tenant_id text NOT NULL, library_id text NOT NULL,
            book_id text NOT NULL, doc_id text NOT NULL, chunk_index integer NOT NULL,
            content text NOT NULL, embedding vector NOT NULL, embedding_model text NOT NULL,
            source_path text NOT NULL, mtime double precision NOT NULL,
            content_hash text NOT NULL, token_count integer NOT NULL,
            tags text[] NOT NULL, language text, location text NOT NULL,
            section text NOT NULL, terms jsonb NOT NULL, term_count integer NOT NULL,
            idents text[] NOT NULL)""",
        "CREATE INDEX {chunks_doc} ON {chunks} (tenant_id, library_id, doc_id, chunk_index)",
        "CREATE INDEX {chunks_book} ON {chunks} (tenant_id, book_id)",
        "CREATE INDEX {chunks_terms} ON {chunks} USING gin (terms)",
        "CREATE INDEX {chunks_idents} ON {chunks} USING gin (idents)",
        """CREATE TABLE {docs} (
            tenant_id text NOT NULL, library_id text NOT NULL, doc_id text NOT NULL,
            mtime double precision NOT NULL, size bigint NOT NULL, content_hash text NOT NULL,
            chunk_count integer NOT NULL, PRIMARY KEY (tenant_id, library_id, doc_id))""",
        """CREATE TABLE {owners} (
            tenant_id text NOT NULL, library_id text NOT NULL, owner jsonb NOT NULL,
            PRIMARY KEY (tenant_id, library_id))""",
        """CREATE TABLE {stats} (
            id integer PRIMARY KEY CHECK (id = 1), chunks bigint NOT NULL,
            terms bigint NOT NULL, changes bigint NOT NULL)""",
        "INSERT INTO {stats} VALUES (1, 0, 0, 0)",
        """CREATE FUNCTION {count_fn}() RETURNS trigger LANGUAGE plpgsql AS $$
        DECLARE
          chunks_in bigint := 0; terms_in bigint := 0;
          chunks_out bigint := 0; terms_out bigint := 0;
        BEGIN
          IF TG_OP IN ('INSERT', 'UPDATE') THEN
            SELECT count(*), coalesce(sum(term_count), 0) INTO chunks_in, terms_in FROM added;
          END IF;
          IF TG_OP IN ('DELETE', 'UPDATE') THEN
            SELECT count(*), coalesce(sum(term_count), 0) INTO chunks_out, terms_out
              FROM removed;
          END IF;
          IF chunks_in > 0 OR chunks_out > 0 THEN
            UPDATE {stats} SET chunks = chunks + chunks_in - chunks_out,
              terms = terms + terms_in - terms_out, changes = changes + 1;
          END IF;
          RETURN NULL;
        END $$""",
        """CREATE TRIGGER {on_insert} AFTER INSERT ON {chunks} REFERENCING NEW TABLE AS added
            FOR EACH STATEMENT EXECUTE FUNCTION {count_fn}()""",
        """CREATE TRIGGER {on_update} AFTER UPDATE ON {chunks}
            REFERENCING NEW TABLE AS added OLD TABLE AS removed
            FOR EACH STATEMENT EXECUTE FUNCTION {count_fn}()""",
        """CREATE TRIGGER {on_delete} AFTER DELETE ON {chunks}
            REFERENCING OLD TABLE AS removed FOR EACH STATEMENT EXECUTE FUNCTION {count_fn}()""",
    ],
}
SCHEMA_VERSION = max(MIGRATIONS)
_SET_META = (
    "INSERT INTO {meta} VALUES (%s, %s) ON CONFLICT (key) DO UPDATE SET value = excluded.value"
)
_ONE_DOC = "tenant_id = %s AND library_id = %s AND doc_id = %s"
#: Words of libpq's errors that mean the server was not reached (the contract's fallback).
_UNREACHABLE = (
    "connection refused", "could not connect", "timeout expired", "could not translate host",
    "no route to host", "network is unreachable", "server closed the connection",
    "connection timed out", "no such file or directory",
)  # fmt: skip


class PostgresIndexAdapter:
    """``IndexAdapter`` on PostgreSQL with pgvector (one set of tables per ``index_name``)."""

    backend = "postgres"

    def __init__(
        self,
        url: str,
        index_name: str = "holodeck_vectors",
        algorithm: Algorithm = "HNSW",
        metric: Metric = "COSINE",
        connect_timeout: float = 5.0,
    ) -> None:
        self.url = redact_url(url)
        self.index_name = index_name
        algorithm_up, metric_up = str(algorithm).upper(), str(metric).upper()
        if algorithm_up not in ("HNSW", "FLAT"):
            raise ConfigError(f"PostgreSQL algorithm {algorithm!r} is not one of HNSW, FLAT")
        if metric_up not in _OPERATORS:
            raise ConfigError(f"PostgreSQL distance metric {metric!r} is not one of COSINE, L2, IP")
        self.algorithm = cast(Algorithm, algorithm_up)
        self.metric = cast(Metric, metric_up)
        try:
            options = psycopg.conninfo.conninfo_to_dict(url)
        except psycopg.ProgrammingError as exc:
            raise ConfigError(f"invalid PostgreSQL URL {self.url}: {redact(str(exc))}") from None
        if "connect_timeout" not in options:
            options["connect_timeout"] = max(1, math.ceil(connect_timeout))
        options.setdefault("application_name", "holodeck")
        self._conninfo = psycopg.conninfo.make_conninfo("", **options)  # the password: never shown
        self._names = _names(index_name)
        self._local = threading.local()
        self._connections: list[psycopg.Connection[Any]] = []
        self._connections_lock = threading.Lock()
        self._info: IndexInfo | None = None
        self._vector_index = False  # known to exist (then never asked again)
        #: Chunks holding each stem, as counted when the index had had ``_df_at`` writes.
        self._df: dict[str, int] = {}
        self._df_at = -1
        self._df_lock = threading.Lock()
        self._connected = False
        self._conn()  # reach the server now: unreachable is the caller's fallback
        self._connected = True
        with self._guard():
            self._migrate()

    def __repr__(self) -> str:
        return f"PostgresIndexAdapter({self.url!r}, index_name={self.index_name!r})"

    # -- connections and errors ----------------------------------------------------------
    def _conn(self) -> psycopg.Connection[Any]:
        """This thread's connection (autocommit; ``_tx`` opens transactions), made anew
        when the last one broke."""
        conn: psycopg.Connection[Any] | None = getattr(self._local, "conn", None)
        if conn is not None and not conn.closed and not conn.broken:
            return conn
        try:
            conn = psycopg.connect(self._conninfo, autocommit=True)
        except psycopg.OperationalError as exc:
            raise self._connect_failed(exc) from None
        try:
            _require_pgvector(conn, self.url)
            register_vector(conn)
            conn.execute(f"SET hnsw.ef_search = {EF_SEARCH}")
            conn.execute("SET hnsw.iterative_scan = strict_order")
        except BaseException:
            conn.close()
            raise
        self._local.conn = conn
        with self._connections_lock:
            self._connections.append(conn)
        return conn

    def _connect_failed(self, exc: psycopg.OperationalError) -> Exception:
        """Unreachable: the contract's ``ConnectionError`` at start (``IngestError`` later);
        reached but refused (login, database): a ``ConfigError`` saying what to fix."""
        reason = redact(str(exc)).strip().replace("\n", " ")
        if any(word in reason.lower() for word in _UNREACHABLE):
            if not self._connected:
                return ConnectionError(f"cannot use PostgreSQL at {self.url}: {reason}")
            return self._lost(exc)
        return ConfigError(
            f"PostgreSQL at {self.url} refused the connection ({reason}): check the user, "
            "password (from the environment) and database name in the connection string"
        )

    def _lost(self, exc: BaseException) -> IngestError:
        self._info = None  # read the meta again once the server is back
        return IngestError(
            f"lost the connection to PostgreSQL at {self.url} "
            f"({redact(str(exc)).strip()}); every committed document is whole: run the "
            "command again once the server is back, the re-run repairs the index"
        )

    @contextmanager
    def _guard(self) -> Iterator[None]:
        """A lost connection becomes one ``IngestError`` naming the redacted URL."""
        try:
            yield
        except (psycopg.OperationalError, psycopg.InterfaceError) as exc:
            if isinstance(exc, psycopg.errors.QueryCanceled | psycopg.errors.LockNotAvailable):
                raise
            raise self._lost(exc) from exc
        except psycopg.errors.UndefinedTable as exc:
            self._info = None
            raise IngestError(
                f"PostgreSQL index {self.index_name} at {self.url} lost its tables (dropped by "
                "hand?); run the ingest again to rebuild it"
            ) from exc

    @contextmanager
    def _tx(self) -> Iterator[psycopg.Connection[Any]]:
        """This thread's connection inside a transaction (a savepoint inside ``batch``)."""
        with self._guard():
            conn = self._conn()
            with conn.transaction():
                yield conn

    def _query(self, query: sql.Composed, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        """Rows of one read on this thread's connection."""
        with self._guard():
            return self._conn().execute(query, params).fetchall()

    def _q(self, text: str) -> sql.Composed:
        """``text`` with its ``{x}`` table names filled in (quoted identifiers)."""
        return sql.SQL(text).format(**self._names)

    # -- schema ------------------------------------------------------------------------
    def _migrate(self) -> None:
        """Bring the index's tables to ``SCHEMA_VERSION``, each step in one transaction,
        under a lock so two processes opening a new index do not both create it."""
        conn = self._conn()
        with conn.transaction():
            conn.execute("SELECT pg_advisory_xact_lock(%s)", (_lock_key(self.index_name),))
            conn.execute(
                self._q(
                    "CREATE TABLE IF NOT EXISTS {meta} (key text PRIMARY KEY, value text NOT NULL)"
                )
            )
            found = conn.execute(
                self._q("SELECT value FROM {meta} WHERE key = 'schema_version'")
            ).fetchone()
            version = int(found[0]) if found else 0
            if version > SCHEMA_VERSION:
                raise ConfigError(
                    f"PostgreSQL index {self.index_name} at {self.url} has schema version "
                    f"{version}, made by a newer holodeck (this one knows {SCHEMA_VERSION}): "
                    "upgrade holodeck, or use another index_name"
                )
            if version == 0 and _fetch_one(conn, "SELECT to_regclass(%s)", self._plain("chunks")):
                raise ConfigError(
                    f"PostgreSQL at {self.url} has a table {self.index_name}_chunks that "
                    "holodeck did not make: use another index_name"
                )
            for step in range(version + 1, SCHEMA_VERSION + 1):
                for statement in MIGRATIONS[step]:
                    conn.execute(self._q(statement))
                conn.execute(self._q(_SET_META), ("schema_version", str(step)))

    def _plain(self, table: str) -> str:
        """A table's name as ``to_regclass`` reads it (quoted)."""
        return sql.Identifier(f"{self.index_name}_{table}").as_string(None)

    def _meta(self) -> dict[str, str]:
        return dict(self._query(self._q("SELECT key, value FROM {meta}")))

    # -- index -------------------------------------------------------------------------
    def describe(self) -> IndexInfo | None:
        """Model and dimensions from ``<name>_meta``; once known, answered from memory."""
        if self._info is None:
            meta = self._meta()
            if "embedding_model" in meta:
                self._info = IndexInfo(meta["embedding_model"], int(meta["dimensions"]))
                self._note_settings(meta)
        return self._info

    def _note_settings(self, meta: dict[str, str]) -> None:
        """An index keeps the algorithm and metric it was made with; a configuration asking
        others is told once how to change them."""
        made = (meta.get("algorithm", self.algorithm), meta.get("metric", self.metric))
        if made != (self.algorithm, self.metric):
            log.warning(
                "PostgreSQL index %s was made with %s and %s, not the configured %s and %s; "
                "it keeps them until holodeck ingest --force-ingest rebuilds it",
                self.index_name, made[0], made[1], self.algorithm, self.metric,
            )  # fmt: skip
        self.algorithm, self.metric = cast(Algorithm, made[0]), cast(Metric, made[1])

    def create(self, info: IndexInfo) -> None:
        """Fix the vector column's length, build the vector index and record ``info``; a
        no-op when another process created it first."""
        with self._tx() as conn:
            conn.execute("SELECT pg_advisory_xact_lock(%s)", (_lock_key(self.index_name),))
            if conn.execute(
                self._q("SELECT 1 FROM {meta} WHERE key = 'embedding_model'")
            ).fetchone():
                self._info = None
                self.describe()
                return
            self._shape(conn, info)
        self._info = info

    def recreate(self, info: IndexInfo) -> None:
        """Drop every chunk and document state (owners stay) and make the index for ``info``."""
        with self._tx() as conn:
            conn.execute("SELECT pg_advisory_xact_lock(%s)", (_lock_key(self.index_name),))
            conn.execute(self._q("TRUNCATE {chunks}, {docs}"))
            conn.execute(self._q("UPDATE {stats} SET chunks = 0, terms = 0, changes = changes + 1"))
            conn.execute(self._q("DROP INDEX IF EXISTS {chunks_vector}"))
            self._shape(conn, info)
        self._info = info
        self._vector_index = False

    def _shape(self, conn: psycopg.Connection[Any], info: IndexInfo) -> None:
        """The vector column as ``vector(dimensions)`` and the meta rows (the HNSW index
        comes with size: ``flush``)."""
        conn.execute(
            self._q(
                f"ALTER TABLE {{chunks}} ALTER COLUMN embedding TYPE vector({int(info.dimensions)})"
            )
        )
        values = {
            "embedding_model": info.embedding_model,
            "dimensions": str(info.dimensions),
            "algorithm": self.algorithm,
            "metric": self.metric,
        }
        for key, value in values.items():
            conn.execute(self._q(_SET_META), (key, value))

    def total_count(self) -> int:
        """Chunks of every tenant (the triggers' running total: no scan)."""
        return int(self._query(self._q("SELECT chunks FROM {stats}"))[0][0])

    # -- chunks ------------------------------------------------------------------------
    def upsert(self, records: Sequence[ChunkRecord]) -> None:
        """Insert or replace ``records`` by chunk id, in one transaction."""
        rows = [_row(rec) for rec in records]
        with self._tx() as conn:
            self._insert(conn, rows)

    def _insert(self, conn: psycopg.Connection[Any], rows: list[tuple[Any, ...]]) -> None:
        """``rows`` in multi-row statements (the count triggers fire once a statement)."""
        columns = sql.SQL(", ").join(map(sql.Identifier, _WRITTEN))
        updates = sql.SQL(", ").join(
            sql.SQL("{0} = excluded.{0}").format(sql.Identifier(c)) for c in _WRITTEN[1:]
        )
        one = sql.SQL("({})").format(sql.SQL(", ").join(sql.Placeholder() * len(_WRITTEN)))
        for start in range(0, len(rows), INSERT_ROWS):
            part = rows[start : start + INSERT_ROWS]
            query = sql.SQL(
                "INSERT INTO {} ({}) VALUES {} ON CONFLICT (chunk_id) DO UPDATE SET {}"
            ).format(self._names["chunks"], columns, sql.SQL(", ").join([one] * len(part)), updates)
            conn.execute(query, [value for row in part for value in row])

    def replace_document(
        self,
        tenant_id: str,
        library_id: str,
        doc_id: str,
        records: Sequence[ChunkRecord],
        state: DocState | None,
    ) -> int:
        """State and old chunks out, ``records`` and ``state`` in: one transaction."""
        rows = [_row(rec) for rec in records]  # refuse bad values before anything changes
        with self._tx() as conn:
            conn.execute(
                self._q("DELETE FROM {docs} WHERE " + _ONE_DOC),
                (tenant_id, library_id, doc_id),
            )
            removed = conn.execute(
                self._q("DELETE FROM {chunks} WHERE " + _ONE_DOC),
                (tenant_id, library_id, doc_id),
            ).rowcount
            self._insert(conn, rows)
            if state is not None:
                self._set_state(conn, tenant_id, library_id, state)
        return int(removed)

    def append_to_document(
        self,
        tenant_id: str,
        library_id: str,
        doc_id: str,
        records: Sequence[ChunkRecord],
        state: DocState | None,
    ) -> None:
        """A later slice of a document and, when given, its state: one transaction."""
        rows = [_row(rec) for rec in records]
        with self._tx() as conn:
            self._insert(conn, rows)
            if state is not None:
                self._set_state(conn, tenant_id, library_id, state)

    def preload(self, tenant_id: str, filters: ChunkFilters) -> None:
        """Nothing: the server holds the index."""

    def search(
        self, tenant_id: str, vector: np.ndarray, k: int, filters: ChunkFilters
    ) -> list[ChunkHit]:
        """The ``k`` nearest chunks of the scope (HNSW or exact), as cosine similarity."""
        scope = _scope(tenant_id, filters)
        if scope is None or k <= 0 or self.describe() is None:
            return []
        where, params = scope
        operator = sql.SQL(_OPERATORS[self.metric][0])
        query = sql.SQL(
            "SELECT {cols}, embedding {op} %s AS distance FROM {chunks} WHERE {where} "
            "ORDER BY embedding {op} %s LIMIT %s"
        ).format(cols=_cols(), op=operator, chunks=self._names["chunks"], where=where)
        target = np.asarray(vector, dtype=np.float32)
        rows = self._query(query, [target, *params, target, k])
        return [ChunkHit(_record(row), self._similarity(float(row[-1]))) for row in rows]

    def _similarity(self, distance: float) -> float:
        """Cosine similarity of normalised vectors from pgvector's distance, in [0, 1]:
        ``<=>`` is 1 - cos, ``<#>`` is -dot (= -cos), ``<->`` the Euclidean distance."""
        if self.metric == "COSINE":
            cosine = 1.0 - distance
        elif self.metric == "IP":
            cosine = -distance
        else:
            cosine = 1.0 - distance * distance / 2.0
        return min(1.0, max(0.0, cosine))

    def keyword_search(
        self, tenant_id: str, query: str, k: int, filters: ChunkFilters
    ) -> list[ChunkHit]:
        """BM25 of the query's stems inside the scope, scored in SQL (FTS5's k1 and b, the
        IDF of ``keyword_idfs``); candidates found by the GIN index of the term maps, only
        the best ``k`` read whole."""
        stems = _query_stems(query)
        scope = _scope(tenant_id, filters)
        if not stems or scope is None or k <= 0:
            return []
        total, counts = self._stem_counts(stems)
        copies = Counter(stems)
        weight = {s: _idf(total, counts[s]) * copies[s] for s in copies}
        rows = self._bm25(weight, k, scope)
        return [ChunkHit(_record(row), float(row[-1])) for row in rows]

    def _bm25(
        self, weight: dict[str, float], k: int, scope: tuple[sql.Composable, list[Any]]
    ) -> list[tuple[Any, ...]]:
        """The ``k`` best chunks of ``scope`` holding any stem of ``weight``, by BM25 (each
        stem's IDF times its copies), best first. MaxScore (common stems joining the
        candidates only while they could still matter) was measured slower here: its bound,
        ``(k1 + 1)`` times a stem's weight, is so loose that most queries needed every
        round."""
        chunks, terms, _ = self._totals()
        average = terms / chunks if chunks else 1.0
        lexemes = sorted(weight)
        where, params = scope
        query_sql = sql.SQL(
            "WITH q AS (SELECT * FROM unnest(%s::text[], %s::float8[]) AS q(lex, w)) "
            "SELECT {cols}, s.score FROM (SELECT c.chunk_id, ("
            "  SELECT sum(q.w * (c.terms ->> q.lex)::float8 * %s"
            "    / ((c.terms ->> q.lex)::float8 + %s * (1 - %s + %s * c.term_count / %s)))"
            "  FROM q WHERE c.terms ? q.lex) AS score"
            " FROM {chunks} c WHERE c.terms ?| %s::text[] AND {where}"
            " ORDER BY score DESC, c.chunk_id LIMIT %s) s"
            " JOIN {chunks} USING (chunk_id) ORDER BY s.score DESC, chunk_id"
        ).format(cols=_cols(), chunks=self._names["chunks"], where=where)
        args = [lexemes, [weight[s] for s in lexemes], BM25_K1 + 1, BM25_K1, BM25_B, BM25_B]
        return self._query(query_sql, [*args, average, lexemes, *params, k])

    def keyword_scale(self, query: str) -> float:
        """The sum of the query stems' IDFs (repeats counted), as ``keyword_search`` scores."""
        stems = _query_stems(query)
        idf = self._stem_idfs(stems)
        return sum(idf[s] for s in stems) if idf else 0.0

    def keyword_idfs(self, words: Sequence[str]) -> dict[str, float]:
        """Each word's IDF as ``keyword_search`` computes it, keyed by ``casefold``."""
        stems = {w.casefold(): found[0] for w in words if (found := word_stems([w])) and found[0]}
        idf = self._stem_idfs(list(stems.values()))
        return {w: idf[s] for w, s in stems.items()} if idf else {}

    def _totals(self) -> tuple[int, int, int]:
        """Chunks and terms of the whole index, and how many writes it has had (the
        triggers' running totals: no scan)."""
        chunks, terms, changes = self._query(self._q("SELECT chunks, terms, changes FROM {stats}"))[
            0
        ]
        return int(chunks), int(terms), int(changes)

    def _stem_idfs(self, stems: Sequence[str]) -> dict[str, float]:
        """Each stem's IDF over the whole index, ``log(1 + (N - n + 0.5) / (n + 0.5))`` (the
        BM25 IDF Redis's BM25STD uses too: never negative)."""
        total, counts = self._stem_counts(stems)
        return {s: _idf(total, n) for s, n in counts.items()}

    def _stem_counts(self, stems: Sequence[str]) -> tuple[int, dict[str, int]]:
        """Chunks in the whole index, and how many hold each stem: asked in one query and
        kept until the index next changes (a hybrid search asks the same stems three
        times, a session the common ones again and again)."""
        unique = sorted(set(stems))
        total, _, changes = self._totals()
        if not unique:
            return total, {}
        if self._conn().info.transaction_status != psycopg.pq.TransactionStatus.IDLE:
            changes = -2  # inside a transaction: counts of writes not committed, never kept
        with self._df_lock:
            if self._df_at != changes:
                self._df, self._df_at = {}, changes
            counts = {s: self._df[s] for s in unique if s in self._df}
        missing = [s for s in unique if s not in counts]
        if missing:
            rows = self._query(
                self._q(
                    "SELECT s, (SELECT count(*) FROM {chunks} WHERE terms ? s) "
                    "FROM unnest(%s::text[]) AS s"
                ),
                [missing],
            )
            fresh = {str(stem): int(n) for stem, n in rows}
            counts.update(fresh)
            with self._df_lock:
                if self._df_at == changes >= 0:
                    self._df.update(fresh)
        return total, counts

    def identifier_holders(
        self, tenant_id: str, identifier: str, limit: int, filters: ChunkFilters
    ) -> list[ChunkHit]:
        """Chunks of the scope holding ``identifier`` whole (case-insensitive)."""
        scope = _scope(tenant_id, filters)
        if scope is None or limit <= 0:
            return []
        where, params = scope
        query = sql.SQL(
            "SELECT {cols} FROM {chunks} WHERE idents @> ARRAY[%s]::text[] AND {where} "
            "ORDER BY chunk_id LIMIT %s"
        ).format(cols=_cols(), chunks=self._names["chunks"], where=where)
        rows = self._query(query, [identifier.casefold(), *params, limit])
        return [ChunkHit(_record(row), 0.0) for row in rows]

    def delete_by_doc(self, tenant_id: str, library_id: str, doc_id: str) -> int:
        """Remove every chunk of one document; 0 for an unknown one."""
        with self._tx() as conn:
            return int(
                conn.execute(
                    self._q("DELETE FROM {chunks} WHERE " + _ONE_DOC),
                    (tenant_id, library_id, doc_id),
                ).rowcount
            )

    def move_book(self, tenant_id: str, book_id: str, library_id: str) -> int:
        """Set ``library_id`` on the book's chunks not already there (vectors kept)."""
        with self._tx() as conn:
            return int(
                conn.execute(
                    self._q(
                        "UPDATE {chunks} SET library_id = %s "
                        "WHERE tenant_id = %s AND book_id = %s AND library_id <> %s"
                    ),
                    (library_id, tenant_id, book_id, library_id),
                ).rowcount
            )

    def get_doc_chunks(self, tenant_id: str, library_id: str, doc_id: str) -> list[ChunkRecord]:
        """The stored chunks of one document, with vectors, in chunk order."""
        query = sql.SQL(
            "SELECT {cols} FROM {chunks} WHERE tenant_id = %s AND library_id = %s "
            "AND doc_id = %s ORDER BY chunk_index"
        ).format(cols=_cols(), chunks=self._names["chunks"])
        return [_record(row) for row in self._query(query, [tenant_id, library_id, doc_id])]

    def count(self, tenant_id: str, library_id: str) -> int:
        """Chunks of one library of one tenant."""
        rows = self._query(
            self._q("SELECT count(*) FROM {chunks} WHERE tenant_id = %s AND library_id = %s"),
            [tenant_id, library_id],
        )
        return int(rows[0][0])

    def drop_library(self, tenant_id: str, library_id: str) -> int:
        """Remove one library's document states and chunks (one transaction)."""
        with self._tx() as conn:
            conn.execute(
                self._q("DELETE FROM {docs} WHERE tenant_id = %s AND library_id = %s"),
                (tenant_id, library_id),
            )
            return int(
                conn.execute(
                    self._q("DELETE FROM {chunks} WHERE tenant_id = %s AND library_id = %s"),
                    (tenant_id, library_id),
                ).rowcount
            )

    def doc_ids(self, tenant_id: str, library_id: str) -> set[str]:
        """Documents with chunks in one library."""
        rows = self._query(
            self._q(
                "SELECT DISTINCT doc_id FROM {chunks} WHERE tenant_id = %s AND library_id = %s"
            ),
            [tenant_id, library_id],
        )
        return {row[0] for row in rows}

    # -- document state ----------------------------------------------------------------
    def doc_states(self, tenant_id: str, library_id: str) -> dict[str, DocState]:
        """Every document state of one library."""
        rows = self._query(
            self._q(
                "SELECT doc_id, mtime, size, content_hash, chunk_count FROM {docs} "
                "WHERE tenant_id = %s AND library_id = %s"
            ),
            [tenant_id, library_id],
        )
        return {
            row[0]: DocState(row[0], float(row[1]), int(row[2]), row[3], int(row[4]))
            for row in rows
        }

    def doc_stats(self, tenant_id: str, library_id: str) -> dict[str, tuple[float, int]]:
        """Each document's stored (mtime, size)."""
        rows = self._query(
            self._q(
                "SELECT doc_id, mtime, size FROM {docs} WHERE tenant_id = %s AND library_id = %s"
            ),
            [tenant_id, library_id],
        )
        return {row[0]: (float(row[1]), int(row[2])) for row in rows}

    def set_doc_state(self, tenant_id: str, library_id: str, state: DocState) -> None:
        """Record a document as fully stored (after its chunks)."""
        with self._tx() as conn:
            self._set_state(conn, tenant_id, library_id, state)

    def _set_state(
        self, conn: psycopg.Connection[Any], tenant_id: str, library_id: str, state: DocState
    ) -> None:
        _check_text("doc_id", state.doc_id)
        conn.execute(
            self._q(
                "INSERT INTO {docs} VALUES (%s, %s, %s, %s, %s, %s, %s) "
                "ON CONFLICT (tenant_id, library_id, doc_id) DO UPDATE SET mtime = excluded.mtime, "
                "size = excluded.size, content_hash = excluded.content_hash, "
                "chunk_count = excluded.chunk_count"
            ),
            (tenant_id, library_id, state.doc_id, state.mtime, state.size, state.content_hash,
             state.chunk_count),
        )  # fmt: skip

    def delete_doc_state(self, tenant_id: str, library_id: str, doc_id: str) -> None:
        """Forget a document's state."""
        with self._tx() as conn:
            conn.execute(
                self._q("DELETE FROM {docs} WHERE " + _ONE_DOC),
                (tenant_id, library_id, doc_id),
            )

    # -- ownership -----------------------------------------------------------------------
    def library_owner(self, tenant_id: str, library_id: str) -> dict[str, str] | None:
        """Who fills one library, as ``set_library_owner`` recorded it."""
        rows = self._query(
            self._q("SELECT owner FROM {owners} WHERE tenant_id = %s AND library_id = %s"),
            [tenant_id, library_id],
        )
        return {str(k): str(v) for k, v in rows[0][0].items()} if rows else None

    def set_library_owner(self, tenant_id: str, library_id: str, owner: dict[str, str]) -> None:
        """Replace the owner record (no field of the old one survives)."""
        with self._tx() as conn:
            conn.execute(
                self._q(
                    "INSERT INTO {owners} VALUES (%s, %s, %s) "
                    "ON CONFLICT (tenant_id, library_id) DO UPDATE SET owner = excluded.owner"
                ),
                (tenant_id, library_id, Jsonb(dict(owner))),
            )

    # -- extras: statistics and the ingest lock ------------------------------------------
    def stats(self, tenant_id: str, library_id: str) -> dict[str, Any]:
        """Documents and chunks of one library, with the index's settings (``store info``)."""
        info = self.describe()
        documents = self._query(
            self._q("SELECT count(*) FROM {docs} WHERE tenant_id = %s AND library_id = %s"),
            [tenant_id, library_id],
        )[0][0]
        return {
            "backend": self.backend,
            "url": self.url,
            "index": self.index_name,
            "algorithm": self.algorithm,
            "metric": self.metric,
            "embedding_model": info.embedding_model if info else None,
            "dimensions": info.dimensions if info else None,
            "documents": int(documents),
            "chunks": self.count(tenant_id, library_id),
        }

    @contextmanager
    def library_lock(self, tenant_id: str, library_id: str, timeout: float) -> Iterator[None]:
        """A session advisory lock on its own connection while the block runs: waits at most
        ``timeout`` s, then ``IngestRunning``; the server frees it when its holder dies."""
        key = _lock_key(self.index_name, tenant_id, library_id)
        with self._guard():
            conn = psycopg.connect(self._conninfo, autocommit=True)
        try:
            deadline = time.monotonic() + timeout
            with self._guard():
                while not _fetch_one(conn, "SELECT pg_try_advisory_lock(%s)", key):
                    if time.monotonic() >= deadline:
                        raise IngestRunning(
                            f"another ingest of library {library_id!r} (tenant {tenant_id!r}) "
                            f"is running; waited {timeout:g} s"
                        )
                    time.sleep(0.1)
            yield
        finally:
            conn.close()  # ends the session: the lock goes with it

    def batch(self) -> AbstractContextManager[None]:
        """The block's writes in one transaction on this thread's connection (each document
        whole or not at all); a failure rolls the whole block back."""
        return self._batch()

    @contextmanager
    def _batch(self) -> Iterator[None]:
        with self._tx():
            yield

    def flush(self) -> None:
        """At an ingest's end: build the HNSW index once the index holds ``HNSW_FROM``
        chunks (every transaction is committed already). Built in one go, not row by row:
        pgvector's build from a full table is many times faster than its inserts, and below
        that size an exact scan answers in milliseconds. Searches go on while it builds."""
        if self.algorithm != "HNSW" or self.describe() is None or self._vector_index:
            return
        with self._guard():
            conn = self._conn()
            if _fetch_one(conn, "SELECT to_regclass(%s)", self._plain("chunks_vector")):
                self._vector_index = True
                return
            if self.total_count() < HNSW_FROM:
                return
            with conn.transaction():
                conn.execute(f"SET LOCAL maintenance_work_mem = '{HNSW_BUILD_MEMORY}'")
                conn.execute(
                    sql.SQL("CREATE INDEX IF NOT EXISTS {} ON {} USING hnsw (embedding {})").format(
                        self._names["chunks_vector"],
                        self._names["chunks"],
                        sql.SQL(_OPERATORS[self.metric][1]),
                    )
                )
        self._vector_index = True

    def close(self) -> None:
        """Close every connection of every thread."""
        with self._connections_lock:
            connections, self._connections = self._connections, []
        for conn in connections:
            conn.close()


# -- rows ------------------------------------------------------------------------------
def _names(index_name: str) -> dict[str, sql.Identifier]:
    """The quoted names of one index's tables, indexes, function and triggers."""
    parts = (
        "meta", "chunks", "docs", "owners", "stats", "chunks_doc", "chunks_book",
        "chunks_terms", "chunks_idents", "chunks_vector", "count_fn", "on_insert",
        "on_update", "on_delete",
    )  # fmt: skip
    return {part: sql.Identifier(f"{index_name}_{part}") for part in parts}


def _cols() -> sql.Composed:
    return sql.SQL(", ").join(map(sql.Identifier, _COLUMNS))


def _lock_key(*parts: str) -> int:
    """A signed 64-bit advisory lock key for ``parts`` (stable across processes)."""
    digest = hashlib.blake2b("\x1f".join(("holodeck", *parts)).encode(), digest_size=8).digest()
    return int.from_bytes(digest, "big", signed=True)


def _fetch_one(conn: psycopg.Connection[Any], query: str, *params: Any) -> Any:
    """The first column of the one row ``query`` returns (None without a row)."""
    row = conn.execute(query, params).fetchone()
    return None if row is None else row[0]


def _check_text(field: str, value: str) -> str:
    """PostgreSQL text holds no NUL character: such a value is refused, never cut."""
    if "\x00" in value:
        raise ValidationError(
            f"{field} {value[:80]!r} cannot be stored in PostgreSQL: it holds a NUL"
        )
    return value


def _row(rec: ChunkRecord) -> tuple[Any, ...]:
    """A chunk's column values, in ``_WRITTEN`` order, with its keyword terms."""
    for field in ("chunk_id", "tenant_id", "library_id", "book_id", "doc_id"):
        _check_text(field, getattr(rec, field))
    text = indexed_text(rec.content, rec.section)
    stems = stems_text(text).split()
    idents = sorted({i.casefold() for i in idents_text(text)})
    return (
        rec.chunk_id, rec.tenant_id, rec.library_id, rec.book_id, rec.doc_id,
        int(rec.chunk_index), rec.content.replace("\x00", ""),
        np.asarray(rec.vector, dtype=np.float32), rec.embedding_model, rec.source_path,
        float(rec.mtime), rec.content_hash, int(rec.token_count), list(rec.tags),
        rec.language, rec.location, rec.section, Jsonb(dict(Counter(stems))), len(stems),
        idents,
    )  # fmt: skip


def _record(row: Sequence[Any]) -> ChunkRecord:
    """A ``ChunkRecord`` from a row whose first columns are ``_COLUMNS``."""
    return ChunkRecord(
        chunk_id=row[0], tenant_id=row[1], library_id=row[2], book_id=row[3], doc_id=row[4],
        chunk_index=int(row[5]), content=row[6],
        vector=_vector(row[7]), embedding_model=row[8],
        source_path=row[9], mtime=float(row[10]), content_hash=row[11],
        token_count=int(row[12]), tags=list(row[13]), language=row[14], location=row[15],
        section=row[16],
    )  # fmt: skip


def _vector(value: Any) -> np.ndarray:
    """A stored vector as float32 (pgvector-python hands back its ``Vector``)."""
    if hasattr(value, "to_numpy"):
        value = value.to_numpy()
    return np.asarray(value, dtype=np.float32)


def _scope(tenant_id: str, filters: ChunkFilters) -> tuple[sql.Composable, list[Any]] | None:
    """The SQL condition and parameters of a tenant's scope; None when an empty list leaves
    nothing to search."""
    parts: list[sql.Composable] = [sql.SQL("tenant_id = %s")]
    params: list[Any] = [tenant_id]
    for column, values in (("library_id", filters.library_ids), ("book_id", filters.book_ids)):
        if values is None:
            continue
        if not values:
            return None
        parts.append(sql.SQL("{} = ANY(%s::text[])").format(sql.Identifier(column)))
        params.append(list(values))
    if filters.tags is not None:
        if not filters.tags:
            return None
        parts.append(sql.SQL("tags && %s::text[]"))
        params.append(list(filters.tags))
    if filters.language is not None:
        parts.append(sql.SQL("language = %s"))
        params.append(filters.language)
    return sql.SQL(" AND ").join(parts), params


def _idf(total: int, holders: int) -> float:
    """BM25's IDF of a stem ``holders`` of ``total`` chunks hold (as BM25STD computes it)."""
    return math.log(1 + (total - holders + 0.5) / (holders + 0.5))


def _query_stems(query: str) -> list[str]:
    """The stems of the query's word parts, as often as ``query_terms`` asks them (a term
    asked twice adds its BM25 again, as FTS5 and BM25STD do); compounds are looked up whole
    by ``identifier_holders``."""
    words = [t for t in query_terms(query) if not is_compound(t)]
    return [s for s in word_stems(words) if s]


def _require_pgvector(conn: psycopg.Connection[Any], shown: str) -> None:
    """pgvector in the database, created here when the user may; a ``ConfigError`` naming
    what to ask an administrator otherwise."""
    if conn.execute("SELECT 1 FROM pg_extension WHERE extname = 'vector'").fetchone():
        return
    try:
        conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
    except psycopg.Error as exc:
        raise ConfigError(
            f"PostgreSQL at {shown} has no pgvector ({redact(str(exc)).strip()}): install "
            "pgvector 0.8 or later and run CREATE EXTENSION vector in this database as its "
            "owner (managed services: enable the extension)"
        ) from None
