"""The ``${...}`` forms holodeck substitutes, and every other one refused with its line.

Supported: ``${NAME}``, ``${NAME:-default}`` (unset or empty: the default), ``${NAME:?message}``
(unset or empty: an error with the message) and ``$${`` for a literal ``${``. Anything else
that starts with ``${`` (the shell's other forms, a variable inside a default, ``${}``) would
otherwise become part of a name or a path as text, so it is one line naming the file and line.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from cli_helpers import error_line, run_holodeck, write

SUPPORTED = "use ${NAME}, ${NAME:-default} or ${NAME:?message} (and $${ for a literal ${)"


def agent_name(tmp_path: Path, value: str, env: dict[str, str] | None = None) -> str:
    write(tmp_path / "agent.yaml", f"description: demo\nname: {value}\n")
    result = run_holodeck("config", "show", "--json", cwd=tmp_path, env=env)
    assert result.returncode == 0, result.stderr
    return str(json.loads(result.stdout)["name"])


def test_required_variable_unset_or_empty_is_an_error_with_its_message(tmp_path: Path) -> None:
    write(tmp_path / "agent.yaml", "description: demo\nname: ${TENANT:?must be set}\n")
    for env in ({}, {"TENANT": ""}):
        assert error_line(run_holodeck("config", "show", cwd=tmp_path, env=env)) == (
            "Error: agent.yaml:2: name: environment variable TENANT is not set or empty: "
            "must be set (export it, or add it to .env next to the agent file)"
        )


def test_required_variable_without_a_message(tmp_path: Path) -> None:
    write(tmp_path / "agent.yaml", "name: ${TENANT:?}\n")
    assert error_line(run_holodeck("config", "show", cwd=tmp_path)) == (
        "Error: agent.yaml:1: name: environment variable TENANT is not set or empty "
        "(export it, or add it to .env next to the agent file)"
    )


def test_required_variable_set_is_its_value(tmp_path: Path) -> None:
    assert agent_name(tmp_path, "${TENANT:?must be set}", {"TENANT": "acme"}) == "acme"
    write(tmp_path / ".env", "TENANT=from-dotenv\n")
    assert agent_name(tmp_path, "${TENANT:?must be set}") == "from-dotenv"


def test_default_is_used_when_unset_or_empty(tmp_path: Path) -> None:
    """The shell's ``:-``: an empty value takes the default too."""
    assert agent_name(tmp_path, "${TENANT:-shared}") == "shared"
    assert agent_name(tmp_path, "${TENANT:-shared}", {"TENANT": ""}) == "shared"
    assert agent_name(tmp_path, "${TENANT:-shared}", {"TENANT": "acme"}) == "acme"


def test_plain_variable_set_to_empty_is_empty(tmp_path: Path) -> None:
    """``${NAME}`` is the value as set, empty included (as the original HoloDeck reads it)."""
    assert agent_name(tmp_path, "a${SUFFIX}", {"SUFFIX": ""}) == "a"


@pytest.mark.parametrize(
    ("value", "shown", "why"),
    [
        ("${N:-${M}}", "${N:-${M}}", "a variable inside another"),
        ("${}", "${}", "no variable name"),
        ("'${ N }'", "${ N }", "not a variable name"),
        ("${1N}", "${1N}", "not a variable name"),
        ("${N:=x}", "${N:=x}", "not a form holodeck substitutes"),
        ("${N-x}", "${N-x}", "not a form holodeck substitutes"),
        ("kb-${N", "${N", "no closing }"),
    ],
)
def test_unsupported_forms_are_refused(tmp_path: Path, value: str, shown: str, why: str) -> None:
    write(tmp_path / "agent.yaml", f"description: demo\nname: {value}\n")
    assert error_line(run_holodeck("config", "show", cwd=tmp_path, env={"N": "x"})) == (
        f"Error: agent.yaml:2: name: {shown}: {why}; {SUPPORTED}"
    )


def test_unsupported_form_in_a_config_file(tmp_path: Path) -> None:
    write(tmp_path / "agent.yaml", "name: demo\n")
    write(
        tmp_path / ".holodeck" / "config.yaml",
        "vectorstore:\n  provider: redis\n  connection_string: ${URL:+redis://a}\n",
    )
    assert error_line(run_holodeck("config", "show", cwd=tmp_path)).startswith(
        "Error: .holodeck/config.yaml:3: vectorstore.connection_string: ${URL:+redis://a}: "
    )


def test_the_literal_escape_still_holds_every_form(tmp_path: Path) -> None:
    """``$${`` keeps any text after it, supported form or not, as written."""
    assert agent_name(tmp_path, "'$${N:?x} $${} $${N:-$${M}}'") == "${N:?x} ${} ${N:-${M}}"


def test_a_required_api_key_is_one_variable_without_a_default(tmp_path: Path) -> None:
    """``${KEY:?message}`` holds no key, so ``model.api_key`` may take it."""
    write(
        tmp_path / "agent.yaml",
        "name: demo\nmodel:\n  provider: ollama\n  name: llama3\n"
        "  api_key: ${OLLAMA_API_KEY:?set the Ollama key}\n",
    )
    # needed by what calls the model only (issue 60, item 2), with the file's own message
    assert error_line(run_holodeck("chat", cwd=tmp_path, stdin="hello\n")) == (
        "Error: agent.yaml:5: model.api_key: OLLAMA_API_KEY is not set or empty: set the "
        "Ollama key (export it, or add OLLAMA_API_KEY=... to .env next to agent.yaml)"
    )
    result = run_holodeck("config", "show", cwd=tmp_path, env={"OLLAMA_API_KEY": "k-123"})
    assert result.returncode == 0, result.stderr
