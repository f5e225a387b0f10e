"""OpenAI-compatible clients for every ``model.provider``, and their errors as one line.

One place knows how a provider is reached (base URL, key variable, Azure's api-version), so
chat and remote embeddings agree. Retries (429, 5xx, timeouts, Retry-After) are the openai
client's own; what is left when they run out becomes a one-line ``LLMError`` or
``EmbeddingError`` that never contains the key.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from types import ModuleType
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # imported when a client is made: a slow import a retrieval-only run skips
    import openai

from holodeck.config.llm import ModelConfig
from holodeck.errors import ConfigError
from holodeck.redact import remember_secret

#: Ollama's OpenAI-compatible API on its default port.
DEFAULT_OLLAMA_ENDPOINT = "http://localhost:11434/v1"
DEFAULT_OPENAI_ENDPOINT = "https://api.openai.com/v1"
#: Where each provider's key is read from when ``model.api_key`` is not set.
KEY_VARIABLES = {
    "openai": "OPENAI_API_KEY",
    "azure_openai": "AZURE_OPENAI_API_KEY",
    "anthropic": "ANTHROPIC_API_KEY",
}
DEFAULT_ANTHROPIC_ENDPOINT = "https://api.anthropic.com"
#: Variables naming another server when ``model.endpoint`` is not set: each SDK's own
#: (``OLLAMA_HOST`` is Ollama's, a host and port or a URL).
BASE_URL_VARIABLES = {
    "openai": "OPENAI_BASE_URL",
    "anthropic": "ANTHROPIC_BASE_URL",
    "ollama": "OLLAMA_HOST",
}
#: Azure OpenAI's v1 API, used when no api-version is given (the original HoloDeck's way).
AZURE_V1_PATH = "/openai/v1"
#: Ollama ignores the key, but the client needs a non-empty one.
OLLAMA_PLACEHOLDER_KEY = "ollama"
#: Connect fast, but let a slow model take its time between streamed chunks (seconds).
CHAT_TIMEOUT = 120.0
CONNECT_TIMEOUT = 10.0
CHAT_RETRIES = 3
EMBEDDING_RETRIES = 5


@dataclass(frozen=True)
class Connection:
    """How one provider is reached: enough to build a client and to name it in messages."""

    provider: str
    base_url: str
    api_key: str
    key_variable: str | None
    api_version: str | None = None

    @property
    def label(self) -> str:
        """``provider at URL``, for error lines."""
        return f"{self.provider} at {self.base_url}"


def connection_for(model: ModelConfig, env: Mapping[str, str]) -> Connection:
    """Resolve endpoint and key for ``model``; a missing one is a ConfigError naming the fix.

    ``env`` is the environment the config saw (``.env`` overlaid by the real environment).
    """
    if model.unset_key_error is not None:  # the file names a variable that is not set
        raise ConfigError(model.unset_key_error)
    provider = model.provider
    variable = KEY_VARIABLES.get(provider)
    key = model.api_key or (env.get(variable) if variable else None) or None
    remember_secret(key)  # never printed, whatever a server echoes
    endpoint = model.endpoint or env.get(BASE_URL_VARIABLES.get(provider, ""), "") or None
    if provider == "ollama":
        base = ollama_base_url(endpoint or DEFAULT_OLLAMA_ENDPOINT)
        return Connection(provider, base, key or OLLAMA_PLACEHOLDER_KEY, None)
    if provider == "azure_openai":
        endpoint = model.endpoint or env.get("AZURE_OPENAI_ENDPOINT")
        if not endpoint:
            raise ConfigError(
                "model.endpoint: required for provider azure_openai "
                "(e.g. https://my-resource.openai.azure.com), or set AZURE_OPENAI_ENDPOINT"
            )
        version = model.api_version or env.get("OPENAI_API_VERSION") or None
        if not key:
            raise ConfigError(_missing_key(provider, variable))
        if version is None:  # Azure's v1 API: the OpenAI client, no api-version
            endpoint = endpoint.rstrip("/").removesuffix(AZURE_V1_PATH) + AZURE_V1_PATH
        return Connection(provider, endpoint, key, variable, version)
    if provider == "anthropic":
        base = endpoint or DEFAULT_ANTHROPIC_ENDPOINT
        if not key and base.startswith(DEFAULT_ANTHROPIC_ENDPOINT):
            raise ConfigError(_missing_key(provider, variable))
        return Connection(provider, base, key or "none", variable)
    base = endpoint or DEFAULT_OPENAI_ENDPOINT
    if not key:
        if base.startswith(DEFAULT_OPENAI_ENDPOINT):
            raise ConfigError(_missing_key(provider, variable))
        # A self-hosted OpenAI-compatible server often needs no key; the client needs one.
        key = "none"
    return Connection(provider, base, key, variable)


def ollama_base_url(endpoint: str) -> str:
    """Ollama's OpenAI-compatible API: ``/v1`` added to an endpoint written without a path
    (``http://localhost:11434``, as the original HoloDeck's guide writes it), and a scheme
    to a bare ``host:port`` (``OLLAMA_HOST``'s form)."""
    from urllib.parse import urlsplit

    if "://" not in endpoint:
        endpoint = f"http://{endpoint}"
    if urlsplit(endpoint).path.strip("/") == "":
        return endpoint.rstrip("/") + "/v1"
    return endpoint


def _missing_key(provider: str, variable: str | None) -> str:
    return (
        f"model: no API key for provider {provider}: set {variable} in the environment or in "
        f".env next to agent.yaml (or write api_key: ${{{variable}}})"
    )


def make_async_client(conn: Connection, max_retries: int = CHAT_RETRIES) -> openai.AsyncOpenAI:
    """The async client chat uses; ``max_retries`` covers 429, 5xx and timeouts."""
    import openai

    if conn.provider == "azure_openai" and conn.api_version:
        return openai.AsyncAzureOpenAI(**_azure_options(conn, max_retries))
    return openai.AsyncOpenAI(**_options(conn, max_retries))


def make_sync_client(conn: Connection, max_retries: int = EMBEDDING_RETRIES) -> openai.OpenAI:
    """The blocking client remote embeddings use (ingestion is synchronous)."""
    import openai

    if conn.provider == "azure_openai" and conn.api_version:
        return openai.AzureOpenAI(**_azure_options(conn, max_retries))
    return openai.OpenAI(**_options(conn, max_retries))


def _options(conn: Connection, max_retries: int) -> dict[str, Any]:
    """Keyword arguments shared by the OpenAI clients, sync and async."""
    return {
        "base_url": conn.base_url,
        "api_key": conn.api_key,
        "max_retries": max_retries,
        "timeout": _timeout(),
    }


def _timeout() -> openai.Timeout:
    import openai

    return openai.Timeout(CHAT_TIMEOUT, connect=CONNECT_TIMEOUT)


def _azure_options(conn: Connection, max_retries: int) -> dict[str, Any]:
    """The same for Azure, whose clients name the endpoint and need an API version."""
    options = _options(conn, max_retries)
    options["azure_endpoint"] = options.pop("base_url")
    options["api_version"] = conn.api_version
    return options


def describe_error(
    exc: BaseException,
    conn: Connection,
    model: str,
    what: str = "model",
    sdk: ModuleType | None = None,
) -> str:
    """One line saying what went wrong with a request to ``conn`` and how to fix it.

    ``sdk`` is the client library that raised (``openai``, or ``anthropic``: the same error
    classes). Never includes the key: the server's own message is left out for 401/403
    (OpenAI echoes part of the key there) and scrubbed of the key everywhere else.
    """
    if sdk is None:
        import openai

        sdk = openai
    where = conn.label
    fix_key = f"check {conn.key_variable}" if conn.key_variable else "check model.api_key"
    if isinstance(exc, sdk.APITimeoutError):
        return f"{where} did not answer in time (after retries); try again later"
    if isinstance(exc, sdk.APIConnectionError):
        cause = exc.__cause__ or exc
        return f"cannot reach {where}: {scrub_key(str(cause), conn)}; is the server running?"
    if isinstance(exc, sdk.AuthenticationError):
        return f"{where} refused the API key (401); {fix_key}"
    if isinstance(exc, sdk.PermissionDeniedError):
        return f"{where} denied access to {what} {model!r} (403); {fix_key} and its permissions"
    if isinstance(exc, sdk.NotFoundError):
        kind = "deployment" if conn.provider == "azure_openai" else what
        hint = f"; pull it first: ollama pull {model}" if conn.provider == "ollama" else ""
        return f"{kind} {model!r} not found at {where} (404){hint}"
    if isinstance(exc, sdk.RateLimitError):
        return (
            f"{where} is rate limiting requests (429) and still was after retries: "
            f"{_server_message(exc, conn)}; wait and try again"
        )
    if _error_type(exc) == "overloaded_error" or getattr(exc, "status_code", None) == 529:
        # Anthropic's 529, or its error event in mid-stream (after a 200)
        return f"{where} is overloaded: {_server_message(exc, conn)}; try again later"
    if isinstance(exc, sdk.APIStatusError):
        return f"{where} answered {exc.status_code}: {_server_message(exc, conn)}"
    return f"{where}: {scrub_key(str(exc), conn)}"


def _error_type(exc: BaseException) -> str | None:
    """The API's error type (``overloaded_error``...), from an error's body."""
    body = getattr(exc, "body", None)
    inner = body.get("error", body) if isinstance(body, dict) else None
    kind = inner.get("type") if isinstance(inner, dict) else None
    return kind if isinstance(kind, str) else None


def _server_message(exc: BaseException, conn: Connection) -> str:
    """The ``error.message`` of an API error body, short and without the key."""
    body = getattr(exc, "body", None)
    message: object = None
    if isinstance(body, dict):
        inner = body.get("error", body)
        message = inner.get("message") if isinstance(inner, dict) else inner
    text = str(message if message else getattr(exc, "message", exc))
    text = " ".join(text.split())
    return scrub_key(text[:300], conn)


def scrub_key(text: str, conn: Connection) -> str:
    """``text`` with the key (should a server echo it) replaced by ``***``."""
    key = conn.api_key
    return text.replace(key, "***") if key and len(key) >= 4 else text
