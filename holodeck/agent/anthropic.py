"""Provider ``anthropic``: Claude through Anthropic's own Messages API and its official SDK.

Chosen over Anthropic's OpenAI-compatible endpoint (which the openai client could reach with
no new code) because that endpoint is, in Anthropic's words, for testing and comparing
models and not a long-term or production solution; and because an error that arrives in
the middle of a stream (an ``overloaded_error`` after the first tokens) reaches the openai
client as a bare "An error occurred during streaming", while this SDK raises it with its
type and message, and retries 429, 529 and 5xx as Anthropic documents.

The agent loop speaks OpenAI's chat shape (messages with ``tool_calls`` and ``tool`` roles);
``AnthropicChat.complete`` turns one such request into a Messages request (the system prompt
apart, tool calls as ``tool_use`` blocks, results as ``tool_result`` blocks of a user turn)
and the answer, streamed or not, back into text and tool calls.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from holodeck.errors import LLMError
from holodeck.extras import require
from holodeck.providers import (
    CHAT_RETRIES,
    DEFAULT_ANTHROPIC_ENDPOINT,
    Connection,
    describe_error,
)

if TYPE_CHECKING:
    import anthropic  # noqa: F401  (imported where used: it takes seconds)

#: The Messages API needs a max_tokens; this one when agent.yaml sets none.
DEFAULT_MAX_TOKENS = 4096
#: Seconds to connect, and to wait between streamed events (a slow model takes its time).
CONNECT_TIMEOUT, READ_TIMEOUT = 10.0, 120.0

Calls = list[tuple[str, str, str]]  # (id, name, JSON arguments)


def anthropic_base_url(endpoint: str | None) -> str:
    """The SDK's base URL (it adds ``/v1/messages``): a trailing ``/v1`` is dropped."""
    base = (endpoint or DEFAULT_ANTHROPIC_ENDPOINT).rstrip("/")
    return base.removesuffix("/v1")


class AnthropicChat:
    """The chat client of provider anthropic, with the openai client's shape of a turn."""

    def __init__(self, conn: Connection, max_retries: int = CHAT_RETRIES) -> None:
        require("anthropic", "anthropic", feature="provider anthropic")
        import anthropic  # seconds to import: only for agents that use it

        self.conn = conn
        self.api_key = conn.api_key
        self.base_url = conn.base_url
        self.client = anthropic.AsyncAnthropic(
            api_key=conn.api_key,
            base_url=anthropic_base_url(conn.base_url),
            max_retries=max_retries,
            timeout=anthropic.Timeout(READ_TIMEOUT, connect=CONNECT_TIMEOUT),
        )

    async def close(self) -> None:
        """Close the HTTP client."""
        await self.client.close()

    async def complete(
        self, request: dict[str, Any], on_text: Callable[[str], None] | None
    ) -> tuple[str, Calls, str]:
        """One OpenAI-shaped request: the answer's text, tool calls and stop reason.

        Streamed (text to ``on_text`` as it comes) when ``on_text`` is given. Every API
        error becomes one ``LLMError`` line, the key never in it.
        """
        import anthropic

        params = messages_request(request)
        try:
            if on_text is None:
                message = await self.client.messages.create(**params)
                return read_message(message)
            return await self._stream(params, on_text)
        except anthropic.APIError as exc:
            described = describe_error(exc, self.conn, request["model"], sdk=anthropic)
            raise LLMError(described) from exc

    async def _stream(
        self, params: dict[str, Any], on_text: Callable[[str], None]
    ) -> tuple[str, Calls, str]:
        stream = await self.client.messages.create(**params, stream=True)
        parts: list[str] = []
        blocks: dict[int, list[str]] = {}  # index -> [id, name, JSON so far]
        stop = ""
        events = 0
        async with stream:
            async for event in stream:
                events += 1
                if event.type == "content_block_start" and event.content_block.type == "tool_use":
                    block = event.content_block
                    blocks[event.index] = [block.id, block.name, ""]
                elif event.type == "content_block_delta":
                    delta = event.delta
                    if delta.type == "text_delta" and delta.text:
                        parts.append(delta.text)
                        on_text(delta.text)
                    elif delta.type == "input_json_delta":
                        blocks.setdefault(event.index, ["", "", ""])[2] += delta.partial_json
                elif event.type == "message_delta":
                    stop = event.delta.stop_reason or stop
        if events == 0:
            raise LLMError(
                f"{self.conn.label} answered without a single Messages API event; check "
                "model.endpoint (Anthropic's API, e.g. https://api.anthropic.com)"
            )
        calls = [(b[0], b[1], b[2] or "{}") for _, b in sorted(blocks.items())]
        return "".join(parts), calls, stop


