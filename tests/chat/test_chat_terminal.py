"""``holodeck chat`` in a real pseudo-terminal (pexpect): prompt, commands, Ctrl-C, Ctrl-D."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pexpect
import pytest
from chat_helpers import with_model
from fake_openai import FakeOpenAI, text, tool_calls

PROMPT = "you>"


def spawn(project: Path, *args: str, env: dict[str, str] | None = None) -> pexpect.spawn:
    full_env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "AZURE_"))}
    full_env.update(
        HOME=str(project / "home"),
        TERM="xterm-256color",
        NO_COLOR="1",
        PROMPT_TOOLKIT_NO_CPR="1",  # pexpect does not answer cursor-position requests
        **(env or {}),
    )
    child = pexpect.spawn(
        sys.executable,
        ["-m", "holodeck", "chat", *args],
        cwd=str(project),
        env=full_env,
        encoding="utf-8",
        dimensions=(50, 200),
        timeout=120,
    )
    child.logfile_read = open(project / "terminal.log", "w", encoding="utf-8")  # noqa: SIM115
    return child


def finish(child: pexpect.spawn) -> int:
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus is not None
    return child.exitstatus


def test_retrieval_only_session(example: Path) -> None:
    child = spawn(example, "-a", "agent.yaml.example")
    try:
        child.expect_exact("No LLM configured (no `model:` in agent.yaml)")
        child.expect_exact(PROMPT)
        child.sendline("How do I retry a failed job?")
        child.expect_exact("knowledge_base('How do I retry a failed job?') -> 5 results")
        child.expect_exact("best examples/docs/guides/retries.md")
        child.expect_exact("[1] Score: ")
        child.expect_exact(PROMPT)
        child.sendline("/sources")
        child.expect_exact("== knowledge_base('How do I retry a failed job?')")
        child.expect_exact("Found 5 result(s):")
        child.expect_exact("Source: examples/docs/guides/retries.md")
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
    child = spawn(example, env={"OPENAI_API_KEY": "sk-terminal-test"})
    try:
        child.expect_exact("Chatting with fake-model (openai)")
        child.expect_exact(PROMPT)
        child.sendline("What is the dead-letter queue?")
        child.expect_exact("knowledge_base('dead-letter queue') -> 5 results")
        child.expect_exact("A slow answer")
        child.sendintr()  # Ctrl-C while the answer streams
        child.expect_exact("(answer interrupted)")
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
