"""Build corpus.jsonl of the identifiers_qa set from the Debian packages git-doc and nodejs-doc.

Both packages are fetched with ``apt-get download`` (pinned versions) into a temporary folder
and unpacked with ``dpkg-deb -x``. Git man pages are cut from their rendered XHTML (the
asciidoc sources in the package lack the ``config/*.txt`` includes that hold the variables),
Node.js API pages from their Markdown; every option entry, config variable, API entry and
prose paragraph becomes a unit, so a rerun gives the same file byte for byte.
"""

from __future__ import annotations

import argparse
import gzip
import json
import re
import subprocess
import tempfile
import xml.etree.ElementTree as ET
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

PACKAGES = ("git-doc=1:2.39.5-0+deb12u3", "nodejs-doc=18.20.4+dfsg-1~deb12u3")
GIT_DIR = "usr/share/doc/git-doc"
NODE_DIR = "usr/share/doc/nodejs/api"
NS = "{http://www.w3.org/1999/xhtml}"

# Git page (file stem) -> id prefix. Porcelain commands plus git(1), git-config and gitignore.
GIT_PAGES: dict[str, str] = {
    "git": "git",
    "git-add": "add",
    "git-branch": "branch",
    "git-checkout": "checkout",
    "git-cherry-pick": "cpick",
    "git-clean": "clean",
    "git-clone": "clone",
    "git-commit": "commit",
    "git-config": "config",
    "git-diff": "diff",
    "git-fetch": "fetch",
    "git-log": "log",
    "git-merge": "merge",
    "git-pull": "pull",
    "git-push": "push",
    "git-rebase": "rebase",
    "git-remote": "remote",
    "git-reset": "reset",
    "git-restore": "restore",
    "git-stash": "stash",
    "git-status": "status",
    "git-switch": "switch",
    "git-tag": "tag",
    "git-worktree": "wt",
    "gitignore": "ignore",
}

# Node.js API page (file stem) -> id prefix.
NODE_PAGES: dict[str, str] = {
    "buffer": "buf",
    "child_process": "cp",
    "cli": "cli",
    "events": "ev",
    "fs": "fs",
    "http": "http",
    "os": "os",
    "path": "path",
    "process": "proc",
    "readline": "rl",
    "stream": "stream",
    "timers": "timers",
    "url": "url",
    "util": "util",
    "worker_threads": "wt",
}

MAX_WORDS = 120  # a unit holds at most about this many words
MIN_WORDS = 6  # shorter units are dropped
# Git sections that carry no answerable prose: the synopsis grammar, the footer, link lists,
# and per-command CONFIGURATION sections that repeat git-config's variable list verbatim.
GIT_SKIP_SECTIONS = {"SYNOPSIS", "GIT", "SEE ALSO", "CONFIGURATION"}
GIT_CODE_CLASSES = {"listingblock", "literalblock", "verseblock"}


@dataclass(frozen=True)
class Unit:
    """One retrievable unit before ids are assigned."""

    prefix: str
    title: str
    text: str


def words(text: str) -> int:
    """Count whitespace-separated words."""
    return len(text.split())


def squash(text: str) -> str:
    """Collapse runs of whitespace into single spaces."""
    return re.sub(r"\s+", " ", text).strip()


def split_sentences(block: str) -> list[str]:
    """Split one over-long block into pieces of at most MAX_WORDS words at sentence ends."""
    sentences = re.split(r"(?<=[.!?:])\s+(?=[A-Z`(\"'*<])", block)
    pieces: list[str] = []
    current: list[str] = []
    for sentence in sentences:
        if current and words(" ".join([*current, sentence])) > MAX_WORDS:
            pieces.append(" ".join(current))
            current = []
        current.append(sentence)
    if current:
        pieces.append(" ".join(current))
    return pieces


