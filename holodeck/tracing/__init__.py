"""Traces of holodeck's work (OpenTelemetry spans): ingest, search, chat, test and serve.

Off unless asked for: ``holodeck --trace FILE`` (one JSON span per line) or an agent's
``observability:`` block (console, OTLP/HTTP). Off, :func:`span` hands back one shared
object that does nothing, and the OpenTelemetry SDK (the ``traces`` extra) is never
imported: a shell search pays nothing for it. On, the provider is made at the first span,
from whatever asked for it by then.

Every string a span carries goes through :func:`holodeck.redact.redact` (keys, URL
passwords); content (queries, passages, answers) is kept only with ``capture_content`` on,
and then through the configured redaction patterns as well. Names and attributes follow the
OpenTelemetry GenAI semantic conventions of :data:`SEMCONV_VERSION` where they have one,
``holodeck.*`` where they do not.
"""

from __future__ import annotations

import atexit
import json
import re
import sys
import threading
from collections.abc import Mapping
from pathlib import Path
from typing import IO, Any

from holodeck.errors import ConfigError
from holodeck.extras import require
from holodeck.redact import MASK, redact
from holodeck.tracing.settings import ConsoleSettings, OtlpSettings, TraceSettings

#: The version of the OpenTelemetry semantic conventions (GenAI included) the spans follow.
SEMCONV_VERSION = "1.37.0"
SCHEMA_URL = f"https://opentelemetry.io/schemas/{SEMCONV_VERSION}"
#: Longest content attribute kept (characters); longer text is cut and marked.
CONTENT_LIMIT = 4000
__all__ = ["ConsoleSettings", "OtlpSettings", "Span", "TraceSettings", "span"]

# GenAI semantic-convention names (SEMCONV_VERSION).
OPERATION = "gen_ai.operation.name"
PROVIDER = "gen_ai.provider.name"
REQUEST_MODEL = "gen_ai.request.model"
RESPONSE_MODEL = "gen_ai.response.model"
RESPONSE_ID = "gen_ai.response.id"
FINISH_REASONS = "gen_ai.response.finish_reasons"
INPUT_TOKENS = "gen_ai.usage.input_tokens"
OUTPUT_TOKENS = "gen_ai.usage.output_tokens"
TOOL_NAME = "gen_ai.tool.name"
TOOL_CALL_ID = "gen_ai.tool.call.id"
TOOL_TYPE = "gen_ai.tool.type"
AGENT_NAME = "gen_ai.agent.name"
INPUT_MESSAGES = "gen_ai.input.messages"
OUTPUT_MESSAGES = "gen_ai.output.messages"
ERROR_TYPE = "error.type"


class Span:
    """One live span: attributes set through it are made safe to export."""

    __slots__ = ("_span",)

    def __init__(self, otel_span: Any) -> None:
        self._span = otel_span

    def set(self, key: str, value: Any) -> None:
        """Set attribute ``key`` (None: left out); strings are redacted."""
        if value is not None:
            self._span.set_attribute(key, _safe(value))

    def set_all(self, attributes: Mapping[str, Any]) -> None:
        """Set each of ``attributes`` (None values left out)."""
        for key, value in attributes.items():
            self.set(key, value)

    def content(self, key: str, text: Any) -> None:
        """Set ``key`` to ``text`` only when content capture is on, through the patterns."""
        if _state.capture_content and text is not None:
            self._span.set_attribute(key, _content_value(text))

    def evaluation_content(self, key: str, text: Any) -> None:
        """Set ``key`` only when evaluation content capture is on (``traces.
        capture_evaluation_content``), through the patterns."""
        if _state.capture_evaluation_content and text is not None:
            self._span.set_attribute(key, _content_value(text))

    def fail(self, error: BaseException | str) -> None:
        """Mark the span failed: ``error.type`` and a redacted status message."""
        from opentelemetry.trace import Status, StatusCode

        kind = "_OTHER" if isinstance(error, str) else type(error).__name__
        self._span.set_attribute(ERROR_TYPE, kind)
        message = redact(str(error))[:CONTENT_LIMIT]
        self._span.set_status(Status(StatusCode.ERROR, message))


