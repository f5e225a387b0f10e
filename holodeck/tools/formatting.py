"""The contract's "Formatted Output Template" for search results, byte for byte (what the
LLM reads), the same text with each result's place in its file (for people and MCP
clients), and the JSON form of the same results (``holodeck search --json``, MCP structured
content)."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any, Literal


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
    #: Where in the file: ``page 3``, ``lines 10-42``, ``rows 2-41``...; empty when unknown.
    #: Shown to people (CLI, reports, JSON, MCP), never in the contract's formatted output.
    location: str = ""
    #: The heading path of its section: ``EXAMPLES › Undo a commit``; empty when unknown.
    section: str = ""

    @property
    def source_label(self) -> str:
        """``docs/manual.pdf (page 3)``: the path, then where in it when known."""
        return f"{self.source_path} ({self.location})" if self.location else self.source_path

    @property
    def place(self) -> str:
        """``EXAMPLES › Undo a commit · lines 150-194``: section and location, as known."""
        return " · ".join(part for part in (self.section, self.location) if part)


#: How a result line says where the result is: not at all (the contract's template, what
#: the agent's LLM reads), ``label`` (``Source: path (lines 3-9) | Section: A › B``, for
#: people: ``holodeck search``) or ``fields`` (``Source: path | Location: lines 3-9 |
#: Section: A › B``: MCP results and chat's line mode).
Where = Literal["label", "fields"] | None


def where_fields(result: SearchResult) -> str:
    """`` | Location: lines 3-9 | Section: A › B``, each field only when known."""
    out = f" | Location: {result.location}" if result.location else ""
    return out + (f" | Section: {result.section}" if result.section else "")


def format_results(results: list[SearchResult], *, where: Where = None) -> str:
    """``Found N result(s):`` then one block per result, blocks separated by a blank line.

    The default is the contract's template byte for byte (what the LLM reads); ``where``
    adds each result's place in its file (see ``Where``).
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
