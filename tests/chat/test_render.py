"""What the chat shows of search results: the compact answer, /show N, /sources.

In-process, on results a real tool found (real model, real local index) or on the text of the
example documents; the CLI tests (test_chat_pipe, test_chat_terminal) run the same code
through the real command.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
from cli_helpers import write

from holodeck.agent.loop import ToolCallRecord
from holodeck.chat.render import compact_results, show_result, sources_text
from holodeck.config.loader import load_project
from holodeck.results import (
    SearchResult,
    highlighted,
    query_terms,
    render,
    shorten_middle,
    snippet_lines,
)
from holodeck.tools.vectorstore_tool import build_tools
from holodeck.vectorstore.records import ChunkRecord, chunk_id_for, text_hash

REPO = Path(__file__).resolve().parents[2]
#: The example guide as the index holds it: without its front matter.
RETRIES = (
    (REPO / "examples" / "docs" / "guides" / "retries.md")
    .read_text(encoding="utf-8")
    .split("---")[2]
)


def searched(tool: str, query: str, results: list[SearchResult]) -> ToolCallRecord:
    return ToolCallRecord("", tool, {"query": query}, query, "(the tool's text)", results)


def result(rank: int, source: str, content: str, location: str = "") -> SearchResult:
    return SearchResult(rank, 0.9 - rank / 10, source, content, location=location)


def test_location_from_the_store_is_shown_when_known(tmp_path: Path) -> None:
    write(tmp_path / "docs" / "pump.md", "# Pump\n\nThe pump is primed by opening valve B.\n")
    write(
        tmp_path / "agent.yaml",
        "name: render-test\ntools:\n  - {type: vectorstore, name: kb, source: docs}\n",
    )
    project = load_project(tmp_path / "agent.yaml")
    tool = build_tools(project)[0]
    try:
        tool.initialize_sync()
        # A chunk whose converter knew its page (issue 11 fills this in for real files).
        text = "To bleed the pump, open valve C for ten seconds before starting it."
        tool.store.upsert_chunks(
            project.tenant_id,
            [
                ChunkRecord(
                    chunk_id=chunk_id_for(project.tenant_id, "kb", "manual.pdf", 0),
                    tenant_id=project.tenant_id,
                    library_id="kb",
                    book_id="",
                    doc_id="manual.pdf",
                    chunk_index=0,
                    content=text,
                    vector=np.asarray(tool.embedder.embed([text])[0]),
                    embedding_model=tool.embedder.model_id,
                    source_path="docs/manual.pdf",
                    mtime=0.0,
                    content_hash=text_hash(text),
                    token_count=14,
                    location="page 3",
                    section="Maintenance › Bleeding the pump",
                )
            ],
        )
        results, _ = tool.find("how do I bleed the pump?")
    finally:
        tool.close()
    assert [r.source_path for r in results] == ["docs/manual.pdf", "docs/pump.md"]
    assert results[0].location == "page 3"
    assert results[0].section == "Maintenance › Bleeding the pump"
    score = f"{results[0].score:.2f}"
    shown = compact_results([searched("kb", "how do I bleed the pump?", results)]).plain
    lines = shown.splitlines()
    assert lines[0] == (
        f"[1] Score: {score} | Source: docs/manual.pdf | Location: page 3 | "
        "Section: Maintenance › Bleeding the pump"
    )
    assert lines[1] == f"    {text}"
    assert lines[2].startswith(f"[2] Score: {results[1].score:.2f} | Source: docs/pump.md")

    on_terminal = compact_results([searched("kb", "how", results)], terminal=True).plain
    assert on_terminal.splitlines()[0] == (
        f"[1] {score}  docs/manual.pdf › Maintenance › Bleeding the pump · page 3"
    )

    table = sources_text([searched("kb", "how do I bleed the pump?", results)]).splitlines()
    assert table[0].split() == ["#", "tool", "source", "where", "score"]
    assert table[1].split() == [
        "1", "kb", "docs/manual.pdf", "Maintenance", "›", "Bleeding", "the", "pump", "·", "page",
        "3", score,
    ]  # fmt: skip


def test_snippet_is_the_best_matching_passage_with_what_follows() -> None:
    terms = query_terms("What happens to a run when its last attempt fails?")
    lines = snippet_lines(RETRIES, terms, width=96, max_lines=3)
    text = " ".join(lines)
    assert text.startswith(
        "… § The dead-letter queue — When the last attempt fails, the run is moved to the "
        "dead-letter queue"
    )
    assert "**" not in text  # markdown emphasis is dropped
    assert 1 <= len(lines) <= 3 and all(len(line) <= 96 for line in lines)


def test_snippet_shows_a_heading_before_a_match_never_after() -> None:
    content = (
        "# Nightly copies\n\nThe database is backed up every night at 02:00.\n\n"
        "## Restoring a copy\n\nRun restore.sh with the date of the copy.\n"
    )
    text = " ".join(snippet_lines(content, query_terms("When is the database backed up?"), 96, 3))
    assert text == "§ Nightly copies — The database is backed up every night at 02:00. …"


def test_a_long_passage_is_cut_around_its_first_match() -> None:
    content = " ".join(f"word{i}" for i in range(200)) + " the backoff doubles " + "x " * 100
    lines = snippet_lines(content, query_terms("backoff"), width=60, max_lines=3)
    text = " ".join(lines)
    assert text.startswith("… ") and "the backoff doubles" in text
    assert len(lines) <= 3


def test_no_matching_word_shows_the_beginning() -> None:
    text = " ".join(snippet_lines(RETRIES, query_terms("zebra"), 96, 3))
    assert text.startswith("§ Retries and the dead-letter queue — Networks drop")


def test_query_words_are_highlighted_in_any_form() -> None:
    line = highlighted("A failed run is retried; retries back off. Retry!", query_terms("retry"))
    marked = [line.plain[span.start : span.end] for span in line.spans]
    assert marked == ["retried", "retries", "Retry"]
    assert query_terms("How do I retry a failed job?") == {"retri", "fail", "job"}


def test_numbers_run_across_tools_and_show_takes_them() -> None:
    records = [
        searched("guides", "retry policy", [result(1, "g/a.md", "Retry policy: 3 tries.")]),
        searched("ops", "retry policy", []),
        searched(
            "api", "retry policy", [result(1, "api/x.md", "POST /retry"), result(2, "b", "z")]
        ),
    ]
    shown = compact_results(records).plain
    assert shown.splitlines() == [
        "## guides",
        "[1] Score: 0.80 | Source: g/a.md",
        "    Retry policy: 3 tries.",
        "",
        "## ops",
        "(the tool's text)",
        "",
        "## api",
        "[2] Score: 0.80 | Source: api/x.md",
        "    POST /retry",
        "[3] Score: 0.70 | Source: b",
        "    z",
    ]
    assert show_result(records, "2").plain == "[2] Score: 0.80 | Source: api/x.md\nPOST /retry"
    assert show_result(records, "4").plain == "/show takes a result number from 1 to 3."
    assert show_result(records, "").plain == "/show takes a result number from 1 to 3."
    assert show_result([], "1").plain == "No results in the last message."
    assert sources_text(records).splitlines() == [
        "#  tool    source    where  score",
        "1  guides  g/a.md    -      0.80",  # no section or location known: "-"
        "2  api     api/x.md  -      0.80",
        "3  api     b         -      0.70",
        "ops('retry policy'): (the tool's text)",
    ]
    assert sources_text([]) == "No searches in the last message."


def test_sources_fit_the_terminal_keeping_the_file_name() -> None:
    long = "examples/docs/operations/very-long-folder-name/upgrade-notes.txt"
    result = SearchResult(rank=1, score=0.41, source_path=long, content="x", location="lines 14-28")
    rows = sources_text([searched("knowledge_base", "upgrade", [result])], width=80).splitlines()
    assert all(len(row) <= 80 for row in rows)
    assert rows[0].split() == ["#", "tool", "source", "where", "score"]
    assert rows[1].split()[2].startswith("…") and rows[1].split()[2].endswith("upgrade-notes.txt")
    assert rows[1].split()[3:] == ["lines", "14-28", "0.41"]


def test_a_quantity_question_shows_the_sentence_with_the_number() -> None:
    """ "How many times..." is answered by a sentence holding a number: the snippet is that
    one, not the sentence that only repeats the question's words (issue 60, item 9)."""
    found = [SearchResult(1, 0.57, "examples/docs/guides/retries.md", RETRIES)]
    shown = " ".join(
        render(found, "compact", "How many times is a failing task retried?").plain.split()
    )
    assert "3 attempts in total (the first run plus 2 retries)" in shown
    assert "never count as failed" not in shown
    # a question that asks for no quantity still goes by the words it shares
    other = " ".join(
        render(found, "compact", "Is a run cancelled by a user retried?").plain.split()
    )
    assert "Runs cancelled by a user never count as failed and are never retried." in other


