"""A large local index scores keywords from its postings file: the answers are FTS5's own,
row for row and score for score, before and after rows are added, deleted and moved, and a
file that is missing or damaged is never trusted and is written anew by the next ingest."""

from __future__ import annotations

import logging
import random
import shutil
import sqlite3
from pathlib import Path

import pytest
from damage import flip_bytes
from test_keyword_pruning import record

from holodeck.vectorstore.local import LocalIndexAdapter
from holodeck.vectorstore.records import ChunkFilters, DocState, chunk_id_for
from holodeck.vectorstore.sqlite import postings as sqlite_postings
from holodeck.vectorstore.sqlite import side_files
from holodeck.vectorstore.sqlite.fulltext import TermCounts, keyword_search
from holodeck.vectorstore.store import VectorStore

#: Words by how common they are: the first in most chunks, the last in a few.
WORDS = [f"w{i}" for i in range(60)] + ["flows", "flowing", "Café", "naïve"]
WEIGHTS = [1.0 / (i + 1) ** 1.1 for i in range(64)]
QUESTIONS = [
    "w0 w1 w2 w40",
    "w0 w3 w5 w8 w13 w21 w34 w55",
    "w1 w1 w2 w50 w59",  # a repeated word counts twice
    "the flow of a naive cafe w7",  # stemmed, accents off: FTS5's tokens, not the words
    "w45 max_retries w0 w6",  # a compound (its own column, weight 2)
    "zebrafish w2",  # a word no chunk held when the file was written
]
SCOPES = {
    "whole index": ChunkFilters(library_ids=["kb", "other"]),
    "one library": ChunkFilters(library_ids=["kb"]),
    "filtered": ChunkFilters(library_ids=["kb", "other"], book_ids=["b1", "b2"]),
}


def write(store: VectorStore, i: int, text: str) -> None:
    library = "kb" if i % 4 else "other"
    rec = record(library, f"d{i}.md", text, i)
    store.write_document("t", library, rec.doc_id, [rec], DocState(rec.doc_id, 1.0, 1, "h", 1))


