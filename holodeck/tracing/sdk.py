"""The OpenTelemetry SDK side of tracing: the provider, its sampler and its exporters.

Imported only once tracing is on (the ``traces`` extra), so a command that does not trace
never loads the SDK.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Sequence
from typing import IO, Any
from urllib.parse import urlsplit, urlunsplit

from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import (
    BatchSpanProcessor,
    ConsoleSpanExporter,
    SimpleSpanProcessor,
    SpanExporter,
    SpanExportResult,
)
from opentelemetry.sdk.trace.sampling import ParentBased, TraceIdRatioBased

from holodeck.tracing.settings import ConsoleSettings, OtlpSettings, TraceSettings

#: The OTLP/HTTP port; the original HoloDeck's default endpoint is the gRPC one (4317).
OTLP_HTTP_PORT = 4318


class JsonLinesExporter(SpanExporter):
    """Each finished span as one JSON object on its own line (``--trace FILE``)."""

    def __init__(self, stream: IO[str]) -> None:
        self._stream = stream
        self._lock = threading.Lock()

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        lines = "".join(span.to_json(indent=None) + "\n" for span in spans)
        with self._lock:
            self._stream.write(lines)
            self._stream.flush()
        return SpanExportResult.SUCCESS

    def shutdown(self) -> None:
        with self._lock:
            self._stream.close()


def build_provider(
    settings: TraceSettings, stream: IO[str] | None, schema_url: str
) -> TracerProvider:
    """A provider sampling at ``settings.sample_rate`` with each exporter asked for."""
    resource = Resource.create(
        {
            "service.name": settings.service_name,
            "service.version": _version(),
            **settings.resource_attributes,
        },
        schema_url=schema_url,
    )
    provider = TracerProvider(
        resource=resource, sampler=ParentBased(TraceIdRatioBased(settings.sample_rate))
    )
    if stream is not None:
        provider.add_span_processor(SimpleSpanProcessor(JsonLinesExporter(stream)))
    if settings.console is not None:
        provider.add_span_processor(SimpleSpanProcessor(_console(settings.console)))
    if settings.otlp is not None:
        provider.add_span_processor(
            BatchSpanProcessor(
                _otlp(settings.otlp),
                max_queue_size=settings.max_queue_size,
                max_export_batch_size=settings.max_export_batch_size,
                schedule_delay_millis=settings.schedule_delay_millis,
            )
        )
    return provider


def _version() -> str:
    """holodeck's version, from its installed metadata (the package would import it all)."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("holodeck")
    except PackageNotFoundError:
        return "unknown"


def _console(console: ConsoleSettings) -> ConsoleSpanExporter:
    """Spans as JSON on stderr: indented with ``pretty_print``, times only if asked."""
    import sys

    def formatter(span: ReadableSpan) -> str:
        data: dict[str, Any] = json.loads(span.to_json(indent=None))
        if not console.include_timestamps:
            data.pop("start_time", None)
            data.pop("end_time", None)
        return json.dumps(data, indent=4 if console.pretty_print else None) + "\n"

    return ConsoleSpanExporter(out=sys.stderr, formatter=formatter)


def _otlp(otlp: OtlpSettings) -> SpanExporter:
    """The OTLP/HTTP (protobuf) exporter, imported only when one is configured."""
    from opentelemetry.exporter.otlp.proto.http import Compression
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

    compression = {"gzip": Compression.Gzip, "deflate": Compression.Deflate}
    return OTLPSpanExporter(
        endpoint=traces_url(otlp.endpoint),
        headers=dict(otlp.headers),
        timeout=otlp.timeout_ms / 1000,
        compression=compression.get((otlp.compression or "").lower()),
    )


def traces_url(endpoint: str) -> str:
    """The OTLP/HTTP traces URL of ``endpoint``: ``/v1/traces`` added, and the original's
    default gRPC port on localhost (4317) taken for the HTTP one (4318)."""
    parts = urlsplit(endpoint)
    netloc = parts.netloc
    if parts.hostname in ("localhost", "127.0.0.1") and parts.port == 4317:
        netloc = netloc.replace(":4317", f":{OTLP_HTTP_PORT}")
    path = parts.path.rstrip("/")
    if not path.endswith("/v1/traces"):
        path += "/v1/traces"
    return urlunsplit((parts.scheme, netloc, path, parts.query, parts.fragment))