def test_a_long_section_gives_way_in_its_middle_and_the_location_never() -> None:
    section = "Operations manual › Upgrades › From 2.x to 3.x › Rolling back a failed upgrade"
    assert shorten_middle(section, 200) == section
    assert shorten_middle(section, 60) == "Operations manual › … › Rolling back a failed upgrade"
    assert shorten_middle(section, 45) == "Operations m… › Rolling back a failed upgrade"
    assert shorten_middle(section, 35) == "… › Rolling back a failed upgrade"
    assert shorten_middle(section, 30) == "… › Rolling back a failed upg…"
    assert shorten_middle("Rolling back a failed upgrade", 20) == "Rolling back a fail…"
    assert shorten_middle(section, 8) == ""
    long = SearchResult(
        1,
        0.71,
        "examples/docs/operations/very-long-folder-name/upgrade-notes.txt",
        "Roll back with skyline downgrade.",
        location="lines 140-190",
        section=section,
    )
    for width in (200, 100, 80, 60, 40, 30):
        header = render([long], "terminal", "roll back", width).plain.splitlines()[0]
        assert header.endswith(" · lines 140-190") and len(header) <= max(width, 30), header
        assert header.startswith("[1] 0.71  ")
    assert "› Operations manual › … › Rolling back a failed upgrade · " in (
        render([long], "terminal", "roll back", 150).plain
    )
    narrow = render([long], "terminal", "roll back", 60).plain.splitlines()[0]
    assert "upgrade-notes.txt" in narrow  # the path keeps its end, the file name


