"""The spans of ingest, search, chat and test, read from ``holodeck --trace FILE`` (the real
CLI, the real local model and index, the fake OpenAI server at the HTTP level for the LLM
and the judge); no secret in any of them; content only with capture on (issue 45)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import fake_judge
import pytest
from cli_helpers import run_holodeck, write
from fake_openai import FakeOpenAI, text, tool_calls

from holodeck.tracing import SEMCONV_VERSION

REPO = Path(__file__).resolve().parents[2]
KEY = "sk-trace-test-key-0123456789"
QUESTION = "How many attempts does a failing job get by default?"

KB = """
name: traced
tools:
  - type: vectorstore
    name: guides
    source: docs/
    embedding_model: all-MiniLM-L6-v2
    top_k: 2
"""

LLM = """
name: traced
model: {{provider: openai, name: fake-model, endpoint: "{url}", api_key: "${{OPENAI_API_KEY}}"}}
tools:
  - type: vectorstore
    name: guides
    source: docs/
    embedding_model: all-MiniLM-L6-v2
    top_k: 2
"""


def spans(path: Path) -> list[dict[str, Any]]:
    """The spans of a --trace file, one JSON object a line."""
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def named(found: list[dict[str, Any]], name: str) -> list[dict[str, Any]]:
    return [s for s in found if s["name"] == name]


def one(found: list[dict[str, Any]], name: str) -> dict[str, Any]:
    matches = named(found, name)
    assert len(matches) == 1, [s["name"] for s in found]
    return matches[0]


def children(found: list[dict[str, Any]], parent: dict[str, Any]) -> list[dict[str, Any]]:
    sid = parent["context"]["span_id"]
    return [s for s in found if s["parent_id"] == sid]


def docs(tmp_path: Path) -> Path:
    (tmp_path / "docs").mkdir()
    shutil.copy(REPO / "examples" / "docs" / "guides" / "retries.md", tmp_path / "docs")
    write(tmp_path / "docs" / "backups.md", "# Backups\n\nBackups run nightly at 02:00.\n")
    (tmp_path / "docs" / "empty.md").write_text("")
    return tmp_path


def test_an_ingest_is_one_span_per_run_with_a_child_per_file_and_embedding_call(
    tmp_path: Path,
) -> None:
    project = docs(tmp_path)
    write(project / "agent.yaml", KB)
    done = run_holodeck("--trace", "first.jsonl", "ingest", cwd=project)
    assert done.returncode == 0, done.stderr
    found = spans(project / "first.jsonl")
    run = one(found, "holodeck.ingest guides")
    assert run["parent_id"] is None
    a = run["attributes"]
    assert a["holodeck.store"] == "local"
    assert (a["holodeck.ingest.files.new"], a["holodeck.ingest.files.skipped"]) == (2, 1)
    assert a["holodeck.ingest.chunks.embedded"] >= 2
    assert a["holodeck.ingest.chunks.reused"] == 0
    files = {
        s["attributes"]["holodeck.file.path"]: s["attributes"]
        for s in children(found, run)
        if s["name"] == "holodeck.ingest.file"
    }
    assert set(files) == {"retries.md", "backups.md", "empty.md"}
    assert files["retries.md"]["holodeck.file.status"] == "new"
    assert files["retries.md"]["holodeck.file.type"] == ".md"
    assert files["retries.md"]["holodeck.file.chunks"] >= 1
    assert files["retries.md"]["holodeck.file.size"] > 0
    assert "empty" in files["empty.md"]["holodeck.file.skip_reason"]
    calls = [s for s in children(found, run) if s["name"].startswith("embeddings ")]
    assert calls
    for call in calls:
        assert call["attributes"]["gen_ai.operation.name"] == "embeddings"
        assert call["attributes"]["gen_ai.usage.input_tokens"] > 0
    assert (
        sum(c["attributes"]["holodeck.embeddings.texts"] for c in calls)
        == a["holodeck.ingest.chunks.embedded"]
    )
    assert run["resource"]["attributes"]["service.name"] == "holodeck"
    assert run["resource"]["schema_url"].endswith(SEMCONV_VERSION)

    # One file changed: the run says so, and only that file has a span.
    write(project / "docs" / "backups.md", "# Backups\n\nBackups run nightly at 03:00.\n")
    done = run_holodeck("--trace", "second.jsonl", "ingest", cwd=project)
    assert done.returncode == 0, done.stderr
    found = spans(project / "second.jsonl")
    a = one(found, "holodeck.ingest guides")["attributes"]
    assert (a["holodeck.ingest.files.changed"], a["holodeck.ingest.files.unchanged"]) == (1, 1)
    paths = [s["attributes"]["holodeck.file.path"] for s in named(found, "holodeck.ingest.file")]
    assert sorted(paths) == ["backups.md", "empty.md"]


@pytest.mark.parametrize("mode", ["hybrid", "semantic", "keyword"])
def test_a_search_is_one_execute_tool_span_with_both_sides(tmp_path: Path, mode: str) -> None:
    project = docs(tmp_path)
    write(project / "agent.yaml", KB)
    assert run_holodeck("ingest", cwd=project).returncode == 0
    args = ("search", "--trace", "s.jsonl", "--no-ingest", "--mode", mode, "retry attempts")
    done = run_holodeck(*args, cwd=project)
    assert done.returncode == 0, done.stderr
    found = spans(project / "s.jsonl")
    search = one(found, "execute_tool guides")
    a = search["attributes"]
    assert a["gen_ai.operation.name"] == "execute_tool"
    assert a["gen_ai.tool.name"] == "guides"
    assert a["holodeck.search.mode"] == mode
    assert a["holodeck.search.top_k"] == 2
    assert a["holodeck.store"] == "local"
    assert 1 <= a["holodeck.search.results"] <= 2
    assert 0 < a["holodeck.search.top_score"] <= 1.5
    keyword, semantic = (
        a["holodeck.search.keyword.candidates"],
        a["holodeck.search.semantic.candidates"],
    )
    assert (keyword > 0) == (mode != "semantic")
    assert (semantic > 0) == (mode != "keyword")
    (embed,) = children(found, search)
    assert embed["attributes"]["gen_ai.operation.name"] == "embeddings"
    assert embed["attributes"]["holodeck.embeddings.texts"] == 1
    # content capture is off: the query is nowhere in the file
    assert "retry attempts" not in (project / "s.jsonl").read_text()


def test_a_chat_turn_with_a_tool_call(tmp_path: Path) -> None:
    project = docs(tmp_path)
    with FakeOpenAI() as llm:
        write(project / "agent.yaml", LLM.format(url=llm.url))
        llm.chat.push(
            tool_calls(("guides", {"query": "default retry attempts"})),
            text("A job gets 3 attempts in total."),
        )
        done = run_holodeck(
            "chat",
            "--trace",
            "chat.jsonl",
            cwd=project,
            env={"OPENAI_API_KEY": KEY},
            stdin=QUESTION + "\n",
        )
    assert done.returncode == 0, done.stderr
    found = spans(project / "chat.jsonl")
    turn = one(found, "invoke_agent traced")
    assert turn["parent_id"] is None
    assert turn["attributes"]["gen_ai.agent.name"] == "traced"
    assert turn["attributes"]["gen_ai.request.model"] == "fake-model"
    assert turn["attributes"]["holodeck.agent.tool_calls"] == 1
    below = children(found, turn)
    assert [s["name"] for s in sorted(below, key=lambda s: s["start_time"])] == [
        "chat fake-model",
        "execute_tool guides",
        "chat fake-model",
    ]
    first, second = sorted(named(below, "chat fake-model"), key=lambda s: s["start_time"])
    for call in (first, second):
        assert call["kind"] == "SpanKind.CLIENT"
        assert call["attributes"]["gen_ai.operation.name"] == "chat"
        assert call["attributes"]["gen_ai.provider.name"] == "openai"
    assert first["attributes"]["gen_ai.response.finish_reasons"] == ["tool_calls"]
    assert first["attributes"]["holodeck.chat.tool_calls"] == 1
    assert second["attributes"]["gen_ai.response.finish_reasons"] == ["stop"]
    tool = one(below, "execute_tool guides")
    assert tool["attributes"]["gen_ai.tool.call.id"]
    # the agent's tool call and the search it runs are one span, the query's embedding below
    assert tool["attributes"]["holodeck.search.results"] >= 1
    assert [s["name"] for s in children(found, tool)] == ["embeddings all-MiniLM-L6-v2-onnx-int8"]
    assert "3 attempts in total" not in (project / "chat.jsonl").read_text()


def test_a_test_run_with_a_judged_metric(tmp_path: Path) -> None:
    project = docs(tmp_path)
    with FakeOpenAI() as agent, FakeOpenAI() as judge:
        judge.responder = fake_judge.judge
        write(
            project / "agent.yaml",
            LLM.format(url=agent.url)
            + f"""
