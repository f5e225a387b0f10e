"""The shape of agent.yaml and config.yaml, validated by pydantic (unknown keys refused).

Field names and defaults follow the VectorStore Tool contract (seed 000) exactly; what the
contract leaves open (chunking, test cases, the LLM) is added with plain names.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Annotated, Any, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, field_validator, model_validator

from holodeck.ingest.discover import ALL_FILE_TYPES, DEFAULT_FILE_TYPES, ignore_spec

if TYPE_CHECKING:
    from holodeck.config.evaluations import EvaluationConfig, Metric

#: Embedding models the OpenAI API offers (contract rule 4).
OPENAI_EMBEDDING_MODELS = (
    "text-embedding-3-small",
    "text-embedding-3-large",
    "text-embedding-ada-002",
)

_NAME_RE = re.compile(r"^[A-Za-z0-9_]+$")
#: An index name prefixes every Redis key of the index, so it stays a plain word.
_INDEX_NAME_RE = re.compile(r"^[A-Za-z0-9_.-]+$")


def require_unique_names(kind: str, names: list[str]) -> None:
    """Raise ValueError naming the first name that appears twice."""
    seen: set[str] = set()
    for name in names:
        if name in seen:
            raise ValueError(f"{kind} names must be unique: {name!r} appears twice")
        seen.add(name)


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

    @field_validator("index_name")
    @classmethod
    def _index_name(cls, value: str) -> str:
        if not _INDEX_NAME_RE.match(value):
            raise ValueError(
                "may only hold letters, digits, '_', '.' and '-' (it prefixes the Redis keys)"
            )
        return value


def _file_type(value: str) -> str:
    """``docx``, ``.DOCX`` and ``.docx`` all mean ``.docx``; anything unknown is refused."""
    ext = "." + value.strip().lower().lstrip(".")
    if ext not in ALL_FILE_TYPES:
        raise ValueError(f"not a file type holodeck reads; valid: {' '.join(ALL_FILE_TYPES)}")
    return ext


def _exclude_pattern(value: str) -> str:
    """A gitignore-style pattern, refused here when pathspec cannot compile it."""
    try:
        ignore_spec([value])
    except ValueError as exc:
        why = f" ({exc})" if str(exc) else ""
        raise ValueError(f"not a valid gitignore-style pattern{why}") from None
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
    file_types: list[Annotated[str, AfterValidator(_file_type)]] | None = Field(
        default=None,
        min_length=1,
        description=(
            f"Extensions to ingest; default {' '.join(DEFAULT_FILE_TYPES)}. "
            f"Valid: {' '.join(ALL_FILE_TYPES)}."
        ),
    )
    exclude: list[Annotated[str, AfterValidator(_exclude_pattern)]] = Field(
        default_factory=list,
        description=(
            "gitignore-style patterns (relative to source) of files and folders to leave out, "
            "added to those of source/.holodeckignore."
        ),
    )
    search_mode: Literal["hybrid", "semantic", "keyword"] = Field(
        default="hybrid",
        description="hybrid: keyword (BM25) and semantic fused; semantic: the embedding model "
        "alone; keyword: BM25 alone.",
    )

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
    api_key: str | None = Field(
        default=None, description="Exactly one ${VAR}, without a default: never a literal key."
    )
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


#: Similarity a ground_truth needs when neither the case nor agent.yaml sets a threshold.
DEFAULT_GROUND_TRUTH_THRESHOLD = 0.7


#: Seconds one ``regex`` check may run: a pattern that backtracks catastrophically
#: (``(a|aa)+$``) is stopped instead of hanging a CI job.
REGEX_SECONDS = 2.0


class RegexTimeout(RuntimeError):
    """A test case's regex ran past ``REGEX_SECONDS``: the case errors, naming it."""


class ArgMatch(StrictModel):
    """How one argument of a tool call is checked: a substring, or a regular expression.

    Written as a plain string (``query: retry``, a case-insensitive substring) or as
    ``{regex: "..."}`` (a search with Python's ``re`` syntax, run by the ``regex`` library
    under a time limit; add ``(?i)`` to ignore case).
    """

    contains: str | None = Field(default=None, min_length=1)
    regex: str | None = Field(default=None, min_length=1)

    @model_validator(mode="before")
    @classmethod
    def _plain_string(cls, value: Any) -> Any:
        return {"contains": value} if isinstance(value, str) else value

    @classmethod
    def __get_pydantic_json_schema__(cls, core_schema: Any, handler: Any) -> Any:
        """Editors must accept the plain-substring form too."""
        return {"anyOf": [{"type": "string"}, handler(core_schema)]}

    @field_validator("regex")
    @classmethod
    def _compiles(cls, value: str | None) -> str | None:
        if value is not None:
            import regex  # the engine that runs it checks it (imported when a case has one)

            try:
                regex.compile(value)
            except regex.error as exc:
                raise ValueError(f"not a valid regular expression: {exc}") from None
        return value

    @model_validator(mode="after")
    def _exactly_one(self) -> ArgMatch:
        if (self.contains is None) == (self.regex is None):
            raise ValueError("give a substring, or exactly one of 'contains' or 'regex'")
        return self

    def matches(self, value: Any) -> bool:
        """Whether an argument's value passes this check (non-strings never do)."""
        if not isinstance(value, str):
            return False
        if self.regex is not None:
            import regex

            try:  # a time limit, and the GIL released: Ctrl-C is never held up by a match
                found = regex.search(self.regex, value, timeout=REGEX_SECONDS, concurrent=True)
            except TimeoutError:
                raise RegexTimeout(
                    f"regex /{self.regex}/ took more than {REGEX_SECONDS:g} s on "
                    f"{value[:60]!r} and was stopped (it backtracks too much); simplify it"
                ) from None
            return found is not None
        assert self.contains is not None
        return self.contains.casefold() in value.casefold()

    def describe(self) -> str:
        """How the check reads in a failure reason."""
        if self.regex is not None:
            return f"matching /{self.regex}/"
        return f"containing {self.contains!r}"


