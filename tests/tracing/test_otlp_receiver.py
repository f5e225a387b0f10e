"""A real OTLP/HTTP endpoint on 127.0.0.1 (a collector stand-in decoding the protobuf
``ExportTraceServiceRequest``) receives the spans of one ``holodeck test`` run in its own
process, flushed before the process ends (issue 45)."""

from __future__ import annotations

import gzip
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from cli_helpers import run_holodeck, write
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)

TOKEN = "Bearer otlp-token-0123456789"


class Collector(ThreadingHTTPServer):
    """Keeps each export request it is sent: its path, headers and decoded body."""

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.received: list[tuple[str, dict[str, str], ExportTraceServiceRequest]] = []

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}"

    def spans(self) -> list[tuple[str, dict[str, Any], dict[str, Any]]]:
        """Every span received: its name, its attributes, its resource's attributes."""
        found = []
        for _, _, request in self.received:
            for rs in request.resource_spans:
                resource = {a.key: _value(a.value) for a in rs.resource.attributes}
                for ss in rs.scope_spans:
                    for span in ss.spans:
                        attrs = {a.key: _value(a.value) for a in span.attributes}
                        found.append((span.name, attrs, resource))
        return found


def _value(value: Any) -> Any:
    kind = value.WhichOneof("value")
    if kind == "array_value":
        return [_value(v) for v in value.array_value.values]
    return getattr(value, kind) if kind else None


class _Handler(BaseHTTPRequestHandler):
    server: Collector

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers["Content-Length"]))
        if self.headers.get("Content-Encoding") == "gzip":
            body = gzip.decompress(body)
        request = ExportTraceServiceRequest()
        request.ParseFromString(body)
        self.server.received.append(
            (self.path, {k.lower(): v for k, v in self.headers.items()}, request)
        )
        reply = ExportTraceServiceResponse().SerializeToString()
        self.send_response(200)
        self.send_header("Content-Type", "application/x-protobuf")
        self.send_header("Content-Length", str(len(reply)))
        self.end_headers()
        self.wfile.write(reply)

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def collector() -> Iterator[Collector]:
    server = Collector()
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()


AGENT = """
name: otlp-agent
tools:
  - type: vectorstore
    name: notes
    source: docs/
    embedding_model: all-MiniLM-L6-v2
test_cases:
  - name: backups
    input: When do backups run?
    expected_sources: [backups.md]
observability:
  enabled: true
  service_name: kb-ci
  resource_attributes: {{deployment.environment: ci}}
  traces:
    schedule_delay_millis: 60000   # nothing sent before the end: the exit must flush
  exporters:
    otlp:
      endpoint: {url}
      compression: gzip
      headers: {{authorization: "${{OTEL_TOKEN}}"}}
"""


def test_a_collector_receives_the_spans_of_one_holodeck_test(
    tmp_path: Path, collector: Collector
) -> None:
    (tmp_path / "docs").mkdir()
    write(tmp_path / "docs" / "backups.md", "# Backups\n\nBackups run nightly at 02:00.\n")
    write(tmp_path / "docs" / "retries.md", "# Retries\n\nA failed job is retried twice.\n")
    write(tmp_path / "agent.yaml", AGENT.format(url=collector.url))
    done = run_holodeck(
        "test", cwd=tmp_path, env={"OTEL_TOKEN": TOKEN}, own_process=True, timeout=300
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert collector.received, done.stderr
    for path, headers, _ in collector.received:
        assert path == "/v1/traces"
        assert headers["authorization"] == TOKEN  # the collector, and only it, gets the token
        assert headers["content-type"] == "application/x-protobuf"
    spans = collector.spans()
    names = [name for name, _, _ in spans]
    for expected in (
        "holodeck.ingest notes",
        "holodeck.test otlp-agent",
        "holodeck.test_case backups",
        "execute_tool notes",  # retrieval-only: the case's search, no model
    ):
        assert expected in names, names
    _, case, resource = next(s for s in spans if s[0] == "holodeck.test_case backups")
    assert case["holodeck.test_case.status"] == "passed"
    assert resource["service.name"] == "kb-ci"
    assert resource["deployment.environment"] == "ci"
    assert TOKEN.split()[1] not in done.stderr + done.stdout


def test_a_shell_search_that_ends_at_once_still_sends_its_spans(
    tmp_path: Path, collector: Collector
) -> None:
    """A search ends its process without the interpreter's teardown (``exit_fast``): the
    spans buffered for the collector are sent first."""
    (tmp_path / "docs").mkdir()
    write(tmp_path / "docs" / "backups.md", "# Backups\n\nBackups run nightly at 02:00.\n")
    write(tmp_path / "agent.yaml", AGENT.format(url=collector.url))
    assert run_holodeck("ingest", cwd=tmp_path, env={"OTEL_TOKEN": TOKEN}).returncode == 0
    collector.received.clear()
    done = run_holodeck(
        "search", "--no-ingest", "backups", cwd=tmp_path, env={"OTEL_TOKEN": TOKEN},
        own_process=True,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    names = [name for name, _, _ in collector.spans()]
    assert "execute_tool notes" in names, names
