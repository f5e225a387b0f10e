"""Writes corpus.jsonl: each man page of pages.py rendered as a user reads it (``man -l``,
80 columns, ``col -bx``), one document per page, its id the page's name (``git-blame.1``).

The rendering depends on the man pages this machine has installed (Debian bookworm's), so
the corpus is built here rather than kept: ``python benchmarks/data/sets/manpages_qa/build.py``.
"""

import json
import os
import subprocess
from pathlib import Path

HERE = Path(__file__).resolve().parent


def render(page: str) -> str:
    """The page as ``man`` shows it, without overstrikes."""
    shown = subprocess.run(
        ["man", "-l", page],
        capture_output=True,
        text=True,
        check=True,
        env={**os.environ, "MANWIDTH": "80", "MAN_KEEP_FORMATTING": ""},
    ).stdout
    return subprocess.run(
        ["col", "-bx"], input=shown, capture_output=True, text=True, check=True
    ).stdout


def main() -> None:
    pages = subprocess.run(
        ["python3", str(HERE / "pages.py")], capture_output=True, text=True, check=True
    ).stdout.split()
    with (HERE / "corpus.jsonl").open("w") as out:
        for page in pages:
            name = Path(page).name.removesuffix(".gz")
            out.write(json.dumps({"_id": name, "title": "", "text": render(page)}) + "\n")


if __name__ == "__main__":
    main()
