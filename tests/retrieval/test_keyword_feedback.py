"""Keyword feedback in a hybrid answer: for a query that names a topic the words its best
matches share count on the keyword side too, so a passage that says the topic in those words
(and in none of the query's) comes before passages that only resemble the query; a question
is asked as said. On the local index and on a real Redis, whose word statistics agree with
their BM25."""

from __future__ import annotations

import pytest
from notes import QUERY_VECTOR, answer, fill, note, unit

from holodeck.retrieval.expansion import expansion_words, is_question
from holodeck.vectorstore.store import VectorStore

#: Three notes on the subject in the query's words and a few of their own (cosine 0.50,
#: leaning to the second axis); the answer in those other words only (0.40, on the fourth
#: axis: the model's feedback toward the three does not lift it); eight tide tables that
#: resemble the query more (0.45, on the third axis).
NOTES = {
    **{
        f"kestrel{i}.md": (
            f"kestrel hovering above field {i}, wings beating into the wind",
            unit(0.5, 0.866, 0.0),
        )
        for i in range(3)
    },
    "answer.md": ("wings beating into the wind, the small falcon hangs still", unit(0.4, 0, 0)),
    **{
        f"tide{i}.md": (f"tide tables for the harbour, page {i}", unit(0.45, 0.0, 0.89))
        for i in range(8)
    },
}


@pytest.fixture
def store(empty_store: VectorStore) -> VectorStore:
    fill(empty_store, NOTES)
    return empty_store


def ranking(store: VectorStore, query: str) -> list[str]:
    return answer(store, query, 12)


@pytest.mark.redis
def test_a_topic_query_finds_the_passage_in_its_best_matches_words(store: VectorStore) -> None:
    ranked = ranking(store, "kestrel hovering")
    assert set(ranked[:3]) == {f"kestrel{i}.md" for i in range(3)}
    assert ranked[3] == "answer.md"  # before every tide table, though the model prefers them


@pytest.mark.redis
def test_a_question_is_asked_in_its_own_words(store: VectorStore) -> None:
    # the same words asked as a question: no feedback, the tide tables stay before the answer
    ranked = ranking(store, "is the kestrel hovering?")
    assert set(ranked[:3]) == {f"kestrel{i}.md" for i in range(3)}
    assert ranked.index("answer.md") > max(ranked.index(f"tide{i}.md") for i in range(8))


@pytest.mark.redis
def test_word_statistics_agree_with_the_keyword_scale(store: VectorStore) -> None:
    idfs = store.keyword_idfs(["Wings", "tide", "falcon", "absent"])
    assert set(idfs) == {"wings", "tide", "falcon", "absent"}
    for word, idf in idfs.items():
        assert idf == pytest.approx(store.keyword_scale(word), abs=1e-9), word
    assert idfs["falcon"] > idfs["wings"] > idfs["tide"]  # held by 1, 4 and 8 notes


def test_what_counts_as_a_question() -> None:
    for question in ("how do I undo a commit", "What is BM25?", "does git stash keep files",
                     "undo the last commit?"):  # fmt: skip
        assert is_question(question), question
    for topic in ("measurement of dielectric constant of liquids", "git stash untracked files",
                  "papers on shock-sound wave interaction .", ""):  # fmt: skip
        assert not is_question(topic), topic


def test_words_come_from_what_the_best_chunks_share_weighed_by_rarity() -> None:
    texts = [
        "Wings beating, the kestrel watches voles below",
        "wings and voles: the kestrel hunts at dawn",
        "a kestrel nest on the cliff, voles nearby",
    ]
    best = [note(f"n{i}.md", text, QUERY_VECTOR) for i, text in enumerate(texts)]
    rarity = {"voles": 3.0, "wings": 1.0}

    def idfs(words: list[str]) -> dict[str, float]:
        return {w: rarity.get(w, 0.5) for w in words}

    # "voles" (3 chunks, rare) before "wings" (2 chunks); "kestrel" is the query's own;
    # "dawn", "nest" are one chunk's; stop words never
    assert list(expansion_words("kestrel", best, idfs, unsure=1.0)) == ["voles", "wings"]
    assert list(expansion_words("kestrel", best, idfs, unsure=0.1)) == ["voles"]  # surer
    assert expansion_words("kestrel", best, idfs, unsure=0.0) == {}
