"""Build corpus.jsonl of the py_prose_qa set from the Debian package python3.11-doc.

The package is fetched with ``apt-get download`` into a temporary folder and unpacked with
``dpkg-deb -x``; the reST sources of the tutorial and the HOWTOs are cut into prose units (one
paragraph each, long paragraphs split at sentence boundaries), so a rerun gives the same file.
"""

from __future__ import annotations

import argparse
import json
import math
import re
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

PACKAGE = "python3.11-doc"
VERSION = "3.11.2-6+deb12u9"
SOURCES_DIR = "usr/share/doc/python3.11/html/_sources"
# Folder of the sources -> (title prefix, id prefix) of its units.
PARTS: dict[str, tuple[str, str]] = {
    "tutorial": ("Python tutorial", "tut"),
    "howto": ("Python HOWTOs", "howto"),
}

SPLIT_OVER_WORDS = 80  # a paragraph longer than this is cut ...
PIECE_MAX_WORDS = 60  # ... into pieces of at most about this many words
MIN_WORDS = 6  # shorter units are dropped

# Directives whose body is prose read as part of the page; every other directive is skipped.
PROSE_DIRECTIVES = {
    "note",
    "warning",
    "tip",
    "important",
    "caution",
    "attention",
    "hint",
    "admonition",
    "seealso",
    "topic",
    "sidebar",
    "impl-detail",
    "only",
    "method",
    "object",
    "data",
    "function",
    "attribute",
    "class",
}
# Of those, the ones whose argument on the directive line is prose too.
ARGUMENT_IS_PROSE = {"note", "warning", "tip", "important", "seealso", "impl-detail"}

UNDERLINE = re.compile(r"^([=\-~^*\"#+'`:.])\1{2,}\s*$")
DIRECTIVE = re.compile(r"^\.\.\s+([\w:-]+)::\s*(.*)$")
TARGET = re.compile(r"^\.\.\s+_([^:]+):\s*$")
FIELD = re.compile(r"^:[A-Za-z][\w -]*:(\s|$)")
BULLET = re.compile(r"^(\s*)([*+-]|#\.|\d+\.|\(?[a-z0-9]\))\s+")
SIMPLE_TABLE = re.compile(r"^=+(\s+=+)+\s*$")
ROLE = re.compile(r":(?:[a-z]+:)?([a-z-]+):`([^`]+)`")
LITERAL = re.compile(r"``(.+?)``")
LINK = re.compile(r"`([^`<]+?)\s*<[^`>]+>`__?")
REF_LINK = re.compile(r"`([^`]+)`__?")
DEFAULT_ROLE = re.compile(r"`([^`]+)`")
STRONG = re.compile(r"\*\*(\S(?:.*?\S)?)\*\*")
EMPHASIS = re.compile(r"(?<![\w*])\*(\S(?:[^*]*?\S)?)\*(?![\w*])")
NAMED_REF = re.compile(r"(?<![\w\x00])([A-Za-z][\w.-]*[A-Za-z0-9])__?(?=[\s,.;:)]|$)")
FOOTNOTE_REF = re.compile(r"\s*\[(#\w*|\d+|\*)\]_")
SENTENCE_END = re.compile(r"(?<=[.!?])[”\"')]?\s+(?=[A-Z“\"(0-9])")
ABBREVIATIONS = ("e.g.", "i.e.", "etc.", "vs.", "cf.", "Dr.", "Mr.", "St.", "approx.")
PLACEHOLDER = "\x00{}\x00"


@dataclass
class Chunk:
    """A run of non-blank lines, with the indentation of its least indented line."""

    lines: list[str]
    indent: int


def indent_of(line: str) -> int:
    """Number of leading spaces."""
    return len(line) - len(line.lstrip(" "))


def chunks(text: str) -> list[Chunk]:
    """Split a page into blank-line separated runs of lines."""
    out: list[Chunk] = []
    current: list[str] = []
    for raw in text.expandtabs(8).splitlines():
        line = raw.rstrip()
        if current and DIRECTIVE.match(line.strip()):
            out.append(Chunk(current, min(indent_of(x) for x in current)))
            current = []
        if line:
            current.append(line)
        elif current:
            out.append(Chunk(current, min(indent_of(x) for x in current)))
            current = []
    if current:
        out.append(Chunk(current, min(indent_of(x) for x in current)))
    return out


