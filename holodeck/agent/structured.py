"""Structured output: the answer requested in the shape of ``response_format``'s JSON schema,
with each provider's own mechanism, and checked against it.

- OpenAI-compatible servers (openai, azure_openai, and ollama, whose ``/v1`` API takes the
  same parameter): ``response_format`` of type ``json_schema``, strict only when the schema
  already meets strict mode's rules (every property required, no others), never rewritten.
- anthropic: a tool whose input schema is the schema, which the model is told to answer
  with, and made to call (``tool_choice``) when it answers in text instead; its input is
  the answer.

``violation`` validates an answer with ``jsonschema`` and names the path of the bad field.
"""

from __future__ import annotations

import json
import re
from typing import Any

#: The tool provider anthropic answers through.
ANSWER_TOOL = "respond"
#: The schema's name in an OpenAI ``response_format``.
SCHEMA_NAME = "response"
#: Added to the system prompt of an anthropic agent with structured output.
ANSWER_INSTRUCTION = (
    f"When you have the answer, give it by calling the {ANSWER_TOOL} tool, whose input is "
    "the answer in the required shape; do not answer in plain text."
)


def openai_response_format(schema: dict[str, Any]) -> dict[str, Any]:
    """The ``response_format`` parameter of a chat completions request."""
    return {
        "type": "json_schema",
        "json_schema": {"name": SCHEMA_NAME, "schema": schema, "strict": _strict(schema)},
    }


def _strict(schema: dict[str, Any]) -> bool:
    """Whether the schema already meets strict mode's rules at the top level."""
    properties = schema.get("properties")
    return (
        schema.get("type") == "object"
        and schema.get("additionalProperties") is False
        and isinstance(properties, dict)
        and set(properties) == set(schema.get("required") or [])
    )


def answer_tool(schema: dict[str, Any]) -> dict[str, Any]:
    """The tool (chat completions shape) whose input is the answer, for provider anthropic."""
    return {
        "type": "function",
        "function": {
            "name": ANSWER_TOOL,
            "description": "Give the final answer, in the required shape.",
            "parameters": schema,
        },
    }


def formatted(answer: str) -> str:
    """A JSON answer indented for reading (the answer as it is when it is not JSON)."""
    try:
        return json.dumps(json.loads(answer), indent=2, ensure_ascii=False)
    except (json.JSONDecodeError, TypeError):
        return answer


def violation(answer: str, schema: dict[str, Any]) -> str | None:
    """None when ``answer`` is JSON that fits ``schema``; else what is wrong, and where."""
    import jsonschema

    text = without_fence(answer)
    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        return f"the answer is not JSON ({exc.msg} at line {exc.lineno} column {exc.colno})"
    validator = jsonschema.validators.validator_for(schema)(schema)
    error = jsonschema.exceptions.best_match(validator.iter_errors(value))
    if error is None:
        return None
    return f"{field_path(list(error.absolute_path))}: {error.message}"


def field_path(parts: list[str | int]) -> str:
    """``$.sources[0].relevance_score``: where in the answer a value is."""
    path = "$"
    for part in parts:
        path += f"[{part}]" if isinstance(part, int) else f".{part}"
    return path


def without_fence(text: str) -> str:
    """JSON without a Markdown code fence around it (how LLMs often send it)."""
    stripped = text.strip()
    match = re.fullmatch(r"```[A-Za-z]*\s*\n(.*)\n\s*```", stripped, re.DOTALL)
    return match.group(1) if match else stripped
