"""The on-disk schema of the embedded index, as numbered migrations applied when it opens.

Each migration is a few statements and runs once, in order, inside the transaction that
records it in ``_migrations``; an index written by an older release upgrades itself when a
newer one opens it. An index holding a migration this release does not know was written by a
newer holodeck, and is refused rather than misread.

Layout: ``libraries`` (tenant + library -> a small integer, and who fills it), ``chunks`` (every
ancestor id, content, metadata), ``vectors`` (float32 BLOBs, searched by numpy in memory),
``documents`` (per-document state), ``chunks_fts`` (FTS5 over the words and identifiers of each
chunk's heading path and text, kept in step by the adapter), ``changes`` (ids of vectors
deleted or moved, so a reader's in-memory matrix follows the change instead of reloading),
``vector_files`` (each large library's approximate index file, the point of ``chunks``
and ``changes`` it covers and its seal: ``vectors``, ``side_files``), ``keyword_files`` (the
same for a large index's postings file: ``postings``) and ``meta`` (the model and dimensions of
the index).
"""

from __future__ import annotations

import sqlite3
import time
import uuid
from collections.abc import Callable

from holodeck.text.analysis import idents_text, words_text
from holodeck.vectorstore.records import chunk_id_for
from holodeck.vectorstore.sqlite.query import keyword_columns

#: Porter-stemmed words; ``-_.`` inside tokens only matter in ``idents`` (``words`` has none).
FTS_TOKENIZER = "porter unicode61 remove_diacritics 2 tokenchars '-_.'"

Migration = Callable[[sqlite3.Connection], None]
MIGRATIONS: list[Migration] = []


def migration(func: Migration) -> Migration:
    """Register a migration; they run in the order they are defined."""
    MIGRATIONS.append(func)
    return func


class NewerIndexError(Exception):
    """The index holds migrations this release does not know."""


def migrate(db: sqlite3.Connection) -> None:
    """Apply every migration the database has not seen, each in its own transaction."""
    db.execute("CREATE TABLE IF NOT EXISTS _migrations (name TEXT PRIMARY KEY, applied REAL)")
    done = {row[0] for row in db.execute("SELECT name FROM _migrations")}
    known = {m.__name__ for m in MIGRATIONS}
    unknown = sorted(done - known)
    if unknown:
        raise NewerIndexError(", ".join(unknown))
    for func in MIGRATIONS:
        if func.__name__ in done:
            continue
        db.execute("BEGIN IMMEDIATE")
        try:
            # another process may have applied it while we waited for the write lock
            if db.execute("SELECT 1 FROM _migrations WHERE name = ?", (func.__name__,)).fetchone():
                db.execute("COMMIT")
                continue
            func(db)
            db.execute("INSERT INTO _migrations VALUES (?, ?)", (func.__name__, time.time()))
            db.execute("COMMIT")
        except BaseException:
            if db.in_transaction:
                db.execute("ROLLBACK")
            raise


