"""A function tool cannot end or freeze holodeck: it exits, interrupts itself or hangs, and
the model reads an error while chat (or test) goes on, Ctrl-C still ends the turn, and a
call left running never keeps the process alive.

The real ``holodeck chat`` (line mode and a real pseudo-terminal) and ``holodeck test``,
in processes of their own where the process ending is what is tested; the fake
OpenAI-compatible server plays the model and records what it was sent.
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from pathlib import Path

import pexpect
from cli_helpers import holodeck_env, run_holodeck, write
from fake_openai import FakeOpenAI, quoting_tools, text, tool_calls, tool_results
from terminal import spawn_holodeck

RISKY_PY = '''
import sys
import time
from pathlib import Path

#: Written when a nap starts: the test knows the call is running.
STARTED = Path(__file__).resolve().parent.parent / "nap-started"


def leave(code: int) -> str:
    """End the process with this exit code."""
    sys.exit(code)


def interrupt() -> str:
    """Raise KeyboardInterrupt, as a Ctrl-C would."""
    raise KeyboardInterrupt


async def leave_async(code: int) -> str:
    """End the process from a coroutine."""
    raise SystemExit(code)


def nap(seconds: float) -> str:
    """Sleep for this many seconds."""
    STARTED.write_text("napping")
    time.sleep(seconds)
    return "awake"


async def nap_blocking(seconds: float) -> str:
    """Sleep without awaiting: it blocks the event loop that runs it."""
    time.sleep(seconds)
    return "awake"


def lookup(order_id: str) -> str:
    """Look up an order."""
    return f"order {order_id} has shipped"
'''

AGENT = """
name: risky-agent
model:
  provider: openai
  name: fake-model
  endpoint: {url}
  api_key: ${{OPENAI_API_KEY}}
tools:
  - {{name: leave, type: function, file: tools/risky.py, function: leave}}
  - {{name: interrupt, type: function, file: tools/risky.py, function: interrupt}}
  - {{name: leave_async, type: function, file: tools/risky.py, function: leave_async}}
  - {{name: nap, type: function, file: tools/risky.py, function: nap{limit}}}
  - {{name: nap_blocking, type: function, file: tools/risky.py, function: nap_blocking{limit}}}
  - {{name: lookup, type: function, file: tools/risky.py, function: lookup}}
"""

#: What the model reads when a nap is cut by ``request_timeout: 1``.
TIMED_OUT = "Error: {tool} did not return within 1 s (request_timeout)"


def make_project(root: Path, url: str, limit: str = "") -> Path:
    """A project whose tools misbehave; ``limit`` is added to both nap tools' keys."""
    write(root / "tools" / "risky.py", RISKY_PY)
    write(root / ".env", "OPENAI_API_KEY=sk-test-limits\n")
    write(root / "agent.yaml", AGENT.format(url=url, limit=f", {limit}" if limit else ""))
    (root / "home").mkdir(exist_ok=True)
    return root


def wait_for_nap(root: Path, alive: bool | None, timeout: float = 180) -> None:
    """Until the nap tool has started (``alive`` False: the process ended first)."""
    deadline = time.monotonic() + timeout
    while not (root / "nap-started").exists():
        assert alive is not False, "holodeck ended before the tool was called"
        assert time.monotonic() < deadline, "the nap tool was never called"
        time.sleep(0.1)


def test_a_tool_that_exits_or_interrupts_itself_is_an_error_the_model_reads(
    tmp_path: Path,
) -> None:
    with FakeOpenAI() as llm:
        root = make_project(tmp_path, llm.url)
        llm.chat.push(
            tool_calls(("leave", {"code": 7})),
            quoting_tools("First: {result}"),
            tool_calls(("interrupt", {})),
            quoting_tools("Second: {result}"),
            tool_calls(("leave_async", {"code": 5})),
            quoting_tools("Third: {result}"),
        )
        done = run_holodeck("chat", cwd=root, stdin="One?\nTwo?\nThree?\n", timeout=240)
        requests = llm.chat_requests()
    assert done.returncode == 0, done.stdout + done.stderr
    errors = [
        "leave ended with SystemExit(7)",
        "interrupt ended with KeyboardInterrupt()",
        "leave_async ended with SystemExit(5)",
    ]
    # The model got each as the tool's result, in the request after the call...
    assert len(requests) == 6
    for request, error in zip(requests[1::2], errors, strict=True):
        assert tool_results(request)[-1] == f"Error: {error}"
    # ...the chat showed each call and each answer, and went on to the next message.
    for answer, error in zip(("First", "Second", "Third"), errors, strict=True):
        assert f"{answer}: Error: {error}" in done.stdout
    assert '[tool] leave({"code": 7}) -> error: leave ended with SystemExit(7)' in done.stderr
    assert "[tool] interrupt({}) -> error: interrupt ended with KeyboardInterrupt()" in done.stderr
    assert "Interrupted." not in done.stderr
    assert "Traceback" not in done.stderr


