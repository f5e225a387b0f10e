"""How text and queries become words, stems and identifiers: what every backend's keyword
index holds, and what a user's words ask it (each backend says it in its own syntax).

Indexed per chunk: ``words`` (the text with ``-``, ``_`` and ``.`` made spaces, so every word
is split and stemmed) and ``idents`` (only the compound tokens, ``PURPLE-OTTER``,
``max_retries``, ``os.path.join``, ``v2.3.1``, ``--no-ff``, each kept whole). A query asks for
every word part and every compound of the user's words, each quoted, ORed: no input can
change the query's meaning (``AND``, ``NEAR``, ``*``, ``|``, ``@field:{...}``, braces and
quotes are all just text: each backend quotes or escapes every term). As good as plain
stemmed words on prose, and identifiers asked inside a sentence are found far more often
(see benchmarks/README.md, 'Search quality').
"""

from __future__ import annotations

import functools
import itertools
import math
import re
import threading
import unicodedata
from collections import Counter
from collections.abc import Callable, Collection, Sequence
from typing import Any

from stopwords import get_stopwords

#: FTS5's BM25 constants (fts5_aux.c), for every score holodeck computes beside FTS5's own
#: (the postings file, keyword feedback, term pairs): a term adds less than ``(k1 + 1) x`` its
#: IDF to a row's score however often the row holds it.
BM25_K1 = 1.2
BM25_B = 0.75
#: Most terms taken from a query (a term it repeats is then asked up to twice as often as
#: the others, ``weighted``): a pasted 100 KB query stays a cheap query (the dense side
#: still embeds the query as the model reads it).
MAX_TERMS = 64
#: Longer terms (a pasted blob without spaces) name nothing a keyword could find.
MAX_TERM_CHARS = 200
#: An identifier held by more chunks than this is a common compound (``two-dimensional``),
#: not a name to look up: its holders get no precedence.
EXACT_MAX = 10
#: A term the query says ``n`` times weighs ``(K3 + 1) n / (K3 + n)`` times a term said once
#: (BM25's query-term frequency, saturating as Robertson's k3 does: 1.33 for twice, asked as
#: 1.5 below, at most 2), not ``n`` times: a linear count ranks worst on the labelled sets
#: (see benchmarks/README.md, 'Search quality', "Query-term frequency") ...
QTF_K3 = 1.0
#: ... in steps of a half. FTS5's ``bm25()`` and the Query Engine's BM25STD weigh every term
#: of a query alike and add a term asked twice again, so a weight is asked as copies of
#: the term (twice the weight, rounded: said once 2 copies, twice or more 3, seven times 4).
QTF_STEPS = 2

#: Words a keyword query leaves out: they say nothing about what a question is about ("how",
#: "did", "all", "don't") and match most chunks, so BM25 ranks chunks that repeat them over
#: the one holding the query's rare word. Snowball's English list as the ``stopwords``
#: package ships it (stop-words' and stopwords-iso's far longer lists drop words a technical
#: question is about: "c", "line", "value", "system", "test"). The query side only:
#: the index keeps every word, and a query of nothing but these words still asks them.
STOPWORDS = frozenset(get_stopwords("english"))
#: Words never sent at all: the Query Engine's default stopwords (an index made with them
#: never holds them, and a union starting with two of them crashes Redis 8.2), left out on
#: every backend so both ask the same words.
ENGINE_STOPWORDS = frozenset(
    {
        *("a", "an", "and", "are", "as", "at", "be", "but", "by", "for", "if", "in", "into"),
        *("is", "it", "no", "not", "of", "on", "or", "such", "that", "the", "their", "then"),
        *("there", "these", "they", "this", "to", "was", "will", "with"),
    }
)

