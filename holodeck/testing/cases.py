"""The test cases of a project: ``test_cases`` in agent.yaml plus ``test_cases_file``.

Every mistake is a ``ConfigError`` naming the file and line of the case (the agent file or
the cases file), so a typo in a case reads like any other config error: exit 2, one line.
Cases are checked against the project's tools here, before anything is ingested or run.
"""

from __future__ import annotations

import fnmatch
import logging
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml
from pydantic import field_validator

from holodeck.config.base import StrictModel, require_unique_names
from holodeck.config.cases import TestCase, Turn, unique_case_names
from holodeck.config.compat import adapt_case_file
from holodeck.config.config_file import _read_yaml, _substitute_and_validate
from holodeck.config.envsubst import environment_for
from holodeck.config.files import file_label
from holodeck.config.loader import Project
from holodeck.config.tool_configs import FunctionToolConfig, McpToolConfig
from holodeck.config.yaml_lines import Loc, dotted, line_of
from holodeck.errors import ConfigError
from holodeck.evaluations.evaluator import case_metrics, metric_problem, reads_ground_truth
from holodeck.testing.files import file_text

log = logging.getLogger("holodeck.config")

#: Arguments a vectorstore tool takes (its function definition: ``tool_definition``).
TOOL_ARGUMENTS = ("query",)


class TestCaseFile(StrictModel):
    """A ``test_cases_file``: a list of cases, or a mapping with one ``test_cases:`` key."""

    __test__ = False  # not a pytest class

    test_cases: list[TestCase]

    @field_validator("test_cases")
    @classmethod
    def _unique(cls, cases: list[TestCase]) -> list[TestCase]:
        require_unique_names("test case", [c.name for c in cases if c.named])
        return cases


@dataclass
class _Origin:
    """Where a case was written, to point error lines at it."""

    label: str
    node: yaml.Node | None
    loc: Loc

    def line(self, *more: str | int) -> int:
        return line_of(self.node, (*self.loc, *more))

    def where(self, *more: str | int) -> str:
        return dotted((*self.loc, *more))

    def turn(self, index: int) -> _Origin:
        """The origin of one turn of a multi-turn case."""
        return _Origin(self.label, self.node, (*self.loc, "turns", index))


def load_cases(project: Project) -> list[TestCase]:
    """All cases, inline first, then the file's; names unique, tools and arguments known."""
    label = file_label(project.agent_path)
    _, agent_node = _read_yaml(project.agent_path, label)
    found: list[tuple[TestCase, _Origin]] = [
        (case, _Origin(label, agent_node, ("test_cases", i)))
        for i, case in enumerate(project.agent.test_cases or [])
    ]
    file_name = project.agent.test_cases_file
    if file_name:
        path = project.root / file_name
        if not path.is_file():
            line = line_of(agent_node, ("test_cases_file",))
            what = (
                "is a folder, not a file; name the YAML file of test cases in it"
                if path.is_dir()
                else "not found"
            )
            raise ConfigError(
                f"{label}:{line}: test_cases_file: {file_name} {what} (path relative to {label})"
            )
        found += _read_case_file(path, project.root)
    if not found:
        raise ConfigError(
            f"{label}: no test cases; add test_cases: (or test_cases_file:) to {label}, "
            "each with an input: (or turns:)"
        )
    seen: set[str] = set()
    for case, origin in found:
        if case.named and case.name in seen:
            raise ConfigError(
                f"{origin.label}:{origin.line('name')}: {origin.where('name')}: test case names "
                f"must be unique: {case.name!r} appears twice"
            )
        if case.named:
            seen.add(case.name)
        for j, step in enumerate(case.steps):
            where = origin if case.turns is None else origin.turn(j)
            _check_step(case, step, where, project)
            _check_files(case, step, where, project)
        _check_metrics(case.evaluations or [], origin, ("evaluations",), project)
        for j, turn in enumerate(case.turns or []):
            _check_metrics(turn.evaluations or [], origin.turn(j), ("evaluations",), project)
    evaluations = project.agent.evaluations
    if evaluations is not None:
        agent_origin = _Origin(label, agent_node, ("evaluations", "metrics"))
        _check_metrics(evaluations.metrics, agent_origin, (), project)
    cases = [case for case, _ in found]
    unique_case_names(cases)  # derived names of the file's cases too
    _warn_unread_ground_truths(cases, project, label)
    return cases


def _warn_unread_ground_truths(cases: list[TestCase], project: Project, label: str) -> None:
    """Say once which cases have a ground_truth nothing reads: no metric compares with it
    and no ground_truth_threshold asks for the similarity check (issue 60: opt-in)."""
    unread = [
        case.name
        for case in cases
        if any(
            step.ground_truth
            and step.ground_truth_threshold is None
            and project.agent.ground_truth_threshold is None
            and not any(reads_ground_truth(m) for m in case_metrics(project, step))
            for step in case.steps
        )
    ]
    if unread:
        shown = ", ".join(unread[:3]) + (f" and {len(unread) - 3} more" if len(unread) > 3 else "")
        log.warning(
            "%s: the ground_truth of %s (%s) is checked by nothing: no metric reads it and no "
            "ground_truth_threshold asks for the similarity check; add ground_truth_threshold: "
            "0.7 to %s (or to the case) to check it",
            label,
            "1 case" if len(unread) == 1 else f"{len(unread)} cases",
            shown,
            label,
        )