class ExpectedTool(StrictModel):
    """A tool that must be called: a plain name, or ``{name, args}`` to check the arguments.

    ``args`` maps an argument (vectorstore tools take ``query``) to an ``ArgMatch``; one call
    of the tool must pass every check.
    """

    name: str = Field(min_length=1)
    args: dict[str, ArgMatch] | None = None

    @model_validator(mode="before")
    @classmethod
    def _plain_name(cls, value: Any) -> Any:
        return {"name": value} if isinstance(value, str) else value

    @classmethod
    def __get_pydantic_json_schema__(cls, core_schema: Any, handler: Any) -> Any:
        """Editors must accept the plain-name form too."""
        return {"anyOf": [{"type": "string"}, handler(core_schema)]}


class TestCase(StrictModel):
    """One check of the agent: an input and what must be retrieved or answered."""

    __test__ = False  # not a pytest class

    name: str = Field(min_length=1)
    input: str = Field(min_length=1)
    ground_truth: str | None = Field(
        default=None, min_length=1, description="The expected answer, compared by similarity."
    )
    ground_truth_threshold: float | None = Field(
        default=None, ge=0.0, le=1.0, description="Overrides the agent's ground_truth_threshold."
    )
    expected_tools: list[ExpectedTool] | None = None
    expected_sources: list[str] | None = Field(
        default=None, description="Files, relative to the project root or to a tool's source."
    )
    expected_content: list[str] | None = None
    evaluations: list[Metric] | None = Field(
        default=None,
        description="Metrics for this case: added to evaluations.metrics, or overriding the "
        "agent's metric of the same kind.",
    )
    retrieval_context: list[Annotated[str, Field(min_length=1)]] | None = Field(
        default=None,
        min_length=1,
        description="Passages the rag and geval metrics judge instead of what the tools returned.",
    )

    @property
    def checks_something(self) -> bool:
        """Whether the case has a check of its own (agent-level evaluations may judge it)."""
        return bool(
            self.ground_truth
            or self.expected_tools
            or self.expected_sources
            or self.expected_content
            or self.evaluations
        )

    @field_validator("evaluations")
    @classmethod
    def _unique_metrics(cls, metrics: list[Any] | None) -> list[Any] | None:
        from holodeck.config.evaluations import unique_metrics

        return unique_metrics(metrics) if metrics else metrics


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
    model: ModelConfig | None = None
    instructions: Instructions | None = None
    tools: list[VectorStoreToolConfig] = Field(default_factory=list)
    test_cases: list[TestCase] | None = None
    test_cases_file: str | None = Field(
        default=None, description="YAML file of more test cases, relative to agent.yaml."
    )
    ground_truth_threshold: float = Field(
        default=DEFAULT_GROUND_TRUTH_THRESHOLD,
        ge=0.0,
        le=1.0,
        description="Similarity a ground_truth needs, unless a test case sets its own.",
    )
    evaluations: EvaluationConfig | None = Field(
        default=None, description="Metrics that judge every test case's answer, and the judge."
    )

    @field_validator("tools")
    @classmethod
    def _unique_tool_names(cls, tools: list[VectorStoreToolConfig]) -> list[VectorStoreToolConfig]:
        require_unique_names("tool", [t.name for t in tools])
        return tools

    @field_validator("test_cases")
    @classmethod
    def _unique_case_names(cls, cases: list[TestCase] | None) -> list[TestCase] | None:
        require_unique_names("test case", [c.name for c in cases or []])
        return cases

    @property
    def tenant_id(self) -> str:
        """Tenant of this agent's knowledge bases in a shared index."""
        return self.tenant or self.name


# The evaluation models build on ModelConfig and StrictModel above: imported last, they
# complete TestCase and AgentConfig (see the end of evaluations.py).
from holodeck.config import evaluations as _evaluations  # noqa: E402, F401
