"""A damaged index is never trusted in silence and is never a dead end: a file beside the
database with bytes changed is named in one warning, searched around (exact vectors, SQLite's
full-text index) with the answers a sound index gives, and rebuilt by the next ingest; a
damaged database is one line (exit 2) naming it and `holodeck ingest --force-ingest`, which
moves it aside (kept) and rebuilds from the source files.

The real CLI, real files, the real local model; the size past which a tool gets its side
files is lowered (in this process) so a few hundred one-line documents get them, by the code
path of a library of any size.
"""

from __future__ import annotations

import json
import random
import shutil
import sqlite3
from collections.abc import Iterator
from pathlib import Path

import pytest
from cli_helpers import ALWAYS_OWN_PROCESS, run_holodeck, write
from damage import flip_bytes
from rankings import assert_same_ranking

AGENT = """
name: damage
tools:
  - type: vectorstore
    name: kb
    source: docs
"""
FRUITS = [
    "apple", "banana", "kiwi", "papaya", "mango", "grape", "lemon", "lime", "peach", "plum",
    "pear", "cherry", "melon", "fig",
]  # fmt: skip
QUERIES = ["kiwi papaya w17", "cherry melon note 12", "lime w3 fig"]
#: The side files' sizes lowered so 400 chunks get them; every list read and every candidate
#: re-scored, so the vector file's answers are exact search's and any difference shows.
SMALL = {
    "vector_upkeep": {"ANN_MIN_ROWS": 300},
    "postings": {"POSTINGS_MIN_ROWS": 300},
    "vectors": {"RESCORED": 1000},
}  # fmt: skip


def make_project(root: Path, documents: int) -> Path:
    write(root / "agent.yaml", AGENT)
    rng = random.Random(7)
    for i in range(documents):
        words = [*rng.sample(FRUITS, 3), f"w{i % 50}"]
        write(root / "docs" / f"d{i:03}.txt", f"{' '.join(words)} note {i}\n")
    return root


def index_folder(project: Path) -> Path:
    return project / ".holodeck" / "index" / "kb"


def rankings(project: Path, mode: str) -> tuple[list[list[tuple[str, float]]], str]:
    """Each query's (chunk id, score) ranking from `holodeck search --no-ingest`, and what
    the searches said on stderr."""
    found, said = [], []
    for query in QUERIES:
        done = run_holodeck(
            "search", query, "--no-ingest", "--mode", mode, "--top-k", "10", "--json",
            cwd=project,
        )  # fmt: skip
        assert done.returncode == 0, done.stderr
        said.append(done.stderr)
        results = json.loads(done.stdout)["tools"][0]["results"]
        found.append([(r["chunk_id"], r["score"]) for r in results])
    return found, "".join(said)


def algorithm(project: Path) -> str:
    done = run_holodeck("store", "info", "--json", cwd=project)
    assert done.returncode == 0, done.stderr
    return str(json.loads(done.stdout)["tools"][0]["algorithm"])


@pytest.fixture(scope="module")
def small_side_files() -> Iterator[None]:
    with pytest.MonkeyPatch.context() as patch:
        for module, settings in SMALL.items():
            for name, value in settings.items():
                patch.setattr(f"holodeck.vectorstore.sqlite.{module}.{name}", value)
        yield


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory, small_side_files: None) -> tuple[Path, Path]:
    """A project of 400 one-line documents, ingested (side files built), and a copy of its
    index folder as the ingest left it."""
    root = tmp_path_factory.mktemp("built")
    project = make_project(root / "proj", 400)
    done = run_holodeck("ingest", cwd=project)
    assert done.returncode == 0, done.stderr
    shutil.copytree(index_folder(project), root / "index-as-built")
    return project, root / "index-as-built"


