"""The shape of agent.yaml and config.yaml, validated by pydantic (unknown keys refused).

Field names and defaults follow the VectorStore Tool Interface Contract (docs/contract.md)
exactly; what it leaves open (chunking, test cases, the LLM) is added with plain names. The
sections have their own modules: knowledge bases (``vectorstore_tool``), the other tools
(``tool_configs``), test cases (``cases``), evaluations (``evaluations``), models (``llm``).
"""

from __future__ import annotations

from typing import Annotated, Any, TypeVar

from pydantic import Field, field_validator, model_validator

from holodeck.config.base import MaybeFloat, ShortForm, StrictModel, require_unique_names
from holodeck.config.cases import TestCase, unique_case_names
from holodeck.config.evaluations import EvaluationConfig
from holodeck.config.llm import ModelConfig
from holodeck.config.observability import ObservabilityConfig
from holodeck.config.tool_configs import FunctionToolConfig, McpToolConfig
from holodeck.config.vectorstore_tool import DatabaseConfig, VectorStoreToolConfig


class GlobalConfig(StrictModel):
    """``.holodeck/config.yaml`` (project) or ``~/.holodeck/config.yaml`` (user)."""

    vectorstore: DatabaseConfig | None = None


class Instructions(ShortForm):
    """The system prompt: exactly one of ``inline`` or ``file`` (relative to agent.yaml).

    A plain string (the original HoloDeck's short form) is ``inline``.
    """

    _short_key = "inline"
    inline: str | None = None
    file: str | None = None

    @model_validator(mode="after")
    def _exactly_one(self) -> Instructions:
        if (self.inline is None) == (self.file is None):
            raise ValueError("give exactly one of 'inline' or 'file'")
        return self


#: A tool in agent.yaml, told apart by its ``type``.
AgentTool = Annotated[
    VectorStoreToolConfig | FunctionToolConfig | McpToolConfig, Field(discriminator="type")
]
AnyToolConfig = TypeVar("AnyToolConfig", VectorStoreToolConfig, FunctionToolConfig, McpToolConfig)


class AgentConfig(StrictModel):
    """agent.yaml."""

    name: str = Field(min_length=1, description="Agent name; also the tenant of its knowledge.")
    description: str | None = None
    tenant: str | None = Field(
        default=None,
        min_length=1,
        description=(
            "Defaults to name. Set explicitly, it takes over a library another project fills."
        ),
    )
    author: str | None = None
    model: ModelConfig | None = None
    embedding_provider: ModelConfig | None = Field(
        default=None,
        description=(
            "Where remote embedding models are reached (openai, azure_openai, ollama) when it "
            "is not model: (e.g. an anthropic model); its name is the tools' default model."
        ),
    )
    instructions: Instructions | None = None
    response_format: dict[str, Any] | str | None = Field(
        default=None,
        description=(
            "JSON schema the answer must fit (inline, or a .json file relative to agent.yaml): "
            "requested from the model, and checked by holodeck test."
        ),
    )
    tools: list[AgentTool] = Field(default_factory=list)
    test_cases: list[TestCase] | None = None
    test_cases_file: str | None = Field(
        default=None, description="YAML file of more test cases, relative to agent.yaml."
    )
    ground_truth_threshold: MaybeFloat = Field(
        default=None,
        ge=0.0,
        le=1.0,
        description="Check every ground_truth by similarity, at least this (a case's own "
        "wins); without one, a ground_truth is only the reference its metrics read.",
    )
    evaluations: EvaluationConfig | None = Field(
        default=None, description="Metrics that judge every test case's answer, and the judge."
    )
    observability: ObservabilityConfig | None = Field(
        default=None, description="OpenTelemetry traces of every command (off by default)."
    )

    @field_validator("tools")
    @classmethod
    def _unique_tool_names(cls, tools: list[AgentTool]) -> list[AgentTool]:
        require_unique_names("tool", [t.name for t in tools])
        return tools

    @field_validator("test_cases")
    @classmethod
    def _unique_case_names(cls, cases: list[TestCase] | None) -> list[TestCase] | None:
        unique_case_names(cases or [])
        return cases

    @field_validator("embedding_provider")
    @classmethod
    def _embeds(cls, value: ModelConfig | None) -> ModelConfig | None:
        if value is not None and value.provider == "anthropic":
            raise ValueError(
                "provider anthropic offers no embeddings; use openai, azure_openai or ollama"
            )
        return value

    def tools_of(self, kind: type[AnyToolConfig]) -> list[AnyToolConfig]:
        """The tools of one type (``VectorStoreToolConfig``, ``FunctionToolConfig``...)."""
        return [t for t in self.tools if isinstance(t, kind)]

    @property
    def embedding_model_config(self) -> ModelConfig | None:
        """The provider remote embeddings go to: ``embedding_provider``, else ``model``."""
        return self.embedding_provider or self.model

    @property
    def tenant_id(self) -> str:
        """Tenant of this agent's knowledge bases in a shared index."""
        return self.tenant or self.name
