"""Build the real folder the question set (questions.yaml) is asked of.

It is a user's documentation folder as it comes: 40-odd files copied unchanged from the
Debian documentation corpus (``/work/shared/tools/build-docs-corpus.sh CORPUS/docs``) and the
HTML manuals (``benchmarks/realdocs/build_html_corpus.sh CORPUS/html``), plus one .docx, one
.pptx and one .xlsx made here from corpus text (Debian ships none), so every converter is
met. Tables of contents, index pages, running headers, HTML sidebars, link-reference blocks:
all left in, as a user's folder has them.

    python benchmarks/realdocs/build_folder.py CORPUS OUT   # CORPUS holds docs/ and html/
"""

from __future__ import annotations

import re
import shutil
import sys
from pathlib import Path

#: (source under CORPUS, destination under OUT)
FILES: list[tuple[str, str]] = [
    *(
        (f"docs/git-docs/{name}.txt", f"git/{name}.txt")
        for name in (
            "git-reset", "git-merge", "git-rebase", "git-stash", "git-commit", "gitignore",
            "git-bisect", "git-cherry-pick", "git-revert", "git-clone", "git-tag",
            "git-worktree", "git-blame", "gittutorial",
        )
    ),
    *(
        (f"docs/nodejs-api/{name}.md", f"node/{name}.md")
        for name in ("util", "dgram", "path", "events", "timers", "os", "readline", "child_process")
    ),
    *(
        (f"html/nodejs-html/{name}.html", f"node-html/{name}.html")
        for name in ("dgram", "path", "timers", "os", "querystring", "zlib")
    ),
    *(
        (f"docs/python-docs/{name}.rst.txt", f"python/{Path(name).name}.rst.txt")
        for name in (
            "library/json", "library/pathlib", "library/csv", "library/venv",
            "library/functools", "library/logging", "library/subprocess", "tutorial/errors",
        )
    ),
    *(
        (f"html/python-html/{name}.html", f"python-html/{Path(name).name}.html")
        for name in (
            "library/shutil", "library/tempfile", "library/collections", "library/zipfile",
            "tutorial/classes", "faq/programming",
        )
    ),
    ("docs/r-manuals/R-FAQ.pdf", "manuals/R-FAQ.pdf"),
    ("docs/r-manuals/R-data.pdf", "manuals/R-data.pdf"),
    ("docs/debian-manuals/developers-reference.pdf", "manuals/developers-reference.pdf"),
    ("docs/latex-pkg-docs/booktabs/booktabs.pdf", "manuals/booktabs.pdf"),
    ("docs/latex-pkg-docs/etoolbox/etoolbox.pdf", "manuals/etoolbox.pdf"),
    ("docs/latex-pkg-docs/fancyvrb/fancyvrb-doc.pdf", "manuals/fancyvrb-doc.pdf"),
]  # fmt: skip

_UNDERLINE = re.compile(r"^([=\-~^\"'`#*+])\1{2,}\s*$")


def rst_sections(text: str) -> list[tuple[int, str, list[str]]]:
    """(level, heading, paragraphs) of a reST file; directives and markup kept as text."""
    lines = text.splitlines()
    levels: list[str] = []
    sections: list[tuple[int, str, list[str]]] = [(0, "", [])]
    para: list[str] = []

    def flush() -> None:
        if para:
            sections[-1][2].append(" ".join(s.strip() for s in para))
            para.clear()

    i = 0
    while i < len(lines):
        line = lines[i]
        nxt = lines[i + 1] if i + 1 < len(lines) else ""
        if line.strip() and _UNDERLINE.match(nxt) and len(nxt.strip()) >= len(line.strip()):
            flush()
            mark = nxt.strip()[0]
            if mark not in levels:
                levels.append(mark)
            sections.append((levels.index(mark) + 1, line.strip(), []))
            i += 2
            continue
        if _UNDERLINE.match(line):  # an overline
            i += 1
            continue
        if line.strip():
            para.append(line)
        else:
            flush()
        i += 1
    flush()
    return sections


def make_docx(src: Path, out: Path) -> None:
    """The sorting HOWTO as a Word document: reST headings become Word headings."""
    import docx

    document = docx.Document()
    for level, heading, paragraphs in rst_sections(src.read_text(encoding="utf-8")):
        if heading:
            document.add_heading(heading, level=min(level, 4))
        for p in paragraphs:
            document.add_paragraph(p)
    document.save(str(out))


def make_pptx(src: Path, out: Path) -> None:
    """giteveryday as slides: one slide per section, its paragraphs as bullet lines."""
    from pptx import Presentation

    deck = Presentation()
    text = src.read_text(encoding="utf-8")
    for _, heading, paragraphs in rst_sections(text):
        if not heading or not paragraphs:
            continue
        slide = deck.slides.add_slide(deck.slide_layouts[1])
        slide.shapes.title.text = heading
        body = slide.placeholders[1].text_frame
        body.text = paragraphs[0][:600]
        for p in paragraphs[1:12]:
            body.add_paragraph().text = p[:600]
    deck.save(str(out))


def make_xlsx(src: Path, out: Path) -> None:
    """The standard-encodings grid table of codecs.rst as a workbook, one row per codec."""
    from openpyxl import Workbook

    lines = src.read_text(encoding="utf-8").splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("Standard Encodings"))
    rows: list[list[str]] = []
    cells: list[str] | None = None
    for line in lines[start:]:
        if line.startswith("+-") or line.startswith("+="):
            if cells is not None and any(c.strip() for c in cells):
                rows.append([" ".join(c.split()) for c in cells])
            cells = None
            continue
        if line.startswith("|"):
            parts = line.strip().strip("|").split("|")
            if cells is None:
                cells = parts
            else:
                cells = [a + " " + b for a, b in zip(cells, parts, strict=True)]
            continue
        if rows and not line.strip():
            break
    book = Workbook()
    sheet = book.active
    sheet.title = "Standard Encodings"
    for row in rows:
        sheet.append(row)
    book.save(str(out))


def main() -> None:
    corpus, out = Path(sys.argv[1]), Path(sys.argv[2])
    for src, dst in FILES:
        target = out / dst
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(corpus / src, target)
    make_docx(corpus / "docs/python-docs/howto/sorting.rst.txt", out / "python/sorting-howto.docx")
    make_pptx(corpus / "docs/git-docs/giteveryday.txt", out / "git/giteveryday.pptx")
    make_xlsx(
        corpus / "docs/python-docs/library/codecs.rst.txt", out / "python/standard-encodings.xlsx"
    )
    print(f"{len(FILES) + 3} files in {out}")


if __name__ == "__main__":
    main()