#: A compound token: word characters joined by ``-``, ``_`` or ``.``, or a ``--flag``; an
#: optional leading ``-``/``--`` belongs to it, trailing punctuation (``join.``) does not.
#: Linear time: a match starts only where no word character or ``-`` precedes, and the
#: possessive pieces never backtrack (a pasted blob of one long "word" is read once).
_COMPOUND = re.compile(
    r"(?<![\w-])(?:--?)?_*[^\W_]++(?:[-_.]+[^\W_]++)+_*|(?<![\w-])--[^\W_]++(?:[-_.]+[^\W_]++)*"
)
#: What every compound holds somewhere: a cheap test that spares most prose the full scan.
_MAY_HOLD_COMPOUND = re.compile(r"[^\W_][-_.]+[^\W_]|--[^\W_]")
_JOINERS = re.compile(r"[-_.]")
_QUOTES = re.compile(r'["\u201c\u201d]')
#: An English possessive ending a word (Lucene's EnglishPossessiveFilter drops it too).
_POSSESSIVE = re.compile(r"(?<=\w)'s\b", re.IGNORECASE)
_EDGE_PUNCTUATION = "\"'`()[]{}<>,;:!?."
_PART = re.compile(r"[^\W_]+")
#: Evidence that a compound is a name in code, not prose: an inner ``_``, ``.`` or ``/``, a
#: digit, or a leading ``-``/``--`` (camelCase and ALL-CAPS are checked apart).
_CODE_EVIDENCE = re.compile(r"[^\W_][_./][^\W_]|\d|^-")


def words_text(text: str) -> str:
    """The ``words`` a chunk is searched by: ``-``, ``_`` and ``.`` made spaces."""
    return _JOINERS.sub(" ", text)


def idents_text(text: str) -> list[str]:
    """The compound tokens of a chunk, in order, each once (case-insensitive)."""
    if not _MAY_HOLD_COMPOUND.search(text):
        return []
    return list({t.casefold(): t for t in _COMPOUND.findall(text)}.values())


def query_terms(query: str, max_terms: int = MAX_TERMS) -> list[str]:
    """The terms a keyword query asks: each compound whole and each of its word parts, stop
    words left out. ``PURPLE-OTTER`` gives ``PURPLE-OTTER``, ``PURPLE``, ``OTTER``. A term
    the query repeats is asked more often than the others (``weighted``).

    A possessive ``'s`` goes (``cornell's`` asks ``cornell``); a contraction in the stop list
    (``don't``) goes whole. Words inside double quotes are kept, stop words or not (``"out of
    memory"``), and a query of stop words alone asks them all (``how to``): both still find
    what they name. The Query Engine's own stopwords are never asked.
    """
    terms = _terms(query, STOPWORDS, max_terms)
    return weighted(terms or _terms(query, frozenset(), max_terms))


def said_terms(query: str) -> list[str]:
    """The query's keyword terms in the order it says them, repeats kept, stop words out (as
    ``query_terms`` finds them, before weighing)."""
    return _terms(query, STOPWORDS, MAX_TERMS)


