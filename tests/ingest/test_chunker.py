"""Chunking with the real MiniLM tokenizer and the real OpenAI (tiktoken) tokenizer."""

from __future__ import annotations

import base64
import itertools
import random
import re

import pytest

from holodeck.embeddings.base import TokenCounter
from holodeck.embeddings.hf_tokenizer import HFTokenCounter
from holodeck.embeddings.local import BUILTIN_TOKENIZER
from holodeck.embeddings.tiktoken_offline import TiktokenCounter
from holodeck.errors import ConfigError
from holodeck.ingest.chunker import MIN_CHUNK_TOKENS, Chunk, chunk_text

WORDS = [
    "alpha",
    "beta",
    "gamma",
    "delta",
    "epsilon",
    "zeta",
    "theta",
    "kappa",
    "lambda",
    "sigma",
    "omega",
    "river",
    "mountain",
    "café",
    "naïve",
    "Ünïcödé",
    "東京",
    "🎉",
    "x**2",
    "f(x)",
    "don't",
    "state-of-the-art",
    "e.g.",
    "3.14",
    "https://a.io/b?c=d",
]


@pytest.fixture(
    scope="module",
    params=["minilm", "cl100k"],
)
def counter(request: pytest.FixtureRequest) -> TokenCounter:
    if request.param == "minilm":
        return HFTokenCounter.from_file(BUILTIN_TOKENIZER)
    return TiktokenCounter.for_model("text-embedding-3-small")


def _sentence(rng: random.Random) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(rng.randint(3, 16))) + rng.choice(".!?")


def _paragraph(rng: random.Random, sentences: int) -> str:
    return " ".join(_sentence(rng) for _ in range(sentences))


def _document(seed: int, paragraphs: int = 40, max_sentences: int = 8) -> list[str]:
    rng = random.Random(seed)
    return [_paragraph(rng, rng.randint(1, max_sentences)) for _ in range(paragraphs)]


def _check_chunks(text: str, chunks: list[Chunk], counter: TokenCounter, size: int) -> None:
    """What every chunking must satisfy: within budget, exact offsets and counts, in order."""
    for chunk in chunks:
        assert chunk.text
        assert chunk.text == chunk.text.strip()
        assert text[chunk.start : chunk.end] == chunk.text
        assert chunk.token_count == counter.count(chunk.text) <= size
    assert [c.start for c in chunks] == sorted(c.start for c in chunks)
    # No text is lost: whatever lies outside every chunk is whitespace.
    reached = 0
    for chunk in chunks:
        assert not text[reached : chunk.start].strip()
        reached = max(reached, chunk.end)
    assert not text[reached:].strip()


MIXED = "\n\n".join(
    [
        "# Title\n\nIntro paragraph with ünïcödé, emoji 🎉👩‍👩‍👧 and CJK 東京は日本の首都です。",
        "```python\ndef f(x: int) -> int:\n    return x ** 2  # square\n```",
        "- item one\n- item two\n- item three with a much longer line " + "word " * 80,
        "東京は日本の首都です。" * 60,
        "| a | b |\n|---|---|\n| 1 | 2 |\n" * 20,
        "Long line without punctuation " * 120,
    ]
)


@pytest.mark.parametrize(("size", "overlap"), [(16, 0), (64, 8), (128, 32), (256, 50)])
def test_budget_is_never_exceeded(counter: TokenCounter, size: int, overlap: int) -> None:
    for text in ["\n\n".join(_document(seed=size)), MIXED]:
        chunks = chunk_text(text, counter, size, overlap)
        assert len(chunks) > 1
        _check_chunks(text, chunks, counter, size)


def test_words_are_never_split(counter: TokenCounter) -> None:
    text = "\n\n".join(_document(seed=7))
    chunks = chunk_text(text, counter, 48, 10)
    words = set(text.split())
    for chunk in chunks:
        assert set(chunk.text.split()) <= words
        assert chunk.start == 0 or text[chunk.start - 1].isspace()
        assert chunk.end == len(text) or text[chunk.end].isspace()


def test_a_word_longer_than_the_budget_is_split_between_tokens(counter: TokenCounter) -> None:
    blob = base64.b64encode(random.Random(3).randbytes(3000)).decode()
    text = f"Attachment follows.\n\n{blob}\n\nEnd of attachment."
    chunks = chunk_text(text, counter, 64, 0)
    _check_chunks(text, chunks, counter, 64)
    assert len(chunks) > 3
    assert all(c.start >= p.end for p, c in itertools.pairwise(chunks))  # no overlap
    assert blob in "".join(c.text.replace("\n\n", "") for c in chunks)  # nothing lost


