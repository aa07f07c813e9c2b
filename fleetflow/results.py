"""The base of every result fleetflow returns: a pydantic model whose JSON form is ``model_dump(by_alias=True)``.

Fields are snake_case in Python and camelCase in JSON (``main_commit`` → ``mainCommit``); a field whose JSON name
differs says so with ``serialization_alias``. ``--format json`` prints ``to_data(result)``; nothing writes JSON by
hand. Models may be built by field name or by alias.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict
from pydantic.alias_generators import to_camel


class Result(BaseModel):
    """A model with camelCase JSON names."""

    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, serialize_by_alias=True)


def to_data(value: Any) -> Any:
    """Any result (a model, or lists and dicts of models) in its JSON form."""
    if isinstance(value, BaseModel):
        return value.model_dump(mode="json", by_alias=True)
    if isinstance(value, dict):
        return {k: to_data(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [to_data(v) for v in value]
    return value
