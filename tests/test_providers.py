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


def test_azure_needs_endpoint_and_version() -> None:
    env = {"AZURE_OPENAI_API_KEY": "az-key"}
    with pytest.raises(ConfigError, match=r"model\.endpoint: required for provider azure_openai"):
        connection_for(model(provider="azure_openai"), env)
    with pytest.raises(ConfigError, match=r"model\.api_version: required"):
        connection_for(model(provider="azure_openai", endpoint="https://x.openai.azure.com"), env)
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
