"""A chunk is inserted or replaced by its id (seed 004's ``upsertChunks``), whether the id
is derived from the chunk's place (``chunk_id_for``, which the SQLite index finds by that
place) or chosen by the caller; and an index written before ids were found by place
(migration ``m007``) keeps every row, id and answer.
"""

from __future__ import annotations

import dataclasses
import re
import sqlite3
from collections.abc import Callable
from pathlib import Path

import pytest
from test_local_index import rec as local_rec
from test_local_index import unit

from holodeck.vectorstore.local import LocalIndexAdapter
from holodeck.vectorstore.memory import MemoryIndexAdapter
from holodeck.vectorstore.records import ChunkRecord, DocState, chunk_id_for
from holodeck.vectorstore.sqlite.index import SqliteIndexAdapter
from holodeck.vectorstore.store import VectorStore


def rec(doc: str, index: int, text: str, seed: int, chunk_id: str | None = None) -> ChunkRecord:
    """A chunk of tenant ``t``, library ``kb``: its id derived from its place unless given."""
    made = local_rec("t", doc, index, text, seed)
    return dataclasses.replace(made, chunk_id=chunk_id) if chunk_id else made


def contents(store: VectorStore) -> dict[str, list[str]]:
    """Every stored chunk's content by its id (a list: two rows with one id would show)."""
    found: dict[str, list[str]] = {}
    for hit in store.search("t", unit(0), 100):
        found.setdefault(hit.record.chunk_id, []).append(hit.record.content)
    return found


ADAPTERS: dict[str, Callable[[Path], SqliteIndexAdapter]] = {
    "local": LocalIndexAdapter,
    "memory": lambda _: MemoryIndexAdapter(),
}


@pytest.mark.parametrize("backend", sorted(ADAPTERS))
def test_a_chunk_is_replaced_by_its_id_whoever_chose_it(tmp_path: Path, backend: str) -> None:
    store = VectorStore(ADAPTERS[backend](tmp_path))
    derived = chunk_id_for("t", "kb", "a.md", 0)
    store.upsert_chunks("t", [rec("a.md", 0, "first pump text", 1), rec("a.md", 1, "kept", 2)])
    store.upsert_chunks("t", [rec("a.md", 0, "second pump text", 3)])  # its place's id again
    store.upsert_chunks("t", [rec("a.md", 5, "faq seven, old", 4, chunk_id="faq-7")])
    store.upsert_chunks("t", [rec("b.md", 2, "faq seven, moved", 5, chunk_id="faq-7")])
    found = contents(store)
    assert found[derived] == ["second pump text"]
    assert found["faq-7"] == ["faq seven, moved"]
    assert found[chunk_id_for("t", "kb", "a.md", 1)] == ["kept"]

    # a chosen id that is another place's derived id replaces the chunk stored there ...
    store.upsert_chunks("t", [rec("c.md", 9, "chosen over a.md's", 6, chunk_id=derived)])
    # ... and a derived id a caller had chosen for another chunk replaces that one
    taken = chunk_id_for("t", "kb", "d.md", 0)
    store.upsert_chunks("t", [rec("e.md", 3, "chose d.md's id", 7, chunk_id=taken)])
    store.write_document(
        "t", "kb", "d.md", [rec("d.md", 0, "d.md itself", 8)], DocState("d.md", 1.0, 1, "x", 1)
    )
    found = contents(store)
    assert found[derived] == ["chosen over a.md's"]
    assert found[taken] == ["d.md itself"]
    assert sum(len(texts) for texts in found.values()) == store.adapter.total_count() == 4


def _before_m007(db_path: Path) -> None:
    """Take an index back to the release before ``m007``: every id in one unique index."""
    with sqlite3.connect(db_path) as db:
        seq = db.execute("SELECT seq FROM sqlite_sequence WHERE name = 'chunks'").fetchone()
        sql = db.execute("SELECT sql FROM sqlite_master WHERE name = 'chunks'").fetchone()[0]
        old = re.sub(r'CREATE TABLE "?chunks"?', "CREATE TABLE chunks_old", sql).replace(
            "chunk_id TEXT NOT NULL,", "chunk_id TEXT NOT NULL UNIQUE,"
        )
        db.execute(old)
        db.execute("ALTER TABLE chunks_old DROP COLUMN derived")
        columns = [r[1] for r in db.execute("PRAGMA table_info(chunks_old)")]
        db.execute(f"INSERT INTO chunks_old SELECT {', '.join(columns)} FROM chunks")
        db.execute("DROP TABLE chunks")
        db.execute("ALTER TABLE chunks_old RENAME TO chunks")
        db.execute("CREATE INDEX chunks_by_doc ON chunks (lib, doc_id, chunk_index)")
        db.execute("CREATE INDEX chunks_by_book ON chunks (book_id)")
        db.execute("UPDATE sqlite_sequence SET seq = ? WHERE name = 'chunks'", seq)
        db.execute("DELETE FROM _migrations WHERE name = 'm007_chunk_ids_by_place'")


def test_an_index_from_before_ids_by_place_keeps_every_row_id_and_answer(
    tmp_path: Path,
) -> None:
    store = VectorStore(LocalIndexAdapter(tmp_path))
    for d in range(6):
        doc = f"doc{d}.md"
        records = [rec(doc, i, f"pump {d} part {i}", 10 * d + i) for i in range(3)]
        store.write_document("t", "kb", doc, records, DocState(doc, 1.0, 1, f"s{d}", 3))
    store.upsert_chunks("t", [rec("faq.md", 0, "a chosen id", 99, chunk_id="faq-1")])
    store.upsert_chunks("t", [rec("last.md", 0, "deleted again", 98)])
    store.delete_by_doc("t", "kb", "last.md")  # the sequence is now past the last row
    before = {h.record.chunk_id: h.record.content for h in store.search("t", unit(5), 30)}
    store.adapter.close()
    db_path = tmp_path / "index.db"
    with sqlite3.connect(db_path) as db:
        rows_before = db.execute("SELECT id, chunk_id FROM chunks ORDER BY id").fetchall()
        seq_before = db.execute("SELECT seq FROM sqlite_sequence WHERE name = 'chunks'").fetchone()
    _before_m007(db_path)

    store = VectorStore(LocalIndexAdapter(tmp_path))  # opening it migrates it
    assert {h.record.chunk_id: h.record.content for h in store.search("t", unit(5), 30)} == before
    store.upsert_chunks("t", [rec("faq.md", 0, "the chosen id again", 97, chunk_id="faq-1")])
    store.upsert_chunks("t", [rec("doc0.md", 1, "doc0 part 1, edited", 96)])
    store.adapter.close()
    with sqlite3.connect(db_path) as db:
        assert db.execute("PRAGMA integrity_check").fetchone() == ("ok",)
        rows = dict(db.execute("SELECT chunk_id, derived FROM chunks").fetchall())
        ids = {r[0] for r in db.execute("SELECT id FROM chunks")}
    assert rows.pop("faq-1") == 0 and set(rows.values()) == {1}
    assert len(rows) + 1 == len(rows_before)  # nothing lost, nothing doubled
    assert min(ids - {i for i, _ in rows_before}) > seq_before[0]  # no deleted row's id again
