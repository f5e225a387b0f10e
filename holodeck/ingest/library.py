"""One library as the ingest sees it: where its chunks go, and whether it is current.

Light on purpose: a reader (``holodeck search``) checks whether its library is current with
one ``stat`` per file before anything of the ingest pipeline is imported.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from holodeck.config.file_limits import FileLimits
from holodeck.config.file_types import DEFAULT_FILE_TYPES
from holodeck.ingest.discover import SourceFile, discover
from holodeck.ingest.skips import remembered_over_limit
from holodeck.ownership import filled_elsewhere
from holodeck.vectorstore.records import DocState
from holodeck.vectorstore.store import VectorStore


@dataclass
class LibraryTarget:
    """Where one library's chunks go and how they are made."""

    tenant_id: str
    library_id: str
    source: Path
    project_root: Path
    chunk_size: int
    chunk_overlap: int
    #: Extensions to ingest (lower case, with the dot) and gitignore-style patterns to leave out.
    file_types: tuple[str, ...] = DEFAULT_FILE_TYPES
    exclude: tuple[str, ...] = ()
    #: How big one file may be (the tool's ``limits:``), and the name of the agent file that
    #: sets them, said in the reason a file past one is skipped with (the same from any cwd).
    limits: FileLimits = field(default_factory=FileLimits)
    settings_file: str = "agent.yaml"
    #: Who fills the library (``ownership.library_owner``); made from
    #: ``project_root`` and ``source`` when not given.
    owner: dict[str, str] | None = None
    #: Take the library over from another source (the agent names its ``tenant:`` itself).
    take_over: bool = False
    #: The agent's name, for messages (default: the tenant).
    agent_name: str = ""
    #: Where the tool's ``embedding_model:`` is written (``agent.yaml line 18
    #: (tools[0].embedding_model)``) or would go (``tools[0] (kb) of agent.yaml, below its
    #: source: on line 16``), and who embeds with the tool's model (``openai``; empty:
    #: locally): for the message that refuses a changed model.
    model_key: str = ""
    model_key_set: bool = False
    model_provider: str = ""


def is_current(store: VectorStore, model_id: str, target: LibraryTarget) -> bool:
    """Whether the library already holds its source as it is now, checked without a lock,
    a write or a read of any file: one ``stat`` per file, every size and mtime as stored,
    no file vanished or new, the index made with ``model_id`` and filled from this source
    (a file skipped for a limit, remembered as such, counts as current while it is as it was).
    A reader (search, chat, test) that finds it so has nothing to ingest; otherwise
    ``ingest_library`` decides."""
    info = store.describe_index()
    if info is None or info.embedding_model != model_id:
        return False
    if filled_elsewhere(
        store.adapter, target.tenant_id, target.library_id, target.project_root, target.source
    ):
        return False  # filled from another folder: the ingest moves it (or refuses)
    files = discover(target.source, target.file_types, target.exclude).stats()
    stored = store.doc_stats(target.tenant_id, target.library_id)
    if files == stored:
        return True
    over_limit = remembered_over_limit(
        target.project_root, target.tenant_id, target.library_id, target.limits.model_dump()
    )
    return bool(over_limit) and files == {**over_limit, **stored}


def unchanged(state: DocState, f: SourceFile) -> bool:
    """The file is as stored: same size and mtime (then it is neither read nor hashed)."""
    return state.mtime == f.mtime and state.size == f.size
