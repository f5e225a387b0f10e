"""One search result as a person reads it: a header saying where it is, then the few lines
that best match the question, its words highlighted. ``holodeck chat`` and ``holodeck search``
show results alike through this module (it imports no LLM client: search stays quick).

The header has two forms. On a terminal, ``[1] 0.71  git/git-reset.txt › EXAMPLES › Undo a
commit · lines 150-194``: path, section and location in the width of a line. In a pipe, the
contract's result line continued with named fields, ``[1] Score: 0.71 | Source: path |
Location: lines 150-194 | Section: EXAMPLES › Undo a commit``, a stable form for scripts.
"""

from __future__ import annotations

from rich.text import Text

from holodeck.chat.snippets import query_terms, snippet_lines, term_spans
from holodeck.tools.formatting import SearchResult, where_fields

#: Widest a result's text is wrapped, whatever the terminal (long lines read badly); also
#: the fixed width of the line mode, so its output does not depend on $COLUMNS.
MAX_WIDTH = 100
INDENT = "    "
SNIPPET_LINES = 3
HIGHLIGHT = "bold red"  # like grep's and ripgrep's matches


def result_header(number: int, result: SearchResult, terminal: bool = False) -> Text:
    """A result's first line: its number, score, file, and where in the file when known."""
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
    out = Text(text)
    for start, end in term_spans(text, terms):
        out.stylize(HIGHLIGHT, start, end)
    return out