def pack(blocks: list[str]) -> list[str]:
    """Join consecutive blocks into units of at most MAX_WORDS words, cutting only between blocks
    (or at sentence ends inside a block that alone is too long)."""
    units: list[str] = []
    current: list[str] = []
    for block in blocks:
        for piece in split_sentences(block) if words(block) > MAX_WORDS else [block]:
            if current and words(" ".join([*current, piece])) > MAX_WORDS:
                units.append("\n".join(current))
                current = []
            current.append(piece)
    if current:
        units.append("\n".join(current))
    return units


# --------------------------------------------------------------------------------- git


def cls(elem: ET.Element) -> str:
    """First class name of an element, or ''."""
    return (elem.get("class") or "").split(" ")[0]


def tag(elem: ET.Element) -> str:
    """Local tag name of an XHTML element."""
    return elem.tag.replace(NS, "")


def inline_text(elem: ET.Element) -> str:
    """All text under an element, whitespace collapsed."""
    return squash("".join(elem.itertext()))


def git_blocks(elem: ET.Element) -> Iterator[str]:
    """Prose blocks under a description element: paragraphs, list items, nested term lists;
    code listings are dropped."""
    for child in elem:
        name, kind = tag(child), cls(child)
        if kind in GIT_CODE_CLASSES or name == "pre":
            continue
        if name == "p":
            text = inline_text(child)
            if text:
                yield text
        elif name in {"ul", "ol"}:
            for item in child:
                item_blocks = list(git_blocks(item))
                if item_blocks:
                    yield "- " + item_blocks[0]
                    yield from item_blocks[1:]
        elif name == "dl":
            for term, desc in dl_entries(child):
                inner = list(git_blocks(desc)) if desc is not None else []
                yield term + (": " + inner[0] if inner else "")
                yield from inner[1:]
        elif name == "table":
            for row in child.iter(f"{NS}tr"):
                cells = [inline_text(c) for c in row if tag(c) in {"td", "th"}]
                row_text = " ".join(c for c in cells if c)
                if row_text:
                    yield row_text
        elif name in {"div", "li", "dd", "td", "blockquote"}:
            if kind == "title":
                continue
            yield from git_blocks(child)


def dl_entries(dl: ET.Element) -> list[tuple[str, ET.Element | None]]:
    """Pair each run of <dt> terms of a definition list with the <dd> that follows it."""
    entries: list[tuple[str, ET.Element | None]] = []
    terms: list[str] = []
    for child in dl:
        if tag(child) == "dt":
            terms.append(inline_text(child))
        elif tag(child) == "dd":
            entries.append((", ".join(terms), child))
            terms = []
    if terms:
        entries.append((", ".join(terms), None))
    return entries


def git_section(body: ET.Element, path: list[str], prefix: str) -> Iterator[Unit]:
    """Units of one section body: each term-list entry is a unit (term plus description) and
    each prose paragraph is one (with the list it introduces); subsections recurse."""
    prose: list[str] = []

    def flush() -> Iterator[Unit]:
        groups: list[list[str]] = []
        for block in prose:
            if block.startswith("- ") and groups:
                groups[-1].append(block)
            else:
                groups.append([block])
        for group in groups:
            for text in pack(group):
                yield Unit(prefix, " › ".join(path), text)
        prose.clear()

    for child in body:
        kind = cls(child)
        if kind in {"sect2", "sect3", "sect4"}:
            yield from flush()
            heading = next(c for c in child if tag(c) in {"h3", "h4", "h5"})
            yield from git_section(child, [*path, inline_text(heading)], prefix)
        elif kind == "dlist":
            yield from flush()
            dl = child.find(f"{NS}dl")
            if dl is None:
                continue
            for term, desc in dl_entries(dl):
                blocks = list(git_blocks(desc)) if desc is not None else []
                for text in pack([term, *blocks]):
                    yield Unit(prefix, " › ".join([*path, term]), text)
        elif kind in GIT_CODE_CLASSES or kind == "title":
            continue
        else:
            prose.extend(git_blocks_of(child))
    yield from flush()


def git_blocks_of(elem: ET.Element) -> Iterator[str]:
    """Prose blocks of one top-level block element (its own paragraph included)."""
    wrapper = ET.Element(f"{NS}div")
    wrapper.append(elem)
    return git_blocks(wrapper)


