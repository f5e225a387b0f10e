"""The approximate index file beside the SQLite index: the same answers as exact search, kept in
step with every edit, and repaired after a kill -9 at any point of its upkeep.

The size past which a library gets its file is lowered so a few hundred chunks are enough;
everything else is real: the SQLite database, the usearch file on disk, a real SIGKILL of a
real process. Exact search over the same chunks (the ``memory`` adapter) is the reference.
"""

from __future__ import annotations

import logging
import os
import signal
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
from rankings import assert_same_ranking
from test_local_index import DIMS, unit, write

from holodeck.vectorstore.adapters import sqlite_vectors
from holodeck.vectorstore.adapters.local import LocalIndexAdapter
from holodeck.vectorstore.adapters.memory import MemoryIndexAdapter
from holodeck.vectorstore.records import ChunkFilters
from holodeck.vectorstore.store import VectorStore

#: Files from 60 rows; built on one thread, so a file's graph is the same on every run (built
#: by several, a 120-row graph once left a node unreachable: rank 10 missed in a full run).
SMALL = {"ANN_MIN_ROWS": 60, "PATCH_MIN_ROWS": 20, "ADD_THREADS": 1}
QUERIES = [unit(1000 + i) for i in range(40)]


@pytest.fixture(autouse=True)
def small_libraries(monkeypatch: pytest.MonkeyPatch) -> None:
    for name, value in SMALL.items():
        monkeypatch.setattr(sqlite_vectors, name, value)


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
        return sorted(p.name for p in self.folder.iterdir() if "vectors-" in p.name)


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
    assert pair.local.adapter.stats("t", "kb")["algorithm"] == "HNSW"
    assert_alike(answers(pair.local), answers(pair.exact))
    assert_alike(answers(pair.local, k=3), answers(pair.exact, k=3))
    scope = books(["b1"])
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


def file_kind(pair: Pair) -> tuple[str, int]:
    """The vector type and links per node the library's one file holds (read from it)."""
    from usearch.index import Index

    (name,) = pair.files()
    view = Index.restore(str(pair.folder / name), view=True)
    return str(view.dtype).rsplit(".", 1)[-1].lower(), int(view.connectivity)


def test_a_file_keeps_its_settings_and_an_older_kind_is_rebuilt_at_its_next_rewrite(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # a file an earlier version wrote (int8 vectors, other links) still answers exactly
    monkeypatch.setattr(sqlite_vectors, "DTYPE", "i8")
    monkeypatch.setattr(sqlite_vectors, "CONNECTIVITY", 8)
    pair = Pair(tmp_path / "idx")
    try:
        for doc in range(30):
            pair.write(doc)
        pair.local.flush()
        assert file_kind(pair) == ("i8", 8)
        monkeypatch.undo()
        for name, value in SMALL.items():
            monkeypatch.setattr(sqlite_vectors, name, value)
        reader = VectorStore(LocalIndexAdapter(pair.folder))  # a process of this version
        assert_alike(answers(reader), answers(pair.exact))
        first = pair.files()
        for doc in range(30, 36):  # enough rows for a rewrite: a rebuild, not a patch
            pair.write(doc)
        pair.local.flush()
        assert pair.files() != first
        assert file_kind(pair) == (sqlite_vectors.DTYPE, sqlite_vectors.CONNECTIVITY)
        assert_alike(answers(reader), answers(pair.exact))
        for doc in range(36, 42):  # a file of this kind is patched, and keeps its kind
            pair.write(doc)
        pair.local.flush()
        assert file_kind(pair) == (sqlite_vectors.DTYPE, sqlite_vectors.CONNECTIVITY)
        assert_alike(answers(reader), answers(pair.exact))
    finally:
        pair.local.adapter.close()


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


@pytest.mark.parametrize("damage", ["truncated", "deleted", "another library's"])
def test_a_damaged_file_is_never_trusted_and_the_next_ingest_rebuilds_it(
    pair: Pair, damage: str, caplog: pytest.LogCaptureFixture
) -> None:
    (name,) = pair.files()
    path = pair.folder / name
    if damage == "truncated":
        path.write_bytes(path.read_bytes()[:300])
    elif damage == "deleted":
        path.unlink()
    else:  # a whole, readable file that holds other vectors than the database says
        smaller = Pair(pair.folder.parent / "other")
        for doc in range(20):
            smaller.write(doc)
        smaller.local.flush()
        path.write_bytes((smaller.folder / smaller.files()[0]).read_bytes())
    with caplog.at_level(logging.WARNING, logger="holodeck"):
        reader = VectorStore(LocalIndexAdapter(pair.folder))
        assert_alike(answers(reader), answers(pair.exact))  # exact search, never a wrong answer
    assert [m for m in caplog.messages if "does not match the database" in m]
    pair.local.flush()
    assert len(pair.files()) == 1 and pair.files() != [name]
    fresh = VectorStore(LocalIndexAdapter(pair.folder))
    assert_alike(answers(fresh), answers(pair.exact))
    assert fresh.adapter.stats("t", "kb")["algorithm"] == "HNSW"


#: Where the upkeep is killed: writing the new file, after its rename but before the
#: database names it, after the database names it but before the old file goes.
KILL_AT = {
    "while writing the file": "sqlite_vectors._save_whole",
    "before the database names it": "sqlite_vectors._fsync_folder",
    "before the old file goes": "VectorIndex._remove_strays",
}

KILLED_UPKEEP = """
import os, signal, sys
sys.path[:0] = [{tests!r}, {shared!r}]  # test_local_index, and the rankings it imports
from holodeck.vectorstore.adapters import sqlite_vectors
from holodeck.vectorstore.adapters.sqlite_vectors import VectorIndex
from holodeck.vectorstore.adapters.local import LocalIndexAdapter
from holodeck.vectorstore.store import VectorStore
from test_local_index import write
for name, value in {small!r}.items():
    setattr(sqlite_vectors, name, value)
owner, attr = {target!r}.split(".")
holder = sqlite_vectors if owner == "sqlite_vectors" else VectorIndex

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