def texts(n: int, seed: int) -> list[str]:
    rng = random.Random(seed)
    found = []
    for _ in range(n):
        words = rng.choices(WORDS, WEIGHTS, k=rng.randint(5, 40))
        if rng.random() < 0.05:
            words.append("max_retries")
        found.append(" ".join(words))
    return found + found[: n // 5]  # copies: rows that tie


@pytest.fixture(autouse=True)
def small_files(monkeypatch: pytest.MonkeyPatch) -> None:
    """These corpora are small: give them a postings file all the same."""
    monkeypatch.setattr(sqlite_postings, "POSTINGS_MIN_ROWS", 100)
    monkeypatch.setattr(sqlite_postings, "REWRITE_MIN_ROWS", 20)


def build(folder: Path, n: int = 600) -> VectorStore:
    store = VectorStore(LocalIndexAdapter(folder))
    with store.batch():
        for i, text in enumerate(texts(n, 5)):
            write(store, i, text)
    store.flush()
    return store


@pytest.fixture
def store(tmp_path: Path) -> VectorStore:
    return build(tmp_path / "index")


def files(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir() if "postings" in p.name)


def adapter_of(store: VectorStore) -> LocalIndexAdapter:
    adapter = store.adapter
    assert isinstance(adapter, LocalIndexAdapter)
    return adapter


def answers(store: VectorStore, from_file: bool) -> dict[tuple[str, str, int], list]:
    """Each question's ranking in each scope at k 5 and 50: (chunk id, score) pairs."""
    adapter = adapter_of(store)
    keywords = adapter._keywords if from_file else None
    found = {}
    for name, scope in SCOPES.items():
        for k in (5, 50):
            for query in QUESTIONS:
                hits = keyword_search(adapter, TermCounts(), keywords, "t", query, k, scope)
                found[(name, query, k)] = [(h.record.chunk_id, h.score) for h in hits]
    return found


def assert_same(mine: dict, fts5: dict) -> None:
    assert mine.keys() == fts5.keys()
    for key in fts5:
        assert [c for c, _ in mine[key]] == [c for c, _ in fts5[key]], key
        assert [s for _, s in mine[key]] == pytest.approx(
            [s for _, s in fts5[key]], rel=1e-12, abs=0.0
        ), key


def test_the_file_answers_what_fts5_answers(store: VectorStore) -> None:
    adapter = adapter_of(store)
    assert len(files(adapter.folder)) == 1
    with adapter.reading() as db:
        assert adapter._keywords.view(db) is not None  # the file is the one searched
    mine, fts5 = answers(store, from_file=True), answers(store, from_file=False)
    assert_same(mine, fts5)
    assert sum(len(v) for v in fts5.values()) > 500  # the questions found rows
    # the fusion's keyword scale counts the rows of each term as FTS5 does
    assert store.keyword_scale("w0 w45 naive") == pytest.approx(
        adapter_of(build(adapter.folder.parent / "fresh")).keyword_scale("w0 w45 naive"),
        rel=1e-12,
    )


def test_rows_added_deleted_and_moved_since_the_file_are_searched_exactly(
    store: VectorStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    adapter = adapter_of(store)
    monkeypatch.setattr(sqlite_postings, "REWRITE_MIN_ROWS", 10_000)  # no rewrite yet
    before = files(adapter.folder)
    new = texts(12, 9)
    for i, text in enumerate(new):  # added after the file
        write(store, 1000 + i, f"{text} zebrafish")
    for i in range(0, 80, 2):  # deleted after it
        store.write_document("t", "kb" if i % 4 else "other", f"d{i}.md", [], None)
    store.adapter.move_book("t", "b1", "other")  # moved: the same words, another library
    store.flush()
    assert files(adapter.folder) == before  # too few changes to write it again
    mine, fts5 = answers(store, from_file=True), answers(store, from_file=False)
    assert_same(mine, fts5)
    gone = {chunk_id_for("t", "kb" if i % 4 else "other", f"d{i}.md", 0) for i in range(0, 80, 2)}
    assert not gone & {c for ranking in mine.values() for c, _ in ranking}
    added = {
        chunk_id_for("t", "kb" if i % 4 else "other", f"d{1000 + i}.md", 0) for i in range(len(new))
    }
    found = store.keyword_search("t", "zebrafish", 50, SCOPES["whole index"])
    assert {h.record.chunk_id for h in found} == added  # only FTS5 holds them yet
    monkeypatch.setattr(sqlite_postings, "REWRITE_MIN_ROWS", 20)
    store.flush()  # enough changes now: written anew, the old file removed
    after = files(adapter.folder)
    assert len(after) == 1 and after != before
    assert_same(answers(store, from_file=True), fts5)


@pytest.mark.parametrize(
    "damage", ["bytes flipped, size kept", "missing", "cut short", "another index's"]
)
def test_a_missing_or_damaged_file_is_never_trusted_and_the_next_ingest_rewrites_it(
    store: VectorStore, tmp_path: Path, damage: str, caplog: pytest.LogCaptureFixture
) -> None:
    adapter = adapter_of(store)
    fts5 = answers(store, from_file=False)
    (name,) = files(adapter.folder)
    path = adapter.folder / name
    running = VectorStore(LocalIndexAdapter(adapter.folder))  # a process that trusts the file
    assert_same(answers(running, from_file=True), fts5)
    if damage == "bytes flipped, size kept":  # as a failing disk or a stray write leaves it
        size = path.stat().st_size
        assert flip_bytes(path) > 0 and path.stat().st_size == size
    elif damage == "missing":
        path.unlink()
    elif damage == "cut short":
        path.write_bytes(path.read_bytes()[: path.stat().st_size // 2])
    else:
        other = build(tmp_path / "other", n=300)
        shutil.copy(adapter_of(other).folder / files(adapter_of(other).folder)[0], path)
    (
        adapter.folder / f".{sqlite_postings.FILE_PREFIX}x{sqlite_postings.FILE_SUFFIX}.tmp"
    ).write_bytes(b"half a file, as a kill leaves it")
    with caplog.at_level(logging.WARNING, logger="holodeck"):
        reader = VectorStore(LocalIndexAdapter(adapter.folder))
        assert_same(answers(reader, from_file=True), fts5)  # FTS5 alone: never a wrong answer
    warned = [m for m in caplog.messages if "does not match the database" in m]
    assert len(warned) == 1 and name in warned[0], caplog.messages
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="holodeck"):  # looked at before each search
        assert_same(answers(running, from_file=True), fts5)
    assert [m for m in caplog.messages if "does not match the database" in m] == warned
    reader.flush()
    (fresh,) = files(adapter.folder)
    assert fresh != name
    assert not [p for p in adapter.folder.iterdir() if p.name.endswith(".tmp")]
    again = VectorStore(LocalIndexAdapter(adapter.folder))
    with adapter_of(again).reading() as db:
        assert adapter_of(again)._keywords.view(db) is not None
    assert_same(answers(again, from_file=True), fts5)


def test_an_untouched_file_is_trusted_by_its_stamp_and_a_touched_one_read_whole_once(
    store: VectorStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    adapter = adapter_of(store)
    fts5 = answers(store, from_file=False)
    read_whole: list[str] = []
    checksum = side_files.checksum

    def counted(path: Path) -> int:
        read_whole.append(path.name)
        return checksum(path)

    monkeypatch.setattr(side_files, "checksum", counted)
    (name,) = files(adapter.folder)
    assert_same(answers(VectorStore(LocalIndexAdapter(adapter.folder)), from_file=True), fts5)
    assert read_whole == []  # as written: trusted on its stamp

    copy = adapter.folder.parent / "copy"
    shutil.copytree(adapter.folder, copy)  # another inode and times: each file read whole
    copied = VectorStore(LocalIndexAdapter(copy))
    with adapter_of(copied).reading() as db:
        assert adapter_of(copied)._keywords.view(db) is not None  # sound: trusted
    assert_same(answers(copied, from_file=True), fts5)
    assert read_whole == [name]  # once for the process
    copied.flush()  # the next ingest records the copy's stamp
    assert files(copy) == [name]
    assert read_whole == [name]  # (this process found it sound already)
    with sqlite3.connect(copy / "index.db") as db:
        (stamp,) = db.execute("SELECT stamp FROM keyword_files").fetchone()
    assert stamp == side_files.stamp_of((copy / name).stat())  # any process trusts it unread


def test_a_file_without_a_checksum_is_not_trusted_and_the_next_ingest_rewrites_it(
    store: VectorStore, caplog: pytest.LogCaptureFixture
) -> None:
    """As an upgrade finds the file of a version that recorded no checksum."""
    adapter = adapter_of(store)
    fts5 = answers(store, from_file=False)
    (name,) = files(adapter.folder)
    with sqlite3.connect(adapter.folder / "index.db") as db:
        db.execute("UPDATE keyword_files SET checksum = NULL")
    with caplog.at_level(logging.WARNING, logger="holodeck"):
        reader = VectorStore(LocalIndexAdapter(adapter.folder))
        assert_same(answers(reader, from_file=True), fts5)
        with adapter_of(reader).reading() as db:
            assert adapter_of(reader)._keywords.view(db) is None
    assert [m for m in caplog.messages if "no checksum was recorded" in m]
    reader.flush()
    (fresh,) = files(adapter.folder)
    assert fresh != name
    assert_same(answers(VectorStore(LocalIndexAdapter(adapter.folder)), from_file=True), fts5)


def test_a_rebuilt_index_forgets_the_file(store: VectorStore) -> None:
    adapter = adapter_of(store)
    (old,) = files(adapter.folder)
    info = adapter.describe()
    assert info is not None
    adapter.recreate(info)  # --force-ingest
    assert store.keyword_search("t", "w0 w1", 5, SCOPES["whole index"]) == []
    with store.batch():  # the rebuild's new chunks, before its ingest ends
        for i, text in enumerate(texts(300, 11)):
            write(store, i, text)
    with adapter.reading() as db:
        assert adapter._keywords.view(db) is None  # the old file describes other chunks
    assert_same(answers(store, from_file=True), answers(store, from_file=False))
    store.flush()  # the rebuild's end: a file of the new chunks
    (new,) = files(adapter.folder)
    assert new != old
    assert_same(answers(store, from_file=True), answers(store, from_file=False))
