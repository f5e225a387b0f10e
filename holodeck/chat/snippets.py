"""The few lines of a search result worth reading: its best-matching passage and the query's words.

A whole chunk is a screenful; what a person scanning results needs is the sentence that
answers and a little around it. The best passage (sentence, list item, table row) is the one
holding most of the query's words, compared by their Snowball stems so "retry" finds
"retried" and "retries"; common words ("how", "the") do not count. When no word matches (a
purely semantic hit) the chunk's beginning is shown.
"""

from __future__ import annotations

import re
import textwrap
from functools import lru_cache

from holodeck.vectorstore.keywords import STOPWORDS, thread_stemmer

_PARAGRAPH = re.compile(r"\n\s*\n")
_OWN_LINE = re.compile(r"^\s*(?:[-*+|#>]|\d+[.)]\s|`{3})")
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+")
_WORD = re.compile(r"\w+")


def passages(text: str) -> list[str]:
    """Sentences, list items, table rows and headings of ``text``, in order, each once.

    Wrapped prose lines are joined first, so a sentence broken over lines stays whole.
    """
    out: list[str] = []
    seen: set[str] = set()
    for block in _PARAGRAPH.split(text):
        segments: list[str] = []
        for line in block.splitlines():
            if not line.strip():
                continue
            if _OWN_LINE.match(line) or not segments:
                segments.append(line.strip())
            else:
                segments[-1] += " " + line.strip()
        for segment in segments:
            # A heading is one passage ("## 3. Open the dashboard" has no sentence end).
            sentences = [segment] if segment.startswith("#") else _SENTENCE_END.split(segment)
            for sentence in sentences:
                sentence = " ".join(sentence.split())
                if len(_WORD.findall(sentence)) >= 2 and sentence not in seen:
                    seen.add(sentence)
                    out.append(sentence)
    return out


ELLIPSIS = "…"
_HEADING = "§ "
_MARKDOWN_HEADING = re.compile(r"#{1,6}\s+")


@lru_cache(maxsize=8192)
def _stem(word: str) -> str:
    return str(thread_stemmer("english").stemWord(word.lower()))


def query_terms(query: str) -> frozenset[str]:
    """The stems of the query's words, common words left out."""
    return frozenset(_stem(w) for w in _WORD.findall(query) if w.lower() not in STOPWORDS)


def term_spans(text: str, terms: frozenset[str]) -> list[tuple[int, int]]:
    """Start and end of every word of ``text`` whose stem is one of ``terms``."""
    if not terms:
        return []
    return [m.span() for m in _WORD.finditer(text) if _stem(m.group()) in terms]


def snippet(content: str, terms: frozenset[str], budget: int) -> str:
    """At most about ``budget`` characters of ``content`` around its best-matching passage.

    Neighbouring passages are added while they fit, those after it first (they usually go on
    with the answer); ``…`` marks text left out before or after. Whitespace is collapsed: the
    result is one line of prose.
    """
    parts = [_plain(p) for p in passages(content)] or [" ".join(content.split())]
    best = max(range(len(parts)), key=lambda i: _match_score(parts[i], terms))
    if len(parts[best]) > budget:
        return _window(parts[best], terms, budget)
    lo = hi = best
    size = len(parts[best])
    # A heading starts another section: context before a match, never after it.
    while (
        hi + 1 < len(parts)
        and not parts[hi + 1].startswith(_HEADING)
        and size + 1 + len(parts[hi + 1]) <= budget
    ):
        hi += 1
        size += 1 + len(parts[hi])
    while lo > 0 and size + 1 + len(parts[lo - 1]) <= budget:
        lo -= 1
        size += 1 + len(parts[lo])
    text = " ".join(parts[lo : hi + 1])
    if lo > 0:
        text = f"{ELLIPSIS} {text}"
    if hi < len(parts) - 1:
        text = f"{text} {ELLIPSIS}"
    return text


def snippet_lines(content: str, terms: frozenset[str], width: int, max_lines: int) -> list[str]:
    """``snippet`` wrapped to ``width`` columns, at most ``max_lines`` lines.

    The budget is one line short of the maximum, so most snippets take fewer lines and
    wrapping rarely has to cut.
    """
    budget = max(width * max(max_lines - 1, 1), 40)
    text = snippet(content, terms, budget)
    lines = textwrap.wrap(
        text, width=width, max_lines=max_lines, placeholder=f" {ELLIPSIS}", break_on_hyphens=False
    ) or [""]
    if len(lines) > 1 and lines[-1] == ELLIPSIS:  # not a line of its own for one character
        lines.pop()
        if len(lines[-1]) + 2 <= width:
            lines[-1] += f" {ELLIPSIS}"
    return lines


def _plain(passage: str) -> str:
    """A passage as prose: bold markers dropped, a heading shown as ``§ Title —``."""
    passage = passage.replace("**", "")
    heading = _MARKDOWN_HEADING.match(passage)
    return f"{_HEADING}{passage[heading.end() :]} —" if heading else passage


def _match_score(passage: str, terms: frozenset[str]) -> tuple[int, int]:
    """How well a passage matches: distinct query words found, then occurrences."""
    stems = [_stem(w) for w in _WORD.findall(passage)]
    found = [s for s in stems if s in terms]
    return len(set(found)), len(found)


def _window(passage: str, terms: frozenset[str], budget: int) -> str:
    """A ``budget``-long cut of one long passage, starting a little before its first match."""
    spans = term_spans(passage, terms)
    start = max(0, spans[0][0] - budget // 4) if spans else 0
    if start:
        space = passage.find(" ", start)
        start = space + 1 if 0 <= space < spans[0][0] else start
    end = start + budget
    text = passage[start:end]
    if end < len(passage):
        cut = text.rfind(" ")
        text = (text[:cut] if cut > budget // 2 else text) + f" {ELLIPSIS}"
    return f"{ELLIPSIS} {text}" if start else text
