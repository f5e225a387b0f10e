"""The REST API of the original HoloDeck's ``serve --protocol rest``, on Starlette, and the
chat page at ``/``.

``POST /agent/{name}/chat`` answers with the whole reply as JSON; ``.../chat/stream``
streams it as server-sent events: ``stream_start``, then per tool call ``tool_call_start``,
``tool_call_args``, ``tool_call_result`` (its sources) and ``tool_call_end``, the text as
``message_delta`` pieces, and ``stream_end``; or ``error`` in place of the end, so a stream
never hangs. A client that goes away cancels its turn (the agent forgets it). ``/health`` is
the process, ``/ready`` the first ingest (503 with progress until it has finished);
``DELETE /sessions/{id}`` forgets a conversation.
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
from collections.abc import AsyncIterator
from contextlib import suppress
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pydantic
from sse_starlette import EventSourceResponse
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import FileResponse, JSONResponse, Response
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles

from holodeck.agent.loop import ToolCallRecord
from holodeck.errors import HoloDeckError, LLMError
from holodeck.redact import redact
from holodeck.serve.api_models import (
    ChatRequest,
    new_ulid,
    problem,
    result_json,
    tool_call_json,
)
from holodeck.serve.limits import BodyTooLarge, RateLimiter, read_body
from holodeck.serve.readiness import Readiness
from holodeck.serve.sessions import Session, SessionsFull, SessionStore

log = logging.getLogger("holodeck.serve")

STATIC = Path(__file__).parent / "static"
#: Seconds between keep-alive comments while a turn is quiet (the original's 15).
KEEPALIVE_SECONDS = 15.0
#: What a client is told to wait before asking again while the first ingest runs.
NOT_READY_RETRY_SECONDS = 2


@dataclass
class RestState:
    """What every request reads: the agent's name, its sessions, the first ingest, limits."""

    agent_name: str
    sessions: SessionStore
    readiness: Readiness
    limiter: RateLimiter
    retrieval_only: bool
    started: float = field(default_factory=time.monotonic)


def build_app(state: RestState) -> Starlette:
    """The ASGI app: the REST API, the health checks and the chat page."""
    prefix = "/agent/{name}"

    async def page(request: Request) -> Response:
        return FileResponse(STATIC / "index.html", headers={"Cache-Control": "no-cache"})

    async def health(request: Request) -> Response:
        return JSONResponse(
            {
                "status": "healthy",
                "agent_name": state.agent_name,
                "agent_ready": state.readiness.ready,
                "active_sessions": len(state.sessions),
                "uptime_seconds": round(time.monotonic() - state.started, 3),
                "retrieval_only": state.retrieval_only,
            }
        )

    async def ready(request: Request) -> Response:
        body = state.readiness.snapshot()
        if body["ready"]:
            return JSONResponse(body)
        return JSONResponse(
            body, status_code=503, headers={"Retry-After": str(NOT_READY_RETRY_SECONDS)}
        )

    async def chat(request: Request) -> Response:
        started = time.perf_counter()
        got = await _admit(request, state)
        if isinstance(got, Response):
            return got
        session, message = got
        message_id = new_ulid()
        async with session.lock:
            turn = asyncio.create_task(session.agent.run_turn(message))
            gone = asyncio.create_task(_disconnected(request))
            await asyncio.wait((turn, gone), return_when=asyncio.FIRST_COMPLETED)
            gone.cancel()
            if not turn.done():  # the client left: its turn is cancelled and forgotten
                turn.cancel()
                with suppress(BaseException):
                    await turn
                return Response(status_code=499)
            try:
                result = turn.result()
            except HoloDeckError as exc:
                return _problem(502, "Agent Error", redact(str(exc)))
            session.turns += 1
        return JSONResponse(
            {
                "message_id": message_id,
                "content": result.answer,
                "session_id": session.id,
                "tool_calls": [tool_call_json(r) for r in result.tool_calls],
                "tokens_used": None,
                "execution_time_ms": int((time.perf_counter() - started) * 1000),
                "notice": result.notice,
            }
        )

    async def chat_stream(request: Request) -> Response:
        started = time.perf_counter()
        got = await _admit(request, state)
        if isinstance(got, Response):
            return got
        session, message = got
        events = _turn_events(session, message, started, state.retrieval_only)
        return EventSourceResponse(
            events,
            ping=KEEPALIVE_SECONDS,
            sep="\n",
            headers={"Cache-Control": "no-cache", "X-Accel-Buffering": "no"},
        )

    async def delete_session(request: Request) -> Response:
        state.sessions.delete(request.path_params["session_id"])
        return Response(status_code=204)

    return Starlette(
        routes=[
            Route("/", page, methods=["GET"]),
            Mount("/static", StaticFiles(directory=STATIC), name="static"),
            Route("/health", health, methods=["GET"]),
            Route("/ready", ready, methods=["GET"]),
            Route(f"{prefix}/chat", chat, methods=["POST"]),
            Route(f"{prefix}/chat/stream", chat_stream, methods=["POST"]),
            Route("/sessions/{session_id}", delete_session, methods=["DELETE"]),
        ],
        exception_handlers={404: _not_found, 405: _not_allowed},
    )


