"""Keyword queries and columns: words split and stemmed, identifiers whole, nothing a user
types can change the query's meaning."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

from holodeck.text.analysis import (
    MAX_TERMS,
    idents_text,
    query_identifiers,
    query_terms,
    stem_counter,
    stems_text,
    words_text,
)
from holodeck.vectorstore.redis.queries import redis_expression


def test_a_chunk_is_indexed_by_split_words_and_whole_identifiers() -> None:
    text = "Set max_retries via os.path.join; run `git merge --no-ff`; see v2.3.1 and E1234."
    assert words_text(text) == (
        "Set max retries via os path join; run `git merge   no ff`; see v2 3 1 and E1234 "
    )
    assert idents_text(text) == ["max_retries", "os.path.join", "--no-ff", "v2.3.1"]


def test_query_terms_hold_each_compound_and_its_parts_weighed_by_how_often_said() -> None:
    # each term twice, "purple" (said twice, case aside) three times: 1.5 times the weight
    assert query_terms("what is the PURPLE-OTTER flag of purple things?") == [
        *["PURPLE-OTTER"] * 2,
        *["PURPLE"] * 3,
        *["OTTER"] * 2,
        *["flag"] * 2,
        *["things"] * 2,
    ]
    assert query_terms('say "max_retries"') == ["say", "max_retries", "max", "retries"]
    # one term, or every term said as often: each asked once (BM25 ranks the same)
    assert query_terms("flow flow over it") == ["flow"]
    assert query_terms("shock wave, shock wave") == ["shock", "wave"]


def test_a_repeated_term_saturates() -> None:
    # BM25's k3 = 1: said n times, a term weighs 2n / (1 + n) in halves: 1.5 up to six
    # times, 2 from seven times on; never n times
    for said, weight in ((2, 1.5), (3, 1.5), (6, 1.5), (7, 2.0), (30, 2.0)):
        terms = query_terms(" ".join(["shock"] * said + ["wave"]))
        assert terms.count("shock") / terms.count("wave") == weight, said


def test_stop_words_possessives_and_contractions_are_not_asked() -> None:
    assert query_terms("what is the name of chris cornell's band?") == [
        "name",
        "chris",
        "cornell",
        "band",
    ]
    assert query_terms("I don\u2019t see how EL1 did it all") == ["see", "EL1"]
    # ... unless quoted, or nothing else is left
    assert query_terms('"out of memory" crash') == ["out", "memory", "crash"]
    assert query_terms("how did you do it all") == ["how", "did", "you", "do", "all"]


def test_only_code_like_compounds_are_identifiers() -> None:
    query = "two-dimensional flow, i.e. E1234 in os.path.join --no-ff or PURPLE-OTTER x-y"
    assert query_identifiers(query) == ["os.path.join", "--no-ff", "PURPLE-OTTER"]
    assert query_identifiers("what does error E1234 mean") == []  # not a compound: a word


def test_identifiers_need_evidence_not_a_capital() -> None:
    # sentence-initial capitals are prose: their holders must not be put first
    for prose in (
        "Number-theoretic methods for random sequences",
        "Self-similar solutions of the boundary layer",
        "Non-linear buckling of shells. Two-dimensional flow too.",
        "State-of-the-art hybrid search? Hewlett-Packard printers",
    ):
        assert query_identifiers(prose) == [], prose
    # evidence: inner underscore or dot, a digit, a leading dash, camelCase, ALL-CAPS + hyphen
    query = "max_retries os.path.join UTF-8 x86-64 --force-ingest getValue-x PURPLE-OTTER"
    assert query_identifiers(query) == query.split()


def test_queries_with_nothing_searchable_send_nothing() -> None:
    for query in ("", "   ", "*", "|", "- - --", "the of and", '"', "@:{}", '"to be or not"'):
        assert query_terms(query) == [], query
        assert redis_expression(query, "words") is None, query


def test_long_queries_are_capped() -> None:
    assert len(query_terms(" ".join(f"w{i}" for i in range(500)))) == MAX_TERMS
    assert query_terms("x" * 100_000) == []
    # pasted blobs: a quadratic pattern would not return here (the suite's timeout fails it)
    assert idents_text("a-" * 200_000) and query_identifiers("a-" * 50_000 + "B") == []


def test_redis_asks_the_stems_of_word_parts_escaped() -> None:
    assert redis_expression("PURPLE-OTTER os.path.join max_retries", "stems") == (
        "@stems:(purpl | otter | o | path | join | max | retri)"
    )
    assert redis_expression("@tenant_id:{*} | secret", "stems") == "@stems:(tenant | id | secret)"
    assert redis_expression("naïve cafés", "stems") == "@stems:(naiv | cafe)"
    assert redis_expression("retry retried jobs", "stems") == "@stems:(retri | retri | job)"
    assert stems_text("Retries failed; the naïve\nretry") == "retri fail the naiv retri"


def test_threads_stemming_at_once_each_get_their_own_words() -> None:
    """``holodeck serve`` stems a pass's chunks for Redis while it stems searches: one shared
    Snowball stemmer mixed their words (IndexError, the pass failed). Each thread stems as
    one thread alone would, however the threads interleave."""
    texts = [
        " ".join(f"{word}{i}ing reconfigurations" for word in ("survey", "crater", "dust")) * 400
        for i in range(8)
    ]
    alone = [stems_text(t) for t in texts]
    with ThreadPoolExecutor(8) as pool:
        for _ in range(5):
            assert list(pool.map(stems_text, texts)) == alone


def test_the_pairs_and_feedback_count_whole_words_of_a_stem_only() -> None:
    """What a query's pairs and feedback count in a chunk: whole words whose stem is asked
    (any ending, any case, ``_`` and accents as the index splits them), never a word that
    holds one inside it."""
    count = stem_counter(["layer", "flow"])
    text = "Layers of flow; a multilayer overflow, boundary_layer flows, flowing LAYER-wise, fl"
    assert count(text) == {"layer": 3, "flow": 3}
    assert count("overflowing multilayered") == {}
    assert stem_counter([])("layer") == {}
