"""The caller's JSON Schema for a language model's answer (``json.schema``): checked before
anything is fetched, and the answer validated against it, by ``jsonschema`` with the schema's
own draft (2020-12 when it names none). Light to import: the request's checks use it."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

import jsonschema

#: characters counted as one token when bounding the page sent to the model (OpenAI's rule of
#: thumb for English; a tokenizer such as tiktoken downloads its tables at run time)
CHARS_PER_TOKEN = 4
#: the most a caller's JSON Schema may be, serialized
MAX_SCHEMA_BYTES = 32 * 1024
#: what a prompt without a schema asks for: one JSON object
ANY_OBJECT: Mapping[str, Any] = {"type": "object"}


class InvalidSchema(ValueError):
    """The caller's schema is not a JSON Schema; ``path`` says where, for the 400."""

    def __init__(self, path: str, message: str) -> None:
        super().__init__(message)
        self.path = path


def most_tokens(max_input_tokens: int, max_output_tokens: int) -> int:
    """The most tokens one extraction may use, both attempts, for its hold: each sends the
    page (its bound), the schema (at most :data:`MAX_SCHEMA_BYTES`) and, the second time, the
    first answer, and gets an answer (its bound); the instructions are counted within."""
    one = max_input_tokens + MAX_SCHEMA_BYTES // CHARS_PER_TOKEN + 2 * max_output_tokens
    return 2 * one


def check_schema(schema: Any) -> None:
    """Refuses a schema that is not an object, too large, or not valid for its draft (checked
    before anything is fetched)."""
    if not isinstance(schema, dict):
        raise InvalidSchema("", "must be an object (a JSON Schema)")
    if len(json.dumps(schema)) > MAX_SCHEMA_BYTES:
        raise InvalidSchema("", f"is over {MAX_SCHEMA_BYTES} bytes")
    validator = jsonschema.validators.validator_for(schema)
    try:
        validator.check_schema(schema)
    except jsonschema.SchemaError as exc:
        raise InvalidSchema(_path(exc.absolute_path), exc.message) from None


def _path(parts: Any) -> str:
    return "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in parts).lstrip(".")


def violation(value: Any, schema: Mapping[str, Any]) -> str | None:
    """Why ``value`` does not validate against ``schema`` (its most relevant error, where it
    is), for the model's second attempt and the scrape's error; None when it validates."""
    validator_class = jsonschema.validators.validator_for(schema)
    error = jsonschema.exceptions.best_match(validator_class(schema).iter_errors(value))
    if error is None:
        return None
    where = _path(error.absolute_path)
    return f"at {where or 'the top'}: {error.message}"
