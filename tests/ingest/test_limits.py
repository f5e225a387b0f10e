"""A file too big to be a document is skipped, not converted: zip bombs among the office
files (a part that unzips to far more than it holds), huge text files, PDFs of more pages or
text than any manual, each skipped with a warning that names the file, the limit and how to
raise it; the other files are ingested and nothing of the skipped one is stored. The limits
are the tool's ``limits:`` in agent.yaml (issue 41, item 4).

Real files made here (office zips written with zipfile, their big part streamed so the file
stays small; PDFs with fpdf2); the real CLI and model.
"""

from __future__ import annotations

import io
import json
import os
import zipfile
from pathlib import Path

import docx
import openpyxl
import pptx
import pytest
from cli_helpers import run_holodeck, write
from fpdf import FPDF

from holodeck.config.file_limits import FileLimits
from holodeck.config.loader import load_project
from holodeck.ingest.convert import OverLimit, convert
from holodeck.ingest.discover import SourceFile
from holodeck.tools.vectorstore_tool import build_tools

MB = 1 << 20

AGENT = """\
name: limits-test
tools:
  - type: vectorstore
    name: kb
    source: docs
    file_types: [.md, .txt, .csv, .pdf, .docx, .pptx, .xlsx]
"""

GUIDE = "# Guide\n\nThe pumps of the east wing are checked every morning at six.\n"


def agent(limits: str = "") -> str:
    return AGENT + (f"    limits:\n{limits}" if limits else "")


def office_file(kind: str) -> bytes:
    """A small real .docx, .pptx or .xlsx, made by its library."""
    out = io.BytesIO()
    if kind == "docx":
        document = docx.Document()
        document.add_paragraph("The cooling loop of the reactor hall was flushed in March.")
        document.save(out)
    elif kind == "pptx":
        deck = pptx.Presentation()
        slide = deck.slides.add_slide(deck.slide_layouts[1])
        slide.shapes.title.text = "Launch windows"
        deck.save(out)
    else:
        book = openpyxl.Workbook()
        book.active.append(["item", "cost"])
        book.save(out)
    return out.getvalue()


#: The part of each kind that a bomb inflates, and a unit it repeats (valid markup).
BOMB_PARTS = {
    "docx": ("word/document.xml", b"<w:p><w:r><w:t>All work and no play.</w:t></w:r></w:p>"),
    "pptx": ("ppt/slides/slide1.xml", b"<a:p><a:r><a:t>All work and no play.</a:t></a:r></a:p>"),
    "xlsx": ("xl/worksheets/sheet1.xml", b'<c t="inlineStr"><is><t>All work</t></is></c>'),
}


