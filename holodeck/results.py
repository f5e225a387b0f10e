"""Search results as they are shown, in one place below chat, search, test and serve.

One renderer (``render``) with four views of a result list, so every place that prints a
result says the same facts the same way:

- ``contract``: the tool contract's formatted text, byte for byte (docs/contract.md):
  ``[1] Score: 0.83 | Source: docs/x.md`` then the passage. ``VectorStoreTool.search``
  (the library's tool face) and ``holodeck test``'s own searches.
- ``model``: the same, each result line continued with where the result is,
  ``| Location: page 3 | Section: Setup › Pumps`` (and a git source's ``| Commit:`` or
  ``| URL:``), so the LLM can cite it: the tool message
  the model reads in ``holodeck chat``, and MCP's text (``holodeck serve``).
- ``compact``: that result line, then the few lines that best match the question, plain, at
  a fixed width: ``holodeck search`` into a pipe, ``holodeck chat``'s line mode.
- ``terminal``: a short header fitted to the terminal's width,
  ``[1] 0.71  git/git-reset.txt › EXAMPLES › Undo a commit · lines 150-194`` (a long section
  path is shortened in its middle, the location always shown whole), then the same lines,
  the query's words highlighted: ``holodeck search`` and ``holodeck chat`` on a terminal.

``--json`` and MCP's structured content are the whole record (``tool_results_json``).
The few lines worth reading are the piece of a passage (sentence, list item, table row)
holding most of the query's words, compared by their Snowball stems so "retry" finds
"retried"; common words do not count; a question asking for a quantity ("how many...",
"how long...") prefers a piece that holds a number; on a tie, and for a purely semantic
hit, a piece of the best chunk wins. A result names where its best chunk is; when the lines
shown are a merged neighbour's, the compact and terminal headers say where those are too
(``| Shown: lines 7-32``, ``· lines 34-47 (shown: 7-32)``).

It imports no LLM client and loads rich only when a terminal's view is made (``Rendered``
holds its styles as data): a piped search stays quick.
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


# -- a result, and the words every view uses ------------------------------------------------


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
    #: empty when unknown. In every view but the contract's own (``VectorStoreTool.search``).
    location: str = ""
    #: The heading path of its section: ``EXAMPLES › Undo a commit``; empty when unknown.
    section: str = ""
    #: Where the whole passage's text comes from (``pages 1-3``: the best chunk and the
    #: neighbours merged into it); ``location`` is where the best chunk, the answer, sits.
    span: str = ""
    #: Each merged chunk's characters of ``content``, ``[start, end)``, and its location, in
    #: the order of ``chunks`` (``(0, 0, ...)``: not in ``content``); empty when unknown.
    places: list[tuple[int, int, str]] = field(default_factory=list)
    #: A git source's: the file's path inside the repository, the commit it was indexed at,
    #: and a link to its lines there (github.com, gitlab.com); empty otherwise.
    repo_path: str = ""
    commit: str = ""
    url: str = ""

    @property
    def best_chars(self) -> tuple[int, int]:
        """The best chunk's ``[start, end)`` in ``content``; ``(0, 0)`` when unknown."""
        if self.chunk_index in self.chunks and len(self.places) == len(self.chunks):
            start, end, _ = self.places[self.chunks.index(self.chunk_index)]
            return start, end
        return 0, 0

    @property
    def place(self) -> str:
        """``EXAMPLES › Undo a commit · lines 150-194``: section and location, as known."""
        return " · ".join(part for part in (self.section, self.location) if part)


#: The views ``render`` makes of a result list (the module's docstring says which is where).
View = Literal["contract", "model", "compact", "terminal"]


def result_line(number: int, result: SearchResult, place: bool = True, shown: str = "") -> str:
    """``[1] Score: 0.83 | Source: docs/x.md``, then where it is (``place``) when known;
    ``shown``: the lines shown come from a merged neighbour there (``| Shown: lines 7-32``)."""
    line = f"[{number}] Score: {result.score:.2f} | Source: {result.source_path}"
    if not place:
        return line
    if result.location:
        line += f" | Location: {result.location}" + (f" | Shown: {shown}" if shown else "")
    line += f" | Section: {result.section}" if result.section else ""
    return line + _commit_field(result)


