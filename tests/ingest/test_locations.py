"""Every chunk says where in its file it came from, and ``holodeck search`` shows it.

Real files through the real CLI and the real model; the stored chunks are read back through
the tool's own store to compare each location with the file itself.
"""

from __future__ import annotations

import csv
import io
import json
import re
from pathlib import Path

import pytest
from cli_helpers import run_holodeck, write
from fpdf import FPDF

from holodeck.config.loader import load_project
from holodeck.ingest.locations import Anchors, locate
from holodeck.tools.vectorstore_tool import build_tools
from holodeck.vectorstore.records import ChunkRecord

AGENT = """
name: where-test
tools:
  - type: vectorstore
    name: kb
    source: docs
    chunk_size: 64
    chunk_overlap: 8
"""

SENTENCES = [
    "Be aware that release critical bugs are frequently the targets of uploads by others.",
    "The maintainer answers questions about the package in the public bug tracker.",
    "Every upload is signed and checked before it reaches the archive mirrors.",
]


def chunks_of(project: Path, doc_id: str) -> list[ChunkRecord]:
    """The stored chunks of one document, in order, read through the tool's own store."""
    (tool,) = build_tools(load_project(project / "agent.yaml"))
    try:
        records = tool.store.doc_chunks("where-test", "kb", doc_id)
    finally:
        tool.close()
    return sorted(records, key=lambda r: r.chunk_index)


def ingest(project: Path) -> None:
    result = run_holodeck("ingest", cwd=project)
    assert result.returncode == 0, result.stderr


def span(location: str, unit: str) -> tuple[int, int]:
    """``lines 3-9`` -> (3, 9); ``line 4`` -> (4, 4)."""
    match = re.fullmatch(rf"{unit}s? (\d+)(?:-(\d+))?", location)
    assert match, f"{location!r} is not a {unit} location"
    first = int(match.group(1))
    return first, int(match.group(2) or first)


def manual_pdf(path: Path, pages: int) -> None:
    """A real PDF: a table of contents on page 1, then page n holds the sentences between
    two 'marker<n>', each word placed with a tight gap and no space glyph (as TeX sets text).
    A contents page sent markitdown's PDF path through pdfplumber, which glued such words."""
    pdf = FPDF(unit="pt", format="A4")
    pdf.set_font("Times", size=10)
    pdf.add_page()
    for i, title in enumerate(["Introduction", "Resources", "Uploads", "Bugs"]):
        pdf.text(72, 90 + 16 * i, title)
        pdf.text(300, 90 + 16 * i, f"section {i + 1}")
        pdf.text(500, 90 + 16 * i, str(i + 2))
    for number in range(2, pages + 1):
        pdf.add_page()
        x, y = 72.0, 90.0
        for word in " ".join([f"Page marker{number}.", *SENTENCES, f"marker{number}."]).split():
            width = pdf.get_string_width(word)
            if x + width > 520:
                x, y = 72.0, y + 14
            pdf.text(x, y, word)
            x += width + 2.5  # a tight justified gap, no space glyph
    path.parent.mkdir(parents=True, exist_ok=True)
    pdf.output(str(path))


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "proj"
    write(root / "agent.yaml", AGENT)
    return root


def test_pdf_words_stay_apart_and_each_chunk_names_its_page(project: Path) -> None:
    manual_pdf(project / "docs" / "guide.pdf", pages=5)
    ingest(project)

    chunks = chunks_of(project, "guide.pdf")
    text = " ".join(c.content for c in chunks)
    for sentence in SENTENCES:
        assert sentence in " ".join(text.split())  # words separated, none glued
    assert span(chunks[0].location, "page")[0] == 1 and "Introduction" in chunks[0].content
    assert len(chunks) >= 5
    seen = set()
    for chunk in chunks:
        first, last = span(chunk.location, "page")
        markers = {int(n) for n in re.findall(r"marker(\d+)", chunk.content)}
        assert all(first <= n <= last for n in markers), (chunk.location, chunk.content)
        assert last - first <= 1  # a small chunk spans a page break at most
        seen |= markers
    assert seen == {2, 3, 4, 5}

    found = run_holodeck("search", "Page marker3", "--top-k", "1", "--json", cwd=project)
    [best] = json.loads(found.stdout)["tools"][0]["results"]
    first, last = span(best["location"], "page")
    assert "marker3" in best["content"] and first <= 3 <= last
    shown = run_holodeck("search", "Page marker3", "--top-k", "1", cwd=project)
    assert f"Source: docs/guide.pdf | Location: {best['location']}" in shown.stdout


