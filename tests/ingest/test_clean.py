"""Only the content goes in: navigation, contents pages, running heads and link blocks stay
out of the text that is chunked, and every line keeps its number. Real files: PDFs made
with fpdf2, HTML pages with a site's chrome around the article."""

from __future__ import annotations

import os
from pathlib import Path

from fpdf import FPDF

from holodeck.ingest.clean import clean_markdown
from holodeck.ingest.convert import Converted, convert
from holodeck.ingest.discover import SourceFile
from holodeck.ingest.locations import locate
from holodeck.ingest.sections import section_paths


def _convert(path: Path) -> Converted:
    return convert(SourceFile(path, path.name, 0.0, 0, root=os.path.realpath(path.parent)))


NODE_STYLE = """\
# Util

<!--introduced_in=v0.10.0-->

<!-- YAML
added: v8.0.0
changes:
  - version: v12.0.0
-->

The `util.promisify()` function takes a function following the common error-first
callback style and returns a version that returns promises.

| Encoding | Aliases |
| -------------------------------------------------- | -------------------------- |
| `'utf-8'` | `'unicode-1-1-utf-8'`, `'utf8'` |

```html
<!-- a comment inside code is code -->
[not-a-definition]: https://example.com/kept
```

[`fs.stat()`]: fs.md#fsstat
[WHATWG Encoding Standard]: https://encoding.spec.whatwg.org/ "the standard"
"""


def test_markdown_comments_and_link_definitions_go_and_every_line_keeps_its_number() -> None:
    cleaned = clean_markdown(NODE_STYLE)

    assert cleaned.count("\n") == NODE_STYLE.count("\n")
    assert "YAML" not in cleaned and "introduced_in" not in cleaned
    assert "fs.md#fsstat" not in cleaned and "encoding.spec.whatwg.org" not in cleaned
    assert "| --- | --- |" in cleaned
    # code is code: left as written
    assert "<!-- a comment inside code is code -->" in cleaned
    assert "[not-a-definition]: https://example.com/kept" in cleaned
    before, after = NODE_STYLE.splitlines(), cleaned.splitlines()
    n = next(i for i, line in enumerate(before) if "promisify" in line)
    assert after[n] == before[n]


def _manual(path: Path, *, contents: bool = True, index: bool = True) -> None:
    """A 12-page manual: title page, contents page, chapters under a running head with
    page numbers in the footer, an outline, and an index at the back."""
    pdf = FPDF()
    pdf.set_auto_page_break(False)  # one page per chapter, its number in the footer
    pdf.set_font("helvetica", size=11)
    pdf.add_page()
    pdf.cell(0, 10, "The Pump Manual", new_x="LMARGIN", new_y="NEXT")
    pdf.multi_cell(0, 6, "A guide to the care of the station's water pumps, for operators.")
    chapters = ["Priming the pump", "Bleeding air from the lines", "Replacing the seals",
                "Winter storage", "Noise and vibration", "Spare parts", "Safety",
                "Warranty"]  # fmt: skip
    if contents:
        pdf.add_page()
        pdf.cell(0, 8, "Contents", new_x="LMARGIN", new_y="NEXT")
        for n, title in enumerate(chapters, start=1):
            pdf.cell(0, 7, f"{n} {title} " + ". " * 30 + f"{n + 2}", new_x="LMARGIN", new_y="NEXT")
    for n, title in enumerate(chapters, start=1):
        pdf.add_page()
        pdf.cell(0, 6, f"Pump Manual for operators, page {n + 2}", new_x="LMARGIN", new_y="NEXT")
        pdf.start_section(title)
        pdf.cell(0, 10, f"{n} {title}", new_x="LMARGIN", new_y="NEXT")
        body = (
            f"Chapter {n} tells how the operator handles {title.lower()}. Read it whole "
            "before touching the pump; the valves are numbered from the inlet. "
            f"Section {n} ends with a checklist to sign. "
        )
        pdf.multi_cell(0, 6, body * 3)
        pdf.set_y(-20)
        pdf.cell(0, 6, str(pdf.page_no()))
    if index:
        pdf.add_page()
        pdf.cell(0, 8, "Index", new_x="LMARGIN", new_y="NEXT")
        words = "air bearing checklist drain gasket inlet noise seal spare valve warranty winter"
        for n, word in enumerate(words.split()):
            pdf.cell(0, 6, f"{word}, {n % 8 + 3}, {n % 5 + 4}", new_x="LMARGIN", new_y="NEXT")
    pdf.output(str(path))


