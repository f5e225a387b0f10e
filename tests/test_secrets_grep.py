"""No secret in any output: malformed connection strings and keys through every command.

Connection strings a parser misreads are the ones that leaked: a password cut at '#' and
quoted by redis-py, a string with no scheme or one slash echoed by validation, a space in
it. Keys leaked through ``-v``, when a 401 body echoed the key into a traceback. Each goes
through ``ingest``, ``config show`` and ``-v``; stdout, stderr and every report are searched
for the secret and for each piece of it.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from cli_helpers import run_holodeck, write
from fake_openai import FakeOpenAI, error
from redis_server import free_port

PASSWORD = "Hunter2-pa55w0rd"
PIECES = ("Hunter2", "pa55w0rd")
PORT = free_port()  # nothing listens there: a reachable-looking URL falls back to local

CONNECTION_STRINGS = {
    "hash-in-password": f"redis://:{PASSWORD}#frag@127.0.0.1:{PORT}",
    "no-scheme": f":{PASSWORD}@127.0.0.1:{PORT}",
    "user-no-scheme": f"admin:{PASSWORD}@127.0.0.1:{PORT}",
    "one-slash": f"redis:/:{PASSWORD}@127.0.0.1:{PORT}",
    "no-colon": f"rediss//:{PASSWORD}@127.0.0.1:{PORT}",
    "wrong-scheme": f"http://:{PASSWORD}@127.0.0.1:{PORT}",
    "space": f"redis://:Hunter2 pa55w0rd@127.0.0.1:{PORT}",
    "slash-in-password": f"redis://:Hunter2/pa55w0rd@127.0.0.1:{PORT}/0",
    "bad-port": f"redis://user:{PASSWORD}@127.0.0.1:notaport",
    "unclosed-bracket": f"redis://:{PASSWORD}@[::1",
    "query-password-bad-db": f"redis://127.0.0.1:{PORT}/0?password={PASSWORD}&db=x",
    "bad-option": f"redis://:{PASSWORD}@127.0.0.1:{PORT}?socket_timeout=abc",
}

AGENT = """
name: secrets
tools:
  - type: vectorstore
    name: kb
    source: docs
"""

#: A probe thread that dies on a URL is a fault a user would see (a traceback), not noise.
pytestmark = pytest.mark.filterwarnings("error::pytest.PytestUnhandledThreadExceptionWarning")


def assert_no_secret(texts: list[str], secrets: tuple[str, ...]) -> None:
    for text in texts:
        for secret in secrets:
            assert secret not in text, f"{secret!r} printed in:\n{text}"


@pytest.mark.parametrize("url", CONNECTION_STRINGS.values(), ids=CONNECTION_STRINGS.keys())
def test_no_password_in_any_output(tmp_path: Path, url: str) -> None:
    write(tmp_path / "agent.yaml", AGENT)
    write(tmp_path / "docs" / "note.txt", "Espresso is brewed at nine bars.\n")
    write(
        tmp_path / ".holodeck" / "config.yaml",
        "vectorstore:\n  provider: redis\n  connection_string: ${REDIS_URL}\n",
    )
    env = {"REDIS_URL": url}
    outputs: list[str] = []
    for args in (("ingest",), ("-v", "ingest"), ("config", "show")):
        result = run_holodeck(*args, cwd=tmp_path, env=env)
        assert result.returncode in (0, 2), result.stdout + result.stderr
        outputs += [result.stdout, result.stderr]
    assert any("***" in text for text in outputs)  # it was shown, redacted
    assert_no_secret(outputs, (PASSWORD, *PIECES))


KEY = "sk-grep-Qwerty0123456789"
OTHER_KEY = "Zk3y-not-openai-shaped-42"  # a key no pattern recognises

LLM_AGENT = """
name: keys
model: {{provider: openai, name: fake-model, endpoint: "{url}", api_key: "${{{var}}}"}}
tools:
  - type: vectorstore
    name: kb
    source: docs
    embedding_model: all-MiniLM-L6-v2
test_cases:
  - {{name: one, input: espresso, expected_content: [bars]}}
"""


@pytest.mark.parametrize(("var", "key"), [("OPENAI_API_KEY", KEY), ("MY_KEY", OTHER_KEY)])
def test_no_key_in_any_output_when_a_server_echoes_it(tmp_path: Path, var: str, key: str) -> None:
    write(tmp_path / "docs" / "note.txt", "Espresso is brewed at nine bars.\n")
    echo = f"Incorrect API key provided: {key}. Authorization: Bearer {key}"
    outputs: list[str] = []
    with FakeOpenAI() as llm:
        write(tmp_path / "agent.yaml", LLM_AGENT.format(url=llm.url, var=var))
        env = {var: key}
        llm.chat.push(*[error(401, echo)] * 4)
        for args in (
            ("-v", "test", "--report", "report.json", "--junit", "junit.xml"),
            ("test",),
            ("-v", "chat"),
            ("-v", "config", "show", "--json"),
        ):
            result = run_holodeck(*args, cwd=tmp_path, env=env, stdin="hello\n")
            assert result.returncode in (0, 3), result.stdout + result.stderr
            outputs += [result.stdout, result.stderr]
        # Remote embeddings answering 401 with the key, through -v ingest.
        write(
            tmp_path / "agent.yaml",
            LLM_AGENT.format(url=llm.url, var=var).replace("all-MiniLM-L6-v2", "nomic"),
        )
        write(tmp_path / "agent.yaml", (tmp_path / "agent.yaml").read_text().replace(
            "provider: openai", "provider: ollama"
        ))  # fmt: skip
        llm.embeddings.push(error(401, echo))
        result = run_holodeck("-v", "ingest", "--force-ingest", cwd=tmp_path, env=env)
        assert result.returncode == 3, result.stdout + result.stderr
        outputs += [result.stdout, result.stderr]
    outputs += [(tmp_path / "report.json").read_text(), (tmp_path / "junit.xml").read_text()]
    assert any("refused the API key (401)" in text for text in outputs)
    assert any("Traceback" in text for text in outputs)  # -v showed the tracebacks, redacted
    assert_no_secret(outputs, (key,))


@pytest.mark.parametrize(
    "api_key",
    ["${OPENAI_API_KEY:-sk-literal-Zz9876543210}", "sk-literal-Zz9876543210${NOPE:-}"],
)
def test_refused_api_key_is_never_echoed(tmp_path: Path, api_key: str) -> None:
    write(
        tmp_path / "agent.yaml",
        f"name: k\nmodel:\n  provider: openai\n  name: m\n  api_key: {json.dumps(api_key)}\n",
    )
    for args in (("config", "show"), ("-v", "config", "show"), ("-v", "ingest")):
        result = run_holodeck(*args, cwd=tmp_path)
        assert result.returncode == 2
        assert "model.api_key: must be exactly one ${VAR}" in result.stderr
        assert_no_secret([result.stdout, result.stderr], ("Zz9876543210",))
