"""A request body as the caller reads its errors: JSON object parsing, and pydantic's errors
worded with the field's path as the caller wrote it."""

from __future__ import annotations

import re
from typing import Any, TypeVar

import orjson
from pydantic import BaseModel, ValidationError

from service.core.errors import BadRequest
from service.core.schemas.actions import ACTION_TYPES

M = TypeVar("M", bound=BaseModel)

_MODEL_NAME = re.compile(r" or instance of \w+")


def _where(loc: tuple[Any, ...]) -> str:
    """A location as a caller writes it: ``actions[2].selector``, ``headers["X-A"]``."""
    parts = [part for part in loc if part != "__root__"]
    if len(parts) > 2 and parts[0] == "actions" and isinstance(parts[1], int):
        del parts[2]  # the step's type, which pydantic puts in the location of a tagged union
    where = ""
    for part in parts:
        if isinstance(part, int):
            where += f"[{part}]"
        elif str(part).isidentifier():
            where += f".{part}" if where else str(part)
        else:
            where += f'["{part}"]'
    return where


def _describe(error: dict[str, Any]) -> str:
    loc = _where(tuple(error.get("loc", ())))
    kind = error.get("type", "")
    if kind == "extra_forbidden":
        return f"unknown field '{loc}'"
    if kind == "missing":
        return f"'{loc}' is required"
    if kind == "union_tag_not_found":
        return f"'{loc}.type' is required"
    if kind == "union_tag_invalid":
        types = ", ".join(ACTION_TYPES)
        return f"'{loc}.type' must be one of {types}"
    msg = str(error.get("msg", "is invalid"))
    msg = _MODEL_NAME.sub("", msg.removeprefix("Value error, "))  # the class is ours, not theirs
    return f"'{loc}': {msg}" if loc else msg


def parse_json_object(body: bytes) -> dict[str, Any]:
    try:
        data = orjson.loads(body)
    except orjson.JSONDecodeError:
        raise BadRequest("the body is not valid JSON") from None
    if not isinstance(data, dict):
        raise BadRequest("the body must be a JSON object")
    return data


def validate(model: type[M], data: dict[str, Any]) -> M:
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        errors = exc.errors()
        unknown = [e for e in errors if e.get("type") == "extra_forbidden"]
        first = unknown[0] if unknown else errors[0]
        if len(unknown) > 1:
            names = ", ".join(f"'{_where(tuple(e['loc']))}'" for e in unknown)
            raise BadRequest(f"unknown fields {names}") from None
        raise BadRequest(f"invalid request: {_describe(dict(first))}") from None
