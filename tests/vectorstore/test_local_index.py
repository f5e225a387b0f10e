"""The SQLite index under ``local``: tenants kept apart, the full-text rows in step with the
chunks, readers following another process's writes, old indexes imported, failures named.

Each "other process" is a second adapter on the same file (its own connection), which is
what another holodeck process is to SQLite.
"""

from __future__ import annotations

import itertools
import json
import logging
import sqlite3
from dataclasses import asdict
from pathlib import Path

import numpy as np
import pytest
from rankings import assert_same_ranking

from holodeck.errors import DamagedIndex, IngestError
from holodeck.vectorstore.local import LocalIndexAdapter
from holodeck.vectorstore.records import ChunkFilters, ChunkRecord, DocState, chunk_id_for
from holodeck.vectorstore.sqlite import query as sqlite_query
from holodeck.vectorstore.store import VectorStore

DIMS = 8


def unit(seed: int) -> np.ndarray:
    vec = np.random.default_rng(seed).normal(size=DIMS).astype(np.float32)
    return vec / np.linalg.norm(vec)


def rec(
    tenant: str, doc: str, index: int, text: str, seed: int, library: str = "kb"
) -> ChunkRecord:
    return ChunkRecord(
        chunk_id=chunk_id_for(tenant, library, doc, index),
        tenant_id=tenant,
        library_id=library,
        book_id=".",
        doc_id=doc,
        chunk_index=index,
        content=text,
        vector=unit(seed),
        embedding_model="m",
        source_path=f"docs/{doc}",
        mtime=1.0,
        content_hash=f"h{seed}",
        token_count=len(text.split()),
        location=f"lines {index + 1}-{index + 2}",
    )


def write(store: VectorStore, tenant: str, doc: str, texts: list[str], seed: int) -> None:
    records = [rec(tenant, doc, i, t, seed + i) for i, t in enumerate(texts)]
    state = DocState(doc, 1.0, 10, f"d{seed}", len(records))
    store.write_document(tenant, "kb", doc, records, state)


def fts_docs(folder: Path, word: str) -> set[str]:
    """Documents whose chunks the full-text index finds for ``word`` (read as SQL would)."""
    with sqlite3.connect(folder / "index.db") as db:
        rows = db.execute(
            "SELECT c.doc_id FROM chunks_fts f JOIN chunks c ON c.id = f.rowid "
            "WHERE chunks_fts MATCH ?",
            (json.dumps(word),),
        ).fetchall()
        db.execute("INSERT INTO chunks_fts (chunks_fts) VALUES ('integrity-check')")
    return {r[0] for r in rows}


def test_two_tenants_in_one_database_never_see_each_other(tmp_path: Path) -> None:
    store = VectorStore(LocalIndexAdapter(tmp_path))
    write(store, "acme", "same.md", ["acme secret plans"], seed=1)
    write(store, "globex", "same.md", ["globex secret plans"], seed=1)  # same ids, same vector
    for tenant in ("acme", "globex"):
        hits = store.search(tenant, unit(1), 10)
        assert [h.record.content for h in hits] == [f"{tenant} secret plans"]
        assert set(store.doc_states(tenant, "kb")) == {"same.md"}
        assert [c.content for c in store.doc_chunks(tenant, "kb", "same.md")] == [
            f"{tenant} secret plans"
        ]
    assert store.search("initech", unit(1), 10) == []
    assert store.remove_document("acme", "kb", "same.md") == 1
    assert store.search("acme", unit(1), 10) == []
    assert [h.record.tenant_id for h in store.search("globex", unit(1), 10)] == ["globex"]
    assert store.count("globex", "kb") == 1


def test_full_text_rows_follow_every_edit_and_delete(tmp_path: Path) -> None:
    store = VectorStore(LocalIndexAdapter(tmp_path))
    write(store, "t", "a.md", ["the walrus sings", "a quiet harbour"], seed=1)
    write(store, "t", "b.md", ["walrus and carpenter"], seed=5)
    assert fts_docs(tmp_path, "walrus") == {"a.md", "b.md"}
    write(store, "t", "a.md", ["the pelican sings", "a quiet harbour"], seed=1)  # edited
    assert fts_docs(tmp_path, "walrus") == {"b.md"}
    assert fts_docs(tmp_path, "pelican") == {"a.md"}
    store.remove_document("t", "kb", "b.md")  # the file vanished
    assert fts_docs(tmp_path, "walrus") == set()
    assert fts_docs(tmp_path, "harbour") == {"a.md"}


