"""agent.yaml and config.yaml as the original HoloDeck writes them: what loads, what is ignored
with a warning, what is refused.

Runs on the parsed YAML before validation (and before ``${VAR}`` substitution, so a section
that is ignored never needs its variables). A key of the original that holodeck does not
implement is removed with one WARNING naming it and saying why it is ignored, except where
ignoring it would silently change what the agent does (give it a shell, drop a tool, change
its input): that is a ``ConfigError`` (exit 2) naming the key and what to use instead. Keys
neither project knows are left for validation to refuse, so a typo never passes.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from typing import Any

import yaml

from holodeck.config.vectorstore_tool import literal_password
from holodeck.config.yaml_lines import Loc, dotted, line_of
from holodeck.errors import ConfigError

_EVERY_TOOL = "every tool under tools: is offered to the model on every request"

#: Top-level sections of the original that holodeck ignores, and why.
IGNORED_SECTIONS = {
    "deployment": "holodeck builds and deploys no containers (holodeck serve gives the "
    "knowledge bases to MCP clients)",
    "execution": "holodeck test takes --parallel N on the command line and has its own timeouts",
    "tool_filtering": _EVERY_TOOL,
    "claude": "settings of the Claude Agent SDK, which holodeck does not run (provider "
    "anthropic is called through Anthropic's Messages API)",
}

#: Sections of the original's ~/.holodeck/config.yaml holodeck ignores, and why.
IGNORED_GLOBAL_SECTIONS = {
    "providers": "holodeck reads the LLM from each agent.yaml's model: section",
    "execution": IGNORED_SECTIONS["execution"],
    "deployment": IGNORED_SECTIONS["deployment"],
}

#: Tool types of the original that holodeck does not run, and what to use instead.
REFUSED_TOOL_TYPES = {
    "prompt": "write the template as a function tool (type: function) or in instructions:",
    "hierarchical_document": "use type: vectorstore over the same files (hybrid keyword and "
    "semantic search by default)",
    "skill": "describe the skill in instructions:, or expose it as a function or MCP tool",
    "hosted": "use an MCP server (type: mcp) for web search, file search or code execution",
}

#: Vectorstore keys of the original's structured-data and JSON modes, ignored.
_WHOLE_TEXT = (
    "holodeck indexes each file's whole text (CSV rows and JSON records included) and picks "
    "no fields"
)
IGNORED_VECTORSTORE_KEYS = {
    "vector_field": _WHOLE_TEXT,
    "meta_fields": _WHOLE_TEXT,
    "id_field": _WHOLE_TEXT,
    "field_separator": _WHOLE_TEXT,
    "delimiter": _WHOLE_TEXT,
    "record_path": _WHOLE_TEXT,
    "record_prefix": _WHOLE_TEXT,
    "meta_prefix": _WHOLE_TEXT,
    "embedding_dimensions": "the dimensions come from the embedding model",
}

#: Database providers of the original that are Redis, holodeck's own server store.
REDIS_PROVIDERS = ("redis", "redis-hashset", "redis-json")
#: The original's other database providers: ignored (a provider neither knows is refused).
OTHER_PROVIDERS = (
    "azure-ai-search",
    "qdrant",
    "weaviate",
    "chromadb",
    "faiss",
    "azure-cosmos-mongo",
    "azure-cosmos-nosql",
    "sql-server",
    "pinecone",
    "in-memory",
)
_OUR_DATABASE_KEYS = ("connection_string", "index_name", "vector_algorithm", "distance_metric")
_IN_THE_URL = "holodeck's PostgreSQL store reads it from connection_string"
#: Keys the original's postgres provider takes beside connection_string, and why they are
#: ignored (libpq reads all of them from the URL).
IGNORED_POSTGRES_KEYS = {
    "host": _IN_THE_URL,
    "port": _IN_THE_URL,
    "dbname": _IN_THE_URL,
    "user": _IN_THE_URL,
    "password": f"{_IN_THE_URL}, as ${{VAR}} (or libpq's PGPASSWORD)",
    "sslmode": f"{_IN_THE_URL} (?sslmode=require)",
    "db_schema": "holodeck's tables live in the connection's search_path: add "
    "?options=-csearch_path%3DSCHEMA to connection_string",
}


#: Keys of the original's ``observability:`` block that holodeck does not honour, and why.
_TRACES_ONLY = "holodeck exports traces only (-v logs every step)"
IGNORED_OBSERVABILITY_KEYS = {
    "metrics": _TRACES_ONLY,
    "logs": _TRACES_ONLY,
    "disable_provider_tracing": "holodeck runs no provider SDK with a trace upload of its own",
}
IGNORED_EXPORTERS = {
    "prometheus": "Prometheus serves metrics, and holodeck exports traces only",
    "azure_monitor": "no Azure Monitor exporter; send OTLP to a collector that forwards there",
}


def original_keys(loc: Loc) -> list[str]:
    """Keys of the original at ``loc`` that holodeck drops (for a typo's "did you mean")."""
    if not loc:
        return [*IGNORED_SECTIONS, *IGNORED_GLOBAL_SECTIONS, "vectorstores"]
    if loc[0] == "tools" and len(loc) == 3:  # ("tools", i, type)
        return [*IGNORED_VECTORSTORE_KEYS, "defer_loading", "server", "load_prompts"]
    return []


@dataclass
class Adapted:
    """The data holodeck validates, and the warnings to print for what it dropped."""

    data: Any
    warnings: list[str] = field(default_factory=list)


@dataclass
class _Pass:
    """One file's adaptation: where it is (for line numbers) and what it found."""

    label: str
    node: yaml.Node | None
    warnings: list[str] = field(default_factory=list)

    def where(self, loc: Loc) -> str:
        return f"{self.label}:{line_of(self.node, loc)}: {dotted(loc)}"

    def ignore(self, parent: dict[str, Any], key: str, loc: Loc, why: str) -> None:
        """Drop ``parent[key]`` with one warning naming it."""
        del parent[key]
        self.warnings.append(f"{self.where((*loc, key))}: ignored ({why})")

    def refuse(self, loc: Loc, what: str, instead: str) -> ConfigError:
        return ConfigError(f"{self.where(loc)}: {what}; {instead}")


def adapt_agent(data: dict[str, Any], node: yaml.Node | None, label: str) -> Adapted:
    """agent.yaml in the original's shapes made into holodeck's, or a ConfigError."""
    data = copy.deepcopy(data)
    run = _Pass(label, node)
    _top_level(data, run)
    _model(data, run)
    tools = data.get("tools")
    if isinstance(tools, list):
        for i, tool in enumerate(tools):
            if isinstance(tool, dict):
                _tool(tool, ("tools", i), run)
    adapt_cases(data.get("test_cases"), ("test_cases",), run)
    return Adapted(data, run.warnings)


def adapt_case_file(data: Any, node: yaml.Node | None, label: str) -> Adapted:
    """A ``test_cases_file`` (already in the ``{test_cases: [...]}`` form)."""
    data = copy.deepcopy(data)
    run = _Pass(label, node)
    if isinstance(data, dict):
        adapt_cases(data.get("test_cases"), ("test_cases",), run)
    return Adapted(data, run.warnings)


def adapt_global(data: dict[str, Any], node: yaml.Node | None, label: str) -> Adapted:
    """A ``config.yaml`` written for the original: its sections holodeck has no use for."""
    data = copy.deepcopy(data)
    run = _Pass(label, node)
    for key, why in IGNORED_GLOBAL_SECTIONS.items():
        if key in data:
            run.ignore(data, key, (), why)
    if "vectorstores" in data:
        run.ignore(
            data,
            "vectorstores",
            (),
            "named stores are not supported; holodeck reads one vectorstore: section "
            "(provider redis)",
        )
    if data.get("mcp_servers"):
        raise run.refuse(
            ("mcp_servers",),
            "MCP servers for every agent are not read from config.yaml",
            "list each under tools: of the agent.yaml that uses it (type: mcp, same keys)",
        )
    data.pop("mcp_servers", None)
    vectorstore = data.get("vectorstore")
    if isinstance(vectorstore, dict) and vectorstore.get("provider") == "postgres":
        postgres_section(vectorstore, ("vectorstore",), run)
    return Adapted(data, run.warnings)


# -- agent.yaml -------------------------------------------------------------------------


def _top_level(data: dict[str, Any], run: _Pass) -> None:
    claude = data.get("claude")
    if isinstance(claude, dict):
        _claude(claude, data, run)
    for key, why in IGNORED_SECTIONS.items():
        if key in data:
            run.ignore(data, key, (), why)
    observability = data.get("observability")
    if isinstance(observability, dict):
        _observability(observability, run)
    evaluations = data.get("evaluations")
    if isinstance(evaluations, dict) and isinstance(evaluations.get("metrics"), list):
        adapt_metrics(evaluations["metrics"], ("evaluations", "metrics"), run)
    if isinstance(evaluations, dict) and "optimizer" in evaluations:
        run.ignore(
            evaluations,
            "optimizer",
            ("evaluations",),
            "holodeck has no prompt optimizer; holodeck test runs the cases as written",
        )
        if not evaluations:
            del data["evaluations"]


def _observability(block: dict[str, Any], run: _Pass) -> None:
    """The original's metrics, logs and exporters other than console and OTLP/HTTP."""
    loc: Loc = ("observability",)
    for key, why in IGNORED_OBSERVABILITY_KEYS.items():
        if key in block:
            run.ignore(block, key, loc, why)
    exporters = block.get("exporters")
    if not isinstance(exporters, dict):
        return
    eloc: Loc = (*loc, "exporters")
    for key, why in IGNORED_EXPORTERS.items():
        if key in exporters:
            run.ignore(exporters, key, eloc, why)
    otlp = exporters.get("otlp")
    if isinstance(otlp, dict) and otlp.get("protocol") == "grpc":
        run.ignore(
            exporters,
            "otlp",
            eloc,
            "protocol grpc is not supported (its exporter needs grpcio); set protocol: http "
            "and the collector's OTLP/HTTP endpoint, http://HOST:4318",
        )


def _claude(claude: dict[str, Any], data: dict[str, Any], run: _Pass) -> None:
    """Claude Agent SDK settings that would give the agent powers holodeck does not give."""
    loc: Loc = ("claude",)
    if claude.get("web_search"):
        raise run.refuse(
            (*loc, "web_search"),
            "holodeck gives the model no web search",
            "add an MCP server that searches the web (type: mcp)",
        )
    bash = claude.get("bash")
    if isinstance(bash, dict) and bash.get("enabled"):
        raise run.refuse(
            (*loc, "bash"),
            "holodeck gives the model no shell",
            "expose the commands it needs as a function tool (type: function) or an MCP server",
        )
    files = claude.get("file_system")
    if isinstance(files, dict) and any(files.get(k) for k in ("read", "write", "edit")):
        raise run.refuse(
            (*loc, "file_system"),
            "holodeck gives the model no file access",
            "add an MCP filesystem server (type: mcp), or search the files with a vectorstore tool",
        )
    if claude.get("agents"):
        raise run.refuse(
            (*loc, "agents"),
            "subagents are not supported (holodeck runs one agent)",
            "give each subagent its own agent.yaml and reach it with holodeck serve as an MCP "
            "server (type: mcp)",
        )
    ours = {t.get("name") for t in data.get("tools") or [] if isinstance(t, dict)}
    for key in ("allowed_tools", "disallowed_tools"):
        names = claude.get(key) or []
        if any(isinstance(n, str) and (n.startswith("mcp__") or n in ours) for n in names):
            raise run.refuse(
                (*loc, key),
                "tool allow- and deny-lists are not supported",
                f"{_EVERY_TOOL}: remove the tools the agent must not use (load_tools: false "
                "keeps an MCP server's tools from the model)",
            )


def _model(data: dict[str, Any], run: _Pass) -> None:
    for section in ("model", "embedding_provider"):
        model = data.get(section)
        if not isinstance(model, dict):
            continue
        auth = model.get("auth_provider")
        if auth in (None, "api_key"):
            model.pop("auth_provider", None)  # an API key is the only way holodeck signs in
            continue
        raise run.refuse(
            (section, "auth_provider"),
            f"auth_provider {auth} is not supported",
            "holodeck signs in with an API key: model.api_key (${ANTHROPIC_API_KEY} by default "
            "for provider anthropic), and model.endpoint for another server",
        )


def _tool(tool: dict[str, Any], loc: Loc, run: _Pass) -> None:
    kind = tool.get("type")
    if kind in REFUSED_TOOL_TYPES:
        raise run.refuse(
            (*loc, "type"), f"{kind} tools are not supported", REFUSED_TOOL_TYPES[kind]
        )
    if "defer_loading" in tool:
        run.ignore(tool, "defer_loading", loc, _EVERY_TOOL)
    if kind == "vectorstore":
        _vectorstore(tool, loc, run)
    elif kind == "mcp":
        _mcp(tool, loc, run)


def _vectorstore(tool: dict[str, Any], loc: Loc, run: _Pass) -> None:
    for key, why in IGNORED_VECTORSTORE_KEYS.items():
        if key in tool:
            run.ignore(tool, key, loc, why)
    for key in ("chunk_size", "chunk_overlap"):
        if key in tool and tool[key] is None:
            del tool[key]  # the original's explicit "default"
    source = tool.get("source")
    if isinstance(source, str) and "://" in source and not source.startswith("file://"):
        raise run.refuse(
            (*loc, "source"),
            "remote sources are not fetched",
            "download the files into a folder next to agent.yaml and give its path, or "
            "write source: {git: URL, ref: main, path: docs/} for a git repository, "
            "source: {urls: [URL]} for files on a web server, "
            "source: {s3: s3://bucket/prefix/} for objects in S3",
        )
    if isinstance(source, str) and source.startswith("file://"):
        tool["source"] = source.removeprefix("file://")
    _database(tool, loc, run)


def _database(tool: dict[str, Any], loc: Loc, run: _Pass) -> None:
    database = tool.get("database")
    inherited = "this tool uses .holodeck/config.yaml's vectorstore: or the local index"
    if database is None:
        tool.pop("database", None)
    elif isinstance(database, str):
        run.ignore(tool, "database", loc, f"named stores are not supported; {inherited}")
    elif isinstance(database, dict):
        provider = database.get("provider")
        if provider in OTHER_PROVIDERS:
            run.ignore(tool, "database", loc, f"provider {provider} is not supported; {inherited}")
            return
        if provider == "postgres":
            postgres_section(database, (*loc, "database"), run)
            return
        if provider not in REDIS_PROVIDERS:
            return  # validation names the providers holodeck knows
        dloc = (*loc, "database")
        database["provider"] = "redis"  # redis-hashset and redis-json: the same server
        for key in [k for k in database if k not in ("provider", *_OUR_DATABASE_KEYS)]:
            run.ignore(
                database,
                key,
                dloc,
                "holodeck's Redis store takes connection_string, "
                "index_name, vector_algorithm and distance_metric",
            )


def postgres_section(database: dict[str, Any], loc: Loc, run: _Pass) -> None:
    """A ``provider: postgres`` section: the original's keys that libpq reads from the URL
    warned and dropped, and a password written into the file refused (it must come from
    the environment)."""
    for key, why in IGNORED_POSTGRES_KEYS.items():
        if key in database:
            run.ignore(database, key, loc, why)
    url = database.get("connection_string")
    if isinstance(url, str) and literal_password(url):
        raise run.refuse(
            (*loc, "connection_string"),
            "a password written into the file",
            "take it from the environment: postgresql://USER:${PGPASSWORD}@HOST:5432/DB (or "
            "leave it out of the URL and set PGPASSWORD)",
        )


def _mcp(tool: dict[str, Any], loc: Loc, run: _Pass) -> None:
    server = tool.get("server")
    if isinstance(server, str) and server and not tool.get("command") and not tool.get("url"):
        # the original's npm package name: started the way its init starts every server
        del tool["server"]
        tool["command"], tool["args"] = "npx", ["-y", server, *(tool.get("args") or [])]
        run.warnings.append(
            f"{run.where((*loc, 'server'))}: started as `npx -y {server}` (how the original "
            "HoloDeck's init starts its MCP servers); write command: and args: to start it "
            "another way"
        )
    elif "server" in tool:
        run.ignore(tool, "server", loc, "command: (or url:) says which server to reach")
    if tool.get("load_prompts"):
        run.ignore(
            tool, "load_prompts", loc, "the server's prompts are not offered, only its tools"
        )
    tool.pop("load_prompts", None)
    if "is_retrieval" in tool:
        run.ignore(
            tool, "is_retrieval", loc, "retrieval checks read the vectorstore tools' results"
        )
    if tool.get("transport") == "websocket":
        raise run.refuse(
            (*loc, "transport"),
            "the websocket transport is not supported",
            "use transport: http (streamable HTTP) or sse with url:",
        )


# -- metrics ----------------------------------------------------------------------------

#: The original's deprecated Azure AI metrics, each judged (as a geval metric of the same
#: name) by criteria saying what Azure AI's evaluator of that name scores: kept apart from
#: holodeck's RAG metrics, so an agent listing groundedness and faithfulness gets both.
AZURE_AI_METRICS: dict[str, dict[str, Any]] = {
    "groundedness": {
        "type": "geval",
        "name": "groundedness",
        "criteria": "The answer is grounded: every claim it makes is stated in, or follows "
        "directly from, the retrieved passages; nothing is added from elsewhere.",
        "evaluation_steps": [
            "List the claims the actual output makes.",
            "For each, look for the passage in the retrieval context that states it.",
            "Score by the share of claims the passages support; a claim they contradict "
            "scores lowest.",
        ],
        "evaluation_params": ["input", "actual_output", "retrieval_context"],
    },
    "relevance": {
        "type": "geval",
        "name": "relevance",
        "criteria": "The answer is relevant: it addresses what the input asks, covers its "
        "key points and stays on them.",
        "evaluation_steps": [
            "Read the input and note what it asks.",
            "Check that the actual output answers that, point by point.",
            "Score low for missing points or for content that is off the question.",
        ],
        "evaluation_params": ["input", "actual_output"],
    },
    "coherence": {
        "type": "geval",
        "name": "coherence",
        "criteria": "The answer is coherent: its sentences connect logically and in order, "
        "it reads as one argument rather than loose statements, and it responds to the input.",
        "evaluation_steps": [
            "Read the input and the actual output.",
            "Check that each sentence follows from the one before it and that the ideas are "
            "in a sensible order.",
            "Check that the output holds together as one answer to the input.",
            "Score low for jumps, contradictions or unrelated statements.",
        ],
        "evaluation_params": ["input", "actual_output"],
    },
    "fluency": {
        "type": "geval",
        "name": "fluency",
        "criteria": "The answer is fluent: grammatical, well-formed sentences, fitting word "
        "choice and a natural flow, whatever its content.",
        "evaluation_steps": [
            "Read the actual output only.",
            "Check grammar, spelling and sentence structure.",
            "Check that the wording is fitting and reads naturally.",
            "Score low for errors or awkward phrasing that get in the reader's way.",
        ],
        "evaluation_params": ["actual_output"],
    },
}
#: The original's RAG metric names that its init writes but its own schema spells longer.
RAG_ALIASES = {"context_precision": "contextual_precision", "context_recall": "contextual_recall"}
#: What an Azure AI metric keeps (the rest are the original's standard-metric keys).
_KEPT_METRIC_KEYS = ("threshold", "enabled", "fail_on_error", "model")


def adapt_metrics(metrics: list[Any], loc: Loc, run: _Pass) -> None:
    """Metrics of the original in holodeck's names: Azure AI's deprecated four as the
    metric of the same meaning, ``context_precision``/``context_recall`` spelt out."""
    for i, metric in enumerate(metrics):
        if not isinstance(metric, dict):
            continue
        mloc = (*loc, i)
        kind = metric.get("type", "standard")
        name = metric.get("metric")
        if kind == "standard" and isinstance(name, str) and name in AZURE_AI_METRICS:
            metrics[i] = _azure_metric(metric, name, mloc, run)
        elif kind == "rag" and metric.get("metric_type") in RAG_ALIASES:
            old = metric["metric_type"]
            metric["metric_type"] = RAG_ALIASES[old]
            run.warnings.append(
                f"{run.where((*mloc, 'metric_type'))}: {old} is run as "
                f"{RAG_ALIASES[old]} (its name in holodeck and in the original's schema)"
            )


def _azure_metric(metric: dict[str, Any], name: str, loc: Loc, run: _Pass) -> dict[str, Any]:
    """One deprecated Azure AI metric as holodeck's, with a warning naming both."""
    ours = copy.deepcopy(AZURE_AI_METRICS[name])
    ours.update({k: metric[k] for k in _KEPT_METRIC_KEYS if k in metric})
    note = ""
    threshold = metric.get("threshold")
    if isinstance(threshold, int | float) and not isinstance(threshold, bool) and threshold > 1:
        # Azure AI scores 1-5: the same place on holodeck's 0-1 scale
        ours["threshold"] = round(min(max((threshold - 1) / 4, 0.0), 1.0), 4)
        note = f"; its threshold {threshold:g} on Azure AI's 1-5 scale is {ours['threshold']:g}"
    run.warnings.append(
        f"{run.where((*loc, 'metric'))}: {name} (the original's deprecated Azure AI metric) "
        f"is judged by the evaluations model as a geval metric of the same name, with "
        f"criteria saying what Azure AI's {name} scores{note}"
    )
    return ours


# -- test cases -------------------------------------------------------------------------


def adapt_cases(cases: Any, loc: Loc, run: _Pass) -> None:
    """Test cases (and their turns): the original's metric names."""
    if not isinstance(cases, list):
        return
    for i, case in enumerate(cases):
        if not isinstance(case, dict):
            continue
        _message(case, (*loc, i), run)
        turns = case.get("turns")
        if isinstance(turns, list):
            for j, turn in enumerate(turns):
                if isinstance(turn, dict):
                    _message(turn, (*loc, i, "turns", j), run)


def _message(item: dict[str, Any], loc: Loc, run: _Pass) -> None:
    if isinstance(item.get("evaluations"), list):
        adapt_metrics(item["evaluations"], (*loc, "evaluations"), run)
    if "files" in item and not item["files"]:
        del item["files"]  # files: [] (or null): none
