"""Errors a user can act on, each with the exit code the CLI returns for it.

One home for the classes so the CLI maps them to exit codes in one place: 2 for a user's
mistake (configuration, bad input) or a damaged index the user must rebuild, 3 for a runtime
failure (ingestion, LLM, Redis lost).
"""

from __future__ import annotations


class HoloDeckError(Exception):
    """Base of every error holodeck reports as one line instead of a traceback."""

    exit_code = 3


class ConfigError(HoloDeckError):
    """A mistake in agent.yaml, a config file or a command-line value: exit code 2."""

    exit_code = 2


class ValidationError(ConfigError):
    """Input that cannot be used (e.g. no supported files)."""


class IngestError(HoloDeckError):
    """Ingestion could not finish; what is stored stays consistent and a re-run repairs it."""


class DamagedIndex(HoloDeckError):
    """The local index's database is damaged (SQLite says so): exit code 2, since no retry
    helps; ``holodeck ingest --force-ingest`` moves it aside and rebuilds it."""

    exit_code = 2


class IndexNotWritable(ConfigError):
    """The index folder cannot be written (a read-only mount, no permission): exit code 2,
    the user's to fix; what is stored still answers searches."""


class EmbeddingError(HoloDeckError, RuntimeError):
    """The embedder failed: fail fast, never a zero vector (a ``RuntimeError``, as the tool
    contract asks: docs/contract.md)."""


class LLMError(HoloDeckError):
    """The LLM could not answer (unreachable, bad key, model not found)."""


class IndexFull(IngestError):
    """The disk (or a limit on file size) left no room to write the index: what is stored
    stays as it was and still answers searches; the next ingest with room finishes."""


class IngestRunning(IngestError):
    """Another ingest holds the library: a writer waits for it, a reader answers without."""


class MissingExtra(ConfigError):
    """An opt-in feature is used without the optional packages it needs (``holodeck.extras``):
    exit code 2, fixed by installing the extra the message names."""
