"""The agent.yaml shape of a knowledge base (``type: vectorstore``) and of the database it
is stored in, which a project's or the user's config.yaml may also give.

Field names and defaults follow the VectorStore Tool Interface Contract (docs/contract.md)
exactly; what it leaves open (chunking among it) is added with plain names.
"""

from __future__ import annotations

import re
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, Field, ValidationInfo, field_validator, model_validator
from pydantic import ValidationError as PydanticValidationError

from holodeck.config.api_keys import ONE_VARIABLE
from holodeck.config.base import Int, MaybeFloat, StrictModel
from holodeck.config.file_limits import FileLimits
from holodeck.config.file_types import ALL_FILE_TYPES, DEFAULT_FILE_TYPES, ignore_spec
from holodeck.config.tool_configs import ToolName
from holodeck.redact import remember_connection_string, remember_secret

#: Embedding models the OpenAI API offers: on that provider a tool names one of these or a
#: local model.
OPENAI_EMBEDDING_MODELS = (
    "text-embedding-3-small",
    "text-embedding-3-large",
    "text-embedding-ada-002",
)

#: An index name prefixes every Redis key of the index (and names PostgreSQL's tables), so
#: it stays a plain word.
_INDEX_NAME_RE = re.compile(r"^[A-Za-z0-9_.-]+$")
#: PostgreSQL cuts identifiers at 63 bytes; the longest table name adds ``_chunks_vector``.
POSTGRES_INDEX_NAME_MAX = 48
#: The URL schemes each server provider takes.
URL_SCHEMES = {
    "redis": ("redis://", "rediss://"),
    "postgres": ("postgresql://", "postgres://"),
}


def literal_password(url: str) -> bool:
    """Whether a connection string as written in the file (before ``${VAR}`` substitution)
    holds a password that is not one ``${VAR}``: in the user info or a ``password=``."""
    rest = re.sub(r"^[A-Za-z][A-Za-z0-9+.\-]*:/*", "", url.strip())
    found = []
    if "@" in rest:
        userinfo = rest.rsplit("@", 1)[0]
        if ":" in userinfo:
            found.append(userinfo.split(":", 1)[1])
    found += re.findall(r"[?&]password=([^&#]*)", url, re.IGNORECASE)
    return any(value and not ONE_VARIABLE.fullmatch(value) for value in found)


