"""The judge: an LLM asked for JSON that fits a schema, at temperature 0, cached on disk.

A small layer on the client the agent already uses: the openai client for the other providers
(and any OpenAI-compatible server), Anthropic's SDK for provider ``anthropic`` (the Messages
API the agent is called through too), with chat's retries and time limits. The reply must
parse as JSON and fit the schema, else ``JudgeError``: a metric that could not be computed,
never a silent pass or a 0 that looks like a score.

When asked for it, the reply's log-probabilities of the ``score`` value are turned into a
distribution over the possible scores (G-Eval's weighting). A server that refuses
``logprobs`` or ``response_format`` is asked again without it (the prompt holds the schema
too), once per judge. Provider anthropic is asked with the schema in the system prompt
only: the Messages API takes neither ``response_format`` nor ``logprobs``, so G-Eval's score
is then the judge's plain integer.
"""

from __future__ import annotations

import asyncio
import json
import math
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TypeVar

import pydantic

if TYPE_CHECKING:  # imported when a judge is asked: runs without evaluations never load it
    import openai
    from openai.types.chat import ChatCompletion

from holodeck import tracing
from holodeck.agent.anthropic import AnthropicChat, messages_request, read_message
from holodeck.agent.spans import provider_name
from holodeck.agent.structured import without_fence
from holodeck.config.llm import ModelConfig
from holodeck.evaluations.cache import JudgeCache, cache_key
from holodeck.providers import (
    Connection,
    connection_for,
    describe_error,
    make_async_client,
)

#: Bumped when the prompts or the reply schemas change, so cached replies are not reused.
PROMPT_VERSION = 1
#: Judge calls in flight at once per judge (cases and metrics run concurrently).
MAX_CONCURRENT_CALLS = 8
#: Alternatives of the score token asked for (OpenAI's maximum).
TOP_LOGPROBS = 20

Schema = TypeVar("Schema", bound=pydantic.BaseModel)


class JudgeError(RuntimeError):
    """The judge could not give a usable verdict (unreachable, refused, or off-schema)."""


@dataclass
class Usage:
    """What a run's judge calls cost: requests made, tokens spent, replies from the cache."""

    calls: int = 0
    tokens: int = 0
    cached: int = 0


@dataclass
class Verdict:
    """A judge's reply that fits the schema."""

    data: Any  # the schema model, validated
    #: With ``score_range``: the probability of each integer score, from log-probabilities
    #: (None when the server sent none).
    distribution: dict[int, float] | None = None
    cached: bool = False


@dataclass
class _Capabilities:
    """What this judge's server turned out to refuse (learned once, then not asked again)."""

    logprobs: bool = True
    schema: bool = True
    notes: list[str] = field(default_factory=list)


