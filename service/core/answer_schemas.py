"""The JSON Schema of an answer typed once (a TypedDict or a dataclass), as ``/openapi.json``
writes it: without pydantic's titles, nested types inlined, ``X | None`` as
``{"type": [X, "null"]}``.

The answers themselves are plain dicts and dataclasses, never validated on the way out: the
types are there for mypy and for the document. An answer made of other answers (a page of
usage rows) refers to them by their component name (``#/components/schemas/UsageRow``), for
the types named in ``components``.
"""

from __future__ import annotations

from typing import Any

from pydantic import TypeAdapter

COMPONENTS = "#/components/schemas/"
_DEFINITIONS = "#/$defs/"


def answer_schema(annotation: Any, components: tuple[type, ...] = ()) -> dict[str, Any]:
    """The schema of ``annotation``; the types of ``components`` within it are references to
    the document's components of their names."""
    schema = TypeAdapter(annotation).json_schema(ref_template=_DEFINITIONS + "{model}")
    return plain(schema, frozenset(component.__name__ for component in components))


def plain(schema: dict[str, Any], components: frozenset[str] = frozenset()) -> dict[str, Any]:
    """``schema`` without pydantic's titles, with its definitions inlined (but those named in
    ``components``, referred to in the document's components) and ``X | None`` written as
    ``{"type": [X, "null"]}``."""
    definitions = schema.pop("$defs", {})

    def walk(node: Any) -> Any:
        if isinstance(node, list):
            return [walk(item) for item in node]
        if not isinstance(node, dict):
            return node
        ref = node.get("$ref")
        if isinstance(ref, str) and ref.startswith(_DEFINITIONS):
            name = ref.removeprefix(_DEFINITIONS)
            beside = {key: value for key, value in node.items() if key != "$ref"}
            if name in components:
                return {"$ref": COMPONENTS + name, **walk(beside)}
            return {**walk(definitions[name]), **walk(beside)}
        node = {
            key: {name: walk(sub) for name, sub in value.items()}
            if key == "properties"
            else walk(value)
            for key, value in node.items()
            if key != "title"
        }
        either = node.get("anyOf")
        if (
            isinstance(either, list)
            and len(either) == 2
            and {"type": "null"} in either
            and all(set(option) == {"type"} for option in either)
        ):
            del node["anyOf"]
            node["type"] = [option["type"] for option in either if option["type"] != "null"] + [
                "null"
            ]
        return node

    plain: dict[str, Any] = walk(schema)
    return plain
