"""agent.yaml and config.yaml are parsed with limits: an alias bomb or a value nested thousands
of levels deep is one clear line with exit 2, at once, never a hang, a MemoryError or a bare
RecursionError. Anchors and aliases used as intended still work."""

from __future__ import annotations

import json
from pathlib import Path

from cli_helpers import run_holodeck, write

#: Nine aliases of nine aliases of ... : a few hundred bytes that expand to 9**9 values.
ALIAS_BOMB = "name: bomb\na: &a [l,l,l,l,l,l,l,l,l]\n" + "".join(
    f"{k}: &{k} [{','.join([f'*{p}'] * 9)}]\n" for p, k in zip("abcdefgh", "bcdefghi", strict=True)
)


def check_one_line(result_stderr: str, starts: str, *fragments: str) -> None:
    lines = result_stderr.strip().splitlines()
    assert len(lines) == 1, result_stderr
    assert lines[0].startswith(starts), lines[0]
    for fragment in fragments:
        assert fragment in lines[0], lines[0]


def test_alias_bomb_in_agent_yaml_is_one_line(tmp_path: Path) -> None:
    assert len(ALIAS_BOMB) < 330
    write(tmp_path / "agent.yaml", ALIAS_BOMB)
    result = run_holodeck("config", "show", cwd=tmp_path, timeout=60)
    assert result.returncode == 2, result.stderr
    check_one_line(result.stderr, "Error: agent.yaml:", "aliases expand to more than 10,000")


def test_deeply_nested_value_is_one_line(tmp_path: Path) -> None:
    write(tmp_path / "agent.yaml", "name: deep\ndescription: " + "[" * 5000 + "]" * 5000 + "\n")
    result = run_holodeck("ingest", cwd=tmp_path, timeout=60)
    assert result.returncode == 2, result.stderr
    check_one_line(result.stderr, "Error: agent.yaml:2: ", "nested more than 100 levels deep")
    assert "RecursionError" not in result.stderr


def test_alias_bomb_in_project_config_names_that_file(tmp_path: Path) -> None:
    write(tmp_path / "agent.yaml", "name: demo\n")
    write(tmp_path / ".holodeck" / "config.yaml", ALIAS_BOMB.replace("name: bomb\n", ""))
    result = run_holodeck("config", "show", cwd=tmp_path, timeout=60)
    assert result.returncode == 2, result.stderr
    check_one_line(result.stderr, "Error: .holodeck/config.yaml:", "aliases expand")


def test_a_self_referencing_alias_is_refused(tmp_path: Path) -> None:
    write(tmp_path / "agent.yaml", "name: loop\ndescription: &d [1, *d]\n")
    result = run_holodeck("config", "show", cwd=tmp_path, timeout=60)
    assert result.returncode == 2, result.stderr
    check_one_line(result.stderr, "Error: agent.yaml:2: ", "refers to a value that contains it")


def test_anchors_used_as_intended_still_work(tmp_path: Path) -> None:
    write(
        tmp_path / "agent.yaml",
        """
        name: shared-db
        tools:
          - type: vectorstore
            name: one
            source: docs/
            database: &db
              provider: redis
              connection_string: redis://cache:6379
              index_name: kb
          - type: vectorstore
            name: two
            source: docs/
            database: *db
        """,
    )
    result = run_holodeck("config", "show", "--json", cwd=tmp_path, timeout=60)
    assert result.returncode == 0, result.stderr
    tools = json.loads(result.stdout)["tools"]
    assert [t["database"]["index_name"] for t in tools] == ["kb", "kb"]