class Judge:
    """One judge model; ``ask`` is safe to call from many cases at once."""

    def __init__(
        self,
        model: ModelConfig,
        env: Mapping[str, str],
        cache: JudgeCache | None,
        usage: Usage,
        client: openai.AsyncOpenAI | None = None,
    ) -> None:
        self.model = model
        self.connection: Connection = connection_for(model, env)  # ConfigError before work
        #: Provider anthropic: its Messages API (no openai client is made).
        self.messages_api = (
            AnthropicChat(self.connection) if model.provider == "anthropic" else None
        )
        self.client = client or (None if self.messages_api else make_async_client(self.connection))
        self.cache = cache
        self.usage = usage
        self._gate = asyncio.Semaphore(MAX_CONCURRENT_CALLS)
        self._can = _Capabilities()

    @property
    def label(self) -> str:
        """``provider:name``, as reports show the judge."""
        return f"{self.model.provider}:{self.model.name}"

    async def close(self) -> None:
        """Close the HTTP client."""
        if self.client is not None:
            await self.client.close()
        if self.messages_api is not None:
            await self.messages_api.close()

    async def ask(
        self,
        task: str,
        prompt: str,
        schema: type[Schema],
        score_range: tuple[int, int] | None = None,
    ) -> Verdict:
        """Ask for a reply fitting ``schema``; ``score_range`` also asks for the
        log-probabilities of its integer ``score`` field."""
        attributes = {
            tracing.OPERATION: "chat",
            tracing.PROVIDER: provider_name(self.model),
            tracing.REQUEST_MODEL: self.model.name,
            "holodeck.judge.task": task,
        }
        with tracing.span(f"chat {self.model.name}", attributes, kind="client") as span:
            verdict = await self._ask(task, prompt, schema, score_range)
            span.set("holodeck.judge.cached", verdict.cached)
            return verdict

    async def _ask(
        self,
        task: str,
        prompt: str,
        schema: type[Schema],
        score_range: tuple[int, int] | None = None,
    ) -> Verdict:
        messages = [
            {"role": "system", "content": system_prompt(schema)},
            {"role": "user", "content": prompt},
        ]
        key = cache_key(
            PROMPT_VERSION,
            task,
            self.model.provider,
            self.model.name,
            self.connection.base_url,
            messages,
            score_range,
        )
        if self.cache is not None:
            stored = self.cache.get(key)
            if stored is not None:
                try:
                    verdict = self._verdict(stored["content"], schema, stored.get("distribution"))
                except (JudgeError, KeyError, TypeError):
                    pass  # stored by an older holodeck: ask again
                else:
                    self.usage.cached += 1
                    verdict.cached = True
                    return verdict
        async with self._gate:
            if self.messages_api is not None:
                content, distribution = await self._ask_messages_api(messages), None
            else:
                completion = await self._complete(task, messages, schema, score_range is not None)
                content, distribution = self._read(completion, score_range)
        verdict = self._verdict(content, schema, distribution)
        if self.cache is not None:
            self.cache.put(key, {"content": content, "distribution": _jsonable(distribution)})
        return verdict

    async def _ask_messages_api(self, messages: list[dict[str, str]]) -> str:
        """Provider anthropic: one Messages request; its reply's text, errors as JudgeError."""
        import anthropic

        assert self.messages_api is not None
        request: dict[str, Any] = {"model": self.model.name, "messages": messages, "temperature": 0}
        if self.model.max_tokens:
            request["max_tokens"] = self.model.max_tokens
        self.usage.calls += 1
        try:
            message = await self.messages_api.client.messages.create(**messages_request(request))
        except anthropic.APIError as exc:
            raise JudgeError(
                "judge " + describe_error(exc, self.connection, self.model.name, sdk=anthropic)
            ) from exc
        usage = getattr(message, "usage", None)
        if usage is not None:
            self.usage.tokens += (usage.input_tokens or 0) + (usage.output_tokens or 0)
        content, _, stop = read_message(message)
        if stop == "max_tokens":
            raise JudgeError(
                f"judge {self.label}'s reply was cut off at its token limit "
                f"({_excerpt(content)}); raise the judge's max_tokens or use a larger model"
            )
        if stop == "refusal":
            raise JudgeError(f"judge {self.label} refused to answer: {_excerpt(content)}")
        return content

    async def _complete(
        self,
        task: str,
        messages: list[dict[str, str]],
        schema: type[pydantic.BaseModel],
        logprobs: bool,
    ) -> ChatCompletion:
        """One request (asked again without what the server refused); errors as JudgeError."""
        import openai
        from openai.types.chat import ChatCompletion

        assert self.client is not None
        for _ in range(3):
            request: dict[str, Any] = {
                "model": self.model.name,
                "messages": messages,
                "temperature": 0,
            }
            if self._can.schema:
                request["response_format"] = {
                    "type": "json_schema",
                    "json_schema": {"name": task, "strict": True, "schema": json_schema(schema)},
                }
            if logprobs and self._can.logprobs:
                request["logprobs"] = True
                request["top_logprobs"] = TOP_LOGPROBS
            try:
                self.usage.calls += 1
                response = await self.client.chat.completions.create(**request)
            except openai.BadRequestError as exc:
                text = str(exc).lower()
                if "logprob" in text and "logprobs" in request:
                    self._can.logprobs = False
                    continue
                if ("response_format" in text or "json_schema" in text) and self._can.schema:
                    self._can.schema = False
                    continue
                raise JudgeError(self._describe(exc)) from exc
            except openai.OpenAIError as exc:
                raise JudgeError(self._describe(exc)) from exc
            except ValueError as exc:  # a body that is not JSON
                raise JudgeError(
                    f"judge {self.label} at {self.connection.base_url} answered with something "
                    f"that is not a chat completion ({_excerpt(str(exc))})"
                ) from exc
            if not isinstance(response, ChatCompletion) or not response.choices:
                raise JudgeError(
                    f"judge {self.label} at {self.connection.base_url} answered with something "
                    f"that is not a chat completion ({_excerpt(str(response))})"
                )
            if response.usage is not None:
                self.usage.tokens += response.usage.total_tokens or 0
            return response
        raise JudgeError(f"judge {self.label} refused every form of the request")

    def _describe(self, exc: BaseException) -> str:
        return "judge " + describe_error(exc, self.connection, self.model.name)

    def _read(
        self, completion: ChatCompletion, score_range: tuple[int, int] | None
    ) -> tuple[str, dict[int, float] | None]:
        """The reply's text, and the score distribution when asked for and sent."""
        choice = completion.choices[0]
        message = choice.message
        if getattr(message, "refusal", None):
            raise JudgeError(f"judge {self.label} refused to answer: {_excerpt(message.refusal)}")
        content = message.content or ""
        if choice.finish_reason == "length":
            raise JudgeError(
                f"judge {self.label}'s reply was cut off at its token limit "
                f"({_excerpt(content)}); raise the judge's max_tokens or use a larger model"
            )
        distribution = None
        if score_range is not None and choice.logprobs is not None:
            distribution = score_distribution(choice.logprobs.content or [], score_range)
        return content, distribution

    def _verdict(
        self, content: str, schema: type[Schema], distribution: dict[Any, float] | None
    ) -> Verdict:
        """Parse and validate a reply; anything off-schema is a JudgeError naming what."""
        text = without_fence(content)
        try:
            data = json.loads(text)
        except ValueError:
            raise JudgeError(
                f"judge {self.label}'s reply is not JSON: {_excerpt(content)}"
            ) from None
        try:
            parsed = schema.model_validate(data)
        except pydantic.ValidationError as exc:
            err = exc.errors(include_url=False)[0]
            where = ".".join(str(p) for p in err["loc"]) or "the reply"
            raise JudgeError(
                f"judge {self.label}'s reply does not fit the schema ({where}: {err['msg']}): "
                f"{_excerpt(content)}"
            ) from None
        dist = {int(k): float(v) for k, v in distribution.items()} if distribution else None
        return Verdict(parsed, dist)


