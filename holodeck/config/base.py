"""What every config model shares: unknown keys refused, names unique.

Its own module so the models of agent.yaml can live in several small modules
(``models.py``, ``tool_configs.py``) without importing each other in a circle.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict


def require_unique_names(kind: str, names: list[str]) -> None:
    """Raise ValueError naming the first name that appears twice."""
    seen: set[str] = set()
    for name in names:
        if name in seen:
            raise ValueError(f"{kind} names must be unique: {name!r} appears twice")
        seen.add(name)


class StrictModel(BaseModel):
    """Refuses unknown keys, so a typo is an error, not a silently ignored setting."""

    model_config = ConfigDict(extra="forbid")