def heading_at(lines: list[str]) -> tuple[str, tuple[str, bool], int] | None:
    """(title, style, lines used) if the chunk starts with a section heading."""
    overline = len(lines) >= 3 and UNDERLINE.match(lines[0]) and UNDERLINE.match(lines[2])
    if overline and lines[0][0] == lines[2][0] and not UNDERLINE.match(lines[1]):
        return lines[1].strip(), (lines[0][0], True), 3
    if len(lines) >= 2 and UNDERLINE.match(lines[1]) and not UNDERLINE.match(lines[0]):
        title = lines[0]
        if indent_of(title) == 0 and len(lines[1].strip()) >= len(title.strip()) - 1:
            return title.strip(), (lines[1][0], False), 2
    return None


def collect_labels(root: Path) -> dict[str, str]:
    """Map every ``.. _label:`` placed just before a heading to that heading's title."""
    labels: dict[str, str] = {}
    for page in sorted(root.rglob("*.rst.txt")):
        pending: list[str] = []
        for chunk in chunks(page.read_text(encoding="utf-8")):
            lines = chunk.lines
            while lines and TARGET.match(lines[0]):
                match = TARGET.match(lines[0])
                assert match is not None
                pending.append(match.group(1).strip().lower())
                lines = lines[1:]
            if not lines:
                continue
            head = heading_at(lines)
            if head:
                for label in pending:
                    labels.setdefault(label, plain(head[0], {}))
            pending = []
    return labels


def role_text(role: str, content: str, labels: dict[str, str]) -> str:
    """Text Sphinx shows for an interpreted-text role."""
    content = content.replace("\n", " ")
    explicit = re.match(r"^(.*?)\s*<([^<>]+)>$", content, re.S)
    if explicit and explicit.group(1):
        return explicit.group(1)
    if role == "ref":
        return labels.get(content.strip().lower(), content)
    if role == "pep":
        return f"PEP {content}"
    if role == "rfc":
        return f"RFC {content}"
    if role == "samp":
        return re.sub(r"[{}]", "", content)
    if role == "abbr":
        return re.sub(r"\s*\(.*\)$", "", content)
    text = content.lstrip("!")
    if text.startswith("~"):
        text = text[1:].rsplit(".", 1)[-1]
    if role in {"func", "meth"} and not text.endswith(")"):
        text += "()"
    return text


def plain(text: str, labels: dict[str, str]) -> str:
    """Turn reST inline markup into the plain text a reader of the HTML page sees."""
    kept: list[str] = []

    def keep(value: str) -> str:
        kept.append(value)
        return PLACEHOLDER.format(len(kept) - 1)

    text = ROLE.sub(lambda m: keep(role_text(m.group(1), m.group(2), labels)), text)
    text = LITERAL.sub(lambda m: keep(m.group(1)), text)
    text = LINK.sub(lambda m: m.group(1), text)
    text = REF_LINK.sub(lambda m: m.group(1), text)
    text = DEFAULT_ROLE.sub(lambda m: m.group(1), text)
    text = STRONG.sub(lambda m: m.group(1), text)
    text = EMPHASIS.sub(lambda m: m.group(1), text)
    text = NAMED_REF.sub(lambda m: m.group(1), text)
    text = FOOTNOTE_REF.sub("", text)
    text = re.sub(r"\\ ", "", text)
    text = re.sub(r"\\(.)", r"\1", text)
    text = re.sub(r"\s+([,.;:!?)])(?=\s|$)", r"\1", text)
    text = re.sub(r"(?<=\w)---(?=\w)|(?<=\s)---(?=\s)", "\u2014", text)  # Sphinx's em dash
    text = re.sub(r"(?<=\s)--(?=\s)", "\u2013", text)  # and en dash
    text = re.sub(r"\x00(\d+)\x00", lambda m: kept[int(m.group(1))], text)
    return re.sub(r"\s+", " ", text).strip()


def prose_lines(lines: list[str]) -> str:
    """Join a paragraph's lines, dropping list markers and marking definition terms."""
    out: list[str] = []
    base = min(indent_of(x) for x in lines)
    is_list = bool(BULLET.match(lines[0]))
    for i, line in enumerate(lines):
        at_base = indent_of(line) == base
        stripped = BULLET.sub("", line, count=1) if is_list and at_base else line
        stripped = stripped.strip()
        nxt = lines[i + 1] if i + 1 < len(lines) else ""
        is_term = (
            indent_of(line) == base
            and nxt
            and indent_of(nxt) > base
            and not BULLET.match(line)
            and not re.search(r"[.,;:!?]$", stripped)
        )
        if is_term:
            stripped += ":"
        elif is_list and BULLET.match(nxt) and indent_of(nxt) == base:
            stripped += "" if re.search(r"[.,;:!?]$", stripped) else "."
        out.append(stripped)
    return " ".join(out)


