"""The project's id, kept in ``.holodeck/project_id``: what names the project in a shared index.

A project is known by an id kept in its own files, never by its path, so a laptop and a CI
checkout of one repository are the same project (``holodeck.ownership`` says what that
decides). The file is created on first ingest and is meant to be committed.
"""

from __future__ import annotations

import logging
import os
import re
import uuid
from pathlib import Path

from holodeck.errors import ConfigError

log = logging.getLogger("holodeck.config")

PROJECT_ID_FILE = Path(".holodeck") / "project_id"
_HEADER = (
    "# holodeck project id: names this project in shared indexes (Redis). Commit this file,\n"
    "# so every checkout of the project (a laptop, CI) fills its knowledge bases as one source.\n"
)
_VALID_ID = re.compile(r"^[A-Za-z0-9_.\-]{8,128}$")


def project_id(root: Path) -> str:
    """The id in ``<root>/.holodeck/project_id``, created (with a one-line notice) if missing."""
    path = root / PROJECT_ID_FILE
    found = _read(path)
    if found is not None:
        return found
    new = uuid.uuid4().hex
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
        tmp.write_text(f"{_HEADER}{new}\n", encoding="utf-8")
        try:
            os.link(tmp, path)  # atomic, and never replaces the id another process just wrote
        except FileExistsError:
            pass
        finally:
            tmp.unlink(missing_ok=True)
    except OSError as exc:
        raise ConfigError(
            f"{path}: cannot create this project's id ({exc.strerror or exc}); make "
            f"{path.parent} writable, or write the file yourself with one line such as {new}"
        ) from None
    created = _read(path)
    assert created is not None
    if created == new:
        log.info(
            "Created %s: this project's id in shared indexes; commit it, so every checkout "
            "(laptop, CI) counts as the same project",
            PROJECT_ID_FILE.as_posix(),
        )
    return created


def known_project_id(root: Path) -> str | None:
    """The id in ``<root>/.holodeck/project_id``, or None: reading never creates it."""
    return _read(root / PROJECT_ID_FILE)


def _read(path: Path) -> str | None:
    """The id a project file holds; None when there is no file. A broken file is an error."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return None
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"{path}: cannot read this project's id: {exc}") from None
    lines = [line.strip() for line in text.splitlines()]
    ids = [line for line in lines if line and not line.startswith("#")]
    if len(ids) != 1 or not _VALID_ID.match(ids[0]):
        raise ConfigError(
            f"{path}: not a holodeck project id (one line of 8-128 letters, digits, '_', '.', "
            "'-'); restore it from version control, or delete it to make a new one (libraries "
            "a shared index keeps for the old id then refuse this project)"
        )
    return ids[0]
