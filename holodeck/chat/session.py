"""The chat loop: a terminal REPL, or one message per input line when not on a terminal.

On a terminal: prompt_toolkit for line editing and history, answers streamed as rich
Markdown, Ctrl-C stops the answer in progress and returns to the prompt, and a second Ctrl-C
(before anything is typed) ends chat with exit 130, even while the first one's turn is still
ending: a tool call left hanging never keeps chat open. Otherwise (pipes,
scripts): each input line is a message, answers go to stdout as plain text, tool lines and
errors to stderr, and the exit code is 3 if any message failed. Without an LLM an answer is
the compact list of results (``render.compact_results``), the same facts in both modes.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import signal
import sys
import threading
from collections.abc import AsyncIterator
from pathlib import Path
from typing import TYPE_CHECKING, TextIO

from rich.console import Console
from rich.live import Live
from rich.markdown import Markdown
from rich.status import Status
from rich.syntax import Syntax
from rich.text import Text

from holodeck.agent.loop import Agent, ToolCallRecord, TurnResult
from holodeck.agent.structured import formatted, violation
from holodeck.chat.render import (
    EXIT_WORDS,
    MAX_WIDTH,
    RESULTS_HINT,
    banner,
    compact_results,
    help_text,
    show_result,
    sources_text,
    tool_line,
    tools_text,
)
from holodeck.config.config_file import home_dir
from holodeck.console import make_console
from holodeck.errors import HoloDeckError, LLMError
from holodeck.redact import redact

if TYPE_CHECKING:
    from prompt_toolkit.history import History

log = logging.getLogger("holodeck.chat")

HISTORY_FILE = Path(".holodeck") / "chat_history"
PROMPT = "you> "
#: The exit code of a chat that Ctrl-C ended (128 + SIGINT, as the shell reports it).
INTERRUPTED_EXIT = 130


class ChatSession:
    """One conversation with ``agent`` until /exit or end of input."""

    def __init__(
        self,
        agent: Agent,
        *,
        interactive: bool,
        stdin: TextIO | None = None,
        stdout: TextIO | None = None,
        stderr: TextIO | None = None,
    ) -> None:
        self.agent = agent
        self.interactive = interactive
        self.stdin = stdin or sys.stdin
        self.stdout = stdout or sys.stdout
        self.stderr = stderr or sys.stderr
        self.console = make_console(file=self.stdout, highlight=False)
        self.last_calls: list[ToolCallRecord] = []
        self.failures = 0
        self.hinted = False  # the /show hint is given once per session
        self.quit_armed = False  # the last key was a Ctrl-C: one more ends the session
        self.interrupted = False  # a second Ctrl-C ended the session

    async def run(self) -> int:
        """Chat until the user leaves; the exit code (line mode: 3 if any message failed)."""
        self._info(banner(self.agent))
        if self.interactive:
            await self._run_terminal()
            if self.interrupted:
                print("Interrupted.", file=self.stderr, flush=True)
                return INTERRUPTED_EXIT
            return 0
        async for line in _lines(self.stdin):
            if not await self.handle(line):
                break
        return LLMError.exit_code if self.failures else 0

    async def handle(self, line: str) -> bool:
        """One input line: a command or a message. False when the session should end."""
        text = line.strip()
        if not text:
            return True
        lowered = text.lower()
        if lowered in EXIT_WORDS:
            return False
        if text.startswith("/"):
            name, _, arg = text.partition(" ")
            self._command(name.lower(), arg.strip())
            return True
        if self.interactive:
            return await self._answer_cancellable(text)
        await self._answer(text)
        return True

    # -- commands ----------------------------------------------------------------------

    def _command(self, name: str, arg: str) -> None:
        if name == "/help":
            self._show(help_text())
        elif name == "/tools":
            self._show(tools_text(self.agent))
        elif name == "/show":
            self._show(show_result(self.last_calls, arg, self.interactive))
        elif name == "/sources":
            width = self.console.width if self.interactive else MAX_WIDTH
            self._show(sources_text(self.last_calls, width))
        elif name == "/clear":
            self.agent.reset()
            self.last_calls = []
            self._info("Conversation cleared.")
        else:
            self._info(f"Unknown command {name}; /help lists the commands.")

    # -- answering ---------------------------------------------------------------------

    async def _answer(self, message: str) -> TurnResult | None:
        """Run one turn, showing tool calls and the answer; an error is one line."""
        out: _TerminalOutput | _PlainOutput = (
            _TerminalOutput(self.console)
            if self.interactive
            else _PlainOutput(self.stdout, self.stderr)
        )
        try:
            with out:
                streams = not self.agent.retrieval_only and self.agent.schema is None
                result = await self.agent.run_turn(
                    message,
                    on_text=out.text if streams else None,
                    on_tool=lambda record: out.tool(tool_line(record), record.kind),
                )
        except HoloDeckError as exc:
            out.abort()
            self.failures += 1
            self.last_calls = []
            self._error(str(exc))
            return None
        self.last_calls = result.tool_calls
        if self.agent.retrieval_only:
            width = self.console.width if self.interactive else MAX_WIDTH
            out.results(compact_results(result.tool_calls, width, self.interactive))
        elif self.agent.schema is not None:  # structured output: the JSON, indented
            out.json(formatted(result.answer))
        out.finish()
        if self.agent.schema is not None:
            problem = violation(result.answer, self.agent.schema)
            if problem:
                self._info(f"Notice: the answer does not fit response_format: {problem}")
        if self.interactive and self.agent.retrieval_only and not self.hinted:
            self.hinted = any(record.results for record in result.tool_calls)
            if self.hinted:
                self._info(RESULTS_HINT)
        if result.notice:
            self._info(f"Notice: {result.notice} (--max-tool-rounds raises the limit)")
        return result

    async def _answer_cancellable(self, message: str) -> bool:
        """``_answer`` as a task that Ctrl-C cancels, leaving the session running; False
        when a second Ctrl-C came before the turn had ended, which ends the session."""
        loop = asyncio.get_running_loop()
        task = asyncio.ensure_future(self._answer(message))
        second: asyncio.Future[None] = loop.create_future()

        def on_ctrl_c() -> None:
            if not task.cancelled() and task.cancelling() == 0:
                task.cancel()  # the first: end the turn
            elif not second.done():
                second.set_result(None)  # the turn is still ending: stop waiting for it

        installed = False
        with contextlib.suppress(NotImplementedError, RuntimeError):  # not on Windows
            loop.add_signal_handler(signal.SIGINT, on_ctrl_c)
            installed = True
        try:
            await asyncio.wait((task, second), return_when=asyncio.FIRST_COMPLETED)
        except asyncio.CancelledError:  # the session itself is cancelled (SIGTERM)
            task.cancel()
            raise
        finally:
            if installed:
                loop.remove_signal_handler(signal.SIGINT)
        if second.done():  # a turn still running is left to the session's end, which cancels it
            self.interrupted = True
            return False
        if task.cancelled():
            self.console.print("[dim](answer interrupted; Ctrl-C again quits)[/dim]")
            self.quit_armed = True
            return True
        task.result()  # what the turn raised besides a HoloDeckError
        return True

    # -- terminal ----------------------------------------------------------------------

    async def _run_terminal(self) -> None:
        from prompt_toolkit import PromptSession

        session: PromptSession[str] = PromptSession(history=_history())
        while True:
            try:
                line = await session.prompt_async(PROMPT)
            except KeyboardInterrupt:
                if session.default_buffer.text:  # Ctrl-C on a typed line clears it
                    self.quit_armed = False
                elif self.quit_armed:  # the second Ctrl-C in a row
                    self.interrupted = True
                    break
                else:
                    self._info("(Ctrl-C again quits, as do /exit and Ctrl-D)")
                    self.quit_armed = True
                continue
            except EOFError:
                break  # Ctrl-D
            self.quit_armed = False
            if not await self.handle(line):
                break

    # -- output helpers ----------------------------------------------------------------

    def _show(self, text: str | Text) -> None:
        """Command output: on stdout in both modes (it is what the user asked for)."""
        if self.interactive:
            self.console.print(Text(text) if isinstance(text, str) else text)
        else:
            print(text if isinstance(text, str) else text.plain, file=self.stdout, flush=True)

    def _info(self, text: str) -> None:
        """Status lines: dim on the terminal, stderr in line mode."""
        if self.interactive:
            self.console.print(Text(text, style="dim"))
        else:
            print(text, file=self.stderr, flush=True)

    def _error(self, text: str) -> None:
        text = redact(text)
        if self.interactive:
            self.console.print(Text(f"Error: {text}", style="bold red"))
        else:
            print(f"Error: {text}", file=self.stderr, flush=True)


def _history() -> History:
    """Input history kept across sessions in ``~/.holodeck/chat_history``."""
    from prompt_toolkit.history import FileHistory, InMemoryHistory

    path = home_dir() / HISTORY_FILE
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.touch(exist_ok=True)
    except OSError as exc:
        log.warning("Input history not saved: cannot write %s (%s)", path, exc)
        return InMemoryHistory()
    return FileHistory(str(path))


async def _lines(stream: TextIO) -> AsyncIterator[str]:
    """The lines of ``stream``, read by a daemon thread so the event loop never blocks on
    input: Ctrl-C or SIGTERM while chat waits for the next line stop it at once."""
    loop = asyncio.get_running_loop()
    queue: asyncio.Queue[str] = asyncio.Queue()

    def put(line: str) -> None:
        with contextlib.suppress(RuntimeError):  # the loop has closed: nobody listens
            loop.call_soon_threadsafe(queue.put_nowait, line)

    def pump() -> None:
        try:
            for line in iter(stream.readline, ""):
                put(line)
        except (OSError, ValueError):  # closed under us
            pass
        put("")

    threading.Thread(target=pump, name="holodeck-chat-stdin", daemon=True).start()
    while line := await queue.get():
        yield line


class _PlainOutput:
    """Line mode: answer text straight to stdout as it arrives, tool lines to stderr."""

    def __init__(self, stdout: TextIO, stderr: TextIO) -> None:
        self.stdout = stdout
        self.stderr = stderr
        self.wrote = False

    def __enter__(self) -> _PlainOutput:
        return self

    def __exit__(self, *exc: object) -> None:
        pass

    def text(self, chunk: str) -> None:
        self.stdout.write(chunk)
        self.stdout.flush()
        self.wrote = True

    def tool(self, line: str, kind: str = "search") -> None:
        if self.wrote:
            self.stdout.write("\n")
            self.wrote = False
        label = "search" if kind == "search" else "tool"
        print(f"[{label}] {line}", file=self.stderr, flush=True)

    def results(self, answer: Text) -> None:
        self.stdout.write(answer.plain)
        self.wrote = True

    def json(self, answer: str) -> None:
        self.stdout.write(answer)
        self.wrote = True

    def finish(self) -> None:
        self.stdout.write("\n\n" if self.wrote else "\n")
        self.stdout.flush()

    def abort(self) -> None:
        """End a partly written answer before the error line."""
        if self.wrote:
            self.stdout.write("\n")
            self.stdout.flush()


class _TerminalOutput:
    """Terminal: a spinner while waiting, Markdown re-rendered live as text streams in."""

    def __init__(self, console: Console) -> None:
        self.console = console
        self.buffer = ""
        self.live: Live | None = None
        self.status: Status | None = None

    def __enter__(self) -> _TerminalOutput:
        self._wait()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop()

    def _wait(self) -> None:
        self._stop()
        self.status = self.console.status("thinking…", spinner="dots")
        self.status.start()

    def _stop(self) -> None:
        if self.status is not None:
            self.status.stop()
            self.status = None
        if self.live is not None:
            self.live.stop()
            self.live = None

    def text(self, chunk: str) -> None:
        if self.live is None:
            self._stop()
            self.buffer = ""
            self.live = Live(
                console=self.console, refresh_per_second=12, vertical_overflow="visible"
            )
            self.live.start()
        self.buffer += chunk
        self.live.update(Markdown(self.buffer))

    def tool(self, line: str, kind: str = "search") -> None:
        self._stop()
        mark = "⌕" if kind == "search" else "⚙"
        self.console.print(Text(f"  {mark} {line}", style="cyan"))
        self._wait()

    def json(self, answer: str) -> None:
        self._stop()
        self.console.print(Syntax(answer, "json", word_wrap=True, background_color="default"))

    def results(self, answer: Text) -> None:
        self._stop()
        # Snippets come wrapped and headers fitted to the width (the location kept whole):
        # nothing is cut here, but a line a resize made too long ends in "…", not wrapped.
        self.console.print(answer, no_wrap=True, overflow="ellipsis")

    def finish(self) -> None:
        self._stop()
        self.console.print()

    def abort(self) -> None:
        self._stop()
