"""The agent: an LLM that searches the knowledge bases through tool calls, or retrieval only.

One turn sends the system prompt, the conversation and one function per vectorstore tool
(its ``tool_definition``: one required ``query``), per function tool and per tool of each MCP
server; runs the tool calls the model asks for (concurrently), sends each result back with
its ``tool_call_id`` and repeats until the model answers, at most ``max_tool_rounds`` times.
Without a ``model:`` each message is a search of every knowledge base. Chat and
``holodeck test`` both drive this class; it prints nothing itself.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # imported when a model is asked: a retrieval-only run never loads it
    import openai

from holodeck import tracing
from holodeck.agent import spans
from holodeck.agent.anthropic import AnthropicChat
from holodeck.agent.structured import (
    ANSWER_INSTRUCTION,
    ANSWER_TOOL,
    answer_tool,
    openai_response_format,
)
from holodeck.config.envsubst import environment_for
from holodeck.config.llm import ModelConfig
from holodeck.config.loader import Project
from holodeck.errors import ConfigError, HoloDeckError, LLMError
from holodeck.knowledge_base import clean_query
from holodeck.providers import (
    Connection,
    connection_for,
    describe_error,
    make_async_client,
)
from holodeck.results import SearchResult
from holodeck.tools.callables import CallableTool, ToolError, ToolUnavailable
from holodeck.tools.vectorstore_tool import VectorStoreTool

DEFAULT_MAX_TOOL_ROUNDS = 5
_ENDPOINT_HINT = "check model.endpoint: an OpenAI-compatible API's URL usually ends in /v1"

TextCallback = Callable[[str], None]
ToolCallback = Callable[["ToolCallRecord"], None]


@dataclass
class ToolCallRecord:
    """One tool call the agent ran, as the model (or the user, retrieval-only) asked for it."""

    id: str  # tool_call_id ("" in retrieval-only mode)
    tool: str
    arguments: dict[str, Any]  # parsed arguments ({} if unparseable)
    query: str | None  # a search's query (None for other tools)
    output: str  # the text returned to the model: formatted results, the result or the error
    results: list[SearchResult] = field(default_factory=list)  # ranked; empty on error
    error: str | None = None
    seconds: float = 0.0
    kind: str = "search"  # search (a knowledge base), function or mcp
    aliases: tuple[str, ...] = ()  # other names expected_tools may give the tool
    unavailable: bool = False  # the tool could not run at all (its MCP server is gone)


@dataclass
class TurnResult:
    """What one user message produced."""

    answer: str  # final assistant text (retrieval-only: the formatted results)
    tool_calls: list[ToolCallRecord]
    rounds: int  # requests made to the model (0 in retrieval-only mode)
    seconds: float
    notice: str | None = None  # for the user: the model hit the tool-round limit


class Agent:
    """A conversation with one agent over its (already initialized) vectorstore tools."""

    def __init__(
        self,
        project: Project,
        tools: list[VectorStoreTool],
        client: openai.AsyncOpenAI | AnthropicChat | None = None,
        max_tool_rounds: int = DEFAULT_MAX_TOOL_ROUNDS,
        connection: Connection | None = None,
        functions: list[CallableTool] | None = None,
    ) -> None:
        """``client`` None: retrieval-only. ``connection`` names the server in error lines.

        ``functions`` are the other tools the model may call (function tools, MCP tools).
        """
        if max_tool_rounds < 1:
            raise ValueError("max_tool_rounds must be at least 1")
        self.project = project
        self.tools = list(tools)
        self.client = client
        self.max_tool_rounds = max_tool_rounds
        self.model: ModelConfig | None = project.agent.model
        if client is not None and self.model is None:
            raise ConfigError(f"{project.agent_path.name}: an LLM client needs a model: section")
        if connection is None and client is not None and self.model is not None:
            key = client.api_key if isinstance(client.api_key, str) else ""
            connection = Connection(self.model.provider, str(client.base_url), key, None)
        self.connection = connection
        self._by_name = {tool.name: tool for tool in self.tools}
        self.functions: dict[str, CallableTool] = {}
        self.offer(functions or [])
        self.system_prompt = _instructions(project)
        self.messages: list[dict[str, Any]] = []
        #: ``response_format``'s schema: every answer is asked for in its shape.
        self.schema = project.response_schema if client is not None else None
        #: Provider anthropic answers through a tool whose input is the answer.
        self.answers_by_tool = self.schema is not None and isinstance(client, AnthropicChat)
        if self.answers_by_tool:
            self.system_prompt = "\n\n".join(filter(None, [self.system_prompt, ANSWER_INSTRUCTION]))

    @classmethod
    def from_project(
        cls,
        project: Project,
        tools: list[VectorStoreTool],
        max_tool_rounds: int = DEFAULT_MAX_TOOL_ROUNDS,
        functions: list[CallableTool] | None = None,
    ) -> Agent:
        """The agent ``project`` describes: its model's client, or retrieval-only without one."""
        model = project.agent.model
        if model is None:
            return cls(project, tools, None, max_tool_rounds)
        conn = connection_for(model, environment_for(project.root))
        client: openai.AsyncOpenAI | AnthropicChat = (
            AnthropicChat(conn) if conn.provider == "anthropic" else make_async_client(conn)
        )
        return cls(project, tools, client, max_tool_rounds, conn, functions)

    def offer(self, functions: list[CallableTool]) -> None:
        """Let the model call ``functions`` too (names must not clash with a knowledge base)."""
        for function in functions:
            if function.name in self._by_name or function.name in self.functions:
                raise ConfigError(
                    f"two tools would both be called {function.name!r}: rename one in agent.yaml"
                )
            self.functions[function.name] = function

    @property
    def retrieval_only(self) -> bool:
        """No LLM: each message is searched in every tool."""
        return self.client is None

    @property
    def tool_definitions(self) -> list[dict[str, Any]]:
        """The ``tools`` parameter of a chat request: the knowledge bases, then the others."""
        definitions = [t.tool_definition() for t in self.tools]
        definitions += [f.definition() for f in self.functions.values()]
        return [{"type": "function", "function": d} for d in definitions]

    def reset(self) -> None:
        """Forget the conversation (the system prompt stays)."""
        self.messages.clear()

    async def close(self) -> None:
        """Close the HTTP client."""
        if self.client is not None:
            await self.client.close()

    async def run_turn(
        self,
        message: str,
        on_text: TextCallback | None = None,
        on_tool: ToolCallback | None = None,
    ) -> TurnResult:
        """Answer ``message``; streams text to ``on_text`` (if given) and reports each tool call.

        Raises ``LLMError`` when the model cannot be reached or refuses; the turn is then
        forgotten, as it is when the task is cancelled, so the history stays valid.
        """
        attributes = spans.turn_attributes(self.project.agent.name, self.model)
        with tracing.span(f"invoke_agent {self.project.agent.name}", attributes) as span:
            span.content("holodeck.agent.input", message)
            turn = await self._turn(message, on_text, on_tool)
            span.set("holodeck.agent.rounds", turn.rounds)
            span.set("holodeck.agent.tool_calls", len(turn.tool_calls))
            span.content("holodeck.agent.answer", turn.answer)
            return turn

    async def _turn(
        self, message: str, on_text: TextCallback | None, on_tool: ToolCallback | None
    ) -> TurnResult:
        started = time.perf_counter()
        if self.client is None:
            calls = await self._retrieve(message, on_tool)
            answer = _joined_outputs(calls)
            return TurnResult(answer, calls, 0, time.perf_counter() - started)
        mark = len(self.messages)
        self.messages.append({"role": "user", "content": message})
        try:
            answer, calls, rounds, notice = await self._converse(on_text, on_tool)
        except BaseException:
            del self.messages[mark:]
            raise
        return TurnResult(answer, calls, rounds, time.perf_counter() - started, notice)

    # -- LLM mode ----------------------------------------------------------------------

    async def _converse(
        self, on_text: TextCallback | None, on_tool: ToolCallback | None
    ) -> tuple[str, list[ToolCallRecord], int, str | None]:
        """Request, run tool calls, repeat; the last allowed request may not call tools.

        Returns the answer, the calls, the requests made and, when the round limit forced
        that last request, a notice saying so.
        """
        calls: list[ToolCallRecord] = []
        rounds = 0
        force_answer = False
        while True:
            rounds += 1
            allow_tools = rounds <= self.max_tool_rounds and not force_answer
            text, requested = await self._complete(allow_tools, on_text, force_answer)
            if self.answers_by_tool:
                answer = next((a for _, n, a in requested if n == ANSWER_TOOL), None)
                if answer is None and not (requested and allow_tools) and not force_answer:
                    force_answer = True  # it answered in text: ask for the answer tool's input
                    continue
                if answer is not None or force_answer:
                    text = _json_text(answer or text)
                    self.messages.append({"role": "assistant", "content": text})
                    return text, calls, rounds, None
            assistant: dict[str, Any] = {"role": "assistant", "content": text or None}
            if requested and allow_tools:
                assistant["tool_calls"] = [
                    {
                        "id": call_id,
                        "type": "function",
                        "function": {"name": name, "arguments": args},
                    }
                    for call_id, name, args in requested
                ]
            self.messages.append(assistant)
            if not requested or not allow_tools:
                notice = None
                if not allow_tools:
                    notice = (
                        f"the model reached the limit of {self.max_tool_rounds} rounds of tool "
                        "calls and answered from the searches made so far"
                    )
                    if requested:  # the server ignored tool_choice="none"
                        notice += f" (it asked for {len(requested)} more, not run)"
                return text, calls, rounds, notice
            records = await asyncio.gather(
                *(self._call(call_id, name, args, on_tool) for call_id, name, args in requested)
            )
            for record in records:
                self.messages.append(
                    {"role": "tool", "tool_call_id": record.id, "content": record.output}
                )
            calls.extend(records)

    def _request(self, allow_tools: bool, force_answer: bool = False) -> dict[str, Any]:
        assert self.model is not None
        messages = list(self.messages)
        if self.system_prompt:
            messages.insert(0, {"role": "system", "content": self.system_prompt})
        request: dict[str, Any] = {"model": self.model.name, "messages": messages}
        if self.answers_by_tool:
            assert self.schema is not None
            request["tools"] = [*self.tool_definitions, answer_tool(self.schema)]
            if force_answer or not allow_tools:
                request["tool_choice"] = {"type": "function", "function": {"name": ANSWER_TOOL}}
        elif self.tools or self.functions:
            request["tools"] = self.tool_definitions
            if not allow_tools:
                request["tool_choice"] = "none"
        if self.schema is not None and not self.answers_by_tool:
            request["response_format"] = openai_response_format(self.schema)
        if self.model.temperature is not None:
            request["temperature"] = self.model.temperature
        if self.model.max_tokens is not None:
            request["max_tokens"] = self.model.max_tokens
        if self.model.top_p is not None:
            request["top_p"] = self.model.top_p
        return request

    async def _complete(
        self, allow_tools: bool, on_text: TextCallback | None, force_answer: bool = False
    ) -> tuple[str, list[tuple[str, str, str]]]:
        """One model request: its text and its tool calls as ``(id, name, arguments)``."""
        assert self.client is not None and self.model is not None
        request = self._request(allow_tools, force_answer)
        attributes = spans.chat_attributes(self.model, request, on_text is not None)
        with tracing.span(f"chat {self.model.name}", attributes, kind="client") as span:
            span.content(tracing.INPUT_MESSAGES, request["messages"])
            return await self._completed(request, on_text, span)

    async def _completed(
        self, request: dict[str, Any], on_text: TextCallback | None, span: tracing.Span
    ) -> tuple[str, list[tuple[str, str, str]]]:
        assert self.client is not None
        if isinstance(self.client, AnthropicChat):
            text, requested, finish = await self.client.complete(request, on_text)
            spans.record_answer(span, text, requested, finish)
            return self._answered(text, requested, finish)
        import openai

        try:
            if on_text is None:
                response = await self.client.chat.completions.create(**request)
                spans.record_response(span, response)
                text, requested, finish = self._read_completion(response)
            else:
                text, requested, finish = await self._stream(request, on_text)
            spans.record_answer(span, text, requested, finish)
        except openai.OpenAIError as exc:
            assert self.model is not None and self.connection is not None
            raise LLMError(describe_error(exc, self.connection, self.model.name)) from exc
        except ValueError as exc:  # a body that is not JSON (truncated, HTML) or not the shape
            raise LLMError(
                f"{self._label()} answered with invalid JSON, not a chat completion "
                f"({_excerpt(str(exc))}); {_ENDPOINT_HINT}"
            ) from exc
        return self._answered(text, requested, finish)

    def _answered(
        self, text: str, requested: list[tuple[str, str, str]], finish: str
    ) -> tuple[str, list[tuple[str, str, str]]]:
        """The answer, or an LLMError when it holds neither text nor a tool call."""
        if not text and not requested:
            raise LLMError(
                f"{self._label()} returned an empty answer (finish_reason: {finish or 'none'}); "
                "try again, or check the model and its limits"
            )
        return text, requested

    def _read_completion(self, response: Any) -> tuple[str, list[tuple[str, str, str]], str]:
        """Text, tool calls and finish reason of a whole answer; anything else is an LLMError.

        The openai client hands back the body as text when it is not JSON (an HTML login or
        error page answered with 200) and builds a completion without checking its fields.
        """
        from openai.types.chat import ChatCompletion

        choices = getattr(response, "choices", None)
        first = choices[0] if choices else None
        message = getattr(first, "message", None)
        if not isinstance(response, ChatCompletion) or message is None:
            got = (
                "JSON without choices"
                if isinstance(response, ChatCompletion)
                else _excerpt(response)
            )
            raise LLMError(
                f"{self._label()} answered with something that is not a chat completion "
                f"({got}); {_ENDPOINT_HINT}"
            )
        requested = [
            (c.id, c.function.name, c.function.arguments or "")
            for c in message.tool_calls or []
            if c.type == "function"
        ]
        return message.content or "", requested, getattr(first, "finish_reason", None) or ""

    async def _stream(
        self, request: dict[str, Any], on_text: TextCallback
    ) -> tuple[str, list[tuple[str, str, str]], str]:
        """A streamed request: text goes to ``on_text`` as it comes; tool calls are assembled.

        Returns the text, the tool calls and the finish reason. A stream without a single
        completion chunk (an HTML page, a JSON body that is not a stream) is an LLMError.
        """
        import openai

        assert isinstance(self.client, openai.AsyncOpenAI)
        stream = await self.client.chat.completions.create(**request, stream=True)
        parts: list[str] = []
        calls: dict[int, list[str]] = {}
        chunks = 0
        finish = ""
        try:
            async for chunk in stream:
                choices = getattr(chunk, "choices", None)
                if not choices or getattr(choices[0], "delta", None) is None:
                    continue
                chunks += 1
                finish = choices[0].finish_reason or finish
                delta = choices[0].delta
                if delta.content:
                    parts.append(delta.content)
                    on_text(delta.content)
                for piece in delta.tool_calls or []:
                    slot = calls.setdefault(piece.index, ["", "", ""])
                    if piece.id:
                        slot[0] = piece.id
                    if piece.function and piece.function.name:
                        slot[1] += piece.function.name
                    if piece.function and piece.function.arguments:
                        slot[2] += piece.function.arguments
        finally:
            await stream.close()
        if chunks == 0:
            raise LLMError(
                f"{self._label()} answered without a single chat completion chunk (not an "
                f"OpenAI-compatible stream); {_ENDPOINT_HINT}"
            )
        requested = [
            (slot[0] or f"call_{i}", slot[1], slot[2]) for i, slot in sorted(calls.items())
        ]
        return "".join(parts), requested, finish

    def _label(self) -> str:
        return self.connection.label if self.connection else "the LLM"

    # -- tools -------------------------------------------------------------------------

    async def _call(
        self, call_id: str, name: str, raw_arguments: str, on_tool: ToolCallback | None
    ) -> ToolCallRecord:
        """Run one tool call; any problem becomes the tool's result for the model to read."""
        attributes = {
            tracing.OPERATION: "execute_tool",
            tracing.TOOL_NAME: name,
            tracing.TOOL_CALL_ID: call_id or None,
            tracing.TOOL_TYPE: "function" if name in self.functions else "datastore",
        }
        with tracing.span(f"execute_tool {name}", attributes) as span:
            span.content("holodeck.tool.arguments", raw_arguments)
            record = await self._tool_call(call_id, name, raw_arguments, on_tool)
            if record.error is not None:
                span.fail(record.error)
            span.content("holodeck.tool.result", record.output)
            return record

    async def _tool_call(
        self, call_id: str, name: str, raw_arguments: str, on_tool: ToolCallback | None
    ) -> ToolCallRecord:
        started = time.perf_counter()
        arguments: dict[str, Any] = {}
        query: str | None = None
        function = self.functions.get(name)
        shape = "an object of the tool's arguments" if function else '{"query": "..."}'
        try:
            try:
                parsed = json.loads(raw_arguments or "{}")
            except json.JSONDecodeError as exc:
                raise ValueError(
                    f"arguments are not valid JSON ({exc.msg}); call {name} with {shape}"
                ) from None
            if not isinstance(parsed, dict):
                raise ValueError(f"arguments must be {shape}")
            arguments = parsed
            if function is not None:
                record = await self._run_function(call_id, function, arguments)
            else:
                raw_query = arguments.get("query")
                query = raw_query if isinstance(raw_query, str) else None
                record = await self._search(call_id, name, query, arguments)
        except (ValueError, RuntimeError, HoloDeckError, ToolError) as exc:
            error = str(exc)
            record = ToolCallRecord(call_id, name, arguments, query, f"Error: {error}", [], error)
            if function is not None:
                record.kind, record.aliases = function.kind, function.aliases
                record.unavailable = isinstance(exc, ToolUnavailable)
        record.seconds = time.perf_counter() - started
        if on_tool is not None:
            on_tool(record)
        return record

    async def _run_function(
        self, call_id: str, function: CallableTool, arguments: dict[str, Any]
    ) -> ToolCallRecord:
        """Call a function or MCP tool; its text (or its ``ToolError``) is the result."""
        output = await function.run(arguments)
        return ToolCallRecord(
            call_id,
            function.name,
            arguments,
            None,
            output,
            kind=function.kind,
            aliases=function.aliases,
        )

    async def _search(
        self, call_id: str, name: str, query: str | None, arguments: dict[str, Any]
    ) -> ToolCallRecord:
        """Search tool ``name``: structured results plus the formatted text the LLM reads."""
        tool = self._by_name.get(name)
        if tool is None:
            valid = ", ".join([*self._by_name, *self.functions]) or "none"
            raise ValueError(f"unknown tool {name!r}; available tools: {valid}")
        if query is None:
            raise ValueError("Search query cannot be empty: pass a 'query' string")
        cleaned = clean_query(query)
        results, total = await asyncio.to_thread(tool.find, cleaned)
        # The model's view: each result says where it is, so the answer can cite it.
        output = tool.render(cleaned, results, total, view="model")
        return ToolCallRecord(call_id, name, arguments, query, output, results, None)

    # -- retrieval-only ----------------------------------------------------------------

    async def _retrieve(self, message: str, on_tool: ToolCallback | None) -> list[ToolCallRecord]:
        """The message as a query to every tool, concurrently."""
        arguments = {"query": message}
        raw = json.dumps(arguments)
        return list(
            await asyncio.gather(*(self._call("", tool.name, raw, on_tool) for tool in self.tools))
        )


def _excerpt(body: object) -> str:
    """The start of what a server answered, on one line, to say what it was."""
    text = " ".join(str(body).split())
    return repr(text if len(text) <= 80 else text[:77] + "...")


def _json_text(arguments: str) -> str:
    """The answer tool's input as the answer's JSON text (as it came when not JSON)."""
    try:
        return json.dumps(json.loads(arguments), ensure_ascii=False)
    except json.JSONDecodeError:
        return arguments


def _joined_outputs(calls: list[ToolCallRecord]) -> str:
    """The retrieval-only answer: each tool's formatted results (headed when several)."""
    if len(calls) == 1:
        return calls[0].output
    return "\n\n".join(f"## {c.tool}\n\n{c.output}" for c in calls)


def _instructions(project: Project) -> str | None:
    """The system prompt from ``instructions`` (inline, or the file next to agent.yaml)."""
    instructions = project.agent.instructions
    if instructions is None:
        return None
    if instructions.inline is not None:
        return instructions.inline.strip() or None
    assert instructions.file is not None
    path = project.root / instructions.file
    try:
        return path.read_text(encoding="utf-8").strip() or None
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"instructions.file: cannot read {project.display(path)}: {exc}") from exc