def test_a_reader_follows_what_another_process_commits(tmp_path: Path) -> None:
    reader = VectorStore(LocalIndexAdapter(tmp_path))
    writer = VectorStore(LocalIndexAdapter(tmp_path))
    write(writer, "t", "a.md", ["alpha"], seed=1)
    write(writer, "t", "b.md", ["beta"], seed=2)
    assert reader.search("t", unit(2), 1)[0].record.content == "beta"  # loads the vectors

    write(writer, "t", "c.md", ["gamma"], seed=3)  # added
    writer.remove_document("t", "kb", "b.md")  # deleted
    write(writer, "t", "a.md", ["alpha two"], seed=4)  # edited: a new vector
    hits = reader.search("t", unit(3), 10)
    assert sorted(h.record.content for h in hits) == ["alpha two", "gamma"]
    assert reader.search("t", unit(4), 1)[0].record.content == "alpha two"
    assert reader.search("t", unit(4), 1)[0].score == pytest.approx(1.0, abs=1e-5)
    # the keyword side's hits carry the vectors now committed (the edit's new one)
    (edited,) = reader.keyword_search("t", "alpha", 5)
    np.testing.assert_allclose(edited.record.vector, unit(4), atol=1e-6)

    assert writer.move_book("t", ".", "archive") == 2  # moved to another library
    assert reader.search("t", unit(3), 10, ChunkFilters(library_ids=["kb"])) == []
    moved = reader.search("t", unit(3), 10, ChunkFilters(library_ids=["archive"]))
    assert sorted(h.record.content for h in moved) == ["alpha two", "gamma"]


def test_a_batch_is_seen_whole_and_a_failed_one_leaves_nothing(tmp_path: Path) -> None:
    """An ingest commits a window of files as one batch: a reader sees none of it until
    the batch ends, then all of it; a batch that fails leaves what was stored before."""
    reader = VectorStore(LocalIndexAdapter(tmp_path))
    writer = VectorStore(LocalIndexAdapter(tmp_path))
    write(writer, "t", "a.md", ["alpha"], seed=1)
    with writer.batch():
        write(writer, "t", "b.md", ["beta"], seed=2)
        write(writer, "t", "a.md", ["alpha two"], seed=3)
        assert set(reader.doc_states("t", "kb")) == {"a.md"}
        assert [h.record.content for h in reader.search("t", unit(1), 5)] == ["alpha"]
    assert set(reader.doc_states("t", "kb")) == {"a.md", "b.md"}
    assert sorted(h.record.content for h in reader.search("t", unit(3), 5)) == [
        "alpha two",
        "beta",
    ]

    with pytest.raises(RuntimeError), writer.batch():
        write(writer, "t", "c.md", ["gamma"], seed=4)
        writer.remove_document("t", "kb", "a.md")
        raise RuntimeError("the ingest stopped here")
    assert set(reader.doc_states("t", "kb")) == {"a.md", "b.md"}
    assert fts_docs(tmp_path, "gamma") == set()
    assert fts_docs(tmp_path, "two") == {"a.md"}


