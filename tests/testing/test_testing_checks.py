"""The checks of one case, on real tool-call records and search results."""

from __future__ import annotations

from holodeck.agent.loop import ToolCallRecord
from holodeck.config.cases import ExpectedTool
from holodeck.results import SearchResult, pieces
from holodeck.testing.checks import (
    check_content,
    check_sources,
    check_tools,
    source_ranks,
)


def call(tool: str, query: str, *sources: str) -> ToolCallRecord:
    """A search of ``tool`` whose results are ``sources`` (paths below docs/<tool>/), ranked."""
    results = [
        SearchResult(
            rank=i,
            score=1 - i / 10,
            source_path=f"docs/{tool}/{s}",
            content=f"text of {s}",
            doc_id=s,
        )
        for i, s in enumerate(sources, start=1)
    ]
    return ToolCallRecord("", tool, {"query": query}, query, "", results, None, 0.0)


def expected(*items: object) -> list[ExpectedTool]:
    return [ExpectedTool.model_validate(item) for item in items]


def test_plain_names_and_args_by_substring_or_regex() -> None:
    calls = [call("guides", "Default RETRY attempts", "retries.md")]
    assert check_tools(expected("guides"), calls).passed
    assert check_tools(expected({"name": "guides", "args": {"query": "retry"}}), calls).passed
    ok = expected({"name": "guides", "args": {"query": {"regex": "^Default"}}})
    assert check_tools(ok, calls).passed

    wrong = check_tools(expected({"name": "guides", "args": {"query": {"regex": "^retry"}}}), calls)
    assert not wrong.passed
    assert "no guides call with query matching /^retry/" in wrong.detail
    assert "Default RETRY attempts" in wrong.detail  # the query it did get

    missing = check_tools(expected("ops"), calls)
    assert not missing.passed
    assert "ops was not called" in missing.detail


def test_one_call_must_pass_every_argument_check() -> None:
    calls = [call("guides", "retry policy"), call("guides", "backoff delays")]
    both = expected({"name": "guides", "args": {"query": {"contains": "retry"}}})
    assert check_tools(both, calls).passed
    split = expected({"name": "guides", "args": {"query": {"regex": "retry.*backoff"}}})
    assert not check_tools(split, calls).passed


def test_sources_match_project_or_tool_relative_paths_at_their_best_rank() -> None:
    calls = [
        call("guides", "q", "scheduling.md", "retries.md"),
        call("guides", "q2", "retries.md"),
    ]
    ranks = source_ranks(["docs/guides/retries.md", "./scheduling.md", "nowhere.md"], calls)
    assert ranks == {"docs/guides/retries.md": 1, "./scheduling.md": 1, "nowhere.md": None}

    failed = check_sources(ranks, calls, exists=lambda s: s != "nowhere.md")
    assert not failed.passed
    assert "not retrieved: nowhere.md (no such file)" in failed.detail
    assert "docs/guides/scheduling.md (#1)" in failed.detail


def test_sources_match_escaped_names_and_windows_separators() -> None:
    """A case names an odd file as holodeck shows it (``caf\\xe9.md``); a backslash that is
    not such an escape still reads as a Windows separator, ``\\n`` included."""
    calls = [call("guides", "q", "caf\\xe9.md", "notes/new.md", "caf\\\\xe9.md")]
    ranks = source_ranks(
        ["docs/guides/caf\\xe9.md", "docs\\guides\\notes\\new.md", "caf\\\\xe9.md"], calls
    )
    assert list(ranks.values()) == [1, 2, 3]


def test_content_ignores_case_and_line_breaks() -> None:
    text = "Without a retry block a job gets **3 attempts\nin   total**."
    assert check_content(["3 ATTEMPTS in total"], text, "the answer").passed
    missing = check_content(["3 attempts", "10 attempts"], text, "the answer")
    assert not missing.passed
    assert missing.detail == "not in the answer: '10 attempts'"


def test_passages_keep_wrapped_sentences_whole_and_rows_apart() -> None:
    text = (
        "# Retry policy\n\nA run fails when its command exits\nwith a non-zero code. It is then"
        " retried.\n\n| Plan | Price |\n| Team | 49 |\n- first item\n  continued\n"
    )
    assert pieces(text) == [
        "# Retry policy",
        "A run fails when its command exits with a non-zero code.",
        "It is then retried.",
        "| Plan | Price |",
        "| Team | 49 |",
        "- first item continued",
    ]


def test_the_original_holodecks_matchers_fuzzy_percent_regex_on_numbers_and_count() -> None:
    """As the original's matchers: fuzzy reads ``35%`` as 0.35 and ignores case, spaces and
    thousands separators; a regex also checks a number's text; a literal is equal (an int
    and the same float too); ``count`` calls must each pass every check."""

    def rate(value: object) -> ToolCallRecord:
        return ToolCallRecord("", "calc", {"rate": value, "n": 3}, None, "", [], None, 0.0)

    calls = [rate(0.35), rate("35 %"), rate(0.5)]
    fuzzy = expected({"name": "calc", "args": {"rate": {"fuzzy": "35%"}}, "count": 2})
    assert check_tools(fuzzy, calls).passed
    three = expected({"name": "calc", "args": {"rate": {"fuzzy": "35%"}}, "count": 3})
    failed = check_tools(three, calls)
    assert not failed.passed
    assert failed.detail.startswith("2 calc calls with rate like '35%', not 3")
    numbers = expected({"name": "calc", "args": {"n": {"regex": "^[0-9]$"}, "rate": 0.5}})
    assert check_tools(numbers, calls).passed
    literal = expected({"name": "calc", "args": {"n": 3.0}, "count": 3})
    assert check_tools(literal, calls).passed