def test_pdf_contents_index_running_heads_and_page_numbers_stay_out(tmp_path: Path) -> None:
    _manual(tmp_path / "pumps.pdf")

    converted = _convert(tmp_path / "pumps.pdf")
    text = converted.text

    assert "Bleeding air from the lines" in text and "checklist to sign" in text
    assert ". . . ." not in text  # the contents page
    assert "Pump Manual for operators" not in text  # the running head of every page
    assert "gasket, " not in text  # the index at the back
    assert not any(line.strip().isdigit() for line in text.splitlines())  # page numbers
    # the pages that are read keep their own numbers
    start = text.index("2 Bleeding air from the lines")  # chapter 2 is on page 4
    assert locate(text, converted.anchors, [(start, start + 40)]) == ["page 4"]


def test_pdf_outline_names_each_chunks_section(tmp_path: Path) -> None:
    _manual(tmp_path / "pumps.pdf", contents=False, index=False)

    converted = _convert(tmp_path / "pumps.pdf")
    text = converted.text
    start = text.index("Chapter 3 tells")

    assert section_paths(converted.headings, [(start, start + 100)]) == ["Replacing the seals"]


PAGE = """<!DOCTYPE html><html><head><title>Pumps | Station Wiki</title>
<script>window.analytics = {track: function () {}};</script>
<style>.sidebar { float: left }</style></head><body>
<header><a href="/">Station Wiki</a> <a href="/login">Log in</a> <a href="/help">Help</a></header>
<nav class="sidebar"><ul>
<li><a href="boilers.html">Boilers</a></li><li><a href="pumps.html">Pumps</a></li>
<li><a href="valves.html">Valves</a></li><li><a href="pipes.html">Pipes</a></li>
<li><a href="tanks.html">Tanks</a></li><li><a href="meters.html">Meters</a></li>
</ul></nav>
<main><article>
<h1>Pumps</h1>
<p>Every pump on the station is primed by hand before its first start of the season, and
the operator writes the date of the priming in the pump's own log book.</p>
<h2>Bleeding air</h2>
<p>Air trapped in the suction line makes the pump run dry. Open the bleed screw on top of
the housing until water without bubbles comes out, then close it a quarter turn past
snug. A pump that keeps gathering air has a leaking suction joint.</p>
<h3>Bleed screw sizes</h3>
<p>Older pumps take a 6 mm key, the models installed after the refit take an 8 mm key,
and both keys hang on the board next to the main switch. The setting bleed_interval_days
says how often the check is due.</p>
</article></main>
<footer>Copyright Station Wiki. <a href="/privacy">Privacy</a> <a href="/terms">Terms</a></footer>
</body></html>"""


def test_html_keeps_the_article_and_its_headings_not_the_site_around_it(tmp_path: Path) -> None:
    (tmp_path / "pumps.html").write_text(PAGE, encoding="utf-8")

    converted = _convert(tmp_path / "pumps.html")
    text = converted.text

    assert "Open the bleed screw on top of" in " ".join(text.split())
    assert "bleed_interval_days" in text  # an identifier stays whole (no Markdown escape)
    for chrome in ("Boilers", "Log in", "Privacy", "analytics", "float: left", "](", "http"):
        assert chrome not in text, chrome
    start = text.index("Older pumps")
    assert section_paths(converted.headings, [(start, start + 60)]) == [
        "Pumps › Bleeding air › Bleed screw sizes"
    ]


def test_an_xhtml_page_with_its_xml_declaration_is_read_with_its_anchors(tmp_path: Path) -> None:
    page = (
        '<?xml version="1.0" encoding="utf-8"?>\n<!DOCTYPE html>\n'
        '<html xmlns="http://www.w3.org/1999/xhtml"><body>'
        '<nav><a href="a.html">Boilers</a> <a href="b.html">Valves</a></nav>'
        '<div role="main"><h1 id="valves">Valves</h1>'
        "<p>A gate valve is opened fully or closed fully, never left halfway.</p></div>"
        "</body></html>"
    )
    (tmp_path / "valves.html").write_text(page, encoding="utf-8")

    converted = _convert(tmp_path / "valves.html")

    assert "never left halfway" in converted.text and "Boilers" not in converted.text
    assert [(h.title, h.anchor) for h in converted.headings] == [("Valves", "#valves")]


def test_code_drawn_line_by_line_keeps_its_lines(tmp_path: Path) -> None:
    prose = "<p>" + " ".join(["The keeper logs every rotation with the hour and weather."] * 5)
    lines = "".join(
        f'<span class="token-line"><span class="token plain">{line}</span></span>'
        for line in ("&gt;&gt;&gt; lamp.rotate(90)", "&gt;&gt;&gt; lamp.heading", "'east'")
    )
    page = (
        f'<html><body><main><h1 id="lamp">Lamp</h1>{prose}</p>'
        f'<pre class="prism-code"><code>{lines}</code></pre>{prose}</p></main></body></html>'
    )
    (tmp_path / "lamp.html").write_text(page, encoding="utf-8")

    text = _convert(tmp_path / "lamp.html").text

    assert "```\n>>> lamp.rotate(90)\n>>> lamp.heading\n'east'\n```" in text