evaluations:
  model: {{provider: openai, name: judge-model, endpoint: "{judge.url}"}}
  metrics:
    - type: rag
      metric_type: faithfulness
      threshold: 0.8
test_cases:
  - name: attempts
    input: {QUESTION}
""",
        )
        agent.chat.push(
            tool_calls(("guides", {"query": "default retry attempts"})),
            text("A job gets 3 attempts in total by default."),
        )
        done = run_holodeck(
            "test", "--trace", "test.jsonl", cwd=project, env={"OPENAI_API_KEY": KEY}
        )
    assert done.returncode == 0, done.stdout + done.stderr
    found = spans(project / "test.jsonl")
    suite = one(found, "holodeck.test traced")
    assert suite["parent_id"] is None
    (case,) = children(found, suite)
    assert case["name"] == "holodeck.test_case attempts"
    assert case["attributes"]["holodeck.test_case.status"] == "passed"
    assert case["attributes"]["holodeck.test_case.tool_calls"] == 1
    below = {s["name"] for s in children(found, case)}
    assert {"invoke_agent traced", "holodeck.evaluation faithfulness"} <= below
    metric = one(found, "holodeck.evaluation faithfulness")
    m = metric["attributes"]
    assert m["holodeck.evaluation.score"] == pytest.approx(1.0)
    assert (m["holodeck.evaluation.threshold"], m["holodeck.evaluation.passed"]) == (0.8, True)
    assert m["holodeck.evaluation.judge"] == "openai:judge-model"
    asked = children(found, metric)
    assert asked and all(s["name"] == "chat judge-model" for s in asked)
    assert all(s["attributes"]["holodeck.judge.cached"] is False for s in asked)


def every_string(value: Any) -> list[str]:
    """Every string in a span, keys and values, however deep."""
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [s for k, v in value.items() for s in [k, *every_string(v)]]
    if isinstance(value, list):
        return [s for v in value for s in every_string(v)]
    return []


def test_no_secret_in_any_span_and_content_only_with_capture(tmp_path: Path) -> None:
    """A key in the model's config and in a header, a password in an OTLP endpoint's URL,
    and content captured (with a pattern) that quotes them all: none reaches a span."""
    project = docs(tmp_path)
    header = "Bearer hdr-0123456789abcdef"
    observability = """
