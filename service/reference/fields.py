"""A JSON schema of the OpenAPI document, read as rows a person can scan: one per field, nested
fields under their parent (``timings.queue``, ``links[].href``), each with its type, default,
limits, allowed values and description."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

# longer patterns (a URL's) say nothing a reader can use; the description says it in words
SHOWN_PATTERN = 48
NESTED_DEPTH = 3


@dataclass(frozen=True, slots=True)
class Kind:
    """What a schema accepts, in words, and the schemas it names."""

    text: str
    refs: tuple[str, ...] = ()
    values: tuple[str, ...] = ()
    limits: tuple[str, ...] = ()
    nested: dict[str, Any] | None = None  # an object whose properties get rows of their own
    description: str = ""

    def pieces(self) -> list[tuple[str, bool]]:
        """The text cut around the schemas it names: (text, is a schema's name)."""
        if not self.refs:
            return [(self.text, False)]
        names = "|".join(re.escape(name) for name in sorted(self.refs, key=len, reverse=True))
        parts = re.split(rf"\b({names})\b", self.text)
        return [(part, index % 2 == 1) for index, part in enumerate(parts) if part]


@dataclass(frozen=True, slots=True)
class Field:
    name: str
    kind: Kind
    required: bool
    default: str | None
    description: str
    depth: int = 0
    anchor: str = ""


@dataclass(frozen=True, slots=True)
class Fields:
    rows: list[Field] = field(default_factory=list)
    rules: list[str] = field(default_factory=list)


def ref_name(ref: str) -> str:
    return ref.rsplit("/", 1)[-1]


def shown_value(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False)


def _number(value: Any) -> str:
    return f"{value:,}".replace(",", "\u202f") if isinstance(value, int) else str(value)


def _count(value: int, word: str, words: str = "") -> str:
    return f"{_number(value)} {word if value == 1 else words or word + 's'}"


def limits_of(schema: dict[str, Any]) -> tuple[str, ...]:
    out = []
    if "exclusiveMinimum" in schema:
        out.append(f"more than {_number(schema['exclusiveMinimum'])}")
    if "minimum" in schema:
        out.append(f"at least {_number(schema['minimum'])}")
    if "exclusiveMaximum" in schema:
        out.append(f"less than {_number(schema['exclusiveMaximum'])}")
    if "maximum" in schema:
        out.append(f"at most {_number(schema['maximum'])}")
    if "multipleOf" in schema:
        out.append(f"a multiple of {schema['multipleOf']}")
    if "minLength" in schema:
        out.append("at least " + _count(schema["minLength"], "character"))
    if "maxLength" in schema:
        out.append("at most " + _count(schema["maxLength"], "character"))
    if "minItems" in schema:
        out.append("at least " + _count(schema["minItems"], "item"))
    if "maxItems" in schema:
        out.append("at most " + _count(schema["maxItems"], "item"))
    if "maxProperties" in schema:
        out.append("at most " + _count(schema["maxProperties"], "entry", "entries"))
    if schema.get("uniqueItems"):
        out.append("no duplicates")
    pattern = schema.get("pattern")
    if pattern and len(pattern) <= SHOWN_PATTERN:
        out.append(f"matches {pattern}")
    return tuple(out)


def _merge(parts: list[Kind], joiner: str) -> Kind:
    refs: list[str] = []
    values: list[str] = []
    limits: list[str] = []
    for part in parts:
        refs += [r for r in part.refs if r not in refs]
        values += [v for v in part.values if v not in values]
        limits += [x for x in part.limits if x not in limits]
    nested = next((p.nested for p in parts if p.nested is not None), None)
    texts: list[str] = []
    for part in parts:
        if part.text not in texts:
            texts.append(part.text)
    description = "; ".join(p.description for p in parts if p.description)
    return Kind(joiner.join(texts), tuple(refs), tuple(values), tuple(limits), nested, description)


def kind_of(schema: dict[str, Any]) -> Kind:
    if "$ref" in schema:
        name = ref_name(schema["$ref"])
        return Kind(name, refs=(name,))
    for combiner in ("anyOf", "oneOf"):
        if combiner in schema and "properties" not in schema:
            parts = [kind_of(part) for part in schema[combiner]]
            nullable = any(part.text == "null" for part in parts)
            parts = [part for part in parts if part.text != "null"]
            merged = _merge(parts, " or ")
            limits = merged.limits + limits_of(schema)
            text = f"{merged.text} or null" if nullable else merged.text
            return Kind(text, merged.refs, merged.values, limits, merged.nested, merged.description)
    limits = limits_of(schema)
    description = schema.get("description", "")
    if "const" in schema:
        return Kind("constant", values=(shown_value(schema["const"]),), description=description)
    values = tuple(shown_value(v) for v in schema.get("enum", ()) if v is not None)
    types = schema.get("type")
    if isinstance(types, list):
        nullable = "null" in types
        named = [t for t in types if t != "null"]
        text = " or ".join(named) + (" or null" if nullable else "")
    elif types is not None:
        text = types
    elif values:
        text = "string" if all(v.startswith('"') for v in values) else "value"
        if None in schema.get("enum", ()):
            text += " or null"
    else:
        text = "any"
    if "format" in schema:
        text += f" ({schema['format']})"
    if schema.get("contentEncoding"):
        text += f" ({schema['contentEncoding']})"
    if text.startswith("array"):
        items = kind_of(schema.get("items", {}))
        text = f"array of {items.text}"
        return Kind(
            text,
            items.refs,
            items.values,
            limits + tuple(f"each {limit}" for limit in items.limits),
            items.nested,
            description,
        )
    if text.startswith("object") and "properties" in schema:
        return Kind(text, (), values, limits, schema, description)
    if text.startswith("object") and isinstance(schema.get("additionalProperties"), dict):
        inner = kind_of(schema["additionalProperties"])
        return Kind(f"object of name to {inner.text}", inner.refs, inner.values, limits)
    return Kind(text, (), values, limits, None, description)


def rules_of(schema: dict[str, Any]) -> list[str]:
    """What an object requires beyond its fields one by one."""
    rules = [part["description"] for part in schema.get("allOf", []) if part.get("description")]
    branches = schema.get("oneOf")
    if branches and "properties" in schema:
        names = [name for branch in branches for name in branch.get("required", [])]
        if names:
            rules.append("exactly one of " + ", ".join(names))
    return rules


def fields_of(schema: dict[str, Any], prefix: str = "", depth: int = 0) -> Fields:
    """A row per property (in the schema's order), then rows for nested objects' properties."""
    out = Fields(rules=rules_of(schema))
    required = set(schema.get("required", ()))
    for name, prop in schema.get("properties", {}).items():
        kind = kind_of(prop)
        description = prop.get("description") or kind.description
        default = shown_value(prop["default"]) if "default" in prop else None
        full = f"{prefix}{name}"
        out.rows.append(
            Field(full, kind, name in required, default, description, depth, anchor=full)
        )
        if kind.nested is not None and depth + 1 < NESTED_DEPTH:
            inner_prefix = f"{full}[]." if kind.text.startswith("array") else f"{full}."
            inner = fields_of(kind.nested, inner_prefix, depth + 1)
            out.rows.extend(inner.rows)
            out.rules.extend(inner.rules)
    return out
