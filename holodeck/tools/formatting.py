"""The contract's "Formatted Output Template" for search results, byte for byte, and the
JSON form of the same results (``holodeck search --json``, MCP structured content)."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any


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
    location: str = ""  # where in the file: "page 3", "lines 10-42" ("" when unknown)
    chunks: list[int] = field(default_factory=list)  # chunk indexes merged into this passage


def format_results(results: list[SearchResult]) -> str:
    """``Found N result(s):`` then one block per result, blocks separated by a blank line."""
    blocks = [
        f"[{r.rank}] Score: {r.score:.2f} | Source: {r.source_path}\n{r.content}" for r in results
    ]
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
