"""``${VAR}``, ``${VAR:-default}``, ``.env``, missing variables, and passwords never shown."""

from __future__ import annotations

import json
from pathlib import Path

from cli_helpers import run_holodeck, write

AGENT = """
name: demo
tools:
  - type: vectorstore
    name: docs
    source: ${DOCS_DIR:-data/docs}
    description: "Docs of ${PRODUCT}"
    database:
      provider: redis
      connection_string: ${REDIS_URL_FOR_DOCS}
"""

SECRET = "s3cr3t-Pa55"


def test_variables_defaults_and_dotenv(tmp_path: Path) -> None:
    write(tmp_path / "agent.yaml", AGENT)
    write(tmp_path / ".env", "PRODUCT=Skyline\nREDIS_URL_FOR_DOCS=redis://cache:6379\n")
    result = run_holodeck("config", "show", "--json", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    tool = json.loads(result.stdout)["tools"][0]
    assert tool["description"] == "Docs of Skyline"
    assert tool["source"] == "data/docs"  # the default
    assert tool["database"]["connection_string"] == "redis://cache:6379"


def test_real_environment_wins_over_dotenv(tmp_path: Path) -> None:
    write(tmp_path / "agent.yaml", AGENT)
    write(tmp_path / ".env", "PRODUCT=FromDotenv\nREDIS_URL_FOR_DOCS=redis://cache:6379\n")
    result = run_holodeck(
        "config",
        "show",
        "--json",
        cwd=tmp_path,
        env={"PRODUCT": "FromEnv", "DOCS_DIR": "elsewhere"},
    )
    tool = json.loads(result.stdout)["tools"][0]
    assert tool["description"] == "Docs of FromEnv"
    assert tool["source"] == "elsewhere"


def test_missing_variable_names_variable_and_file(tmp_path: Path) -> None:
    write(tmp_path / "agent.yaml", AGENT)
    result = run_holodeck("config", "show", cwd=tmp_path, env={"PRODUCT": "x"})
    assert result.returncode == 2
    line = result.stderr.strip()
    assert "\n" not in line
    assert line.startswith("Error: agent.yaml:9: tools[0].database.connection_string:")
    assert "REDIS_URL_FOR_DOCS is not set" in line


def test_variables_in_global_config(tmp_path: Path) -> None:
    write(
        tmp_path / "agent.yaml", "name: demo\ntools:\n  - {type: vectorstore, name: d, source: d}\n"
    )
    write(
        tmp_path / "home" / ".holodeck" / "config.yaml",
        "vectorstore:\n  provider: redis\n  connection_string: redis://${RHOST:-userhost}:6379\n",
    )
    result = run_holodeck("config", "show", "--json", cwd=tmp_path)
    db = json.loads(result.stdout)["tools"][0]["database"]
    assert db["connection_string"] == "redis://userhost:6379"


def _assert_secret_hidden(result) -> None:  # type: ignore[no-untyped-def]
    assert SECRET not in result.stdout
    assert SECRET not in result.stderr


def test_password_never_printed_by_config_show(tmp_path: Path) -> None:
    write(tmp_path / "agent.yaml", AGENT)
    env = {"PRODUCT": "x", "REDIS_URL_FOR_DOCS": f"redis://admin:{SECRET}@cache:6379/0"}
    for args in (("config", "show"), ("config", "show", "--json"), ("-v", "config", "show")):
        result = run_holodeck(*args, cwd=tmp_path, env=env)
        assert result.returncode == 0, result.stderr
        _assert_secret_hidden(result)
        assert "redis://admin:***@cache:6379/0" in result.stdout


def test_password_never_printed_in_errors(tmp_path: Path) -> None:
    bad_scheme = f"http://admin:{SECRET}@cache:6379"
    write(tmp_path / "agent.yaml", AGENT)
    for args in (("config", "show"), ("-v", "config", "show")):
        result = run_holodeck(
            *args, cwd=tmp_path, env={"PRODUCT": "x", "REDIS_URL_FOR_DOCS": bad_scheme}
        )
        assert result.returncode == 2
        assert "connection_string" in result.stderr
        _assert_secret_hidden(result)


def test_password_never_printed_when_redis_is_down(tmp_path: Path) -> None:
    write(tmp_path / "agent.yaml", AGENT)
    write(tmp_path / "data" / "docs" / "a.md", "# A\n\nSome text about rockets.\n")
    # Port 1 on loopback: nothing listens, connection refused at once.
    env = {"PRODUCT": "x", "REDIS_URL_FOR_DOCS": f"redis://admin:{SECRET}@127.0.0.1:1/0"}
    for args in (("ingest",), ("-v", "ingest"), ("-v", "search", "rockets")):
        result = run_holodeck(*args, cwd=tmp_path, env=env)
        _assert_secret_hidden(result)
        assert "redis://admin:***@127.0.0.1:1/0" in result.stderr


def test_dollar_dollar_brace_is_a_literal(tmp_path: Path) -> None:
    """``$${`` is a literal ``${`` (Compose's convention): no variable is looked up."""
    write(
        tmp_path / "agent.yaml",
        "name: demo\ntools:\n  - type: vectorstore\n    name: docs\n"
        "    source: $${TOKEN}docs\n    description: 'costs $${PRICE}, from ${SHOP:-the shop}'\n",
    )
    result = run_holodeck("config", "show", "--json", cwd=tmp_path, env={"TOKEN": "nope"})
    assert result.returncode == 0, result.stderr
    tool = json.loads(result.stdout)["tools"][0]
    assert tool["description"] == "costs ${PRICE}, from the shop"
    assert tool["source"] == "${TOKEN}docs"


def test_an_unset_variable_in_a_key_field_is_said_in_full(tmp_path: Path) -> None:
    """Redaction hides values, never the words of a message around them; the key is needed
    only by what calls the model (issue 60, item 2)."""
    write(
        tmp_path / "agent.yaml",
        "name: demo\nmodel:\n  provider: ollama\n  name: llama3\n  api_key: ${OLLAMA_API_KEY}\n",
    )
    result = run_holodeck("config", "show", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert result.stderr.strip() == (
        "WARNING: agent.yaml:5: model.api_key: OLLAMA_API_KEY is not set; holodeck chat and "
        "holodeck test will need it (export it, or add OLLAMA_API_KEY=... to .env next to "
        "agent.yaml)"
    )
    chat = run_holodeck("chat", cwd=tmp_path, stdin="hello\n")
    assert chat.returncode == 2
    assert chat.stderr.strip().splitlines()[-1] == (
        "Error: agent.yaml:5: model.api_key: OLLAMA_API_KEY is not set (export it, or add "
        "OLLAMA_API_KEY=... to .env next to agent.yaml)"
    )