def git_units(root: Path, stem: str, prefix: str) -> Iterator[Unit]:
    """All units of one git man page."""
    tree = ET.parse(root / GIT_DIR / f"{stem}.html")
    body = tree.getroot().find(f"{NS}body")
    assert body is not None
    header = body.find(f"{NS}div[@id='header']")
    assert header is not None
    name_p = header.find(f".//{NS}p")
    if name_p is not None:
        yield Unit(prefix, f"{stem} › NAME", inline_text(name_p))
    content = body.find(f"{NS}div[@id='content']")
    assert content is not None
    for sect in content:
        if cls(sect) != "sect1":
            continue
        heading = inline_text(next(c for c in sect if tag(c) == "h2"))
        if heading.upper() in GIT_SKIP_SECTIONS and not (
            stem == "git-config" and heading.upper() == "CONFIGURATION"
        ):
            continue
        section_body = sect.find(f"{NS}div[@class='sectionbody']")
        if section_body is not None:
            yield from git_section(section_body, [stem, heading], prefix)


# --------------------------------------------------------------------------------- node

HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$")
LINK_DEF = re.compile(r"^\s*\[[^\]]+\]:\s*\S+.*$")
# A code span (kept as is) or a link with a target, whose text may hold code spans.
MD_LINK = re.compile(r"(`[^`]*`)|!?\[((?:`[^`]*`|[^\]\[`])+)\](?:\([^)]*\)|\[[^\]]*\])")
# A code span or a shortcut reference link whose text is one code span: [`fs.watch()`].
MD_CODE_REF = re.compile(r"(`[^`]*`)|\[(`[^`]+`)\]")


def md_inline(text: str) -> str:
    """Strip Markdown inline markup: links, code spans, emphasis, type braces, HTML tags.

    Code spans are cut out first so that brackets and underscores inside identifiers survive.
    """
    text = re.sub(r"<a [^>]*></a>", "", text)
    text = re.sub(r"\\([\[\]_*`])", r"\1", text)
    text = MD_LINK.sub(lambda m: m.group(1) or m.group(2), text)
    text = MD_CODE_REF.sub(lambda m: m.group(1) or m.group(2), text)
    out: list[str] = []
    for i, part in enumerate(re.split(r"(`[^`]*`)", text)):
        if i % 2:
            out.append(part[1:-1])
            continue
        part = re.sub(r"\{([A-Za-z][\w.<>\[\]|, ]*)\}", lambda m: "<" + m.group(1) + ">", part)
        part = re.sub(r"\*\*([^*]+)\*\*", r"\1", part)
        part = re.sub(r"(?<![\w*])\*([^*\s][^*]*)\*(?![\w*])", r"\1", part)
        part = re.sub(r"(?<!\w)_([^_\s][^_]*)_(?!\w)", r"\1", part)
        part = re.sub(r"</?(?:br|sup|sub|code|em|strong|i|b|span|kbd)\b[^>]*>", "", part)
        out.append(part)
    return squash("".join(out))


def html_tables(raw: str) -> str:
    """Rewrite each HTML table row as its own list item ("cell: cell"), so rows pack like
    paragraphs instead of one unreadable block of markup."""

    def row(match: re.Match[str]) -> str:
        cells = re.findall(r"<t[dh][^>]*>(.*?)</t[dh]>", match.group(0), flags=re.S)
        cells = [squash(re.sub(r"<[^>]+>", "", c)) for c in cells]
        return "\n\n- " + ": ".join(c for c in cells if c) + "\n\n"

    raw = re.sub(r"<tr>.*?</tr>", row, raw, flags=re.S)
    return re.sub(r"</?(?:table|tbody|thead)>", "", raw)


