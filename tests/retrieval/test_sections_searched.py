"""A chunk is found by its section's heading, on both stores: the heading path is embedded
and keyword indexed with the chunk's text (``records.indexed_text``), while what is stored
and shown stays the chunk alone.

The real model, real files, the local SQLite index and a real Redis with the Query Engine.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from cli_helpers import write

from holodeck.config.loader import load_project
from holodeck.tools.vectorstore_tool import build_tools
from holodeck.vectorstore.records import ChunkFilters

#: One section long enough for several chunks of 64 tokens; "quiescing" and "centrifuge" are
#: in its heading and nowhere in its text, so only the heading path can lead to its later
#: chunks.
MANUAL = """\
# Laboratory handbook

## Quiescing the centrifuge

Press the stop key once and wait. The brake slows the rotor over about two minutes, and
the display counts the speed down while it does. Do not open the lid while the display
shows any speed at all, even when the drum seems to stand still.

When the display reads zero, the lid lock releases with a click. Lift the lid slowly,
check the buckets for leaks or cracked tubes, and wipe any spill with a damp cloth before
taking the samples out one by one.

Leave the lid open for ten minutes afterwards so that condensation can dry, then close it
gently and switch the machine off at the rear panel.

## Ordering supplies

Gloves, tubes and pipette tips are ordered from the stores form on the intranet every
Monday before noon; urgent orders go to the lab manager by phone.
"""

AGENT = """\
name: sections-test
tools:
  - type: vectorstore
    name: kb
    source: docs
    chunk_size: 64
    chunk_overlap: 8
{database}"""


@pytest.mark.redis
def test_a_query_of_only_the_heading_finds_the_sections_later_chunks(
    tmp_path: Path, database: str
) -> None:
    write(tmp_path / "agent.yaml", AGENT.format(database=database))
    write(tmp_path / "docs" / "handbook.md", MANUAL)
    tool = build_tools(load_project(tmp_path / "agent.yaml"))[0]
    tool.initialize_sync()
    try:
        scope = ChunkFilters(library_ids=["kb"])
        hits = tool.store.keyword_search(tool.project.tenant_id, "quiescing centrifuge", 10, scope)
        section = "Laboratory handbook › Quiescing the centrifuge"
        found = [h.record for h in hits]
        assert {r.section for r in found} == {section}, [r.section for r in found]
        # the later chunks of the section hold neither word: the heading found them, and
        # their stored text is the chunk alone
        later = [r for r in found if "quiescing" not in r.content.casefold()]
        assert later, [r.content[:60] for r in found]
        assert all(not r.content.startswith(section) for r in found)
        assert all("centrifuge" not in r.content for r in later)
        # a question in other words finds the section by meaning too
        results, _ = tool.find("how do I stop the centrifuge safely", mode="semantic", top_k=10)
        assert results[0].section == section, [(r.section, r.content[:40]) for r in results]
        # and what a search shows is the file's own text, never the path put in front of it
        shown, _ = tool.find("quiescing the centrifuge", mode="keyword")
        assert shown and all(not r.content.startswith(section) for r in shown)
    finally:
        tool.close()
