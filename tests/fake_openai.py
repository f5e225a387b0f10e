"""A scripted OpenAI-compatible HTTP server, so tests run the real ``openai`` client.

The LLM is the one part of holodeck that cannot run in tests; everything else (the openai
client, its retries and streaming, holodeck's agent loop and embedder) runs for real
against this server on 127.0.0.1.

Usage::

    with FakeOpenAI() as server:              # or the ``fake_openai`` fixture
        server.chat.push(tool_calls(("knowledge_base", {"query": "retries"})))
        server.chat.push(text("Jobs retry three times."))
        server.embeddings.push(error(429, headers={"Retry-After": "0.1"}))
        ... point a client at server.url ("http://127.0.0.1:PORT/v1") ...
        server.chat_requests()                # request bodies (dicts), oldest first
        server.requests                       # every Recorded(path, headers, body, status)

Endpoints (any prefix, so Azure's ``/openai/deployments/<d>/...`` paths work too):

- ``POST .../chat/completions``: answers with the next scripted reply, as one JSON body or,
  when the request says ``"stream": true``, as server-sent events (text in ``chunk_size``
  pieces, tool calls as the API streams them: id and name first, then argument pieces).
  With nothing scripted it asks ``responder`` (a function of the request body returning a
  reply, such as ``fake_judge.judge``: an evaluation judge), and without one answers 400
  "fake_openai: no scripted chat reply", which the client does not retry, so a test that
  under-scripts fails loudly.
- ``POST .../messages``: Anthropic's Messages API (provider anthropic), from the same
  script (and ``responder``) as chat completions: the same replies in Anthropic's shapes
  (content blocks, its server-sent events, ``{"type": "error", "error": {...}}`` bodies;
  ``finish="length"`` is stop reason ``max_tokens``; log-probabilities are left out).
- ``POST .../embeddings``: answers with the next scripted reply if any, else with
  deterministic pseudo-random unit vectors (seeded by each input's text) of ``dimensions``
  length (default 1536). ``encoding_format`` float and base64 are both honoured.

Replies (module functions): ``text(content[, logprobs=...])``,
``tool_calls((name, args[, id]), ...)``,
``quoting_tools(template)`` (an answer made from the tool results the request carries, as
a model reading them would: ``{result}`` is the last one, ``{results}`` all of them),
``error(status, message, headers=...)`` (OpenAI's error body), ``vectors(dimensions)``
(embeddings of another length for one request), ``raw(body, content_type)`` (any body as
is, streamed or not: an HTML page, JSON that is not a completion, a truncated body).
``delay=`` on ``text`` / ``tool_calls`` sleeps that long between streamed chunks (to
interrupt a streaming answer), or before a whole answer (a model that answers slowly).
``stream_error(kind, message)`` starts a streamed answer and fails it in mid-stream (the
status is already 200), as an overloaded server does.
"""

from __future__ import annotations

import base64
import hashlib
import json
import sys
import threading
import time
from collections import deque
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import numpy as np
import pytest


@dataclass
class Reply:
    """One scripted answer."""

    kind: str  # "text" | "tool_calls" | "error" | "vectors" | "raw"
    content: str = ""
    calls: list[tuple[str, str, str]] = field(default_factory=list)  # (id, name, arguments)
    status: int = 200
    headers: dict[str, str] = field(default_factory=dict)
    dimensions: int = 0
    delay: float = 0.0
    #: ``choices[0].logprobs.content`` of a whole answer: {token, logprob, top_logprobs}.
    logprobs: list[dict[str, Any]] | None = None
    finish: str = ""  # finish_reason instead of the usual one ("length": cut off)
    template: str | None = None  # quoting_tools: filled from the request's tool results
    wait: float = 0.0  # seconds before answering at all (a slow model), streamed or not


def text(
    content: str,
    delay: float = 0.0,
    logprobs: list[dict[str, Any]] | None = None,
    finish: str = "",
    wait: float = 0.0,
) -> Reply:
    """An assistant answer with ``content`` (finish_reason ``stop``, or ``finish``);
    ``wait`` seconds before it."""
    return Reply("text", content=content, delay=delay, logprobs=logprobs, finish=finish, wait=wait)


def quoting_tools(template: str = "The tool said: {result}") -> Reply:
    """An answer quoting the tool results of the request it answers (``{result}``: the last,
    ``{results}``: all, joined by `` | ``): what reached the model is what it says."""
    return Reply("text", template=template)


