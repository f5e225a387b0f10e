"""Discovery: which files a knowledge base is built from, and why every other file is left out."""

from __future__ import annotations

import builtins
import io
import os
import shutil
from pathlib import Path
from typing import Any

import pytest

from holodeck.ingest.discover import discover, path_text, text_path

REPO = Path(__file__).resolve().parents[2]
EXAMPLE_DOCS = REPO / "examples" / "docs"
EXAMPLE_PDF = EXAMPLE_DOCS / "operations" / "backup-and-restore.pdf"
EXAMPLE_PNG = EXAMPLE_DOCS / "api" / "architecture.png"


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    """A source folder with every case a user can put in it, plus files outside it."""
    outside = tmp_path / "outside"
    (outside / "private").mkdir(parents=True)
    (outside / "secret.md").write_text("the outside secret\n")
    (outside / "private" / "keys.md").write_text("outside keys\n")

    src = tmp_path / "src"
    (src / "guides" / "deep").mkdir(parents=True)
    (src / "api").mkdir()
    (src / "intro.md").write_text("# Intro\n")
    (src / "README.txt").write_text("read me\n")
    (src / "NOTES.MD").write_text("upper-case extension\n")
    (src / "guides" / "deep" / "nested.md").write_text("deep\n")
    (src / "guides" / "manual.pdf").write_bytes(EXAMPLE_PDF.read_bytes())
    (src / "api" / "limits.csv").write_text("plan,price\nfree,0\n")
    (src / "api" / "errors.json").write_text('{"E1": "bad"}\n')
    shutil.copy(EXAMPLE_PNG, src / "api" / "diagram.png")
    (src / "empty.txt").write_bytes(b"")
    (src / "Makefile").write_text("all:\n")
    (src / ".git").mkdir()
    (src / ".git" / "HEAD.md").write_text("hidden\n")
    (src / ".holodeck").mkdir()
    (src / ".holodeck" / "index.json").write_text("{}\n")
    (src / ".draft.md").write_text("hidden file\n")
    os.symlink(outside / "secret.md", src / "leak.md")
    os.symlink(outside / "private", src / "linked_private")
    os.symlink(src / "intro.md", src / "alias.md")
    os.symlink(src / "guides", src / "guides_again")
    os.symlink(src, src / "guides" / "loop")
    os.symlink(src / "missing.md", src / "broken.md")
    return src


def test_lists_supported_files_recursively_sorted_with_stat(tree: Path) -> None:
    found = discover(tree)

    assert [f.rel_path for f in found.files] == [
        "NOTES.MD",
        "README.txt",
        "alias.md",
        "api/errors.json",
        "api/limits.csv",
        "guides/deep/nested.md",
        "guides/manual.pdf",
        "intro.md",
    ]
    nested = next(f for f in found.files if f.rel_path == "guides/deep/nested.md")
    st = (tree / "guides" / "deep" / "nested.md").stat()
    assert nested.path == tree / "guides" / "deep" / "nested.md"
    assert (nested.mtime, nested.size) == (st.st_mtime, st.st_size)


def test_every_skip_has_a_reason(tree: Path) -> None:
    found = discover(tree)

    reasons = {s.rel_path: s.reason for s in found.skipped}
    assert reasons == {
        "Makefile": "unsupported file type (no extension)",
        "api/diagram.png": "unsupported file type .png",
        "broken.md": "broken symlink",
        "empty.txt": "empty file",
        "guides/loop": "symlinked folder not followed (its target inside source is read directly)",
        "guides_again": (
            "symlinked folder not followed (its target inside source is read directly)"
        ),
        "leak.md": "symlink leads outside source",
        "linked_private": "symlink leads outside source",
    }


def test_hidden_files_and_folders_are_left_out_silently(tree: Path) -> None:
    found = discover(tree)

    listed = [f.rel_path for f in found.files] + [s.rel_path for s in found.skipped]
    assert not [p for p in listed if "/." in f"/{p}"]


