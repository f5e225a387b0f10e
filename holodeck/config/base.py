"""What every config model shares: unknown keys refused, names unique, a short form.

Its own module so the models of agent.yaml can live in several small modules
(``models.py``, ``tool_configs.py``, ``cases.py``...) without importing each other in a circle.
"""

from __future__ import annotations

from typing import Annotated, Any, ClassVar

from pydantic import BaseModel, BeforeValidator, ConfigDict, model_validator
from pydantic_core import PydanticCustomError


def require_unique_names(kind: str, names: list[str]) -> None:
    """Raise ValueError naming the first name that appears twice."""
    seen: set[str] = set()
    for name in names:
        if name in seen:
            raise ValueError(f"{kind} names must be unique: {name!r} appears twice")
        seen.add(name)


def _not_a_boolean(value: Any) -> Any:
    """Refuse a YAML boolean where a number goes: pydantic would read ``true`` as 1, so
    ``max_text_chars: true`` would be the limit 1 and skip every file."""
    if isinstance(value, bool):
        raise PydanticCustomError(
            "bool_for_number", "a number, not {value}", {"value": str(value).lower()}
        )
    return value


#: A whole number or a number of a config file: a boolean is neither (text such as a
#: substituted ``${TOP_K}`` is still read as its number).
Int = Annotated[int, BeforeValidator(_not_a_boolean)]
Float = Annotated[float, BeforeValidator(_not_a_boolean)]
#: The same, or nothing (``None``; a ``Field``'s bounds then still reach the JSON schema).
MaybeInt = Annotated[int | None, BeforeValidator(_not_a_boolean)]
MaybeFloat = Annotated[float | None, BeforeValidator(_not_a_boolean)]


class StrictModel(BaseModel):
    """Refuses unknown keys, so a typo is an error, not a silently ignored setting, and an
    endless number (``.inf``, ``.nan``): a limit of ``.nan`` would be one no file passes."""

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)


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
