"""The command itself: help, version, the committed JSON Schema, agent file lookup."""

from __future__ import annotations

import json
from pathlib import Path

from cli_helpers import run_holodeck, write

import holodeck

REPO = Path(__file__).resolve().parents[2]


def test_help_lists_the_commands(tmp_path: Path) -> None:
    result = run_holodeck("--help", cwd=tmp_path)
    assert result.returncode == 0
    for command in ("ingest", "search", "config"):
        assert command in result.stdout
    assert "--verbose" in result.stdout and "--quiet" in result.stdout


def test_version(tmp_path: Path) -> None:
    result = run_holodeck("--version", cwd=tmp_path)
    assert result.returncode == 0
    assert result.stdout.strip() == f"holodeck, version {holodeck.__version__}"


def test_committed_schema_is_current(tmp_path: Path) -> None:
    result = run_holodeck("config", "schema", cwd=tmp_path)
    assert result.returncode == 0
    printed = json.loads(result.stdout)
    committed = json.loads((REPO / "schema" / "agent.schema.json").read_text())
    assert printed == committed, "run: holodeck config schema > schema/agent.schema.json"
    assert printed["additionalProperties"] is False
    tool = printed["$defs"]["VectorStoreToolConfig"]["properties"]
    assert tool["top_k"]["default"] == 5 and tool["chunk_overlap"]["default"] == 50


def test_agent_as_positional_argument_or_option(tmp_path: Path) -> None:
    write(
        tmp_path / "proj" / "my-agent.yaml",
        "name: a\ntools:\n  - {type: vectorstore, name: kb, source: nowhere}\n",
    )
    # positional AGENT (ingest) and -a (config show) find the same file
    result = run_holodeck("ingest", "proj/my-agent.yaml", cwd=tmp_path)
    assert result.returncode == 2 and "nowhere does not exist" in result.stderr
    result = run_holodeck("config", "show", "-a", "proj/my-agent.yaml", cwd=tmp_path)
    assert result.returncode == 0 and "Tool kb" in result.stdout
    result = run_holodeck("ingest", "proj/my-agent.yaml", "-a", "other.yaml", cwd=tmp_path)
    assert result.returncode == 2 and "not both" in result.stderr


def test_example_project_config_is_valid_and_uses_the_embedded_default() -> None:
    result = run_holodeck("config", "show", "--json", "-a", "agent.yaml.example", cwd=REPO)
    assert result.returncode == 0, result.stderr
    tool = json.loads(result.stdout)["tools"][0]
    assert tool["database"]["provider"] == "local" and tool["database"]["origin"] == "default"