def _commit_field(result: SearchResult) -> str:
    """`` | Commit: 1a2b3c4d5e6f`` (or `` | URL: ...`` on a known host) for a git source."""
    if result.url:
        return f" | URL: {result.url}"
    return f" | Commit: {result.commit[:12]}" if result.commit else ""


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


#: A question asking for a quantity: its answer holds a number.
_QUANTITY = re.compile(
    r"\bhow\s+(?:many(?:\s+times)?|much|often|long|far|old|big|large|fast|soon|frequently)\b"
    r"|\bwhat\s+(?:percentage|number|amount)\b",
    re.IGNORECASE,
)
#: A number in a piece of text: digits, or a number word (not "one": mostly a pronoun).
_NUMBER = re.compile(
    r"\d|\b(?:two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|fifteen|twenty"
    r"|thirty|forty|fifty|sixty|ninety|hundred|thousand|million|twice|dozen)\b",
    re.IGNORECASE,
)


def query_terms(query: str) -> frozenset[str]:
    """The stems of the query's words, common words and a quantity question's own words
    (``how many times``) left out."""
    asked = _QUANTITY.sub(" ", query)
    return frozenset(_stem(w) for w in _WORD.findall(asked) if w.lower() not in STOPWORDS)


def asks_quantity(query: str) -> bool:
    """Whether ``query`` asks how many, how much, how often, how long..."""
    return _QUANTITY.search(query) is not None


def term_spans(text: str, terms: frozenset[str]) -> list[tuple[int, int]]:
    """Start and end of every word of ``text`` whose stem is one of ``terms``."""
    if not terms:
        return []
    return [m.span() for m in _WORD.finditer(text) if _stem(m.group()) in terms]


def snippet(
    content: str,
    terms: frozenset[str],
    budget: int,
    quantity: bool = False,
    best: tuple[int, int] = (0, 0),
) -> str:
    """At most about ``budget`` characters of ``content`` around its best-matching passage
    (``quantity``: the question asks for one, so a passage holding a number comes first;
    among passages that match alike, one of the best chunk's, ``content[best[0]:best[1]]``:
    a purely semantic hit shows the best chunk's beginning, not its neighbour's).

    Neighbouring pieces are added while they fit, those after it first (they usually go on
    with the answer); ``…`` marks text left out before or after. Whitespace is collapsed: the
    result is one line of prose.
    """
    parts, top = best_piece(content, terms, quantity, best)
    if len(parts[top]) > budget:
        return _window(parts[top], terms, budget)
    lo = hi = top
    size = len(parts[top])
    # A heading starts another section: context of the match's own section only (its
    # heading before it, never the next one after it, nor the section before).
    while (
        hi + 1 < len(parts)
        and not parts[hi + 1].startswith(_HEADING)
        and size + 1 + len(parts[hi + 1]) <= budget
    ):
        hi += 1
        size += 1 + len(parts[hi])
    while lo > 0 and not parts[lo].startswith(_HEADING) and size + 1 + len(parts[lo - 1]) <= budget:
        lo -= 1
        size += 1 + len(parts[lo])
    text = " ".join(parts[lo : hi + 1])
    if lo > 0:
        text = f"{ELLIPSIS} {text}"
    if hi < len(parts) - 1:
        text = f"{text} {ELLIPSIS}"
    return text


@lru_cache(maxsize=64)
def best_piece(
    content: str, terms: frozenset[str], quantity: bool, best: tuple[int, int]
) -> tuple[tuple[str, ...], int]:
    """``content``'s pieces as shown, and the number of the one that matches best (on a
    tie, one of the best chunk's, ``content[best[0]:best[1]]``); kept for the few results
    being shown, since the snippet and the place of the lines shown both ask for it."""
    parts = tuple(_plain(p) for p in pieces(content)) or (" ".join(content.split()),)
    inside = _pieces_in(content, best)
    top = max(
        range(len(parts)),
        key=lambda i: (*_match_score(parts[i], terms, quantity), parts[i] in inside),
    )
    return parts, top


def _pieces_in(content: str, chars: tuple[int, int]) -> set[str]:
    """The pieces, as shown, of ``content[start:end]`` (none for an unknown ``(0, 0)``)."""
    start, end = chars
    return {_plain(p) for p in pieces(content[start:end])} if end > start else set()