class _NoSpan(Span):
    """The span of tracing off: every call does nothing."""

    __slots__ = ()

    def __init__(self) -> None:
        super().__init__(None)

    def set(self, key: str, value: Any) -> None:
        pass

    def set_all(self, attributes: Mapping[str, Any]) -> None:
        pass

    def content(self, key: str, text: Any) -> None:
        pass

    def evaluation_content(self, key: str, text: Any) -> None:
        pass

    def fail(self, error: BaseException | str) -> None:
        pass


NO_SPAN = _NoSpan()


class _Off:
    """``with span(...)`` when tracing is off: the shared no-op span, no allocation."""

    __slots__ = ()

    def __enter__(self) -> Span:
        return NO_SPAN

    def __exit__(self, *exc: object) -> None:
        return None


_OFF = _Off()


class _Live:
    """``with span(...)`` when tracing is on: an OpenTelemetry span made current."""

    __slots__ = ("_cm", "_span")

    def __init__(self, cm: Any) -> None:
        self._cm = cm
        self._span: Span | None = None

    def __enter__(self) -> Span:
        self._span = Span(self._cm.__enter__())
        return self._span

    def __exit__(self, kind: Any, exc: Any, tb: Any) -> Any:
        if exc is not None and self._span is not None:
            self._span.fail(exc)
        return self._cm.__exit__(kind, exc, tb)


class _Reused:
    """``with span(..., reuse=True)`` inside a span of the same name: that span again."""

    __slots__ = ("_span",)

    def __init__(self, reused: Span) -> None:
        self._span = reused

    def __enter__(self) -> Span:
        return self._span

    def __exit__(self, kind: Any, exc: Any, tb: Any) -> None:
        if exc is not None:
            self._span.fail(exc)


class _State:
    """What asked for traces, and the tracer once made."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.stream: IO[str] | None = None
        self.settings: TraceSettings | None = None
        self.tracer: Any = None
        self.provider: Any = None
        self.capture_content = False
        self.capture_evaluation_content = False
        self.patterns: list[re.Pattern[str]] = []
        self.wanted = False


_state = _State()


def write_to(path: str | Path) -> None:
    """Write every span of this process to ``path``, one JSON object per line; a path that
    cannot be written, or the SDK not installed, is said at once (ConfigError, MissingExtra)."""
    _require(otlp=False)
    try:
        _state.stream = open(path, "w", encoding="utf-8")  # noqa: SIM115 (closed at shutdown)
    except OSError as exc:
        raise ConfigError(f"--trace {path}: cannot write it ({exc.strerror or exc})") from None
    _state.wanted = True


def configure(settings: TraceSettings) -> None:
    """Trace as an agent's ``observability:`` block says (the first block read wins)."""
    _require(otlp=settings.otlp is not None)
    if _state.settings is None and _state.tracer is None:
        _state.settings = settings
        _state.wanted = True


def _require(otlp: bool) -> None:
    """The ``traces`` extra is installed, else one line naming it (the OTLP exporter is
    looked for only when spans are sent over OTLP: it is most of the extra's import time)."""
    modules = ["opentelemetry.sdk.trace"]
    if otlp:
        modules.append("opentelemetry.exporter.otlp.proto.http")
    require("traces", *modules, feature="tracing (--trace or observability:)")


def on() -> bool:
    """Whether spans are being recorded (or will be, at the first span)."""
    return _state.wanted