async def _admit(request: Request, state: RestState) -> tuple[Session, str] | Response:
    """The checks before a turn, in order: the agent's name, the rate, the body, the first
    ingest, the session (free, and room for it); a problem response for the first that
    fails."""
    name = request.path_params["name"]
    if name != state.agent_name:
        return _problem(
            404, "Not Found", f"no agent {name!r} here; this server serves {state.agent_name!r}"
        )
    client = request.client.host if request.client else "?"
    wait = state.limiter.retry_after(client)
    if wait:
        return _problem(
            429,
            "Too Many Requests",
            f"more than {state.limiter.per_minute} chat requests a minute from {client}; "
            f"try again in {wait} s",
            {"Retry-After": str(wait)},
        )
    try:
        raw = await read_body(request)
        chat = ChatRequest.model_validate(json.loads(raw or b"null"))
    except BodyTooLarge as exc:
        return _problem(413, "Payload Too Large", str(exc))
    except ValueError as exc:  # not JSON, or not a chat request (pydantic's is a ValueError)
        return _invalid(exc)
    if not state.readiness.ready:
        snapshot = state.readiness.snapshot()
        return _problem(
            503,
            "Not Ready",
            f"{snapshot['detail']}; try again shortly (GET /ready shows the progress)",
            {"Retry-After": str(NOT_READY_RETRY_SECONDS)},
        )
    try:
        session = state.sessions.get_or_create(chat.session_id)
    except SessionsFull as exc:
        return _problem(429, "Too Many Sessions", str(exc), {"Retry-After": "5"})
    if session.busy:
        return _problem(
            409,
            "Session Busy",
            f"session {session.id} is still answering its last message; wait for it to end",
        )
    return session, chat.message


async def _disconnected(request: Request) -> None:
    """Return once the client has gone (its body was read already)."""
    while (await request.receive())["type"] != "http.disconnect":
        pass