observability:
  enabled: true
  traces:
    capture_content: true
    redaction_patterns: ['\\b\\d{3}-\\d{2}-\\d{4}\\b']
  exporters:
    console: {enabled: false}
    otlp:
      enabled: true
      endpoint: http://user:otlp-pass-99@127.0.0.1:9/
      headers: {authorization: "${OTLP_AUTH}"}
      timeout_ms: 1000
"""
    question = f"My SSN is 123-45-6789 and my key is {KEY}; how many attempts does a job get?"
    with FakeOpenAI() as llm:
        write(project / "agent.yaml", LLM.format(url=llm.url) + observability)
        llm.chat.push(
            tool_calls(("guides", {"query": f"attempts {KEY} 123-45-6789"})),
            text(f"3 attempts. (You wrote {KEY} and {header}.)"),
        )
        done = run_holodeck(
            "chat",
            "--trace",
            "chat.jsonl",
            cwd=project,
            env={"OPENAI_API_KEY": KEY, "OTLP_AUTH": header},
            stdin=question + "\n",
        )
    assert done.returncode == 0, done.stderr
    found = spans(project / "chat.jsonl")
    assert len(found) >= 5
    strings = [s for span in found for s in every_string(span)]
    for secret in (KEY, "hdr-0123456789abcdef", "otlp-pass-99", "123-45-6789"):
        assert not any(secret in s for s in strings), secret
    # capture on: the content is there, masked where it held a secret or a pattern
    turn = one(found, "invoke_agent traced")["attributes"]
    assert turn["holodeck.agent.input"].startswith("My SSN is *** and my key is ***;")
    assert "3 attempts" in turn["holodeck.agent.answer"]
    search = one(found, "execute_tool guides")["attributes"]
    assert any("attempts" in p for p in search["holodeck.search.passages"])
    for call in named(found, "chat fake-model"):
        assert "My SSN is ***" in call["attributes"]["gen_ai.input.messages"]
        assert "gen_ai.output.messages" in call["attributes"]
    assert one(found, "invoke_agent traced")["resource"]["attributes"]["service.name"] == (
        "holodeck-traced"
    )


def test_a_bad_trace_file_is_one_line(tmp_path: Path) -> None:
    write(tmp_path / "agent.yaml", KB)
    done = run_holodeck(
        "--trace", str(tmp_path / "no" / "such" / "t.jsonl"), "ingest", cwd=tmp_path
    )
    assert done.returncode == 2
    (line,) = done.stderr.strip().splitlines()
    assert line.startswith(f"Error: --trace {tmp_path}/no/such/t.jsonl: cannot write it (")
    assert "Traceback" not in done.stderr
