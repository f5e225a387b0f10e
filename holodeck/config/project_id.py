"""Who fills a library: the project's id (kept in ``.holodeck/project_id``) and its source.

In a shared index a library belongs to one source, so another project whose agent and tool
happen to share names cannot erase it. The project is known by an id kept in its own files,
never by its path: a laptop and a CI checkout of one repository are the same project. The
file is created on first ingest and is meant to be committed.
"""

from __future__ import annotations

import logging
import os
import re
import socket
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


def library_owner(root: Path, source: Path) -> dict[str, str]:
    """The owner record of a library filled from ``source`` by the project at ``root``.

    ``project_id`` and ``source`` (relative to the root when inside it) identify the owner;
    ``root``, ``host`` and ``description`` only describe it, to name it in an error.
    """
    shown = source_label(root, source)
    host = socket.gethostname()
    return {
        "project_id": project_id(root),
        "source": shown,
        "root": str(root),
        "host": host,
        "description": f"source {shown} of the project at {root} (host {host})",
    }


def source_label(root: Path, source: Path) -> str:
    """A source as an owner record names it: relative to the project root when inside it."""
    try:
        return source.relative_to(root).as_posix() or "."
    except ValueError:
        return str(source)


def owned_elsewhere(agent: str, tool: str, tenant: str, where: str, *, reading: bool) -> str:
    """Why a library another project fills is refused, and what to change.

    Names this agent, tool and tenant and the index, never the other project: its path,
    host and id are not this project's to see.
    """
    head = f"agent {agent!r}, tool {tool!r}: the library of tenant {tenant!r} in {where}"
    if reading:
        what = "is filled by another project, so this project may not read it"
        share = f"to share it, set tenant: {tenant} explicitly (its next ingest takes it over)"
    else:
        what = "is filled by another project; nothing was changed"
        share = f"to take it over, set tenant: {tenant} explicitly"
    return (
        f"{head} {what}. To keep both, set tenant: to another value in agent.yaml or rename "
        f"the tool; {share}; if both are one project, commit {PROJECT_ID_FILE.as_posix()} so "
        "every checkout shares its id"
    )