def system_prompt(schema: type[pydantic.BaseModel]) -> str:
    """The judge's role, and the schema its reply must fit (for servers that ignore
    ``response_format``)."""
    return (
        "You evaluate the output of an AI assistant for an automated test suite. Follow the "
        "instructions exactly and judge only from the text you are given. Answer with one "
        "JSON object that fits this JSON schema, and nothing else:\n"
        + json.dumps(json_schema(schema), separators=(",", ":"))
    )


def json_schema(schema: type[pydantic.BaseModel]) -> dict[str, Any]:
    """The schema as structured outputs take it: every key required, no others, no titles."""

    def clean(node: Any) -> Any:
        if isinstance(node, dict):
            return {k: clean(v) for k, v in node.items() if k not in ("title", "default")}
        if isinstance(node, list):
            return [clean(v) for v in node]
        return node

    return clean(schema.model_json_schema())


_SCORE_KEY = re.compile(r'"score"\s*:\s*$')


def score_distribution(tokens: list[Any], score_range: tuple[int, int]) -> dict[int, float] | None:
    """The probabilities of each integer score at the ``"score":`` value of a JSON reply.

    ``tokens`` are the reply's log-probabilities (``token``, ``logprob``, ``top_logprobs``).
    Alternatives that are not an integer in ``score_range`` are left out and the rest
    normalised; None when the reply has no such token.
    """
    low, high = score_range
    text = ""
    for token in tokens:
        piece = getattr(token, "token", "")
        if _SCORE_KEY.search(text) and piece.strip().isdigit():
            weights: dict[int, float] = {}
            options = list(getattr(token, "top_logprobs", None) or []) or [token]
            for option in options:
                word = getattr(option, "token", "").strip()
                if word.isdigit() and low <= int(word) <= high:
                    value = int(word)
                    weights[value] = weights.get(value, 0.0) + math.exp(option.logprob)
            total = sum(weights.values())
            if total <= 0:
                return None
            return {value: w / total for value, w in sorted(weights.items())}
        text += piece
    return None


def _jsonable(distribution: dict[int, float] | None) -> dict[str, float] | None:
    return {str(k): v for k, v in distribution.items()} if distribution else None


def _excerpt(text: object, limit: int = 120) -> str:
    flat = " ".join(str(text).split())
    return repr(flat if len(flat) <= limit else flat[: limit - 3] + "...")
