"""What every HTTP protocol of the agent shares (the REST API, AG-UI): the server's state,
the checks before a turn, and one turn run beside the stream that shows it.

``admit`` refuses, in order, a client over its rate, a body too large or not understood,
a message before the first ingest has finished, a full session store and a session still
answering. ``turn_items`` runs the agent and hands over its text and tool calls as they
come; when the stream is cancelled (the client left), so is the turn, which the agent
then forgets.
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
from collections.abc import AsyncIterator, Callable
from contextlib import suppress
from dataclasses import dataclass, field
from typing import Any

import pydantic
from starlette.requests import Request
from starlette.responses import JSONResponse

from holodeck.agent.loop import ToolCallRecord, TurnResult
from holodeck.serve.api_models import problem
from holodeck.serve.limits import BodyTooLarge, RateLimiter, read_body
from holodeck.serve.readiness import Readiness
from holodeck.serve.sessions import Session, SessionsFull, SessionStore

log = logging.getLogger("holodeck.serve")

#: What a client is told to wait before asking again while the first ingest runs.
NOT_READY_RETRY_SECONDS = 2

#: Reads a request body: (the session id asked for or None, the user's message); raises
#: ``ValueError`` (pydantic's ``ValidationError`` included) for a body it cannot take.
BodyParser = Callable[[bytes], tuple[str | None, str]]


@dataclass
class ServerState:
    """What every request reads: the agent's name, its sessions, the first ingest, limits."""

    agent_name: str
    sessions: SessionStore
    readiness: Readiness
    limiter: RateLimiter
    retrieval_only: bool
    started: float = field(default_factory=time.monotonic)


async def admit(
    request: Request, state: ServerState, parse: BodyParser
) -> tuple[Session, str] | JSONResponse:
    """The session and message of a turn, or the problem response of the first check that
    fails."""
    client = request.client.host if request.client else "?"
    wait = state.limiter.retry_after(client)
    if wait:
        return problem_response(
            429,
            "Too Many Requests",
            f"more than {state.limiter.per_minute} chat requests a minute from {client}; "
            f"try again in {wait} s",
            {"Retry-After": str(wait)},
        )
    try:
        session_id, message = parse(await read_body(request))
    except BodyTooLarge as exc:
        return problem_response(413, "Payload Too Large", str(exc))
    except ValueError as exc:  # not JSON, or not the protocol's body
        return invalid(exc)
    if not state.readiness.ready:
        snapshot = state.readiness.snapshot()
        return problem_response(
            503,
            "Not Ready",
            f"{snapshot['detail']}; try again shortly (GET /ready shows the progress)",
            {"Retry-After": str(NOT_READY_RETRY_SECONDS)},
        )
    try:
        session = state.sessions.get_or_create(session_id)
    except SessionsFull as exc:
        return problem_response(429, "Too Many Sessions", str(exc), {"Retry-After": "5"})
    if session.busy:
        return problem_response(
            409,
            "Session Busy",
            f"session {session.id} is still answering its last message; wait for it to end",
        )
    return session, message


async def turn_items(
    session: Session, message: str, retrieval_only: bool
) -> AsyncIterator[tuple[str, Any]]:
    """``("text", piece)``, ``("tool", ToolCallRecord)`` as the turn goes, then ``("done",
    TurnResult)``; what the turn raised is raised here. The session's lock is held
    throughout, so its turns run one at a time."""
    queue: asyncio.Queue[tuple[str, Any]] = asyncio.Queue()

    def on_text(text: str) -> None:
        queue.put_nowait(("text", text))

    def on_tool(record: ToolCallRecord) -> None:
        queue.put_nowait(("tool", record))

    async with session.lock:
        turn = asyncio.create_task(
            session.agent.run_turn(
                message, on_text=None if retrieval_only else on_text, on_tool=on_tool
            )
        )
        turn.add_done_callback(lambda _: queue.put_nowait(("end", None)))
        try:
            while (item := await queue.get())[0] != "end":
                yield item
            result: TurnResult = turn.result()
        finally:
            if not turn.done():
                turn.cancel()
                with suppress(BaseException):
                    await turn
                log.debug("Session %s: the client left; its turn was cancelled", session.id)
        yield "done", result


async def run_whole(request: Request, session: Session, message: str) -> TurnResult | None:
    """One turn answered whole; None when the client left first (its turn then cancelled)."""
    async with session.lock:
        turn = asyncio.create_task(session.agent.run_turn(message))
        gone = asyncio.create_task(_disconnected(request))
        await asyncio.wait((turn, gone), return_when=asyncio.FIRST_COMPLETED)
        gone.cancel()
        if not turn.done():
            turn.cancel()
            with suppress(BaseException):
                await turn
            return None
        result = turn.result()
        return result


async def _disconnected(request: Request) -> None:
    """Return once the client has gone (its body was read already)."""
    while (await request.receive())["type"] != "http.disconnect":
        pass


def problem_response(
    status: int, title: str, detail: str, headers: dict[str, str] | None = None
) -> JSONResponse:
    """An RFC 7807 problem as a response."""
    return JSONResponse(
        problem(status, title, detail),
        status_code=status,
        headers=headers,
        media_type="application/problem+json",
    )


def invalid(exc: ValueError) -> JSONResponse:
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


def parse_json(raw: bytes) -> Any:
    """The body as JSON (``ValueError`` if it is not)."""
    return json.loads(raw or b"null")
