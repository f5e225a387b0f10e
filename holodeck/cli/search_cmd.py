"""``holodeck search``: ask the knowledge bases a question from the shell.

A shell search is a process of its own, so its start-up is most of its cost: it imports only
what answering needs (the ingest pipeline's converters and progress bars only when files
changed), checks the files with one ``stat`` each, and leaves without the interpreter's
teardown once its output is flushed and its indexes closed (``main``'s fast exit)."""

from __future__ import annotations

import json
import logging

import click

from holodeck.cli.options import agent_option, agent_path
from holodeck.config.loader import load_project
from holodeck.embeddings.local import LocalOnnxEmbedder
from holodeck.retrieval.fusion import MODES, SearchMode
from holodeck.tools.formatting import search_json, tool_results_json
from holodeck.tools.vectorstore_tool import build_tools, clean_query
from holodeck.vectorstore.records import ChunkFilters


@click.command()
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
@click.option("--min-score", type=click.FloatRange(0.0, 1.0), default=None, help="Score floor.")
@click.option("--book", "books", multiple=True, help="Only this folder of the source.")
@click.option("--tag", "tags", multiple=True, help="Only chunks with this front-matter tag.")
@click.option("--language", default=None, help="Only chunks in this language.")
@click.option("--json", "as_json", is_flag=True, help="Print JSON with ranks, scores and ids.")
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
    no_ingest: bool,
) -> None:
    """Search the knowledge bases (ingesting whatever changed first, with its progress on
    stderr; --no-ingest searches what is indexed now)."""
    try:
        query = clean_query(query)
    except ValueError as exc:
        raise click.BadParameter(str(exc), param_hint="QUERY") from None
    project = load_project(agent_path(agent_opt))
    tools = build_tools(project, [tool_name] if tool_name else None)
    if not tools:
        raise click.UsageError(f"{project.agent_path.name} has no vectorstore tools to search")
    filters = ChunkFilters(book_ids=list(books) or None, tags=list(tags) or None, language=language)
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

                # Work shows (progress, then the summary line, on stderr); skipped-file
                # warnings belong to `ingest`.
                if not ctx.obj.get("verbose"):
                    logging.getLogger("holodeck.ingest").setLevel(logging.ERROR)
                quiet = bool(ctx.obj.get("quiet"))
                ingest_tools(changed, False, quiet, wait=False, only_work=True)
        for tool in tools:  # one query each from here on: the model's quickest start
            if isinstance(tool.embedder, LocalOnnxEmbedder):
                tool.embedder.quick_start = True
        output: list[dict[str, object]] = []
        texts: list[str] = []
        for tool in tools:
            results, total = tool.find(
                query, top_k=top_k, min_score=min_score, filters=filters, mode=mode
            )
            if as_json:
                output.append(tool_results_json(tool.name, results, total))
                continue
            text = tool.render(query, results, total, min_score, with_locations=True)
            texts.append(text if len(tools) == 1 else f"## {tool.name}\n\n{text}")
        if as_json:
            click.echo(json.dumps(search_json(query, output), indent=2))
        else:
            click.echo("\n\n".join(texts))
    finally:
        for tool in tools:
            tool.close()
    ctx.obj["exit_fast"] = True  # answered, flushed and closed: see main()
