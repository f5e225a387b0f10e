"""Passwords in URLs never reach a message or a log line."""

from __future__ import annotations

import pytest

from holodeck.redact import redact, redact_url


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("...redis://u:secret@h:6379/0...", "...redis://u:***@h:6379/0..."),
        ("redis://:secret@h", "redis://:***@h"),
        ("rediss://default:s3cr3t@cache.example.com:6380/2", "rediss://default:***@cache.example.com:6380/2"),
        ("redis://u:p%40ss@h:1", "redis://u:***@h:1"),
        ("redis://u:p@ss/w0rd@h:1/0", "redis://u:***@h:1/0"),  # raw '@' and '/' in the password
        ("redis://h:6379/0?password=secret&db=1", "redis://h:6379/0?password=***&db=1"),
        ("postgres://app:pw@db/x", "postgres://app:***@db/x"),
        ("a redis://:one@h1 and b redis://:two@h2", "a redis://:***@h1 and b redis://:***@h2"),
    ],
)  # fmt: skip
def test_passwords_are_hidden(text: str, expected: str) -> None:
    assert redact(text) == expected
    assert redact_url(text) == expected


@pytest.mark.parametrize(
    "text",
    [
        "redis://h:6379/0",
        "redis://user@h:6379",
        "redis://127.0.0.1:6379",
        "no url here: a@b",
        "",
    ],
)
def test_text_without_password_is_unchanged(text: str) -> None:
    assert redact(text) == text


def test_secret_never_survives() -> None:
    for url in ("redis://:x@y@h", "redis://u::@h", "redis://u:a:b@h:1"):
        assert redact(url).count("***") == 1
        assert "@h" in redact(url)
