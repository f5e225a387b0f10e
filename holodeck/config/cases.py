"""The agent.yaml shape of a test case: an input (or the turns of a conversation) and the
checks its answers must pass.

The checks are a ground truth, the tools expected with their arguments' matches, sources,
content and evaluation metrics; a multi-turn case puts them in its turns. Loading and
running the cases is ``holodeck.testing``'s.
"""

from __future__ import annotations

import json
import re
from typing import Annotated, Any

from pydantic import Field, PrivateAttr, field_validator, model_validator

from holodeck.config.base import Int, MaybeFloat, ShortForm, StrictModel, require_unique_names
from holodeck.config.evaluations import Metric, unique_metrics

#: Seconds one ``regex`` check may run: a pattern that backtracks catastrophically
#: (``(a|aa)+$``) is stopped instead of hanging a CI job.
REGEX_SECONDS = 2.0


class RegexTimeout(RuntimeError):
    """A test case's regex ran past ``REGEX_SECONDS``: the case errors, naming it."""


class ArgMatch(StrictModel):
    """How one argument of a tool call is checked.

    Written as a plain string (``query: retry``, a case-insensitive substring), as
    ``{regex: "..."}`` (a search with Python's ``re`` syntax, run by the ``regex`` library
    under a time limit; add ``(?i)`` to ignore case), as ``{fuzzy: "206588"}`` (equal once
    case, spaces and thousands separators are ignored, numbers compared as numbers), or as
    any other value (``a: 206588``, ``flags: [x]``): equal to it, an integer and the same
    float being equal (the original HoloDeck's literal).
    """

    contains: str | None = Field(default=None, min_length=1)
    regex: str | None = Field(default=None, min_length=1)
    fuzzy: str | None = Field(default=None, min_length=1)
    equals: Any = None

    @model_validator(mode="before")
    @classmethod
    def _plain_value(cls, value: Any) -> Any:
        if isinstance(value, str):
            return {"contains": value}
        if isinstance(value, dict) and value and set(value) <= set(cls.model_fields):
            return value
        return {"equals": value}

    @classmethod
    def __get_pydantic_json_schema__(cls, core_schema: Any, handler: Any) -> Any:
        """Editors must accept the plain forms too."""
        return {"anyOf": [{"type": ["string", "number", "boolean", "array"]}, handler(core_schema)]}

    @field_validator("regex")
    @classmethod
    def _compiles(cls, value: str | None) -> str | None:
        if value is not None:
            import regex  # the engine that runs it checks it (imported when a case has one)

            try:
                regex.compile(value)
            except regex.error as exc:
                raise ValueError(f"not a valid regular expression: {exc}") from None
        return value

    @model_validator(mode="after")
    def _exactly_one(self) -> ArgMatch:
        given = [k for k in ("contains", "regex", "fuzzy", "equals") if k in self.model_fields_set]
        if len(given) != 1:
            raise ValueError("give a value, or exactly one of 'contains', 'regex' or 'fuzzy'")
        return self

    def matches(self, value: Any) -> bool:
        """Whether an argument's value passes this check."""
        if "equals" in self.model_fields_set:
            return _same_value(self.equals, value)
        if self.fuzzy is not None:
            return _fuzzy_key(self.fuzzy) == _fuzzy_key(value)
        if self.regex is not None:
            import regex

            if not isinstance(value, str):  # a number or a flag: its text, as the original
                value = json.dumps(value) if value is not None else ""

            try:  # a time limit, and the GIL released: Ctrl-C is never held up by a match
                found = regex.search(self.regex, value, timeout=REGEX_SECONDS, concurrent=True)
            except TimeoutError:
                raise RegexTimeout(
                    f"regex /{self.regex}/ took more than {REGEX_SECONDS:g} s on "
                    f"{value[:60]!r} and was stopped (it backtracks too much); simplify it"
                ) from None
            return found is not None
        assert self.contains is not None
        if not isinstance(value, str):
            return False
        return self.contains.casefold() in value.casefold()

    def describe(self) -> str:
        """How the check reads in a failure reason."""
        if "equals" in self.model_fields_set:
            return f"equal to {self.equals!r}"
        if self.fuzzy is not None:
            return f"like {self.fuzzy!r}"
        if self.regex is not None:
            return f"matching /{self.regex}/"
        return f"containing {self.contains!r}"


def _same_value(expected: Any, got: Any) -> bool:
    """Equality where 3 == 3.0 but never True == 1 (the YAML and the JSON may differ)."""
    if isinstance(expected, bool) or isinstance(got, bool):
        return type(expected) is type(got) and expected == got
    if isinstance(expected, list) and isinstance(got, list):
        return len(expected) == len(got) and all(map(_same_value, expected, got))
    if isinstance(expected, dict) and isinstance(got, dict):
        return expected.keys() == got.keys() and all(
            _same_value(expected[k], got[k]) for k in expected
        )
    return bool(expected == got)


