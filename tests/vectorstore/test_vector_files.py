"""The approximate index file beside the SQLite index: the same answers as exact search, kept in
step with every edit, and repaired after a kill -9 at any point of its upkeep.

The size past which a library gets its file is lowered so a few hundred chunks are enough;
everything else is real: the SQLite database, the faiss file on disk, a real SIGKILL of a
real process. Exact search over the same chunks (the ``memory`` adapter) is the reference.
"""

from __future__ import annotations

import logging
import os
import signal
import sqlite3
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
from damage import flip_bytes
from rankings import assert_same_ranking
from test_local_index import DIMS, unit, write

from holodeck.vectorstore.local import LocalIndexAdapter
from holodeck.vectorstore.memory import MemoryIndexAdapter
from holodeck.vectorstore.records import ChunkFilters
from holodeck.vectorstore.sqlite import codes as sqlite_codes
from holodeck.vectorstore.sqlite import side_files
from holodeck.vectorstore.sqlite import vector_file as sqlite_vector_file
from holodeck.vectorstore.store import VectorStore

#: Files from 60 rows, a list per 16 of them (8 lists at 120 rows), every list read and every
#: row re-scored: the file's candidates must give exact search's answers, so any row the
#: bookkeeping loses or keeps wrongly shows. (Random vectors in 384 dimensions are all alike
#: to 4-bit codes: 40 candidates of 120 would miss some of the exact ten.) Recall with fewer
#: lists read and candidates re-scored is measured in benchmarks/.
SMALL = {
    "vector_upkeep": {"ANN_MIN_ROWS": 60, "PATCH_MIN_ROWS": 20, "ROWS_PER_LIST": 16},
    "vectors": {"PROBE_FACTOR": 64, "CANDIDATES": 1000, "RESCORED": 1000},
}  # fmt: skip
QUERIES = [unit(1000 + i) for i in range(40)]


@pytest.fixture(autouse=True)
def small_libraries(monkeypatch: pytest.MonkeyPatch) -> None:
    for module, settings in SMALL.items():
        for name, value in settings.items():
            monkeypatch.setattr(f"holodeck.vectorstore.sqlite.{module}.{name}", value)


class Pair:
    """The local index and an exact reference fed the same writes."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.local = VectorStore(LocalIndexAdapter(folder))
        self.exact = VectorStore(MemoryIndexAdapter())

    def write(self, doc: int, parts: int = 4, seed: int | None = None) -> None:
        texts = [f"doc {doc} part {i}" for i in range(parts)]
        for store in (self.local, self.exact):
            write(
                store, "t", f"b{doc % 3}/d{doc}.md", texts, seed=doc * 10 if seed is None else seed
            )

    def remove(self, doc: int) -> None:
        for store in (self.local, self.exact):
            store.remove_document("t", "kb", f"b{doc % 3}/d{doc}.md")

    def files(self) -> list[str]:
        """The vector index files (each checked to have its code file beside it, and no
        code file without its index file)."""
        names = {p.name for p in self.folder.iterdir() if "vectors-" in p.name}
        codes = {n for n in names if n.endswith(sqlite_codes.SUFFIX)}
        index_files = sorted(names - codes)
        assert codes == {n + sqlite_codes.SUFFIX for n in index_files if n.endswith(".ivf")}
        return index_files


def answers(store: VectorStore, k: int = 10, **scope: list[str]) -> list[list[tuple[str, float]]]:
    filters = ChunkFilters(library_ids=["kb"], **scope)  # type: ignore[arg-type]
    return [
        [(h.record.chunk_id, h.score) for h in store.search("t", q, k, filters)] for q in QUERIES
    ]


def assert_alike(got: list[list[tuple[str, float]]], want: list[list[tuple[str, float]]]) -> None:
    """Each query ranks as exact search ranks it: scores within float32's tolerance (the file's
    hits are re-scored one by one, exact search scores whole blocks), ties in any order."""
    assert len(got) == len(want)
    for got_hits, want_hits in zip(got, want, strict=True):
        assert_same_ranking(got_hits, want_hits)


def books(paths: list[str]) -> dict[str, list[str]]:
    return {"book_ids": paths}


@pytest.fixture
def pair(tmp_path: Path) -> Iterator[Pair]:
    made = Pair(tmp_path / "idx")
    for doc in range(30):  # 120 chunks: past the (lowered) size for a file
        made.write(doc)
    made.local.flush()  # an ingest's last step
    yield made
    made.local.adapter.close()


def test_a_large_library_gets_a_file_and_answers_as_exact_search(pair: Pair) -> None:
    assert len(pair.files()) == 1
    assert pair.local.adapter.stats("t", "kb")["algorithm"] == "IVF"
    assert file_kind(pair) == 8  # lists
    assert_alike(answers(pair.local), answers(pair.exact))
    assert_alike(answers(pair.local, k=3), answers(pair.exact, k=3))
    for scope in (books(["b1"]), books(["b1", "b2"])):  # scanned exactly; filtered in the file
        assert_alike(answers(pair.local, **scope), answers(pair.exact, **scope))
    other = VectorStore(LocalIndexAdapter(pair.folder))  # another process opening it
    assert_alike(answers(other), answers(pair.exact))


def test_edits_are_searched_before_and_after_the_file_catches_up(pair: Pair) -> None:
    reader = VectorStore(LocalIndexAdapter(pair.folder))
    assert_alike(answers(reader), answers(pair.exact))
    first = pair.files()
    for doc in range(30, 33):  # fewer rows than a rewrite waits for
        pair.write(doc, parts=2)
    pair.remove(4)
    pair.write(7, seed=777)  # edited: new vectors
    pair.local.flush()
    assert pair.files() == first  # not rewritten for a few rows ...
    assert_alike(answers(reader), answers(pair.exact))  # ... and yet every edit is searched
    for doc in range(33, 45):
        pair.write(doc, parts=2)
    pair.local.flush()
    assert len(pair.files()) == 1 and pair.files() != first  # rewritten, the old one gone
    assert_alike(answers(reader), answers(pair.exact))
    assert_alike(answers(pair.local, **books(["b2"])), answers(pair.exact, **books(["b2"])))


def file_kind(pair: Pair) -> int:
    """How many lists the library's one file holds (read from it)."""
    import faiss

    (name,) = pair.files()
    return int(faiss.read_index(str(pair.folder / name), faiss.IO_FLAG_MMAP).nlist)