def with_big_part(
    kind: str, path: Path, unzipped: int, unit: bytes | None = None, text: bytes = b""
) -> Path:
    """A real office file whose main part is replaced by one that unzips to ``unzipped``
    bytes: ``unit`` repeated (the kind's own by default) inside the part's real opening and
    closing, with ``text`` (real markup) before the repeats. Streamed: the zip stays small."""
    part, default_unit = BOMB_PARTS[kind]
    unit = unit or default_unit
    source = zipfile.ZipFile(io.BytesIO(office_file(kind)))
    original = source.read(part)
    if kind == "xlsx":  # a row of its own, first in the sheet's data
        cut = original.index(b"<sheetData>") + len(b"<sheetData>")
        head, tail = original[:cut] + b'<row r="9999">', b"</row>" + original[cut:]
    else:  # paragraphs before the first one
        cut = original.index(b"<w:p>" if kind == "docx" else b"<a:p>")
        head, tail = original[:cut], original[cut:]
    block = unit * (MB // len(unit))
    big = zipfile.ZipInfo(part)
    big.compress_type = zipfile.ZIP_DEFLATED
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as out:
        for info in source.infolist():
            if info.filename != part:
                out.writestr(info, source.read(info))
                continue
            with out.open(big, "w", force_zip64=True) as stream:
                stream.write(head + text)
                written = len(head) + len(text) + len(tail)
                while written + len(block) <= unzipped:
                    stream.write(block)
                    written += len(block)
                stream.write(unit * ((unzipped - written) // len(unit)) + tail)
    return path


def make_pdf(path: Path, pages: int) -> Path:
    pdf = FPDF()
    pdf.set_font("helvetica", size=11)
    for n in range(1, pages + 1):
        pdf.add_page()
        pdf.multi_cell(0, 6, f"Page {n} of the valve manual: valve {n} is opened by hand.")
    pdf.output(str(path))
    return path


def stored_docs(project: Path) -> set[str]:
    (tool,) = build_tools(load_project(project / "agent.yaml"))
    try:
        return set(tool.store.doc_ids("limits-test", "kb"))
    finally:
        tool.close()


def ingest(project: Path) -> tuple[dict, str]:
    result = run_holodeck("ingest", "--json", cwd=project, timeout=300)
    assert result.returncode == 0, result.stderr
    [summary] = json.loads(result.stdout)["tools"]
    return summary, result.stderr


def reasons(summary: dict) -> dict[str, str]:
    return {s["path"]: s["reason"] for s in summary["skipped_files"]}


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "proj"
    write(root / "agent.yaml", agent())
    write(root / "docs" / "guide.md", GUIDE)
    (root / "docs" / "report.docx").write_bytes(office_file("docx"))
    return root


def test_office_zip_bombs_are_skipped_unread_and_the_rest_is_ingested(project: Path) -> None:
    docs = project / "docs"
    for kind in ("docx", "pptx", "xlsx"):  # 100 MB unzipped, from a file under 1 MB
        bomb = with_big_part(kind, docs / f"bomb.{kind}", 100 * MB)
        assert bomb.stat().st_size < MB, bomb.stat().st_size

    summary, err = ingest(project)

    assert summary["new"] == 2 and summary["failed"] == 3, summary
    for kind, (part, _) in BOMB_PARTS.items():
        why = reasons(summary)[f"bomb.{kind}"]
        assert why.startswith(f"{part} unzips to 100 MB, "), why
        assert why.endswith(
            " times its zipped size (limit 100: a zip bomb?); to ingest it, raise "
            "limits.max_zip_ratio of tool kb in agent.yaml"
        ), why
        assert f"WARNING: Skipped bomb.{kind}: {why}" in err
    assert stored_docs(project) == {"guide.md", "report.docx"}


def test_a_part_past_the_ratio_is_ingested_once_the_limits_are_raised(project: Path) -> None:
    """A real document that only looks like a bomb (2 MB of empty paragraphs that zip
    tight, around one sentence): skipped by default, taken in once the tool allows it."""
    empty = b'<w:p><w:pPr><w:spacing w:after="0"/></w:pPr></w:p>'
    sentence = b"<w:p><w:r><w:t>The spare impeller is kept in locker nine.</w:t></w:r></w:p>"
    with_big_part("docx", project / "docs" / "spaced.docx", 2 * MB, empty, sentence)

    summary, err = ingest(project)
    why = reasons(summary)["spaced.docx"]
    assert why.startswith("word/document.xml unzips to 2.0 MB, "), why
    assert why.endswith("raise limits.max_zip_ratio of tool kb in agent.yaml"), why
    assert "Skipped spaced.docx: word/document.xml unzips to 2.0 MB" in err

    write(project / "agent.yaml", agent("      max_zip_ratio: 5000\n      max_unzipped_mb: 1\n"))
    summary, err = ingest(project)
    with zipfile.ZipFile(project / "docs" / "spaced.docx") as z:  # python-docx's parts too
        unzipped = sum(entry.file_size for entry in z.infolist()) / MB
    assert 2 < unzipped < 3
    assert reasons(summary) == {
        "spaced.docx": f"unzips to {unzipped:.1f} MB (limit 1 MB); to ingest it, raise "
        "limits.max_unzipped_mb of tool kb in agent.yaml"
    }
    assert "spaced.docx" not in stored_docs(project)

    write(project / "agent.yaml", agent("      max_zip_ratio: 5000\n"))
    summary, err = ingest(project)
    assert summary["new"] == 1 and summary["failed"] == 0, summary
    assert "spaced.docx" in stored_docs(project)
    found = run_holodeck("search", "--json", "where is the spare impeller", cwd=project)
    assert found.returncode == 0, found.stderr
    best = json.loads(found.stdout)["tools"][0]["results"][0]
    assert best["source_path"] == "docs/spaced.docx" and "locker nine" in best["content"]


def test_text_file_pdf_and_text_limits_skip_big_files_until_raised(project: Path) -> None:
    docs = project / "docs"
    rows = "".join(f"{n},pump {n},checked on day {n % 28 + 1}\n" for n in range(4000))
    write(docs / "log.csv", "id,pump,note\n" + rows)  # ~120 KB
    write(docs / "long.txt", "The night shift reads the gauges and writes them down.\n" * 600)
    make_pdf(docs / "valves.pdf", 12)
    assert 0.1 * MB < (docs / "log.csv").stat().st_size < 0.2 * MB
    small = "      max_text_file_mb: 0.1\n      max_pdf_pages: 10\n      max_text_chars: 20000\n"
    write(project / "agent.yaml", agent(small))

    summary, err = ingest(project)

    assert summary["new"] == 2 and summary["failed"] == 3, summary  # guide.md, report.docx
    fix = "; to ingest it, raise limits.{} of tool kb in agent.yaml"
    assert reasons(summary) == {
        "log.csv": "the file is 0.12 MB (limit 0.1 MB)" + fix.format("max_text_file_mb"),
        "long.txt": "its text is 33,000 characters (limit 20,000)" + fix.format("max_text_chars"),
        "valves.pdf": "it has 12 pages (limit 10)" + fix.format("max_pdf_pages"),
    }
    for name, why in reasons(summary).items():
        assert f"WARNING: Skipped {name}: {why}" in err
    assert stored_docs(project) == {"guide.md", "report.docx"}

    write(project / "agent.yaml", agent("      max_text_file_mb: 1\n      max_pdf_pages: 20\n"))
    summary, err = ingest(project)
    assert summary["new"] == 3 and summary["failed"] == 0, (summary, err)
    assert stored_docs(project) == {"guide.md", "report.docx", "log.csv", "long.txt", "valves.pdf"}


def test_a_bad_limit_is_one_line_naming_the_file_line_and_field(project: Path) -> None:
    write(project / "agent.yaml", agent("      max_zip_ratio: 0\n"))
    result = run_holodeck("ingest", cwd=project)
    assert result.returncode == 2
    assert result.stderr.strip().splitlines() == [
        "Error: agent.yaml:8: tools[0].limits.max_zip_ratio: Input should be greater than or "
        "equal to 1 (got 0)"
    ], result.stderr
    write(project / "agent.yaml", agent("      max_pages: 10\n"))
    result = run_holodeck("ingest", cwd=project)
    assert result.returncode == 2
    [line] = result.stderr.strip().splitlines()
    assert line.startswith("Error: agent.yaml:8: tools[0].limits.max_pages: unknown key"), line
    assert "did you mean 'max_pdf_pages'" in line, line


def test_a_boolean_or_an_endless_number_is_no_limit(project: Path) -> None:
    """``true`` was read as the limit 1 (every file skipped, rc 0); ``.nan`` would be a limit
    no file ever passes (issue 61, item 3). A number given as text (``${VAR}``) still counts."""
    for value, said in (
        ("true", "a number, not true"),
        ("false", "a number, not false"),
        (".inf", "a finite number, not .inf (for no limit, write a large one)"),
        (".nan", "a finite number, not .nan (for no limit, write a large one)"),
    ):
        for key in ("max_text_chars", "max_zip_ratio"):
            write(project / "agent.yaml", agent(f"      {key}: {value}\n"))
            result = run_holodeck("ingest", cwd=project)
            assert result.returncode == 2, (key, value, result.stderr)
            assert result.stderr.strip().splitlines() == [
                f"Error: agent.yaml:8: tools[0].limits.{key}: {said}"
            ], result.stderr
    write(project / "agent.yaml", AGENT + "    top_k: yes\n")
    result = run_holodeck("ingest", cwd=project)
    assert result.returncode == 2
    assert result.stderr.strip() == "Error: agent.yaml:7: tools[0].top_k: a number, not true"

    write(project / "agent.yaml", agent("      max_text_chars: ${CHARS}\n"))
    result = run_holodeck("ingest", "--json", cwd=project, env={"CHARS": "40"})
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["tools"][0]["failed"] == 2  # both files past 40 chars


def test_a_web_page_has_a_size_limit_of_its_own(project: Path) -> None:
    """Parsing a page costs far more than reading text (an 11 MB page: 50 s and 878 MB), so
    a page past ``max_html_mb`` (8 MB) is skipped unread, while text of that size is read
    (issue 61, debatable)."""
    write(project / "agent.yaml", AGENT.replace(".xlsx]", ".xlsx, .html]"))
    paragraph = "<p>The night shift reads the gauges of the east wing and writes them down.</p>\n"
    page = "<html><body>" + paragraph * (9 * MB // len(paragraph)) + "</body></html>\n"
    write(project / "docs" / "all.html", page)

    summary, err = ingest(project)

    assert reasons(summary) == {
        "all.html": "the page is 9.0 MB (limit 8 MB); to ingest it, raise limits.max_html_mb "
        "of tool kb in agent.yaml"
    }
    assert "WARNING: Skipped all.html: the page is 9.0 MB (limit 8 MB)" in err
    assert stored_docs(project) == {"guide.md", "report.docx"}

    small = project / "docs" / "small.html"
    write(small, "<html><body>" + paragraph * 3000 + "</body></html>\n")
    size = small.stat().st_size / MB
    assert _convert_with(small, max_html_mb=0.1) == (
        f"the page is {size:.2f} MB (limit 0.1 MB); to ingest it, raise limits.max_html_mb"
    )
    file = SourceFile(small, small.name, 0.0, 0, root=os.path.realpath(small.parent))
    assert "east wing" in convert(file, FileLimits(max_html_mb=1)).text
    text = project / "docs" / "same.txt"
    write(text, paragraph * (9 * MB // len(paragraph)))  # the same size as text: read
    file = SourceFile(text, text.name, 0.0, 0, root=os.path.realpath(text.parent))
    assert len(convert(file).text) > 8 * MB


# The same rules one file at a time, through convert() as the pipeline calls it.


def _convert_with(path: Path, **limits: float) -> str:
    """The skip reason of ``path`` under ``limits``."""
    file = SourceFile(path, path.name, 0.0, 0, root=os.path.realpath(path.parent))
    with pytest.raises(OverLimit) as info:
        convert(file, FileLimits(**limits))  # type: ignore[arg-type]
    return info.value.reason


@pytest.mark.parametrize("name", ["a.txt", "a.md", "a.csv", "a.json", "a.html", "a.htm"])
def test_every_text_type_is_refused_by_its_size(tmp_path: Path, name: str) -> None:
    path = tmp_path / name
    path.write_bytes(b"[" + b"1," * (MB // 2) + b"1]")  # 1 MB and 3 bytes of valid JSON
    why = _convert_with(path, max_text_file_mb=1)
    assert why == "the file is 1.0 MB (limit 1 MB); to ingest it, raise limits.max_text_file_mb"


def test_a_pdf_and_a_csv_stop_converting_where_their_text_passes_the_limit(
    tmp_path: Path,
) -> None:
    pdf = make_pdf(tmp_path / "valves.pdf", 12)
    page_text = len("Page 1 of the valve manual: valve 1 is opened by hand.")
    assert 5 * page_text <= 300 < 6 * page_text  # the sixth page's text passes 300
    assert _convert_with(pdf, max_text_chars=300) == (
        "its text passes the limit of 300 characters at page 6 of 12; to ingest it, raise "
        "limits.max_text_chars"
    )
    csv = tmp_path / "log.csv"
    csv.write_text("id,note\n" + "".join(f"{n},valve {n} opened\n" for n in range(1000)))
    table = convert(SourceFile(csv, csv.name, 0.0, 0, root=str(tmp_path))).text
    # The record whose line takes the table past 1,000 characters (header: row 1, line 1).
    lines = table.splitlines(keepends=True)
    ends = [sum(map(len, lines[: n + 1])) for n in range(len(lines))]
    row = next(n for n, end in enumerate(ends) if end > 1000)  # line n + 1 is row n
    assert row == 41
    assert _convert_with(csv, max_text_chars=1000) == (
        "its text passes the limit of 1,000 characters at row 41; to ingest it, raise "
        "limits.max_text_chars"
    )


def test_an_office_file_of_too_many_zip_entries_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "many.docx"
    path.write_bytes(office_file("docx"))
    with zipfile.ZipFile(path, "a") as z:
        count = len(z.infolist())
        for n in range(30):
            z.writestr(f"extra/item{n}.xml", "<a/>")
    assert _convert_with(path, max_zip_entries=20) == (
        f"it holds {count + 30} zip entries (limit 20); to ingest it, raise limits.max_zip_entries"
    )
