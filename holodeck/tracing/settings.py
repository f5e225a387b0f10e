"""What traces are asked to do, as plain values: read from an agent's ``observability:``
block by the config layer, turned into an OpenTelemetry provider by ``tracing.sdk``."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field


@dataclass(frozen=True)
class ConsoleSettings:
    """Spans printed on stderr as JSON (stdout stays the command's output)."""

    pretty_print: bool = True
    include_timestamps: bool = True


@dataclass(frozen=True)
class OtlpSettings:
    """Spans sent over OTLP/HTTP (protobuf) to ``endpoint`` (``.../v1/traces``)."""

    endpoint: str
    headers: Mapping[str, str] = field(default_factory=dict)
    timeout_ms: int = 30_000
    compression: str | None = None


@dataclass(frozen=True)
class TraceSettings:
    """What an agent's ``observability:`` block asks of the traces (plain values)."""

    service_name: str = "holodeck"
    sample_rate: float = 1.0
    capture_content: bool = False
    capture_evaluation_content: bool = False
    redaction_patterns: Sequence[str] = ()
    resource_attributes: Mapping[str, str | int | float | bool] = field(default_factory=dict)
    console: ConsoleSettings | None = None
    otlp: OtlpSettings | None = None
    max_queue_size: int = 2048
    max_export_batch_size: int = 512
    schedule_delay_millis: int = 2000
