"""A result names the place of its best chunk, whatever neighbours were merged into it.

A document of three topics, one a page (slide, sheet, block of lines, block of rows), the
answer in the third: ``holodeck search --top-k 1`` merges the neighbouring chunks into one
passage, and its location must still be the third unit (issue 60, item 1: since
``passages.spread`` a three-page PDF answered ``pages 1-3``). Real files (fpdf2,
python-pptx, openpyxl), the real model, the real ``holodeck search`` and ``holodeck serve``.
"""

from __future__ import annotations

import asyncio
import csv
import io
import json
import os
import re
import sys
from pathlib import Path
from typing import Any

import openpyxl
import pptx
import pytest
from cli_helpers import run_holodeck, write
from fpdf import FPDF
from mcp import Client, StdioServerParameters
from mcp.client.stdio import stdio_client

QUERY = "how often is the signal lamp rotated"
#: Each topic a few sentences: at the chunk sizes below, a chunk or two of its own.
TOPICS = [
    (
        "Ferry timetable",
        "The harbour ferry leaves the north pier at seven in the morning. It crosses the "
        "bay in forty minutes and returns before noon. Tickets are sold on board by the "
        "purser, who also keeps the passenger list for the harbour office.",
    ),
    (
        "Greenhouse care",
        "The greenhouse beds are watered at dawn and at dusk. The gardener opens the roof "
        "vents when the air inside grows warmer than the air outside, and closes them again "
        "before the evening frost settles on the glass panes.",
    ),
    (
        "Signal lamp",
        "The signal lamp on the harbour tower is rotated every six hours by the night "
        "keeper. Its lens is polished each Sunday, and a spare bulb is kept in the tin box "
        "beside the stair so that the light never goes dark for long.",
    ),
]
#: One tool per file, so that each search ranks one file's chunks only.
FILES = {
    "pdf": "harbour.pdf",
    "pptx": "harbour.pptx",
    "xlsx": "harbour.xlsx",
    "md": "harbour.md",
    "txt": "harbour.txt",
    "csv": "harbour.csv",
}

#: Sizes at which each unit (sheet, csv row) is one or two chunks of its own.
CHUNK_SIZE = {"xlsx": 128, "csv": 80}


def agent_yaml() -> str:
    tools = "".join(
        f"  - type: vectorstore\n    name: {kind}\n    source: docs/{name}\n"
        f"    chunk_size: {CHUNK_SIZE.get(kind, 64)}\n    chunk_overlap: 0\n"
        f"    file_types: [.{kind}]\n"
        for kind, name in FILES.items()
    )
    return f"name: where-best\ntools:\n{tools}"


def make_pdf(path: Path) -> None:
    """One topic a page."""
    pdf = FPDF()
    pdf.set_font("Helvetica", size=12)
    for title, text in TOPICS:
        pdf.add_page()
        pdf.multi_cell(0, 8, f"{title}\n\n{text}")
    path.parent.mkdir(parents=True, exist_ok=True)
    pdf.output(str(path))


def make_pptx(path: Path) -> None:
    """One topic a slide."""
    deck = pptx.Presentation()
    for title, text in TOPICS:
        slide = deck.slides.add_slide(deck.slide_layouts[1])
        slide.shapes.title.text = title
        slide.placeholders[1].text = text
    deck.save(str(path))


def make_xlsx(path: Path) -> None:
    """One topic a sheet, one sentence a row."""
    book = openpyxl.Workbook()
    for n, (title, text) in enumerate(TOPICS):
        sheet = book.active if n == 0 else book.create_sheet()
        sheet.title = title.split()[0]
        sheet.append(["topic", "note"])
        for sentence in text.split(". "):
            sheet.append([title, sentence])
    book.save(str(path))


def markdown_text() -> str:
    return "".join(f"# {title}\n\n{text}\n\n" for title, text in TOPICS)


def plain_text() -> str:
    return "".join(f"{title}\n\n{text}\n\n" for title, text in TOPICS)


def csv_text() -> str:
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(["topic", "note"])
    for title, text in TOPICS:
        writer.writerow([title, text])
    return out.getvalue()


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("where-best")
    write(root / "agent.yaml", agent_yaml())
    docs = root / "docs"
    make_pdf(docs / FILES["pdf"])
    make_pptx(docs / FILES["pptx"])
    make_xlsx(docs / FILES["xlsx"])
    write(docs / FILES["md"], markdown_text())
    write(docs / FILES["txt"], plain_text())
    write(docs / FILES["csv"], csv_text())
    ingested = run_holodeck("ingest", cwd=root)
    assert ingested.returncode == 0, ingested.stderr
    return root


def span(location: str, unit: str) -> tuple[int, int]:
    """``lines 3-9`` -> (3, 9); ``line 4`` -> (4, 4)."""
    match = re.fullmatch(rf"{unit}s? (\d+)(?:-(\d+))?", location)
    assert match, f"{location!r} is not a {unit} location"
    return int(match[1]), int(match[2] or match[1])


