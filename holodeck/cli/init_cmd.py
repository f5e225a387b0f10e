"""``holodeck init``: start a project whose first ingest and first test pass with no edits."""

from __future__ import annotations

from pathlib import Path

import click

from holodeck.extras import missing_for_types
from holodeck.scaffold import INDEX_IGNORE, init_project


@click.command()
@click.argument("directory", metavar="[DIR]", default=".", type=click.Path(file_okay=False))
@click.option(
    "--source",
    default=None,
    help="The documents to search: an existing file or folder (default: docs/, created "
    "with a starter document when missing).",
)
@click.option("--force", is_flag=True, help="Overwrite agent.yaml and .holodeck/config.yaml.")
@click.pass_context
def init(ctx: click.Context, directory: str, source: str | None, force: bool) -> None:
    """Start a project in DIR (default: .): agent.yaml, .holodeck/config.yaml, .gitignore.

    The agent is named after the folder, searches docs/ (or --source) and has one test case
    that passes on those documents once ingested; file types read only when asked (.docx,
    .pptx, .xlsx, .html) that the documents hold are enabled. Nothing is overwritten without
    --force. -q prints nothing but errors.
    """
    result = init_project(Path(directory), source=source, force=force)
    if (ctx.obj or {}).get("quiet"):
        return
    shown = result.source + ("/" if (result.root / result.source).is_dir() else "")
    for name in result.created:
        click.echo(f"Created {name}")
    for name in result.overwritten:
        click.echo(f"Overwrote {name}")
    for name in result.kept:
        click.echo(f"Kept {name} (exists; --force overwrites it)")
    if result.gitignore != "present":
        verb = "Created .gitignore with" if result.gitignore == "created" else "Added"
        click.echo(f"{verb} {INDEX_IGNORE}" + (" to .gitignore" if verb == "Added" else ""))
    click.echo(
        f"Agent {result.agent_name!r}: one knowledge base (knowledge_base) over {shown}, "
        "one test case."
    )
    if result.enabled_types:
        found = ", ".join(f"{n} {t}" for t, n in result.enabled_types.items())
        click.echo(f"Enabled {' '.join(result.enabled_types)} in file_types ({found} in {shown})")
        if missing := missing_for_types(set(result.enabled_types)):
            extras = ",".join(missing)
            click.echo(f"Reading them needs pip install 'holodeck[{extras}]' (not installed)")
    where = "" if result.root == Path.cwd().resolve() else f"cd {directory} && "
    click.echo(f"Next: {where}holodeck ingest && holodeck test   (then: holodeck serve)")
