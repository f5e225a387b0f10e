"""The run history: every ``holodeck test`` run kept as ``results/<agent>/<timestamp>.json``
next to agent.yaml, as the original HoloDeck keeps it (``--no-history`` opts out).

Each file holds the run's whole JSON report (every case, turn, check and metric), the
agent.yaml it ran as written (its ``${VAR}`` references, not their values; every string
also passed through ``redact``, so a password written in a connection string is masked)
and the git commit of the project (with whether the work tree had changes). A history that
cannot be written is a warning: the run's verdict stands.
"""

from __future__ import annotations

import json
import logging
import re
import subprocess
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from holodeck.config.config_file import _read_yaml
from holodeck.config.files import file_label
from holodeck.config.loader import Project
from holodeck.errors import ConfigError
from holodeck.redact import redact
from holodeck.testing.outcomes import SuiteResult
from holodeck.testing.reports import suite_dict

log = logging.getLogger("holodeck.testing")

RESULTS_DIR = "results"
#: Seconds git may take to say which commit the project is at.
GIT_SECONDS = 10.0
_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")


def history_folder(root: Path, agent_name: str) -> Path:
    """``results/<agent>/`` next to agent.yaml (the name made safe as a folder name)."""
    return root / RESULTS_DIR / (_UNSAFE.sub("_", agent_name) or "agent")


def record_run(project: Project, suite: SuiteResult) -> Path | None:
    """Write the run's history file; its path, or None (with a warning) when it cannot be."""
    folder = history_folder(project.root, project.agent.name)
    stamp = suite.started_at.astimezone(UTC).strftime("%Y%m%dT%H%M%SZ")
    record = {
        "recorded_at": datetime.now(UTC).isoformat(timespec="seconds"),
        "git": git_state(project.root),
        "config": _redacted(_agent_yaml(project)),
        "report": suite_dict(suite),
    }
    text = json.dumps(record, indent=2, ensure_ascii=False) + "\n"
    try:
        folder.mkdir(parents=True, exist_ok=True)
        path = folder / f"{stamp}.json"
        n = 1
        while path.exists():  # two runs in one second
            n += 1
            path = folder / f"{stamp}_{n}.json"  # sorts after the first
        path.write_text(text, encoding="utf-8")
    except OSError as exc:
        log.warning(
            "the run's history was not kept: cannot write %s: %s (--no-history skips it)",
            project.display(folder),
            exc.strerror or exc,
        )
        return None
    return path


def _agent_yaml(project: Project) -> Any:
    """agent.yaml as written (variables unsubstituted)."""
    try:
        data, _ = _read_yaml(project.agent_path, file_label(project.agent_path))
    except ConfigError:  # changed since it was loaded: what was validated, redacted
        return project.agent.model_dump(mode="json", exclude_none=True)
    return data


def _redacted(value: Any) -> Any:
    """Every string of ``value`` through ``redact``; dates and other YAML scalars as text."""
    if isinstance(value, dict):
        return {str(k): _redacted(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_redacted(v) for v in value]
    if isinstance(value, str):
        return redact(value)
    if value is None or isinstance(value, bool | int | float):
        return value
    return redact(str(value))


def git_state(root: Path) -> dict[str, Any] | None:
    """The commit the project is at and whether it has changes; None outside a repository."""

    def git(*args: str) -> str | None:
        try:
            done = subprocess.run(
                ["git", "-C", str(root), *args],
                capture_output=True,
                text=True,
                timeout=GIT_SECONDS,
                check=False,
            )
        except (OSError, subprocess.TimeoutExpired):
            return None
        return done.stdout.strip() if done.returncode == 0 else None

    commit = git("rev-parse", "HEAD")
    if commit is None:
        return None
    status = git("status", "--porcelain", "--untracked-files=no")
    return {"commit": commit, "dirty": bool(status) if status is not None else None}
