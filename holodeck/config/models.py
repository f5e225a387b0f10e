"""The shape of agent.yaml and config.yaml, validated by pydantic (unknown keys refused).

Field names and defaults follow the VectorStore Tool contract (seed 000) exactly; what the
contract leaves open (chunking, test cases, the LLM) is added with plain names.
"""

from __future__ import annotations

import re
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

#: Embedding models the OpenAI API offers (contract rule 4).
OPENAI_EMBEDDING_MODELS = (
    "text-embedding-3-small",
    "text-embedding-3-large",
    "text-embedding-ada-002",
)

_NAME_RE = re.compile(r"^[A-Za-z0-9_]+$")


class StrictModel(BaseModel):
    """Refuses unknown keys, so a typo is an error, not a silently ignored setting."""

    model_config = ConfigDict(extra="forbid")


class DatabaseConfig(StrictModel):
    """Where a knowledge base is stored (the contract's ``DatabaseConfig``)."""

    provider: Literal["redis"] = Field(description="Only Redis is supported.")
    connection_string: str = Field(
        description="Redis URL, redis:// or rediss:// (TLS). Use ${VAR} for passwords."
    )
    index_name: str = Field(default="holodeck_vectors", min_length=1)
    vector_algorithm: Literal["HNSW", "FLAT"] = "HNSW"
    distance_metric: Literal["COSINE", "L2", "IP"] = "COSINE"

    @field_validator("connection_string")
    @classmethod
    def _redis_url(cls, value: str) -> str:
        if not value.startswith(("redis://", "rediss://")):
            raise ValueError("must be a Redis URL starting with redis:// or rediss://")
        return value


class GlobalConfig(StrictModel):
    """``.holodeck/config.yaml`` (project) or ``~/.holodeck/config.yaml`` (user)."""

    vectorstore: DatabaseConfig | None = None


class VectorStoreToolConfig(StrictModel):
    """A knowledge base: a folder (or file) of documents the agent can search."""

    type: Literal["vectorstore"]
    name: str = Field(description="Tool identifier: letters, digits and underscores.")
    description: str | None = None
    source: str = Field(min_length=1, description="File or folder, relative to agent.yaml.")
    embedding_model: str | None = Field(
        default=None, description="Defaults to the provider's default (local: all-MiniLM-L6-v2)."
    )
    database: DatabaseConfig | None = None
    top_k: int = Field(default=5, ge=1, le=100)
    min_similarity_score: float | None = Field(default=None, ge=0.0, le=1.0)
    chunk_size: int = Field(default=512, ge=16, description="Tokens per chunk.")
    chunk_overlap: int = Field(default=50, ge=0, description="Tokens shared by neighbours.")

    @field_validator("name")
    @classmethod
    def _name(cls, value: str) -> str:
        if not _NAME_RE.match(value):
            raise ValueError("must be non-empty and use only letters, digits and underscores")
        return value

    @model_validator(mode="after")
    def _overlap_below_size(self) -> VectorStoreToolConfig:
        if self.chunk_overlap >= self.chunk_size:
            raise ValueError(
                f"chunk_overlap ({self.chunk_overlap}) must be smaller than "
                f"chunk_size ({self.chunk_size})"
            )
        return self


class ModelConfig(StrictModel):
    """The LLM behind chat and test; without it they run in retrieval-only mode."""

    provider: Literal["openai", "azure_openai", "ollama"]
    name: str = Field(min_length=1, description="Model (or Azure deployment) name.")
    endpoint: str | None = None
    api_key: str | None = Field(default=None, description="Only as ${VAR}: never a literal key.")
    api_version: str | None = None
    temperature: float | None = Field(default=None, ge=0.0, le=2.0)
    max_tokens: int | None = Field(default=None, ge=1)


class Instructions(StrictModel):
    """The system prompt: exactly one of ``inline`` or ``file`` (relative to agent.yaml)."""

    inline: str | None = None
    file: str | None = None

    @model_validator(mode="after")
    def _exactly_one(self) -> Instructions:
        if (self.inline is None) == (self.file is None):
            raise ValueError("give exactly one of 'inline' or 'file'")
        return self


class ExpectedTool(StrictModel):
    """A tool that must be called; ``args`` checks the query by substring or ``regex``."""

    name: str
    args: dict[str, str] | None = None
    regex: bool = False


class TestCase(StrictModel):
    """One check of the agent: an input and what must be retrieved or answered."""

    __test__ = False  # not a pytest class

    name: str = Field(min_length=1)
    input: str = Field(min_length=1)
    ground_truth: str | None = None
    ground_truth_threshold: float | None = Field(default=None, ge=0.0, le=1.0)
    expected_tools: list[str | ExpectedTool] | None = None
    expected_sources: list[str] | None = None
    expected_content: list[str] | None = None


class AgentConfig(StrictModel):
    """agent.yaml."""

    name: str = Field(min_length=1, description="Agent name; also the tenant of its knowledge.")
    description: str | None = None
    tenant: str | None = Field(default=None, min_length=1, description="Defaults to name.")
    model: ModelConfig | None = None
    instructions: Instructions | None = None
    tools: list[VectorStoreToolConfig] = Field(default_factory=list)
    test_cases: list[TestCase] | None = None
    test_cases_file: str | None = None

    @field_validator("tools")
    @classmethod
    def _unique_tool_names(cls, tools: list[VectorStoreToolConfig]) -> list[VectorStoreToolConfig]:
        seen: set[str] = set()
        for tool in tools:
            if tool.name in seen:
                raise ValueError(f"tool names must be unique: {tool.name!r} appears twice")
            seen.add(tool.name)
        return tools

    @property
    def tenant_id(self) -> str:
        """Tenant of this agent's knowledge bases in a shared index."""
        return self.tenant or self.name
