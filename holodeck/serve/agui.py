"""``POST /awp``: the agent over the AG-UI protocol (CopilotKit-style frontends), at the
original HoloDeck's path, with the protocol's own package (``ag-ui-protocol``).

A run's input is AG-UI's ``RunAgentInput``: its ``thread_id`` is the session (the server
keeps the history, as for REST) and its last user message is the question. The events:
``RUN_STARTED``; per tool call ``TOOL_CALL_START``, ``TOOL_CALL_ARGS``, ``TOOL_CALL_END`` and
``TOOL_CALL_RESULT`` (the text the model read, and the sources as JSON in the event's
``metadata``); the answer as ``TEXT_MESSAGE_START`` / ``_CONTENT`` / ``_END``; then
``RUN_FINISHED``, or ``RUN_ERROR`` when the model fails.
"""

from __future__ import annotations

import json
import logging
from collections.abc import AsyncIterator
from typing import Any

from ag_ui.core import (
    BaseEvent,
    RunAgentInput,
    RunErrorEvent,
    RunFinishedEvent,
    RunStartedEvent,
    TextMessageContentEvent,
    TextMessageEndEvent,
    TextMessageStartEvent,
    ToolCallArgsEvent,
    ToolCallEndEvent,
    ToolCallResultEvent,
    ToolCallStartEvent,
)
from ag_ui.encoder import EventEncoder
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from holodeck.agent.loop import ToolCallRecord
from holodeck.errors import HoloDeckError, LLMError
from holodeck.redact import redact
from holodeck.serve.api_models import new_ulid, result_json
from holodeck.serve.rest_app import sse_response
from holodeck.serve.sessions import Session
from holodeck.serve.turns import ServerState, admit, parse_json, turn_items

log = logging.getLogger("holodeck.serve")

#: The original HoloDeck's AG-UI path.
AGUI_PATH = "/awp"


def agui_route(state: ServerState) -> Route:
    """The AG-UI endpoint over ``state``'s agent and sessions."""

    async def run(request: Request) -> Response:
        runs: dict[str, str] = {}

        def parse(raw: bytes) -> tuple[str | None, str]:
            given = RunAgentInput.model_validate(parse_json(raw))
            runs["thread"], runs["run"] = given.thread_id, given.run_id
            return given.thread_id, last_user_text(given)

        got = await admit(request, state, parse)
        if isinstance(got, Response):
            return got
        session, message = got
        events = _run_events(session, message, runs["thread"], runs["run"], state.retrieval_only)
        return sse_response(_encoded(events, EventEncoder()))  # SSE whatever Accept asks

    return Route(AGUI_PATH, run, methods=["POST"])


def last_user_text(given: RunAgentInput) -> str:
    """The text of the last user message (its text parts, joined); ``ValueError`` if none."""
    for message in reversed(given.messages):
        if getattr(message, "role", "") != "user":
            continue
        content = getattr(message, "content", "")
        if isinstance(content, list):
            content = " ".join(
                str(getattr(p, "text", "")) for p in content if getattr(p, "text", "")
            )
        if isinstance(content, str) and content.strip():
            return content
        raise ValueError("the last user message holds no text")
    raise ValueError("messages holds no user message to answer")


async def _encoded(
    events: AsyncIterator[BaseEvent], encoder: EventEncoder
) -> AsyncIterator[dict[str, str]]:
    """Each event as the SSE ``data:`` line AG-UI clients read (the encoder's JSON)."""
    async for event in events:
        encoded = encoder.encode(event)
        yield {"data": encoded.removeprefix("data: ").strip()}


async def _run_events(
    session: Session, message: str, thread_id: str, run_id: str, retrieval_only: bool
) -> AsyncIterator[BaseEvent]:
    """One run as AG-UI events; a failure ends it with ``RUN_ERROR``, never a hung stream."""
    yield RunStartedEvent(thread_id=thread_id, run_id=run_id)
    text_id: str | None = None
    try:
        async for kind, value in turn_items(session, message, retrieval_only):
            if kind == "text":
                if text_id is None:
                    text_id = new_ulid()
                    yield TextMessageStartEvent(message_id=text_id, role="assistant")
                yield TextMessageContentEvent(message_id=text_id, delta=value)
            elif kind == "tool":
                if text_id is not None:  # text before a tool call: that message is done
                    yield TextMessageEndEvent(message_id=text_id)
                    text_id = None
                for event in _tool_events(value):
                    yield event
            elif retrieval_only and value.answer:
                text_id = new_ulid()
                yield TextMessageStartEvent(message_id=text_id, role="assistant")
                yield TextMessageContentEvent(message_id=text_id, delta=value.answer)
    except Exception as exc:
        if not isinstance(exc, LLMError):
            log.error("A run failed: %s: %s", type(exc).__name__, exc)
            log.debug("Run failure", exc_info=True)
        detail = str(exc) if isinstance(exc, HoloDeckError) else f"{type(exc).__name__}: {exc}"
        code = "agent_error" if isinstance(exc, LLMError) else "internal_error"
        yield RunErrorEvent(message=redact(detail), code=code)
        return
    if text_id is not None:
        yield TextMessageEndEvent(message_id=text_id)
    yield RunFinishedEvent(thread_id=thread_id, run_id=run_id)


def _tool_events(record: ToolCallRecord) -> list[BaseEvent]:
    call_id = record.id or new_ulid()
    sources: dict[str, Any] = {"results": result_json(record), "error": record.error}
    return [
        ToolCallStartEvent(tool_call_id=call_id, tool_call_name=record.tool),
        ToolCallArgsEvent(tool_call_id=call_id, delta=json.dumps(record.arguments)),
        ToolCallEndEvent(tool_call_id=call_id),
        ToolCallResultEvent(
            message_id=new_ulid(),
            tool_call_id=call_id,
            content=record.output,
            role="tool",
            metadata={"holodeck": sources},
        ),
    ]