def test_a_call_past_request_timeout_is_an_error_the_model_reads_and_chat_goes_on(
    tmp_path: Path,
) -> None:
    with FakeOpenAI() as llm:
        root = make_project(tmp_path, llm.url, limit="request_timeout: 1")
        llm.chat.push(
            tool_calls(("nap", {"seconds": 3600})),
            quoting_tools("First: {result}"),
            tool_calls(("nap_blocking", {"seconds": 3600})),
            quoting_tools("Second: {result}"),
            tool_calls(("lookup", {"order_id": "A-1"})),
            quoting_tools("Third: {result}"),
        )
        # Its own process: a call left sleeping must not keep it from ending.
        done = run_holodeck(
            "chat", cwd=root, stdin="One?\nTwo?\nThree?\n", timeout=240, own_process=True
        )
        requests = llm.chat_requests()
    assert done.returncode == 0, done.stdout + done.stderr
    assert tool_results(requests[1])[-1] == TIMED_OUT.format(tool="nap")
    assert tool_results(requests[3])[-1] == TIMED_OUT.format(tool="nap_blocking")
    assert tool_results(requests[5])[-1] == "order A-1 has shipped"
    assert f"First: {TIMED_OUT.format(tool='nap')}" in done.stdout
    assert f"Second: {TIMED_OUT.format(tool='nap_blocking')}" in done.stdout
    assert "Third: order A-1 has shipped" in done.stdout
    assert (
        '[tool] nap({"seconds": 3600}) -> error: nap did not return within 1 s (request_timeout)'
        in done.stderr
    )