_SEPARATORS = re.compile(r"[\s,_\u00a0\u202f]")


def _fuzzy_key(value: Any) -> str | float:
    """What a fuzzy match compares: a number when the text is one (``35%`` is 0.35, as in
    the original), else the folded text."""
    text = _SEPARATORS.sub("", str(value).casefold())
    number, percent = (text[:-1], True) if text.endswith("%") else (text, False)
    try:
        parsed = float(number)
    except ValueError:
        return text
    return round(parsed / 100 if percent else parsed, 12)


class ExpectedTool(ShortForm):
    """A tool that must be called: a plain name, or ``{name, args, count}``.

    ``args`` maps an argument (vectorstore tools take ``query``) to an ``ArgMatch``; ``count``
    calls (default 1) must pass every check. The name is a tool's ``name:``, or for an MCP
    server's tool its function name ``<server>__<tool>`` or the server's own ``<tool>`` name.
    """

    _short_key = "name"
    name: str = Field(min_length=1)
    args: dict[str, ArgMatch] | None = None
    count: Int = Field(default=1, ge=1, description="Calls that must match (at least).")


#: The original HoloDeck's file ``type``s, and the extensions each is read from.
FILE_TYPES = {
    "pdf": (".pdf",),
    "text": (".txt", ".md", ".json", ".html", ".htm"),
    "csv": (".csv",),
    "excel": (".xlsx",),
    "word": (".docx",),
    "powerpoint": (".pptx",),
}
_CELL_RANGE = re.compile(r"^[A-Za-z]{1,3}[1-9][0-9]*(?::[A-Za-z]{1,3}[1-9][0-9]*)?$")


class FileInput(StrictModel):
    """A file whose text is added to the message (the original HoloDeck's test-case
    ``files:``), converted as ingestion converts it; ``pages`` of a PDF (or slides of a
    deck), a ``sheet`` and a cell ``range`` of a workbook."""

    path: str | None = Field(default=None, min_length=1, description="Relative to agent.yaml.")
    url: str | None = None
    type: str = Field(description=f"One of: {', '.join(FILE_TYPES)}.")
    description: str | None = None
    pages: list[Annotated[int, Field(ge=1)]] | None = Field(default=None, min_length=1)
    sheet: str | None = Field(default=None, min_length=1)
    range: str | None = Field(default=None, description="Cells of the sheet, like A1:E100.")
    cache: bool | None = Field(default=None, description="The original's, for URLs (unused).")

    @field_validator("type")
    @classmethod
    def _known_type(cls, value: str) -> str:
        if value == "image":
            raise ValueError(
                "images are not read (holodeck sends the model text, with no OCR or vision); "
                "describe the image in input:"
            )
        if value not in FILE_TYPES:
            raise ValueError(f"unknown file type {value!r}; valid: {', '.join(FILE_TYPES)}")
        return value

    @field_validator("range")
    @classmethod
    def _cells(cls, value: str | None) -> str | None:
        if value is not None and not _CELL_RANGE.match(value):
            raise ValueError("write a cell range like A1:E100 (or one cell, like B2)")
        return value

    @model_validator(mode="after")
    def _local_file(self) -> FileInput:
        if self.url is not None:
            raise ValueError(
                "remote files are not fetched; download it next to agent.yaml and give its "
                "path: instead of url:"
            )
        if self.path is None:
            raise ValueError("give the file's path: (relative to agent.yaml)")
        if self.range is not None and self.type != "excel":
            raise ValueError("range: is for type: excel")
        return self


class Checks(StrictModel):
    """What one message of a test case must produce (a case's, or one turn's)."""

    ground_truth: str | None = Field(
        default=None,
        min_length=1,
        description="The expected answer: the reference the metrics read; compared by "
        "similarity too when a ground_truth_threshold is set (here or in agent.yaml).",
    )
    ground_truth_threshold: MaybeFloat = Field(
        default=None,
        ge=0.0,
        le=1.0,
        description="Check the ground_truth by similarity, at least this (overrides "
        "agent.yaml's ground_truth_threshold).",
    )
    expected_tools: list[ExpectedTool] | None = None
    expected_sources: list[str] | None = Field(
        default=None, description="Files, relative to the project root or to a tool's source."
    )
    expected_content: list[str] | None = None
    evaluations: list[Metric] | None = Field(
        default=None,
        description="Metrics for this case: added to evaluations.metrics, or overriding the "
        "agent's metric of the same kind.",
    )
    retrieval_context: list[Annotated[str, Field(min_length=1)]] | None = Field(
        default=None,
        min_length=1,
        description="Passages the rag and geval metrics judge instead of what the tools returned.",
    )
    files: list[FileInput] | None = Field(
        default=None,
        min_length=1,
        max_length=10,
        description="Files whose text is added to the input (a PDF's pages, a workbook's sheet).",
    )

    @property
    def has_checks(self) -> bool:
        """Whether anything is checked (without, an LLM turn passes when the agent answers).

        ``evaluations`` count; the agent-level ``evaluations:`` and ``ground_truth_threshold``
        are the caller's to add. A ``ground_truth`` is a check only with a threshold: without
        one it is the reference metrics read (as in the original HoloDeck).
        """
        gauged = self.ground_truth and self.ground_truth_threshold is not None
        checks = (gauged, self.expected_tools, self.expected_sources)
        return any(checks) or bool(self.expected_content or self.evaluations)

    @field_validator("evaluations")
    @classmethod
    def _unique_metrics(cls, metrics: list[Any] | None) -> list[Any] | None:

        return unique_metrics(metrics) if metrics else metrics


