"""The opt-in features whose packages are installed only with an extra (``pyproject.toml``).

A default install holds what the main path needs: the local model and index, the default
file types, an OpenAI-compatible LLM, MCP and the watch. Each extra pulls packages that
serve its feature alone (sizes in docs/install.md); a feature used without its extra stops
with one line naming the extra to install, never an ImportError.
"""

from __future__ import annotations

import importlib
import importlib.util

from holodeck.errors import MissingExtra


def require(extra: str, *modules: str, feature: str) -> None:
    """Import ``modules``; a MissingExtra naming ``extra`` when one is not installed.

    ``feature`` says what asked for them, where (``tool kb: reading .docx files``).
    """
    for module in modules:
        try:
            importlib.import_module(module)
        except ImportError as exc:
            missing = (exc.name or module).split(".")[0]
            raise MissingExtra(
                f"{feature} needs the extra holodeck[{extra}] (package {missing} is not "
                f"installed): pip install 'holodeck[{extra}]'"
            ) from None


#: The modules an opt-in file type is converted with, and the extra that installs them.
FILE_TYPE_EXTRAS: dict[str, tuple[str, tuple[str, ...]]] = {
    ".docx": ("office", ("markitdown", "mammoth")),
    ".pptx": ("office", ("markitdown", "pptx")),
    ".xlsx": ("office", ("markitdown", "openpyxl", "pandas")),
    ".html": ("html", ("trafilatura", "lxml_html_clean", "markitdown")),
    ".htm": ("html", ("trafilatura", "lxml_html_clean", "markitdown")),
}


def require_for_types(suffixes: set[str], owner: str) -> None:
    """Before any file is read: the extra each of ``suffixes`` needs is installed, else one
    MissingExtra line naming it (``owner``: ``tool kb``)."""
    for suffix in sorted(suffixes & FILE_TYPE_EXTRAS.keys()):
        extra, modules = FILE_TYPE_EXTRAS[suffix]
        require(extra, *modules, feature=f"{owner}: reading {suffix} files")


def missing_for_types(suffixes: set[str]) -> list[str]:
    """The extras ``suffixes`` need that are not installed, sorted; nothing is imported."""
    missing = set()
    for suffix in suffixes & FILE_TYPE_EXTRAS.keys():
        extra, modules = FILE_TYPE_EXTRAS[suffix]
        for module in modules:
            try:
                found = importlib.util.find_spec(module) is not None
            except (ImportError, ValueError):
                found = False
            if not found:
                missing.add(extra)
    return sorted(missing)
