"""MCP tools (``type: mcp``): another project's ``holodeck serve`` as the agent's MCP server.

Everything real but the model: ``holodeck chat`` and ``holodeck test`` in subprocesses, the
MCP SDK's client in them, ``holodeck serve`` of a second (ingested) project over stdio and
over ``--http``, and a small MCP server of the SDK for timeouts and arguments. The fake
OpenAI-compatible server plays the model: it calls the server's tools, then answers with
what they returned. Server processes are found by pid (their command line) and must be gone
when chat or test ends, however it ends.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from cli_helpers import holodeck_env, run_holodeck, write
from fake_openai import FakeOpenAI, quoting_tools, text, tool_calls, tool_results
from serve.serve_helpers import HttpServer, make_project

CALC_SERVER = '''
import time

from mcp.server.mcpserver import MCPServer

app = MCPServer("calc")


@app.tool()
def add(a: float, b: float) -> float:
    """Add two numbers."""
    return a + b


@app.tool()
def nap(seconds: float) -> str:
    """Sleep, then say so."""
    time.sleep(seconds)
    return "awake"


app.run()
'''

ASSISTANT = """
name: station-assistant
model:
  provider: openai
  name: fake-model
  endpoint: {url}
  api_key: ${{OPENAI_API_KEY}}
instructions: Answer from the station library.
tools:
{tools}
"""

LIBRARY_STDIO = """\
  - name: library
    type: mcp
    description: The station's library
    command: {python}
    args: [-m, holodeck, serve, {library}/agent.yaml]
    request_timeout: 120
    timeout: 300
"""


@pytest.fixture(scope="module")
def library(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The project whose ``holodeck serve`` is the MCP server: ingested once."""
    root = make_project(tmp_path_factory.mktemp("library"))
    done = run_holodeck("ingest", cwd=root)
    assert done.returncode == 0, done.stderr
    return root


def assistant(root: Path, url: str, tools: str) -> Path:
    write(root / ".env", "OPENAI_API_KEY=sk-test-mcp\n")
    write(root / "agent.yaml", ASSISTANT.format(url=url, tools=tools))
    return root


def library_tool(library: Path) -> str:
    return LIBRARY_STDIO.format(python=sys.executable, library=library)


def pids_of(marker: str) -> list[int]:
    """Live processes whose command line holds ``marker`` (zombies are not alive). Compared
    as bytes: another test's process may have argv bytes that are not UTF-8."""
    wanted = marker.encode()
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ")
            state = (entry / "stat").read_bytes().rsplit(b")", 1)[1].split()[0]
        except OSError:
            continue
        if wanted in cmdline and state != b"Z":
            found.append(int(entry.name))
    return found


def wait_for_pid(marker: str, proc: subprocess.Popen[str], timeout: float = 180) -> int:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        found = [p for p in pids_of(marker) if p != proc.pid]
        if found:
            return found[0]
        assert proc.poll() is None, "chat ended before its MCP server started"
        time.sleep(0.2)
    raise AssertionError(f"no process running {marker} within {timeout} s")


def alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


class Chat:
    """``holodeck chat`` in line mode, its stdin kept open until ``close``."""

    def __init__(self, root: Path, *args: str) -> None:
        self.out = root / "chat.out"
        self.err = root / "chat.err"
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "holodeck", "chat", *args],
            cwd=root,
            env=holodeck_env(root),
            stdin=subprocess.PIPE,
            stdout=self.out.open("w"),
            stderr=self.err.open("w"),
            text=True,
        )

    def say(self, line: str) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(line + "\n")
        self.proc.stdin.flush()

    def wait_output(self, fragment: str, timeout: float = 180) -> None:
        deadline = time.monotonic() + timeout
        while fragment not in self.out.read_text():
            assert self.proc.poll() is None, self.err.read_text()
            assert time.monotonic() < deadline, f"{fragment!r} not in {self.out.read_text()!r}"
            time.sleep(0.2)

    def close(self, timeout: float = 120) -> int:
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        return self.proc.wait(timeout)

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()


@pytest.fixture
def llm() -> Iterator[FakeOpenAI]:
    with FakeOpenAI() as server:
        yield server


