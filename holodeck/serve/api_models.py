"""The REST API's shapes, as the original HoloDeck's serve has them: the chat request, ULID
ids, RFC 7807 problem bodies and the server-sent events of a streamed answer.

Field names and event names follow the original's contract (``specs/017-agent-local-server``),
so its clients work unchanged; ``tool_call_result`` is ours (a search's sources), and
clients that do not know it skip it as SSE clients skip any unknown event.
"""

from __future__ import annotations

import os
import re
import time
from typing import Any

from pydantic import BaseModel, Field, field_validator

from holodeck.agent.loop import ToolCallRecord

#: The longest message accepted, in characters (the original's limit).
MAX_MESSAGE_CHARS = 10_000
_CROCKFORD = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"
_ULID = re.compile(r"^[0-7][0-9A-HJKMNP-TV-Z]{25}$", re.IGNORECASE)


def new_ulid() -> str:
    """A ULID: 48 bits of milliseconds then 80 random bits, in Crockford's base 32."""
    value = (int(time.time() * 1000) << 80) | int.from_bytes(os.urandom(10), "big")
    return "".join(_CROCKFORD[(value >> shift) & 31] for shift in range(125, -1, -5))


def is_ulid(text: str) -> bool:
    """Whether ``text`` is a ULID (any case, as the original accepts)."""
    return bool(_ULID.match(text))


class ChatRequest(BaseModel):
    """The body of ``POST /agent/{name}/chat`` and ``.../chat/stream``."""

    message: str = Field(min_length=1, max_length=MAX_MESSAGE_CHARS)
    session_id: str | None = None
    #: The original's attachments; refused here with a clear 422 (not built).
    files: list[Any] | None = None

    @field_validator("message")
    @classmethod
    def _not_blank(cls, value: str) -> str:
        if not value.strip():
            raise ValueError("message cannot be blank")
        return value

    @field_validator("session_id")
    @classmethod
    def _a_ulid(cls, value: str | None) -> str | None:
        if value is not None and not is_ulid(value):
            raise ValueError("session_id must be a ULID (26 characters of Crockford base 32)")
        return value

    @field_validator("files")
    @classmethod
    def _no_files(cls, value: list[Any] | None) -> list[Any] | None:
        if value:
            raise ValueError("file attachments are not supported by this server; send text only")
        return value


def problem(status: int, title: str, detail: str) -> dict[str, Any]:
    """An RFC 7807 problem body (the original's ``ProblemDetail``)."""
    return {"type": "about:blank", "title": title, "status": status, "detail": detail}


def result_json(record: ToolCallRecord) -> list[dict[str, Any]]:
    """A tool call's ranked passages: where each is (source, location, section) and its text."""
    return [
        {
            "rank": r.rank,
            "score": round(r.score, 4),
            "source": r.source_path,
            "location": r.location,
            "section": r.section,
            "content": r.content,
        }
        for r in record.results
    ]


def tool_call_json(record: ToolCallRecord) -> dict[str, Any]:
    """A tool call in a whole answer: the original's ``ToolCallInfo`` plus its results."""
    return {
        "name": record.tool,
        "arguments": record.arguments,
        "status": "error" if record.error else "success",
        "kind": record.kind,
        "error": record.error,
        "results": result_json(record),
    }
