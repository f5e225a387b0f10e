"""``holodeck chat`` in a real pseudo-terminal (pexpect): prompt, commands, Ctrl-C, Ctrl-D.

What the user sees is read back through a terminal emulator (pyte), so "fits in 25 lines"
means 25 rows of a real 80-column screen.
"""

from __future__ import annotations

import re
from pathlib import Path

import pexpect
import pyte
import pytest
from chat_helpers import with_model
from fake_openai import FakeOpenAI, raw, text, tool_calls
from terminal import spawn_holodeck

PROMPT = "you>"
QUESTION = "How do I retry a failed job?"
#: A result's first line on a terminal: number, score, source (and location when known).
HEADER = re.compile(r"^\[\d\] \d\.\d\d  examples/docs/\S+( › .+)?( · .+)?$")
#: SGR sequences that set a style; prompt_toolkit's plain resets (ESC[0m) do not count.
STYLE = re.compile(r"\x1b\[(?!0?m)[0-9;]*m")


def spawn(
    project: Path,
    *args: str,
    env: dict[str, str] | None = None,
    no_color: bool = True,
    size: tuple[int, int] = (50, 200),
) -> pexpect.spawn:
    """``holodeck chat ARGS`` on a ``size`` (rows, columns) terminal, its output logged."""
    child = spawn_holodeck(
        "chat",
        *args,
        cwd=project,
        size=size,
        # pexpect does not answer cursor-position requests
        env={"PROMPT_TOOLKIT_NO_CPR": "1", **(env or {})},
        no_color=no_color,
        timeout=120,
    )
    child.logfile_read = open(project / "terminal.log", "w", encoding="utf-8")  # noqa: SIM115
    return child


def finish(child: pexpect.spawn) -> int:
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus is not None
    return child.exitstatus


def terminal_output(project: Path) -> str:
    """Everything the session wrote to the terminal, escape codes included."""
    with open(project / "terminal.log", encoding="utf-8", newline="") as log:  # keep the \r
        return log.read()


def screen_rows(project: Path, size: tuple[int, int]) -> list[str]:
    """The screen as a terminal of ``size`` shows it at the end of the session."""
    rows, columns = size
    screen = pyte.Screen(columns, rows)
    pyte.Stream(screen).feed(terminal_output(project))
    return [row.rstrip() for row in screen.display]


def test_retrieval_only_session(example: Path) -> None:
    size = (200, 80)  # 80 columns; rows enough that nothing scrolls away before it is read
    child = spawn(example, "-a", "agent.yaml.example", size=size)
    try:
        child.expect_exact("No LLM configured (no `model:` in agent.yaml)")
        child.expect_exact(PROMPT)
        child.sendline(QUESTION)
        child.expect_exact(f"knowledge_base('{QUESTION}') -> 5 results")
        child.expect(r"\[1\] \d\.\d\d  examples/docs/guides/retries\.md")
        child.expect(r"\[5\] \d\.\d\d  examples/docs/")
        child.expect_exact("/show N prints result N whole; /sources lists them.")
        child.expect_exact(PROMPT)
        child.sendline("/sources")
        child.expect(r"1\s+knowledge_base\s+examples/docs/guides/retries\.md\s+.+?\s+0\.\d\d")
        child.expect(r"5\s+knowledge_base\s+")
        child.expect_exact(PROMPT)
        child.sendline("/show 1")
        child.expect(r"\[1\] \d\.\d\d  examples/docs/guides/retries\.md")
        child.expect_exact("## The retry policy")  # the whole chunk, headings and all
        child.expect_exact(PROMPT)
        child.sendline("/exit")
        assert finish(child) == 0
    finally:
        child.close(force=True)

    rows = screen_rows(example, size)
    asked = rows.index(f"you> {QUESTION}")
    next_prompt = next(i for i in range(asked + 1, len(rows)) if rows[i].startswith("you>"))
    answer = rows[asked:next_prompt]
    assert len(answer) <= 25, "\n".join(answer)  # question, search line, results, hint
    assert sum(bool(HEADER.match(row)) for row in answer) == 5
    sources = rows[next_prompt + 1 : next_prompt + 7]
    assert [row.split()[0] for row in sources] == ["#", "1", "2", "3", "4", "5"]
    assert STYLE.findall(terminal_output(example)) == []  # NO_COLOR: not one style


def test_query_words_are_highlighted_on_a_colour_terminal(example: Path) -> None:
    child = spawn(example, "-a", "agent.yaml.example", no_color=False)
    try:
        child.expect_exact(PROMPT)
        child.sendline(QUESTION)
        # A word of the question, in any form, in the highlight style (bold red).
        child.expect(r"\x1b\[1;31m(?:[Rr]etr(?:y|ied|ies)|[Ff]ail(?:ed|s)?|[Jj]obs?)\x1b\[0m")
        child.expect_exact(PROMPT)
        child.sendline("/exit")
        assert finish(child) == 0
    finally:
        child.close(force=True)


@pytest.mark.timeout(300)
def test_llm_session_streams_and_ctrl_c_stops_an_answer(
    example: Path, fake_openai: FakeOpenAI
) -> None:
    with_model(example, fake_openai.url)
    fake_openai.chat.push(
        tool_calls(("knowledge_base", {"query": "dead-letter queue"}, "call_dlq")),
        text("A slow answer that never ends. " * 100, delay=0.1),
        text("The **dead-letter queue** keeps runs for 30 days."),
    )
    child = spawn(example, env={"OPENAI_API_KEY": "sk-terminal-test"}, no_color=False)
    try:
        child.expect_exact("Chatting with fake-model (openai)")
        child.expect_exact(PROMPT)
        child.sendline("What is the dead-letter queue?")
        child.expect_exact("knowledge_base('dead-letter queue') -> 5 results")
        child.expect_exact("A slow answer")
        child.sendintr()  # Ctrl-C while the answer streams
        child.expect_exact("(answer interrupted; Ctrl-C again quits)")
        child.expect_exact(PROMPT)

        child.sendline("And how long are runs kept?")
        # Rendered as Markdown: the ** became a style (an escape code), not text.
        child.expect(r"The (\x1b\[[0-9;]*m)+dead-letter queue(\x1b\[[0-9;]*m)+ keeps runs")
        child.expect_exact(PROMPT)
        child.sendeof()  # Ctrl-D
        assert finish(child) == 0
    finally:
        child.close(force=True)

    *_, last = fake_openai.chat_requests()
    # The interrupted turn was forgotten: the history holds only the new question.
    assert [(m["role"], m.get("content")) for m in last["messages"][1:]] == [
        ("user", "And how long are runs kept?")
    ]


def test_an_answer_that_is_not_a_completion_is_a_message_and_the_session_goes_on(
    example: Path, fake_openai: FakeOpenAI
) -> None:
    with_model(example, fake_openai.url)
    fake_openai.chat.push(raw("<html><body>Sign in</body></html>"), text("Recovered."))
    child = spawn(example, env={"OPENAI_API_KEY": "sk-terminal-test"})
    try:
        child.expect_exact(PROMPT)
        child.sendline("hello?")
        child.expect_exact("Error: openai at ")
        child.expect_exact("not an OpenAI-compatible stream")
        child.expect_exact(PROMPT)
        child.sendline("again?")
        child.expect_exact("Recovered.")
        child.expect_exact(PROMPT)
        child.sendeof()
        assert finish(child) == 0
    finally:
        child.close(force=True)
