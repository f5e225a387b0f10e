"""Text the chat shows besides LLM answers: search results, tool-call lines, commands, banners.

Results are ``holodeck.results.render``'s: its terminal view on a terminal, its compact
view in the line mode (pipes, scripts), the same facts in both. Results are numbered
across the last message's searches, so ``/show N`` names one.
"""

from __future__ import annotations

import json

from rich.text import Text

from holodeck.agent.loop import Agent, ToolCallRecord
from holodeck.results import MAX_WIDTH, SearchResult, View, keep_end, render, shorten_middle

COMMANDS = (
    ("/help", "this list"),
    ("/tools", "the tools the agent can use: knowledge bases, functions, MCP tools"),
    ("/show N", "result N of the last message, whole"),
    ("/sources", "the results of the last message's searches: rank, tool, source, score"),
    ("/clear", "forget the conversation"),
    ("/exit", "leave (also exit, quit, Ctrl-D)"),
)
EXIT_WORDS = frozenset({"/exit", "/quit", "exit", "quit"})
RETRIEVAL_ONLY_BANNER = (
    "No LLM configured (no `model:` in agent.yaml): each message searches the knowledge "
    "bases. Add a model: section to chat with an LLM."
)
RESULTS_HINT = "/show N prints result N whole; /sources lists them."
_QUERY_SHOWN = 60
_RESULT_SHOWN = 120


def banner(agent: Agent) -> str:
    """The first line of a session: which LLM answers, or that none does."""
    if agent.retrieval_only or agent.model is None:
        return RETRIEVAL_ONLY_BANNER
    tools = ", ".join([*(t.name for t in agent.tools), *agent.functions]) or "no tools"
    return (
        f"Chatting with {agent.model.name} ({agent.model.provider}); tools: {tools}. "
        "/help for commands, /exit to leave."
    )


def tool_line(record: ToolCallRecord) -> str:
    """One compact line per call: a search's query, results, best source and score; another
    tool's arguments and the start of what it returned."""
    if record.kind != "search":
        return _call_line(record)
    query = record.query if record.query is not None else ""
    if len(query) > _QUERY_SHOWN:
        query = query[: _QUERY_SHOWN - 1] + "…"
    head = f"{record.tool}({query!r})"
    if record.error is not None:
        return f"{head} -> error: {record.error}"
    if not record.results:
        return f"{head} -> no results ({record.seconds:.2f}s)"
    best = record.results[0]
    n = len(record.results)
    return (
        f"{head} -> {n} result{'s' if n != 1 else ''}, best {best.source_path} "
        f"({best.score:.2f}) ({record.seconds:.2f}s)"
    )


def _call_line(record: ToolCallRecord) -> str:
    """``lookup_order({"order_id": "A-1"}) -> {"status": "shipped"} (0.01s)``."""
    arguments = json.dumps(record.arguments, ensure_ascii=False)
    head = f"{record.tool}({_clip(arguments, _QUERY_SHOWN)})"
    if record.error is not None:
        return f"{head} -> error: {_clip(record.error, _RESULT_SHOWN)}"
    return f"{head} -> {_clip(record.output, _RESULT_SHOWN)} ({record.seconds:.2f}s)"


def _clip(text: str, width: int) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= width else flat[: width - 1] + "…"


def numbered(records: list[ToolCallRecord]) -> list[tuple[int, ToolCallRecord, SearchResult]]:
    """Every result of ``records`` with its number: 1, 2, ... across all the searches."""
    out: list[tuple[int, ToolCallRecord, SearchResult]] = []
    for record in records:
        for result in record.results:
            out.append((len(out) + 1, record, result))
    return out


def compact_results(
    records: list[ToolCallRecord], width: int = MAX_WIDTH, terminal: bool = False
) -> Text:
    """The retrieval-only answer: per result its header and a few lines around the best match
    (the terminal view with ``terminal``, else the compact view).

    Each search's results come under a ``## tool`` heading when there are several searches;
    a search with no results or an error shows the tool's own text for it.
    """
    view: View = "terminal" if terminal else "compact"
    blocks = []
    number = 1
    for record in records:
        lines = [Text(f"## {record.tool}", style="bold")] if len(records) > 1 else []
        if record.results:
            shown = render(record.results, view, record.query or "", width, first=number)
            lines.append(shown.rich())
            number += len(record.results)
        else:
            lines.append(Text(record.output))
        blocks.append(Text("\n").join(lines))
    return Text("\n\n").join(blocks)


