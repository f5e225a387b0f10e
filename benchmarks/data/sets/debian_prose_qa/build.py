"""Build corpus.jsonl of the debian_prose_qa set from the Debian package debian-handbook.

The package is fetched with ``apt-get download`` into a temporary folder and unpacked with
``dpkg-deb -x``; the English HTML of a fixed list of chapters is cut into prose units (one
paragraph each, long paragraphs split at sentence boundaries), so a rerun gives the same file.
"""

from __future__ import annotations

import argparse
import json
import math
import re
import subprocess
import tempfile
import xml.etree.ElementTree as ET
from dataclasses import dataclass
from pathlib import Path

PACKAGE = "debian-handbook"
VERSION = "11.20220922"
HTML_DIR = "usr/share/doc/debian-handbook/html/en-US"
NS = "{http://www.w3.org/1999/xhtml}"

# Chapter file (as named in index.html) -> short id prefix of its units.
CHAPTERS: dict[str, str] = {
    "the-debian-project.html": "proj",
    "installation.html": "inst",
    "packaging-system.html": "pkg",
    "apt.html": "apt",
    "solving-problems.html": "help",
    "basic-configuration.html": "conf",
    "unix-services.html": "svc",
    "network-infrastructure.html": "net",
    "network-services.html": "srv",
    "advanced-administration.html": "adm",
    "security.html": "sec",
    "debian-packaging.html": "deb",
}

SPLIT_OVER_WORDS = 80  # a paragraph longer than this is cut ...
PIECE_MAX_WORDS = 60  # ... into pieces of at most about this many words
MIN_WORDS = 6  # shorter units are dropped
SHORT_ITEM_WORDS = 15  # list items this short are joined into their paragraph
SKIP_CLASSES = {
    "sidebar",
    "example",
    "informalexample",
    "figure",
    "informalfigure",
    "table",
    "informaltable",
    "titlepage",
    "toc",
    "highlights",
    "calloutlist",
    "docnav",
    "mediaobject",
}
LIST_CLASSES = {"itemizedlist", "orderedlist", "variablelist"}
SKIP_TAGS = {"pre", "table", "img", "script", "style"}
SENTENCE_END = re.compile(r"(?<=[.!?])[”\"')]?\s+(?=[A-Z“\"(0-9])")
ABBREVIATIONS = ("e.g.", "i.e.", "etc.", "vs.", "cf.", "Dr.", "Mr.", "St.")


@dataclass
class Block:
    """A paragraph or a list found under one heading path, in reading order."""

    path: tuple[str, ...]
    kind: str  # "para" or "list"
    text: str = ""
    items: tuple[str, ...] = ()


def local(tag: str) -> str:
    """Tag name without the XHTML namespace."""
    return tag[len(NS) :] if tag.startswith(NS) else tag


def classes(elem: ET.Element) -> set[str]:
    """The element's CSS classes."""
    return set((elem.get("class") or "").split())


def clean(text: str) -> str:
    """Collapse whitespace so the unit reads as one line of prose."""
    text = re.sub(r"\s+", " ", text).strip()
    return re.sub(r"\s+([,.;:!?)])(?=\s|$)", r"\1", text)


def inline_text(elem: ET.Element) -> str:
    """Text of an element, leaving out code blocks, tables, asides and nested lists."""
    parts: list[str] = []

    def rec(e: ET.Element) -> None:
        if e.text:
            parts.append(e.text)
        for child in e:
            name = local(child.tag)
            skip = name in SKIP_TAGS or classes(child) & (SKIP_CLASSES | LIST_CLASSES)
            if not skip:
                rec(child)
            elif name == "pre" or "example" in classes(child):
                parts.append(" ")
            if child.tail:
                parts.append(child.tail)

    rec(elem)
    return clean("".join(parts))


def heading(elem: ET.Element) -> str | None:
    """Title of a chapter or section element, without its number."""
    for child in elem:
        if "titlepage" in classes(child):
            for h in child.iter():
                if local(h.tag) in {"h1", "h2", "h3", "h4", "h5", "h6"}:
                    title = inline_text(h)
                    title = re.sub(r"^(Chapter )?[0-9A-Z]+(\.[0-9]+)*\.\s+", "", title)
                    return title
    return None


def top_lists(elem: ET.Element) -> list[ET.Element]:
    """Lists inside an element that are not themselves inside another list."""
    found: list[ET.Element] = []
    for child in elem:
        if classes(child) & LIST_CLASSES:
            found.append(child)
        elif not classes(child) & SKIP_CLASSES and local(child.tag) not in SKIP_TAGS:
            found.extend(top_lists(child))
    return found


def item_text(elem: ET.Element) -> str:
    """Text of one list item: its paragraphs, with any nested list inlined once."""
    parts: list[str] = []
    for child in elem:
        cls = classes(child)
        if cls & SKIP_CLASSES or local(child.tag) in SKIP_TAGS:
            continue
        if "para" in cls:
            parts.append(inline_text(child))
            parts.extend(" ".join(list_items(sub)) for sub in top_lists(child))
        elif cls & LIST_CLASSES:
            parts.append(" ".join(list_items(child)))
        else:
            parts.append(item_text(child))
    text = clean(" ".join(p for p in parts if p))
    return text or inline_text(elem)


def list_items(elem: ET.Element) -> list[str]:
    """Items of an itemized, ordered or variable list as plain sentences."""
    items: list[str] = []
    entries = [e for e in elem.iter() if local(e.tag) in {"dl", "ul", "ol"}][:1]
    if not entries:
        return items
    term = ""
    for e in entries[0]:
        name = local(e.tag)
        if name == "dt":
            term = inline_text(e)
        elif name == "dd":
            body = item_text(e)
            items.append(clean(f"{term}: {body}") if term else body)
            term = ""
        elif name == "li":
            items.append(item_text(e))
    return [i for i in items if i]


