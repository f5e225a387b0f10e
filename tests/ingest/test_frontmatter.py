"""Front matter: the tags and language a writer puts atop a markdown file, kept out of the text."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from holodeck.ingest.frontmatter import language_of, split_front_matter, tags_of

EXAMPLE_DOCS = Path(__file__).resolve().parents[2] / "examples" / "docs"


def test_metadata_is_parsed_and_removed_from_the_body() -> None:
    text = "---\ntitle: Retries\ntags: [reliability, retries]\nlanguage: en\n---\n# Retries\nBody\n"

    meta, body = split_front_matter(text)

    assert meta == {"title": "Retries", "tags": ["reliability", "retries"], "language": "en"}
    assert body == "# Retries\nBody\n"
    assert tags_of(meta) == ["reliability", "retries"]
    assert language_of(meta) == "en"


def test_windows_line_endings_and_bom_are_accepted() -> None:
    meta, body = split_front_matter("\ufeff---\r\nlang: fr\r\n---\r\nBonjour\r\n")

    assert (meta, body) == ({"lang": "fr"}, "Bonjour\r\n")
    assert language_of(meta) == "fr"


@pytest.mark.parametrize(
    "text",
    [
        "# Title\n\nNo front matter here.\n",
        "Intro\n---\ntags: [a]\n---\n",  # '---' not on the first line: a rule, not metadata
        "---\ntags: [a]\nnever closed\n",
    ],
)
def test_text_without_front_matter_is_untouched(text: str) -> None:
    assert split_front_matter(text) == ({}, text)


def test_empty_front_matter_gives_no_metadata() -> None:
    assert split_front_matter("---\n---\nBody\n") == ({}, "Body\n")


def test_bad_yaml_keeps_the_text_and_warns_with_the_file_and_line(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.WARNING, logger="holodeck.ingest")
    text = "---\ntitle: ok\ntags: [unclosed, list\n---\n# Body\n"

    meta, body = split_front_matter(text, name="guides/setup.md")

    assert (meta, body) == ({}, text)
    [message] = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert message.startswith("Ignored front matter in guides/setup.md: not valid YAML (")


def test_front_matter_that_is_not_a_mapping_is_ignored_with_a_warning(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.WARNING, logger="holodeck.ingest")
    text = "---\n- just\n- a list\n---\nBody\n"

    assert split_front_matter(text) == ({}, text)
    assert any("not a YAML mapping" in r.getMessage() for r in caplog.records)


@pytest.mark.parametrize(
    ("tags", "expected"),
    [
        (["a", "b"], ["a", "b"]),
        ("api, billing ,  ", ["api", "billing"]),
        ("single", ["single"]),
        ([2024, " ops ", None, ""], ["2024", "ops"]),
        (None, []),
    ],
)
def test_tags_accept_a_list_or_a_comma_separated_string(tags: object, expected: list[str]) -> None:
    assert tags_of({"tags": tags}) == expected


def test_no_tags_and_no_language_when_absent() -> None:
    assert tags_of({}) == []
    assert language_of({}) is None
    assert language_of({"language": "  "}) is None


def test_language_wins_over_lang() -> None:
    assert language_of({"language": "de", "lang": "en"}) == "de"


def test_example_doc_front_matter() -> None:
    meta, body = split_front_matter(
        (EXAMPLE_DOCS / "guides" / "retries.md").read_text(encoding="utf-8")
    )

    assert tags_of(meta) == ["reliability", "retries", "failures"]
    assert language_of(meta) == "en"
    assert body.lstrip().startswith("# Retries and the dead-letter queue")