def shown_place(result: SearchResult, terms: frozenset[str], quantity: bool) -> str:
    """The location the lines shown come from, when a merged neighbour holds them rather
    than the best chunk (whose location the result names); ``""`` otherwise."""
    if len(result.places) < 2 or not result.location:
        return ""
    parts, top = best_piece(result.content, terms, quantity, result.best_chars)
    piece = parts[top]
    if piece in _pieces_in(result.content, result.best_chars):
        return ""
    for start, end, location in result.places:
        if piece in _pieces_in(result.content, (start, end)):
            return location if location != result.location else ""
    return ""


def snippet_lines(
    content: str,
    terms: frozenset[str],
    width: int,
    max_lines: int,
    quantity: bool = False,
    best: tuple[int, int] = (0, 0),
) -> list[str]:
    """``snippet`` wrapped to ``width`` columns, at most ``max_lines`` lines.

    The budget is one line short of the maximum, so most snippets take fewer lines and
    wrapping rarely has to cut.
    """
    budget = max(width * max(max_lines - 1, 1), 40)
    text = snippet(content, terms, budget, quantity, best)
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


def _match_score(passage: str, terms: frozenset[str], quantity: bool) -> tuple[bool, int, int]:
    """How well a passage matches: for a quantity question, whether it holds a number and a
    query word (a passage without a number cannot say how many); then distinct query
    words found, then occurrences."""
    stems = [_stem(w) for w in _WORD.findall(passage)]
    found = [s for s in stems if s in terms]
    counts = quantity and bool(found) and _NUMBER.search(passage) is not None
    return counts, len(set(found)), len(found)


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


# -- the one renderer ---------------------------------------------------------------------

#: Widest a result's text is wrapped, whatever the terminal (long lines read badly); also
#: the fixed width of the compact view, so its output does not depend on $COLUMNS.
MAX_WIDTH = 100
INDENT = "    "
SNIPPET_LINES = 3
HIGHLIGHT = "bold red"  # like grep's and ripgrep's matches
#: A section path cut shorter than this says nothing: the header leaves it out.
MIN_SECTION = 12
_PATH_SEPARATOR = " › "


@dataclass
class Rendered:
    """Rendered text and the spans a terminal styles, as data (``rich`` makes them styles)."""

    plain: str = ""
    styles: list[tuple[int, int, str]] = field(default_factory=list)

    def add(self, text: str, style: str = "") -> None:
        """``text`` at the end, in ``style`` when one is given."""
        if style:
            self.styles.append((len(self.plain), len(self.plain) + len(text), style))
        self.plain += text

    def add_highlighted(self, text: str, terms: frozenset[str]) -> None:
        """``text`` with every word of the query (by stem) in the highlight style."""
        start = len(self.plain)
        self.plain += text
        self.styles += [(start + a, start + b, HIGHLIGHT) for a, b in term_spans(text, terms)]

    def rich(self) -> Text:
        """As a rich ``Text``, styled (loads rich)."""
        from rich.text import Text

        out = Text(self.plain)
        for start, end, style in self.styles:
            out.stylize(style, start, end)
        return out


def render(
    results: list[SearchResult],
    view: View = "contract",
    query: str = "",
    width: int = MAX_WIDTH,
    *,
    full: bool = False,
    first: int = 1,
) -> Rendered:
    """``results`` in ``view`` (see the module's docstring).

    ``query`` chooses and highlights the lines shown in the compact and terminal views;
    ``width`` is the terminal's (the compact view is always ``MAX_WIDTH`` wide); ``full``
    shows each passage whole there instead; ``first`` numbers the first result (chat
    numbers results across its searches; the LLM's views number them by rank).
    """
    out = Rendered()
    if view in ("contract", "model"):
        out.add(f"Found {len(results)} result(s):\n\n")
        for i, result in enumerate(results):
            out.add("\n\n" if i else "")
            out.add(result_line(result.rank, result, place=view == "model") + "\n")
            out.add(result.content)
        return out
    terminal = view == "terminal"
    terms = query_terms(query)
    quantity = asks_quantity(query)
    inner = (min(width, MAX_WIDTH) if terminal else MAX_WIDTH) - len(INDENT)
    for number, result in enumerate(results, start=first):
        out.add("\n" if number > first else "")
        shown = "" if full else shown_place(result, terms, quantity)
        if terminal:
            _terminal_header(out, number, result, width, shown)
        else:
            out.add(result_line(number, result, shown=shown))
        if full:
            out.add("\n")
            _body(out, result.content, terms, terminal)
            continue
        lines = snippet_lines(
            result.content, terms, inner, SNIPPET_LINES, quantity, result.best_chars
        )
        for line in lines:
            out.add("\n" + INDENT)
            _body(out, line, terms, terminal)
    return out