def test_a_file_is_patched_while_its_lists_suit_the_library_and_rebuilt_after(
    pair: Pair,
) -> None:
    reader = VectorStore(LocalIndexAdapter(pair.folder))
    first = pair.files()
    for doc in range(30, 36):  # 24 rows: a rewrite, the same 8 lists patched
        pair.write(doc)
    pair.local.flush()
    assert pair.files() != first and file_kind(pair) == 8
    assert_alike(answers(reader), answers(pair.exact))
    for doc in range(36, 106):  # 424 rows: 32 lists would suit it, 4x the file's: rebuilt
        pair.write(doc)
    pair.local.flush()
    assert file_kind(pair) == 32
    assert_alike(answers(reader), answers(pair.exact))
    assert_alike(answers(VectorStore(LocalIndexAdapter(pair.folder))), answers(pair.exact))


@pytest.mark.parametrize("kind", ["usearch", "ivf without codes", "ivf without a checksum"])
def test_an_earlier_versions_file_is_not_read_and_the_next_ingest_replaces_it(
    pair: Pair, kind: str, caplog: pytest.LogCaptureFixture
) -> None:
    (name,) = pair.files()
    if kind == "usearch":  # as an upgrade finds an HNSW file
        old = name.replace(sqlite_vector_file.FILE_SUFFIX, ".usearch")
        (pair.folder / name).rename(pair.folder / old)
        with sqlite3.connect(pair.folder / "index.db") as db:
            db.execute("UPDATE vector_files SET file = ?", (old,))
    elif kind == "ivf without codes":  # as an upgrade finds the file of a version without codes
        sqlite_codes.path_of(pair.folder / name).unlink()
    else:  # as an upgrade finds the files of a version that recorded no checksum
        with sqlite3.connect(pair.folder / "index.db") as db:
            db.execute("UPDATE vector_files SET checksum = NULL, codes_checksum = NULL")
    with caplog.at_level(logging.WARNING, logger="holodeck"):
        reader = VectorStore(LocalIndexAdapter(pair.folder))
        assert_alike(answers(reader), answers(pair.exact))
    assert [m for m in caplog.messages if "an earlier version's kind of file" in m]
    pair.local.flush()
    assert len(pair.files()) == 1 and pair.files()[0].endswith(sqlite_vector_file.FILE_SUFFIX)
    assert_alike(answers(VectorStore(LocalIndexAdapter(pair.folder))), answers(pair.exact))