class Turn(Checks):
    """One message of a multi-turn test case and what its answer must show."""

    input: str = Field(min_length=1)


#: Characters of an input a derived case name keeps.
DERIVED_NAME_CHARS = 60
#: What a multi-turn case may hold besides its turns (the rest belongs to the turns).
_CASE_LEVEL_WITH_TURNS = ("evaluations", "ground_truth_threshold")


class TestCase(Checks):
    """One check of the agent: an input (or a conversation of turns) and what must come of it.

    ``name`` may be left out (as in the original HoloDeck): it is then derived from the input.
    A multi-turn case's ``evaluations`` apply to each turn (a turn's own win, by kind).
    """

    __test__ = False  # not a pytest class

    name: str = Field(
        default="", min_length=1, description="Unique; default: the start of the input."
    )
    input: str | None = Field(default=None, min_length=1, description="One message.")
    turns: list[Turn] | None = Field(
        default=None,
        min_length=1,
        description="A conversation, carried across turns; each turn is checked.",
    )
    _derived_name: bool = PrivateAttr(default=False)

    @model_validator(mode="after")
    def _input_or_turns(self) -> TestCase:
        if self.turns is None:
            if self.input is None:
                raise ValueError("a test case needs input: (a message) or turns: (a conversation)")
        elif self.input is not None:
            raise ValueError("give input: or turns:, not both (each turn has its own input:)")
        else:
            misplaced = [
                key
                for key in Checks.model_fields
                if key not in _CASE_LEVEL_WITH_TURNS and getattr(self, key)
            ]
            if misplaced:
                raise ValueError(f"with turns:, put {', '.join(misplaced)} in the turns they check")
        if not self.name:
            self.name = derived_name(self.first_input)
            self._derived_name = True
        return self

    @property
    def first_input(self) -> str:
        """The input of the case, or of its first turn."""
        if self.turns:
            return self.turns[0].input
        assert self.input is not None
        return self.input

    @property
    def named(self) -> bool:
        """Whether agent.yaml gave the name (a derived one may be made unique)."""
        return not self._derived_name

    @property
    def steps(self) -> list[Turn]:
        """The messages to send, each with its checks: the turns, or the case as one turn.

        A turn's evaluations are the case's, with the turn's own added or replacing one of
        the same kind; a turn without a ground_truth_threshold takes the case's.
        """
        if self.turns is None:
            checks = {k: getattr(self, k) for k in Checks.model_fields}
            return [Turn.model_construct(input=self.first_input, **checks)]
        steps = []
        for turn in self.turns:
            merged = {m.key: m for m in self.evaluations or []}
            merged.update({m.key: m for m in turn.evaluations or []})
            threshold = turn.ground_truth_threshold
            if threshold is None:
                threshold = self.ground_truth_threshold
            steps.append(
                turn.model_copy(
                    update={
                        "evaluations": list(merged.values()) or None,
                        "ground_truth_threshold": threshold,
                    }
                )
            )
        return steps


def derived_name(text: str) -> str:
    """A case name from its input: the first words, on one line."""
    flat = " ".join(text.split())
    if len(flat) <= DERIVED_NAME_CHARS:
        return flat
    cut = flat[: DERIVED_NAME_CHARS - 1].rsplit(" ", 1)[0]
    return cut + "…"


def unique_case_names(cases: list[TestCase]) -> None:
    """Refuse two cases given the same name; number derived names that collide (``x (2)``)."""
    require_unique_names("test case", [c.name for c in cases if c.named])
    taken = {c.name for c in cases if c.named}
    for case in cases:
        if case.named:
            continue
        name, n = case.name, 1
        while name in taken:
            n += 1
            name = f"{case.name} ({n})"
        case.name = name
        taken.add(name)
