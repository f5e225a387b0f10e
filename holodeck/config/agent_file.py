"""Where a project's agent file is: ``agent.yaml`` in a folder or the nearest parent, as git,
ruff and pytest find their own configuration, up to a repository's root (``.git``, which
is still searched) or the filesystem root. The commands and the library find it alike."""

from __future__ import annotations

from pathlib import Path

from holodeck.errors import ConfigError

AGENT_FILE = "agent.yaml"


def find_agent_file(start: Path, hint: str) -> Path:
    """``agent.yaml`` in ``start`` or the nearest parent, up to a ``.git`` folder (included).

    A ``ConfigError`` naming the folders searched, ending with ``hint``, when there is none.
    """
    start = start.resolve()
    for folder in (start, *start.parents):
        candidate = folder / AGENT_FILE
        if candidate.is_file():
            return candidate
        if (folder / ".git").exists():  # a folder, or a file in worktrees and submodules
            where = (
                f"{start} (a repository's root)"
                if folder == start
                else f"{start} or its parents up to the repository root {folder}"
            )
            raise ConfigError(f"no {AGENT_FILE} in {where}; {hint}")
    raise ConfigError(f"no {AGENT_FILE} in {start} or any parent folder; {hint}")