def weighted(said: list[str]) -> list[str]:
    """Each distinct term of ``said`` (case aside) as many times as its weight asks: its
    first spelling, ``round(QTF_STEPS x (QTF_K3 + 1) n / (QTF_K3 + n))`` times for a term said
    ``n`` times, all divided by their greatest common divisor (BM25 ranks the same: a query
    that repeats nothing asks each term once)."""
    counts = Counter(t.casefold() for t in said)
    copies = {key: round(QTF_STEPS * (QTF_K3 + 1) * n / (QTF_K3 + n)) for key, n in counts.items()}
    step = math.gcd(*copies.values()) if copies else 1
    first = {t.casefold(): t for t in reversed(said)}
    return [first[key] for key, n in copies.items() for _ in range(n // step)]


def _terms(query: str, stop: frozenset[str], max_terms: int) -> list[str]:
    terms: list[str] = []
    for word, quoted in _words(query):
        word = word.replace("\u2019", "'")
        if not quoted and word.strip(_EDGE_PUNCTUATION).casefold() in stop:
            continue
        word = _POSSESSIVE.sub("", word)
        for term in (*_COMPOUND.findall(word), *_PART.findall(word)):
            key = term.casefold()
            if key in ENGINE_STOPWORDS or (key in stop and not quoted):
                continue
            if len(term) <= MAX_TERM_CHARS:
                terms.append(term)
                if len(terms) >= max_terms:
                    return terms
    return terms


def _words(query: str) -> list[tuple[str, bool]]:
    """The query's words, each with whether it stands inside double quotes."""
    words = []
    for i, part in enumerate(_QUOTES.split(query)):
        words += [(word, i % 2 == 1) for word in part.split()]
    return words


def query_identifiers(query: str, max_terms: int = MAX_TERMS) -> list[str]:
    """The code-like compounds of a query (``PURPLE-OTTER``, ``os.path.join``, ``--no-ff``...).

    Code-like only on evidence (``code_like``), at least 4 characters: a lower-case hyphenated
    word (``two-dimensional``), a capitalised one opening a sentence (``Number-theoretic``)
    and an abbreviation (``i.e.``) are prose, not names to look up.
    """
    found: dict[str, str] = {}
    for term in _COMPOUND.findall(query):
        if 4 <= len(term) <= MAX_TERM_CHARS and code_like(term):
            found.setdefault(term.casefold(), term)
    return list(found.values())[:max_terms]


def code_like(term: str) -> bool:
    """Whether a compound shows it is a name in code: an inner underscore, dot or slash, a
    digit, a leading ``-``/``--``, camelCase (``getValue``) or ALL-CAPS with a hyphen
    (``PURPLE-OTTER``). A capital letter alone is no evidence: sentences start with one."""
    if _CODE_EVIDENCE.search(term):
        return True
    if any(a.islower() and b.isupper() for a, b in itertools.pairwise(term)):
        return True
    letters = [c for c in term if c.isalpha()]
    return "-" in term and len(letters) >= 2 and all(c.isupper() for c in letters)


def stems_text(text: str) -> str:
    """The text's words as Porter stems, lower-case, accents off: what a backend without
    FTS5's tokenizer indexes (unstemmed: ``NOSTEM``) to rank like FTS5."""
    return " ".join(_stems(_PART.findall(words_text(text))))


def word_stems(words: Sequence[str]) -> list[str]:
    """The Porter stem of each of ``words`` (plain words, no joiners), in step with them."""
    return list(thread_stemmer("porter").stemWords([_plain(w) for w in words]))


@functools.lru_cache(maxsize=1 << 16)
def word_stem(word: str) -> str:
    """A lower-case word's Porter stem, remembered: a search's feedback and pairs stem a few
    hundred words of its candidates, most of them seen before."""
    return word_stems([word])[0]


def stem_counter(stems: Collection[str]) -> Callable[[str], dict[str, int]]:
    """A counter of the words of a text whose Porter stem is one of ``stems``, by stem, the
    text split as the keyword index splits it (``_`` joins no words). Porter changes only a
    word's ending, so every word of a stem starts with the stem but its last letter: a regex
    finds those words (in C), lower-cased first (a case-blind regex is slower), and
    only they are stemmed. The regex has no leading word boundary, which would cost a test at
    every position of the text; a match that starts inside a word is dropped instead."""
    wanted = {s for s in stems if s}
    if not wanted:
        return lambda text: {}
    starts = sorted({re.escape(s[: max(1, len(s) - 1)]) for s in wanted}, key=len, reverse=True)
    maybe = re.compile(r"(?:" + "|".join(starts) + r")[^\W_]*")

    def counts(text: str) -> dict[str, int]:
        found: dict[str, int] = {}
        text = text.casefold().replace("_", " ")
        for match in maybe.finditer(text):
            at = match.start()
            if at and text[at - 1].isalnum():  # inside a word (``\w`` is alnum or ``_``)
                continue
            if (stem := word_stem(match.group())) in wanted:
                found[stem] = found.get(stem, 0) + 1
        return found

    return counts


def is_compound(term: str) -> bool:
    """Whether a query term is a compound (``max_retries``), not a word part."""
    return _PART.fullmatch(term) is None


def _stems(words: list[str]) -> list[str]:
    return [s for s in word_stems(words) if s]


def _plain(word: str) -> str:
    """The word lower-case, accents off (as FTS5's ``remove_diacritics`` leaves it)."""
    return "".join(
        c for c in unicodedata.normalize("NFKD", word.lower()) if not unicodedata.combining(c)
    )


#: One stemmer per thread and language: a Snowball stemmer keeps the word it works on (and
#: PyStemmer its cache) in itself, so two threads sharing one corrupt each other's words
#: (``holodeck serve`` stemming a pass's chunks for Redis while it stems a search: with the
#: pure-Python snowballstemmer, IndexError, the pass failed).
_stemmers = threading.local()


def thread_stemmer(language: str) -> Any:
    """This thread's own Snowball stemmer for ``language`` (PyStemmer's, whose objects are
    not to be shared between threads; ``porter``: the Porter stemmer FTS5's ``porter``
    tokenizer applies, for a backend that stems differently; the Query Engine indexes each
    word and its stem and scores both)."""
    stemmer = getattr(_stemmers, language, None)
    if stemmer is None:
        import Stemmer

        stemmer = Stemmer.Stemmer(language)
        setattr(_stemmers, language, stemmer)
    return stemmer