def test_the_views_of_one_result() -> None:
    """contract: the template only; model: where it is too, the passage whole; compact: that
    line and the matching lines; terminal: the short header."""
    one = SearchResult(
        1, 0.83, "docs/x.md", "Line one.\n\nThe pump is primed.", location="page 3", section="A › B"
    )
    assert render([one], "contract").plain == (
        "Found 1 result(s):\n\n[1] Score: 0.83 | Source: docs/x.md\n"
        "Line one.\n\nThe pump is primed."
    )
    assert render([one], "model").plain == (
        "Found 1 result(s):\n\n[1] Score: 0.83 | Source: docs/x.md | Location: page 3 | "
        "Section: A › B\nLine one.\n\nThe pump is primed."
    )
    compact = render([one], "compact", "pump primed")
    assert compact.plain == (
        "[1] Score: 0.83 | Source: docs/x.md | Location: page 3 | Section: A › B\n"
        "    Line one. The pump is primed."
    )
    assert compact.styles == []  # plain: for pipes and scripts
    terminal = render([one], "terminal", "pump primed")
    assert terminal.plain.splitlines()[0] == "[1] 0.83  docs/x.md › A › B · page 3"
    marked = [terminal.plain[a:b] for a, b, style in terminal.styles if style == "bold red"]
    assert marked == ["pump", "primed"]


def test_a_hit_no_word_explains_shows_its_best_chunk_not_a_neighbour() -> None:
    """A passage merged from three chunks, found by meaning alone: the lines shown are the
    best chunk's (the place its header names), not the first neighbour's."""
    first = "# Ferry timetable\n\nThe ferry leaves the north pier at seven in the morning.\n\n"
    best = "# Signal lamp\n\nThe lamp on the harbour tower turns every six hours.\n\n"
    last = "# Greenhouse care\n\nThe beds are watered at dawn and at dusk.\n"
    content = first + best + last
    where = (len(first), len(first) + len(best))
    places = [
        (0, where[0], "lines 1-3"),
        (*where, "lines 5-7"),
        (where[1], len(content), "lines 9-11"),
    ]
    found = [
        SearchResult(
            1, 0.6, "docs/h.md", content, chunk_index=1, chunks=[0, 1, 2], places=places,
            location="lines 5-7",
        )
    ]  # fmt: skip
    header, shown = render(found, "compact", "beacon upkeep").plain.splitlines()[:2]
    assert shown.startswith("    … § Signal lamp — The lamp on the harbour tower"), shown
    assert header == "[1] Score: 0.60 | Source: docs/h.md | Location: lines 5-7"
    # words of a neighbour's: its lines are shown, and the header says where they are
    header, shown = render(found, "compact", "when are the beds watered?").plain.splitlines()[:2]
    assert shown == "    … § Greenhouse care — The beds are watered at dawn and at dusk."
    assert header.endswith("| Location: lines 5-7 | Shown: lines 9-11"), header
    terminal = render(found, "terminal", "when are the beds watered?", 80).plain.splitlines()[0]
    assert terminal == "[1] 0.60  docs/h.md · lines 5-7 (shown: 9-11)"
    unknown = [SearchResult(1, 0.6, "docs/h.md", content)]  # no best chunk known: the start
    assert "    § Ferry timetable — The ferry" in render(unknown, "compact", "beacon upkeep").plain
