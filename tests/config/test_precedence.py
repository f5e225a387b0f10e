"""The contract's four database precedence scenarios, through ``holodeck config show --json``."""

from __future__ import annotations

import json
from pathlib import Path

from cli_helpers import run_holodeck, write

AGENT = """
name: demo
tools:
  - type: vectorstore
    name: docs
    source: data/docs/
"""


def show(project: Path) -> dict:
    result = run_holodeck("config", "show", "--json", cwd=project)
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


def user_config(project: Path, url: str) -> None:
    write(
        project / "home" / ".holodeck" / "config.yaml",
        f"vectorstore:\n  provider: redis\n  connection_string: {url}\n",
    )


def test_scenario_1_user_level_redis_for_all_projects(tmp_path: Path) -> None:
    write(tmp_path / "agent.yaml", AGENT)
    user_config(tmp_path, "redis://localhost:6379")
    db = show(tmp_path)["tools"][0]["database"]
    assert db["provider"] == "redis"
    assert db["connection_string"] == "redis://localhost:6379"
    assert db["origin"] == "user: ~/.holodeck/config.yaml"
    assert (db["index_name"], db["vector_algorithm"], db["distance_metric"]) == (
        "holodeck_vectors",
        "HNSW",
        "COSINE",
    )


def test_scenario_2_project_overrides_user(tmp_path: Path) -> None:
    write(tmp_path / "agent.yaml", AGENT)
    user_config(tmp_path, "redis://localhost:6379")
    write(
        tmp_path / ".holodeck" / "config.yaml",
        """
        vectorstore:
          provider: redis
          connection_string: redis://prod-cache:6379
          index_name: myproject_vectors
        """,
    )
    db = show(tmp_path)["tools"][0]["database"]
    assert db["connection_string"] == "redis://prod-cache:6379"
    assert db["index_name"] == "myproject_vectors"
    assert db["origin"] == "project: .holodeck/config.yaml"


def test_scenario_3_tool_database_overrides_all(tmp_path: Path) -> None:
    write(
        tmp_path / "agent.yaml",
        """
        name: demo
        tools:
          - type: vectorstore
            name: docs
            source: data/docs/
          - type: vectorstore
            name: experimental
            source: data/experimental/
            database:
              provider: redis
              connection_string: redis://dev-cache:6379
              vector_algorithm: FLAT
              distance_metric: IP
        """,
    )
    user_config(tmp_path, "redis://localhost:6379")
    write(
        tmp_path / ".holodeck" / "config.yaml",
        "vectorstore:\n  provider: redis\n  connection_string: redis://prod-cache:6379\n",
    )
    docs, experimental = show(tmp_path)["tools"]
    assert docs["database"]["connection_string"] == "redis://prod-cache:6379"
    assert docs["database"]["origin"] == "project: .holodeck/config.yaml"
    assert experimental["database"]["connection_string"] == "redis://dev-cache:6379"
    assert experimental["database"]["origin"] == "tool"
    assert experimental["database"]["vector_algorithm"] == "FLAT"
    assert experimental["database"]["distance_metric"] == "IP"


def test_scenario_4_no_config_anywhere_uses_embedded_default(tmp_path: Path) -> None:
    write(tmp_path / "agent.yaml", AGENT)
    data = show(tmp_path)
    tool = data["tools"][0]
    assert tool["database"] == {
        "provider": "local",
        "path": ".holodeck/index/docs/index.db",
        "origin": "default",
    }
    assert tool["embedding_model"] == "all-MiniLM-L6-v2"
    assert (tool["top_k"], tool["min_similarity_score"], tool["chunk_overlap"]) == (5, None, 50)
    # The local model reads 256 tokens: the effective chunk size says so.
    assert (tool["chunk_size"], tool["chunk_size_requested"]) == (256, 512)


def test_text_form_names_the_origin(tmp_path: Path) -> None:
    write(tmp_path / "agent.yaml", AGENT)
    user_config(tmp_path, "redis://localhost:6379")
    result = run_holodeck("config", "show", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert "from:            user: ~/.holodeck/config.yaml" in result.stdout
    assert "redis redis://localhost:6379 index holodeck_vectors (HNSW, COSINE)" in result.stdout


def test_agent_file_elsewhere_resolves_paths_against_its_folder(tmp_path: Path) -> None:
    project = tmp_path / "proj"
    write(project / "agent.yaml", AGENT)
    write(
        project / ".holodeck" / "config.yaml",
        "vectorstore:\n  provider: redis\n  connection_string: redis://p:6379\n",
    )
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    result = run_holodeck(
        "config", "show", "--json", "-a", str(project / "agent.yaml"), cwd=elsewhere
    )
    assert result.returncode == 0, result.stderr
    data = json.loads(result.stdout)
    assert data["project_root"] == str(project.resolve())
    assert data["tools"][0]["source"] == "data/docs"
    assert data["tools"][0]["database"]["origin"] == "project: .holodeck/config.yaml"
