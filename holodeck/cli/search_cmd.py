"""``holodeck search``: ask the knowledge bases a question from the shell.

A shell search is a process of its own, so its start-up is most of its cost: it imports only
what answering needs (the ingest pipeline's converters and progress bars only when files
changed), checks the files with one ``stat`` each, and leaves without the interpreter's
teardown once its output is flushed and its indexes closed (``main``'s fast exit)."""

from __future__ import annotations

import json
import logging
import sys
from typing import Any

import click

from holodeck.cli.options import FiniteRange, agent_option, agent_path
from holodeck.config.loader import load_project
from holodeck.ingest.discover import path_text
from holodeck.knowledge_base import KnowledgeBase, clean_query, quick_start, settle
from holodeck.results import SearchResult, render, search_json, tool_results_json
from holodeck.retrieval.fusion import MODES, SearchMode
from holodeck.vectorstore.records import ChunkFilters


class _QueryFirst(click.Command):
    """Takes a query that starts with ``-`` (``holodeck search --no-ff``) as the query when it
    names no option and nothing else is the query, as grep and git grep take a pattern; a
    mistyped option beside a query is still refused (``--top-kk 3 "q"``)."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        return super().parse_args(ctx, _dash_query_last(self, ctx, args))


def _dash_query_last(command: click.Command, ctx: click.Context, args: list[str]) -> list[str]:
    """``args`` with a lone unknown ``-word`` moved after ``--`` (so it is the query)."""
    if "--" in args:
        return args
    takes_value: dict[str, bool] = {}
    for param in command.get_params(ctx):
        if isinstance(param, click.Option):
            for name in (*param.opts, *param.secondary_opts):
                takes_value[name] = not (param.is_flag or param.count)
    unknown: list[int] = []
    positional = 0
    i = 0
    while i < len(args):
        arg = args[i]
        name = arg.split("=", 1)[0]
        if name in takes_value:
            i += 2 if takes_value[name] and "=" not in arg else 1
            continue
        if arg.startswith("-") and arg != "-" and not _short_flags(arg, takes_value):
            unknown.append(i)
        else:
            positional += 1
        i += 1
    if len(unknown) != 1 or positional:
        return args
    query = args[unknown[0]]
    return [*args[: unknown[0]], *args[unknown[0] + 1 :], "--", query]


def _short_flags(arg: str, takes_value: dict[str, bool]) -> bool:
    """``-vq``: short flags run together, each a known option."""
    return (
        len(arg) > 2
        and not arg.startswith("--")
        and all(f"-{c}" in takes_value and not takes_value[f"-{c}"] for c in arg[1:])
    )


@click.command(cls=_QueryFirst)
@click.argument("query")
@agent_option
@click.option("--tool", "tool_name", default=None, help="Search only this tool.")
@click.option(
    "--top-k",
    type=click.IntRange(1, 1000),
    default=None,
    help="Results per tool (up to 1000, e.g. for evaluation; default: the tool's top_k).",
)
@click.option(
    "--mode",
    type=click.Choice(MODES),
    default=None,
    help="hybrid, semantic or keyword (default: the tool's search_mode).",
)
@click.option("--min-score", type=FiniteRange(0.0, 1.0), default=None, help="Score floor.")
@click.option("--book", "books", multiple=True, help="Only this folder of the source.")
@click.option("--tag", "tags", multiple=True, help="Only chunks with this front-matter tag.")
@click.option("--language", default=None, help="Only chunks in this language.")
@click.option("--json", "as_json", is_flag=True, help="Print JSON with ranks, scores and ids.")
@click.option(
    "--full",
    is_flag=True,
    help="Print each passage whole (default: the lines that best match).",
)
@click.option(
    "--no-ingest",
    "no_ingest",
    is_flag=True,
    help="Search what is indexed now; do not ingest changed files first.",
)
@click.pass_context
def search(
    ctx: click.Context,
    query: str,
    agent_opt: str | None,
    tool_name: str | None,
    top_k: int | None,
    mode: SearchMode | None,
    min_score: float | None,
    books: tuple[str, ...],
    tags: tuple[str, ...],
    language: str | None,
    as_json: bool,
    full: bool,
    no_ingest: bool,
) -> None:
    """Search the knowledge bases (ingesting whatever changed first, with its progress on
    stderr; --no-ingest searches what is indexed now).

    Each result shows where it is (file, section, location) and the lines that best
    match, the query's words highlighted on a terminal; piped, the same in a stable
    plain form (--full: whole passages; --json: every field, passages whole). A query
    starting with "-" is searched as it is (holodeck search --no-ff).
    """
    try:
        query = clean_query(query)
    except ValueError as exc:
        raise click.BadParameter(str(exc), param_hint="QUERY") from None
    project = load_project(agent_path(agent_opt))
    tools = KnowledgeBase.every(project, [tool_name] if tool_name else None)
    if not tools:
        raise click.UsageError(f"{project.agent_path.name} has no vectorstore tools to search")
    books = tuple(_book_id(book) for book in books)
    filters = ChunkFilters(book_ids=list(books) or None, tags=list(tags) or None, language=language)
    # One query each from here on: the models' quickest start, opened while the files are
    # checked (an ingest, which embeds many, reopens them with onnxruntime's optimisation).
    for_many = quick_start(tools)
    # What is loaded by now lives until the process ends: out of the collections the file
    # check's many small tuples would set off (its first full one walked all of it, a good
    # part of the check's time).
    settle()
    try:
        if no_ingest:
            for tool in tools:
                if not tool.document_count:
                    click.echo(
                        f"Warning: {tool.name}: nothing is indexed yet; run `holodeck ingest`",
                        err=True,
                    )
        else:
            changed = [tool for tool in tools if not tool.is_current()]
            if changed:
                from holodeck.cli.progress import ingest_tools

                for_many()

                # Work shows (progress, then the summary line, on stderr); skipped-file
                # warnings belong to `ingest`.
                if not ctx.obj.get("verbose"):
                    logging.getLogger("holodeck.ingest").setLevel(logging.ERROR)
                quiet = bool(ctx.obj.get("quiet"))
                ingest_tools(changed, False, quiet, wait=False, only_work=True)
        for tool in tools:
            _warn_unknown_books(tool, books)
            tool.preload()
        found = [
            (tool, *tool.find(query, top_k=top_k, min_score=min_score, filters=filters, mode=mode))
            for tool in tools
        ]
        if as_json:
            output = [tool_results_json(t.name, results, total) for t, results, total in found]
            click.echo(json.dumps(search_json(query, output), indent=2))
        elif sys.stdout.isatty():
            _show_on_terminal(query, found, min_score, full)
        else:
            click.echo(_piped(query, found, min_score, full))
    finally:
        for tool in tools:
            tool.close()
    ctx.obj["exit_fast"] = True  # answered, flushed and closed: see main()


def _piped(
    query: str,
    found: list[tuple[KnowledgeBase, list[SearchResult], int]],
    min_score: float | None,
    full: bool,
) -> str:
    """The compact view, plain (per result its line with where it is, then the lines that
    best match; ``full``: the whole passage), each tool under ``## name`` when several."""
    blocks = []
    for tool, results, total in found:
        if results:
            text = render(results, "compact", query, full=full).plain
        else:
            text = tool.render(query, results, total, min_score)
        blocks.append(text if len(found) == 1 else f"## {tool.name}\n{text}")
    return "\n\n".join(blocks)