def test_an_untouched_file_is_trusted_by_its_stamp_and_a_touched_one_read_whole_once(
    pair: Pair, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """A process opening the file reads it whole only when its stamp (size, times, inode)
    is not the one recorded: a copy or a restore is read whole once a process, until the
    next ingest records its stamp."""
    read_whole: list[str] = []
    checksum = side_files.checksum

    def counted(path: Path) -> int:
        read_whole.append(path.name)
        return checksum(path)

    monkeypatch.setattr(side_files, "checksum", counted)
    (name,) = pair.files()
    reader = VectorStore(LocalIndexAdapter(pair.folder))
    assert_alike(answers(reader), answers(pair.exact))
    assert reader.adapter.stats("t", "kb")["algorithm"] == "IVF"
    assert read_whole == []  # as written: trusted on its stamp

    path = pair.folder / name
    path.write_bytes(path.read_bytes())  # the same bytes written again: a new stamp
    with caplog.at_level(logging.WARNING, logger="holodeck"):
        touched = VectorStore(LocalIndexAdapter(pair.folder))
        assert_alike(answers(touched), answers(pair.exact))
        assert touched.adapter.stats("t", "kb")["algorithm"] == "IVF"
    assert read_whole == [name]  # read whole once, found sound, trusted
    assert not [m for m in caplog.messages if "does not match" in m]

    pair.local.flush()  # the next ingest: the file kept, its new stamp recorded
    assert pair.files() == [name]
    assert read_whole == [name]  # (this process found it sound already)
    with sqlite3.connect(pair.folder / "index.db") as db:
        (stamp,) = db.execute("SELECT stamp FROM vector_files").fetchone()
    assert stamp == side_files.stamp_of(path.stat())  # what any process now trusts unread


def test_a_library_that_shrinks_goes_back_to_exact_search(pair: Pair) -> None:
    for doc in range(25):
        pair.remove(doc)
    pair.local.flush()
    assert pair.files() == []
    assert pair.local.adapter.stats("t", "kb")["algorithm"] == "FLAT"
    assert_alike(answers(pair.local), answers(pair.exact))


def test_a_rebuilt_index_forgets_its_file(pair: Pair) -> None:
    from holodeck.vectorstore.records import IndexInfo

    pair.local.rebuild(IndexInfo("m", DIMS))
    assert pair.local.search("t", QUERIES[0], 5) == []
    pair.local.flush()
    assert pair.files() == []


@pytest.mark.parametrize("which", ["index", "codes"])
@pytest.mark.parametrize(
    "damage", ["bytes flipped, size kept", "truncated", "deleted", "another library's"]
)
def test_a_damaged_file_is_never_trusted_and_the_next_ingest_rebuilds_it(
    pair: Pair, damage: str, which: str, caplog: pytest.LogCaptureFixture
) -> None:
    (name,) = pair.files()
    path = pair.folder / name
    if which == "codes":
        path = sqlite_codes.path_of(path)
    running = VectorStore(LocalIndexAdapter(pair.folder))  # a process that trusts the file
    assert_alike(answers(running), answers(pair.exact))
    if damage == "bytes flipped, size kept":  # as a failing disk or a stray write leaves it
        size = path.stat().st_size
        assert flip_bytes(path) > 0 and path.stat().st_size == size
    elif damage == "truncated":
        path.write_bytes(path.read_bytes()[:300])
    elif damage == "deleted":
        path.unlink()
    else:  # a whole, readable file that holds other vectors than the database says
        smaller = Pair(pair.folder.parent / "other")
        for doc in range(20):
            smaller.write(doc)
        smaller.local.flush()
        other = smaller.folder / smaller.files()[0]
        other = sqlite_codes.path_of(other) if which == "codes" else other
        path.write_bytes(other.read_bytes())
    with caplog.at_level(logging.WARNING, logger="holodeck"):
        reader = VectorStore(LocalIndexAdapter(pair.folder))
        assert_alike(answers(reader), answers(pair.exact))  # exact search, never a wrong answer
        assert reader.adapter.stats("t", "kb")["algorithm"] == "FLAT"  # not the file's IVF
    named = path.name if damage == "bytes flipped, size kept" else name
    warned = [m for m in caplog.messages if "does not match the database" in m]
    assert len(warned) == 1 and named in warned[0], caplog.messages
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="holodeck"):  # looked at before each search
        assert_alike(answers(running), answers(pair.exact))
        assert running.adapter.stats("t", "kb")["algorithm"] == "FLAT"
    assert [m for m in caplog.messages if "does not match the database" in m] == warned
    pair.local.flush()
    assert len(pair.files()) == 1 and pair.files() != [name]
    fresh = VectorStore(LocalIndexAdapter(pair.folder))
    assert_alike(answers(fresh), answers(pair.exact))
    assert fresh.adapter.stats("t", "kb")["algorithm"] == "IVF"


