"""Every validation rule of the contract: a wrong value gives exit 2 and one line naming the
file, the line, the field path and what would be valid; never a traceback."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from cli_helpers import run_holodeck, write

from holodeck.config.loader import load_project

BASE = """
name: demo
tools:
  - type: vectorstore
    name: docs
    source: data/docs/
{extra}
"""

#: A model: block up to its api_key value.
KEY_OF = "model:\n  provider: openai\n  name: gpt-4o\n  api_key: "

CASES = [
    # (id, yaml, line, expected fragments)
    (
        "type",
        BASE.format(extra="").replace("type: vectorstore", "type: vectorsearch"),
        3,
        ["tools[0].type", "'vectorstore'", "vectorsearch"],
    ),
    (
        "name-chars",
        BASE.format(extra="").replace("name: docs", "name: my-docs"),
        4,
        ["tools[0].name", "letters, digits and underscores", "my-docs"],
    ),
    (
        "name-empty",
        BASE.format(extra="").replace("name: docs", "name: ''"),
        4,
        ["tools[0].name", "letters, digits and underscores"],
    ),
    (
        "source-missing",
        BASE.format(extra="").replace("    source: data/docs/\n", ""),
        3,
        ["tools[0].source", "is required"],
    ),
    (
        "embedding-model",
        BASE.format(extra="    embedding_model: text-embedding-3-small"),
        6,
        ["tools[0].embedding_model", "text-embedding-3-small", "all-MiniLM-L6-v2"],
    ),
    (
        "top-k-zero",
        BASE.format(extra="    top_k: 0"),
        6,
        ["tools[0].top_k", "greater than or equal to 1"],
    ),
    ("top-k-text", BASE.format(extra="    top_k: many"), 6, ["tools[0].top_k", "integer"]),
    (
        "top-k-big",
        BASE.format(extra="    top_k: 1000"),
        6,
        ["tools[0].top_k", "less than or equal to 100"],
    ),
    (
        "min-score",
        BASE.format(extra="    min_similarity_score: 1.5"),
        6,
        ["tools[0].min_similarity_score", "less than or equal to 1"],
    ),
    (
        "connection-string",
        BASE.format(
            extra="    database:\n      provider: redis\n      connection_string: http://h:6379"
        ),
        8,
        ["tools[0].database.connection_string", "redis://", "rediss://"],
    ),
    (
        "provider",
        BASE.format(
            extra="    database:\n      provider: mysql\n      connection_string: redis://h"
        ),
        7,
        ["tools[0].database.provider", "'redis'"],
    ),
    (
        "algorithm",
        BASE.format(
            extra="    database:\n      provider: redis\n"
            "      connection_string: redis://h\n"
            "      vector_algorithm: IVF"
        ),
        9,
        ["tools[0].database.vector_algorithm", "'HNSW'", "'FLAT'"],
    ),
    (
        "metric",
        BASE.format(
            extra="    database:\n      provider: redis\n"
            "      connection_string: redis://h\n"
            "      distance_metric: DOT"
        ),
        9,
        ["tools[0].database.distance_metric", "'COSINE'", "'L2'", "'IP'"],
    ),
    (
        "index-name",
        BASE.format(
            extra="    database:\n      provider: redis\n"
            "      connection_string: redis://h\n"
            "      index_name: 'my index*'"
        ),
        9,
        ["tools[0].database.index_name", "letters, digits, '_', '.' and '-'", "my index*"],
    ),
    (
        "unknown-key",
        BASE.format(extra="    topk: 3"),
        6,
        ["tools[0].topk", "unknown key", "did you mean 'top_k'"],
    ),
    (
        "overlap",
        BASE.format(extra="    chunk_size: 100\n    chunk_overlap: 100"),
        3,
        ["tools[0]", "chunk_overlap (100) must be smaller than chunk_size (100)"],
    ),
    (
        "duplicate-names",
        BASE.format(extra="  - type: vectorstore\n    name: docs\n    source: other/"),
        2,
        ["tools", "unique", "'docs'"],
    ),
    (
        "instructions",
        BASE.format(extra="instructions:\n  inline: hi\n  file: p.md"),
        6,
        ["instructions", "exactly one of 'inline' or 'file'"],
    ),
    (
        "literal-api-key",
        BASE.format(extra="model:\n  provider: openai\n  name: gpt-4o\n  api_key: sk-abc123"),
        9,
        ["model.api_key", "${OPENAI_API_KEY}"],
    ),
    (
        "api-key-default",  # the default is a literal key in the file
        BASE.format(extra=KEY_OF + "${OPENAI_API_KEY:-sk-abc123}"),
        9,
        ["model.api_key", "exactly one ${VAR} reference without a default"],
    ),
    (
        "api-key-around-variable",  # a literal key around an empty variable
        BASE.format(extra=KEY_OF + "sk-abc123${NOPE:-}"),
        9,
        ["model.api_key", "exactly one ${VAR} reference without a default"],
    ),
    (
        "api-key-two-variables",
        BASE.format(extra=KEY_OF + "${A}${B}"),
        9,
        ["model.api_key", "exactly one ${VAR} reference without a default"],
    ),
    ("agent-name", BASE.format(extra="").replace("name: demo\n", ""), 1, ["name", "is required"]),
]


@pytest.mark.parametrize(
    ("yaml_text", "line", "fragments"), [c[1:] for c in CASES], ids=[c[0] for c in CASES]
)
def test_wrong_value_is_one_clear_line(
    tmp_path: Path, yaml_text: str, line: int, fragments: list[str]
) -> None:
    write(tmp_path / "agent.yaml", yaml_text)
    result = run_holodeck("config", "show", cwd=tmp_path)
    assert result.returncode == 2, result.stdout + result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith(f"Error: agent.yaml:{line}: "), lines[0]
    for fragment in fragments:
        assert fragment in lines[0], lines[0]
    assert "Traceback" not in result.stderr
    assert "sk-abc123" not in result.stderr


def test_verbose_shows_the_traceback(tmp_path: Path) -> None:
    write(tmp_path / "agent.yaml", BASE.format(extra="    top_k: 0"))
    result = run_holodeck("-v", "config", "show", cwd=tmp_path)
    assert result.returncode == 2
    assert "Traceback" in result.stderr


def test_source_existence_is_checked_at_initialization_not_load(tmp_path: Path) -> None:
    write(tmp_path / "agent.yaml", BASE.format(extra=""))
    assert run_holodeck("config", "show", cwd=tmp_path).returncode == 0
    result = run_holodeck("ingest", cwd=tmp_path)
    assert result.returncode == 2
    assert "data/docs/ does not exist" in result.stderr
    assert "Traceback" not in result.stderr


def test_error_in_global_config_names_that_file(tmp_path: Path) -> None:
    write(tmp_path / "agent.yaml", BASE.format(extra=""))
    write(
        tmp_path / ".holodeck" / "config.yaml",
        "vectorstore:\n  provider: redis\n  connection_string: redis://h\n  index: x\n",
    )
    result = run_holodeck("config", "show", cwd=tmp_path)
    assert result.returncode == 2
    assert result.stderr.startswith(
        "Error: .holodeck/config.yaml:4: vectorstore.index: unknown key"
    )
    assert "did you mean 'index_name'" in result.stderr


def test_invalid_yaml_names_the_line(tmp_path: Path) -> None:
    write(tmp_path / "agent.yaml", "name: demo\ntools:\n  - type: vectorstore\n   name: x\n")
    result = run_holodeck("config", "show", cwd=tmp_path)
    assert result.returncode == 2
    assert result.stderr.startswith("Error: agent.yaml:4: invalid YAML")


def test_missing_agent_file(tmp_path: Path) -> None:
    (tmp_path / ".git").mkdir()  # the search for agent.yaml stops here
    result = run_holodeck("config", "show", cwd=tmp_path)
    assert result.returncode == 2
    assert f"no agent.yaml in {tmp_path.resolve()}" in result.stderr


@pytest.mark.parametrize(
    ("extra", "shown"),
    [
        ("", "256 tokens (all the model reads; the default is 512)"),
        ("    chunk_size: 512", "256 tokens (asked 512; the model reads 256)"),
        ("    chunk_size: 200", "200 tokens"),
    ],
)
def test_config_show_says_asked_only_when_agent_yaml_asked(
    tmp_path: Path, extra: str, shown: str
) -> None:
    write(tmp_path / "agent.yaml", BASE.format(extra=extra))
    result = run_holodeck("config", "show", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert f"  chunk size:      {shown}\n" in result.stdout


REPO = Path(__file__).resolve().parents[2]


def test_text_fields_keep_what_yaml_would_read_as_a_date_number_or_boolean(tmp_path: Path) -> None:
    """Unquoted ``2024-06-01``, ``1.10`` and ``yes`` in text fields are the text written."""
    write(
        tmp_path / "agent.yaml",
        "name: 2024\ndescription: yes\nmodel:\n  provider: azure_openai\n  name: 4.0\n"
        "  endpoint: https://example.openai.azure.com\n  api_version: 2024-06-01\n"
        "tools:\n  - {type: vectorstore, name: docs, source: data, description: 1.10}\n",
    )
    result = run_holodeck("config", "show", "--json", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    shown = json.loads(result.stdout)
    assert (shown["name"], shown["model"]["name"]) == ("2024", "4.0")
    assert shown["tools"][0]["description"] == "1.10"  # not 1.1
    project = load_project(tmp_path / "agent.yaml")
    assert project.agent.model is not None and project.agent.model.api_version == "2024-06-01"
    assert project.agent.description == "yes"
    # A number where a number belongs is still one (and a wrong one still refused).
    write(tmp_path / "agent.yaml", BASE.format(extra="    top_k: 1.10"))
    refused = run_holodeck("config", "show", cwd=tmp_path)
    assert refused.returncode == 2 and "tools[0].top_k" in refused.stderr


def test_the_examples_model_section_loads_when_uncommented(tmp_path: Path) -> None:
    text = (REPO / "agent.yaml.example").read_text()
    lines = text.splitlines()
    start = lines.index("# model:")
    for i in range(start, start + 8):  # the commented block, its optional lines included
        line = lines[i]
        lines[i] = "  " + line[6:] if line.startswith("#   # ") else line.removeprefix("# ")
    shutil.copytree(REPO / "examples", tmp_path / "examples")
    uncommented = "\n".join(lines) + "\n"
    assert '  api_version: "2024-06-01"' in uncommented
    for text in (uncommented, uncommented.replace('"2024-06-01"', "2024-06-01")):
        write(tmp_path / "agent.yaml", text)
        write(tmp_path / ".env", "OPENAI_API_KEY=sk-test-not-a-real-key\n")
        result = run_holodeck("config", "show", cwd=tmp_path)
        assert result.returncode == 0, result.stderr
        model = load_project(tmp_path / "agent.yaml").agent.model
        assert model is not None and model.api_version == "2024-06-01"


def test_test_cases_file_naming_a_folder_says_so(tmp_path: Path) -> None:
    write(tmp_path / "agent.yaml", BASE.format(extra="test_cases_file: cases"))
    (tmp_path / "cases").mkdir()
    result = run_holodeck("test", cwd=tmp_path)
    assert result.returncode == 2, result.stdout + result.stderr
    assert result.stderr.strip() == (
        "Error: agent.yaml:6: test_cases_file: cases is a folder, not a file; name the YAML "
        "file of test cases in it (path relative to agent.yaml)"
    )


def _all_subclasses(cls: type) -> list[type]:
    found = []
    for sub in cls.__subclasses__():
        found += [sub, *_all_subclasses(sub)]
    return found


def test_every_number_of_the_config_refuses_a_boolean() -> None:
    """pydantic reads ``true`` as 1 where a number goes (``max_text_chars: true`` was the
    limit 1, issue 61 item 3): every int and float field of every config model refuses it,
    a field added later included."""
    import types
    import typing

    import pydantic

    import holodeck.config.loader  # noqa: F401  (imports every config model)
    from holodeck.config.base import StrictModel

    def numeric(annotation: object) -> bool:
        if typing.get_origin(annotation) in (typing.Union, types.UnionType):
            members = [a for a in typing.get_args(annotation) if a is not type(None)]
            return bool(members) and all(numeric(a) for a in members)
        return annotation in (int, float)

    checked = []
    for model in _all_subclasses(StrictModel):
        for name, field in model.model_fields.items():
            if not numeric(field.annotation):
                continue
            checked.append(f"{model.__name__}.{name}")
            with pytest.raises(pydantic.ValidationError) as refused:
                model.model_validate({name: True})
            mine = [e for e in refused.value.errors() if e["loc"][-1:] == (name,)]
            assert [e["type"] for e in mine] == ["bool_for_number"], (model, name, mine)
    assert "FileLimits.max_text_chars" in checked and "CodeMetric.timeout" in checked
    assert len(checked) > 20