@pytest.mark.skipif(ALWAYS_OWN_PROCESS, reason="the lowered side-file sizes live in this process")
@pytest.mark.parametrize("suffix", [".ivf", ".ivf.sq8", ".postings"])
def test_a_side_file_with_bytes_changed_is_named_searched_around_and_rebuilt(
    built: tuple[Path, Path], suffix: str
) -> None:
    project, as_built = built
    shutil.rmtree(index_folder(project))
    shutil.copytree(as_built, index_folder(project))  # new times: each file checked whole
    mode = "keyword" if suffix == ".postings" else "semantic"
    (path,) = [p for p in index_folder(project).iterdir() if p.name.endswith(suffix)]
    sound, said = rankings(project, mode)
    assert "does not match" not in said  # the copies are whole: checked, and trusted
    assert algorithm(project) == "IVF"

    size = path.stat().st_size
    assert flip_bytes(path) > 0 and path.stat().st_size == size
    damaged, said = rankings(project, mode)
    for got, want in zip(damaged, sound, strict=True):
        assert_same_ranking(got, want)
    warnings = [line for line in said.splitlines() if path.name in line]
    assert len(warnings) == len(QUERIES)  # one line a search (each its own process)
    assert all("WARNING" in line and "does not match the database" in line for line in warnings)
    assert said.count("\n") == len(QUERIES)  # and nothing else
    if mode == "semantic":
        assert algorithm(project) == "FLAT"  # the damaged file is not claimed to be in use

    ingest = run_holodeck("ingest", cwd=project)
    assert ingest.returncode == 0, ingest.stderr
    assert "400 unchanged" in ingest.stderr
    assert not path.exists()  # rebuilt under a new name, the damaged one removed
    (rebuilt,) = [p for p in index_folder(project).iterdir() if p.name.endswith(suffix)]
    again, said = rankings(project, mode)
    assert said == ""  # the new file is trusted
    for got, want in zip(again, sound, strict=True):
        assert_same_ranking(got, want)
    assert algorithm(project) == "IVF"
    assert rebuilt.exists()


def break_a_stored_text(db_path: Path) -> None:
    """Make one document's recorded hash invalid UTF-8 in the database file: damage within
    a value that leaves SQLite's pages well formed."""
    with sqlite3.connect(db_path) as db:
        (digest,) = db.execute("SELECT content_hash FROM documents LIMIT 1").fetchone()
    broken = b"\xff" + digest[1:].encode()
    db_path.write_bytes(db_path.read_bytes().replace(digest.encode(), broken))


@pytest.mark.parametrize("damage", ["pages with bytes flipped", "a stored text"])
def test_a_damaged_database_is_one_line_exit_2_and_force_ingest_rebuilds_it(
    tmp_path: Path, damage: str
) -> None:
    project = make_project(tmp_path / "proj", 40)
    assert run_holodeck("ingest", cwd=project).returncode == 0
    folder = index_folder(project)
    db_path = folder / "index.db"
    assert not Path(f"{db_path}-wal").exists()  # every page is in the database file
    sound, _ = rankings(project, "hybrid")
    if damage == "a stored text":
        break_a_stored_text(db_path)
        refused = [("ingest",)]  # reads every document's hash
    else:
        flip_bytes(db_path)
        refused = [("search", "kiwi", "--no-ingest"), ("search", "kiwi"), ("ingest",)]
    damaged_bytes = db_path.read_bytes()
    for args in refused:
        done = run_holodeck(*args, cwd=project)
        assert done.returncode == 2, (args, done.stderr)
        (line,) = done.stderr.strip().splitlines()
        assert str(db_path) in line and "damaged" in line, line
        assert "holodeck ingest --force-ingest" in line, line

    forced = run_holodeck("ingest", "--force-ingest", cwd=project)
    assert forced.returncode == 0, forced.stderr
    (aside,) = [
        p for p in folder.glob("index.db.damaged-*") if not p.name.endswith(("-wal", "-shm"))
    ]
    assert aside.read_bytes() == damaged_bytes  # kept as it was, never deleted
    assert str(aside) in forced.stderr and "rebuilding" in forced.stderr
    assert "40 new" in forced.stderr

    rebuilt, said = rankings(project, "hybrid")
    assert said == ""
    for got, want in zip(rebuilt, sound, strict=True):
        assert_same_ranking(got, want)
    assert "40 unchanged" in run_holodeck("ingest", cwd=project).stderr
