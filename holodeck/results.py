"""Search results as they are shown, in one place below chat, search, test and serve.

- For the LLM: the tool contract's formatted text, byte for byte (docs/contract.md); the
  same text with each result's place in its file (for people and MCP clients); the JSON form
  of the same results (``holodeck search --json``, MCP structured content).
- For a person: a header saying where a result is, then the few lines that best match the
  question, its words highlighted (``holodeck chat`` and ``holodeck search`` on a terminal).
  On a terminal, ``[1] 0.71  git/git-reset.txt › EXAMPLES › Undo a commit · lines 150-194``;
  in a pipe, the LLM's result line continued with named fields, a stable form for scripts.
- The few lines worth reading: the piece of a chunk (sentence, list item, table row) holding
  most of the query's words, compared by their Snowball stems so "retry" finds "retried";
  common words do not count; a purely semantic hit shows the chunk's beginning.

It imports no LLM client and loads rich only when a person's view is made: a piped search
stays quick.
"""

from __future__ import annotations

import re
import textwrap
from dataclasses import asdict, dataclass, field
from functools import lru_cache
from typing import TYPE_CHECKING, Any, Literal

from holodeck.text.analysis import STOPWORDS, thread_stemmer

if TYPE_CHECKING:
    from rich.text import Text


# -- for the LLM and for scripts -----------------------------------------------------------


@dataclass
class SearchResult:
    """Internal search result structure (formatted to a string for the agent)."""

    rank: int  # 1-indexed
    score: float  # relevance in the tool's search mode, 0.0-1.0 (semantic: the cosine)
    source_path: str  # relative to the project root
    content: str
    chunk_id: str = ""  # the best-scoring chunk of the passage
    doc_id: str = ""
    book_id: str = ""
    library_id: str = ""
    chunk_index: int = 0
    similarity: float = 0.0  # cosine similarity with the query (min_similarity_score's measure)
    chunks: list[int] = field(default_factory=list)  # chunk indexes merged into this passage
    #: Where in the file its best chunk sits: ``page 3``, ``lines 10-42``, ``rows 2-41``...;
    #: empty when unknown.
    #: Shown to people (CLI, reports, JSON, MCP), never in the formatted text the LLM reads.
    location: str = ""
    #: The heading path of its section: ``EXAMPLES › Undo a commit``; empty when unknown.
    section: str = ""
    #: Where the whole passage's text comes from (``pages 1-3``: the best chunk and the
    #: neighbours merged into it); ``location`` is where the best chunk, the answer, sits.
    span: str = ""

    @property
    def source_label(self) -> str:
        """``docs/manual.pdf (page 3)``: the path, then where in it when known."""
        return f"{self.source_path} ({self.location})" if self.location else self.source_path

    @property
    def place(self) -> str:
        """``EXAMPLES › Undo a commit · lines 150-194``: section and location, as known."""
        return " · ".join(part for part in (self.section, self.location) if part)


#: How a result line says where the result is: not at all (the formatted text the agent's
#: LLM reads), ``label`` (``Source: path (lines 3-9) | Section: A › B``, for
#: people: ``holodeck search``) or ``fields`` (``Source: path | Location: lines 3-9 |
#: Section: A › B``: MCP results and chat's line mode).
Where = Literal["label", "fields"] | None


def where_fields(result: SearchResult) -> str:
    """`` | Location: lines 3-9 | Section: A › B``, each field only when known."""
    out = f" | Location: {result.location}" if result.location else ""
    return out + (f" | Section: {result.section}" if result.section else "")


def format_results(results: list[SearchResult], *, where: Where = None) -> str:
    """``Found N result(s):`` then one block per result, blocks separated by a blank line.

    The default is the tool contract's formatted text byte for byte (what the LLM reads);
    ``where`` adds each result's place in its file (see ``Where``).
    """
    blocks = []
    for r in results:
        if where == "label":
            source = r.source_label + (f" | Section: {r.section}" if r.section else "")
        elif where == "fields":
            source = r.source_path + where_fields(r)
        else:
            source = r.source_path
        blocks.append(f"[{r.rank}] Score: {r.score:.2f} | Source: {source}\n{r.content}")
    return f"Found {len(results)} result(s):\n\n" + "\n\n".join(blocks)


def no_results(query: str) -> str:
    """Nothing matched at all."""
    return f"No relevant results found for query: {query}"


def below_threshold(min_score: float) -> str:
    """Results existed but all scored under ``min_similarity_score``."""
    return f"No results above similarity threshold {min_score}"


def tool_results_json(tool: str, results: list[SearchResult], hits: int) -> dict[str, Any]:
    """One tool's results as plain JSON values (``hits``: results before the score filter)."""
    return {"tool": tool, "results": [asdict(r) for r in results], "hits": hits}


def search_json(query: str, tools: list[dict[str, Any]]) -> dict[str, Any]:
    """What ``holodeck search --json`` prints: the query and each tool's results."""
    return {"query": query, "tools": tools}


# -- the lines worth reading ---------------------------------------------------------------

_PARAGRAPH = re.compile(r"\n\s*\n")
_OWN_LINE = re.compile(r"^\s*(?:[-*+|#>]|\d+[.)]\s|`{3})")
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+")
_WORD = re.compile(r"\w+")


def pieces(text: str) -> list[str]:
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

    Neighbouring pieces are added while they fit, those after it first (they usually go on
    with the answer); ``…`` marks text left out before or after. Whitespace is collapsed: the
    result is one line of prose.
    """
    parts = [_plain(p) for p in pieces(content)] or [" ".join(content.split())]
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


# -- for a person --------------------------------------------------------------------------

#: Widest a result's text is wrapped, whatever the terminal (long lines read badly); also
#: the fixed width of the line mode, so its output does not depend on $COLUMNS.
MAX_WIDTH = 100
INDENT = "    "
SNIPPET_LINES = 3
HIGHLIGHT = "bold red"  # like grep's and ripgrep's matches


def result_header(number: int, result: SearchResult, terminal: bool = False) -> Text:
    """A result's first line: its number, score, file, and where in the file when known."""
    from rich.text import Text

    line = Text()
    line.append(f"[{number}]", style="bold")
    if terminal:
        line.append(f" {result.score:.2f}  ", style="dim")
        line.append(result.source_path, style="green")
        if result.section:
            line.append(f" › {result.section}", style="cyan")
        if result.location:
            line.append(f" · {result.location}", style="green")
        return line
    line.append(f" Score: {result.score:.2f} | Source: {result.source_path}")
    line.append(where_fields(result))
    return line


def result_lines(
    number: int,
    result: SearchResult,
    query: str,
    width: int = MAX_WIDTH,
    terminal: bool = False,
    full: bool = False,
) -> list[Text]:
    """The header, then the lines around the best match (or the whole text with ``full``),
    indented and wrapped to ``width`` (at most ``MAX_WIDTH``), the query's words highlighted."""
    terms = query_terms(query)
    lines = [result_header(number, result, terminal)]
    if full:
        lines.append(highlighted(result.content, terms))
        return lines
    inner = min(width, MAX_WIDTH) - len(INDENT)
    for line in snippet_lines(result.content, terms, inner, SNIPPET_LINES):
        lines.append(highlighted(INDENT + line, terms))
    return lines


def highlighted(text: str, terms: frozenset[str]) -> Text:
    """``text`` with every word of the query (by stem) in the highlight style."""
    from rich.text import Text

    out = Text(text)
    for start, end in term_spans(text, terms):
        out.stylize(HIGHLIGHT, start, end)
    return out
