"""Every ``HOLODECK_*`` variable: read when used, a bad value one line naming it; ``--help``
never reads them."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from cli_helpers import run_holodeck, write

from holodeck import envvars

PACKAGE = Path(envvars.__file__).parent
BAD_VALUES = ["abc", "nan", "-5", "inf", "1e9"]


def test_every_variable_in_the_code_is_a_validated_one() -> None:
    """A new HOLODECK_* read anywhere but through ``envvars`` would skip the validation."""
    found = {
        name
        for path in PACKAGE.rglob("*.py")
        for name in re.findall(r"HOLODECK_[A-Z_]+", path.read_text(encoding="utf-8"))
    }
    assert found == {setting.name for setting in envvars.ALL}
    outside = [
        path
        for path in PACKAGE.rglob("*.py")
        if path.name != "envvars.py"
        and re.search(r"environ[^\n]*HOLODECK_", path.read_text(encoding="utf-8"))
    ]
    assert outside == []


@pytest.fixture
def project(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A project never ingested: a search has files to ingest, so it needs the lock (and its
    timeout) whichever test ran before."""
    root = tmp_path_factory.mktemp("env")
    write(root / "agent.yaml", "name: env\ntools:\n  - {type: vectorstore, name: kb, source: d}\n")
    write(root / "d" / "a.md", "The purple otter migration happens every spring.\n")
    return root


@pytest.mark.parametrize("value", BAD_VALUES)
@pytest.mark.parametrize("command", [("ingest",), ("search", "otter"), ("serve",)])
def test_a_bad_lock_timeout_is_one_line_naming_it(
    project: Path, command: tuple[str, ...], value: str
) -> None:
    result = run_holodeck(*command, cwd=project, env={"HOLODECK_LOCK_TIMEOUT": value}, stdin="")
    assert (result.returncode, result.stdout) == (2, ""), result.stderr
    assert result.stderr.splitlines()[-1] == (
        f"Error: environment variable HOLODECK_LOCK_TIMEOUT={value!r} is not allowed: give a "
        "number of seconds from 0 to 86400 (default 60), or unset it"
    )
    assert "Traceback" not in result.stderr


def test_help_never_reads_the_variables(project: Path) -> None:
    env = {setting.name: "abc" for setting in envvars.ALL}
    for args in (("--help",), ("ingest", "--help"), ("search", "--help"), ("serve", "--help")):
        result = run_holodeck(*args, cwd=project, env=env)
        assert result.returncode == 0, result.stderr
        assert result.stdout.startswith("Usage: ") and result.stderr == ""


def test_good_values_are_used(project: Path) -> None:
    result = run_holodeck(
        "ingest", cwd=project, env={"HOLODECK_LOCK_TIMEOUT": "0", "HOLODECK_REDIS_LOCK_TTL": ""}
    )
    assert result.returncode == 0, result.stderr


@pytest.mark.redis
def test_a_bad_redis_lock_ttl_is_one_line_naming_it(
    tmp_path: Path, redis_url: str, redis_index_name: str
) -> None:
    write(
        tmp_path / "agent.yaml",
        "name: env\ntools:\n  - type: vectorstore\n    name: kb\n    source: docs\n"
        f"    database: {{provider: redis, connection_string: '{redis_url}', "
        f"index_name: {redis_index_name}}}\n",
    )
    write(tmp_path / "docs" / "a.md", "The purple otter migration happens every spring.\n")
    for value in ("0", "abc", "-1"):
        result = run_holodeck("ingest", cwd=tmp_path, env={"HOLODECK_REDIS_LOCK_TTL": value})
        assert result.returncode == 2, result.stderr
        assert result.stderr.splitlines()[-1] == (
            f"Error: environment variable HOLODECK_REDIS_LOCK_TTL={value!r} is not allowed: "
            "give a number of seconds from 0.1 to 3600 (default 30), or unset it"
        )
    done = run_holodeck("ingest", cwd=tmp_path, env={"HOLODECK_REDIS_LOCK_TTL": "5"})
    assert done.returncode == 0, done.stderr