def test_successive_chunks_overlap_by_about_the_overlap(counter: TokenCounter) -> None:
    """Where a cut splits a paragraph the next chunk repeats up to ``overlap`` tokens of it;
    where it falls between paragraphs the next chunk starts at the next paragraph."""
    text = "\n\n".join(_document(seed=11))
    overlap = 20
    chunks = chunk_text(text, counter, 128, overlap)
    assert len(chunks) > 5
    shared = []
    between = 0
    for previous, current in itertools.pairwise(chunks):
        if text[previous.end : previous.end + 2] == "\n\n":
            assert current.start == previous.end + 2  # nothing repeated, nothing skipped
            between += 1
            continue
        assert current.start < previous.end
        shared.append(counter.count(text[current.start : previous.end]) - counter.special_tokens)
    assert between and shared  # the document has both kinds of cut
    # Starting at a word costs up to one word's tokens, never adds more than a token.
    assert all(1 <= tokens <= overlap + 1 for tokens in shared)
    assert sum(shared) / len(shared) >= 0.6 * overlap


def test_the_overlap_starts_where_a_sentence_starts(counter: TokenCounter) -> None:
    """A chunk reads from a sentence's start, not from mid-sentence, when a sentence begins
    inside the overlap; and it repeats no more of the previous chunk than that."""
    rng = random.Random(3)
    words = WORDS[:13]  # plain words: the only full stops are the sentences' own
    sentences = (" ".join(rng.choices(words, k=rng.randint(3, 7))) + "." for _ in range(400))
    text = " ".join(sentences)  # one paragraph: sentence ends are the best boundaries
    overlap = 40
    chunks = chunk_text(text, counter, 128, overlap)
    assert len(chunks) > 10
    for previous, current in itertools.pairwise(chunks):
        assert text[: current.start].rstrip()[-1] == "."  # a sentence starts the chunk
        shared = counter.count(text[current.start : previous.end]) - counter.special_tokens
        assert 1 <= shared <= overlap + 1
        # the earliest sentence start inside the overlap: one more sentence would not fit
        before = text.rfind(". ", 0, current.start - 2) + 2
        assert counter.count(text[before : previous.end]) - counter.special_tokens > overlap


def test_paragraph_breaks_are_preferred(counter: TokenCounter) -> None:
    rng = random.Random(5)
    paragraphs = [_paragraph(rng, 3) for _ in range(30)]  # several paragraphs fit a chunk
    text = "\n\n".join(paragraphs)
    chunks = chunk_text(text, counter, 200, 0)
    assert len(chunks) > 3
    for chunk in chunks:
        assert chunk.start == 0 or text[chunk.start - 2 : chunk.start] == "\n\n"
        assert chunk.end == len(text) or text[chunk.end : chunk.end + 2] == "\n\n"


def test_sentence_ends_are_preferred_within_a_long_paragraph(counter: TokenCounter) -> None:
    text = _paragraph(random.Random(9), 80)
    chunks = chunk_text(text, counter, 100, 0)
    assert len(chunks) > 3
    for chunk in chunks:
        assert chunk.text[-1] in ".!?"


def test_cjk_text_without_spaces_is_cut_after_sentences(counter: TokenCounter) -> None:
    text = "".join(f"東京は日本の首都です{i}番目の文。" for i in range(100))
    chunks = chunk_text(text, counter, 64, 0)
    assert len(chunks) > 3
    assert all(chunk.text.endswith("。") for chunk in chunks)


@pytest.mark.parametrize("edited_paragraph", [15, 40, 60, 85, 100])
def test_an_edit_changes_only_nearby_chunks(counter: TokenCounter, edited_paragraph: int) -> None:
    """Unchanged chunks keep their text (and so their stored vectors) after an edit."""
    paragraphs = _document(seed=21, paragraphs=120, max_sentences=12)
    before = chunk_text("\n\n".join(paragraphs), counter, 128, 20)
    edited = list(paragraphs)
    edited[edited_paragraph] = (
        "A brand new opening sentence, added by an editor. " + edited[edited_paragraph]
    )
    after = chunk_text("\n\n".join(edited), counter, 128, 20)

    before_texts = [c.text for c in before]
    after_texts = [c.text for c in after]
    assert len(before_texts) > 50
    changed = [i for i, t in enumerate(after_texts) if t not in before_texts]
    assert 1 <= len(changed) <= 4
    assert changed == list(range(changed[0], changed[-1] + 1))  # one place in the text
    assert any("A brand new opening sentence" in after_texts[i] for i in changed)
    assert len(after_texts) - len(changed) >= len(before_texts) - 4  # the rest is reused


def test_short_text_is_one_chunk(counter: TokenCounter) -> None:
    text = "\n\n  A short note about the meeting.  \n"
    (chunk,) = chunk_text(text, counter, 256, 32)
    assert chunk.text == "A short note about the meeting."
    assert (chunk.start, chunk.end) == (4, 35)


