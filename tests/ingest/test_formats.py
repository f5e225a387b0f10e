"""Office and HTML files: ingested when a tool lists them in ``file_types``, skipped otherwise.

Real files, made here with python-docx, python-pptx and openpyxl; the real CLI and model.
"""

from __future__ import annotations

import json
from pathlib import Path

import docx
import openpyxl
import pptx
import pytest
from cli_helpers import run_holodeck, write

from holodeck.config.loader import load_project
from holodeck.tools.vectorstore_tool import build_tools

OFFICE = ("report.docx", "deck.pptx", "budget.xlsx", "page.html", "old.htm")


def make_office_files(docs: Path) -> None:
    docs.mkdir(parents=True, exist_ok=True)
    document = docx.Document()
    document.add_heading("Cooling report", 1)
    document.add_paragraph("The cooling loop of the reactor hall was flushed in March.")
    document.save(docs / "report.docx")

    deck = pptx.Presentation()
    for n, topic in enumerate(["launch windows", "fuel budget", "crew rotation"], start=1):
        slide = deck.slides.add_slide(deck.slide_layouts[1])
        slide.shapes.title.text = f"Mission {topic}"
        slide.placeholders[1].text = f"Slide {n} explains the {topic} of the mission."
    deck.save(docs / "deck.pptx")

    book = openpyxl.Workbook()
    sheet = book.active
    sheet.title = "Budget"
    sheet.append(["item", "cost"])
    sheet.append(["telescope mirror polishing", 1200])
    summary = book.create_sheet("Staff")
    summary.append(["name", "role"])
    summary.append(["Ada", "night shift astronomer"])
    book.save(docs / "budget.xlsx")

    (docs / "page.html").write_text(
        "<html><head><title>Visits</title><script>var tracking = 1;</script></head>"
        "<body><h1>Visiting hours</h1><p>The observatory opens to visitors on "
        "<b>Saturdays</b> at nine.</p></body></html>",
        encoding="utf-8",
    )
    (docs / "old.htm").write_text(
        "<html><body><p>The old dome was built of copper sheets in 1910.</p></body></html>",
        encoding="latin-1",
    )
    (docs / "notes.md").write_text("# Notes\n\nThe night log is kept in the red binder.\n")


def agent(file_types: str = "") -> str:
    return "name: formats-test\ntools:\n  - type: vectorstore\n    name: kb\n    source: docs\n" + (
        f"    file_types: {file_types}\n" if file_types else ""
    )


def ingest_json(project: Path) -> dict:
    result = run_holodeck("ingest", "--json", cwd=project)
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)["tools"][0]


def stored(project: Path) -> dict[str, list[tuple[str, str]]]:
    """doc id -> [(location, content)] of every stored chunk."""
    (tool,) = build_tools(load_project(project / "agent.yaml"))
    try:
        store = tool.store
        docs = store.doc_ids("formats-test", "kb")
        return {
            d: [(r.location, r.content) for r in store.doc_chunks("formats-test", "kb", d)]
            for d in docs
        }
    finally:
        tool.close()


@pytest.fixture
def project(tmp_path: Path) -> Path:
    make_office_files(tmp_path / "proj" / "docs")
    return tmp_path / "proj"


def test_office_and_html_are_skipped_unless_enabled(project: Path) -> None:
    write(project / "agent.yaml", agent())
    result = run_holodeck("ingest", "--json", cwd=project)
    assert result.returncode == 0, result.stderr
    summary = json.loads(result.stdout)["tools"][0]
    reasons = {s["path"]: s["reason"] for s in summary["skipped_files"]}
    assert set(reasons) == set(OFFICE)
    assert reasons["report.docx"] == "file type .docx not enabled (add it to the tool's file_types)"
    assert "WARNING: Skipped deck.pptx: file type .pptx not enabled" in result.stderr
    assert set(stored(project)) == {"notes.md"}


def test_enabled_office_and_html_files_are_ingested_with_their_places(project: Path) -> None:
    write(project / "agent.yaml", agent("[.md, docx, .PPTX, .xlsx, .html, .htm]"))
    summary = ingest_json(project)
    assert (summary["new"], summary["skipped"], summary["failed"]) == (6, 0, 0)

    chunks = stored(project)
    text = {doc: " ".join(c for _, c in parts) for doc, parts in chunks.items()}
    assert "cooling loop of the reactor hall was flushed in March" in text["report.docx"]
    assert "Slide 2 explains the fuel budget" in text["deck.pptx"]
    assert "<!-- Slide" not in text["deck.pptx"]  # markitdown's markers became locations
    assert "telescope mirror polishing" in text["budget.xlsx"] and "Ada" in text["budget.xlsx"]
    assert "opens to visitors on **Saturdays** at nine" in text["page.html"]
    assert "tracking" not in text["page.html"]  # scripts are not text
    assert "built of copper sheets in 1910" in text["old.htm"]
    assert [loc for loc, _ in chunks["deck.pptx"]] == ["slides 1-3"]
    assert [loc for loc, _ in chunks["budget.xlsx"]] == ["sheets Budget to Staff"]
    # no pages in a .docx: its paragraphs, the heading first
    assert [loc for loc, _ in chunks["report.docx"]] == ["paragraphs 1-2"]

    found = run_holodeck("search", "cost of polishing the telescope mirror", "--json", cwd=project)
    best = json.loads(found.stdout)["tools"][0]["results"][0]
    assert (best["source_path"], best["location"]) == ("docs/budget.xlsx", "sheets Budget to Staff")


def test_each_slide_and_sheet_is_named_when_chunks_are_small(project: Path) -> None:
    write(
        project / "agent.yaml",
        agent("[.pptx, .xlsx]") + "    chunk_size: 24\n    chunk_overlap: 0\n",
    )
    ingest_json(project)

    chunks = stored(project)
    for location, content in chunks["deck.pptx"]:
        if location.startswith("slide "):
            assert f"Slide {location.split()[1]} explains" in content
    assert "slide 2" in [loc for loc, _ in chunks["deck.pptx"]]
    sheets = [loc for loc, _ in chunks["budget.xlsx"]]
    assert "sheet Budget" in sheets and "sheet Staff" in sheets
    for location, content in chunks["budget.xlsx"]:
        assert location in ("sheet Budget", "sheets Budget to Staff", "sheet Staff")
        if "telescope mirror" in content:
            assert "Budget" in location
        if "astronomer" in content:
            assert "Staff" in location


def test_a_corrupt_office_file_is_skipped_with_its_reason(project: Path) -> None:
    write(project / "agent.yaml", agent("[.md, .docx]"))
    (project / "docs" / "broken.docx").write_bytes(b"PK\x03\x04 not really a zip archive")
    result = run_holodeck("ingest", "--json", cwd=project)
    assert result.returncode == 0, result.stderr
    reasons = {
        s["path"]: s["reason"] for s in json.loads(result.stdout)["tools"][0]["skipped_files"]
    }
    assert reasons["broken.docx"].startswith("conversion failed: ")
    assert "Traceback" not in result.stderr


@pytest.mark.parametrize("value", ["[.doc]", "[.md, .exe]", "[]"])
def test_an_unknown_file_type_is_one_line_and_exit_2(project: Path, value: str) -> None:
    write(project / "agent.yaml", agent(value))
    result = run_holodeck("ingest", cwd=project)
    assert result.returncode == 2
    assert "Traceback" not in result.stderr
    [line] = result.stderr.strip().splitlines()
    assert "agent.yaml:6: tools[0].file_types" in line
    if value != "[]":
        assert "not a file type holodeck reads; valid: .txt .md .pdf .csv .json .docx" in line