def search(project: Path, kind: str, *args: str) -> str:
    """What ``holodeck search --top-k 1 ARGS`` prints for the tool over one file."""
    found = run_holodeck(
        "search", "--top-k", "1", "--no-ingest", "--tool", kind, *args, QUERY, cwd=project
    )
    assert found.returncode == 0, found.stderr
    return found.stdout


def best_result(project: Path, kind: str) -> dict:
    """The one result of ``holodeck search --top-k 1 --json``."""
    (result,) = json.loads(search(project, kind, "--json"))["tools"][0]["results"]
    return result


#: Where the answer is, for the units listed one by one.
ANSWER_AT = {"pdf": "page 3", "pptx": "slide 3", "xlsx": "sheet Signal"}
#: The unit of the kinds whose lines are counted, and the text its numbers count in.
LINES_OF = {"md": ("line", markdown_text), "txt": ("line", plain_text), "csv": ("row", csv_text)}


def answer_line(kind: str) -> int:
    """The line (row) of the file holding the answer."""
    lines = LINES_OF[kind][1]().splitlines()
    return next(n for n, line in enumerate(lines, 1) if "rotated every" in line)


def located_at_the_answer(kind: str, location: str, passage: str) -> bool:
    """Whether ``location`` names the answer's unit and no other (for lines and rows: holds
    the answer's line and is narrower than the whole passage, which covers other topics)."""
    if kind in ANSWER_AT:
        return location == ANSWER_AT[kind]
    unit = LINES_OF[kind][0]
    lo, hi = span(location, unit)
    whole = span(passage, unit)
    return lo <= answer_line(kind) <= hi and (lo, hi) != whole and whole[0] <= lo <= hi <= whole[1]


@pytest.mark.parametrize("kind", list(FILES))
def test_a_result_names_where_its_best_chunk_is_not_its_neighbours(
    project: Path, kind: str
) -> None:
    result = best_result(project, kind)
    # the case this is about: neighbours were merged in, their text spans the other topics
    assert len(result["chunks"]) > 1, result
    assert not located_at_the_answer(kind, result["span"], result["span"]), result["span"]

    assert located_at_the_answer(kind, result["location"], result["span"]), result
    assert "rotated every six hours" in result["content"]

    # the pipe's text says the same place
    piped = search(project, kind).splitlines()[0]
    assert f"| Source: docs/{FILES[kind]} | Location: {result['location']}" in piped, piped


@pytest.mark.parametrize("kind", ["pdf", "xlsx"])
def test_mcp_results_name_where_their_best_chunk_is(project: Path, kind: str) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "AZURE_"))}
    server = StdioServerParameters(
        command=sys.executable,
        args=["-m", "holodeck", "serve"],
        cwd=project,
        env={**env, "HOME": str(project / "home"), "NO_COLOR": "1"},
    )

    async def scenario() -> Any:
        with (project / f"serve-{kind}.err").open("w") as errlog:
            async with Client(stdio_client(server, errlog=errlog)) as client:
                return await client.call_tool(kind, {"query": QUERY})

    called = asyncio.run(scenario())
    assert not called.is_error, called.content[0].text
    top = called.structured_content["tools"][0]["results"][0]
    assert top["location"] == ANSWER_AT[kind] and len(top["chunks"]) > 1, top
    first = called.content[0].text.split("\n")[2]
    assert f"| Source: docs/{FILES[kind]} | Location: {ANSWER_AT[kind]}" in first, first


def test_a_fresh_projects_three_page_pdf_answers_from_page_3(tmp_path: Path) -> None:
    """The issue's own case: default settings, pages of about a chunk each, the answer on
    page 3: the passage merges the three chunks (pages 1-3), the result says page 3."""
    write(
        tmp_path / "agent.yaml",
        "name: fresh\ntools:\n  - {type: vectorstore, name: kb, source: docs}\n",
    )
    pdf = FPDF()
    pdf.set_font("Helvetica", size=12)
    for title, text in TOPICS:
        pdf.add_page()
        pdf.multi_cell(0, 8, f"{title}\n\n" + " ".join([text] * 4))
    (tmp_path / "docs").mkdir()
    pdf.output(str(tmp_path / "docs" / "harbour.pdf"))
    assert run_holodeck("ingest", cwd=tmp_path).returncode == 0

    found = run_holodeck("search", "--top-k", "1", "--json", QUERY, cwd=tmp_path)
    (result,) = json.loads(found.stdout)["tools"][0]["results"]
    assert (result["chunks"], result["span"]) == ([0, 1, 2], "pages 1-3"), result
    assert result["location"] == "page 3"
    piped = run_holodeck("search", "--top-k", "1", QUERY, cwd=tmp_path).stdout
    assert (
        piped.startswith("[1] Score: ")
        and "| Source: docs/harbour.pdf | Location: page 3\n" in piped
    )
    assert "rotated every six hours" in piped
