"""Done-when 2: the contract's precedence scenarios with a real Redis, end to end.

User-level config serves every project; project-level config wins over it; a tool's own
``database`` wins over both. ``config show`` names the origin and the store really in use,
and ingest, search and ``store info`` go where it says. The losing layers point at a closed
port: had they been used, the ingest would have fallen back to the local index.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from cli_helpers import run_holodeck, write
from redis_project import CORPUS, database_yaml, global_config, holodeck_json, snapshot, write_docs
from redis_server import free_port

pytestmark = pytest.mark.redis

AGENT = """
name: precedence
tools:
  - type: vectorstore
    name: docs
    source: docs
"""
USER_CONFIG = Path("home") / ".holodeck" / "config.yaml"
PROJECT_CONFIG = Path(".holodeck") / "config.yaml"


def project_with_docs(root: Path, agent: str = AGENT) -> Path:
    write(root / "agent.yaml", agent)
    write_docs(root / "docs", CORPUS)
    write_docs(root / "lab", {"notes.md": "# Lab\n\nThe centrifuge spins at 4000 rpm."})
    return root


def test_user_level_redis_serves_any_project(
    tmp_path: Path, redis_url: str, redis_index_name: str
) -> None:
    project = project_with_docs(tmp_path)
    global_config(project / USER_CONFIG, redis_url, redis_index_name)

    shown, _ = holodeck_json("config", "show", cwd=project)
    tool = shown["tools"][0]
    assert tool["database"]["origin"] == "user: ~/.holodeck/config.yaml"
    assert tool["database"]["connection_string"] == redis_url
    assert tool["database"]["index_name"] == redis_index_name
    assert tool["in_use"] == "redis"

    ingested, _ = holodeck_json("ingest", cwd=project)
    summary = ingested["tools"][0]
    assert (summary["backend"], summary["fallback"], summary["new"]) == ("redis", None, 6)

    found, _ = holodeck_json("search", "how many bars for an espresso", cwd=project)
    assert found["tools"][0]["results"][0]["source_path"] == "docs/kitchen/coffee.txt"

    info, _ = holodeck_json("store", "info", cwd=project)
    stats = info["tools"][0]
    assert (stats["backend"], stats["index"], stats["fallback"]) == (
        "redis",
        redis_index_name,
        None,
    )
    assert (stats["algorithm"], stats["metric"], stats["dimensions"]) == ("HNSW", "COSINE", 384)
    assert (stats["documents"], stats["chunks"]) == (6, summary["chunks_total"])


def test_project_level_overrides_user_level(
    tmp_path: Path, redis_url: str, redis_index_name: str
) -> None:
    project = project_with_docs(tmp_path)
    closed = f"redis://127.0.0.1:{free_port()}"
    global_config(project / USER_CONFIG, closed, "user_level_index")
    global_config(project / PROJECT_CONFIG, redis_url, redis_index_name)

    shown = run_holodeck("config", "show", cwd=project)
    assert shown.returncode == 0, shown.stderr
    assert "from:            project: .holodeck/config.yaml" in shown.stdout
    assert f"redis {redis_url} index {redis_index_name} (HNSW, COSINE)" in shown.stdout
    assert "in use:          redis" in shown.stdout

    ingested, result = holodeck_json("ingest", cwd=project)
    assert ingested["tools"][0]["backend"] == "redis"
    assert "WARNING" not in result.stderr
    assert snapshot(redis_url, redis_index_name, "precedence", "docs")["count"] > 0


def test_tool_database_overrides_project_and_user(
    tmp_path: Path, redis_url: str, redis_index_name: str, index_names: Callable[[], str]
) -> None:
    tool_index = index_names()
    agent = AGENT + (
        "  - type: vectorstore\n    name: experimental\n    source: lab\n"
        + database_yaml(redis_url, tool_index, "FLAT", "IP")
    )
    project = project_with_docs(tmp_path, agent)
    global_config(project / USER_CONFIG, f"redis://127.0.0.1:{free_port()}")
    global_config(project / PROJECT_CONFIG, redis_url, redis_index_name)
    shown, _ = holodeck_json("config", "show", cwd=project)
    docs, experimental = shown["tools"]
    assert docs["database"]["origin"] == "project: .holodeck/config.yaml"
    assert docs["database"]["index_name"] == redis_index_name
    assert experimental["database"]["origin"] == "tool"
    assert experimental["database"]["index_name"] == tool_index
    assert experimental["database"]["vector_algorithm"] == "FLAT"
    assert experimental["database"]["distance_metric"] == "IP"
    assert docs["in_use"] == experimental["in_use"] == "redis"

    ingested, _ = holodeck_json("ingest", cwd=project)
    assert [t["backend"] for t in ingested["tools"]] == ["redis", "redis"]

    info, _ = holodeck_json("store", "info", cwd=project)
    by_tool = {t["tool"]: t for t in info["tools"]}
    assert (by_tool["docs"]["index"], by_tool["docs"]["algorithm"]) == (
        redis_index_name,
        "HNSW",
    )
    assert (
        by_tool["experimental"]["index"],
        by_tool["experimental"]["algorithm"],
        by_tool["experimental"]["metric"],
        by_tool["experimental"]["documents"],
    ) == (tool_index, "FLAT", "IP", 1)
    # Each library went to its own index and nowhere else.
    assert snapshot(redis_url, redis_index_name, "precedence", "experimental")["count"] == 0
    assert snapshot(redis_url, tool_index, "precedence", "docs")["count"] == 0
    assert snapshot(redis_url, tool_index, "precedence", "experimental")["total"] == 1