async def _turn_events(
    session: Session, message: str, started: float, retrieval_only: bool
) -> AsyncIterator[dict[str, str]]:
    """One turn as server-sent events, the agent running beside the stream.

    The agent's callbacks feed a queue the stream reads; when the client leaves, the
    stream is cancelled and so is the turn (``finally``), which the agent then forgets.
    """
    message_id = new_ulid()
    queue: asyncio.Queue[tuple[str, Any]] = asyncio.Queue()
    async with session.lock:
        yield _event("stream_start", {"session_id": session.id, "message_id": message_id})
        turn = asyncio.create_task(
            session.agent.run_turn(
                message,
                on_text=None if retrieval_only else lambda text: queue.put_nowait(("text", text)),
                on_tool=lambda record: queue.put_nowait(("tool", record)),
            )
        )
        turn.add_done_callback(lambda _: queue.put_nowait(("done", None)))
        try:
            while (item := await queue.get())[0] != "done":
                kind, value = item
                if kind == "text":
                    yield _event("message_delta", {"delta": value, "message_id": message_id})
                else:
                    for event in _tool_events(value, message_id):
                        yield event
            result = turn.result()
        except asyncio.CancelledError:
            raise
        except LLMError as exc:
            yield _event("error", problem(502, "Agent Error", redact(str(exc))))
            return
        except Exception as exc:  # never a hung stream: whatever broke ends it as an event
            log.error("A turn failed: %s: %s", type(exc).__name__, exc)
            log.debug("Turn failure", exc_info=True)
            detail = str(exc) if isinstance(exc, HoloDeckError) else f"{type(exc).__name__}: {exc}"
            yield _event("error", problem(500, "Agent Error", redact(detail)))
            return
        finally:
            if not turn.done():
                turn.cancel()
                with suppress(BaseException):
                    await turn
                log.debug("Session %s: the client left; its turn was cancelled", session.id)
        session.turns += 1
        if retrieval_only and result.answer:
            yield _event("message_delta", {"delta": result.answer, "message_id": message_id})
        end: dict[str, Any] = {
            "message_id": message_id,
            "tokens_used": None,
            "execution_time_ms": int((time.perf_counter() - started) * 1000),
        }
        if result.notice:
            end["notice"] = result.notice
        yield _event("stream_end", end)


def _tool_events(record: ToolCallRecord, message_id: str) -> list[dict[str, str]]:
    """The four events of one finished tool call: start, arguments, results, end."""
    call_id = record.id or new_ulid()
    return [
        _event(
            "tool_call_start",
            {"tool_call_id": call_id, "name": record.tool, "message_id": message_id},
        ),
        _event(
            "tool_call_args", {"tool_call_id": call_id, "args_delta": json.dumps(record.arguments)}
        ),
        _event(
            "tool_call_result",
            {
                "tool_call_id": call_id,
                "name": record.tool,
                "kind": record.kind,
                "query": record.query,
                "results": result_json(record),
                "error": record.error,
            },
        ),
        _event(
            "tool_call_end",
            {"tool_call_id": call_id, "status": "error" if record.error else "success"},
        ),
    ]


def _event(name: str, data: dict[str, Any]) -> dict[str, str]:
    return {"event": name, "data": json.dumps(data, separators=(",", ":"))}


def _problem(
    status: int, title: str, detail: str, headers: dict[str, str] | None = None
) -> JSONResponse:
    return JSONResponse(
        problem(status, title, detail),
        status_code=status,
        headers=headers,
        media_type="application/problem+json",
    )


def _invalid(exc: ValueError) -> JSONResponse:
    """422 as FastAPI words it (``detail``: a list of errors), so the original's clients
    read it, plus a one-line ``title``."""
    errors: list[dict[str, Any]]
    if isinstance(exc, pydantic.ValidationError):
        errors = [
            {"loc": ["body", *e["loc"]], "msg": e["msg"], "type": e["type"]}
            for e in exc.errors(include_url=False, include_context=False, include_input=False)
        ]
        line = "; ".join(
            f"{'.'.join(map(str, e['loc'][1:])) or 'body'}: {e['msg']}" for e in errors
        )
    else:
        errors = [{"loc": ["body"], "msg": f"not JSON: {exc}", "type": "json_invalid"}]
        line = f"not JSON: {exc}"
    body = {
        "type": "about:blank",
        "title": f"Invalid request: {line}",
        "status": 422,
        "detail": errors,
    }
    return JSONResponse(body, status_code=422)


async def _not_found(request: Request, exc: Exception) -> Response:
    return _problem(404, "Not Found", f"no route {request.method} {request.url.path}")


async def _not_allowed(request: Request, exc: Exception) -> Response:
    return _problem(
        405, "Method Not Allowed", f"{request.method} is not allowed on {request.url.path}"
    )