def tool_results(body: dict[str, Any]) -> list[str]:
    """The tool results a request carries, in order: ``tool`` messages (chat completions) or
    ``tool_result`` blocks (Anthropic's Messages API)."""
    out: list[str] = []
    for message in body.get("messages", []):
        content = message.get("content")
        if message.get("role") == "tool":
            out.append(str(content))
        elif isinstance(content, list):
            out += [str(b.get("content")) for b in content if b.get("type") == "tool_result"]
    return out


def tool_calls(*calls: tuple[Any, ...], content: str = "", delay: float = 0.0) -> Reply:
    """The assistant asks for tools: each call ``(name, arguments[, id])``.

    ``arguments`` is a dict (sent as JSON) or a raw string (sent as is: malformed JSON too).
    """
    out: list[tuple[str, str, str]] = []
    for n, call in enumerate(calls, start=1):
        name, arguments = call[0], call[1]
        call_id = (
            call[2] if len(call) > 2 else f"call_{n}_{hashlib.md5(name.encode()).hexdigest()[:6]}"
        )
        raw = arguments if isinstance(arguments, str) else json.dumps(arguments)
        out.append((call_id, name, raw))
    return Reply("tool_calls", content=content, calls=out, delay=delay)


def error(status: int, message: str = "", headers: dict[str, str] | None = None) -> Reply:
    """An HTTP error with OpenAI's ``{"error": {...}}`` body."""
    return Reply(
        "error", content=message or f"fake error {status}", status=status, headers=headers or {}
    )


def vectors(dimensions: int, zero: bool = False) -> Reply:
    """Embeddings of ``dimensions`` length for one request (a length mismatch); ``zero``:
    all-zero vectors (a broken server)."""
    return Reply("vectors", dimensions=dimensions, content="zero" if zero else "")


def stream_error(kind: str = "overloaded_error", message: str = "Overloaded") -> Reply:
    """A stream that starts (status 200, a first text chunk) and then fails with an error."""
    return Reply("stream_error", content=message, headers={"type": kind})


def raw(body: str, content_type: str = "text/html", status: int = 200) -> Reply:
    """``body`` sent as is with ``content_type``, whether or not the request streams."""
    return Reply("raw", content=body, status=status, headers={"Content-Type": content_type})


@dataclass
class Recorded:
    """One request the server received."""

    path: str
    headers: dict[str, str]  # lower-case names
    body: dict[str, Any]
    query: str = ""  # the URL's query string (Azure's api-version)
    status: int = 0  # what the server answered


class Script:
    """A queue of replies for one endpoint (thread-safe)."""

    def __init__(self) -> None:
        self._queue: deque[Reply] = deque()
        self._lock = threading.Lock()

    def push(self, *replies: Reply) -> None:
        """Append replies, served in order, one per request."""
        with self._lock:
            self._queue.extend(replies)

    def pop(self) -> Reply | None:
        with self._lock:
            return self._queue.popleft() if self._queue else None

    def __len__(self) -> int:
        with self._lock:
            return len(self._queue)


def unit_vector(text_: str, dimensions: int) -> list[float]:
    """A deterministic pseudo-random unit vector for ``text_`` (same text, same vector)."""
    seed = int.from_bytes(hashlib.sha256(text_.encode("utf-8")).digest()[:8], "little")
    vec = np.random.default_rng(seed).standard_normal(dimensions)
    return [float(x) for x in vec / np.linalg.norm(vec)]


class _Server(ThreadingHTTPServer):
    """A client that hangs up (the CLI exiting with a kept-alive connection open) is no
    fault: not printed, since a command run in the test's own process captures this
    process's stderr and would show the server's traceback as its own."""

    def handle_error(self, request: Any, client_address: Any) -> None:
        if isinstance(sys.exc_info()[1], (ConnectionResetError, BrokenPipeError)):
            return
        super().handle_error(request, client_address)


