"""Load agent.yaml and the two global config files into one validated ``Project``.

Every mistake becomes one ``ConfigError`` line: ``file:line: field.path: what is wrong (how
to fix)``. Line numbers come from the YAML node tree, so they point at the offending value.
Reading and validating each file is ``config_file``'s; this module adds what agent.yaml
must also satisfy (no literal API key, files that exist, embedding models its provider
offers) and resolves each knowledge base's database and embedding model.
"""

from __future__ import annotations

import logging
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from holodeck import tracing
from holodeck.config.api_keys import refuse_literal_api_key
from holodeck.config.compat import adapt_agent, adapt_global
from holodeck.config.config_file import _read_yaml, _substitute_and_validate
from holodeck.config.envsubst import environment_for
from holodeck.config.files import file_label, home_dir
from holodeck.config.models import AgentConfig, GlobalConfig
from holodeck.config.response_format import load_response_schema
from holodeck.config.tool_configs import FunctionToolConfig, McpToolConfig
from holodeck.config.vectorstore_tool import (
    OPENAI_EMBEDDING_MODELS,
    DatabaseConfig,
    VectorStoreToolConfig,
)
from holodeck.config.yaml_lines import Loc, dotted, line_of
from holodeck.errors import ConfigError

#: Names of the embedded local model, accepted whatever the LLM provider.
LOCAL_MODEL_NAMES = (
    "all-MiniLM-L6-v2",
    "sentence-transformers/all-MiniLM-L6-v2",
    "all-MiniLM-L6-v2-onnx-int8",
)
DEFAULT_LOCAL_MODEL = "all-MiniLM-L6-v2"
DEFAULT_OPENAI_MODEL = "text-embedding-3-small"
PROJECT_CONFIG = Path(".holodeck") / "config.yaml"
log = logging.getLogger("holodeck.config")


@dataclass
class ResolvedTool:
    """A vectorstore tool with its database and embedding model decided."""

    config: VectorStoreToolConfig
    source: Path
    database: DatabaseConfig | None
    database_origin: str
    embedding_model: str

    @property
    def name(self) -> str:
        """The tool's name, also its library id."""
        return self.config.name


@dataclass
class Project:
    """Everything one agent file and its layered config say."""

    agent_path: Path
    root: Path
    agent: AgentConfig
    tools: list[ResolvedTool] = field(default_factory=list)  # the knowledge bases
    #: What loading ignored (one line each), already logged as warnings.
    warnings: list[str] = field(default_factory=list)
    #: agent.yaml's node tree, so errors found later (importing a function tool, starting
    #: an MCP server) name the line of the value too.
    node: yaml.Node | None = None
    #: The JSON schema of ``response_format`` (read from its file), or None.
    response_schema: dict[str, Any] | None = None

    @property
    def tenant_id(self) -> str:
        """Tenant of this agent's knowledge bases."""
        return self.agent.tenant_id

    def display(self, path: Path) -> str:
        """A path as a user should read it: relative to the project root when inside it."""
        try:
            return path.resolve().relative_to(self.root).as_posix()
        except ValueError:
            return str(path)

    def where(self, tool: str, *keys: str) -> str:
        """``agent.yaml:13: tools[0].function``: where a tool's key is written."""
        index = next(i for i, t in enumerate(self.agent.tools) if t.name == tool)
        loc: Loc = ("tools", index, *keys)
        return f"{file_label(self.agent_path)}:{line_of(self.node, loc)}: {dotted(loc)}"

    def tool(self, name: str) -> ResolvedTool:
        """The tool called ``name``, or a ConfigError listing the valid names."""
        for tool in self.tools:
            if tool.name == name:
                return tool
        valid = ", ".join(t.name for t in self.tools) or "none"
        raise ConfigError(
            f"{self.display(self.agent_path)}: no tool named {name!r} (tools: {valid})"
        )