def test_nothing_outside_source_is_ever_listed(tree: Path) -> None:
    root = tree.resolve()

    found = discover(tree)

    for f in found.files:
        assert f.path.resolve().is_relative_to(root), f.rel_path
    assert not [f for f in found.files if f.rel_path.startswith(("leak", "linked_private"))]


def test_symlinked_source_folder_is_walked(tree: Path, tmp_path: Path) -> None:
    link = tmp_path / "docs_link"
    os.symlink(tree, link)

    found = discover(link)

    assert "guides/deep/nested.md" in [f.rel_path for f in found.files]
    assert "leak.md" in [s.rel_path for s in found.skipped]


def test_single_file_source_uses_its_name(tmp_path: Path) -> None:
    doc = tmp_path / "handbook.md"
    doc.write_text("# Handbook\n")

    found = discover(doc)

    assert [(f.rel_path, f.path, f.size) for f in found.files] == [("handbook.md", doc, 11)]
    assert found.skipped == []


def test_single_unsupported_file_is_skipped_with_reason(tmp_path: Path) -> None:
    image = tmp_path / "logo.PNG"
    shutil.copy(EXAMPLE_PNG, image)

    found = discover(image)

    assert found.files == []
    assert [(s.rel_path, s.reason) for s in found.skipped] == [
        ("logo.PNG", "unsupported file type .png")
    ]


def test_missing_source_fails_fast_naming_the_path(tmp_path: Path) -> None:
    missing = tmp_path / "no-such-folder"

    with pytest.raises(FileNotFoundError, match="no-such-folder"):
        discover(missing)


def test_fifo_named_like_a_document_is_skipped_without_opening_it(tmp_path: Path) -> None:
    # Opening a FIFO blocks until a writer appears: finishing at all proves no read happened.
    os.mkfifo(tmp_path / "pipe.txt")

    found = discover(tmp_path)

    assert [(s.rel_path, s.reason) for s in found.skipped] == [("pipe.txt", "not a regular file")]


@pytest.mark.skipif(os.geteuid() == 0, reason="root can read files without read permission")
def test_unreadable_file_and_folder_are_skipped(tmp_path: Path) -> None:
    (tmp_path / "locked.md").write_text("secret\n")
    (tmp_path / "locked.md").chmod(0o000)
    (tmp_path / "closed").mkdir()
    (tmp_path / "closed" / "inner.md").write_text("inner\n")
    (tmp_path / "closed").chmod(0o000)
    try:
        found = discover(tmp_path)
    finally:
        (tmp_path / "closed").chmod(0o755)

    reasons = {s.rel_path: s.reason for s in found.skipped}
    assert reasons == {"locked.md": "permission denied", "closed": "permission denied"}
    assert found.files == []


