"""Refusals of the storage layer, each with its stable numeric code (the storage contract,
docs/contract.md)."""

from __future__ import annotations

from holodeck.errors import HoloDeckError

TENANT_MISMATCH = 5372772694716
MODEL_MISMATCH = 5372772694902
QUERY_DIMENSION_MISMATCH = 5372772695100


class StoreError(HoloDeckError):
    """A refusal by the store: a stable ``code``, an HTTP-like ``status`` (400: bad call)."""

    def __init__(self, code: int, message: str, status: int = 400) -> None:
        super().__init__(message)
        self.code = code
        self.status = status

    def __str__(self) -> str:
        return f"{self.args[0]} (error {self.code})"
