"""Files with the names real folders hold and text does not: bytes that are not UTF-8 (an
archive unpacked from another system), control characters, terminal escape sequences, and
names as long as the file system allows, each with a topic of its own to search for.

Names are bytes, written with ``os.fsencode`` paths, so the test makes exactly the file a
user would have; ``SHOWN`` is the name holodeck must show for each (docs/ingestion.md).
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

ESC = "\x1b"

#: name (bytes, relative to the source folder) -> (query, the document's text)
ODD_FILES: dict[bytes, tuple[str, str]] = {
    b"fruit.md": ("papaya", "# Fruit\n\nPapaya is a tropical fruit full of black seeds.\n"),
    b"caf\xe9.md": (  # Latin-1 é: not UTF-8
        "espresso machine pressure",
        "# Espresso\n\nThe espresso machine forces water through coffee at nine bars.\n",
    ),
    b"caf\\xe9.md": (  # a real backslash: must not collide with the Latin-1 name
        "kettle for green tea",
        "# Kettle\n\nThe kettle boils water for green tea in two minutes.\n",
    ),
    b"caf\xc3\xa9.md": (  # UTF-8 é: shown as it is
        "croissant butter layers",
        "# Croissant\n\nA croissant folds butter into the dough in many thin layers.\n",
    ),
    b"tab\there.md": (
        "reefing the mainsail",
        "# Sailing\n\nThe mainsail is reefed when the wind passes twenty-five knots.\n",
    ),
    b"new\nline.md": (
        "bilge pump water",
        "# Bilge\n\nThe bilge pump starts when water reaches ten centimetres.\n",
    ),
    b"\x1b[31mred\x1b[0m.md": (
        "lychee sorbet",
        "# Sorbet\n\nLychee sorbet is churned with lime juice and a little sugar.\n",
    ),
    b"a" * 252 + b".md": (  # 255 bytes: the longest name a file system allows
        "telescope mirror",
        "# Telescope\n\nA reflecting telescope gathers light with a curved mirror.\n",
    ),
    b"\xe9" * 252 + b".md": (  # 255 bytes, none of them UTF-8
        "compost heap",
        "# Compost\n\nA compost heap is turned every two weeks so microbes get oxygen.\n",
    ),
    b"r\xe9sum\xe9/rockets.md": (  # a folder whose name is not UTF-8
        "rocket oxidiser vacuum",
        "# Rockets\n\nA rocket carries its own oxidiser, so its engines work in vacuum.\n",
    ),
}

#: The name (relative to the source folder) holodeck shows and stores for each file.
SHOWN: dict[bytes, str] = {
    b"fruit.md": "fruit.md",
    b"caf\xe9.md": "caf\\xe9.md",
    b"caf\\xe9.md": "caf\\\\xe9.md",
    b"caf\xc3\xa9.md": "caf\u00e9.md",
    b"tab\there.md": "tab\\there.md",
    b"new\nline.md": "new\\nline.md",
    b"\x1b[31mred\x1b[0m.md": "\\x1b[31mred\\x1b[0m.md",
    b"a" * 252 + b".md": "a" * 252 + ".md",
    b"\xe9" * 252 + b".md": "\\xe9" * 252 + ".md",
    b"r\xe9sum\xe9/rockets.md": "r\\xe9sum\\xe9/rockets.md",
}

#: A file no ingest takes (an image), its name a terminal title escape and a stray byte.
ODD_SKIP = b"\x1b]0;owned\x07\xff.png"
ODD_SKIP_SHOWN = "\\x1b]0;owned\\x07\\xff.png"


def write_named(folder: Path, name: bytes, text: str) -> None:
    """Write ``text`` to ``folder/name`` with the name's bytes exactly (folders made too)."""
    path = os.path.join(os.fsencode(folder), name)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    try:
        with open(path, "wb") as out:
            out.write(text.encode("utf-8"))
    except OSError as exc:  # a file system that only takes UTF-8 names (macOS APFS, ...)
        pytest.skip(f"this file system refuses the name {name!r}: {exc}")


def write_odd_docs(folder: Path) -> None:
    """Every file of ``ODD_FILES`` and the one ``ODD_SKIP`` under ``folder``."""
    for name, (_, text) in ODD_FILES.items():
        write_named(folder, name, text)
    write_named(folder, ODD_SKIP, "not really an image\n")