def _body(out: Rendered, text: str, terms: frozenset[str], terminal: bool) -> None:
    if terminal:
        out.add_highlighted(text, terms)
    else:
        out.add(text)


def _terminal_header(
    out: Rendered, number: int, result: SearchResult, width: int, shown: str = ""
) -> None:
    """``[1] 0.71  path › section · location`` in ``width`` columns (``shown``: where the
    lines shown are, when a merged neighbour holds them: ``· page 3 (shown: page 2)``): the
    location always whole, the path whole when it fits (it is what a reader copies), the
    section shortened in its middle to the room left, or left out when too little of it
    would show; on a very narrow terminal the path keeps its end (the file name)."""
    label, score = f"[{number}]", f" {result.score:.2f}  "
    location = f" · {result.location}" if result.location else ""
    if location and shown:  # "lines 34-47 (shown: 7-32)": the unit said once
        unit = result.location.split(" ", 1)[0]
        same = unit.rstrip("s") == shown.split(" ", 1)[0].rstrip("s")
        location += f" (shown: {shown.split(' ', 1)[1] if same and ' ' in shown else shown})"
    room = width - len(label) - len(score) - len(location)
    path, section = result.source_path, result.section
    if section and len(path) + len(_PATH_SEPARATOR) + len(section) > room:
        section = shorten_middle(section, room - len(path) - len(_PATH_SEPARATOR))
    if len(path) + (len(_PATH_SEPARATOR) + len(section) if section else 0) > room:
        path = keep_end(path, max(room, len(ELLIPSIS) + 1))
    out.add(label, "bold")
    out.add(score, "dim")
    out.add(path, "green")
    if section:
        out.add(_PATH_SEPARATOR + section, "cyan")
    if location:
        out.add(location, "green")


def shorten_middle(section: str, width: int) -> str:
    """A heading path in ``width`` characters, shortened in its middle: its first and last
    headings (``A › … › D``), else the start and the last heading whole (``Retries an… ›
    The retry policy``), else the last heading (``… › The retry pol…``), cut if need be;
    ``""`` when under ``MIN_SECTION`` characters would show."""
    if len(section) <= width:
        return section
    if width < MIN_SECTION:
        return ""
    parts = section.split(_PATH_SEPARATOR)
    last = parts[-1]
    if len(parts) > 2:
        ends = _PATH_SEPARATOR.join([parts[0], ELLIPSIS, last])
        if len(ends) <= width:
            return ends
    room = width - len(last) - len(_PATH_SEPARATOR) - len(ELLIPSIS)
    if len(parts) > 1 and room >= 8:
        start = _PATH_SEPARATOR.join(parts[:-1])[:room].rstrip()
        return start + ELLIPSIS + _PATH_SEPARATOR + last
    dropped = ELLIPSIS + _PATH_SEPARATOR if len(parts) > 1 else ""
    if width - len(dropped) < MIN_SECTION // 2:
        dropped = ""
    room = width - len(dropped)
    return dropped + (last if len(last) <= room else last[: room - 1].rstrip() + ELLIPSIS)


def keep_end(text: str, width: int) -> str:
    """``text`` cut to ``width`` from the left, at a ``/`` when one is near:
    ``…/operations/upgrade-notes.txt``."""
    if len(text) <= width:
        return text
    tail = text[len(text) - width + 1 :]
    slash = tail.find("/")
    return ELLIPSIS + (tail[slash:] if 0 <= slash < len(tail) // 2 else tail)


def highlighted(text: str, terms: frozenset[str]) -> Text:
    """``text`` with every word of the query (by stem) in the highlight style."""
    out = Rendered()
    out.add_highlighted(text, terms)
    return out.rich()
