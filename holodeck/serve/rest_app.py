"""The REST API of the original HoloDeck's ``serve --protocol rest``, on Starlette, and the
chat page at ``/``.

``POST /agent/{name}/chat`` answers with the whole reply as JSON; ``.../chat/stream``
streams it as server-sent events: ``stream_start``, then per tool call ``tool_call_start``,
``tool_call_args``, ``tool_call_result`` (its sources) and ``tool_call_end``, the text as
``message_delta`` pieces, and ``stream_end``; or ``error`` in place of the end, so a stream
never hangs. A client that goes away cancels its turn (the agent forgets it). ``/health`` is
the process, ``/ready`` the first ingest (503 with progress until it has finished);
``DELETE /sessions/{id}`` forgets a conversation. With ``agui``, ``POST /awp`` speaks AG-UI
(``holodeck.serve.agui``).
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

from sse_starlette import EventSourceResponse
from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import FileResponse, JSONResponse, Response
from starlette.routing import BaseRoute, Mount, Route
from starlette.staticfiles import StaticFiles

from holodeck.agent.loop import ToolCallRecord
from holodeck.errors import HoloDeckError, LLMError
from holodeck.redact import redact
from holodeck.serve.api_models import ChatRequest, new_ulid, problem, result_json, tool_call_json
from holodeck.serve.sessions import Session
from holodeck.serve.spans import TracedRequests
from holodeck.serve.turns import (
    NOT_READY_RETRY_SECONDS,
    ServerState,
    admit,
    parse_json,
    problem_response,
    run_whole,
    turn_items,
)

log = logging.getLogger("holodeck.serve")

STATIC = Path(__file__).parent / "static"
#: Seconds between keep-alive comments while a turn is quiet (the original's 15).
KEEPALIVE_SECONDS = 15.0


def build_app(state: ServerState, extra: list[BaseRoute] | None = None) -> Starlette:
    """The ASGI app: the REST API, the health checks, the chat page and ``extra`` routes."""
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
        try:
            result = await run_whole(request, session, message)
        except HoloDeckError as exc:
            return problem_response(502, "Agent Error", redact(str(exc)))
        if result is None:  # the client left: nobody to answer
            return Response(status_code=499)
        return JSONResponse(
            {
                "message_id": new_ulid(),
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
        return sse_response(_turn_events(session, message, started, state.retrieval_only))

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
            *(extra or []),
        ],
        exception_handlers={404: _not_found, 405: _not_allowed},
        middleware=[Middleware(TracedRequests)],
    )


def sse_response(events: AsyncIterator[dict[str, str]], media_type: str | None = None) -> Response:
    """A stream of server-sent events with keep-alive comments; it notices a client that
    leaves even while nothing is sent, and cancels ``events`` then."""
    return EventSourceResponse(
        events,
        ping=KEEPALIVE_SECONDS,
        sep="\n",
        media_type=media_type or "text/event-stream",
        headers={"Cache-Control": "no-cache", "X-Accel-Buffering": "no"},
    )


async def _admit(request: Request, state: ServerState) -> tuple[Session, str] | Response:
    """The agent's name, then the checks every turn passes (``turns.admit``)."""
    name = request.path_params["name"]
    if name != state.agent_name:
        return problem_response(
            404, "Not Found", f"no agent {name!r} here; this server serves {state.agent_name!r}"
        )
    return await admit(request, state, _parse_chat)


def _parse_chat(raw: bytes) -> tuple[str | None, str]:
    chat = ChatRequest.model_validate(parse_json(raw))
    return chat.session_id, chat.message


async def _turn_events(
    session: Session, message: str, started: float, retrieval_only: bool
) -> AsyncIterator[dict[str, str]]:
    """One turn as the original's server-sent events; an error ends it as an event."""
    message_id = new_ulid()
    yield _event("stream_start", {"session_id": session.id, "message_id": message_id})
    try:
        async for kind, value in turn_items(session, message, retrieval_only):
            if kind == "text":
                yield _event("message_delta", {"delta": value, "message_id": message_id})
            elif kind == "tool":
                for event in _tool_events(value, message_id):
                    yield event
            else:
                result = value
    except LLMError as exc:
        yield _event("error", problem(502, "Agent Error", redact(str(exc))))
        return
    except Exception as exc:  # never a hung stream: whatever broke ends it as an event
        log.error("A turn failed: %s: %s", type(exc).__name__, exc)
        log.debug("Turn failure", exc_info=True)
        detail = str(exc) if isinstance(exc, HoloDeckError) else f"{type(exc).__name__}: {exc}"
        yield _event("error", problem(500, "Agent Error", redact(detail)))
        return
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
    status = "error" if record.error else "success"
    return [
        _event(
            "tool_call_start",
            {"tool_call_id": call_id, "name": record.tool, "message_id": message_id},
        ),
        _event(
            "tool_call_args",
            {"tool_call_id": call_id, "args_delta": json.dumps(record.arguments)},
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
        _event("tool_call_end", {"tool_call_id": call_id, "status": status}),
    ]


def _event(name: str, data: dict[str, Any]) -> dict[str, str]:
    return {"event": name, "data": json.dumps(data, separators=(",", ":"))}


async def _not_found(request: Request, exc: Exception) -> Response:
    return problem_response(404, "Not Found", f"no route {request.method} {request.url.path}")


async def _not_allowed(request: Request, exc: Exception) -> Response:
    return problem_response(
        405, "Method Not Allowed", f"{request.method} is not allowed on {request.url.path}"
    )
