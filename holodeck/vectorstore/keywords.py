"""A user's words as a keyword query each backend runs as it means, whatever the words hold.

Natural language comes in; what goes to the full-text index is an OR of the query's words,
each quoted as one string, so no input can change the query's meaning (``AND``, ``NEAR``,
``*``, ``|``, ``@field:{...}``, braces and quotes are all just text). A word with inner
punctuation (``PURPLE-OTTER``, ``max_retries``, ``os.path.join``, ``v2.3.1``, ``--no-ff``)
becomes a phrase of its parts, which must match adjacent tokens: exact identifiers are found
by keyword even where the embedding model cannot tell them apart.
"""

from __future__ import annotations

import re

#: Most distinct words sent to the full-text index: a pasted 100 KB query stays a cheap
#: query (the dense side still reads the whole query).
MAX_TERMS = 64
#: Longer "words" (a pasted blob without spaces) name nothing a keyword could find.
MAX_WORD_CHARS = 200

#: Words no keyword search sends: the Query Engine's default stopwords (it never indexes
#: them, and one in an OR clause empties the whole clause), dropped on every backend so
#: both search the same words.
STOPWORDS = frozenset(
    {
        *("a", "an", "and", "are", "as", "at", "be", "but", "by", "for", "if", "in", "into"),
        *("is", "it", "no", "not", "of", "on", "or", "such", "that", "the", "their", "then"),
        *("there", "these", "they", "this", "to", "was", "will", "with"),
    }
)

_WORD_CHAR = re.compile(r"\w")
#: Characters RediSearch splits text on (its default separators), plus whitespace.
_REDIS_SEPARATORS = re.compile(r"[\s,.<>{}\[\]\"':;!@#$%^&*()\-+=~|/\\?`]+")


def query_words(query: str, max_terms: int = MAX_TERMS) -> list[str]:
    """The whitespace-separated words of ``query`` that hold a letter or digit, each once
    (case-insensitive), stopwords left out, at most ``max_terms`` of them, none longer than
    ``MAX_WORD_CHARS``."""
    seen: set[str] = set()
    words: list[str] = []
    for word in query.split():
        key = word.casefold()
        if (
            len(word) > MAX_WORD_CHARS
            or not _WORD_CHAR.search(word)
            or key in seen
            or key.strip("?!.,;:'\"()") in STOPWORDS
        ):
            continue
        seen.add(key)
        words.append(word)
        if len(words) >= max_terms:
            break
    return words


def fts5_expression(query: str) -> str | None:
    """An FTS5 MATCH expression ORing the query's words (None when no word is left: an empty
    MATCH is a syntax error, and no word means no keyword match)."""
    words = query_words(query)
    if not words:
        return None
    return " OR ".join('"' + word.replace('"', '""') + '"' for word in words)


def redis_expression(query: str, field: str) -> str | None:
    """A Query Engine text clause on ``field`` ORing the query's words (None: no word left).

    Each word is cut at the Query Engine's separators, as it cut the indexed text, and loses
    its stopwords (not indexed); one part is a term, several a quoted exact phrase. Parts
    hold only letters, digits and ``_``, escaped anyway, so no input reaches the syntax.
    """
    clauses: list[str] = []
    for word in query_words(query):
        parts = [
            _redis_escape(p)
            for p in _REDIS_SEPARATORS.split(word)
            if _WORD_CHAR.search(p) and p.casefold() not in STOPWORDS  # never indexed there
        ]
        if not parts:
            continue
        clauses.append(parts[0] if len(parts) == 1 else '"' + " ".join(parts) + '"')
    if not clauses:
        return None
    return f"@{field}:(" + " | ".join(dict.fromkeys(clauses)) + ")"


def _redis_escape(part: str) -> str:
    """Backslash every character the Query Engine could read as syntax."""
    return re.sub(r"([^\w])", r"\\\1", part)
