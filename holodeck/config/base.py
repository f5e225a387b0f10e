"""What every config model shares: unknown keys refused, names unique, a short form.

Its own module so the models of agent.yaml can live in several small modules
(``models.py``, ``tool_configs.py``, ``cases.py``...) without importing each other in a circle.
"""

from __future__ import annotations

from typing import Any, ClassVar

from pydantic import BaseModel, ConfigDict, model_validator


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


class ShortForm(StrictModel):
    """A model that may also be written as a plain string: the value of ``_short_key``."""

    _short_key: ClassVar[str]

    @model_validator(mode="before")
    @classmethod
    def _plain_string(cls, value: Any) -> Any:
        return {cls._short_key: value} if isinstance(value, str) else value

    @classmethod
    def __get_pydantic_json_schema__(cls, core_schema: Any, handler: Any) -> Any:
        """Editors must accept the plain-string form too."""
        return {"anyOf": [{"type": "string"}, handler(core_schema)]}
