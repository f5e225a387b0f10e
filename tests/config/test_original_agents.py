"""agent.yaml files written for the original HoloDeck load here: exit 0, and one WARNING for
each key holodeck ignores (naming it), nothing else.

Ten files in the shapes of the original's documented schema (its minimal, full, chat,
optimizer, Claude, Claude-with-MCP, deploy, two Ollama and a multi-turn ConvFinQA agent),
written for these tests. Each goes through the real ``holodeck config show``; then the same
keys that must be refused are refused with exit 2 and the key's name.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from cli_helpers import run_holodeck, write

TOOLS_PY = '''
def lookup_order(order_id: str, include_items: bool = False) -> dict:
    """Look up an order.

    Args:
        order_id: The order's number, like A-1001.
        include_items: Whether to list the items too.
    """
    return {"order_id": order_id, "status": "shipped"}


def subtract(a: float, b: float) -> float:
    """a minus b."""
    return a - b


def divide(a: float, b: float) -> float:
    """a divided by b."""
    return a / b
'''

AGENTS = {
    # The smallest agent the original accepts: a model and a plain-string prompt.
    "minimal": """
        name: minimal-helper
        model:
          provider: openai
          name: gpt-4o-mini
        instructions: You are a terse assistant.
        """,
    # Every key of the original's agent model that holodeck implements or ignores.
    "full": """
        name: support-agent
        description: Answers order questions from the help centre.
        author: Support Tooling Team
        model:
          provider: openai
          name: gpt-4o
          temperature: 0.2
          max_tokens: 600
          top_p: 0.9
          api_key: ${OPENAI_API_KEY}
        instructions:
          inline: Answer from the help centre and the order system only.
        tools:
          - name: help_centre
            description: Search help-centre articles
            type: vectorstore
            source: kb/
            chunk_size: 400
            chunk_overlap: 40
            top_k: 4
            min_similarity_score: 0.2
            embedding_dimensions: 384
            record_path: data.articles
            record_prefix: rec_
            meta_prefix: meta_
            meta_fields: [title, url]
            database:
              provider: postgres
              connection_string: postgresql://kb@localhost/kb
          - name: lookup_order
            description: Find an order by its number
            type: function
            file: tools/orders.py
            function: lookup_order
            parameters:
              order_id:
                type: string
                description: The order number
        execution:
          llm_timeout: 60
          parallel_test_cases: 2
        observability:
          enabled: true
          exporters:
            console:
              enabled: true
        test_cases:
          - input: Where is order A-1001?
            expected_tools: [lookup_order]
            ground_truth: Order A-1001 has shipped.
            retrieval_context: ["Orders ship within two days."]
          - name: refunds
            input: How long do refunds take?
            expected_tools:
              - name: help_centre
                args:
                  query: refund
        """,
    # A chat agent: instructions from a file, a vectorstore over a folder, an in-memory store.
    "chat": """
        name: chat-agent
        model:
          provider: azure_openai
          name: gpt-4o-deployment
          endpoint: https://example.openai.azure.com
          api_version: "2024-10-21"
          api_key: ${AZURE_OPENAI_API_KEY}
        instructions:
          file: prompts/system.md
        tools:
          - name: manuals
            description: Product manuals
            type: vectorstore
            source: kb/
            database:
              provider: in-memory
        """,
    # The optimizer's agent: evaluations.optimizer is the original's prompt tuner.
    "optimizer": """
        name: tuned-agent
        description: Answers with one value.
        model:
          provider: openai
          name: gpt-4o-mini
          temperature: 0.7
        instructions:
          inline: |
            Reply with the final value only.
        evaluations:
          metrics:
            - type: standard
              metric: equality
              strip_whitespace: true
          optimizer:
            loss:
              exact: 1.0
            axes:
              numeric:
                - path: model.temperature
                  type: float
                  range: [0.0, 1.0]
            max_cycles: 3
            seed: 7
        test_cases:
          - input: What is 3 + 4? Reply with the number only.
            ground_truth: "7"
          - input: Name the largest planet. One word.
            ground_truth: Jupiter
        """,
    # A Claude agent: provider anthropic, and the Claude Agent SDK's own settings.
    "claude": """
        name: claude-helper
        description: A Claude agent with SDK settings
        model:
          provider: anthropic
          name: claude-sonnet-4-20250514
          temperature: 0.5
          auth_provider: api_key
        instructions:
          inline: "You help with short questions."
        claude:
          permission_mode: manual
          max_concurrent_sessions: 2
          max_turns: 8
          extended_thinking:
            enabled: true
            budget_tokens: 4000
          allowed_tools: [Read]
        """,
    # A Claude agent with an MCP server started by npx, and a deployment target.
    "claude_mcp": """
        name: claude-with-files
        description: Claude with a filesystem MCP server
        model:
          provider: anthropic
          name: claude-sonnet-4-20250514
        instructions:
          inline: "Use the filesystem tool to read notes."
        tools:
          - name: notes
            type: mcp
            description: Read the notes folder
            command: npx
            args: ["-y", "@modelcontextprotocol/server-filesystem", "./notes"]
            request_timeout: 20
            defer_loading: false
        claude:
          permission_mode: acceptEdits
        deployment:
          port: 9000
          protocol: rest
          registry:
            url: ghcr.io
            repository: example/claude-files
            tag_strategy: latest
          target:
            provider: gcp
            gcp:
              region: europe-west1
        """,
    # The deploy sample: a model, a prompt file and where the image goes.
    "deploy": """
        # Built into a container by the original's `holodeck deploy`.
        name: deployable
        description: An agent shipped as a container
        model:
          provider: openai
          name: gpt-4o
          temperature: 0.4
        instructions:
          file: prompts/system.md
        deployment:
          registry:
            url: docker.io
            repository: example/deployable
            tag_strategy: git_sha
          target:
            provider: azure
            azure:
              location: westeurope
        """,
    # Ollama with a knowledge base: a named store, tool filtering, a JSON record path.
    "ollama_kb": """
        name: local-kb
        model:
          provider: ollama
          name: llama3.2:3b
          endpoint: http://localhost:11434/v1
          temperature: 0.1
          max_tokens: 512
        instructions:
          inline: Answer from the local documents.
        tool_filtering:
          enabled: true
          top_k: 3
        tools:
          - name: local_docs
            description: Local documents
            type: vectorstore
            source: kb/
            vector_field: [title, body]
            id_field: id
            database: my-local-store
            defer_loading: true
        test_cases:
          - input: What does the warranty cover?
            ground_truth: Parts and labour for two years.
        """,
    # Ollama with two MCP servers: a local one (env and env_file) and a remote one over SSE.
    "ollama_mcp": """
        name: local-mcp
        model:
          provider: ollama
          name: qwen3:4b
          endpoint: http://localhost:11434/v1
        instructions:
          inline: Use the tools.
        tools:
          - name: local_notes
            type: mcp
            description: Notes server
            command: uvx
            args: [notes-mcp, --readonly]
            env:
              NOTES_DIR: ./notes
            env_file: .env.mcp
            encoding: utf-8
            config:
              max_results: 5
            load_tools: true
            load_prompts: true
            is_retrieval: true
            server: notes-mcp
          - name: remote_search
            type: mcp
            description: A hosted search server
            transport: sse
            url: https://mcp.example.com/sse
            headers:
              X-Team: docs
            timeout: 10
            sse_read_timeout: 120
            registry_name: com.example/search
        """,
    # A ConvFinQA-style conversation: each turn builds on the last.
    "convfinqa": """
        name: convfinqa-agent
        description: Financial questions over several turns.
        model:
          provider: ollama
          name: qwen3:0.6b
        instructions: |
          You are a financial analyst. Use the calculator tools and answer with numbers.
        tools:
          - name: subtract
            type: function
            description: Subtract b from a
            file: tools/orders.py
            function: subtract
          - name: divide
            type: function
            description: Divide a by b
            file: tools/orders.py
            function: divide
        test_cases:
          - name: convfinqa-1
            turns:
              - input: what was the operating cash flow in 2019?
                ground_truth: "5120"
              - input: and in 2018?
                ground_truth: "4800"
              - input: what is the change between the two years?
                ground_truth: "320"
                expected_tools:
                  - name: subtract
                    args:
                      a: 5120
                      b: { fuzzy: "4,800" }
              - input: what percentage change is that?
                ground_truth: "6.7%"
                expected_tools:
                  - name: divide
                    count: 1
                    args:
                      a: { regex: "^320(\\\\.0+)?$" }
          - turns:
              - input: how much debt was repaid in 2019?
        """,
}

#: The keys each file must warn about (and nothing else).
WARNED = {
    "minimal": set(),
    "full": {
        "tools[0].embedding_dimensions",
        "tools[0].record_path",
        "tools[0].record_prefix",
        "tools[0].meta_prefix",
        "tools[0].meta_fields",
        "execution",
    },
    "chat": {"tools[0].database"},
    "optimizer": {"evaluations.optimizer"},
    "claude": {"claude"},
    "claude_mcp": {"tools[0].defer_loading", "claude", "deployment"},
    "deploy": {"deployment"},
    "ollama_kb": {
        "tool_filtering",
        "tools[0].vector_field",
        "tools[0].id_field",
        "tools[0].database",
        "tools[0].defer_loading",
    },
    "ollama_mcp": {"tools[0].load_prompts", "tools[0].is_retrieval", "tools[0].server"},
    "convfinqa": set(),
}

_WARNING = re.compile(r"^WARNING: agent\.yaml:(\d+): (\S+): ignored \((.+)\)$", re.MULTILINE)


def make_project(root: Path, name: str) -> Path:
    """One of the agents with the files it names: a prompt, a Python file, docs, an env file."""
    write(root / "agent.yaml", AGENTS[name])
    write(root / "prompts" / "system.md", "You answer from the manuals.\n")
    write(root / "tools" / "orders.py", TOOLS_PY)
    write(root / "kb" / "warranty.md", "# Warranty\n\nParts and labour for two years.\n")
    write(root / ".env.mcp", "NOTES_TOKEN=abc123\n")
    write(root / ".env", "OPENAI_API_KEY=sk-test-original\nAZURE_OPENAI_API_KEY=az-test-key\n")
    return root


@pytest.mark.parametrize("name", sorted(AGENTS))
def test_an_agent_written_for_the_original_loads_with_its_warnings(
    tmp_path: Path, name: str
) -> None:
    root = make_project(tmp_path, name)
    done = run_holodeck("config", "show", cwd=root)
    assert done.returncode == 0, done.stderr
    assert "Traceback" not in done.stderr
    warned = {m.group(2) for m in _WARNING.finditer(done.stderr)}
    assert warned == WARNED[name], done.stderr
    # One line per ignored key, each naming where it is and why it is ignored.
    lines = [line for line in done.stderr.splitlines() if line.startswith("WARNING")]
    assert len(lines) == len(WARNED[name]), done.stderr
    assert all(_WARNING.match(line) for line in lines), done.stderr
    assert f"Agent {_agent_name(name)}" in done.stdout


def _agent_name(name: str) -> str:
    return re.search(r"name: (\S+)", AGENTS[name]).group(1)  # type: ignore[union-attr]


def test_the_warnings_say_where_and_why(tmp_path: Path) -> None:
    root = make_project(tmp_path, "claude_mcp")
    done = run_holodeck("config", "show", cwd=root)
    assert done.returncode == 0, done.stderr
    found = {m.group(2): (int(m.group(1)), m.group(3)) for m in _WARNING.finditer(done.stderr)}
    assert found["deployment"][0] == 18  # the line of the key in agent.yaml
    assert "holodeck builds and deploys no containers" in found["deployment"][1]
    assert "Claude Agent SDK" in found["claude"][1]
    assert found["tools[0].defer_loading"] == (
        15,
        "every tool under tools: is offered to the model on every request",
    )


def test_quiet_hides_the_warnings(tmp_path: Path) -> None:
    root = make_project(tmp_path, "deploy")
    done = run_holodeck("-q", "config", "show", cwd=root)
    assert done.returncode == 0, done.stderr
    assert "WARNING" not in done.stderr


#: Keys of the original that would change what the agent does if ignored: refused, each
#: naming the key and what to use instead.
REFUSED = [
    (
        "claude:\n  web_search: true\n",
        "agent.yaml:6: claude.web_search: holodeck gives the model no web search; add an MCP "
        "server that searches the web (type: mcp)",
    ),
    (
        "claude:\n  bash:\n    enabled: true\n",
        "agent.yaml:6: claude.bash: holodeck gives the model no shell;",
    ),
    (
        "claude:\n  file_system:\n    read: true\n",
        "agent.yaml:6: claude.file_system: holodeck gives the model no file access;",
    ),
    (
        "claude:\n  agents:\n    critic:\n      description: Reviews\n      prompt: Be harsh\n",
        "agent.yaml:6: claude.agents: subagents are not supported",
    ),
    (
        "claude:\n  allowed_tools: [mcp__notes__read]\n",
        "agent.yaml:6: claude.allowed_tools: tool allow- and deny-lists are not supported;",
    ),
    (
        "tools:\n  - name: summarize\n    description: Summaries\n    type: prompt\n"
        "    template: 'Summarize {{text}}'\n    parameters:\n      text: {type: string}\n",
        "agent.yaml:8: tools[0].type: prompt tools are not supported; write the template as a "
        "function tool (type: function) or in instructions:",
    ),
    (
        "tools:\n  - name: law\n    description: Acts\n    type: hierarchical_document\n"
        "    source: kb/\n",
        "agent.yaml:8: tools[0].type: hierarchical_document tools are not supported; use type: "
        "vectorstore",
    ),
    (
        "tools:\n  - name: chat\n    description: Sockets\n    type: mcp\n"
        "    transport: websocket\n    url: wss://example.com/mcp\n",
        "agent.yaml:9: tools[0].transport: the websocket transport is not supported; use "
        "transport: http",
    ),
    (
        "tools:\n  - name: remote\n    description: Remote\n    type: vectorstore\n"
        "    source: s3://bucket/docs\n",
        "agent.yaml:9: tools[0].source: remote sources are not fetched; download the files",
    ),
    (
        "test_cases:\n  - input: What is in the chart?\n    files:\n"
        "      - {path: chart.png, type: image}\n",
        "agent.yaml:8: test_cases[0].files[0].type: images are not read (holodeck sends the "
        "model text, with no OCR or vision); describe the image in input:",
    ),
]


@pytest.mark.parametrize(("extra", "message"), REFUSED, ids=[m.split(":")[2] for _, m in REFUSED])
def test_keys_whose_loss_would_change_the_agent_are_refused(
    tmp_path: Path, extra: str, message: str
) -> None:
    body = "name: strict\nmodel:\n  provider: openai\n  name: gpt-4o\n" + extra
    write(tmp_path / "agent.yaml", body)
    write(tmp_path / "kb" / "a.md", "text\n")
    done = run_holodeck("config", "show", cwd=tmp_path)
    assert done.returncode == 2, done.stderr
    assert done.stderr.startswith("Error: " + message), done.stderr
    assert "Traceback" not in done.stderr


def test_other_sign_ins_are_refused_naming_the_key(tmp_path: Path) -> None:
    write(
        tmp_path / "agent.yaml",
        "name: x\nmodel:\n  provider: anthropic\n  name: claude-sonnet-4\n"
        "  auth_provider: bedrock\n",
    )
    done = run_holodeck("config", "show", cwd=tmp_path)
    assert done.returncode == 2
    assert done.stderr.startswith(
        "Error: agent.yaml:5: model.auth_provider: auth_provider bedrock is not supported; "
        "holodeck signs in with an API key"
    ), done.stderr


def test_a_key_neither_project_knows_is_still_refused(tmp_path: Path) -> None:
    write(tmp_path / "agent.yaml", "name: x\ninstructions: hi\ndeploymnet:\n  port: 1\n")
    done = run_holodeck("config", "show", cwd=tmp_path)
    assert done.returncode == 2
    assert done.stderr.startswith("Error: agent.yaml:3: deploymnet: unknown key"), done.stderr
    assert "did you mean 'deployment' (a key of the original HoloDeck, ignored here)?" in (
        done.stderr
    )


def test_a_config_yaml_of_the_original_warns_and_refuses_global_mcp_servers(
    tmp_path: Path,
) -> None:
    project = tmp_path / "project"
    write(project / "agent.yaml", "name: x\ninstructions: hi\n")
    home = tmp_path / "home"
    write(
        home / ".holodeck" / "config.yaml",
        """
        providers:
          openai:
            provider: openai
            name: gpt-4o
        execution:
          llm_timeout: 30
        """,
    )
    done = run_holodeck("config", "show", cwd=project, home=home)
    assert done.returncode == 0, done.stderr
    assert "WARNING: ~/.holodeck/config.yaml:1: providers: ignored" in done.stderr
    assert "WARNING: ~/.holodeck/config.yaml:5: execution: ignored" in done.stderr
    write(
        home / ".holodeck" / "config.yaml",
        "mcp_servers:\n  - {name: fs, description: files, type: mcp, command: npx}\n",
    )
    done = run_holodeck("config", "show", cwd=project, home=home)
    assert done.returncode == 2
    assert done.stderr.startswith(
        "Error: ~/.holodeck/config.yaml:1: mcp_servers: MCP servers for every agent are not "
        "read from config.yaml; list each under tools: of the agent.yaml that uses it"
    ), done.stderr