def span(
    name: str,
    attributes: Mapping[str, Any] | None = None,
    *,
    kind: str = "internal",
    parent: Any = None,
    carrier: Mapping[str, str] | None = None,
    reuse: bool = False,
) -> _Off | _Live | _Reused:
    """A span named ``name`` around a ``with`` block, child of the current one.

    ``parent``: a context from :func:`current` (work handed to another thread); ``carrier``:
    a caller's headers (``traceparent``) to continue its trace. ``kind``: ``internal``,
    ``server`` or ``client``. ``reuse``: inside a span of the same name (an agent's tool
    call running the search it names), add to that span instead of nesting a twin.
    """
    if not _state.wanted:
        return _OFF
    tracer = _state.tracer or _start()
    if tracer is None:
        return _OFF
    from opentelemetry import trace

    context = parent
    if carrier is not None:  # a caller's trace (serve): the W3C propagator loads only here
        from opentelemetry import propagate

        context = propagate.extract(dict(carrier))
    attrs = {k: _safe(v) for k, v in (attributes or {}).items() if v is not None}
    if reuse:
        here = trace.get_current_span()
        if here.is_recording() and getattr(here, "name", None) == name:
            here.set_attributes(attrs)
            return _Reused(Span(here))
    return _Live(
        tracer.start_as_current_span(
            name,
            context=context,
            kind=getattr(trace.SpanKind, kind.upper()),
            attributes=attrs,
            record_exception=False,
            set_status_on_exception=False,
        )
    )


def annotate(attributes: Mapping[str, Any]) -> None:
    """Set ``attributes`` on the current span (work deep in a call that has no span of
    its own: the sides of a search); nothing when tracing is off."""
    if _state.tracer is None:
        return
    from opentelemetry import trace

    Span(trace.get_current_span()).set_all(attributes)


def current() -> Any:
    """The current trace context, for :func:`span`'s ``parent`` in another thread."""
    if _state.tracer is None:
        return None
    from opentelemetry import context

    return context.get_current()


def content_text(text: Any) -> str:
    """``text`` as a span may carry it: the configured patterns and every secret masked."""
    value = text if isinstance(text, str) else json.dumps(text, ensure_ascii=False, default=str)
    for pattern in _state.patterns:
        value = pattern.sub(MASK, value)
    value = redact(value)
    if len(value) > CONTENT_LIMIT:
        value = value[:CONTENT_LIMIT] + "...[cut]"
    return value


def _content_value(value: Any) -> str | list[str]:
    """A list of texts stays a list (each masked); anything else is one masked text."""
    if isinstance(value, list | tuple) and all(isinstance(v, str) for v in value):
        return [content_text(v) for v in value]
    return content_text(value)


def _safe(value: Any) -> Any:
    """An attribute value fit for export: strings redacted, sequences of one kind kept."""
    if isinstance(value, bool | int | float):
        return value
    if isinstance(value, str):
        return redact(value)
    if isinstance(value, list | tuple):
        items = [_safe(v) for v in value]
        if all(isinstance(v, str) for v in items):
            return items
        if (
            all(isinstance(v, bool | int | float) for v in items)
            and len({type(v) for v in items}) <= 1
        ):
            return items
        return [str(v) for v in items]
    return redact(str(value))


def _start() -> Any:
    """Make the provider and its exporters from what asked for traces; its tracer."""
    with _state.lock:
        if _state.tracer is not None:
            return _state.tracer
        from holodeck.tracing.sdk import build_provider

        settings = _state.settings or TraceSettings()
        _state.capture_content = settings.capture_content
        _state.capture_evaluation_content = settings.capture_evaluation_content
        _state.patterns = [re.compile(p) for p in settings.redaction_patterns]
        _state.provider = build_provider(settings, _state.stream, SCHEMA_URL)
        _state.tracer = _state.provider.get_tracer("holodeck", schema_url=SCHEMA_URL)
        atexit.register(shutdown)
        return _state.tracer


def shutdown() -> None:
    """Send what is buffered and close the exporters (the process is about to end)."""
    provider = _state.provider
    if provider is None:
        return
    try:
        provider.shutdown()
    except Exception as exc:  # an exporter that fails at the end must not fail the command
        print(f"WARNING: traces: {redact(str(exc))}", file=sys.stderr)


def reset() -> None:
    """Forget every setting and the tracer (tests: each starts with tracing off)."""
    global _state
    shutdown()
    if _state.provider is None and _state.stream is not None:
        _state.stream.close()  # asked for, never started
    _state = _State()
