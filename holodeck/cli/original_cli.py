"""The original HoloDeck's commands and flags that holodeck does not have, and what to use.

A user coming from justinbarias/holodeck types them from habit or from its docs; instead of
click's bare "No such option", each gets one line saying what it was there and what does
the job here (exit 2). docs/coming-from-holodeck.md lists the same entries.
"""

from __future__ import annotations

import click

_COMMAND = "the original HoloDeck's command that"
_FLAG = "the original HoloDeck's flag for"

#: Commands of the original (``holodeck deploy ...``), or subcommands (``config init``).
COMMANDS: dict[str, str] = {
    "deploy": f"{_COMMAND} builds and deploys agent containers; holodeck builds no "
    "containers: `holodeck serve` gives the knowledge bases to MCP clients",
    "mcp": f"{_COMMAND} searches an MCP registry and adds servers to agent.yaml; add the "
    "server as a `type: mcp` tool under tools: in agent.yaml",
    "optimize": f"{_COMMAND} tunes the agent's prompt and settings; holodeck has no "
    "optimizer: `holodeck test` runs the cases as written",
    "config init": f"{_COMMAND} writes a global or project config file; `holodeck init` "
    "writes .holodeck/config.yaml, and ~/.holodeck/config.yaml is written by hand (a "
    "`vectorstore:` section)",
}

_TRACING = (
    f"{_FLAG} OpenTelemetry tracing; here: agent.yaml's observability: block (enabled: true), "
    "or --trace FILE for one run's spans"
)
_INIT = "holodeck init writes a starter agent.yaml:"
_NO_LIMIT = "a warning past that many messages; holodeck sets no limit: /clear starts over"

#: Flags of the original, by the command that had them ("" for any command).
FLAGS: dict[tuple[str, str], str] = {
    ("", "--observability"): _TRACING,
    ("chat", "-o"): _TRACING,
    ("chat", "--max-messages"): f"{_FLAG} {_NO_LIMIT}",
    ("chat", "-m"): f"{_FLAG} {_NO_LIMIT}",
    ("chat", "--no-quiet"): f"{_FLAG} showing the logs, the default here: leave it out",
    ("chat", "-Q"): f"{_FLAG} showing the logs, the default here: leave it out",
    ("chat", "-f"): f"{_FLAG} re-ingesting first; here: --force-ingest",
    ("test", "-f"): f"{_FLAG} re-ingesting first; here: --force-ingest",
    ("test", "--output"): f"{_FLAG} writing a report; here: --report FILE (.json or .md)",
    ("test", "--parallel-test-cases"): f"{_FLAG} running cases at once; here: --parallel N",
    ("test", "-n"): f"{_FLAG} running the first N cases; here: --limit N",
    ("init", "--name"): f"{_FLAG} the agent's name; {_INIT} edit its name: (default: the "
    "folder's name)",
    ("init", "--description"): f"{_FLAG} the agent's description; {_INIT} edit its description:",
    ("init", "--author"): f"{_FLAG} the agent's author; {_INIT} add author: to it",
    ("init", "--template"): f"{_FLAG} a project template; holodeck init has one: a knowledge "
    "base over --source (default docs/), with commented model: and evaluations: blocks",
    ("init", "--llm"): f"{_FLAG} the LLM provider; {_INIT} uncomment its model: block",
    ("init", "--vectorstore"): f"{_FLAG} a vector database; the local index is the default, "
    "Redis a `vectorstore:` section in .holodeck/config.yaml",
    ("init", "--evals"): f"{_FLAG} evaluation metrics; {_INIT} uncomment its evaluations: block",
    ("init", "--mcp"): f"{_FLAG} MCP servers; {_INIT} add each as a `type: mcp` tool under "
    "its tools:",
    ("init", "--non-interactive"): f"{_FLAG} skipping its questions; holodeck init asks none: "
    "leave it out",
}


class FromTheOriginal(click.ClickException):
    """A command or flag of the original HoloDeck: one line, and a usage error's exit code."""

    exit_code = 2


def command_error(path: str, name: str) -> FromTheOriginal | None:
    """The line for ``holodeck [group] NAME`` when NAME is one of the original's commands."""
    group = path.split(" ", 1)[1] if " " in path else ""
    what = COMMANDS.get(f"{group} {name}".strip())
    return None if what is None else FromTheOriginal(f"{path} {name}: {what}")


def flag_error(path: str, flag: str) -> FromTheOriginal | None:
    """The line for ``FLAG`` given to the command at ``path`` (``holodeck chat``)."""
    command = path.split(" ", 1)[1] if " " in path else ""
    what = FLAGS.get((command, flag)) or FLAGS.get(("", flag))
    return None if what is None else FromTheOriginal(f"{path} {flag}: {what}")