def _show_on_terminal(
    query: str,
    found: list[tuple[KnowledgeBase, list[SearchResult], int]],
    min_score: float | None,
    full: bool,
) -> None:
    """What chat shows for the same results: the terminal view, fitted to the terminal."""
    from rich.text import Text

    from holodeck.console import make_console

    console = make_console(highlight=False, soft_wrap=full)
    blocks: list[Any] = []
    for tool, results, total in found:
        lines: list[Text] = [Text(f"## {tool.name}", style="bold")] if len(found) > 1 else []
        if results:
            lines.append(render(results, "terminal", query, console.width, full=full).rich())
        else:
            lines.append(Text(tool.render(query, results, total, min_score)))
        blocks.append(Text("\n").join(lines))
    console.print(Text("\n\n").join(blocks))


def _book_id(book: str) -> str:
    """A ``--book`` as the id of its folder: kept when typed as holodeck shows the folder,
    written by ``path_text`` when it is the folder's own name (a shell completed a name that
    is not UTF-8, or holds a control character)."""
    escaped = path_text(book)
    return book if escaped == book.replace("\\", "\\\\") else escaped


def _warn_unknown_books(tool: KnowledgeBase, books: tuple[str, ...]) -> None:
    """A ``--book`` naming no folder of the tool's documents says so (else the empty answer
    reads as "nothing relevant")."""
    if not books:
        return
    known = {
        doc.rsplit("/", 1)[0] if "/" in doc else "."
        for doc in tool.store.doc_states(tool.project.tenant_id, tool.name)
    }
    for book in books:
        if book not in known:
            shown = ", ".join(sorted(known)[:8]) + (", ..." if len(known) > 8 else "")
            click.echo(
                f"Warning: {tool.name}: no folder {book!r} in its documents "
                f"(folders: {shown or 'none'}); --book takes a folder relative to the "
                "tool's source",
                err=True,
            )
