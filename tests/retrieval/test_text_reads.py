"""A hybrid search reads the text of the chunks it shows and scans, not of every candidate
(issue 63): the candidates of both sides are read without their text, and the text is
read for the returned passages (and, for a query with word pairs or keyword feedback, the
best hits those scan). The real model and the local SQLite index; the text read is counted
where the adapter turns rows into records and where it reads text later.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from cli_helpers import write

from holodeck.config.loader import load_project
from holodeck.retrieval.term_pairs import PAIRED
from holodeck.tools.vectorstore_tool import VectorStoreTool, build_tools
from holodeck.vectorstore.sqlite import index as sqlite_index
from holodeck.vectorstore.sqlite import query as sqlite_query

AGENT = """
name: reads
tools:
  - type: vectorstore
    name: kb
    source: docs
    top_k: 3
"""
#: Twelve short notes about merging and its neighbours: every one a candidate of both sides.
TOPICS = [
    "A merge commit joins two branches; git merge --no-ff always makes one.",
    "Rebasing replays commits on top of another branch instead of a merge.",
    "A fast-forward merge moves the branch pointer and makes no merge commit.",
    "Merge conflicts are marked in the file; edit it, then git add and commit.",
    "Cherry-pick copies one commit onto the current branch without a merge.",
    "Squash merging turns a branch's commits into one commit on the target.",
    "git log --merges lists only the merge commits of the history.",
    "A three-way merge compares both tips with their common ancestor.",
    "git merge --abort gives up a merge that stopped on conflicts.",
    "Octopus merges join more than two branches at once.",
    "git revert -m 1 undoes a merge commit by its first parent.",
    "A merge driver in .gitattributes decides how one kind of file is merged.",
]


@pytest.fixture
def tool(tmp_path: Path) -> Iterator[VectorStoreTool]:
    write(tmp_path / "agent.yaml", AGENT)
    for i, text in enumerate(TOPICS):
        write(tmp_path / "docs" / f"note{i:02}.md", f"# Note {i}\n\n{text}\n")
    ready = build_tools(load_project(tmp_path / "agent.yaml"))[0]
    ready.initialize_sync()
    yield ready
    ready.close()


@pytest.fixture
def texts_read(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The chunk ids whose text the SQLite adapter read, once per read."""
    read: list[str] = []
    make = sqlite_query.record
    later = sqlite_index.contents_of if hasattr(sqlite_index, "contents_of") else None

    def counted(row, blob):  # type: ignore[no-untyped-def]
        if row[7]:
            read.append(row[1])
        return make(row, blob)

    monkeypatch.setattr(sqlite_query, "record", counted)
    if later is not None:

        def counted_later(db, records):  # type: ignore[no-untyped-def]
            found = later(db, records)
            read.extend(found)
            return found

        monkeypatch.setattr(sqlite_index, "contents_of", counted_later)
    return read


def test_a_hybrid_question_reads_only_the_text_it_returns(
    tool: VectorStoreTool, texts_read: list[str]
) -> None:
    # a question of one keyword word: no word pairs, no keyword feedback scan any text
    results, total = tool.find("what is a merge?", mode="hybrid")
    assert len(results) == 3 and total >= len(TOPICS)
    shown = {r.chunk_id for r in results}
    # each result shows its note's text, read after the ranking
    assert all(any(text in r.content for text in TOPICS) for r in results), results
    assert set(texts_read) == shown, (len(texts_read), len(shown))
    assert len(texts_read) == len(shown)  # each read once


def test_a_topic_query_reads_the_text_its_pairs_and_feedback_scan_at_most(
    tool: VectorStoreTool, texts_read: list[str]
) -> None:
    results, _ = tool.find("merge commit conflicts", mode="hybrid")
    assert len(results) == 3 and all(r.content for r in results)
    # both sides list all twelve: before, each side read every one's text (24 reads)
    assert len(texts_read) <= min(PAIRED, len(TOPICS)) + len(results)
    assert len(texts_read) < 2 * len(TOPICS)