class FakeOpenAI:
    """The server; ``url`` is the base URL to give the client (ends in ``/v1``)."""

    def __init__(self, dimensions: int = 1536, chunk_size: int = 4) -> None:
        self.chat = Script()
        self.embeddings = Script()
        self.dimensions = dimensions
        self.chunk_size = chunk_size  # characters per streamed text chunk
        #: Answers a chat request when nothing is scripted (None: a 400 error).
        self.responder: Callable[[dict[str, Any]], Reply] | None = None
        self.requests: list[Recorded] = []
        self._lock = threading.Lock()
        self._server = _Server(("127.0.0.1", 0), self._handler())
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def port(self) -> int:
        return int(self._server.server_address[1])

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def start(self) -> FakeOpenAI:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()

    def __enter__(self) -> FakeOpenAI:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def reset(self) -> None:
        """Forget scripted replies and recorded requests (a server shared by several tests)."""
        self.chat = Script()
        self.embeddings = Script()
        with self._lock:
            self.requests.clear()

    def chat_requests(self) -> list[dict[str, Any]]:
        """Bodies of the chat requests received, oldest first."""
        return [r.body for r in self.requests if r.path.endswith("/chat/completions")]

    def judge_requests(self) -> list[dict[str, Any]]:
        """Bodies of the chat requests that asked for JSON fitting a schema (a judge's)."""
        return [b for b in self.chat_requests() if "response_format" in b]

    def message_requests(self) -> list[Recorded]:
        """Anthropic Messages API requests received (path, headers, body), oldest first."""
        return [r for r in self.requests if r.path.endswith("/messages")]

    def embedding_requests(self) -> list[dict[str, Any]]:
        """Bodies of the embedding requests received, oldest first."""
        return [r.body for r in self.requests if r.path.endswith("/embeddings")]

    # -- HTTP --------------------------------------------------------------------------

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.0"  # one response per connection: no chunking needed

            def log_message(self, format: str, *args: Any) -> None:
                pass

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(length) if length else b""
                try:
                    body = json.loads(raw or b"{}")
                except ValueError:
                    body = {"_raw": raw.decode("utf-8", "replace")}
                path, _, query = self.path.partition("?")
                headers = {k.lower(): v for k, v in self.headers.items()}
                record = Recorded(path, headers, body, query)
                with server._lock:
                    server.requests.append(record)
                if path.endswith("/chat/completions"):
                    server._chat(self, body, record)
                elif path.endswith("/messages"):
                    server._messages(self, body, record)
                elif path.endswith("/embeddings"):
                    server._embed(self, body, record)
                else:
                    server._send_error(self, record, error(404, f"no route {path}"))

        return Handler

    def _send_json(
        self,
        h: BaseHTTPRequestHandler,
        record: Recorded,
        status: int,
        data: Any,
        headers: dict[str, str] | None = None,
    ) -> None:
        payload = json.dumps(data).encode()
        record.status = status
        h.send_response(status)
        h.send_header("Content-Type", "application/json")
        h.send_header("Content-Length", str(len(payload)))
        for k, v in (headers or {}).items():
            h.send_header(k, v)
        h.end_headers()
        h.wfile.write(payload)

    def _send_error(self, h: BaseHTTPRequestHandler, record: Recorded, reply: Reply) -> None:
        kind = {401: "invalid_request_error", 429: "rate_limit_exceeded"}.get(
            reply.status, "api_error"
        )
        body = {"error": {"message": reply.content, "type": kind, "param": None, "code": None}}
        self._send_json(h, record, reply.status, body, reply.headers)

    def _chat(self, h: BaseHTTPRequestHandler, body: dict[str, Any], record: Recorded) -> None:
        reply = self.chat.pop()
        if reply is None and self.responder is not None:
            reply = self.responder(body)
        if reply is None:
            reply = error(400, "fake_openai: no scripted chat reply")
        time.sleep(reply.wait)
        if reply.kind == "error":
            self._send_error(h, record, reply)
            return
        if reply.kind == "raw":
            payload = reply.content.encode()
            record.status = reply.status
            h.send_response(reply.status)
            for k, v in reply.headers.items():
                h.send_header(k, v)
            h.send_header("Content-Length", str(len(payload)))
            h.end_headers()
            h.wfile.write(payload)
            return
        model = body.get("model", "fake-model")
        reply = _filled(reply, body)
        if reply.kind == "stream_error":
            self._stream_then_fail(h, record, reply, model)
            return
        if body.get("stream"):
            self._stream(h, record, reply, model)
            return
        if reply.delay:
            time.sleep(reply.delay)
        message: dict[str, Any] = {"role": "assistant", "content": reply.content or None}
        if reply.kind == "tool_calls":
            message["tool_calls"] = [
                {"id": i, "type": "function", "function": {"name": n, "arguments": a}}
                for i, n, a in reply.calls
            ]
        finish = reply.finish or ("tool_calls" if reply.kind == "tool_calls" else "stop")
        choice: dict[str, Any] = {"index": 0, "message": message, "finish_reason": finish}
        if reply.logprobs is not None and body.get("logprobs"):
            choice["logprobs"] = {"content": reply.logprobs}
        data = {
            "id": "chatcmpl-fake",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": model,
            "choices": [choice],
            "usage": _usage(body, reply.content),
        }
        self._send_json(h, record, 200, data)

    def _stream(
        self, h: BaseHTTPRequestHandler, record: Recorded, reply: Reply, model: str
    ) -> None:
        record.status = 200
        h.send_response(200)
        h.send_header("Content-Type", "text/event-stream")
        h.send_header("Cache-Control", "no-cache")
        h.end_headers()

        def event(delta: dict[str, Any], finish: str | None = None) -> None:
            chunk = {
                "id": "chatcmpl-fake",
                "object": "chat.completion.chunk",
                "created": int(time.time()),
                "model": model,
                "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
            }
            h.wfile.write(f"data: {json.dumps(chunk)}\n\n".encode())
            h.wfile.flush()
            if reply.delay:
                time.sleep(reply.delay)

        try:
            event({"role": "assistant", "content": ""})
            step = max(1, self.chunk_size)
            for start in range(0, len(reply.content), step):
                event({"content": reply.content[start : start + step]})
            for index, (call_id, name, arguments) in enumerate(reply.calls):
                event(
                    {
                        "tool_calls": [
                            {
                                "index": index,
                                "id": call_id,
                                "type": "function",
                                "function": {"name": name, "arguments": ""},
                            }
                        ]
                    }
                )
                for start in range(0, len(arguments), 7):
                    event(
                        {
                            "tool_calls": [
                                {
                                    "index": index,
                                    "function": {"arguments": arguments[start : start + 7]},
                                }
                            ]
                        }
                    )
            event({}, "tool_calls" if reply.kind == "tool_calls" else "stop")
            h.wfile.write(b"data: [DONE]\n\n")
            h.wfile.flush()
        except (BrokenPipeError, ConnectionResetError):
            pass  # the client went away mid-stream (an interrupted answer)

    def _stream_then_fail(
        self, h: BaseHTTPRequestHandler, record: Recorded, reply: Reply, model: str
    ) -> None:
        """An OpenAI-style stream whose second event is an error (after a 200)."""
        record.status = 200
        h.send_response(200)
        h.send_header("Content-Type", "text/event-stream")
        h.end_headers()
        chunk = {
            "id": "chatcmpl-fake",
            "object": "chat.completion.chunk",
            "created": int(time.time()),
            "model": model,
            "choices": [{"index": 0, "delta": {"role": "assistant", "content": "Let"}}],
        }
        error_event = {"error": {"message": reply.content, "type": reply.headers["type"]}}
        h.wfile.write(f"data: {json.dumps(chunk)}\n\ndata: {json.dumps(error_event)}\n\n".encode())
        h.wfile.flush()

    # -- Anthropic's Messages API ------------------------------------------------------

    def _messages(self, h: BaseHTTPRequestHandler, body: dict[str, Any], record: Recorded) -> None:
        reply = self.chat.pop()
        if reply is None and self.responder is not None:
            reply = self.responder(body)
        if reply is None:
            reply = error(400, "fake_openai: no scripted chat reply")
        if reply.kind == "error":
            kind = {
                400: "invalid_request_error",
                401: "authentication_error",
                403: "permission_error",
                404: "not_found_error",
                429: "rate_limit_error",
                529: "overloaded_error",
            }.get(reply.status, "api_error")
            data = {"type": "error", "error": {"type": kind, "message": reply.content}}
            self._send_json(h, record, reply.status, data, reply.headers)
            return
        reply = _filled(reply, body)
        model = body.get("model", "fake-model")
        blocks: list[dict[str, Any]] = []
        if reply.content:
            blocks.append({"type": "text", "text": reply.content})
        for call_id, name, arguments in reply.calls:
            blocks.append(
                {"type": "tool_use", "id": call_id, "name": name, "input": json.loads(arguments)}
            )
        stop = (
            "tool_use" if reply.calls else "max_tokens" if reply.finish == "length" else "end_turn"
        )
        if not body.get("stream"):
            message = _anthropic_message(model, blocks, stop)
            self._send_json(h, record, 200, message)
            return
        record.status = 200
        h.send_response(200)
        h.send_header("Content-Type", "text/event-stream")
        h.end_headers()

        def event(kind: str, data: dict[str, Any]) -> None:
            h.wfile.write(f"event: {kind}\ndata: {json.dumps({'type': kind, **data})}\n\n".encode())
            h.wfile.flush()
            if reply.delay:
                time.sleep(reply.delay)

        try:
            event("message_start", {"message": _anthropic_message(model, [], None)})
            if reply.kind == "stream_error":
                event(
                    "content_block_start",
                    {"index": 0, "content_block": {"type": "text", "text": ""}},
                )
                event(
                    "content_block_delta",
                    {"index": 0, "delta": {"type": "text_delta", "text": "Let"}},
                )
                event("error", {"error": {"type": reply.headers["type"], "message": reply.content}})
                return
            for index, block in enumerate(blocks):
                if block["type"] == "text":
                    event(
                        "content_block_start",
                        {"index": index, "content_block": {"type": "text", "text": ""}},
                    )
                    step = max(1, self.chunk_size)
                    for start in range(0, len(block["text"]), step):
                        piece = block["text"][start : start + step]
                        event(
                            "content_block_delta",
                            {"index": index, "delta": {"type": "text_delta", "text": piece}},
                        )
                else:
                    start_block = {
                        "type": "tool_use",
                        "id": block["id"],
                        "name": block["name"],
                        "input": {},
                    }
                    event("content_block_start", {"index": index, "content_block": start_block})
                    raw_input = json.dumps(block["input"])
                    for start in range(0, len(raw_input), 7):
                        piece = raw_input[start : start + 7]
                        event(
                            "content_block_delta",
                            {
                                "index": index,
                                "delta": {"type": "input_json_delta", "partial_json": piece},
                            },
                        )
                event("content_block_stop", {"index": index})
            event(
                "message_delta",
                {
                    "delta": {"stop_reason": stop, "stop_sequence": None},
                    "usage": {"output_tokens": 1},
                },
            )
            event("message_stop", {})
        except (BrokenPipeError, ConnectionResetError):
            pass

    def _embed(self, h: BaseHTTPRequestHandler, body: dict[str, Any], record: Recorded) -> None:
        reply = self.embeddings.pop()
        if reply is not None and reply.kind == "error":
            self._send_error(h, record, reply)
            return
        dims = reply.dimensions if reply is not None else self.dimensions
        inputs = body.get("input")
        if isinstance(inputs, str):
            inputs = [inputs]
        if not isinstance(inputs, list) or not inputs:
            self._send_error(h, record, error(400, "input must be a string or a list"))
            return
        if len(inputs) > 2048:
            self._send_error(h, record, error(400, "'input' must have at most 2048 items"))
            return
        data = []
        for i, item in enumerate(inputs):
            vec = unit_vector(str(item), dims)
            if reply is not None and reply.content == "zero":
                vec = [0.0] * dims
            if body.get("encoding_format") == "base64":
                emb: Any = base64.b64encode(np.asarray(vec, dtype=np.float32).tobytes()).decode()
            else:
                emb = vec
            data.append({"object": "embedding", "index": i, "embedding": emb})
        usage = {"prompt_tokens": len(inputs), "total_tokens": len(inputs)}
        self._send_json(
            h,
            record,
            200,
            {"object": "list", "data": data, "model": body.get("model"), "usage": usage},
        )