def ends_literal(text: str) -> tuple[str, bool]:
    """Apply reST's ``::`` rule: return the shown text and whether a literal block follows."""
    if not text.endswith("::"):
        return text, False
    if text == "::":
        return "", True
    if text.endswith(" ::"):
        return text[:-3].rstrip(), True
    return text[:-1], True


def page_blocks(text: str, labels: dict[str, str]) -> list[tuple[tuple[str, ...], str]]:
    """Prose paragraphs of one page with the heading path each sits under."""
    styles: list[tuple[str, bool]] = []
    path: list[str] = []
    out: list[tuple[tuple[str, ...], str]] = []
    skip_deeper_than: int | None = None
    literal_after: int | None = None
    for chunk in chunks(text):
        lines = chunk.lines
        if skip_deeper_than is not None:
            if chunk.indent > skip_deeper_than:
                continue
            skip_deeper_than = None
        if literal_after is not None:
            indent, literal_after = literal_after, None
            if chunk.indent > indent:
                skip_deeper_than = indent
                continue
        while lines and TARGET.match(lines[0]):
            lines = lines[1:]
        if not lines:
            continue
        head = heading_at(lines)
        if head:
            title, style, used = head
            if style not in styles:
                styles.append(style)
            level = styles.index(style)
            path = [*path[:level], plain(title, labels)]
            lines = lines[used:]
            if not lines:
                continue
        first = lines[0].strip()
        directive = DIRECTIVE.match(first)
        if directive:
            name, argument = directive.group(1).split(":")[-1], directive.group(2)
            if name not in PROSE_DIRECTIVES:
                skip_deeper_than = indent_of(lines[0])
                continue
            body = [x for x in lines[1:] if not FIELD.match(x.strip())]
            if name in ARGUMENT_IS_PROSE and argument:
                body.insert(0, " " * min((indent_of(x) for x in body), default=0) + argument)
            if not body:
                continue
            lines = body
            first = lines[0].strip()
        if first.startswith(".."):
            skip_deeper_than = indent_of(lines[0])
            continue
        if first.startswith((">>>", "+-", "|")) or SIMPLE_TABLE.match(first):
            continue
        if FIELD.match(first):
            continue
        joined, literal = ends_literal(prose_lines(lines))
        if literal:
            literal_after = chunk.indent
        text_out = plain(joined, labels)
        if text_out and path:
            out.append((tuple(path), text_out))
    return out


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


def build(sources: Path) -> list[dict[str, str]]:
    """Cut every page of the chosen parts into corpus records, in file-name order."""
    labels = collect_labels(sources)
    records: list[dict[str, str]] = []
    for part, (title_prefix, id_prefix) in PARTS.items():
        for page in sorted((sources / part).glob("*.rst.txt")):
            stem = page.name.removesuffix(".rst.txt")
            n = 0
            for path, text in page_blocks(page.read_text(encoding="utf-8"), labels):
                for piece in cut(text):
                    if words(piece) < MIN_WORDS:
                        continue
                    n += 1
                    records.append(
                        {
                            "_id": f"{id_prefix}-{stem}-{n:03d}",
                            "title": " › ".join((title_prefix, *path)),
                            "text": piece,
                        }
                    )
    return records


def fetch(workdir: Path) -> Path:
    """Download and unpack the package (the pinned version if the archive still has it)."""
    pinned = subprocess.run(
        ["apt-get", "download", f"{PACKAGE}={VERSION}"],
        cwd=workdir,
        capture_output=True,
    )
    if pinned.returncode != 0:
        print(f"warning: {PACKAGE}={VERSION} not found; using the current one", file=sys.stderr)
        subprocess.run(
            ["apt-get", "download", PACKAGE], cwd=workdir, check=True, capture_output=True
        )
    deb = next(workdir.glob(f"{PACKAGE}_*.deb"))
    subprocess.run(["dpkg-deb", "-x", str(deb), str(workdir / "root")], check=True)
    return workdir / "root" / SOURCES_DIR


def main() -> None:
    """Write corpus.jsonl next to this script (or to --out)."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--out", type=Path, default=Path(__file__).with_name("corpus.jsonl"))
    parser.add_argument("--sources", type=Path, help="use an already unpacked _sources folder")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        sources = args.sources or fetch(Path(tmp))
        records = build(sources)
    with args.out.open("w", encoding="utf-8") as f:
        for r in records:
            f.write(json.dumps(r, ensure_ascii=False) + "\n")
    print(f"{len(records)} units -> {args.out}")


if __name__ == "__main__":
    main()
