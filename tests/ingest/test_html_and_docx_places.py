"""HTML pages and .docx files: only a page's content is indexed (never its sidebar, header or
footer, short page or long), code stays code, and every result names a place a user can
open: a heading anchor (``#example``) or a paragraph number.

Real files (python-docx for the .docx), the real CLI in a real terminal, the real model.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import docx
import pytest
from cli_helpers import run_holodeck, write
from terminal import final_screen, spawn_holodeck

from holodeck.config.loader import load_project
from holodeck.tools.vectorstore_tool import build_tools

AGENT = """
name: places-test
tools:
  - type: vectorstore
    name: kb
    source: docs
    file_types: [.html, .docx]
    chunk_size: 64
    chunk_overlap: 0
"""

SIDEBAR = "".join(
    f'<li><a href="module{n}.html">Zebrafish quagga module {n}</a></li>' for n in range(1, 41)
)
#: A short page (under fifty words of text) inside a site's chrome.
SHORT_PAGE = f"""<!DOCTYPE html><html><head><title>Signal lamp | Station Wiki</title>
<script>window.track = 1;</script></head><body>
<header><a href="/">Station Wiki</a> <a href="/login">Log in</a></header>
<nav class="sidebar"><ul>{SIDEBAR}</ul></nav>
<main>
<h1 id="lamp">Signal lamp</h1>
<p>The signal lamp on the north pier is rotated every twelve days by the harbour keeper.</p>
<h2 id="example">Example</h2>
<pre><code>&gt;&gt;&gt; lamp.rotate(degrees=90)
&gt;&gt;&gt; lamp.heading
'east'</code></pre>
</main>
<footer>Copyright Station Wiki. <a href="/privacy">Privacy policy</a></footer>
</body></html>"""

#: A manual page as Sphinx writes one: the ids on the sections, a permalink mark in each
#: heading; its last heading has no id at all.
MANUAL_PAGE = """<!DOCTYPE html><html><head><title>Pumps</title></head><body>
<div class="related" role="navigation"><a href="index.html">Index</a></div>
<div class="body" role="main">
<section id="pumps"><h1>Pumps<a class="headerlink" href="#pumps">¶</a></h1>
<p>Every pump on the station is primed by hand before its first start of the season, and
the operator writes the date of the priming in the pump's own log book, next to the hours
the pump has run since the last overhaul and the name of whoever did it.</p>
<section id="bleeding-air"><h2>Bleeding air<a class="headerlink" href="#bleeding-air">¶</a></h2>
<p>Air trapped in the suction line makes the pump run dry. Open the bleed screw on top of
the housing until water without bubbles comes out, then close it a quarter turn past snug.
A pump that keeps gathering air after that has a leaking suction joint to be replaced.</p>
</section>
<h2>Spare parts</h2>
<p>Seals, bearings and impellers for every model are kept in the blue cabinet of the
workshop; the cabinet's list says which shelf holds which part, and a part taken out is
crossed off the list so that the storekeeper can order a new one before winter.</p>
</section></div>
<div class="sphinxsidebar" role="navigation"><ul>{SIDEBAR}</ul></div>
</body></html>"""

#: Paragraphs of the .docx, each about a chunk long, the answer in the fifth.
DOCX_PARAGRAPHS = [
    "The ferry timetable lists every crossing between the mainland and the island of Vey "
    "for the summer season, with the harbour each boat leaves from and where it calls.",
    "Tickets are sold at the kiosk next to the gangway and on board; a return ticket is "
    "valid for thirty days and can be used on any crossing of the same route.",
    "Bicycles travel free of charge on the lower deck, while cars must be booked at least "
    "a day ahead through the harbour office, which opens at seven in the morning.",
    "Dogs are welcome on the open deck when they are kept on a lead, and the cafeteria "
    "serves warm meals on every crossing that takes longer than one hour.",
    "In a storm warning the harbour master cancels the evening crossings, and passengers "
    "already holding a ticket are rebooked onto the first morning boat at no cost.",
    "Lost property found on board is kept at the harbour office for three months before "
    "it is handed over to the island's charity shop on the market square.",
]


def make_docx(path: Path) -> None:
    document = docx.Document()
    document.add_heading("Ferry guide", 1)
    for text in DOCX_PARAGRAPHS:
        document.add_paragraph(text)
    document.save(path)


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("places")
    write(root / "agent.yaml", AGENT)
    write(root / "docs" / "lamp.html", SHORT_PAGE)
    write(root / "docs" / "pumps.html", MANUAL_PAGE.replace("{SIDEBAR}", SIDEBAR))
    make_docx(root / "docs" / "ferry.docx")
    result = run_holodeck("ingest", cwd=root)
    assert result.returncode == 0, result.stderr
    return root


def stored(project: Path, doc_id: str) -> list[tuple[str, str]]:
    """(location, text) of each stored chunk of one document."""
    (tool,) = build_tools(load_project(project / "agent.yaml"))
    try:
        return [(r.location, r.content) for r in tool.store.doc_chunks("places-test", "kb", doc_id)]
    finally:
        tool.close()


def stored_text(project: Path, doc_id: str) -> list[str]:
    return [text for _, text in stored(project, doc_id)]


def paragraphs(location: str) -> range:
    """``paragraph 6`` -> 6..6, ``paragraphs 5-7`` -> 5..7."""
    match = re.fullmatch(r"paragraphs? (\d+)(?:-(\d+))?", location)
    assert match, f"{location!r} names no paragraph"
    return range(int(match.group(1)), int(match.group(2) or match.group(1)) + 1)


def best(project: Path, query: str) -> dict:
    found = run_holodeck("search", query, "--top-k", "1", "--no-ingest", "--json", cwd=project)
    assert found.returncode == 0, found.stderr
    return json.loads(found.stdout)["tools"][0]["results"][0]


def header_on_terminal(project: Path, query: str) -> str:
    """The first line `holodeck search` prints for ``query`` on a real terminal."""
    size = (60, 160)
    child = spawn_holodeck("search", query, "--top-k", "1", "--no-ingest", cwd=project, size=size)
    return final_screen(child, size)[0]


def test_a_short_page_is_indexed_without_its_sidebar_header_and_footer(project: Path) -> None:
    text = "\n".join(stored_text(project, "lamp.html"))
    for chrome in ("Zebrafish quagga", "module 7", "Log in", "Station Wiki", "Privacy", "track"):
        assert chrome not in text, chrome
    assert "rotated every twelve days by the harbour keeper" in text

    result = best(project, "how often is the signal lamp rotated")
    assert result["source_path"] == "docs/lamp.html"
    assert "rotated every twelve days" in result["content"]


def test_an_html_result_names_its_heading_anchor_and_its_code_keeps_its_lines(
    project: Path,
) -> None:
    lamp = best(project, "how often is the signal lamp rotated")
    assert (lamp["location"], lamp["section"]) == ("#lamp", "Signal lamp")
    assert "docs/lamp.html › Signal lamp · #lamp" in header_on_terminal(
        project, "how often is the signal lamp rotated"
    )

    code = best(project, "lamp.rotate degrees heading east example")
    assert ">>> lamp.rotate(degrees=90)\n>>> lamp.heading\n'east'" in code["content"]
    assert any(
        "```\n>>> lamp.rotate(degrees=90)\n>>> lamp.heading" in chunk
        for chunk in stored_text(project, "lamp.html")
    )  # fenced code in the markdown, as written


def test_a_manual_page_names_its_sections_anchors_or_else_the_paragraph(project: Path) -> None:
    chunks = stored(project, "pumps.html")
    assert [loc for loc, text in chunks if "Open the bleed screw" in text] == ["#bleeding-air"]
    assert [loc for loc, text in chunks if "primed by hand" in text] == ["#pumps"]
    air = best(project, "open the bleed screw until water without bubbles comes out")
    assert air["source_path"] == "docs/pumps.html"
    assert air["section"] == "Pumps › Bleeding air"
    # A passage merged with its neighbour names one chunk's anchor (which one: results.py).
    assert air["location"] in ("#bleeding-air", "#pumps")
    header = header_on_terminal(project, "open the bleed screw until water without bubbles")
    assert "docs/pumps.html › Pumps › Bleeding air · #" in header
    # A heading without an id: its section is named by the paragraphs down the page
    # (title 1, text 2, heading 3, text 4, heading 5, text 6).
    parts = best(project, "which cabinet holds the seals bearings and impellers")
    assert parts["section"] == "Pumps › Spare parts"
    (place,) = [loc for loc, text in chunks if "blue cabinet" in text]
    assert place in ("paragraph 6", "paragraphs 5-6")


def test_a_docx_result_names_the_paragraph_it_comes_from(project: Path) -> None:
    result = best(project, "what happens to evening crossings in a storm warning")
    assert result["source_path"] == "docs/ferry.docx"
    assert "storm warning" in result["content"]
    # The heading is paragraph 1, so the fifth paragraph of text is paragraph 6 of the file.
    document = docx.Document(str(project / "docs" / "ferry.docx"))
    assert "storm warning" in document.paragraphs[5].text
    chunks = stored(project, "ferry.docx")
    (place,) = [loc for loc, text in chunks if "storm warning" in text]
    assert 6 in paragraphs(place)
    for location, text in chunks:  # each chunk starts and ends in the paragraphs it names
        named = paragraphs(location)
        assert text.lstrip("# ")[:10] in document.paragraphs[named[0] - 1].text, location
        assert text[-30:] in document.paragraphs[named[-1] - 1].text, location
    assert 6 in paragraphs(result["location"])  # the passage shown may take in its neighbours
    header = header_on_terminal(project, "what happens to evening crossings in a storm warning")
    assert "docs/ferry.docx › Ferry guide · paragraph" in header


def test_a_page_of_navigation_only_is_skipped_saying_so(tmp_path: Path) -> None:
    write(tmp_path / "agent.yaml", AGENT)
    write(
        tmp_path / "docs" / "menu.html", f"<html><body><nav><ul>{SIDEBAR}</ul></nav></body></html>"
    )
    write(tmp_path / "docs" / "lamp.html", SHORT_PAGE)
    result = run_holodeck("ingest", "--json", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    summary = json.loads(result.stdout)["tools"][0]
    assert summary["skipped_files"] == [
        {
            "path": "menu.html",
            "reason": "no content besides the page's navigation, header and footer",
        }
    ]
