"""An index written by an older release keeps working and is brought to today's rules.

From 0.1 (no sections): opening it adds the column (migration m004) and indexes the
full-text rows by today's rule (m005); the next ingest chunks its documents again and
reuses every vector whose embedded text did not change (a file without headings keeps all
of them), and results then carry their sections.

From the release before the heading path was embedded and keyword indexed (sections
stored, full-text rows of the text alone): m005 writes every full-text row again with its
heading path, so a heading's words find its chunks before any ingest; the next ingest gives
the chunks with a section their new vectors; and deleting them later forgets their words
(a contentless full-text row is forgotten only when told the words it holds).

The "older release" is today's index taken back to what it wrote.
"""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

from cli_helpers import run_holodeck, write

from holodeck.ingest.pipeline import CHUNKING_VERSION
from holodeck.text.analysis import idents_text, words_text
from holodeck.vectorstore.records import text_hash

GUIDE = """\
# Pumps

## Bleeding air

Air trapped in the suction line makes the pump run dry. Open the bleed screw on top of the
housing until water without bubbles comes out, then close it a quarter turn past snug.

## Winter storage

Drain the housing before the first frost and leave the drain plug out over the winter so
that no water can freeze inside and crack the casing.
"""

#: A note without headings: its chunks have no section, so their embedded text is unchanged.
NOTE = (
    "The well pump in the cellar was replaced in March; the old one is kept on the shelf "
    "beside the boiler as a spare, with its manual in the drawer below.\n"
)

AGENT = "name: upgrade-test\ntools:\n  - {type: vectorstore, name: kb, source: docs}\n"


def _of_the_text_alone(db: sqlite3.Connection) -> None:
    """Chunks as releases before m005 indexed them: full-text rows and content hashes (the
    key of a vector's reuse) of the chunk's text, without its heading."""
    db.execute("INSERT INTO chunks_fts (chunks_fts) VALUES ('delete-all')")
    for row_id, content in db.execute("SELECT id, content FROM chunks").fetchall():
        db.execute(
            "INSERT INTO chunks_fts (rowid, words, idents) VALUES (?, ?, ?)",
            (row_id, words_text(content), " ".join(idents_text(content))),
        )
        db.execute("UPDATE chunks SET content_hash = ? WHERE id = ?", (text_hash(content), row_id))
    db.execute("DELETE FROM _migrations WHERE name = 'm005_sections_keyword_indexed'")


def _as_an_older_release(db_path: Path) -> int:
    """Take the index back to 0.1's shape; returns its chunk count."""
    with sqlite3.connect(db_path) as db:
        _of_the_text_alone(db)
        db.execute("ALTER TABLE chunks DROP COLUMN section")
        db.execute("DELETE FROM _migrations WHERE name = 'm004_chunk_sections'")
        db.execute("UPDATE documents SET content_hash = substr(content_hash, 1, 64)")
        return int(db.execute("SELECT count(*) FROM chunks").fetchone()[0])


def test_an_index_of_an_older_release_is_migrated_and_rechunked_re_embedding_only_changes(
    tmp_path: Path,
) -> None:
    write(tmp_path / "docs" / "pumps.md", GUIDE)
    write(tmp_path / "docs" / "note.txt", NOTE)
    write(tmp_path / "agent.yaml", AGENT)
    assert run_holodeck("ingest", cwd=tmp_path).returncode == 0
    chunks = _as_an_older_release(tmp_path / ".holodeck" / "index" / "kb" / "index.db")

    # searching the old index works as it is (nothing re-ingested, no section yet)
    old = run_holodeck("search", "frost", "--no-ingest", "--json", cwd=tmp_path)
    assert old.returncode == 0, old.stderr
    (hit, *_) = json.loads(old.stdout)["tools"][0]["results"]
    assert hit["doc_id"] == "pumps.md" and hit["section"] == ""

    again = run_holodeck("ingest", "--json", cwd=tmp_path)
    assert again.returncode == 0, again.stderr
    summary = json.loads(again.stdout)["tools"][0]
    # the guide's chunk has a section now, embedded with it; the note's vector is reused
    assert summary["changed"] == 2 and summary["chunks_total"] == chunks == 2
    assert (summary["chunks_embedded"], summary["chunks_reused"]) == (1, 1)
    assert "chunked by an older holodeck" in again.stderr

    found = run_holodeck("search", "frost", "--no-ingest", "--json", cwd=tmp_path)
    (hit, *_) = json.loads(found.stdout)["tools"][0]["results"]
    assert hit["section"].startswith("Pumps › ")  # one chunk: the section most of it is in
    # and the run after that has nothing to do
    quiet = json.loads(run_holodeck("ingest", "--json", cwd=tmp_path).stdout)["tools"][0]
    assert (quiet["changed"], quiet["unchanged"]) == (0, 2)


MANUAL = """\
# Laboratory handbook

## Quiescing the centrifuge

Press the stop key once and wait. The brake slows the rotor over about two minutes, and
the display counts the speed down while it does. Do not open the lid while the display
shows any speed at all, even when the drum seems to stand still.

When the display reads zero, the lid lock releases with a click. Lift the lid slowly,
check the buckets for leaks or cracked tubes, and wipe any spill with a damp cloth.
"""


def _matching(db_path: Path, word: str) -> int:
    with sqlite3.connect(db_path) as db:
        found = db.execute("SELECT count(*) FROM chunks_fts WHERE chunks_fts MATCH ?", (word,))
        return int(found.fetchone()[0])


def test_an_index_whose_headings_were_not_indexed_finds_them_after_migrating(
    tmp_path: Path,
) -> None:
    write(tmp_path / "docs" / "handbook.md", MANUAL)
    write(tmp_path / "docs" / "note.txt", NOTE)
    write(tmp_path / "agent.yaml", AGENT.replace("}", ", chunk_size: 64, chunk_overlap: 8}"))
    assert run_holodeck("ingest", cwd=tmp_path).returncode == 0
    db_path = tmp_path / ".holodeck" / "index" / "kb" / "index.db"
    with sqlite3.connect(db_path) as db:  # back to the release before: chunks2, no m005
        _of_the_text_alone(db)
        db.execute("UPDATE documents SET content_hash = replace(content_hash, ?, '+chunks2')",
                   (f"+chunks{CHUNKING_VERSION}",))  # fmt: skip
        sectioned = db.execute("SELECT count(*) FROM chunks WHERE section != ''").fetchone()[0]
        total = db.execute("SELECT count(*) FROM chunks").fetchone()[0]
    assert sectioned >= 2 and total > sectioned
    assert _matching(db_path, "quiescing") == 1  # only the chunk holding the heading line

    # opening it migrates: every chunk of the section is found by its heading at once
    found = run_holodeck("search", "quiescing", "--mode", "keyword", "--no-ingest",
                         "--json", cwd=tmp_path)  # fmt: skip
    assert found.returncode == 0, found.stderr
    assert _matching(db_path, "quiescing") == sectioned

    # the next ingest embeds the chunks with a section again, and only those
    again = run_holodeck("ingest", "--json", cwd=tmp_path)
    assert again.returncode == 0, again.stderr
    summary = json.loads(again.stdout)["tools"][0]
    assert (summary["chunks_embedded"], summary["chunks_reused"]) == (sectioned, total - sectioned)

    # a file deleted afterwards leaves no word of its heading behind
    (tmp_path / "docs" / "handbook.md").unlink()
    assert run_holodeck("ingest", cwd=tmp_path).returncode == 0
    assert _matching(db_path, "quiescing") == 0
    assert _matching(db_path, "cellar") == 1