def _read_case_file(path: Path, root: Path) -> list[tuple[TestCase, _Origin]]:
    """Parse and validate a cases file; errors name that file and line."""
    label = file_label(path)
    data, node = _read_yaml(path, label)
    if data is None:
        raise ConfigError(f"{label}:1: the file is empty; it needs a list of test cases")
    if isinstance(data, list) and node is not None:
        # Validate as {test_cases: [...]} so every location has the same shape; wrap the
        # node the same way so line numbers still resolve.
        key = yaml.ScalarNode("tag:yaml.org,2002:str", "test_cases", start_mark=node.start_mark)
        node = yaml.MappingNode("tag:yaml.org,2002:map", [(key, node)], start_mark=node.start_mark)
        data = {"test_cases": data}
    elif not isinstance(data, dict):
        raise ConfigError(
            f"{label}:1: the top level must be a list of test cases (or 'test_cases:' with one)"
        )
    adapted = adapt_case_file(data, node, label)
    for line in adapted.warnings:
        log.warning("%s", line)
    env = environment_for(root)
    parsed: TestCaseFile
    parsed, _ = _substitute_and_validate(TestCaseFile, adapted.data, env, node, label)
    return [
        (case, _Origin(label, node, ("test_cases", i))) for i, case in enumerate(parsed.test_cases)
    ]


def _check_step(case: TestCase, step: Turn, origin: _Origin, project: Project) -> None:
    """Every expected tool must exist and be checked only on arguments it takes.

    Without a model only knowledge bases are searched, so a step must check something they
    return; with one, a step without checks passes when the agent answers. An MCP server's
    tools are known once it runs, so names that may be theirs are checked then.
    """
    names = [tool.name for tool in project.tools]
    llm = project.agent.model is not None
    gauged = step.ground_truth and project.agent.ground_truth_threshold is not None
    if not llm and not (step.has_checks or gauged) and project.agent.evaluations is None:
        raise ConfigError(
            f"{origin.label}:{origin.line()}: {origin.where()}: case {case.name!r} checks "
            "nothing: without a model: it needs at least one of expected_tools, "
            "expected_sources, expected_content, evaluations (or evaluations: in "
            "agent.yaml), ground_truth with a ground_truth_threshold"
        )
    functions = {t.name: t for t in project.agent.tools_of(FunctionToolConfig)}
    servers = [t.name for t in project.agent.tools_of(McpToolConfig)]
    callable_names = [*names, *functions, *servers] if llm else names
    for j, expected in enumerate(step.expected_tools or []):
        where = f"{origin.label}:{origin.line('expected_tools', j)}: "
        where += f"{origin.where('expected_tools', j)}: case {case.name!r}"
        if expected.name not in callable_names and not (llm and servers):
            valid = ", ".join(callable_names) or "none"
            more = (
                " (without a model: only vectorstore tools are searched)"
                if expected.name in (*functions, *servers)
                else ""
            )
            raise ConfigError(f"{where}: no tool named {expected.name!r} (tools: {valid}){more}")
        if expected.name in names:
            allowed: tuple[str, ...] | None = TOOL_ARGUMENTS
        elif expected.name in functions and functions[expected.name].parameters is not None:
            allowed = tuple(functions[expected.name].parameters or {})
        else:
            allowed = None  # known when the function is imported or the server lists it
        for arg in expected.args or {}:
            if allowed is not None and arg not in allowed:
                raise ConfigError(
                    f"{origin.label}:{origin.line('expected_tools', j, 'args', arg)}: "
                    f"{origin.where('expected_tools', j, 'args', arg)}: case {case.name!r}: "
                    f"{expected.name} takes no argument {arg!r} "
                    f"(arguments: {', '.join(allowed) or 'none'})"
                )


def _check_files(case: TestCase, step: Turn, origin: _Origin, project: Project) -> None:
    """Every file of ``files:`` exists and converts (its pages and sheet there), and a
    model reads it: without one nothing would read the file."""
    for j, spec in enumerate(step.files or []):
        where = f"{origin.label}:{origin.line('files', j)}: {origin.where('files', j)}"
        if project.agent.model is None:
            raise ConfigError(
                f"{where}: case {case.name!r}: files: go to the model with the input, and "
                "without a model: holodeck test only searches; add a model:, or put the file "
                "in a knowledge base"
            )
        assert spec.path is not None
        if not (project.root / spec.path).is_file():
            raise ConfigError(
                f"{where}.path: {spec.path} not found (path relative to "
                f"{project.display(project.agent_path)})"
            )
        try:
            file_text(spec, project.root)
        except ConfigError as exc:
            raise ConfigError(f"{where}: {str(exc).removeprefix('files: ')}") from None


def _check_metrics(
    metrics: list[Any], origin: _Origin, prefix: tuple[str, ...], project: Project
) -> None:
    """Every enabled metric can run: it has a judge, and an answer when it reads one."""
    for j, metric in enumerate(metrics):
        problem = metric_problem(project, metric) if metric.enabled else None
        if problem:
            raise ConfigError(
                f"{origin.label}:{origin.line(*prefix, j)}: {origin.where(*prefix, j)}: {problem}"
            )


def select_cases(
    cases: list[TestCase], patterns: tuple[str, ...] = (), limit: int | None = None
) -> list[TestCase]:
    """The cases ``-k`` picks (any pattern matches), then the first ``--limit`` of them.

    A pattern is a case-insensitive substring of the name, or a glob when it holds * ? [.
    """
    chosen = [c for c in cases if not patterns or any(_matches(c.name, p) for p in patterns)]
    if patterns and not chosen:
        shown = " or ".join(repr(p) for p in patterns)
        raise ConfigError(
            f"-k {shown}: no test case name matches (cases: {', '.join(c.name for c in cases)})"
        )
    return chosen[:limit] if limit is not None else chosen


def _matches(name: str, pattern: str) -> bool:
    if any(ch in pattern for ch in "*?["):
        return fnmatch.fnmatchcase(name.casefold(), pattern.casefold())
    return pattern.casefold() in name.casefold()
