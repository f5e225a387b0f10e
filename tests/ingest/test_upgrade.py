"""An index written before chunks knew their section keeps working: opening it adds the
column (migration m004), the next ingest chunks its documents again by today's rules and
reuses every vector whose text did not change, and results then carry their sections.

The "older release" is today's index taken back to what 0.1 wrote: no ``section`` column,
no m004 in ``_migrations``, document states without the chunking version.
"""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

from cli_helpers import run_holodeck, write

GUIDE = """\
# Pumps

## Bleeding air

Air trapped in the suction line makes the pump run dry. Open the bleed screw on top of the
housing until water without bubbles comes out, then close it a quarter turn past snug.

## Winter storage

Drain the housing before the first frost and leave the drain plug out over the winter so
that no water can freeze inside and crack the casing.
"""


def _as_an_older_release(db_path: Path) -> int:
    """Take the index back to 0.1's shape; returns its chunk count."""
    with sqlite3.connect(db_path) as db:
        db.execute("ALTER TABLE chunks DROP COLUMN section")
        db.execute("DELETE FROM _migrations WHERE name = 'm004_chunk_sections'")
        db.execute("UPDATE documents SET content_hash = substr(content_hash, 1, 64)")
        return int(db.execute("SELECT count(*) FROM chunks").fetchone()[0])


def test_an_index_of_an_older_release_is_migrated_and_rechunked_without_re_embedding(
    tmp_path: Path,
) -> None:
    write(tmp_path / "docs" / "pumps.md", GUIDE)
    write(tmp_path / "agent.yaml", "name: upgrade-test\ntools:\n  - {type: vectorstore, "
          "name: kb, source: docs}\n")  # fmt: skip
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
    assert summary["changed"] == 1 and summary["chunks_embedded"] == 0
    assert summary["chunks_total"] == chunks
    assert "chunked by an older holodeck" in again.stderr

    found = run_holodeck("search", "frost", "--no-ingest", "--json", cwd=tmp_path)
    (hit, *_) = json.loads(found.stdout)["tools"][0]["results"]
    assert hit["section"].startswith("Pumps › ")  # one chunk: the section most of it is in
    # and the run after that has nothing to do
    quiet = json.loads(run_holodeck("ingest", "--json", cwd=tmp_path).stdout)["tools"][0]
    assert (quiet["changed"], quiet["unchanged"]) == (0, 1)
