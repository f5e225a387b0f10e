"""The ``model:`` section: the LLM behind chat and test, also the judge's and the provider
remote embeddings go to (``embedding_provider``)."""

from __future__ import annotations

from typing import Literal

from pydantic import Field, ValidationInfo, field_validator

from holodeck.config.base import MaybeFloat, MaybeInt, StrictModel


class ModelConfig(StrictModel):
    """The LLM behind chat and test; without it they run in retrieval-only mode."""

    provider: Literal["openai", "azure_openai", "ollama", "anthropic"]
    name: str = Field(min_length=1, description="Model (or Azure deployment) name.")
    endpoint: str | None = None
    api_key: str | None = Field(
        default=None, description="Exactly one ${VAR}, without a default: never a literal key."
    )
    api_version: str | None = None
    temperature: MaybeFloat = Field(default=None, ge=0.0, le=2.0)
    max_tokens: MaybeInt = Field(default=None, ge=1)
    top_p: MaybeFloat = Field(default=None, ge=0.0, le=1.0)

    @field_validator("temperature")
    @classmethod
    def _anthropic_temperature(cls, value: float | None, info: ValidationInfo) -> float | None:
        """Anthropic's API takes 0-1: refused here, not left to fail (or be clipped) there."""
        if info.data.get("provider") == "anthropic" and value is not None and value > 1:
            raise ValueError("above 1, the most provider anthropic takes")
        return value