def test_chat_uses_a_holodeck_serve_over_stdio_and_stops_it(
    tmp_path: Path, library: Path, llm: FakeOpenAI
) -> None:
    root = assistant(tmp_path, llm.url, library_tool(library))
    llm.chat.push(
        tool_calls(("library__station_docs", {"query": "how long does the airlock cycle"})),
        quoting_tools("From the library: {result}"),
        tool_calls(("library__faq", {"query": "when may visitors dock"})),
        quoting_tools("The FAQ says: {result}"),
    )
    chat = Chat(root)
    try:
        chat.say("How long does the airlock take?")
        server = wait_for_pid(f"{library}/agent.yaml", chat.proc)
        chat.say("When can visitors dock?")
        chat.wait_output("The FAQ says:")
        assert alive(server)
        code = chat.close()
    finally:
        chat.stop()
    stdout, stderr = chat.out.read_text(), chat.err.read_text()
    assert code == 0, stderr
    # The server's result reached the model, and the model's answer reached the chat.
    found = tool_results(llm.chat_requests()[1])[0]
    assert "airlock cycles in ninety seconds" in found
    assert "From the library: " in stdout and "airlock cycles in ninety seconds" in stdout
    assert "[tool] library__station_docs(" in stderr
    assert "Visitors may dock at bay three" in stdout
    # Its tools were offered as <server>__<tool>, with the server's own schema.
    offered = {t["function"]["name"]: t["function"] for t in llm.chat_requests()[0]["tools"]}
    assert set(offered) == {"library__station_docs", "library__faq"}
    assert offered["library__station_docs"]["parameters"]["required"] == ["query"]
    # The server is gone with the chat.
    assert not alive(server)
    assert pids_of(f"{library}/agent.yaml") == []


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM], ids=["ctrl-c", "sigterm"])
def test_an_interrupted_chat_stops_its_server(
    tmp_path: Path, library: Path, llm: FakeOpenAI, sig: signal.Signals
) -> None:
    root = assistant(tmp_path, llm.url, library_tool(library))
    chat = Chat(root)
    try:
        server = wait_for_pid(f"{library}/agent.yaml", chat.proc)
        time.sleep(1)  # chat is waiting for a line now
        chat.proc.send_signal(sig)
        code = chat.proc.wait(120)
    finally:
        chat.stop()
    assert code == 130, chat.err.read_text()
    assert "Interrupted." in chat.err.read_text()
    assert not alive(server)


def test_chat_reaches_a_holodeck_serve_over_http(
    tmp_path: Path, library: Path, llm: FakeOpenAI
) -> None:
    served = HttpServer(library)
    try:
        tools = (
            "  - name: library\n    type: mcp\n    description: The station's library\n"
            f"    url: {served.url}\n    headers: {{X-Station: alpha}}\n"
        )
        root = assistant(tmp_path, llm.url, tools)
        llm.chat.push(
            tool_calls(("library__station_docs", {"query": "what grows in the garden"})),
            quoting_tools("{result}"),
        )
        done = run_holodeck("chat", cwd=root, stdin="What grows in the garden?\n", timeout=240)
    finally:
        served.stop()
    assert done.returncode == 0, done.stderr
    assert "tomatoes and basil" in done.stdout
    assert "tomatoes and basil" in tool_results(llm.chat_requests()[1])[0]


