"""Refusals of the storage layer, each with the stable numeric code of seed 004."""

from __future__ import annotations

from holodeck.errors import ConfigError, HoloDeckError

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


class LibraryOwnedError(ConfigError):
    """A library another project fills: refused before anything of it is removed or read
    (exit 2). The message never names the other project (``owner`` holds its record)."""

    def __init__(
        self, tenant_id: str, library_id: str, owner: dict[str, str], claimant: dict[str, str]
    ) -> None:
        super().__init__(
            f"library {library_id!r} of tenant {tenant_id!r} is filled by another project"
        )
        self.tenant_id = tenant_id
        self.library_id = library_id
        self.owner = owner
        self.claimant = claimant