def _usage(body: dict[str, Any], answer: str) -> dict[str, int]:
    """Token counts as words (at least 1 each way): enough for a summary to add up."""
    prompt = sum(len(str(m.get("content") or "").split()) for m in body.get("messages", []))
    prompt, completion = max(1, prompt), max(1, len(answer.split()))
    return {
        "prompt_tokens": prompt,
        "completion_tokens": completion,
        "total_tokens": prompt + completion,
    }


def _filled(reply: Reply, body: dict[str, Any]) -> Reply:
    """A ``quoting_tools`` reply made into text from the request's tool results."""
    if reply.template is None:
        return reply
    results = tool_results(body)
    content = reply.template.format(
        result=results[-1] if results else "", results=" | ".join(results)
    )
    return Reply("text", content=content, delay=reply.delay)


def _anthropic_message(
    model: str, blocks: list[dict[str, Any]], stop: str | None
) -> dict[str, Any]:
    return {
        "id": "msg_fake",
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": blocks,
        "stop_reason": stop,
        "stop_sequence": None,
        "usage": {"input_tokens": 1, "output_tokens": 1},
    }


@pytest.fixture
def fake_openai() -> Iterator[FakeOpenAI]:
    """A started server, stopped after the test (import it into a conftest to use it)."""
    with FakeOpenAI() as server:
        yield server