def test_dead_servers_are_one_warning_each_and_chat_goes_on(
    tmp_path: Path, library: Path, llm: FakeOpenAI
) -> None:
    crash = 'import sys; sys.stderr.write("ghost: missing token\\n"); sys.exit(3)'
    tools = library_tool(library) + (
        "  - name: ghost\n    type: mcp\n    description: nowhere\n"
        "    command: /nonexistent/mcp-server\n"
        "  - name: crashy\n    type: mcp\n    description: fails at once\n"
        f"    command: {sys.executable}\n    args: [-c, '{crash}']\n"
    )
    root = assistant(tmp_path, llm.url, tools)
    llm.chat.push(
        tool_calls(("library__faq", {"query": "docking hours"})),
        quoting_tools("{result}"),
        tool_calls(("library__faq", {"query": "docking hours"})),
        quoting_tools("The library answered: {result}"),
    )
    chat = Chat(root)
    try:
        chat.say("When can visitors dock?")
        chat.wait_output("Visitors may dock")
        server = wait_for_pid(f"{library}/agent.yaml", chat.proc)
        os.kill(server, signal.SIGKILL)  # the server dies in mid-session
        chat.say("And again?")
        chat.wait_output("The library answered:")
        code = chat.close()
    finally:
        chat.stop()
    stderr = chat.err.read_text()
    assert code == 0, stderr
    warnings = [line for line in stderr.splitlines() if line.startswith("WARNING")]
    assert len(warnings) == 2, stderr
    ghost = next(w for w in warnings if "(ghost)" in w)
    assert re.fullmatch(
        r"WARNING: agent\.yaml:\d+: tools\[1\] \(ghost\): the MCP server did not start: cannot "
        r"run '/nonexistent/mcp-server': No such file or directory; going on without its tools",
        ghost,
    ), ghost
    crashed = next(w for w in warnings if "(crashy)" in w)
    assert "ghost: missing token" in crashed and "going on without its tools" in crashed
    # The call of the dead server is an error the model reads and the chat shows.
    assert "[tool] library__faq(" in stderr and "-> error: the MCP server library stopped" in (
        stderr
    )
    assert "The library answered: Error: the MCP server library stopped" in chat.out.read_text()
    assert "Traceback" not in stderr


def test_holodeck_test_checks_mcp_calls_and_stops_the_servers(
    tmp_path: Path, library: Path, llm: FakeOpenAI
) -> None:
    write(tmp_path / "calc_server.py", CALC_SERVER)
    calc = (
        "  - name: calc\n    type: mcp\n    description: A calculator\n"
        f"    command: {sys.executable}\n    args: [calc_server.py]\n    request_timeout: 3\n"
    )
    root = assistant(tmp_path, llm.url, library_tool(library) + calc)
    with (root / "agent.yaml").open("a") as f:
        f.write(
            "test_cases:\n"
            "  - name: searches-the-library\n"
            "    input: How long does the airlock take?\n"
            "    expected_tools: [station_docs]\n"
            "    expected_content: [ninety seconds]\n"
            "  - name: adds\n"
            "    input: What is 2 + 40?\n"
            "    expected_tools:\n"
            "      - name: calc__add\n"
            "        args: {a: 2, b: 40}\n"
            "    expected_content: ['42']\n"
            "  - name: naps-too-long\n"
            "    input: Take a nap.\n"
            "    expected_tools: [calc]\n"
            "    expected_content: [awake]\n"
        )
    llm.chat.push(
        tool_calls(("library__station_docs", {"query": "airlock"})),
        quoting_tools("{result}"),
        tool_calls(("calc__add", {"a": 2, "b": 40})),
        quoting_tools("It is {result}."),
        tool_calls(("calc__nap", {"seconds": 60})),
        quoting_tools("{result}"),
    )
    done = run_holodeck("test", "--report", "r.json", cwd=root, timeout=400)
    assert done.returncode == 1, done.stdout + done.stderr
    report = {c["name"]: c for c in json.loads((root / "r.json").read_text())["cases"]}
    assert report["searches-the-library"]["status"] == "passed"
    call = report["searches-the-library"]["tool_calls"][0]
    assert call["kind"] == "mcp" and "ninety seconds" in call["output"]
    assert report["adds"]["status"] == "passed", report["adds"]["reason"]
    assert report["adds"]["answer"] == "It is 42.0."
    napping = report["naps-too-long"]
    assert napping["status"] == "failed"
    assert napping["tool_calls"][0]["error"] == "calc did not answer within 3 s (request_timeout)"
    # No server outlives the run.
    assert pids_of(f"{library}/agent.yaml") == []
    assert pids_of(str(tmp_path / "calc_server.py")) == pids_of("calc_server.py") == []


def test_an_expected_tool_no_server_offers_is_exit_2(
    tmp_path: Path, library: Path, llm: FakeOpenAI
) -> None:
    root = assistant(tmp_path, llm.url, library_tool(library))
    with (root / "agent.yaml").open("a") as f:
        f.write("test_cases:\n  - input: hi\n    expected_tools: [library__stations_docs]\n")
    done = run_holodeck("test", cwd=root, timeout=240)
    assert done.returncode == 2, done.stdout + done.stderr
    assert "Error: case 'hi': expected_tools names 'library__stations_docs', which no tool " in (
        done.stderr
    )
    assert pids_of(f"{library}/agent.yaml") == []


