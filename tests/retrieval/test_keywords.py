"""Keyword queries: a user's words, quoted so no input changes the query's meaning."""

from __future__ import annotations

from holodeck.vectorstore.keywords import (
    MAX_TERMS,
    fts5_expression,
    query_words,
    redis_expression,
)


def test_words_are_quoted_deduplicated_and_stopwords_dropped() -> None:
    assert fts5_expression('What is the "max_retries" of E1234?') == (
        '"What" OR """max_retries""" OR "E1234?"'
    )
    assert query_words("Retry retry RETRY the of") == ["Retry"]


def test_queries_with_nothing_searchable_send_nothing() -> None:
    for query in ("", "   ", "*", "|", "- - --", "the of and", '"'):
        assert fts5_expression(query) is None, query
        assert redis_expression(query, "words") is None, query


def test_long_queries_are_capped() -> None:
    words = [f"w{i}" for i in range(500)]
    assert len(query_words(" ".join(words))) == MAX_TERMS
    assert query_words("x" * 100_000) == []


def test_redis_clauses_are_terms_or_exact_phrases_and_escaped() -> None:
    assert redis_expression("PURPLE-OTTER os.path.join max_retries", "words") == (
        '@words:("PURPLE OTTER" | "os path join" | max_retries)'
    )
    assert redis_expression("--no-ff", "words") == "@words:(ff)"  # "no" is never indexed
    assert redis_expression("@tenant_id:{*} | secret", "words") == "@words:(tenant_id | secret)"
    assert redis_expression("naïve…café", "words") == "@words:(naïve\\…café)"
