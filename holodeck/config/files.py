"""How a config file is named in messages, and its text read as UTF-8 or refused with its line.

agent.yaml, the config.yaml files, test-case files and ``.env`` are all read through
:func:`read_utf8`, so a file saved in another encoding is one ``ConfigError`` naming the file,
the line and the fix, never a codec's message without a file name.
"""

from __future__ import annotations

import os
from pathlib import Path

from holodeck.errors import ConfigError

#: The fix for a file that is not UTF-8, in every message that refuses one.
SAVE_AS_UTF8 = "save the file as UTF-8 (in your editor's encoding menu or settings)"


def home_dir() -> Path:
    """The user's home, from ``$HOME`` so tests and CI can point it elsewhere."""
    return Path(os.environ.get("HOME") or Path.home())


def file_label(path: Path) -> str:
    """How a file is named in messages: relative to the cwd when below it, ~ for home."""
    try:
        return path.resolve().relative_to(Path.cwd().resolve()).as_posix()
    except ValueError:
        pass
    try:
        return "~/" + path.resolve().relative_to(home_dir().resolve()).as_posix()
    except ValueError:
        return str(path)


def read_utf8(path: Path, name: str) -> str:
    """The text of ``path``; a ``ConfigError`` naming ``name`` when it cannot be read or is
    not UTF-8 (with the line and column of the first byte that is not)."""
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise ConfigError(f"{name}: cannot read the file: {exc.strerror or exc}") from exc
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        if data.startswith((b"\xff\xfe", b"\xfe\xff")):
            raise ConfigError(f"{name}:1: UTF-16 text, not UTF-8; {SAVE_AS_UTF8}") from None
        line = data.count(b"\n", 0, exc.start) + 1
        start = data.rfind(b"\n", 0, exc.start) + 1
        column = len(data[start : exc.start].decode("utf-8")) + 1  # valid up to the error
        raise ConfigError(
            f"{name}:{line}: not UTF-8 text (byte 0x{data[exc.start]:02x} at column {column}); "
            f"{SAVE_AS_UTF8}"
        ) from None