def test_a_thousand_files_are_listed_without_opening_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Discovery lists (one scandir per folder, one stat per file) and never reads: what
    keeps ``holodeck search`` cheap on a big folder with nothing changed. Its speed is
    measured in benchmarks; here, that it opens none of the files it lists."""
    for d in range(20):
        folder = tmp_path / f"part{d:02d}"
        folder.mkdir()
        for i in range(50):
            (folder / f"doc{i:02d}.md").write_text(f"document {d}-{i}\n")
    opened: list[str] = []
    real_open, real_os_open = builtins.open, os.open

    def spy_open(file: Any, *args: Any, **kwargs: Any) -> Any:
        opened.append(str(file))
        return real_open(file, *args, **kwargs)

    def spy_os_open(path: Any, *args: Any, **kwargs: Any) -> int:
        opened.append(str(path))
        return real_os_open(path, *args, **kwargs)

    monkeypatch.setattr(builtins, "open", spy_open)
    monkeypatch.setattr(io, "open", spy_open)  # pathlib's read_text and read_bytes
    monkeypatch.setattr(os, "open", spy_os_open)
    found = discover(tmp_path)

    assert len(found.files) == 1000
    listed = {str(f.path) for f in found.files}
    assert [p for p in opened if p in listed] == []  # (it may look for .holodeckignore)


def test_example_docs_hold_every_supported_type_and_one_skipped_image() -> None:
    found = discover(EXAMPLE_DOCS)

    suffixes = {Path(f.rel_path).suffix for f in found.files}
    assert suffixes == {".md", ".txt", ".pdf", ".csv", ".json"}
    assert [(s.rel_path, s.reason) for s in found.skipped] == [
        ("api/architecture.png", "unsupported file type .png")
    ]


@pytest.mark.parametrize(
    "name", ["notes.MD", "a.tar.txt", "..odd.md", "trailing.", "README", "x..md", "v1.2.csv"]
)
def test_a_files_type_is_read_from_its_name_as_its_extension_says(
    tmp_path: Path, name: str
) -> None:
    (tmp_path / name).write_text("text")
    found = discover(tmp_path, [".md", ".txt", ".csv"])
    wanted = os.path.splitext(name)[1].lower() in (".md", ".txt", ".csv") and name[0] != "."
    assert (name in found.stats()) == wanted


#: Names a folder may hold, as the OS gives them to Python: bytes that are not UTF-8, real
#: backslashes, every control character, C1 controls, the text look-alikes of their escapes.
ODD_NAMES = [
    os.fsdecode(raw)
    for raw in (
        b"caf\xe9.md",
        b"caf\\xe9.md",
        b"caf\\\xe9.md",
        b"caf\xc3\xa9.md",
        b"caf\\xc3\\xa9.md",
        b"tab\there.md",
        b"tab\\there.md",
        b"new\nline\r.md",
        b"\x1b[31mred\x1b[0m.md",
        b"\\x1b[31mred.md",
        b"\xc2\x9b31m.md",
        b"\x9b31m.md",
        b"\x7f.md",
        b"\xff\xfe.md",
        b"".join(bytes([i]) for i in range(1, 47)) + b".md",
        b"a\\",
        b"\\",
        b"plain.md",
    )
]


def test_path_text_is_printable_reversible_and_never_shared() -> None:
    shown = [path_text(name) for name in ODD_NAMES]
    assert len(set(shown)) == len(ODD_NAMES)  # two names never share one text
    for name, text in zip(ODD_NAMES, shown, strict=True):
        assert text.isprintable(), text  # nothing a terminal obeys
        assert text.encode("utf-8")  # no surrogate left: every store can hold it
        assert text_path(text) == name  # the same file, found again
    assert shown[:4] == ["caf\\xe9.md", "caf\\\\xe9.md", "caf\\\\\\xe9.md", "caf\u00e9.md"]
    assert path_text("\x1b[31mred\x1b[0m.md") == "\\x1b[31mred\\x1b[0m.md"
    assert path_text("tab\there\n.md") == "tab\\there\\n.md"
    assert path_text("\x9b31m.md") == "\\xc2\\x9b31m.md"  # a C1 control: its UTF-8 bytes
    assert path_text("plain name.md") == "plain name.md"


def test_discovery_names_odd_files_escaped(tmp_path: Path) -> None:
    """Discovery reads the file by the name the OS knows and names it by ``path_text``."""
    src = os.fsencode(tmp_path)
    os.makedirs(os.path.join(src, b"r\xe9sum\xe9"))
    for name in (b"caf\xe9.md", b"r\xe9sum\xe9/a\tb.md", b"pic\x1b.png"):
        with open(os.path.join(src, name), "wb") as out:
            out.write(b"some text\n")
    found = discover(tmp_path)
    assert [f.rel_path for f in found.files] == ["caf\\xe9.md", "r\\xe9sum\\xe9/a\\tb.md"]
    assert [f.path.read_bytes() for f in found.files] == [b"some text\n"] * 2
    assert [(s.rel_path, s.reason) for s in found.skipped] == [
        ("pic\\x1b.png", "unsupported file type .png")
    ]
