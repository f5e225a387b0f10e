"""One hostile file never stops an ingest: deep JSON, alias bombs and broken values in front
matter are indexed as text or skipped, each with a warning, and the other files are stored.

The real CLI on real files, with the embedded model.
"""

from __future__ import annotations

import json
from pathlib import Path

from cli_helpers import run_holodeck, write

AGENT = """
name: hostile
tools:
  - type: vectorstore
    name: kb
    source: docs
"""

#: A 567-byte front matter whose aliases expand to 9**8 tags (it hung the ingest before).
ALIAS_CHAIN = (
    "---\na: &a [lol,lol,lol,lol,lol,lol,lol,lol,lol]\n"
    + "".join(
        f"{k}: &{k} [{', '.join([f'*{p}'] * 9)}]\n"
        for p, k in zip("abcdefg", "bcdefgh", strict=True)
    )
    + "tags: *h\n---\n# Chain\n\nThe chain document talks about sourdough starters.\n"
)


def test_hostile_files_are_skipped_or_indexed_and_the_ingest_goes_on(tmp_path: Path) -> None:
    docs = tmp_path / "docs"
    write(tmp_path / "agent.yaml", AGENT)
    write(docs / "coffee.md", "# Coffee\n\nEspresso is brewed at about nine bars of pressure.\n")
    write(docs / "deep.json", "[" * 990 + "]" * 990)  # 2 KB, nested 990 deep
    write(docs / "deeper.json", "[" * 1200 + "]" * 1200)  # past json's own recursion limit
    write(docs / "chain.md", ALIAS_CHAIN)
    write(docs / "bad-date.md", "---\ndate: 2024-13-45\n---\n# Dates\n\nA bad month.\n")
    write(
        docs / "deep-front.md",
        "---\nx: " + "[" * 150 + "]" * 150 + "\n---\n# Deep\n\nTomato plants need sun.\n",
    )
    assert len(ALIAS_CHAIN.split("\n---\n")[0]) < 600

    result = run_holodeck("ingest", "--json", cwd=tmp_path, timeout=180)
    assert result.returncode == 0, result.stderr
    [summary] = json.loads(result.stdout)["tools"]
    assert summary["new"] == 5 and summary["failed"] == 1, summary
    assert summary["skipped_files"] == [
        {"path": "bad-date.md", "reason": "ValueError: month must be in 1..12", "as_before": False}
    ]
    err = result.stderr
    assert "Traceback" not in err and "RecursionError" not in err
    assert "WARNING: Skipped bad-date.md: ValueError: month must be in 1..12" in err
    assert "deep.json: JSON nested more than 64 levels deep; indexed as written" in err
    assert "deeper.json: JSON nested more than 64 levels deep; indexed as written" in err
    assert "Ignored front matter in chain.md (line 5): aliases expand to more than 1,000" in err
    assert "Ignored front matter in deep-front.md (line 2): values nested more than 100" in err

    found = run_holodeck("search", "espresso pressure", "--json", cwd=tmp_path)
    assert found.returncode == 0, found.stderr
    assert json.loads(found.stdout)["tools"][0]["results"][0]["source_path"] == "docs/coffee.md"
    chain = run_holodeck("search", "sourdough starter", "--json", cwd=tmp_path)
    assert json.loads(chain.stdout)["tools"][0]["results"][0]["source_path"] == "docs/chain.md"
