"""Passwords in URLs never reach a message or a log line."""

from __future__ import annotations

import pytest

from holodeck.redact import (
    redact,
    redact_url,
    remember_connection_string,
    remember_secret,
)


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


@pytest.mark.parametrize(
    ("url", "message"),
    [
        # redis-py quotes the part before '#' when it cannot parse the port
        ("redis://:Hunter2-pa55#frag@h:6379", "cannot cast to integer 'Hunter2-pa55'"),
        ("redis://:pw#frag@h:6379", "Port could not be cast to integer value as 'pw'"),
        ("redis://:Hunter2/pa55@h:6379/0", "Port could not be cast to integer value as 'Hunter2'"),
        (":Hunter2-pa55@h:6379", "redis:// please (got ':Hunter2-pa55@h:6379')"),  # no scheme
        ("redis:/:Hunter2-pa55@h:6379", "got 'redis:/:Hunter2-pa55@h:6379'"),  # one slash
        ("redis://:Hunter2 pa55@h:6379", "url 'redis://:Hunter2 pa55@h:6379' and 'pa55' alone"),
        ("redis://h/0?password=Hunter2-pa55&db=x", "password Hunter2-pa55 was given"),
        ("redis://:p%40ssw0rd@h", "decoded: p@ssw0rd"),
    ],
)  # fmt: skip
def test_remembered_secrets_are_hidden_whatever_the_shape(url: str, message: str) -> None:
    remember_connection_string(url)
    shown = redact(message)
    assert "***" in shown
    for secret in ("Hunter2", "pa55", "'pw'", "p@ssw0rd", "p%40ssw0rd"):
        assert secret not in shown, shown


def test_short_remembered_pieces_only_hide_whole_words() -> None:
    remember_connection_string("redis://:pw#frag@h:6379")
    assert redact("as 'pw' in pwd") == "as '***' in pwd"


def test_keys_are_hidden() -> None:
    remember_secret("k3y-Not-Shaped-Like-OpenAI")
    body = (
        "Error code: 401 - {'error': {'message': 'Incorrect API key provided: "
        "k3y-Not-Shaped-Like-OpenAI'}} sk-proj-abcdef123456 Authorization: Bearer abc.def-ghi"
    )
    shown = redact(body)
    assert "k3y-Not" not in shown and "abcdef123456" not in shown and "abc.def" not in shown
    assert redact("api_key=0123456789abcdef") == "api_key=***"
    assert redact("model.api_key: a literal API key is not allowed") == (
        "model.api_key: a literal API key is not allowed"
    )
    # Words of a message are not keys; values shaped like keys are (a digit, or a long run).
    message = "api_key: environment variable X is not set (or write ${OPENAI_API_KEY:-default})"
    assert redact(message) == message
    assert redact('{"api-key": "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefgh"}') == '{"api-key": "***"}'
    assert redact("api_key=abcdefg1") == "api_key=***"
