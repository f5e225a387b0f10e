"""The ``holodeck`` command: global flags, logging, and one place that turns errors into lines.

Commands live in their own modules and hold no ingestion or search logic: they parse flags,
call the library and render. Every ``HoloDeckError`` becomes one line on stderr and its exit
code (2 for a user's mistake or a damaged index); ``-v`` adds the traceback. ``-v`` and
``-q`` work before and after the command name alike (``holodeck -q ingest`` = ``holodeck
ingest -q``), as in git, pip or ruff: every command gets them when it is looked up.
"""

from __future__ import annotations

import contextlib
import difflib
import importlib
import logging
import os
import sys
import traceback
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import click

from holodeck import __version__, tracing
from holodeck.cli.original_cli import command_error, flag_error
from holodeck.errors import ConfigError, HoloDeckError
from holodeck.logs import setup_logging
from holodeck.redact import redact_url
from holodeck.vectorstore.progress import show_with


class HoloDeckGroup(click.Group):
    """A click group whose commands report errors as one redacted line with an exit code."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(COMMANDS)

    def resolve_command(
        self, ctx: click.Context, args: list[str]
    ) -> tuple[str | None, click.Command | None, list[str]]:
        """An unknown command is one of the original HoloDeck's (said what it was and what
        to use), or a typo (the nearest command suggested)."""
        name = args[0]
        if self.get_command(ctx, name) is None and not name.startswith("-"):
            original = command_error(ctx.command_path, name)
            if original is not None:
                raise original
            near = difflib.get_close_matches(name, COMMANDS, n=1, cutoff=0.6)
            if near:
                raise click.UsageError(f"No such command '{name}'. Did you mean '{near[0]}'?", ctx)
        return super().resolve_command(ctx, args)

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        try:
            return super().parse_args(ctx, args)
        except click.NoSuchOption as exc:  # holodeck --trace ...
            raise _from_the_original(exc) from None

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        """Each command's first sentence whole, wrapped (click cuts it with "...")."""
        rows = [(name, self.get_command(ctx, name)) for name in self.list_commands(ctx)]
        with formatter.section("Commands"):
            formatter.write_dl(
                [(name, cmd.get_short_help_str(limit=10_000)) for name, cmd in rows if cmd]
            )

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        target = COMMANDS.get(cmd_name)
        if target is None:
            return None
        module, attr = target.split(":")
        command: click.Command = getattr(importlib.import_module(module), attr)
        _add_verbosity_options(command)
        return command

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except click.UsageError as exc:  # a subcommand's unknown flag or subcommand
            raise _from_the_original(exc) from None
        except (click.exceptions.Exit, click.ClickException, click.Abort):
            raise
        except KeyboardInterrupt:
            click.echo("Interrupted.", err=True)
            sys.exit(130)
        except HoloDeckError as exc:
            _fail(ctx, exc, exc.exit_code)
        except (FileNotFoundError, ValueError) as exc:
            # The tool's exceptions for a missing source or bad input: the user's to fix.
            _fail(ctx, exc, ConfigError.exit_code)
        except Exception as exc:  # a bug or an unexpected failure: still one line by default
            _fail(ctx, exc, 3, unexpected=True)


def _from_the_original(exc: click.UsageError) -> click.ClickException:
    """The one line for a command or flag of the original HoloDeck, else ``exc`` itself."""
    path = exc.ctx.command_path if exc.ctx else "holodeck"
    found = None
    if isinstance(exc, click.NoSuchOption):
        found = flag_error(path, exc.option_name)
    elif isinstance(getattr(exc, "command_name", None), str):  # click's NoSuchCommand
        found = command_error(path, exc.command_name)  # type: ignore[attr-defined]
    return found or exc


def _fail(ctx: click.Context, exc: BaseException, code: int, unexpected: bool = False) -> None:
    verbose = bool((ctx.obj or {}).get("verbose"))
    if verbose:
        click.echo(redact_url("".join(traceback.format_exception(exc))), err=True)
    prefix = f"Error ({type(exc).__name__})" if unexpected else "Error"
    hint = "" if verbose or not unexpected else " (run with -v for the traceback)"
    click.echo(redact_url(f"{prefix}: {exc}{hint}"), err=True)
    sys.exit(code)


