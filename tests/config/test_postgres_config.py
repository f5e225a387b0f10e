"""``provider: postgres`` in agent.yaml and in config.yaml: what loads, with which precedence,
what is warned away, what is refused (one ``file:line: field`` line, exit 2), and that the
password never shows."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from cli_helpers import run_holodeck, write

AGENT = """
name: demo
tools:
  - type: vectorstore
    name: docs
    source: data/docs/
{extra}
"""

PG = "    database:\n      provider: postgres\n      connection_string: {url}\n"


def show(project: Path, env: dict[str, str] | None = None) -> dict:
    result = run_holodeck("config", "show", "--json", cwd=project, env=env)
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


@pytest.mark.parametrize("scheme", ["postgresql", "postgres"])
def test_a_tool_database_on_postgres_loads_with_its_settings(tmp_path: Path, scheme: str) -> None:
    url = f"{scheme}://kb:${{PGPASSWORD}}@db.example:5432/kb?sslmode=require"
    extra = PG.format(url=url) + "      index_name: team_kb\n      distance_metric: IP\n"
    write(tmp_path / "agent.yaml", AGENT.format(extra=extra))
    db = show(tmp_path, env={"PGPASSWORD": "s3cret-Pg-pass"})["tools"][0]["database"]
    assert db["provider"] == "postgres"
    assert db["connection_string"] == f"{scheme}://kb:***@db.example:5432/kb?sslmode=require"
    assert (db["index_name"], db["vector_algorithm"], db["distance_metric"]) == (
        "team_kb",
        "HNSW",
        "IP",
    )
    assert db["origin"] == "tool"


def test_project_postgres_overrides_user_redis_and_a_tool_overrides_both(
    tmp_path: Path,
) -> None:
    extra = "  - type: vectorstore\n    name: own\n    source: data/own/\n" + PG.format(
        url="postgresql://kb@tool-db/kb"
    )
    write(tmp_path / "agent.yaml", AGENT.format(extra=extra))
    write(
        tmp_path / "home" / ".holodeck" / "config.yaml",
        "vectorstore:\n  provider: redis\n  connection_string: redis://localhost:6379\n",
    )
    write(
        tmp_path / ".holodeck" / "config.yaml",
        "vectorstore:\n  provider: postgres\n  connection_string: postgresql://kb@proj-db/kb\n"
        "  vector_algorithm: FLAT\n",
    )
    docs, own = show(tmp_path)["tools"]
    assert docs["database"]["provider"] == "postgres"
    assert docs["database"]["connection_string"] == "postgresql://kb@proj-db/kb"
    assert docs["database"]["vector_algorithm"] == "FLAT"
    assert docs["database"]["origin"] == "project: .holodeck/config.yaml"
    assert own["database"]["connection_string"] == "postgresql://kb@tool-db/kb"
    assert own["database"]["origin"] == "tool"


def test_config_show_names_postgres_and_its_fallback(tmp_path: Path) -> None:
    # Port 1 refuses at once: the store in use is the local index, as an ingest would fall back.
    extra = PG.format(url="postgresql://kb@127.0.0.1:1/kb")
    write(tmp_path / "agent.yaml", AGENT.format(extra=extra))
    result = run_holodeck("config", "show", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert "postgres postgresql://kb@127.0.0.1:1/kb index holodeck_vectors (HNSW, COSINE)" in (
        result.stdout
    )
    assert "local (fallback: postgres at postgresql://kb@127.0.0.1:1/kb unreachable)" in (
        result.stdout
    )


BAD = [
    # (id, database lines, line, fragments)
    (
        "redis-url-for-postgres",
        PG.format(url="redis://h:6379"),
        8,
        ["tools[0].database.connection_string", "postgresql://", "postgres://"],
    ),
    (
        "postgres-url-for-redis",
        PG.format(url="postgresql://h/db").replace("postgres\n", "redis\n", 1),
        8,
        ["tools[0].database.connection_string", "redis://", "rediss://"],
    ),
    (
        "algorithm",
        PG.format(url="postgresql://h/db") + "      vector_algorithm: IVFFLAT\n",
        9,
        ["tools[0].database.vector_algorithm", "'HNSW'", "'FLAT'"],
    ),
    (
        "metric",
        PG.format(url="postgresql://h/db") + "      distance_metric: DOT\n",
        9,
        ["tools[0].database.distance_metric", "'COSINE'", "'L2'", "'IP'"],
    ),
    (
        "long-index-name",
        PG.format(url="postgresql://h/db") + "      index_name: " + "k" * 49 + "\n",
        9,
        ["tools[0].database.index_name", "at most 48 characters"],
    ),
    (
        "unknown-key",
        PG.format(url="postgresql://h/db") + "      pool_size: 4\n",
        9,
        ["tools[0].database.pool_size", "unknown key", "valid keys: provider"],
    ),
    (
        "literal-password",
        PG.format(url="postgresql://kb:hunter2-literal@h/db"),
        8,
        ["tools[0].database.connection_string", "password written into the file", "PGPASSWORD"],
    ),
    (
        "literal-password-parameter",
        PG.format(url="postgresql://kb@h/db?password=hunter2-literal"),
        8,
        ["tools[0].database.connection_string", "password written into the file"],
    ),
]


@pytest.mark.parametrize(
    ("extra", "line", "fragments"), [c[1:] for c in BAD], ids=[c[0] for c in BAD]
)
def test_a_wrong_postgres_section_is_one_line_with_exit_2(
    tmp_path: Path, extra: str, line: int, fragments: list[str]
) -> None:
    write(tmp_path / "agent.yaml", AGENT.format(extra=extra))
    result = run_holodeck("config", "show", cwd=tmp_path)
    assert result.returncode == 2, result.stdout + result.stderr
    assert "Traceback" not in result.stderr
    errors = [x for x in result.stderr.splitlines() if x.startswith("Error")]
    assert len(errors) == 1, result.stderr
    assert f"agent.yaml:{line}: " in errors[0], errors[0]
    for fragment in fragments:
        assert fragment in errors[0], errors[0]
    assert "hunter2-literal" not in result.stderr + result.stdout


def test_a_literal_password_in_config_yaml_is_refused_too(tmp_path: Path) -> None:
    write(tmp_path / "agent.yaml", AGENT.format(extra=""))
    write(
        tmp_path / ".holodeck" / "config.yaml",
        "vectorstore:\n  provider: postgres\n"
        "  connection_string: postgresql://kb:hunter2-literal@db/kb\n",
    )
    result = run_holodeck("config", "show", cwd=tmp_path)
    assert result.returncode == 2, result.stderr
    assert ".holodeck/config.yaml:3: vectorstore.connection_string: a password written" in (
        result.stderr
    )
    assert "hunter2-literal" not in result.stderr + result.stdout


def test_the_originals_postgres_keys_are_warned_once_each(tmp_path: Path) -> None:
    extra = PG.format(url="postgresql://kb@db/kb") + (
        "      host: db\n      port: 5432\n      db_schema: search\n"
    )
    write(tmp_path / "agent.yaml", AGENT.format(extra=extra))
    result = run_holodeck("config", "show", "--json", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    warnings = [x for x in result.stderr.splitlines() if x.startswith("WARNING")]
    assert len(warnings) == 3, result.stderr
    assert "agent.yaml:9: tools[0].database.host: ignored (" in warnings[0]
    assert "agent.yaml:10: tools[0].database.port: ignored (" in warnings[1]
    assert "agent.yaml:11: tools[0].database.db_schema: ignored (" in warnings[2]
    assert "search_path" in warnings[2]
    assert json.loads(result.stdout)["tools"][0]["database"]["provider"] == "postgres"
