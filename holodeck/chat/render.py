"""Text the chat shows besides answers: tool-call lines, /sources, /tools, /help, banners.

Plain strings, so the terminal and the line mode (pipes, scripts) show the same words.
"""

from __future__ import annotations

from holodeck.agent.loop import Agent, ToolCallRecord

COMMANDS = (
    ("/help", "this list"),
    ("/tools", "the knowledge bases the agent can search"),
    ("/sources", "the full results of the last message's searches"),
    ("/clear", "forget the conversation"),
    ("/exit", "leave (also exit, quit, Ctrl-D)"),
)
EXIT_WORDS = frozenset({"/exit", "/quit", "exit", "quit"})
RETRIEVAL_ONLY_BANNER = (
    "No LLM configured (no `model:` in agent.yaml): each message searches the knowledge "
    "bases. Add a model: section to chat with an LLM."
)
_QUERY_SHOWN = 60


def banner(agent: Agent) -> str:
    """The first line of a session: which LLM answers, or that none does."""
    if agent.retrieval_only or agent.model is None:
        return RETRIEVAL_ONLY_BANNER
    tools = ", ".join(t.name for t in agent.tools) or "no tools"
    return (
        f"Chatting with {agent.model.name} ({agent.model.provider}); tools: {tools}. "
        "/help for commands, /exit to leave."
    )


def tool_line(record: ToolCallRecord) -> str:
    """One compact line per search: tool, query, results, best source and score."""
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


def sources_text(records: list[ToolCallRecord]) -> str:
    """``/sources``: every search of the last message with exactly what the tool returned."""
    if not records:
        return "No searches in the last message."
    blocks = []
    for record in records:
        query = record.query if record.query is not None else ""
        blocks.append(f"== {record.tool}({query!r})\n{record.output}")
    return "\n\n".join(blocks)


def tools_text(agent: Agent) -> str:
    """``/tools``: each knowledge base with what backs it."""
    if not agent.tools:
        return "This agent has no knowledge bases."
    lines = []
    for tool in agent.tools:
        lines.append(
            f"{tool.name}: {tool.description} ({tool.document_count} chunks, "
            f"{tool.backend} index, {tool.resolved.embedding_model})"
        )
    return "\n".join(lines)


def help_text() -> str:
    """``/help``."""
    width = max(len(name) for name, _ in COMMANDS)
    lines = [f"{name.ljust(width)}  {what}" for name, what in COMMANDS]
    lines.append("Anything else is a message. Ctrl-C stops an answer.")
    return "\n".join(lines)
