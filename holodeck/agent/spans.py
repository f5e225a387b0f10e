"""The spans of an agent's turn (GenAI semantic conventions, ``holodeck.tracing``):
``invoke_agent`` per turn, ``chat`` per model request, ``execute_tool`` per tool call.

Content (the user's message, the messages sent, the answer, tool arguments and results)
is set through ``Span.content``: kept only when capture is on, then redacted.
"""

from __future__ import annotations

from typing import Any

from holodeck import tracing
from holodeck.config.llm import ModelConfig

#: ``gen_ai.provider.name`` of each provider holodeck calls (the conventions' own values
#: where they have one).
PROVIDER_NAMES = {"openai": "openai", "azure_openai": "azure.ai.openai", "anthropic": "anthropic"}


def provider_name(model: ModelConfig | None) -> str | None:
    """The conventions' name of the model's provider (``ollama`` as it is)."""
    return None if model is None else PROVIDER_NAMES.get(model.provider, model.provider)


def turn_attributes(agent_name: str, model: ModelConfig | None) -> dict[str, Any]:
    """The ``invoke_agent`` span's attributes: the agent, and its model when it has one."""
    return {
        tracing.OPERATION: "invoke_agent",
        tracing.AGENT_NAME: agent_name,
        tracing.PROVIDER: provider_name(model),
        tracing.REQUEST_MODEL: None if model is None else model.name,
        "holodeck.agent.retrieval_only": model is None,
    }


def chat_attributes(model: ModelConfig, request: dict[str, Any], streamed: bool) -> dict[str, Any]:
    """The ``chat`` span's request attributes (never the messages: those are content)."""
    return {
        tracing.OPERATION: "chat",
        tracing.PROVIDER: provider_name(model),
        tracing.REQUEST_MODEL: request.get("model"),
        "gen_ai.request.temperature": request.get("temperature"),
        "gen_ai.request.max_tokens": request.get("max_tokens"),
        "gen_ai.request.top_p": request.get("top_p"),
        "holodeck.chat.streamed": streamed,
        "holodeck.chat.tools_offered": len(request.get("tools") or []),
    }


def record_response(span: tracing.Span, response: Any) -> None:
    """Usage, id and model of an OpenAI chat completion (a whole, not streamed, answer)."""
    usage = getattr(response, "usage", None)
    span.set_all(
        {
            tracing.RESPONSE_ID: getattr(response, "id", None),
            tracing.RESPONSE_MODEL: getattr(response, "model", None),
            tracing.INPUT_TOKENS: getattr(usage, "prompt_tokens", None),
            tracing.OUTPUT_TOKENS: getattr(usage, "completion_tokens", None),
        }
    )


def record_answer(
    span: tracing.Span, text: str, requested: list[tuple[str, str, str]], finish: str
) -> None:
    """What one model request gave back: finish reason, tool calls asked, and the answer."""
    span.set(tracing.FINISH_REASONS, [finish] if finish else None)
    span.set("holodeck.chat.tool_calls", len(requested))
    span.content(tracing.OUTPUT_MESSAGES, [{"role": "assistant", "content": text}])
