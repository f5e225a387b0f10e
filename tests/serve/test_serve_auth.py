"""``holodeck serve --http``: who may ask. A bind other than loopback is refused without a
token (``--no-auth`` serves anyway, with a warning); with ``HOLODECK_SERVE_TOKEN`` set every
request needs ``Authorization: Bearer <token>`` (401 otherwise), the token never printed;
loopback without a token serves as it always did, Host/Origin checks included.

The real server in a subprocess, reached with a plain HTTP client and the SDK's own.
"""

from __future__ import annotations

import asyncio
import json
import secrets
import signal
from pathlib import Path

import httpx2
import pytest
from cli_helpers import run_holodeck
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from serve_helpers import HttpServer, make_project, sources, wait_for

from holodeck import envvars
from holodeck.redact import redact

TOKEN_VAR = "HOLODECK_SERVE_TOKEN"
#: How long a refused start may take (interpreter, imports, agent.yaml) on a loaded machine;
#: a server that starts instead of refusing fails the test after it.
REFUSE_SECONDS = 180
#: An MCP initialize request, as a client's first POST.
INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "auth-test", "version": "1"},
    },
}
MCP_HEADERS = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}


@pytest.fixture
def project(tmp_path: Path) -> Path:
    return make_project(tmp_path / "station")


def refused(project: Path, *args: str, env: dict[str, str] | None = None) -> str:
    """``holodeck serve ARGS`` must stop before serving: exit 2, nothing on stdout; its last
    stderr line."""
    result = run_holodeck(
        "serve", *args, cwd=project, env=env, stdin="", own_process=True, timeout=REFUSE_SECONDS
    )
    assert (result.returncode, result.stdout) == (2, ""), result.stderr
    assert "Traceback" not in result.stderr and "Serving" not in result.stderr
    return result.stderr.splitlines()[-1]


def port_of(server: HttpServer) -> str:
    return server.url.rsplit(":", 1)[1].split("/")[0]


def post(url: str, headers: dict[str, str] | None = None) -> httpx2.Response:
    """One MCP initialize POST with ``headers`` besides the protocol's."""
    return httpx2.post(url, json=INITIALIZE, headers={**MCP_HEADERS, **(headers or {})}, timeout=60)


def test_a_non_loopback_bind_without_a_token_is_refused(project: Path) -> None:
    assert refused(project, "--http", "0.0.0.0:0") == (
        "Error: --http 0.0.0.0:0 can be reached from other machines and has no "
        f"authentication: set {TOKEN_VAR} to a secret token (clients then send "
        "'Authorization: Bearer <token>'), or pass --no-auth if a proxy or firewall in "
        "front guards the port"
    )


def test_no_auth_serves_every_interface_with_a_warning(project: Path) -> None:
    server = HttpServer(project, "--no-auth", http="0.0.0.0:0")
    try:
        warning = (
            f"Warning: http://0.0.0.0:{port_of(server)}/mcp can be reached from other machines "
            "with no authentication (--no-auth): anyone who reaches the port can search "
            f"station_docs, faq; keep it behind a proxy or firewall that guards it, or set "
            f"{TOKEN_VAR}"
        )
        wait_for(lambda: warning in server.stderr().splitlines(), 60, server)
        asyncio.run(_lists_tools(server.url))
        assert server.stop(signal.SIGTERM) == 0
    finally:
        server.kill()


async def _lists_tools(url: str, headers: dict[str, str] | None = None) -> None:
    async with (
        httpx2.AsyncClient(headers=headers, timeout=httpx2.Timeout(60, read=300)) as http,
        Client(streamable_http_client(url, http_client=http)) as client,
    ):
        listed = await client.list_tools()
        assert sorted(t.name for t in listed.tools) == ["faq", "station_docs"]


def test_with_a_token_every_request_needs_it(project: Path) -> None:
    token = secrets.token_urlsafe(32)
    # -v: the debug logs too must not hold the token
    server = HttpServer(project, "-v", http="0.0.0.0:0", env={TOKEN_VAR: token})
    try:
        warning = (
            f"Warning: http://0.0.0.0:{port_of(server)}/mcp can be reached from other machines: "
            f"every request needs the token in {TOKEN_VAR}, but plain HTTP carries it and the "
            "results unencrypted; put a TLS proxy in front unless the network is trusted"
        )
        wait_for(lambda: warning in server.stderr().splitlines(), 60, server)

        for headers in (
            {},
            {"Authorization": "Bearer wrong-token-of-the-same-sort-0123456789abcdef"},
            {"Authorization": f"Bearer {token}x"},
            {"Authorization": f"Bearer {token[:-1]}"},
            {"Authorization": f"Basic {token}"},
            {"Authorization": token},
        ):
            answer = post(server.url, headers)
            assert answer.status_code == 401, (headers, answer.text)
            assert answer.headers["www-authenticate"].startswith("Bearer")
            assert token not in answer.text
        # every path, not only the MCP endpoint
        assert httpx2.get(server.url.replace("/mcp", "/"), timeout=60).status_code == 401

        asyncio.run(_searches(server.url, token))
        assert post(server.url, {"Authorization": f"bearer {token}"}).status_code == 200
        assert server.stop(signal.SIGTERM) == 0
    finally:
        server.kill()
    logs = server.stderr()
    assert "Stopped serving" in logs and "Traceback" not in logs
    assert token not in logs and token not in server.stdout()
    # -v says why a request was refused, in words the redaction leaves readable
    assert "Refused an HTTP request from 127.0.0.1: no token" in logs
    assert "Refused an HTTP request from 127.0.0.1: a wrong token" in logs
    for path in project.rglob("*"):  # the index, its logs, anything the server wrote
        if path.is_file():
            assert token.encode() not in path.read_bytes(), path


