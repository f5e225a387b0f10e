"""agent.yaml's ``observability:`` block (the original HoloDeck's keys and meaning): traces
of chat, test, serve, ingest and search, sent to the console or an OTLP/HTTP collector.

Only the keys holodeck honours are here; the original's others (metrics, logs, Prometheus,
Azure Monitor, gRPC) are warned and dropped by ``compat`` before validation.
"""

from __future__ import annotations

import re
from typing import Literal

from pydantic import Field, field_validator, model_validator

from holodeck.config.base import Float, Int, StrictModel
from holodeck.redact import remember_secret
from holodeck.tracing import ConsoleSettings, OtlpSettings, TraceSettings


class TracesConfig(StrictModel):
    """``observability.traces``: sampling, content capture and the export queue."""

    enabled: bool = True
    sample_rate: Float = Field(default=1.0, ge=0.0, le=1.0, description="Share of traces kept.")
    capture_content: bool = Field(
        default=False,
        description="Keep queries, passages, prompts and answers in spans (sensitive).",
    )
    capture_evaluation_content: bool = Field(
        default=False, description="Keep each evaluation's reasoning in its span (sensitive)."
    )
    redaction_patterns: list[str] = Field(
        default_factory=list, description="Regular expressions masked in captured content."
    )
    max_queue_size: Int = Field(default=2048, ge=1)
    max_export_batch_size: Int = Field(default=512, ge=1)
    schedule_delay_millis: Int = Field(default=2000, ge=100)

    @field_validator("redaction_patterns")
    @classmethod
    def _compiles(cls, patterns: list[str]) -> list[str]:
        for pattern in patterns:
            try:
                re.compile(pattern)
            except re.error as exc:
                raise ValueError(f"{pattern!r} is not a regular expression ({exc})") from None
        return patterns

    @model_validator(mode="after")
    def _batch_fits(self) -> TracesConfig:
        if self.max_export_batch_size > self.max_queue_size:
            raise ValueError(
                f"max_export_batch_size ({self.max_export_batch_size}) is larger than "
                f"max_queue_size ({self.max_queue_size})"
            )
        return self


class ConsoleExporterConfig(StrictModel):
    """``exporters.console``: spans as JSON on stderr."""

    enabled: bool = True
    pretty_print: bool = True
    include_timestamps: bool = True


class OtlpExporterConfig(StrictModel):
    """``exporters.otlp``: spans to an OpenTelemetry collector over OTLP/HTTP (protobuf)."""

    enabled: bool = True
    endpoint: str = Field(
        default="http://localhost:4318",
        description="The collector; /v1/traces is added (localhost:4317 is taken as 4318).",
    )
    protocol: Literal["http"] = "http"
    headers: dict[str, str] = Field(default_factory=dict)
    timeout_ms: Int = Field(default=30_000, ge=1000)
    compression: Literal["gzip", "deflate"] | None = None
    insecure: bool = Field(
        default=True, description="Read from the endpoint's scheme: http:// or https://."
    )


class ExportersConfig(StrictModel):
    """``observability.exporters``: where spans go (console when none is enabled)."""

    console: ConsoleExporterConfig | None = None
    otlp: OtlpExporterConfig | None = None


class ObservabilityConfig(StrictModel):
    """``observability:``: off unless ``enabled: true``."""

    enabled: bool = False
    service_name: str | None = Field(
        default=None, description="Default: holodeck-<agent name>, as in the original."
    )
    traces: TracesConfig = Field(default_factory=TracesConfig)
    resource_attributes: dict[str, str | int | float | bool] = Field(default_factory=dict)
    exporters: ExportersConfig = Field(default_factory=ExportersConfig)

    def settings(self, agent_name: str) -> TraceSettings | None:
        """The traces this block asks for, or None (off)."""
        if not (self.enabled and self.traces.enabled):
            return None
        ex = self.exporters
        otlp = ex.otlp if ex.otlp is not None and ex.otlp.enabled else None
        console = ex.console if ex.console is not None and ex.console.enabled else None
        if otlp is None and console is None and (ex.console is None or ex.console.enabled):
            console = ConsoleExporterConfig()  # the original's default exporter
        if otlp is not None:
            for value in otlp.headers.values():
                remember_secret(value)
        t = self.traces
        return TraceSettings(
            service_name=self.service_name or f"holodeck-{agent_name}",
            sample_rate=t.sample_rate,
            capture_content=t.capture_content,
            capture_evaluation_content=t.capture_evaluation_content,
            redaction_patterns=tuple(t.redaction_patterns),
            resource_attributes=dict(self.resource_attributes),
            console=None
            if console is None
            else ConsoleSettings(console.pretty_print, console.include_timestamps),
            otlp=None
            if otlp is None
            else OtlpSettings(otlp.endpoint, dict(otlp.headers), otlp.timeout_ms, otlp.compression),
            max_queue_size=t.max_queue_size,
            max_export_batch_size=t.max_export_batch_size,
            schedule_delay_millis=t.schedule_delay_millis,
        )