def messages_request(request: dict[str, Any]) -> dict[str, Any]:
    """An OpenAI chat request (as the agent loop builds it) as Messages API parameters."""
    system = [m["content"] for m in request["messages"] if m["role"] == "system"]
    params: dict[str, Any] = {
        "model": request["model"],
        "max_tokens": request.get("max_tokens") or DEFAULT_MAX_TOKENS,
        "messages": _messages(request["messages"]),
    }
    if system:
        params["system"] = "\n\n".join(system)
    if request.get("tools"):
        params["tools"] = [
            {
                "name": t["function"]["name"],
                "description": t["function"].get("description") or "",
                "input_schema": t["function"]["parameters"],
            }
            for t in request["tools"]
        ]
        choice = request.get("tool_choice")
        if choice == "none":
            params["tool_choice"] = {"type": "none"}
        elif isinstance(choice, dict):  # one function, by name: structured output's tool
            params["tool_choice"] = {"type": "tool", "name": choice["function"]["name"]}
    sampling = {k: request[k] for k in ("temperature", "top_p") if k in request}
    if sampling:  # sent as written; this SDK's signature no longer lists them
        params["extra_body"] = sampling
    return params


def _messages(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """User and assistant turns, tool calls as ``tool_use``, results as ``tool_result``."""
    out: list[dict[str, Any]] = []
    for message in messages:
        role = message["role"]
        if role == "system":
            continue
        if role == "user":
            out.append({"role": "user", "content": message["content"]})
        elif role == "assistant":
            content: list[dict[str, Any]] = []
            if message.get("content"):
                content.append({"type": "text", "text": message["content"]})
            for call in message.get("tool_calls") or []:
                content.append(
                    {
                        "type": "tool_use",
                        "id": call["id"],
                        "name": call["function"]["name"],
                        "input": _arguments(call["function"]["arguments"]),
                    }
                )
            out.append({"role": "assistant", "content": content})
        elif role == "tool":
            result = {
                "type": "tool_result",
                "tool_use_id": message["tool_call_id"],
                "content": message["content"],
            }
            last = out[-1] if out else None
            if last and last["role"] == "user" and isinstance(last["content"], list):
                last["content"].append(result)  # one user turn carries every result
            else:
                out.append({"role": "user", "content": [result]})
    return out


def _arguments(raw: str) -> dict[str, Any]:
    """A tool call's arguments as the object ``tool_use`` needs ({} when not an object)."""
    try:
        parsed = json.loads(raw or "{}")
    except json.JSONDecodeError:
        return {}
    return parsed if isinstance(parsed, dict) else {}


def read_message(message: Any) -> tuple[str, Calls, str]:
    """Text, tool calls and stop reason of a whole (not streamed) answer."""
    text: list[str] = []
    calls: Calls = []
    for block in getattr(message, "content", None) or []:
        if block.type == "text":
            text.append(block.text)
        elif block.type == "tool_use":
            calls.append((block.id, block.name, json.dumps(block.input)))
    return "".join(text), calls, getattr(message, "stop_reason", None) or ""