def test_ctrl_c_ends_a_piped_chat_whose_tool_hangs(tmp_path: Path) -> None:
    with FakeOpenAI() as llm:
        root = make_project(tmp_path, llm.url)  # the default limit: far longer than the test
        llm.chat.push(tool_calls(("nap", {"seconds": 3600})), text("Never sent."))
        chat = subprocess.Popen(
            [sys.executable, "-m", "holodeck", "chat"],
            cwd=root,
            env=holodeck_env(root),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        try:
            assert chat.stdin is not None
            chat.stdin.write("Take a nap.\n")
            chat.stdin.flush()  # stdin stays open: only Ctrl-C can end this chat
            wait_for_nap(root, chat.poll() is None)
            chat.send_signal(signal.SIGINT)
            _, stderr = chat.communicate(timeout=120)
        finally:
            if chat.poll() is None:
                chat.kill()
                chat.wait()
    assert chat.returncode == 130, stderr
    assert stderr.rstrip().endswith("Interrupted."), stderr


def test_ctrl_c_on_a_terminal_ends_the_turn_and_a_hung_call_never_keeps_chat_alive(
    tmp_path: Path,
) -> None:
    with FakeOpenAI() as llm:
        root = make_project(tmp_path, llm.url)
        llm.chat.push(tool_calls(("nap", {"seconds": 3600})), text("Awake now."))
        child = spawn_holodeck(
            "chat",
            cwd=root,
            size=(50, 200),
            env={"PROMPT_TOOLKIT_NO_CPR": "1"},  # pexpect does not answer cursor requests
            timeout=120,
        )
        try:
            child.expect_exact("you>")
            child.sendline("Take a nap.")
            wait_for_nap(root, None)
            child.sendintr()  # Ctrl-C while the tool sleeps
            child.expect_exact("(answer interrupted; Ctrl-C again quits)")
            child.expect_exact("you>")
            child.sendline("Are you awake?")
            child.expect_exact("Awake now.")
            child.expect_exact("you>")
            child.sendline("/exit")
            child.expect(pexpect.EOF)  # at once, though the nap goes on in its thread
            child.close()
        finally:
            child.close(force=True)
        requests = llm.chat_requests()
    assert child.exitstatus == 0
    # The interrupted turn was forgotten: the next request holds only the new question.
    assert [(m["role"], m.get("content")) for m in requests[-1]["messages"]] == [
        ("user", "Are you awake?")
    ]


def terminal_chat(root: Path) -> pexpect.spawn:
    """``holodeck chat`` on a real terminal, at its first prompt."""
    child = spawn_holodeck(
        "chat",
        cwd=root,
        size=(50, 200),
        env={"PROMPT_TOOLKIT_NO_CPR": "1"},  # pexpect does not answer cursor requests
        timeout=120,
    )
    child.expect_exact("you>")
    return child


def test_ctrl_c_twice_on_a_terminal_ends_chat_while_a_tool_call_hangs(tmp_path: Path) -> None:
    with FakeOpenAI() as llm:
        root = make_project(tmp_path, llm.url)  # the default limit: far longer than the test
        llm.chat.push(
            tool_calls(("nap", {"seconds": 3600})),
            text("Awake now."),
            tool_calls(("nap", {"seconds": 3600})),
            text("Never sent."),
        )
        child = terminal_chat(root)
        try:
            child.sendline("Take a nap.")
            wait_for_nap(root, None)
            (root / "nap-started").unlink()
            child.sendintr()  # once: the turn ends, chat goes on
            child.expect_exact("(answer interrupted; Ctrl-C again quits)")
            child.expect_exact("you>")
            child.sendline("Are you awake?")
            child.expect_exact("Awake now.")
            child.expect_exact("you>")
            child.sendline("Take another nap.")
            wait_for_nap(root, None)
            child.sendintr()  # twice: chat ends, though both naps go on in their threads
            child.expect_exact("(answer interrupted; Ctrl-C again quits)")
            child.expect_exact("you>")  # the prompt reads the second one as a key
            child.sendintr()
            child.expect_exact("Interrupted.", timeout=60)
            child.expect(pexpect.EOF, timeout=60)
            child.close()
        finally:
            child.close(force=True)
        asked = [request["messages"][-1].get("content") for request in llm.chat_requests()]
    assert child.exitstatus == 130, (child.exitstatus, child.signalstatus)
    assert asked == ["Take a nap.", "Are you awake?", "Take another nap."]


def test_ctrl_c_twice_at_the_prompt_ends_chat_and_once_clears_the_line(tmp_path: Path) -> None:
    with FakeOpenAI() as llm:
        root = make_project(tmp_path, llm.url)
        llm.chat.push(text("Still here."))
        child = terminal_chat(root)
        try:
            child.send("half a quest")
            child.sendintr()  # a typed line: cleared, chat goes on
            child.expect_exact("you>")
            child.sendline("Are you there?")
            child.expect_exact("Still here.")
            child.expect_exact("you>")
            child.sendintr()  # an empty line: the hint
            child.expect_exact("(Ctrl-C again quits, as do /exit and Ctrl-D)")
            child.expect_exact("you>")
            child.sendintr()
            child.expect_exact("Interrupted.")
            child.expect(pexpect.EOF)
            child.close()
        finally:
            child.close(force=True)
        asked = [request["messages"][-1].get("content") for request in llm.chat_requests()]
    assert child.exitstatus == 130, (child.exitstatus, child.signalstatus)
    assert asked == ["Are you there?"]


def test_a_call_past_request_timeout_on_a_terminal_is_shown_and_chat_goes_on(
    tmp_path: Path,
) -> None:
    with FakeOpenAI() as llm:
        root = make_project(tmp_path, llm.url, limit="request_timeout: 1")
        llm.chat.push(
            tool_calls(("nap", {"seconds": 3600})),
            quoting_tools("The model read: {result}"),
            text("Next answer."),
        )
        child = terminal_chat(root)
        try:
            child.sendline("Take a nap.")
            child.expect_exact(
                'nap({"seconds": 3600}) -> error: nap did not return within 1 s (request_timeout)'
            )
            child.expect_exact(f"The model read: {TIMED_OUT.format(tool='nap')}")
            child.expect_exact("you>")
            child.sendline("And now?")
            child.expect_exact("Next answer.")
            child.expect_exact("you>")
            child.sendline("/exit")
            child.expect(pexpect.EOF)  # at once, though the nap goes on in its thread
            child.close()
        finally:
            child.close(force=True)
    assert child.exitstatus == 0


TEST_CASES = """
test_cases:
  - name: naps
    input: Take a nap.
    expected_tools: [nap]
    expected_content: [awake]
  - name: looks-up
    input: Where is order A-1?
    expected_tools: [lookup]
    expected_content: [shipped]
"""


def test_holodeck_test_reports_a_timed_out_call_and_runs_the_next_case(tmp_path: Path) -> None:
    with FakeOpenAI() as llm:
        root = make_project(tmp_path, llm.url, limit="request_timeout: 1")
        with (root / "agent.yaml").open("a") as f:
            f.write(TEST_CASES)
        llm.chat.push(
            tool_calls(("nap", {"seconds": 3600})),
            quoting_tools("{result}"),
            tool_calls(("lookup", {"order_id": "A-1"})),
            quoting_tools("{result}"),
        )
        done = run_holodeck("test", "--report", "r.json", cwd=root, timeout=300, own_process=True)
        requests = llm.chat_requests()
    assert done.returncode == 1, done.stdout + done.stderr
    naps, looks_up = json.loads((root / "r.json").read_text())["cases"]
    assert naps["status"] == "failed"
    assert naps["tool_calls"][0]["error"] == "nap did not return within 1 s (request_timeout)"
    assert tool_results(requests[1]) == [TIMED_OUT.format(tool="nap")]
    assert looks_up["status"] == "passed", looks_up["reason"]


def test_holodeck_test_ends_when_a_case_past_its_timeout_leaves_a_call_running(
    tmp_path: Path,
) -> None:
    with FakeOpenAI() as llm:
        root = make_project(tmp_path, llm.url)  # the default limit: longer than --timeout
        with (root / "agent.yaml").open("a") as f:
            f.write("test_cases:\n  - {name: naps, input: Nap., expected_content: [awake]}\n")
        llm.chat.push(tool_calls(("nap", {"seconds": 3600})))
        # Its own process: the call still sleeping must not keep it from ending.
        done = run_holodeck(
            "test", "--timeout", "5", "--report", "r.json", cwd=root, timeout=300,
            own_process=True,
        )  # fmt: skip
    assert done.returncode == 3, done.stdout + done.stderr
    (naps,) = json.loads((root / "r.json").read_text())["cases"]
    assert naps["status"] == "error"
    assert naps["reason"].startswith("CaseTimeout: the case took longer than 5 s"), naps


def test_request_timeout_is_validated_and_shown(tmp_path: Path) -> None:
    root = make_project(tmp_path, "http://127.0.0.1:9/v1", limit="request_timeout: 0")
    done = run_holodeck("config", "show", cwd=root)
    assert done.returncode == 2, done.stdout + done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, done.stderr
    assert lines[0].startswith("Error: agent.yaml:"), lines[0]
    assert "tools[3].request_timeout" in lines[0] and "greater than 0" in lines[0], lines[0]

    make_project(tmp_path, "http://127.0.0.1:9/v1", limit="request_timeout: 2.5")
    shown = run_holodeck("config", "show", cwd=root)
    assert shown.returncode == 0, shown.stderr
    blocks = {block.splitlines()[0]: block for block in shown.stdout.split("\n\n")}
    assert "  call timeout:    2.5 s" in blocks["Tool nap (function)"].splitlines()
    assert "  call timeout:    60 s" in blocks["Tool lookup (function)"].splitlines()
    data = json.loads(run_holodeck("config", "show", "--json", cwd=root).stdout)
    timeouts = {f["name"]: f["request_timeout"] for f in data["functions"]}
    assert timeouts == {
        "leave": 60,
        "interrupt": 60,
        "leave_async": 60,
        "nap": 2.5,
        "nap_blocking": 2.5,
        "lookup": 60,
    }