def show_result(records: list[ToolCallRecord], arg: str, terminal: bool = False) -> Text:
    """``/show N``: result N of the last message, header and whole text."""
    results = numbered(records)
    if not results:
        return Text("No results in the last message.")
    if not arg.isdigit() or not 1 <= int(arg) <= len(results):
        return Text(f"/show takes a result number from 1 to {len(results)}.")
    number, record, result = results[int(arg) - 1]
    view: View = "terminal" if terminal else "compact"
    return render([result], view, record.query or "", full=True, first=number).rich()


def sources_text(records: list[ToolCallRecord], width: int = MAX_WIDTH) -> str:
    """``/sources``: one aligned row per result (rank, tool, source, where, score), no text.

    ``#`` is the number ``/show`` takes; it is the tool's rank when one tool was searched.
    Searches that failed or found nothing get a line saying so. Rows fit ``width``: a
    section gives way first (its location stays whole), then a source path keeps its end
    (the file name), ``…`` standing for what is left out.
    """
    if not records:
        return "No searches in the last message."
    rows = [("#", "tool", "source", "where", "score")]
    rows += [
        (str(n), rec.tool, res.source_path, res.place or "-", f"{res.score:.2f}")
        for n, rec, res in numbered(records)
    ]
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    excess = sum(widths) + 2 * (len(widths) - 1) - width
    if excess > 0:  # a section gives way first (the location stays whole), then the path
        floor = max(len(_location_of(row[3])) for row in rows)
        cut = min(excess, max(0, widths[3] - floor))
        widths[3] -= cut
        excess -= cut
        rows = [(*row[:3], _fit_where(row[3], widths[3]), row[4]) for row in rows]
    if excess > 0:
        widths[2] = max(len("source"), widths[2] - excess)
        rows = [(*row[:2], keep_end(row[2], widths[2]), *row[3:]) for row in rows]
    lines = (
        [
            "  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)).rstrip()
            for row in rows
        ]
        if len(rows) > 1
        else []
    )
    for record in records:
        if not record.results:
            query = record.query if record.query is not None else ""
            lines.append(f"{record.tool}({query!r}): {record.output}")
    return "\n".join(lines)


def _location_of(where: str) -> str:
    """The location part of a where cell (``lines 3-9`` of ``A › B · lines 3-9``)."""
    return where.rsplit(" · ", 1)[-1] if " · " in where else where


def _fit_where(where: str, width: int) -> str:
    """A where cell in ``width``: its section shortened in its middle
    (``Retries › … › Backoff · lines 3-9``), the location whole."""
    if len(where) <= width:
        return where
    if " · " not in where:
        return shorten_middle(where, width) or where[: max(1, width - 1)] + "…"
    section, location = where.rsplit(" · ", 1)
    short = shorten_middle(section, width - len(location) - len(" · "))
    return f"{short} · {location}" if short else location


def tools_text(agent: Agent) -> str:
    """``/tools``: each knowledge base with what backs it, then the other tools."""
    if not agent.tools and not agent.functions:
        return "This agent has no tools."
    lines = []
    for tool in agent.tools:
        lines.append(
            f"{tool.name}: {tool.description} ({tool.document_count} chunks, "
            f"{tool.backend} index, {tool.resolved.embedding_model})"
        )
    for function in agent.functions.values():
        kind = "MCP server tool" if function.kind == "mcp" else "Python function"
        lines.append(f"{function.name}: {_clip(function.description, 100)} ({kind})")
    return "\n".join(lines)


def help_text() -> str:
    """``/help``."""
    width = max(len(name) for name, _ in COMMANDS)
    lines = [f"{name.ljust(width)}  {what}" for name, what in COMMANDS]
    lines.append("Anything else is a message. Ctrl-C stops an answer; twice in a row, chat.")
    return "\n".join(lines)