@migration
def m001_create_tables(db: sqlite3.Connection) -> None:
    db.execute("CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)")
    # The epoch changes when the index is rebuilt: readers then drop what they loaded.
    db.execute("INSERT INTO meta VALUES ('epoch', ?)", (uuid.uuid4().hex,))
    db.execute(
        """CREATE TABLE libraries (
            id INTEGER PRIMARY KEY,
            tenant_id TEXT NOT NULL,
            library_id TEXT NOT NULL,
            owner TEXT,
            UNIQUE (tenant_id, library_id)
        )"""
    )
    db.execute(
        """CREATE TABLE chunks (
            id INTEGER PRIMARY KEY AUTOINCREMENT,
            chunk_id TEXT NOT NULL UNIQUE,
            lib INTEGER NOT NULL REFERENCES libraries (id),
            book_id TEXT NOT NULL,
            doc_id TEXT NOT NULL,
            chunk_index INTEGER NOT NULL,
            content TEXT NOT NULL,
            embedding_model TEXT NOT NULL,
            source_path TEXT NOT NULL,
            mtime REAL NOT NULL,
            content_hash TEXT NOT NULL,
            token_count INTEGER NOT NULL,
            tags TEXT NOT NULL DEFAULT '[]',
            language TEXT,
            location TEXT NOT NULL DEFAULT ''
        )"""
    )
    db.execute("CREATE INDEX chunks_by_doc ON chunks (lib, doc_id, chunk_index)")
    db.execute("CREATE INDEX chunks_by_book ON chunks (book_id)")
    # Vectors apart from the text, so loading them reads only vector pages.
    db.execute(
        "CREATE TABLE vectors (id INTEGER PRIMARY KEY, lib INTEGER NOT NULL, vector BLOB NOT NULL)"
    )
    db.execute("CREATE TABLE changes (seq INTEGER PRIMARY KEY AUTOINCREMENT, id INTEGER NOT NULL)")
    db.execute(
        "CREATE TRIGGER vectors_deleted AFTER DELETE ON vectors "
        "BEGIN INSERT INTO changes (id) VALUES (old.id); END"
    )
    db.execute(
        "CREATE TRIGGER vectors_moved AFTER UPDATE OF lib ON vectors "
        "BEGIN INSERT INTO changes (id) VALUES (old.id); END"
    )
    db.execute(
        """CREATE TABLE documents (
            lib INTEGER NOT NULL,
            doc_id TEXT NOT NULL,
            mtime REAL NOT NULL,
            size INTEGER NOT NULL,
            content_hash TEXT NOT NULL,
            chunk_count INTEGER NOT NULL,
            PRIMARY KEY (lib, doc_id)
        ) WITHOUT ROWID"""
    )
    db.execute(
        "CREATE VIRTUAL TABLE chunks_fts USING fts5("
        "content, content='chunks', content_rowid='id', tokenize='unicode61')"
    )
    db.execute(
        "CREATE TRIGGER chunks_fts_insert AFTER INSERT ON chunks BEGIN "
        "INSERT INTO chunks_fts (rowid, content) VALUES (new.id, new.content); END"
    )
    db.execute(
        "CREATE TRIGGER chunks_fts_delete AFTER DELETE ON chunks BEGIN "
        "INSERT INTO chunks_fts (chunks_fts, rowid, content) "
        "VALUES ('delete', old.id, old.content); END"
    )


@migration
def m002_fts_words_and_idents(db: sqlite3.Connection) -> None:
    # The keyword side that ranked best (see benchmarks/README.md, 'Search quality'):
    # Porter-stemmed words, and the compound tokens (max_retries, os.path.join) whole in a
    # column of their own. The FTS table holds no text (contentless): the adapter writes and
    # deletes its rows with the chunks, in the same transaction.
    db.execute("DROP TRIGGER chunks_fts_insert")
    db.execute("DROP TRIGGER chunks_fts_delete")
    db.execute("DROP TABLE chunks_fts")
    db.execute(
        "CREATE VIRTUAL TABLE chunks_fts USING fts5(words, idents, content='', "
        f"tokenize={FTS_TOKENIZER!r})"
    )
    for row_id, content in db.execute("SELECT id, content FROM chunks").fetchall():
        db.execute(
            "INSERT INTO chunks_fts (rowid, words, idents) VALUES (?, ?, ?)",
            (row_id, words_text(content), " ".join(idents_text(content))),
        )


@migration
def m003_vector_files(db: sqlite3.Connection) -> None:
    # The approximate index file of a large library (vectors): its name, the last
    # chunk id and change it covers, its vector count (checked when it is opened), and how
    # many entries were removed from it since it was built.
    db.execute(
        """CREATE TABLE vector_files (
            lib INTEGER PRIMARY KEY,
            file TEXT NOT NULL,
            chunk_seq INTEGER NOT NULL,
            change_seq INTEGER NOT NULL,
            count INTEGER NOT NULL,
            removed INTEGER NOT NULL
        )"""
    )


@migration
def m004_chunk_sections(db: sqlite3.Connection) -> None:
    # Each chunk's heading path ("EXAMPLES › Undo a commit"). Chunks stored before it have
    # none ('') until their document is ingested again, which the next ingest does (the
    # pipeline's version changed): their vectors are reused where the text is unchanged.
    db.execute("ALTER TABLE chunks ADD COLUMN section TEXT NOT NULL DEFAULT ''")


@migration
def m005_sections_keyword_indexed(db: sqlite3.Connection) -> None:
    # A chunk's heading path is keyword indexed with its text (records.indexed_text). The
    # full-text table is contentless: a row is forgotten only when told the words it was
    # given, so every row is written again by the new rule before any is deleted. (Their
    # vectors follow at the next ingest: the pipeline's CHUNKING_VERSION moved with it.)
    db.execute("INSERT INTO chunks_fts (chunks_fts) VALUES ('delete-all')")
    rows = db.execute("SELECT id, content, section FROM chunks").fetchall()
    for row_id, content, section in rows:
        db.execute(
            "INSERT INTO chunks_fts (rowid, words, idents) VALUES (?, ?, ?)",
            (row_id, *keyword_columns(content, section)),
        )