def load_project(agent_path: str | Path, calls_model: bool = False) -> Project:
    """Read, substitute, validate and resolve an agent file and the global configs.

    An ``api_key`` whose variable is unset is raised by its model when called; a command
    that never calls it (``calls_model`` False) warns once that others will need it.
    """
    path = Path(agent_path).expanduser()
    if not path.is_file():
        hint = " (check the path, or create one with `holodeck init`)"
        raise ConfigError(f"{path}: agent file not found{hint}")
    path = path.resolve()
    root = path.parent
    env = environment_for(root)
    label = file_label(path)
    own = root / PROJECT_CONFIG.parent
    if own.exists() and not own.is_dir():
        raise ConfigError(
            f"{file_label(own)}: a file, not a folder; holodeck keeps the settings, id and local "
            f"index of the project of {label} in {PROJECT_CONFIG.parent}/; rename or remove "
            "the file"
        )
    data, node = _read_yaml(path, label)
    if data is None:
        raise ConfigError(f"{label}:1: the file is empty; it needs at least 'name:'")
    if not isinstance(data, dict):
        raise ConfigError(f"{label}:1: the top level must be a mapping of keys like 'name:'")
    adapted = adapt_agent(data, node, label)
    _warn(adapted.warnings)
    data = adapted.data
    refuse_literal_api_key(data, node, label)
    agent, unset_keys = _substitute_and_validate(AgentConfig, data, env, node, label)
    warnings = list(adapted.warnings)
    _check_embedding_models(agent, node, label, warnings)
    _check_files(agent, root, node, label)
    if not calls_model:
        warnings += [key.warning for key in unset_keys]
        _warn([key.warning for key in unset_keys])
    response_schema = load_response_schema(agent.response_format, root, node, label)
    project_db = _global_db(
        root / PROJECT_CONFIG, env, f"project: {PROJECT_CONFIG.as_posix()}", warnings
    )
    user_db = _global_db(
        home_dir() / PROJECT_CONFIG, env, "user: ~/.holodeck/config.yaml", warnings
    )
    tools = [
        _resolve_tool(t, root, agent, project_db, user_db)
        for t in agent.tools_of(VectorStoreToolConfig)
    ]
    if agent.observability is not None:
        settings = agent.observability.settings(agent.name)
        if settings is not None:
            tracing.configure(settings)
    return Project(path, root, agent, tools, warnings, node, response_schema)


def _warn(lines: list[str]) -> None:
    for line in lines:
        log.warning("%s", line)


def _check_files(agent: AgentConfig, root: Path, node: yaml.Node | None, label: str) -> None:
    """Files agent.yaml names must exist: instructions, function tools' files, env files."""
    named: list[tuple[str | None, Loc]] = []
    if agent.instructions:
        named.append((agent.instructions.file, ("instructions", "file")))
    for i, tool in enumerate(agent.tools):
        if isinstance(tool, FunctionToolConfig):
            named.append((tool.file, ("tools", i, "file")))
        elif isinstance(tool, McpToolConfig):
            named.append((tool.env_file, ("tools", i, "env_file")))
    for name, loc in named:
        if name is not None and not (root / name).is_file():
            raise ConfigError(
                f"{label}:{line_of(node, loc)}: {dotted(loc)}: {name} not found "
                f"(path relative to {label})"
            )


def _resolve_tool(
    tool: VectorStoreToolConfig,
    root: Path,
    agent: AgentConfig,
    project_db: tuple[DatabaseConfig, str] | None,
    user_db: tuple[DatabaseConfig, str] | None,
) -> ResolvedTool:
    """Apply the tool contract's precedence (docs/contract.md): tool database -> project ->
    user -> embedded default."""
    if tool.database is not None:
        database, origin = tool.database, "tool"
    elif project_db is not None:
        database, origin = project_db
    elif user_db is not None:
        database, origin = user_db
    else:
        database, origin = None, "default"
    return ResolvedTool(
        config=tool,
        # as configured, a symlinked folder not resolved: it names the library's source
        # (its owner record), and discovery reads only inside what it resolves to
        source=_source_folder(tool, root),
        database=database,
        database_origin=origin,
        embedding_model=tool.embedding_model or default_embedding_model(agent),
    )