def walk(elem: ET.Element, path: tuple[str, ...], out: list[Block]) -> None:
    """Collect prose blocks in reading order, tracking the section heading path."""
    cls = classes(elem)
    if cls & SKIP_CLASSES or local(elem.tag) in SKIP_TAGS:
        return
    if cls & {"section", "chapter"}:
        title = heading(elem)
        if title and "chapter" not in cls:
            path = (*path, title)
    if "para" in cls:
        text = inline_text(elem)
        if text:
            out.append(Block(path, "para", text=text))
        for sub in top_lists(elem):
            out.append(Block(path, "list", items=tuple(list_items(sub))))
        return
    if cls & LIST_CLASSES:
        out.append(Block(path, "list", items=tuple(list_items(elem))))
        return
    for child in elem:
        walk(child, path, out)


def words(text: str) -> int:
    """Number of whitespace-separated words."""
    return len(text.split())


def sentences(text: str) -> list[str]:
    """Split prose into sentences, not breaking after common abbreviations."""
    out: list[str] = []
    for piece in SENTENCE_END.split(text):
        if out and out[-1].endswith(ABBREVIATIONS):
            out[-1] = f"{out[-1]} {piece}"
        else:
            out.append(piece)
    return [s.strip() for s in out if s.strip()]


def cut(text: str) -> list[str]:
    """Cut a long paragraph at sentence boundaries into pieces of about equal length."""
    total = words(text)
    if total <= SPLIT_OVER_WORDS:
        return [text]
    sents = sentences(text)
    n = math.ceil(total / PIECE_MAX_WORDS)
    target = total / n
    pieces: list[list[str]] = [[]]
    count = 0
    for s in sents:
        w = words(s)
        if pieces[-1] and (count + w > PIECE_MAX_WORDS or count >= target):
            pieces.append([])
            count = 0
        pieces[-1].append(s)
        count += w
    if len(pieces) > 1 and sum(words(s) for s in pieces[-1]) < MIN_WORDS * 2:
        tail = pieces.pop()
        pieces[-1].extend(tail)
    return [" ".join(p) for p in pieces]


def join_list(intro: str, items: tuple[str, ...]) -> str:
    """Attach short list items to the paragraph that introduces them."""
    body = "; ".join(i.rstrip(" ,.;") for i in items)
    return clean(f"{intro} {body}.")


def blocks_to_units(blocks: list[Block]) -> list[tuple[tuple[str, ...], str]]:
    """Turn blocks into (heading path, text) units: short lists join their paragraph."""
    texts: list[tuple[tuple[str, ...], str]] = []
    for b in blocks:
        if b.kind == "para":
            texts.append((b.path, b.text))
        elif b.items:
            short = all(words(i) <= SHORT_ITEM_WORDS for i in b.items)
            if short and texts and texts[-1][0] == b.path:
                path, intro = texts.pop()
                texts.append((path, join_list(intro, b.items)))
            else:
                texts.extend((b.path, i) for i in b.items)
    units: list[tuple[tuple[str, ...], str]] = []
    for path, text in texts:
        for piece in cut(text):
            if words(piece) >= MIN_WORDS:
                units.append((path, piece))
    return units


def chapter_files(html: Path) -> dict[str, list[str]]:
    """Map each chosen chapter file to the files that hold its sections, in book order."""
    index = (html / "index.html").read_text(encoding="utf-8")
    order: dict[str, list[str]] = {}
    current: str | None = None
    for kind, href in re.findall(
        r'<span class="(chapter|section|appendix)"><a href="([^"#]+)', index
    ):
        if kind != "section":
            current = href if href in CHAPTERS else None
            if current:
                order.setdefault(current, [])
        if current and href not in order[current]:
            order[current].append(href)
    return order


def build(html: Path) -> list[dict[str, str]]:
    """Cut the chosen chapters into corpus records."""
    records: list[dict[str, str]] = []
    for chapter, files in chapter_files(html).items():
        prefix = CHAPTERS[chapter]
        root = ET.parse(html / chapter).getroot()
        chapter_el = next(e for e in root.iter() if "chapter" in classes(e))
        chapter_title = heading(chapter_el) or chapter
        n = 0
        for name in files:
            body = ET.parse(html / name).getroot().find(f"{NS}body")
            assert body is not None
            blocks: list[Block] = []
            for child in body:
                walk(child, (chapter_title,), blocks)
            for path, text in blocks_to_units(blocks):
                n += 1
                records.append(
                    {"_id": f"{prefix}-{n:04d}", "title": " › ".join(path), "text": text}
                )
    return records


def fetch(workdir: Path) -> Path:
    """Download and unpack the pinned package version; return its English HTML folder."""
    subprocess.run(
        ["apt-get", "download", f"{PACKAGE}={VERSION}"],
        cwd=workdir,
        check=True,
        capture_output=True,
    )
    deb = next(workdir.glob(f"{PACKAGE}_*.deb"))
    subprocess.run(["dpkg-deb", "-x", str(deb), str(workdir / "root")], check=True)
    return workdir / "root" / HTML_DIR


def main() -> None:
    """Write corpus.jsonl next to this script (or to --out)."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--out", type=Path, default=Path(__file__).with_name("corpus.jsonl"))
    parser.add_argument("--html", type=Path, help="use an already unpacked en-US HTML folder")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        html = args.html or fetch(Path(tmp))
        records = build(html)
    with args.out.open("w", encoding="utf-8") as f:
        for r in records:
            f.write(json.dumps(r, ensure_ascii=False) + "\n")
    print(f"{len(records)} units -> {args.out}")


if __name__ == "__main__":
    main()