#: Where the upkeep is killed: writing the new file, after its rename but before the
#: database names it, after the database names it but before the old file goes.
KILL_AT = {
    "while writing the file": "vector_upkeep._save_whole",
    "before the database names it": "side_files.fsync_folder",
    "before the old file goes": "VectorUpkeep._remove_strays",
}

KILLED_UPKEEP = """
import os, signal, sys
sys.path[:0] = [{tests!r}, {shared!r}]  # test_local_index, and the rankings it imports
import importlib
from holodeck.vectorstore.sqlite import side_files, vector_upkeep
from holodeck.vectorstore.sqlite.vector_upkeep import VectorUpkeep
from holodeck.vectorstore.local import LocalIndexAdapter
from holodeck.vectorstore.store import VectorStore
from test_local_index import write
for module, settings in {small!r}.items():
    for name, value in settings.items():
        setattr(importlib.import_module(f"holodeck.vectorstore.sqlite.{{module}}"), name, value)
owner, attr = {target!r}.split(".")
holder = {{"vector_upkeep": vector_upkeep, "side_files": side_files}}.get(owner, VectorUpkeep)

def killed(*args, **kwargs):
    if attr == "_save_whole":  # half a file on disk, as a kill mid-write leaves it
        index, folder, name = args
        (folder / f".{{name}}.tmp").write_bytes(b"half a file")
    os.kill(os.getpid(), signal.SIGKILL)

setattr(holder, attr, killed)
store = VectorStore(LocalIndexAdapter(__import__("pathlib").Path({folder!r})))
for doc in range(45, 60):  # enough rows for a rewrite
    texts = [f"doc {{doc}} part {{i}}" for i in range(2)]
    write(store, "t", f"b{{doc % 3}}/d{{doc}}.md", texts, seed=doc * 10)
store.flush()
"""


@pytest.mark.parametrize("point", list(KILL_AT))
def test_kill_9_at_any_point_of_the_upkeep_leaves_a_repairable_index(
    pair: Pair, point: str
) -> None:
    before = pair.files()
    code = KILLED_UPKEEP.format(
        tests=str(Path(__file__).parent),
        shared=str(Path(__file__).parents[1]),
        small=SMALL,
        target=KILL_AT[point],
        folder=str(pair.folder),
    )
    proc = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True)
    assert proc.returncode == -signal.SIGKILL, proc.stderr
    for doc in range(45, 60):  # what the killed process committed before its upkeep
        pair.exact.write_document("t", "kb", f"b{doc % 3}/d{doc}.md", *_same_doc(doc))
    reader = VectorStore(LocalIndexAdapter(pair.folder))
    assert_alike(answers(reader), answers(pair.exact))  # right answers straight after the kill
    pair.local.flush()  # the next ingest's upkeep repairs it and clears what was left
    assert len(pair.files()) == 1 and pair.files() != before
    assert not [p for p in os.listdir(pair.folder) if p.endswith(".tmp")]
    assert_alike(answers(VectorStore(LocalIndexAdapter(pair.folder))), answers(pair.exact))
    assert_alike(answers(reader), answers(pair.exact))


def _same_doc(doc: int) -> tuple[list, object]:  # type: ignore[type-arg]
    """The records and state ``write`` makes for ``doc`` (2 parts), for the reference."""
    from test_local_index import rec

    from holodeck.vectorstore.records import DocState

    texts = [f"doc {doc} part {i}" for i in range(2)]
    doc_id = f"b{doc % 3}/d{doc}.md"
    records = [rec("t", doc_id, i, t, doc * 10 + i) for i, t in enumerate(texts)]
    return records, DocState(doc_id, 1.0, 10, f"d{doc * 10}", len(records))


def test_the_file_is_found_by_a_process_that_never_loaded_vectors(pair: Pair) -> None:
    """A cold process maps the file and reads only the candidates' vectors from SQLite:
    nothing like the whole library's float32 matrix is loaded."""
    reader = LocalIndexAdapter(pair.folder)
    hits = VectorStore(reader).search("t", QUERIES[0], 5)
    assert len(hits) == 5
    (library,) = reader._vectors._libraries.values()
    assert library.base is not None and library.tail.ids.size == 0
    np.testing.assert_allclose(
        [h.score for h in hits],
        [h.score for h in pair.exact.search("t", QUERIES[0], 5)],
        atol=1e-6,
    )
