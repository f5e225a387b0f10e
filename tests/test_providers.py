"""How each provider is reached: endpoints, keys, Azure's deployment URL and api-version."""

from __future__ import annotations

import asyncio

import pytest
from fake_openai import FakeOpenAI, text

from holodeck.config.llm import ModelConfig
from holodeck.errors import ConfigError
from holodeck.providers import (
    DEFAULT_OLLAMA_ENDPOINT,
    connection_for,
    make_async_client,
)


def model(**fields: object) -> ModelConfig:
    return ModelConfig.model_validate({"name": "m", **fields})


def test_openai_key_from_the_environment() -> None:
    conn = connection_for(model(provider="openai"), {"OPENAI_API_KEY": "sk-env"})
    assert conn.api_key == "sk-env" and conn.base_url == "https://api.openai.com/v1"


def test_config_key_wins_over_the_environment() -> None:
    conn = connection_for(model(provider="openai", api_key="sk-cfg"), {"OPENAI_API_KEY": "sk-env"})
    assert conn.api_key == "sk-cfg"


def test_openai_without_a_key_is_one_line_naming_the_variable() -> None:
    with pytest.raises(ConfigError, match=r"no API key for provider openai: set OPENAI_API_KEY"):
        connection_for(model(provider="openai"), {})


def test_openai_compatible_server_needs_no_key() -> None:
    conn = connection_for(model(provider="openai", endpoint="http://localhost:8000/v1"), {})
    assert conn.base_url == "http://localhost:8000/v1"


def test_ollama_defaults_to_its_local_endpoint() -> None:
    conn = connection_for(model(provider="ollama"), {})
    assert conn.base_url == DEFAULT_OLLAMA_ENDPOINT == "http://localhost:11434/v1"


def test_ollama_endpoint_without_a_path_gets_v1() -> None:
    """``http://localhost:11434`` as the original HoloDeck's guide writes it, and
    ``OLLAMA_HOST`` (Ollama's own variable, a bare host:port too) when no endpoint is set."""
    written = connection_for(model(provider="ollama", endpoint="http://localhost:11434"), {})
    assert written.base_url == "http://localhost:11434/v1"
    kept = connection_for(model(provider="ollama", endpoint="http://gpu:11434/v1/"), {})
    assert kept.base_url == "http://gpu:11434/v1/"
    from_env = connection_for(model(provider="ollama"), {"OLLAMA_HOST": "gpu.lan:11434"})
    assert from_env.base_url == "http://gpu.lan:11434/v1"


def test_base_url_variables_apply_when_agent_yaml_names_no_endpoint() -> None:
    env = {"OPENAI_BASE_URL": "http://proxy/v1", "OPENAI_API_KEY": "sk-x"}
    assert connection_for(model(provider="openai"), env).base_url == "http://proxy/v1"
    written = model(provider="openai", endpoint="http://mine/v1")
    assert connection_for(written, env).base_url == "http://mine/v1"
    anthropic = connection_for(model(provider="anthropic"), {"ANTHROPIC_BASE_URL": "http://a"})
    assert anthropic.base_url == "http://a"


def test_azure_needs_an_endpoint_and_uses_its_v1_api_without_a_version() -> None:
    env = {"AZURE_OPENAI_API_KEY": "az-key"}
    with pytest.raises(ConfigError, match=r"model\.endpoint: required for provider azure_openai"):
        connection_for(model(provider="azure_openai"), env)
    v1 = connection_for(model(provider="azure_openai", endpoint="https://x.openai.azure.com/"), env)
    assert (v1.base_url, v1.api_version) == ("https://x.openai.azure.com/openai/v1", None)
    with pytest.raises(ConfigError, match="set AZURE_OPENAI_API_KEY"):
        connection_for(
            model(provider="azure_openai", endpoint="https://x", api_version="2024-06-01"), {}
        )


def test_azure_requests_go_to_the_deployment(fake_openai: FakeOpenAI) -> None:
    endpoint = fake_openai.url.removesuffix("/v1")
    cfg = model(provider="azure_openai", name="my-gpt", endpoint=endpoint, api_version="2024-06-01")
    conn = connection_for(cfg, {"AZURE_OPENAI_API_KEY": "az-key"})
    fake_openai.chat.push(text("hi"))

    async def ask() -> str:
        client = make_async_client(conn)
        response = await client.chat.completions.create(
            model="my-gpt", messages=[{"role": "user", "content": "hello"}]
        )
        await client.close()
        return response.choices[0].message.content or ""

    assert asyncio.run(ask()) == "hi"
    (request,) = fake_openai.requests
    assert request.path == "/openai/deployments/my-gpt/chat/completions"
    assert request.query == "api-version=2024-06-01"
    assert request.headers["api-key"] == "az-key"


def test_azure_without_a_version_is_asked_at_its_v1_api(fake_openai: FakeOpenAI) -> None:
    """What the original HoloDeck's init writes for Azure (an endpoint, no api_version)."""
    endpoint = fake_openai.url.removesuffix("/v1")
    conn = connection_for(
        model(provider="azure_openai", name="my-gpt", endpoint=endpoint),
        {"AZURE_OPENAI_API_KEY": "az-key"},
    )
    fake_openai.chat.push(text("hi"))

    async def ask() -> str:
        client = make_async_client(conn)
        response = await client.chat.completions.create(
            model="my-gpt", messages=[{"role": "user", "content": "hello"}]
        )
        await client.close()
        return response.choices[0].message.content or ""

    assert asyncio.run(ask()) == "hi"
    (request,) = fake_openai.requests
    assert request.path == "/openai/v1/chat/completions"
    assert request.headers["authorization"] == "Bearer az-key"