def test_empty_or_blank_text_gives_no_chunks(counter: TokenCounter) -> None:
    assert chunk_text("", counter, 256, 32) == []
    assert chunk_text(" \n\n\t ", counter, 256, 32) == []


def test_chunking_is_deterministic(counter: TokenCounter) -> None:
    text = "\n\n".join(_document(seed=4))
    assert chunk_text(text, counter, 64, 16) == chunk_text(text, counter, 64, 16)


def test_overlap_must_leave_room_for_new_text(counter: TokenCounter) -> None:
    with pytest.raises(ConfigError, match="chunk_overlap 300"):
        chunk_text("some text", counter, 256, 300)


@pytest.mark.slow
def test_a_one_megabyte_text_is_chunked_within_budget(counter: TokenCounter) -> None:
    text = "\n\n".join(_document(seed=99, paragraphs=3500))
    assert len(text) > 1_000_000
    chunks = chunk_text(text, counter, 256, 32)
    _check_chunks(text, chunks, counter, 256)


def _slivers(chunks: list[Chunk], counter: TokenCounter, floor: int = 32) -> list[str]:
    """Chunks under ``floor`` tokens (and as many characters as that much prose), and
    chunks whose text lies inside the one before."""
    bad = [c.text for c in chunks if counter.count(c.text) < floor and len(c.text) < 4 * floor]
    bad += [
        b.text
        for a, b in itertools.pairwise(chunks)
        if b.start <= a.start or b.end <= a.end  # b holds a, or lies inside it
    ]
    return bad


def test_a_heading_before_a_table_wider_than_a_chunk_makes_no_slivers(
    counter: TokenCounter,
) -> None:
    # The shape of Node's util.md: prose, a heading, then a table whose separator row alone
    # is wider than a chunk. It used to give nine chunks of the heading, each one word
    # shorter ("Encodings supported ...", ..., "ICU data)", "data)").
    rng = random.Random(5)
    prose = "\n\n".join(_paragraph(rng, 4) for _ in range(3))
    rule = "| " + "-" * 400 + " | " + "-" * 900 + " |"
    rows = "\n".join(
        f"| `'enc-{i}'` | " + ", ".join(f"`'alias-{i}-{j}'`" for j in range(8)) + " |"
        for i in range(30)
    )
    text = (
        f"{prose}\n\n#### Encodings supported by default (with full ICU data)\n\n"
        f"| Encoding | Aliases |\n{rule}\n{rows}\n\n{prose}\n"
    )
    chunks = chunk_text(text, counter, 256, 50)
    assert _slivers(chunks, counter) == []
    assert all(c.token_count <= 256 for c in chunks)
    assert [c.start for c in chunks] == sorted(c.start for c in chunks)
    assert any("ICU data" in c.text and "Encoding" in c.text for c in chunks)


def test_one_endless_line_is_cut_inside_itself_not_into_slivers(counter: TokenCounter) -> None:
    words = " ".join(f"w{i}" for i in range(40))
    line = "x" * 5000  # one "word" far past the budget
    chunks = chunk_text(f"{words}\n\n# Title\n\n{line} end of the line\n", counter, 128, 20)
    assert _slivers(chunks, counter) == []


def test_the_last_chunk_is_not_a_sliver_unless_the_document_is(counter: TokenCounter) -> None:
    rng = random.Random(11)
    for n in range(6):
        text = "\n\n".join(_paragraph(rng, 5) for _ in range(6)) + f"\n\nTail number {n}."
        chunks = chunk_text(text, counter, 128, 20)
        assert len(chunks) > 1
        assert counter.count(chunks[-1].text) >= 20, chunks[-1].text
    assert chunk_text("Just data)", counter, 128, 20)[0].text == "Just data)"


def test_a_chunk_ends_where_a_section_starts(counter: TokenCounter) -> None:
    rng = random.Random(11)
    parts = []
    for n in range(30):
        parts.append(f"## Section {n}")
        parts.extend(_paragraph(rng, rng.randint(1, 6)) for _ in range(rng.randint(1, 3)))
    text = "\n\n".join(parts)
    starts = [m.start() for m in re.finditer(r"^## ", text, re.MULTILINE)]
    chunks = chunk_text(text, counter, 128, 16, starts)
    _check_chunks(text, chunks, counter, 128)

    shared = 0
    for chunk in chunks:
        for start in (s for s in starts if chunk.start < s < chunk.end):
            # only a section too short for a chunk of its own shares one, at its start
            before = text[chunk.start : start]
            tokens = counter.count(before) - counter.special_tokens
            assert tokens < MIN_CHUNK_TOKENS or len(before) < 4 * MIN_CHUNK_TOKENS, before
            shared += 1
    assert shared < len(starts) // 3  # most sections start a chunk of their own
    assert sum(c.start in starts for c in chunks) >= len(starts) - shared
