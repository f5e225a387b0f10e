"""Files holodeck cannot read as text: a ``.env`` or a YAML file that is not UTF-8, and a
``.env`` line that is not ``NAME=value``. Each is one line naming the file, the line and the
fix, with exit 2, instead of a codec's message with no file in it or a line silently skipped.
"""

from __future__ import annotations

import json
from pathlib import Path

from cli_helpers import error_line, run_holodeck, write

AGENT = (
    "name: ${TONE:-demo}\ntools:\n"
    "  - {type: vectorstore, name: kb, source: docs, description: '${GREETING}'}\n"
)
SAVE_AS_UTF8 = "save the file as UTF-8 (in your editor's encoding menu or settings)"


def test_a_dotenv_in_latin1_names_the_file_and_line(tmp_path: Path) -> None:
    write(tmp_path / "agent.yaml", AGENT)
    (tmp_path / ".env").write_bytes(b"# greeting\nGREETING=caf\xe9\n")
    assert error_line(run_holodeck("config", "show", cwd=tmp_path)) == (
        f"Error: .env:2: not UTF-8 text (byte 0xe9 at column 13); {SAVE_AS_UTF8}"
    )


def test_a_dotenv_line_that_is_not_name_value(tmp_path: Path) -> None:
    """The line is not echoed: it may be a key with its ``=`` forgotten."""
    write(tmp_path / "agent.yaml", AGENT)
    write(tmp_path / ".env", "GREETING=hi\n\n\nOPENAI_API_KEY sk-not-echoed\n")
    line = error_line(run_holodeck("config", "show", cwd=tmp_path))
    assert line == (
        "Error: .env:4: not a NAME=value line; write NAME=value (in quotes if the value has "
        'spaces or #: NAME="a b"), start a comment with #, or delete the line'
    )
    write(tmp_path / ".env", "GREETING='hi\n")
    assert error_line(run_holodeck("config", "show", cwd=tmp_path)).startswith(
        "Error: .env:1: not a NAME=value line;"
    )


def test_dotenv_forms_python_dotenv_reads_still_work(tmp_path: Path) -> None:
    """``export``, quotes, comments, a byte-order mark, and a name alone (which sets nothing,
    so the environment's value, if any, is used)."""
    write(tmp_path / "agent.yaml", AGENT)
    (tmp_path / ".env").write_text(
        "\ufeff# comment\nexport GREETING='hello there'  # trailing\nTONE\nOTHER=\n",
        encoding="utf-8",
    )
    result = run_holodeck("config", "show", "--json", cwd=tmp_path, env={"TONE": "calm"})
    assert result.returncode == 0, result.stderr
    shown = json.loads(result.stdout)
    assert shown["tools"][0]["description"] == "hello there"
    assert shown["name"] == "calm"


def test_an_agent_yaml_in_latin1_names_the_line(tmp_path: Path) -> None:
    (tmp_path / "agent.yaml").write_bytes(b"name: demo\n\ndescription: caf\xe9 docs\n")
    assert error_line(run_holodeck("config", "show", cwd=tmp_path)) == (
        f"Error: agent.yaml:3: not UTF-8 text (byte 0xe9 at column 17); {SAVE_AS_UTF8}"
    )


def test_an_agent_yaml_in_utf16_is_said_so(tmp_path: Path) -> None:
    (tmp_path / "agent.yaml").write_bytes("name: demo\n".encode("utf-16"))
    assert error_line(run_holodeck("config", "show", cwd=tmp_path)) == (
        f"Error: agent.yaml:1: UTF-16 text, not UTF-8; {SAVE_AS_UTF8}"
    )


def test_a_config_file_and_a_cases_file_not_in_utf8(tmp_path: Path) -> None:
    write(tmp_path / "agent.yaml", "name: demo\n")
    (tmp_path / "home" / ".holodeck").mkdir(parents=True)
    (tmp_path / "home" / ".holodeck" / "config.yaml").write_bytes(b"# r\xe9glages\n")
    assert error_line(run_holodeck("config", "show", cwd=tmp_path)).startswith(
        "Error: home/.holodeck/config.yaml:1: not UTF-8 text (byte 0xe9 at column 4);"
    )
    (tmp_path / "home" / ".holodeck" / "config.yaml").unlink()
    write(
        tmp_path / "agent.yaml",
        "name: demo\ntools:\n  - {type: vectorstore, name: kb, source: docs}\n"
        "test_cases_file: cases.yaml\n",
    )
    (tmp_path / "cases.yaml").write_bytes(b"- input: caf\xe9?\n  expected_content: [x]\n")
    assert error_line(run_holodeck("test", cwd=tmp_path)).startswith(
        "Error: cases.yaml:1: not UTF-8 text (byte 0xe9 at column 13);"
    )


def test_a_control_character_names_its_line(tmp_path: Path) -> None:
    write(tmp_path / "agent.yaml", "name: demo\ndescription: a\x01b\n")
    assert error_line(run_holodeck("config", "show", cwd=tmp_path)) == (
        "Error: agent.yaml:2: control character U+0001 at column 15 is not allowed in YAML; "
        "delete it (or write it as \\x01 in a double-quoted string)"
    )
