"""Loading and selecting test cases: every mistake is one line naming the file and line."""

from __future__ import annotations

from pathlib import Path

import pytest
from cli_helpers import write

from holodeck.config.cases import TestCase
from holodeck.config.loader import load_project
from holodeck.errors import ConfigError
from holodeck.testing.cases import load_cases, select_cases

HEAD = """
name: demo
tools:
  - type: vectorstore
    name: guides
    source: docs/
"""


@pytest.fixture(autouse=True)
def _home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.chdir(tmp_path)


def cases_of(tmp_path: Path, agent: str) -> list[TestCase]:
    return load_cases(load_project(write(tmp_path / "agent.yaml", HEAD + agent)))


def error_of(tmp_path: Path, agent: str) -> str:
    with pytest.raises(ConfigError) as info:
        cases_of(tmp_path, agent)
    return str(info.value)


def test_inline_then_file_cases_in_order(tmp_path: Path) -> None:
    write(
        tmp_path / "cases.yaml",
        """
        - name: from-file
          input: How do retries work?
          expected_tools: [guides]
        """,
    )
    cases = cases_of(
        tmp_path,
        """
test_cases_file: cases.yaml
test_cases:
  - name: inline
    input: What is a run?
    expected_tools:
      - guides
      - name: guides
        args: {query: run}
      - name: guides
        args: {query: {regex: "^What"}}
""",
    )
    assert [c.name for c in cases] == ["inline", "from-file"]
    tools = cases[0].expected_tools or []
    assert [t.name for t in tools] == ["guides"] * 3
    assert tools[1].args and tools[1].args["query"].contains == "run"
    assert tools[2].args and tools[2].args["query"].regex == "^What"


def test_mapping_form_of_the_cases_file(tmp_path: Path) -> None:
    write(
        tmp_path / "more" / "cases.yaml",
        """
        test_cases:
          - name: mapped
            input: What is a run?
            expected_content: [run]
        """,
    )
    cases = cases_of(tmp_path, "test_cases_file: more/cases.yaml\n")
    assert [c.name for c in cases] == ["mapped"]


def test_unknown_tool_names_the_case_and_line(tmp_path: Path) -> None:
    message = error_of(
        tmp_path,
        """
test_cases:
  - name: first
    input: hello
    expected_tools: [guides, faq]
""",
    )
    assert message == (
        "agent.yaml:10: test_cases[0].expected_tools[1]: case 'first': no tool named 'faq' "
        "(tools: guides)"
    )


def test_unknown_argument_and_bad_regex(tmp_path: Path) -> None:
    message = error_of(
        tmp_path,
        """
test_cases:
  - name: first
    input: hello
    expected_tools:
      - name: guides
        args: {question: retry}
""",
    )
    assert message.startswith("agent.yaml:12: test_cases[0].expected_tools[0].args.question:")
    assert "guides takes no argument 'question' (arguments: query)" in message

    message = error_of(
        tmp_path,
        """
test_cases:
  - name: first
    input: hello
    expected_tools:
      - name: guides
        args:
          query: {regex: "retr(y"}
""",
    )
    assert message.startswith("agent.yaml:13: test_cases[0].expected_tools[0].args.query.regex:")
    assert "not a valid regular expression" in message


def test_errors_in_the_cases_file_name_that_file_and_line(tmp_path: Path) -> None:
    write(
        tmp_path / "cases.yaml",
        """
        - name: ok
          input: What is a run?
          expected_content: [run]
        - name: typo
          inpt: What is a job?
        """,
    )
    message = error_of(tmp_path, "test_cases_file: cases.yaml\n")
    assert message.startswith(
        "cases.yaml:5: test_cases[1].inpt: unknown key; did you mean 'input'?"
    )
    write(
        tmp_path / "cases.yaml",
        """
        - name: ok
          input: What is a run?
          expectd_content: [run]
        """,
    )
    message = error_of(tmp_path, "test_cases_file: cases.yaml\n")
    assert message.startswith("cases.yaml:3: test_cases[0].expectd_content: unknown key;")
    assert "did you mean 'expected_content'?" in message


def test_missing_file_duplicates_empty_and_pointless_cases(tmp_path: Path) -> None:
    assert error_of(tmp_path, "test_cases_file: nope.yaml\n") == (
        "agent.yaml:6: test_cases_file: nope.yaml not found (path relative to agent.yaml)"
    )
    write(tmp_path / "cases.yaml", "- {name: same, input: b, expected_content: [x]}\n")
    message = error_of(
        tmp_path,
        """
test_cases_file: cases.yaml
test_cases:
  - {name: same, input: a, expected_content: [x]}
""",
    )
    assert message.startswith("cases.yaml:1: test_cases[0].name: test case names must be unique")
    assert "no test cases; add test_cases:" in error_of(tmp_path, "")
    message = error_of(tmp_path, "test_cases:\n  - {name: idle, input: hi}\n")
    assert message.startswith(
        "agent.yaml:7: test_cases[0]: case 'idle' checks nothing: without a model: it needs at "
        "least one of"
    )


def test_select_by_substring_glob_and_limit() -> None:
    cases = [
        TestCase(name=n, input="q", expected_content=["x"])
        for n in ("retries-default", "retries-backoff", "plans")
    ]
    assert [c.name for c in select_cases(cases, ("RETRIES",))] == [
        "retries-default",
        "retries-backoff",
    ]
    assert [c.name for c in select_cases(cases, ("*back*", "plans"))] == [
        "retries-backoff",
        "plans",
    ]
    assert [c.name for c in select_cases(cases, (), limit=2)] == [
        "retries-default",
        "retries-backoff",
    ]
    with pytest.raises(ConfigError, match="-k 'nothing': no test case name matches"):
        select_cases(cases, ("nothing",))