async def _searches(url: str, token: str) -> None:
    await _lists_tools(url, {"Authorization": f"Bearer {token}"})
    async with (
        httpx2.AsyncClient(
            headers={"Authorization": f"Bearer {token}"}, timeout=httpx2.Timeout(60, read=300)
        ) as http,
        Client(streamable_http_client(url, http_client=http)) as client,
    ):
        deadline = asyncio.get_running_loop().time() + 120
        while True:  # the first ingest runs while the server answers
            result = await client.call_tool(
                "station_docs", {"query": "How long does the airlock take?"}
            )
            if not result.is_error:
                break
            assert asyncio.get_running_loop().time() < deadline, result.content[0].text
            await asyncio.sleep(0.5)
        assert sources(result.structured_content)[0] == "docs/airlock.md"


def test_a_token_is_needed_on_loopback_too(project: Path) -> None:
    token = secrets.token_urlsafe(32)
    server = HttpServer(project, env={TOKEN_VAR: token})
    try:
        assert post(server.url).status_code == 401
        assert post(server.url, {"Authorization": f"Bearer {token}"}).status_code == 200
        # the token does not lift the Host check (DNS rebinding) loopback has
        wrong_host = {"Authorization": f"Bearer {token}", "Host": "attacker.example"}
        assert post(server.url, wrong_host).status_code == 421
        assert server.stop(signal.SIGTERM) == 0
    finally:
        server.kill()
    assert "Warning" not in server.stderr() and token not in server.stderr()


def test_loopback_without_a_token_serves_as_before(project: Path) -> None:
    """Unchanged behaviour (it passes on the code before the token too): no warning, no
    token asked, Host and Origin checked."""
    server = HttpServer(project)
    try:
        assert post(server.url).status_code == 200
        assert post(server.url, {"Host": "attacker.example"}).status_code == 421
        assert post(server.url, {"Origin": "http://attacker.example"}).status_code == 403
        asyncio.run(_lists_tools(server.url))
        assert server.stop(signal.SIGTERM) == 0
    finally:
        server.kill()
    assert "Warning" not in server.stderr()


@pytest.mark.parametrize(
    "value", ["", "   ", "Sh0rt-token", "a long token with spaces in it", "l" + "ö" * 20 + "ng"]
)
def test_a_bad_token_is_one_line_that_never_shows_it(project: Path, value: str) -> None:
    line = refused(project, "--http", "127.0.0.1:0", env={TOKEN_VAR: value})
    if value.strip():
        assert line == (
            f"Error: environment variable {TOKEN_VAR} is too short or holds a character a "
            "header cannot carry: give at least 16 of A-Z a-z 0-9 - . _ ~ + / (e.g. "
            "python -c 'import secrets; print(secrets.token_urlsafe(32))'), or unset it"
        )
    else:
        assert line == (
            f"Error: environment variable {TOKEN_VAR} is set but empty: give the token, "
            "or unset it to serve without one"
        )


def test_no_auth_is_for_http_without_a_token(project: Path) -> None:
    token = secrets.token_urlsafe(32)
    contradiction = refused(project, "--http", "0.0.0.0:0", "--no-auth", env={TOKEN_VAR: token})
    assert contradiction == (
        f"Error: --no-auth and {TOKEN_VAR} contradict each other: unset {TOKEN_VAR} to "
        "serve without authentication, or drop --no-auth"
    )
    assert refused(project, "--no-auth").endswith("--no-auth is for --http or --protocol rest")


def test_the_token_is_redacted_once_read(monkeypatch: pytest.MonkeyPatch) -> None:
    token = secrets.token_urlsafe(32)
    monkeypatch.setenv(TOKEN_VAR, token)
    assert envvars.SERVE_TOKEN.read() == token
    assert redact(f"sent {token}, then {json.dumps({'t': token})}") == 'sent ***, then {"t": "***"}'


def test_a_token_in_dotenv_is_said_to_be_ignored(project: Path) -> None:
    """``.env`` fills ``${...}`` of the config files; serve reads the token only from its
    environment. A token there was ignored without a word, so a loopback server answered
    without one (issue 61, debatable): it now warns, once, and serves as documented."""
    (project / ".env").write_text(f"{TOKEN_VAR}=a-token-kept-in-dotenv-1234\n")
    server = HttpServer(project)
    try:
        assert post(server.url).status_code == 200  # as documented: no token asked
        assert server.stop(signal.SIGTERM) == 0
    finally:
        server.kill()
    said = [line for line in server.stderr().splitlines() if ".env sets" in line]
    assert said == [
        f"Warning: .env sets {TOKEN_VAR}, which serve reads only from the environment: this "
        f"server asks no token; export {TOKEN_VAR} in the shell that starts it to require one"
    ]
    assert "a-token-kept-in-dotenv-1234" not in server.stderr()

    server = HttpServer(project, env={TOKEN_VAR: "a-token-from-the-environment-99"})
    try:
        assert post(server.url).status_code == 401
        assert server.stop(signal.SIGTERM) == 0
    finally:
        server.kill()
    assert ".env sets" not in server.stderr()  # the environment's token is the one used