def md_blocks(lines: list[str]) -> list[str]:
    """Paragraphs and list items of a section's lines; code fences and tables are dropped,
    nested list items keep a leading dash so the list reads as a list."""
    blocks: list[str] = []
    current: list[str] = []

    def flush() -> None:
        text = md_inline(" ".join(current))
        if text:
            blocks.append(text)
        current.clear()

    in_code = False
    for line in lines:
        stripped = line.strip()
        if stripped.startswith("```"):
            flush()
            in_code = not in_code
            continue
        if in_code:
            continue
        if stripped.startswith("|"):
            flush()
            cells = [c.strip() for c in stripped.strip("|").split("|")]
            if not all(re.fullmatch(r":?-+:?", c) for c in cells):
                current.append("- " + ": ".join(c for c in cells if c))
                flush()
            continue
        if not stripped or LINK_DEF.match(line):
            flush()
            continue
        item = re.match(r"^\s*(?:[*+-]|\d+\.)\s+(.*)$", line)
        if item:
            flush()
            current.append("- " + item.group(1))
            continue
        if stripped.startswith(">"):
            stripped = stripped.lstrip("> ").strip()
        current.append(stripped)
    flush()
    return blocks


def node_units(root: Path, stem: str, prefix: str) -> Iterator[Unit]:
    """All units of one Node.js API page: each heading's own text, cut at paragraph ends."""
    raw = gzip.decompress((root / NODE_DIR / f"{stem}.md.gz").read_bytes()).decode("utf-8")
    raw = html_tables(re.sub(r"<!--.*?-->", "", raw, flags=re.S))
    page_title = ""
    path: list[str] = []
    lines: list[str] = []

    def emit() -> Iterator[Unit]:
        if not path:
            return
        heading = path[-1]
        blocks = md_blocks(lines)
        if not blocks:
            return
        title = " › ".join([f"Node.js {page_title}", *path[1:]])
        for i, text in enumerate(pack(blocks)):
            yield Unit(prefix, title, f"{heading}\n{text}" if i == 0 else text)

    in_code = False
    for line in raw.splitlines():
        if line.strip().startswith("```"):
            in_code = not in_code
        match = None if in_code else HEADING.match(line)
        if match:
            yield from emit()
            level, heading = len(match.group(1)), md_inline(match.group(2))
            if level == 1:
                page_title = heading
            path = [*path[: level - 1], heading]
            lines = []
        else:
            lines.append(line)
    yield from emit()


# --------------------------------------------------------------------------------- main


def fetch(dest: Path) -> Path:
    """Download and unpack the pinned packages into dest; return the unpacked root."""
    subprocess.run(["apt-get", "download", *PACKAGES], cwd=dest, check=True)
    root = dest / "root"
    for deb in sorted(dest.glob("*.deb")):
        subprocess.run(["dpkg-deb", "-x", str(deb), str(root)], check=True)
    return root


def build(root: Path) -> list[dict[str, str]]:
    """Cut every chosen page into units, drop short and verbatim-repeated ones, assign ids."""
    units: list[Unit] = []
    for stem, prefix in GIT_PAGES.items():
        units.extend(git_units(root, stem, f"g{prefix}"))
    for stem, prefix in NODE_PAGES.items():
        units.extend(node_units(root, stem, f"n{prefix}"))
    seen: set[str] = set()
    counters: dict[str, int] = {}
    records: list[dict[str, str]] = []
    for unit in units:
        key = squash(unit.text).lower()
        if words(unit.text) < MIN_WORDS or key in seen:
            continue
        seen.add(key)
        counters[unit.prefix] = counters.get(unit.prefix, 0) + 1
        uid = f"{unit.prefix}-{counters[unit.prefix]:04d}"
        records.append({"_id": uid, "title": unit.title, "text": unit.text})
    return records


def main() -> None:
    """Fetch (or reuse an unpacked root) and write corpus.jsonl next to this script."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--root", type=Path, help="already unpacked package root (skip fetch)")
    parser.add_argument("--out", type=Path, default=Path(__file__).with_name("corpus.jsonl"))
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        root = args.root or fetch(Path(tmp))
        records = build(root)
    with args.out.open("w", encoding="utf-8") as out:
        for record in records:
            out.write(json.dumps(record, ensure_ascii=False) + "\n")
    print(f"{len(records)} units -> {args.out}")


if __name__ == "__main__":
    main()