def _set_verbosity(ctx: click.Context, param: click.Parameter, value: bool) -> None:
    """Record ``-v``/``-q`` wherever they were given and set the log level from both."""
    obj = ctx.ensure_object(dict)  # subcommands share the root's dict
    if value:
        obj[f"{param.name}_asked"] = True
    obj["verbose"] = bool(obj.get("verbose_asked"))
    obj["quiet"] = bool(obj.get("quiet_asked")) and not obj["verbose"]  # -v wins
    level = logging.DEBUG if obj["verbose"] else logging.ERROR if obj["quiet"] else logging.INFO
    setup_logging(level)


def _trace_to(ctx: click.Context, param: click.Parameter, value: str | None) -> None:
    """``--trace FILE``: every span of this run written to FILE, one JSON object a line."""
    if value is None:
        return
    try:
        tracing.write_to(value)
    except HoloDeckError as exc:  # a path it cannot write, the extra not installed
        raise _OneLine(str(exc)) from None


class _OneLine(click.ClickException):
    """A bad global flag: its one line (``Error: ...``), exit code 2, no usage text."""

    exit_code = 2


def _verbosity_options() -> list[click.Option]:
    return [
        click.Option(
            ["-v", "--verbose"],
            is_flag=True,
            expose_value=False,
            callback=_set_verbosity,
            help="Show debug logs and tracebacks.",
        ),
        click.Option(
            ["-q", "--quiet"],
            is_flag=True,
            expose_value=False,
            callback=_set_verbosity,
            help="Only show errors and results.",
        ),
        click.Option(
            ["--trace"],
            metavar="FILE",
            expose_value=False,
            callback=_trace_to,
            help="Write the run's OpenTelemetry spans to FILE, one JSON object a line.",
        ),
    ]


def _add_verbosity_options(command: click.Command) -> None:
    """Give ``command`` (and a group's subcommands) ``-v``/``-q``, unless it has its own."""
    taken = {opt for param in command.params for opt in param.opts}
    if not taken & {"-v", "--verbose", "-q", "--quiet"}:
        command.params.extend(_verbosity_options())
    if isinstance(command, click.Group):
        for sub in command.commands.values():
            _add_verbosity_options(sub)


@click.group(cls=HoloDeckGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, "--version", prog_name="holodeck")
@click.pass_context
def cli(ctx: click.Context) -> None:
    """HoloDeck: turn folders of documents into knowledge bases an AI agent can search."""
    ctx.ensure_object(dict)
    show_with(_terminal_bar if sys.stderr.isatty() else None)


@contextmanager
def _terminal_bar(title: str, total: int, unit: str) -> Iterator[Callable[[int], None]]:
    """A store's long build as a bar on the terminal (rich loads only when one is drawn)."""
    from holodeck.cli.progress import build_bar

    with build_bar(title, total) as advance:
        yield advance


cli.params.extend(_verbosity_options())


#: Commands by name, imported only when used: a command never pays for another's imports
#: (the LLM client alone is slow to import).
COMMANDS = {
    "chat": "holodeck.cli.chat_cmd:chat",
    "config": "holodeck.cli.config_cmd:config",
    "ingest": "holodeck.cli.ingest_cmd:ingest",
    "init": "holodeck.cli.init_cmd:init",
    "search": "holodeck.cli.search_cmd:search",
    "serve": "holodeck.cli.serve_cmd:serve",
    "store": "holodeck.cli.store_cmd:store",
    "test": "holodeck.cli.test_cmd:test",
}


def main() -> None:
    """Console-script entry point.

    A command that has finished its work and closed what it opened may set
    ``exit_fast``: the process then ends at once, without the interpreter's teardown
    (freeing every module and object, joining idle threads: a good part of a shell
    search's time).
    """
    obj: dict[str, Any] = {}
    try:
        cli(obj=obj)
    except SystemExit as exc:
        if not obj.get("exit_fast"):
            raise
        code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
        for stream in (sys.stdout, sys.stderr):
            with contextlib.suppress(OSError, ValueError):  # a closed pipe: nothing to say
                stream.flush()
        tracing.shutdown()
        logging.shutdown()
        os._exit(code)
