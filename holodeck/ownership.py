"""Who fills a library and who may read it: the owner record, claiming, and the reader check.

In a shared index a library belongs to one project and one source folder, so another project
whose agent and tool happen to share names can neither erase nor read it. The index only
keeps the record (the adapter's ``library_owner``/``set_library_owner``); what the record
means for an ingest (``claim_for_ingest``) and for a reader (``check_readable``) is decided
here, and so are the lines that say so.
"""

from __future__ import annotations

import logging
import socket
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from holodeck.config import project_id as project_file
from holodeck.errors import ConfigError
from holodeck.vectorstore.adapter import IndexAdapter

#: An ingest's lines go to the ingest's logger, a reader's to the tools' (``-v`` names them).
_ingest_log = logging.getLogger("holodeck.ingest")
_reader_log = logging.getLogger("holodeck.tools")

#: The field of an owner record that identifies it (a project); the others describe it.
OWNER_IDENTITY = "project_id"
#: The field of an owner record naming the project a library was taken over from.
TAKEN_FROM = "taken_from"
#: Libraries already warned that they were filled from another source folder (warn once).
_WARNED_MOVED: set[str] = set()


class LibraryOwnedError(ConfigError):
    """A library another project fills: refused before anything of it is removed or read
    (exit 2). The message never names the other project (``owner`` holds its record)."""

    def __init__(
        self, tenant_id: str, library_id: str, owner: dict[str, str], claimant: dict[str, str]
    ) -> None:
        super().__init__(
            f"library {library_id!r} of tenant {tenant_id!r} is filled by another project"
        )
        self.tenant_id = tenant_id
        self.library_id = library_id
        self.owner = owner
        self.claimant = claimant


@dataclass(frozen=True)
class Claim:
    """What claiming a library found.

    ``new``: nobody owned it and it was empty; ``same``: already this owner's; ``moved``: this
    project's, filled from another source folder until now (``previous``: the record, kept
    until the caller has moved the documents and calls ``record_owner``); ``adopted``: it
    held chunks but no owner record (an older release made it); ``taken``: another
    project's, taken over on purpose (``previous`` says whose).
    """

    outcome: Literal["new", "same", "moved", "adopted", "taken"]
    previous: dict[str, str] | None = None