def test_an_interrupted_test_run_stops_its_server(
    tmp_path: Path, library: Path, llm: FakeOpenAI
) -> None:
    root = assistant(tmp_path, llm.url, library_tool(library))
    with (root / "agent.yaml").open("a") as f:
        f.write("test_cases:\n  - input: Anything slow?\n    expected_content: [slow]\n")
    llm.chat.push(text("Very slow.", wait=120))  # the model takes its time
    run = subprocess.Popen(
        [sys.executable, "-m", "holodeck", "test"],
        cwd=root,
        env=holodeck_env(root),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        server = wait_for_pid(f"{library}/agent.yaml", run)
        deadline = time.monotonic() + 180
        while not llm.chat_requests():  # the case is running: its request is in
            assert time.monotonic() < deadline and run.poll() is None
            time.sleep(0.2)
        run.send_signal(signal.SIGINT)
        stdout, stderr = run.communicate(timeout=120)
    finally:
        if run.poll() is None:
            run.kill()
    assert run.returncode == 130, stderr
    # What ran is still reported (here: nothing did), as after any Ctrl-C of a run.
    assert "Interrupted: 0 cases of 1 ran, 1 did not" in stdout, stdout + stderr
    assert not alive(server)


NOISY_SERVER = CALC_SERVER.replace("app.run()", 'print("calc server starting")\napp.run()')


def test_a_server_writing_lines_that_are_not_json_is_one_warning_line(
    tmp_path: Path, llm: FakeOpenAI
) -> None:
    """A stdio server that prints a banner on stdout: the call still works, and the SDK's
    complaint is one warning line, its traceback only with -v."""
    write(tmp_path / "calc_server.py", NOISY_SERVER)
    calc = (
        "  - name: calc\n    type: mcp\n    description: A calculator\n"
        f"    command: {sys.executable}\n    args: [calc_server.py]\n    request_timeout: 60\n"
    )
    root = assistant(tmp_path, llm.url, calc)
    with (root / "agent.yaml").open("a") as f:
        f.write(
            "test_cases:\n  - name: adds\n    input: What is 2 + 40?\n"
            "    expected_tools: [calc]\n    expected_content: ['42']\n"
        )
    for verbose in ((), ("-v",)):
        llm.chat.push(
            tool_calls(("calc__add", {"a": 2, "b": 40})), quoting_tools("It is {result}.")
        )
        done = subprocess.run(  # its own process: stderr as a terminal shows it
            [sys.executable, "-m", "holodeck", *verbose, "test"],
            cwd=root,
            env=holodeck_env(root),
            capture_output=True,
            text=True,
            timeout=400,
        )
        assert done.returncode == 0, done.stdout + done.stderr
        said = [line for line in done.stderr.splitlines() if "Failed to parse JSONRPC" in line]
        assert len(said) == 1, done.stderr
        assert ("Traceback" in done.stderr) == bool(verbose), done.stderr


def test_an_env_file_that_is_not_utf8_is_one_line_naming_it(tmp_path: Path) -> None:
    """An MCP server's ``env_file`` is read as the project's ``.env`` is: a Latin-1 file is
    one ConfigError naming the file, its line and the fix (exit 2), not a codec message."""
    from holodeck.config.loader import load_project
    from holodeck.errors import ConfigError
    from holodeck.tools.mcp_tool import McpServer

    (tmp_path / ".env.mcp").write_bytes(b"TOKEN=ok\nCITY=caf\xe9\n")
    write(tmp_path / "docs" / "a.md", "hello")
    tool = (
        "  - name: calc\n    type: mcp\n    description: A calculator\n"
        f"    command: {sys.executable}\n    args: [calc_server.py]\n    env_file: .env.mcp\n"
    )
    root = assistant(tmp_path, "http://127.0.0.1:9", tool)
    project = load_project(root / "agent.yaml")
    config = next(t for t in project.agent.tools if t.name == "calc")
    with pytest.raises(ConfigError) as refused:
        McpServer(config, project)._environment()  # what the server process would get
    assert f"{tmp_path}/.env.mcp:2: not UTF-8 text (byte 0xe9" in str(refused.value)
    assert refused.value.exit_code == 2
