"""The original HoloDeck's ``observability:`` block: what is honoured, what is warned once
and dropped, what is refused (issue 45, item A)."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest
from cli_helpers import run_holodeck, write

from holodeck.config.loader import load_project
from holodeck.errors import MissingExtra
from holodeck.tracing import ConsoleSettings, OtlpSettings
from holodeck.tracing.sdk import traces_url

ORIGINAL = """
name: research
tools:
  - type: vectorstore
    name: kb
    source: docs/
observability:
  enabled: true
  disable_provider_tracing: true
  traces:
    sample_rate: 0.25
    capture_content: true
    redaction_patterns: ['\\b\\d{16}\\b']
    max_queue_size: 100
    max_export_batch_size: 10
  metrics:
    enabled: true
    export_interval_ms: 5000
  logs:
    level: WARNING
  resource_attributes:
    environment: production
    version: 1.0
  exporters:
    console:
      enabled: true
      pretty_print: false
    otlp:
      enabled: true
      endpoint: http://localhost:4317
      protocol: http
      compression: gzip
      headers: {x-team: kb}
    prometheus:
      enabled: true
      port: 8889
    azure_monitor:
      enabled: false
"""


def project(tmp_path: Path, text: str) -> Path:
    (tmp_path / "docs").mkdir(exist_ok=True)
    write(tmp_path / "docs" / "a.md", "Some text.\n")
    write(tmp_path / "agent.yaml", text)
    return tmp_path / "agent.yaml"


def test_the_original_block_is_read_with_its_meaning(tmp_path: Path) -> None:
    loaded = load_project(project(tmp_path, ORIGINAL))
    assert loaded.agent.observability is not None
    settings = loaded.agent.observability.settings(loaded.agent.name)
    assert settings is not None
    assert settings.service_name == "holodeck-research"  # the original's default
    assert settings.sample_rate == 0.25
    assert settings.capture_content is True
    assert list(settings.redaction_patterns) == ["\\b\\d{16}\\b"]
    assert (settings.max_queue_size, settings.max_export_batch_size) == (100, 10)
    assert settings.resource_attributes == {"environment": "production", "version": 1.0}
    assert settings.console == ConsoleSettings(pretty_print=False, include_timestamps=True)
    assert settings.otlp == OtlpSettings("http://localhost:4317", {"x-team": "kb"}, 30000, "gzip")
    # the original's gRPC default port on localhost is taken for the HTTP one
    assert traces_url("http://localhost:4317") == "http://localhost:4318/v1/traces"
    assert traces_url("https://otel.example.com/otlp/") == "https://otel.example.com/otlp/v1/traces"


def test_keys_it_cannot_honour_are_warned_once_each(tmp_path: Path) -> None:
    project(tmp_path, ORIGINAL)
    done = run_holodeck("config", "show", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    warned = re.findall(r"^WARNING: agent\.yaml:\d+: (\S+): ignored", done.stderr, re.MULTILINE)
    assert sorted(warned) == [
        "observability.disable_provider_tracing",
        "observability.exporters.azure_monitor",
        "observability.exporters.prometheus",
        "observability.logs",
        "observability.metrics",
    ]


def test_grpc_is_warned_and_its_exporter_dropped(tmp_path: Path) -> None:
    text = ORIGINAL.replace("protocol: http", "protocol: grpc")
    loaded = load_project(project(tmp_path, text))
    assert any(
        "observability.exporters.otlp: ignored (protocol grpc is not supported" in w
        for w in loaded.warnings
    )
    assert loaded.agent.observability is not None
    settings = loaded.agent.observability.settings("research")
    assert settings is not None and settings.otlp is None and settings.console is not None


def test_off_by_default_and_console_when_no_exporter(tmp_path: Path) -> None:
    base = ORIGINAL.split("observability:")[0]
    off = load_project(project(tmp_path, base + "observability:\n  service_name: x\n"))
    assert off.agent.observability is not None
    assert off.agent.observability.settings("research") is None
    on = load_project(project(tmp_path, base + "observability:\n  enabled: true\n"))
    assert on.agent.observability is not None
    settings = on.agent.observability.settings("research")
    assert settings is not None and settings.console == ConsoleSettings() and settings.otlp is None


def test_a_bad_pattern_is_one_line_with_its_place(tmp_path: Path) -> None:
    base = ORIGINAL.split("observability:")[0]
    bad = base + "observability:\n  enabled: true\n  traces:\n    redaction_patterns: ['(']\n"
    project(tmp_path, bad)
    done = run_holodeck("config", "show", cwd=tmp_path)
    assert done.returncode == 2
    line = done.stderr.strip().splitlines()[-1]
    assert line.startswith("Error: agent.yaml:")
    assert "observability.traces.redaction_patterns" in line and "regular expression" in line


def test_without_the_extra_tracing_stops_with_one_line_naming_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for module in ("opentelemetry.sdk", "opentelemetry.sdk.trace"):
        monkeypatch.setitem(sys.modules, module, None)  # as if not installed
    project(tmp_path, ORIGINAL.split("observability:")[0])
    done = run_holodeck("--trace", "t.jsonl", "ingest", cwd=tmp_path)
    assert done.returncode == 2
    (line,) = done.stderr.strip().splitlines()
    assert line.startswith("Error: tracing (--trace or observability:) needs the extra")
    assert line.endswith(
        "needs the extra holodeck[traces] (package opentelemetry is not "
        "installed): pip install 'holodeck[traces]'"
    )
    project(tmp_path, ORIGINAL)
    with pytest.raises(MissingExtra, match=r"pip install 'holodeck\[traces\]'"):
        load_project(tmp_path / "agent.yaml")


def test_sample_rate_zero_keeps_no_span(tmp_path: Path) -> None:
    base = ORIGINAL.split("observability:")[0]
    block = "observability:\n  enabled: true\n  traces: {sample_rate: 0.0}\n"
    block += "  exporters: {console: {enabled: false}}\n"
    project(tmp_path, base + block)
    done = run_holodeck("--trace", "t.jsonl", "ingest", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "t.jsonl").read_text() == ""
    project(tmp_path, base + block.replace("0.0", "1.0"))
    (tmp_path / "docs" / "b.md").write_text("More text.\n")
    assert run_holodeck("--trace", "t.jsonl", "ingest", cwd=tmp_path).returncode == 0
    assert "holodeck.ingest kb" in (tmp_path / "t.jsonl").read_text()