#: Where a tool's git repository is cloned: ``.holodeck/sources/<tool>/repo``.
SOURCES_DIR = Path(".holodeck") / "sources"


def _source_folder(tool: VectorStoreToolConfig, root: Path) -> Path:
    """The folder (or file) ingest reads: the configured path, or a git source's checkout
    (its ``path:`` inside it)."""
    if tool.web is not None or tool.bucket is not None:
        return root / SOURCES_DIR / tool.name / "files"
    if tool.git is None:
        assert isinstance(tool.source, str)
        return Path(os.path.normpath(root / tool.source))
    checkout = root / SOURCES_DIR / tool.name / "repo"
    return checkout / tool.git.path if tool.git.path else checkout


def default_embedding_model(agent: AgentConfig) -> str:
    """The provider's default embedding model: OpenAI's for OpenAI, else local.

    An ``embedding_provider`` (the original's, for an LLM without embeddings) names its own.
    """
    if agent.embedding_provider is not None:
        return agent.embedding_provider.name
    if agent.model and agent.model.provider in ("openai", "azure_openai"):
        return DEFAULT_OPENAI_MODEL
    return DEFAULT_LOCAL_MODEL


def _check_embedding_models(
    agent: AgentConfig, node: yaml.Node | None, label: str, warnings: list[str]
) -> None:
    """Refuse an embedding model that the configured provider does not offer.

    A Voyage AI model with provider anthropic (what the original HoloDeck's init writes for
    it) is replaced by the local model, with a warning: holodeck does not call Voyage AI.
    """
    embeds = agent.embedding_model_config
    provider = embeds.provider if embeds else None
    for i, tool in enumerate(agent.tools):
        if not isinstance(tool, VectorStoreToolConfig):
            continue
        name = tool.embedding_model
        if name is None or name in LOCAL_MODEL_NAMES or _looks_like_path(name):
            continue
        if provider == "anthropic" and name.startswith("voyage-"):
            line = line_of(node, ("tools", i, "embedding_model"))
            warnings.append(
                f"{label}:{line}: tools[{i}].embedding_model: {name} is Voyage AI's, which "
                f"holodeck does not call; embedded with the local {DEFAULT_LOCAL_MODEL} instead "
                "(embedding_provider: names a remote provider)"
            )
            log.warning("%s", warnings[-1])
            tool.embedding_model = None
            continue
        if provider in ("azure_openai", "ollama"):
            continue  # deployment names and pulled models are the user's own
        if provider == "openai" and name in OPENAI_EMBEDDING_MODELS:
            continue
        line = line_of(node, ("tools", i, "embedding_model"))
        offered = (
            [*OPENAI_EMBEDDING_MODELS, DEFAULT_LOCAL_MODEL]
            if provider == "openai"
            else [DEFAULT_LOCAL_MODEL, "a folder with model.onnx and tokenizer.json"]
        )
        why = f"provider {provider}" if provider else "the local provider (no model: configured)"
        raise ConfigError(
            f"{label}:{line}: tools[{i}].embedding_model: {name!r} is not offered by {why}; "
            f"valid: {', '.join(offered)}"
        )


def _looks_like_path(name: str) -> bool:
    return name.startswith((".", "/", "~")) or (
        os.sep in name and not name.startswith("sentence-transformers/")
    )


def _global_db(
    path: Path, env: dict[str, str], origin: str, warnings: list[str]
) -> tuple[DatabaseConfig, str] | None:
    """The ``vectorstore:`` section of a global config file, if the file has one.

    What the original HoloDeck keeps in that file and holodeck ignores is added to
    ``warnings`` (and logged).
    """
    if not path.is_file():
        return None
    label = file_label(path)
    data, node = _read_yaml(path, label)
    if data is None:
        return None
    if not isinstance(data, dict):
        raise ConfigError(f"{label}:1: the top level must be a mapping with 'vectorstore:'")
    adapted = adapt_global(data, node, label)
    _warn(adapted.warnings)
    warnings += adapted.warnings
    config, _ = _substitute_and_validate(GlobalConfig, adapted.data, env, node, label)
    return (config.vectorstore, origin) if config.vectorstore else None