class DatabaseConfig(StrictModel):
    """Where a knowledge base is stored (the tool contract's ``DatabaseConfig``)."""

    provider: Literal["redis", "postgres"] = Field(
        description="redis (Redis 8 / Redis Stack) or postgres (PostgreSQL with pgvector)."
    )
    connection_string: str = Field(
        description="redis:// or rediss:// (TLS); postgresql:// or postgres:// (sslmode and "
        "libpq's other options as URL parameters). Use ${VAR} for passwords."
    )
    index_name: str = Field(default="holodeck_vectors", min_length=1)
    vector_algorithm: Literal["HNSW", "FLAT"] = "HNSW"
    distance_metric: Literal["COSINE", "L2", "IP"] = "COSINE"

    @field_validator("connection_string")
    @classmethod
    def _provider_url(cls, value: str, info: ValidationInfo) -> str:
        """The URL's scheme is the provider's (a provider that failed is reported alone)."""
        provider = info.data.get("provider")
        schemes = URL_SCHEMES.get(provider or "", ())
        if schemes and not value.startswith(schemes):
            kind = "a Redis" if provider == "redis" else "a PostgreSQL"
            raise ValueError(f"must be {kind} URL starting with {' or '.join(schemes)}")
        return value

    @field_validator("index_name")
    @classmethod
    def _index_name(cls, value: str, info: ValidationInfo) -> str:
        if not _INDEX_NAME_RE.match(value):
            raise ValueError(
                "may only hold letters, digits, '_', '.' and '-' (it prefixes the Redis keys "
                "or names the PostgreSQL tables)"
            )
        if info.data.get("provider") == "postgres" and len(value) > POSTGRES_INDEX_NAME_MAX:
            raise ValueError(
                f"may be at most {POSTGRES_INDEX_NAME_MAX} characters for provider postgres "
                "(it names tables, and PostgreSQL cuts names at 63 bytes)"
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


#: A git source's URL may not be one of these: they are fetched another way (or not at all).
_NOT_GIT = ("s3://", "gs://", "az://")


class PolledSource(StrictModel):
    """A source that lives elsewhere (git, web files, S3): its copy is brought up to date
    before an ingest, and every ``poll`` seconds under ``ingest --watch`` and ``serve``."""

    poll: Int = Field(
        default=60,
        ge=1,
        description="Seconds between fetches of the source under `ingest --watch` and `serve`.",
    )


class GitSource(PolledSource):
    """A git repository as a knowledge base's source: cloned under ``.holodeck/sources/``
    and fetched before each ingest (``ingest.git_source``)."""

    git: str = Field(
        min_length=1,
        description="Any URL git accepts: https://, ssh://, git@host:path, file://, a local "
        "path (relative to agent.yaml). Credentials come from git's own helpers.",
    )
    ref: str | None = Field(
        default=None,
        min_length=1,
        description="Branch, tag or commit to index (default: the remote's HEAD).",
    )
    path: str | None = Field(
        default=None,
        min_length=1,
        description="Folder inside the repository to index (default: all of it).",
    )

    @field_validator("git")
    @classmethod
    def _url(cls, value: str) -> str:
        """Remember the URL's credential for redaction; refuse non-git schemes."""
        value = value.strip()
        remember_connection_string(value)
        head = value.split("://", 1)
        if len(head) == 2 and "@" in head[1].split("/", 1)[0]:
            userinfo = head[1].split("/", 1)[0].rsplit("@", 1)[0]
            if ":" not in userinfo and head[0] in ("http", "https"):
                remember_secret(userinfo)  # a token given as the user (https://TOKEN@host)
        if value.startswith(_NOT_GIT):
            raise ValueError("not a git URL; give an https://, ssh://, file:// URL or a path")
        return value

    @field_validator("path")
    @classmethod
    def _inside(cls, value: str | None) -> str | None:
        """A relative folder of the repository, never one outside it."""
        if value is None:
            return None
        clean = value.strip().strip("/")
        if not clean or clean == ".":
            return None
        if value.strip().startswith("/") or ".." in clean.split("/"):
            raise ValueError("must be a folder inside the repository (relative, no '..')")
        return clean


class UrlSource(PolledSource):
    """Files on web servers as a knowledge base's source: each fetched into
    ``.holodeck/sources/<tool>/files`` before an ingest, again only when it changed (ETag,
    Last-Modified: ``ingest.url_source``)."""

    urls: list[str] = Field(
        min_length=1,
        description="http:// or https:// URLs of single files (no crawling, no sitemaps).",
    )

    @field_validator("urls")
    @classmethod
    def _web(cls, value: list[str]) -> list[str]:
        """Every URL is http(s) and names a file; its credential is remembered for redaction."""
        for url in value:
            remember_connection_string(url)
            if not url.startswith(("https://", "http://")):
                raise ValueError(f"{url}: not an http:// or https:// URL")
        return value


class S3Source(PolledSource):
    """Objects under an S3 prefix as a knowledge base's source: each fetched into
    ``.holodeck/sources/<tool>/files`` before an ingest, again only when its ETag changed
    (``ingest.s3_source``). Credentials, region and endpoint come from the standard AWS
    chain (environment, ``~/.aws``, an instance role)."""

    s3: str = Field(description="s3://bucket or s3://bucket/prefix/")

    @field_validator("s3")
    @classmethod
    def _bucket(cls, value: str) -> str:
        if not value.startswith("s3://") or not value[5:].split("/", 1)[0]:
            raise ValueError("must be s3://bucket or s3://bucket/prefix/")
        return value


class VectorStoreToolConfig(StrictModel):
    """A knowledge base: a folder (or file) of documents the agent can search."""

    type: Literal["vectorstore"]
    name: ToolName = Field(description="Tool identifier: letters, digits and underscores.")
    description: str | None = None
    source: str | GitSource | UrlSource | S3Source = Field(
        description="File or folder, relative to agent.yaml; or a git repository "
        "({git: URL, ref: branch, path: folder}); or files on the web ({urls: [URL, ...]}); "
        "or objects in S3 ({s3: s3://bucket/prefix/})."
    )
    embedding_model: str | None = Field(
        default=None, description="Defaults to the provider's default (local: all-MiniLM-L6-v2)."
    )
    database: DatabaseConfig | None = None
    top_k: Int = Field(default=5, ge=1, le=100)
    min_similarity_score: MaybeFloat = Field(default=None, ge=0.0, le=1.0)
    chunk_size: Int = Field(default=512, ge=16, description="Tokens per chunk.")
    chunk_overlap: Int = Field(default=50, ge=0, description="Tokens shared by neighbours.")
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
    limits: FileLimits = Field(
        default_factory=FileLimits,
        description="How big one file may be; a file past a limit is skipped with a warning "
        "naming it (defaults far beyond any real manual: zip bombs, data dumps).",
    )

    @field_validator("source", mode="before")
    @classmethod
    def _one_kind(cls, value: Any) -> Any:
        """A mapping is a git source (with ``urls:``, web files), validated here so an error
        names its key (not every kind a union would try); a path must not be empty."""
        if isinstance(value, dict):
            kind: type[StrictModel] = (
                UrlSource if "urls" in value else S3Source if "s3" in value else GitSource
            )
            try:
                return kind.model_validate(value)
            except PydanticValidationError as exc:
                err = exc.errors(include_url=False)[0]
                key = ".".join(str(p) for p in err["loc"])
                msg = str(err["msg"]).removeprefix("Value error, ")
                raise ValueError(f"{key}: {msg}" if key else msg) from None
        if isinstance(value, str) and not value.strip():
            raise ValueError("give a folder or file (relative to agent.yaml) or {git: URL}")
        return value

    @property
    def git(self) -> GitSource | None:
        """The git repository this tool indexes, or None for a folder or file."""
        return self.source if isinstance(self.source, GitSource) else None

    @property
    def remote(self) -> PolledSource | None:
        """The git repository, web files or S3 prefix this tool indexes, or None."""
        return self.source if isinstance(self.source, PolledSource) else None

    @property
    def web(self) -> UrlSource | None:
        """The web files this tool indexes, or None."""
        return self.source if isinstance(self.source, UrlSource) else None

    @property
    def bucket(self) -> S3Source | None:
        """The S3 prefix this tool indexes, or None."""
        return self.source if isinstance(self.source, S3Source) else None

    @model_validator(mode="after")
    def _overlap_below_size(self) -> VectorStoreToolConfig:
        if self.chunk_overlap >= self.chunk_size:
            raise ValueError(
                f"chunk_overlap ({self.chunk_overlap}) must be smaller than "
                f"chunk_size ({self.chunk_size})"
            )
        return self
