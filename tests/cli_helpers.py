"""Run the real ``holodeck`` command in a subprocess, in a project folder of the test's own.

Subprocesses (not click's in-process runner) so what is tested is what a user runs: the
entry point, logging set-up, exit codes and what reaches stdout and stderr.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path


def run_holodeck(
    *args: str,
    cwd: Path,
    home: Path | None = None,
    env: dict[str, str] | None = None,
    stdin: str | None = None,
    timeout: float = 240,
) -> subprocess.CompletedProcess[str]:
    """``holodeck ARGS`` in ``cwd`` with ``HOME`` pointed at ``home`` (default: cwd/home)."""
    return subprocess.run(
        [sys.executable, "-m", "holodeck", *args],
        cwd=cwd,
        env=holodeck_env(cwd, home, env),
        input=stdin,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def holodeck_env(
    cwd: Path, home: Path | None = None, env: dict[str, str] | None = None
) -> dict[str, str]:
    """The environment ``holodeck`` runs in: no real API keys, HOME of the test, no colour."""
    full_env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "AZURE_"))}
    full_env.pop("ANTHROPIC_API_KEY", None)
    full_env["HOME"] = str(home or (cwd / "home"))
    full_env["NO_COLOR"] = "1"
    full_env["COLUMNS"] = "200"
    if env:
        full_env.update(env)
    return full_env


def write(path: Path, text: str) -> Path:
    """Write dedented ``text`` to ``path``, creating folders."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(text).lstrip("\n"), encoding="utf-8")
    return path