def test_a_reader_far_behind_a_trimmed_log_reloads(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import holodeck.vectorstore.sqlite.index as sqlite_adapter

    monkeypatch.setattr(sqlite_adapter, "CHANGES_KEPT", 1)
    reader = VectorStore(LocalIndexAdapter(tmp_path))
    writer = VectorStore(LocalIndexAdapter(tmp_path))
    for i in range(4):
        write(writer, "t", f"d{i}.md", [f"doc {i}"], seed=i)
    assert len(reader.search("t", unit(0), 10)) == 4
    for i in range(3):
        writer.remove_document("t", "kb", f"d{i}.md")
    writer.flush()  # trims the log past what the reader saw
    assert [h.record.content for h in reader.search("t", unit(0), 10)] == ["doc 3"]


def test_a_rebuild_by_another_process_is_seen(tmp_path: Path) -> None:
    from holodeck.vectorstore.records import IndexInfo

    reader = VectorStore(LocalIndexAdapter(tmp_path))
    writer = VectorStore(LocalIndexAdapter(tmp_path))
    write(writer, "t", "a.md", ["alpha"], seed=1)
    assert len(reader.search("t", unit(1), 5)) == 1
    writer.rebuild(IndexInfo("m", DIMS))
    assert reader.search("t", unit(1), 5) == []


def test_keyword_hits_after_a_rebuild_carry_the_new_rows_vectors(tmp_path: Path) -> None:
    from holodeck.vectorstore.records import IndexInfo

    reader = VectorStore(LocalIndexAdapter(tmp_path))
    writer = VectorStore(LocalIndexAdapter(tmp_path))
    write(writer, "t", "a.md", ["alpha"], seed=1)
    assert len(reader.search("t", unit(1), 5)) == 1  # the reader holds the vectors
    writer.rebuild(IndexInfo("m", DIMS))
    write(writer, "t", "b.md", ["alpha"], seed=7)  # the rebuilt index's row ids start again
    (hit,) = reader.keyword_search("t", "alpha", 5)
    assert hit.record.doc_id == "b.md"
    np.testing.assert_allclose(hit.record.vector, unit(7), atol=1e-6)  # not a.md's


def old_npz(folder: Path, records: list[ChunkRecord], states: list[DocState]) -> Path:
    """An index.npz exactly as releases before the SQLite index wrote it."""
    folder.mkdir(parents=True)
    meta = {
        "version": 1,
        "info": {"embedding_model": "m", "dimensions": DIMS},
        "records": [
            {k: v for k, v in asdict(r).items() if k not in ("vector", "location")} for r in records
        ],
        "states": [{"tenant": "t", "library": "kb", "docs": [vars(s) for s in states]}],
    }
    blob = np.frombuffer(json.dumps(meta).encode("utf-8"), dtype=np.uint8)
    path = folder / "index.npz"
    np.savez(path, vectors=np.stack([r.vector for r in records]), meta=blob)
    return path


def test_an_old_npz_index_is_imported_once_without_re_embedding(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    records = [rec("t", "a.md", 0, "alpha", 1), rec("t", "a.md", 1, "beta", 2)]
    path = old_npz(tmp_path / "idx", records, [DocState("a.md", 5.0, 12, "dig", 2)])
    with caplog.at_level(logging.INFO, logger="holodeck"):
        store = VectorStore(LocalIndexAdapter(tmp_path / "idx"))
    assert [m for m in caplog.messages if "Imported 2 chunks from index.npz" in m]
    assert not path.exists() and (tmp_path / "idx" / "index.npz.imported").exists()
    assert store.doc_states("t", "kb") == {"a.md": DocState("a.md", 5.0, 12, "dig", 2)}
    chunks = store.doc_chunks("t", "kb", "a.md")
    assert [c.content for c in chunks] == ["alpha", "beta"]
    np.testing.assert_array_equal(chunks[1].vector, records[1].vector)
    assert store.search("t", unit(2), 1)[0].record.content == "beta"
    caplog.clear()
    with caplog.at_level(logging.INFO, logger="holodeck"):
        VectorStore(LocalIndexAdapter(tmp_path / "idx"))  # reopened: nothing imported again
    assert not [m for m in caplog.messages if "Imported" in m]


def test_an_unreadable_old_index_is_named_and_force_sets_it_aside(tmp_path: Path) -> None:
    folder = tmp_path / "idx"
    folder.mkdir()
    (folder / "index.npz").write_bytes(b"PK\x03\x04 truncated")
    with pytest.raises(IngestError) as err:
        LocalIndexAdapter(folder)
    assert "index.npz" in str(err.value) and "--force-ingest" in str(err.value)
    store = VectorStore(LocalIndexAdapter(folder, rebuild_unreadable=True))
    assert store.count("t", "kb") == 0
    assert [p.name for p in folder.glob("index.npz.unusable-*")]


def test_a_damaged_or_newer_database_is_named_and_force_rebuilds_it(tmp_path: Path) -> None:
    folder = tmp_path / "idx"
    write(VectorStore(LocalIndexAdapter(folder)), "t", "a.md", ["alpha"], seed=1)
    with sqlite3.connect(folder / "index.db") as db:
        db.execute("INSERT INTO _migrations VALUES ('m999_from_the_future', 0)")
    with pytest.raises(IngestError) as err:
        LocalIndexAdapter(folder)
    assert "newer holodeck" in str(err.value) and "--force-ingest" in str(err.value)

    (folder / "index.db").write_bytes(b"this is not a database" * 100)
    for suffix in ("-wal", "-shm"):
        Path(f"{folder / 'index.db'}{suffix}").unlink(missing_ok=True)
    with pytest.raises(DamagedIndex) as damaged:
        LocalIndexAdapter(folder)
    assert str(folder / "index.db") in str(damaged.value)
    assert "--force-ingest" in str(damaged.value)

    store = VectorStore(LocalIndexAdapter(folder, rebuild_unreadable=True))
    assert store.count("t", "kb") == 0
    write(store, "t", "a.md", ["alpha"], seed=1)
    assert store.count("t", "kb") == 1
    assert list(folder.glob("index.db.damaged-*"))


def test_a_full_disk_keeps_the_last_committed_document_and_names_the_folder(
    tmp_path: Path,
) -> None:
    adapter = LocalIndexAdapter(tmp_path)
    store = VectorStore(adapter)
    write(store, "t", "a.md", ["alpha"], seed=1)
    db = adapter._db()
    pages = db.execute("PRAGMA page_count").fetchone()[0]
    db.execute(f"PRAGMA max_page_count = {pages + 2}")  # what a full disk looks like to SQLite
    big = ["x" * 50_000 + f" chunk {i}" for i in range(4)]
    with pytest.raises(IngestError) as err:
        write(store, "t", "a.md", big, seed=7)
    assert "disk is full" in str(err.value) and str(tmp_path) in str(err.value)
    reopened = VectorStore(LocalIndexAdapter(tmp_path))
    assert [c.content for c in reopened.doc_chunks("t", "kb", "a.md")] == ["alpha"]
    assert reopened.doc_states("t", "kb")["a.md"].chunk_count == 1
    assert not [p for p in tmp_path.iterdir() if p.name.endswith(".tmp")]


def test_a_large_index_searched_in_parts_answers_as_in_one_pass(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Past PARALLEL_MIN_ROWS a search is cut into ranges of rows searched at once; the
    answer (hits, order, scores, tenants kept apart) must be the one a single pass gives."""
    store = VectorStore(LocalIndexAdapter(tmp_path))
    words = ["pressure", "wing", "shock", "heat", "flow", "layer", "drag", "lift"]
    for n in range(120):
        tenant = "acme" if n % 3 else "globex"
        texts = [" ".join(words[(n * 7 + i * j) % 8] for j in range(1 + n % 5)) for i in range(3)]
        write(store, tenant, f"doc{n}.md", texts, seed=10 * n)
    queries = ["pressure wing", "shock heat flow", "drag"]
    scopes = [ChunkFilters(library_ids=["kb"]), ChunkFilters(library_ids=["kb"], book_ids=["."])]

    def answers() -> list[list[tuple[str, float]]]:
        found = []
        # k=5: each part's best merged; k=1000: every match, so no row may go missing.
        for tenant, scope, k in itertools.product(["acme", "globex"], scopes, [5, 1000]):
            for q in queries:
                hits = store.keyword_search(tenant, q, k, scope)
                found.append([(h.record.chunk_id, h.score) for h in hits])
            for seed in range(5):
                hits = store.search(tenant, unit(seed), k, scope)
                found.append([(h.record.chunk_id, h.score) for h in hits])
        return found

    one_pass = answers()
    assert all(one_pass) and len({tuple(a) for a in one_pass}) > 1
    monkeypatch.setattr(sqlite_query, "PARALLEL_MIN_ROWS", 40)
    monkeypatch.setattr(LocalIndexAdapter, "read_workers", lambda self: 3)
    assert len(sqlite_query.id_ranges(1, 360, 3)) == 3
    in_parts = answers()
    assert len(in_parts) == len(one_pass)
    for got, want in zip(in_parts, one_pass, strict=True):
        # float32 products summed in other blocks: equal within FLOAT32_SCORE_TOL, and
        # ordered alike wherever the scores differ by more than that.
        assert_same_ranking(got, want)
    store.adapter.close()
