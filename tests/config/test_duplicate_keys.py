"""A key given twice in one mapping is refused with both places, in every YAML file holodeck
reads as configuration: YAML keys are unique, and a silent last-wins would read another
folder or name another agent than the one the reader of the file sees first."""

from __future__ import annotations

import json
from pathlib import Path

from cli_helpers import error_line, run_holodeck, write


def test_a_key_twice_in_a_flow_mapping_names_both_columns(tmp_path: Path) -> None:
    write(
        tmp_path / "agent.yaml",
        "name: kb\ntools:\n  - {type: vectorstore, name: kb, source: docs, source: /etc}\n",
    )
    result = run_holodeck("config", "show", cwd=tmp_path)
    assert error_line(result) == (
        "Error: agent.yaml:3: tools[0].source: given twice (line 3, columns 35 and 49); a key "
        "may appear only once in a mapping: delete one of them"
    )


def test_a_top_level_key_twice_names_both_lines(tmp_path: Path) -> None:
    write(tmp_path / "agent.yaml", "name: Y\ndescription: d\nname: Z\n")
    result = run_holodeck("config", "show", cwd=tmp_path)
    assert error_line(result) == (
        "Error: agent.yaml:3: name: given twice (lines 1 and 3); a key may appear only once "
        "in a mapping: delete one of them"
    )


def test_a_nested_key_twice_names_its_path(tmp_path: Path) -> None:
    write(
        tmp_path / "agent.yaml",
        """
        name: demo
        tools:
          - type: vectorstore
            name: kb
            source: docs
            database:
              provider: redis
              connection_string: redis://a:6379
              provider: redis
        """,
    )
    line = error_line(run_holodeck("config", "show", cwd=tmp_path))
    assert line.startswith(
        "Error: agent.yaml:9: tools[0].database.provider: given twice (lines 7 and 9);"
    ), line


def test_merge_keys_and_equal_keys_of_other_mappings_are_not_repeats(tmp_path: Path) -> None:
    """``<<: *base`` then a key of base overrides it (YAML's merge), and two tools may each
    have a ``name``: neither is a key given twice."""
    write(
        tmp_path / "agent.yaml",
        """
        name: demo
        tools:
          - &kb
            type: vectorstore
            name: one
            source: docs
          - <<: *kb
            name: two
        """,
    )
    result = run_holodeck("config", "show", "--json", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert [t["name"] for t in json.loads(result.stdout)["tools"]] == ["one", "two"]


def test_repeats_in_the_project_and_user_config_files(tmp_path: Path) -> None:
    write(tmp_path / "agent.yaml", "name: demo\n")
    config = "vectorstore:\n  provider: redis\n  connection_string: redis://a:6379\n"
    write(tmp_path / ".holodeck" / "config.yaml", config + "vectorstore: {provider: sqlite}\n")
    line = error_line(run_holodeck("config", "show", cwd=tmp_path))
    assert line.startswith(
        "Error: .holodeck/config.yaml:4: vectorstore: given twice (lines 1 and 4);"
    ), line
    (tmp_path / ".holodeck" / "config.yaml").unlink()
    write(
        tmp_path / "home" / ".holodeck" / "config.yaml",
        config + "  connection_string: redis://b:6379\n",
    )
    line = error_line(run_holodeck("config", "show", cwd=tmp_path))
    assert line.startswith(
        "Error: home/.holodeck/config.yaml:4: vectorstore.connection_string: given twice "
        "(lines 3 and 4);"
    ), line


def test_repeats_in_a_test_cases_file(tmp_path: Path) -> None:
    write(
        tmp_path / "agent.yaml",
        "name: demo\ntools:\n  - {type: vectorstore, name: kb, source: docs}\n"
        "test_cases_file: cases.yaml\n",
    )
    write(
        tmp_path / "cases.yaml",
        """
        test_cases:
          - name: first
            input: What is a run?
            expected_content: [run]
            input: What is a job?
        """,
    )
    line = error_line(run_holodeck("test", cwd=tmp_path))
    assert line.startswith(
        "Error: cases.yaml:5: test_cases[0].input: given twice (lines 3 and 5);"
    ), line