@migration
def m006_keyword_files(db: sqlite3.Connection) -> None:
    # The postings file of a large index (postings): its name, the last chunk id and
    # change it covers, and its rows and postings (checked when it is opened). One at most.
    db.execute(
        """CREATE TABLE keyword_files (
            file TEXT NOT NULL,
            chunk_seq INTEGER NOT NULL,
            change_seq INTEGER NOT NULL,
            rows INTEGER NOT NULL,
            postings INTEGER NOT NULL
        )"""
    )


@migration
def m007_chunk_ids_by_place(db: sqlite3.Connection) -> None:
    # A chunk id derived from the chunk's place (records.chunk_id_for, a hash: random keys)
    # is found by that place (chunks_by_doc) instead of a unique index over every id, where
    # each insert of a random key dirtied its own page: the part of a build's writes that
    # grew with the library. Ids a caller chose (derived = 0) keep a unique index of their
    # own. SQLite cannot drop a constraint, so the table is copied (its row ids, which the
    # vectors, full-text rows and files beside the database use, kept as they are).
    seq = db.execute("SELECT seq FROM sqlite_sequence WHERE name = 'chunks'").fetchone()
    db.create_function("derived_id", 4, chunk_id_for, deterministic=True)
    db.execute(
        """CREATE TABLE chunks_new (
            id INTEGER PRIMARY KEY AUTOINCREMENT,
            chunk_id TEXT NOT NULL,
            lib INTEGER NOT NULL REFERENCES libraries (id),
            book_id TEXT NOT NULL,
            doc_id TEXT NOT NULL,
            chunk_index INTEGER NOT NULL,
            content TEXT NOT NULL,
            embedding_model TEXT NOT NULL,
            source_path TEXT NOT NULL,
            mtime REAL NOT NULL,
            content_hash TEXT NOT NULL,
            token_count INTEGER NOT NULL,
            tags TEXT NOT NULL DEFAULT '[]',
            language TEXT,
            location TEXT NOT NULL DEFAULT '',
            section TEXT NOT NULL DEFAULT '',
            derived INTEGER NOT NULL DEFAULT 0
        )"""
    )
    columns = (
        "id, chunk_id, lib, book_id, doc_id, chunk_index, content, embedding_model, "
        "source_path, mtime, content_hash, token_count, tags, language, location, section"
    )
    db.execute(
        f"INSERT INTO chunks_new ({columns}, derived) "
        f"SELECT {', '.join('c.' + c for c in columns.split(', '))}, "
        "c.chunk_id = derived_id(l.tenant_id, l.library_id, c.doc_id, c.chunk_index) "
        "FROM chunks c JOIN libraries l ON l.id = c.lib ORDER BY c.id"
    )
    db.execute("DROP TABLE chunks")
    db.execute("ALTER TABLE chunks_new RENAME TO chunks")
    db.execute("CREATE INDEX chunks_by_doc ON chunks (lib, doc_id, chunk_index)")
    db.execute("CREATE INDEX chunks_by_book ON chunks (book_id)")
    db.execute("CREATE UNIQUE INDEX chunks_by_chosen_id ON chunks (chunk_id) WHERE derived = 0")
    if seq is not None:  # ids are never reused, also past the last row deleted
        db.execute("DELETE FROM sqlite_sequence WHERE name = 'chunks'")
        db.execute("INSERT INTO sqlite_sequence (name, seq) VALUES ('chunks', ?)", seq)


@migration
def m008_side_file_seals(db: sqlite3.Connection) -> None:
    # Each file's seal (side_files.Seal): its CRC-32 as written and its stamp then (size,
    # times, inode), so a damaged file is never trusted; a vector file's codes have their
    # own. Files recorded before have none (NULL) and are rebuilt by the next ingest.
    db.execute("ALTER TABLE vector_files ADD COLUMN checksum INTEGER")
    db.execute("ALTER TABLE vector_files ADD COLUMN stamp TEXT")
    db.execute("ALTER TABLE vector_files ADD COLUMN codes_checksum INTEGER")
    db.execute("ALTER TABLE vector_files ADD COLUMN codes_stamp TEXT")
    db.execute("ALTER TABLE keyword_files ADD COLUMN checksum INTEGER")
    db.execute("ALTER TABLE keyword_files ADD COLUMN stamp TEXT")