# -- the owner record -----------------------------------------------------------------------
def library_owner(root: Path, source: Path) -> dict[str, str]:
    """The owner record of a library filled from ``source`` by the project at ``root``.

    ``project_id`` and ``source`` (relative to the root when inside it) identify the owner;
    ``root``, ``host`` and ``description`` only describe it, to name it in an error.
    """
    shown = source_label(root, source)
    host = socket.gethostname()
    return {
        OWNER_IDENTITY: project_file.project_id(root),
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


def filled_elsewhere(
    adapter: IndexAdapter, tenant_id: str, library_id: str, root: Path, source: Path
) -> bool:
    """Whether the library's record names another source folder than ``source`` (the next
    ingest moves its documents, or refuses); False for a library nobody has claimed."""
    owner = adapter.library_owner(tenant_id, library_id)
    return owner is not None and owner.get("source") != source_label(root, source)


def record_owner(
    adapter: IndexAdapter, tenant_id: str, library_id: str, owner: dict[str, str]
) -> None:
    """Record ``owner`` as the library's (after a ``moved`` claim's documents followed)."""
    adapter.set_library_owner(tenant_id, library_id, owner)


# -- filling: the ingest ----------------------------------------------------------------------
def claim_library(
    adapter: IndexAdapter,
    tenant_id: str,
    library_id: str,
    owner: dict[str, str],
    *,
    take_over: bool = False,
) -> Claim:
    """Check that ``owner`` may fill the library and record it as the owner.

    Owners are the same project when their ``OWNER_IDENTITY`` is; a changed description
    (the project's folder moved) is recorded, a changed source is a ``moved`` claim (the
    record changes when the caller says the documents follow). Another project's library
    raises ``LibraryOwnedError`` before anything is written, unless ``take_over``.
    """
    current = adapter.library_owner(tenant_id, library_id)
    if current is None:
        had_chunks = adapter.count(tenant_id, library_id) > 0
        adapter.set_library_owner(tenant_id, library_id, owner)
        return Claim("adopted" if had_chunks else "new")
    if current.get(OWNER_IDENTITY) == owner.get(OWNER_IDENTITY):
        if current.get("source") != owner.get("source"):
            return Claim("moved", current)
        kept = {**owner, **{k: v for k, v in current.items() if k == TAKEN_FROM}}
        if current != kept:
            adapter.set_library_owner(tenant_id, library_id, kept)
        return Claim("same")
    if not take_over:
        raise LibraryOwnedError(tenant_id, library_id, current, owner)
    # the project it was taken from is told so when it next reads or fills it
    taken = {**owner, TAKEN_FROM: current.get(OWNER_IDENTITY, "")}
    adapter.set_library_owner(tenant_id, library_id, taken)
    return Claim("taken", current)


def claim_for_ingest(
    adapter: IndexAdapter,
    tenant_id: str,
    library_id: str,
    owner: dict[str, str],
    *,
    take_over: bool,
    agent_name: str,
    project_root: Path,
) -> dict[str, str] | None:
    """Make sure this project may fill the library; another project's is refused (exit 2).

    Returns the previous owner record when the library is this project's but was filled from
    another source folder (the project moved its folder): the documents follow the move, and
    the caller records ``owner`` once they have. ``agent_name`` names the agent in the
    refusal (default: the tenant); ``project_root`` is where the old source is looked for.
    """
    try:
        claim = claim_library(adapter, tenant_id, library_id, owner, take_over=take_over)
    except LibraryOwnedError as refused:
        where = f"the {adapter.backend} index"
        agent = agent_name or tenant_id
        ours = _taken_from(refused.owner, owner.get(OWNER_IDENTITY))
        raise ConfigError(
            owned_elsewhere(agent, library_id, tenant_id, where, reading=False, taken=ours)
        ) from None
    if claim.outcome == "adopted":
        _ingest_log.info(
            "Library %s of tenant %s had no owner record (made by an older holodeck); "
            "claimed for %s",
            library_id,
            tenant_id,
            owner["description"],
        )
    elif claim.outcome == "taken":
        _ingest_log.warning(
            "Library %s of tenant %s belonged to another project; taken over by %s (tenant: "
            "is set in agent.yaml); its documents are replaced by this source's",
            library_id,
            tenant_id,
            owner["description"],
        )
    elif claim.outcome == "moved" and claim.previous is not None:
        _say_moved(library_id, claim.previous, owner, project_root)
        return claim.previous
    return None


def _say_moved(
    library_id: str, previous: dict[str, str], owner: dict[str, str], project_root: Path
) -> None:
    """One line naming the old and the new source; a warning when the old one still exists
    (another agent file of the project may fill a tool of this name from it)."""
    before = previous.get("source", "?")
    still = (project_root / before).exists() if before != "?" else False
    _ingest_log.log(
        logging.WARNING if still else logging.INFO,
        "Library %s was filled from %s, now from %s (this project's source moved): its "
        "documents follow without re-embedding where their content is the same%s",
        library_id,
        before,
        owner["source"],
        f"; {before} still exists: if another agent file of this project fills tool "
        f"{library_id} from it, give one of them another tool name"
        if still
        else "",
    )


# -- reading ----------------------------------------------------------------------------------
def check_reader(
    adapter: IndexAdapter, tenant_id: str, library_id: str, project_id: str | None
) -> dict[str, str] | None:
    """Reading follows writing: project ``project_id`` may read a library it fills, or one
    nobody has claimed yet (empty, or made by an older release); another project's raises
    ``LibraryOwnedError``. Returns the owner record (None: unclaimed)."""
    owner = adapter.library_owner(tenant_id, library_id)
    if owner is None or (project_id is not None and owner.get(OWNER_IDENTITY) == project_id):
        return owner
    raise LibraryOwnedError(tenant_id, library_id, owner, {OWNER_IDENTITY: project_id or ""})


def check_readable(
    index: Callable[[], IndexAdapter],
    tenant_id: str,
    library_id: str,
    *,
    agent_name: str,
    explicit_tenant: bool,
    root: Path,
    source: Path,
    project_id: str | None,
) -> str | None:
    """Refuse a library another project fills (one ``ConfigError`` line naming the agent,
    the tool and the fix) unless the agent names its tenant explicitly (``explicit_tenant``:
    nothing is asked, and ``index`` is not even opened). A library this project filled from
    another source folder is its own: a warning says its results name the old paths until
    the next ingest.

    ``project_id`` is this project's id when already known, else it is read from ``root``
    (never created: the first ingest does that). Returns the id as known now, for the next
    call to pass back.
    """
    if explicit_tenant:
        return project_id
    adapter = index()
    if project_id is None:
        project_id = project_file.known_project_id(root)
    try:
        owner = check_reader(adapter, tenant_id, library_id, project_id)
    except LibraryOwnedError as refused:
        where = f"the {adapter.backend} index"
        ours = _taken_from(refused.owner, project_id)
        raise ConfigError(
            owned_elsewhere(agent_name, library_id, tenant_id, where, reading=True, taken=ours)
        ) from None
    indexed = owner.get("source") if owner else None
    _warn_if_moved(library_id, indexed, source_label(root, source))
    return project_id


def _warn_if_moved(library_id: str, indexed: str | None, source: str) -> None:
    """Warn, once per library and process, that it was indexed from another source folder."""
    if indexed is None or indexed == source or library_id in _WARNED_MOVED:
        return
    _WARNED_MOVED.add(library_id)
    _reader_log.warning(
        "%s: indexed from %s, but its source is now %s; results name the old paths "
        "until `holodeck ingest` moves them",
        library_id,
        indexed,
        source,
    )


# -- the refusal ------------------------------------------------------------------------------
def _taken_from(owner: dict[str, str], project_id: str | None) -> bool:
    """Whether ``owner`` took the library over from project ``project_id``."""
    return bool(project_id) and owner.get(TAKEN_FROM) == project_id


def owned_elsewhere(
    agent: str, tool: str, tenant: str, where: str, *, reading: bool, taken: bool = False
) -> str:
    """Why a library another project fills is refused, and what to change; ``taken``: it
    was this project's until the other took it over, which the line says first.

    Names this agent, tool and tenant and the index, never the other project: its path,
    host and id are not this project's to see.
    """
    head = f"agent {agent!r}, tool {tool!r}: the library of tenant {tenant!r} in {where}"
    if taken:
        return (
            f"{head} was this project's until another project took it over (it sets "
            f"tenant: {tenant} explicitly){'' if reading else '; nothing was changed'}. To "
            f"take it back, set tenant: {tenant} explicitly in agent.yaml and run holodeck "
            f"ingest; to keep both, set tenant: to another value or rename the tool"
        )
    if reading:
        what = "is filled by another project, so this project may not read it"
        share = f"to share it, set tenant: {tenant} explicitly (its next ingest takes it over)"
    else:
        what = "is filled by another project; nothing was changed"
        share = f"to take it over, set tenant: {tenant} explicitly"
    return (
        f"{head} {what}. To keep both, set tenant: to another value in agent.yaml or rename "
        f"the tool; {share}; if both are one project, commit "
        f"{project_file.PROJECT_ID_FILE.as_posix()} so every checkout shares its id"
    )
