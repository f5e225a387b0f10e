"""The ``model:`` section: the LLM behind chat and test, also the judge's and the provider
remote embeddings go to (``embedding_provider``)."""

from __future__ import annotations

from typing import Literal

from pydantic import Field, PrivateAttr, ValidationInfo, field_validator

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
    #: Why ``api_key`` is None although the file names a variable (it is unset), as the
    #: error line to raise when the model is called; None when the key is set or not named.
    _unset_key: str | None = PrivateAttr(default=None)

    def key_unset(self, error: str) -> None:
        """Record that the variable ``api_key`` names is unset: ``error`` says which and how."""
        self._unset_key = error

    @property
    def unset_key_error(self) -> str | None:
        """The error line for an ``api_key`` whose variable is unset, else None."""
        return self._unset_key

    @field_validator("temperature")
    @classmethod
    def _anthropic_temperature(cls, value: float | None, info: ValidationInfo) -> float | None:
        """Anthropic's API takes 0-1: refused here, not left to fail (or be clipped) there."""
        if info.data.get("provider") == "anthropic" and value is not None and value > 1:
            raise ValueError("above 1, the most provider anthropic takes")
        return value