def test_markdown_lines_are_the_files_own_lines_front_matter_counted(project: Path) -> None:
    sections = [
        f"## Section {i}\n\nThe pump in hall {i} is checked every {i + 2} hours by the crew of "
        f"station {i * 3}, and the readings go into journal {i * 7} for review."
        for i in range(12)
    ]
    source = "---\ntags: [ops]\ntitle: Pumps\n---\n# Pumps\n\n" + "\n\n".join(sections) + "\n"
    write(project / "docs" / "pumps.md", source)
    ingest(project)

    lines = source.splitlines()
    chunks = chunks_of(project, "pumps.md")
    assert len(chunks) > 3
    for chunk in chunks:
        first, last = span(chunk.location, "line")
        body = chunk.content.splitlines()
        # A chunk may start or end inside a line (the overlap starts at a word).
        assert lines[first - 1].endswith(body[0]), chunk.location
        assert lines[last - 1].startswith(body[-1]), chunk.location
    assert span(chunks[0].location, "line")[0] == 5  # "# Pumps", after 4 lines of front matter


def test_csv_rows_are_records_with_the_header_as_row_1(project: Path) -> None:
    buffer = io.StringIO()
    writer = csv.writer(buffer)
    writer.writerow(["station", "note"])
    for i in range(40):
        writer.writerow([f"S{i}", f"valve {i} sticks\nafter rain" if i == 5 else f"valve {i} ok"])
    write(project / "docs" / "stations.csv", buffer.getvalue())
    ingest(project)

    chunks = chunks_of(project, "stations.csv")
    assert len(chunks) > 2
    for chunk in chunks:
        first, last = span(chunk.location, "row")
        rows = [int(n) + 2 for n in re.findall(r"\| S(\d+) \|", chunk.content)]
        # Station S<i> is record i + 2 of the file (row 1 is the header); a chunk may start
        # or end inside a record (the overlap starts at a word).
        assert rows and all(first <= row <= last for row in rows), chunk.location
        assert last - first <= len(rows) + 1, chunk.location
    assert any("valve 5 sticks after rain" in c.content for c in chunks)  # one line per record


def test_json_lines_are_those_of_the_pretty_printed_value(project: Path) -> None:
    value = {f"code{i}": {"message": f"error number {i} of the pump controller"} for i in range(30)}
    write(project / "docs" / "codes.json", json.dumps(value))
    ingest(project)

    pretty = json.dumps(value, indent=2).splitlines()
    for chunk in chunks_of(project, "codes.json"):
        first, last = span(chunk.location, "line")
        assert 1 <= first <= last <= len(pretty)
        for code in re.findall(r'"(code\d+)"', chunk.content):
            assert any(f'"{code}"' in line for line in pretty[first - 1 : last]), chunk.location


def test_locate_names_units_as_a_reader_does() -> None:
    pages = Anchors.at("page", [(0, "1"), (10, "2"), (20, "3")])
    text = "x" * 30
    assert locate(text, pages, [(0, 5), (5, 15), (12, 30), (10, 20)]) == [
        "page 1",
        "pages 1-2",
        "pages 2-3",
        "page 2",
    ]
    sheets = Anchors.at("sheet", [(0, "Budget"), (10, "Summary")])
    assert locate(text, sheets, [(2, 8), (2, 18)]) == ["sheet Budget", "sheets Budget to Summary"]
    lines = "a\nb\nc\nd\n"
    assert locate(lines, Anchors.lines(), [(0, 1), (2, 7), (0, 7)]) == [
        "line 1",
        "lines 2-4",
        "lines 1-4",
    ]
    fenced = "```json\n{\n}\n```\n"
    assert locate(fenced, Anchors.lines(shift=-1, last=2), [(0, len(fenced) - 1)]) == ["lines 1-2"]
    assert locate(text, None, [(0, 3)]) == [""]
