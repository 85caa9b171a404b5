"""Nested extraction schemas: records from a page through a tree of CSS or XPath selectors.

The schema is the one users already write for Crawl4AI's ``JsonCssExtractionStrategy`` (and
``JsonXPathExtractionStrategy``): ``{"name", "baseSelector", "baseFields", "fields": [...]}``.
Each element ``baseSelector`` matches is a record; each field of ``fields`` is a key of it:

- ``text``: the element's visible text, whitespace collapsed; ``html``: its outer HTML;
  ``attribute``: its ``attribute`` (``href`` and ``src`` absolute, as ``links`` are);
  ``regex``: the first group of ``pattern`` in its text (the whole match when it has none),
  run by RE2 (:mod:`service.extraction.patterns`): no pattern backtracks for minutes;
- ``nested``: an object of ``fields`` from the first element ``selector`` matches;
  ``list`` and ``nested_list``: one object per element it matches (``list`` skips empty ones).

A field's ``selector`` picks the first match inside the record (without one: the record's own
element); nothing matched gives its ``default`` (or no key at all). ``transform`` applies
``strip``, ``number``, ``absolute_url``, ``lowercase`` or ``uppercase`` to the value.

A selector is XPath when it starts with ``/``, ``./`` or ``(``, CSS otherwise; inside a record an
XPath is relative to it (``//a`` is read ``.//a``), as Crawl4AI's XPath strategy reads it. XPath
1.0 as lxml runs it, without namespaces, variables or extension functions: a prefix such as
``re:`` or ``exsl:``, a ``$variable`` or a function XPath 1.0 does not define is a 400, where lxml
would only fail once it met them on a page. lxml cannot stop a query (``//i[count(//i[count(//i)
> 0]) > 0]`` is cubic), so a page with ``json.selectors`` is always parsed in an extraction
worker, whose time limit applies (service.extraction.pool).

:func:`check_schema` runs while the request is validated, before anything is fetched (a 400 names
the schema's path); :func:`service.extraction.records_run.extract_records` runs the compiled schema
in the extraction workers with lxml.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Final

from cssselect import SelectorError
from lxml import etree
from parsel.csstranslator import HTMLTranslator

from service.extraction.patterns import (
    Pattern,
    UnusablePattern,
    UnusableXPath,
    check_xpath,
    compile_pattern,
)

__all__ = [
    "FIELD_TYPES",
    "MAX_DEPTH",
    "MAX_FIELDS",
    "TRANSFORMS",
    "InvalidSchema",
    "check_schema",
]

MAX_DEPTH: Final = 10
MAX_FIELDS: Final = 200
MAX_SELECTOR_CHARS: Final = 4096
MAX_PATTERN_CHARS: Final = 1024
FIELD_TYPES: Final = ("text", "attribute", "html", "regex", "nested", "list", "nested_list")
GROUPS: Final = frozenset({"nested", "list", "nested_list"})
_FIELD_KEYS: Final = frozenset(
    {"name", "selector", "type", "attribute", "fields", "pattern", "default", "transform"}
)
_SCHEMA_KEYS: Final = frozenset({"name", "baseSelector", "baseFields", "fields"})
_NUMBER: Final = re.compile(r"[-+]?\d[\d,]*(?:\.\d+)?|[-+]?\.\d+")


class InvalidSchema(ValueError):
    """The schema cannot be run; ``path`` is where, as the caller wrote it."""

    def __init__(self, path: str, message: str) -> None:
        super().__init__(f"'{path}': {message}")
        self.path = path

    def __reduce__(self) -> tuple[type[InvalidSchema], tuple[str, str]]:
        return (type(self), (self.path, str(self).split(": ", 1)[1]))


def is_xpath(selector: str) -> bool:
    """The documented rule: XPath starts with ``/``, ``./`` or ``(``; anything else is CSS."""
    return selector.startswith(("/", "./", "("))


def _relative(xpath: str) -> str:
    return "." + xpath if xpath.startswith("/") else xpath


_TRANSLATOR: Final = HTMLTranslator()


def _compile(selector: Any, path: str, inside: bool) -> etree.XPath:
    """``selector`` as the XPath lxml runs, compiled once; CSS is translated (parsel's
    pseudo-elements ``::text``/``::attr`` are refused: the field's ``type`` says what to take)."""
    if not isinstance(selector, str):
        raise InvalidSchema(path, "must be a CSS or XPath selector")
    if not selector.strip():
        raise InvalidSchema(path, f"invalid CSS selector {selector!r}: empty")
    if len(selector) > MAX_SELECTOR_CHARS:
        raise InvalidSchema(path, f"at most {MAX_SELECTOR_CHARS} characters")
    if is_xpath(selector):
        try:
            xpath = etree.XPath(_relative(selector) if inside else selector, smart_strings=False)
        except (etree.XPathSyntaxError, ValueError):  # ValueError: NUL or control characters
            raise InvalidSchema(path, f"invalid XPath: {selector!r}") from None
        _checked(xpath, selector, path)
        return xpath
    if "::" in selector:
        raise InvalidSchema(path, f"invalid CSS selector {selector!r}: no pseudo-elements")
    try:
        translated = _TRANSLATOR.css_to_xpath(selector, prefix="descendant-or-self::")
        xpath = etree.XPath(translated, smart_strings=False)
        _checked(xpath, translated, path)  # a namespace (``svg|a``) is a prefix there
        return xpath
    except (SelectorError, ValueError, UnicodeError, etree.XPathSyntaxError):
        raise InvalidSchema(path, f"invalid CSS selector {selector!r}") from None


def _checked(xpath: etree.XPath, selector: str, path: str) -> None:
    try:
        check_xpath(xpath, selector)
    except UnusableXPath as exc:
        raise InvalidSchema(path, f"invalid XPath {selector!r}: {exc}") from None


@dataclass(frozen=True, slots=True)
class Field:
    name: str
    xpath: etree.XPath | None
    type: str
    attribute: str = ""
    pattern: Pattern | None = None
    default: Any = None
    transforms: tuple[str, ...] = ()
    fields: tuple[Field, ...] = ()


@dataclass(frozen=True, slots=True)
class Schema:
    base: etree.XPath
    base_fields: tuple[Field, ...]
    fields: tuple[Field, ...]


class _Counter:
    def __init__(self) -> None:
        self.fields = 0


def check_schema(schema: Any, path: str = "json.selectors") -> None:
    """Raises :class:`InvalidSchema` naming the first bad place in ``schema``."""
    compile_schema(schema, path)


def compile_schema(schema: Any, path: str) -> Schema:
    if not isinstance(schema, Mapping):
        raise InvalidSchema(path, "must be an object")
    for key in schema:
        if key not in _SCHEMA_KEYS:
            raise InvalidSchema(f"{path}.{key}", "unknown field")
    if "baseSelector" not in schema:
        raise InvalidSchema(f"{path}.baseSelector", "is required")
    if "fields" not in schema:
        raise InvalidSchema(f"{path}.fields", "is required")
    if not isinstance(schema.get("name", ""), str):
        raise InvalidSchema(f"{path}.name", "must be a string")
    base = _compile(schema["baseSelector"], f"{path}.baseSelector", inside=False)
    counter = _Counter()
    base_fields = _compile_fields(schema.get("baseFields", []), f"{path}.baseFields", 1, counter)
    fields = _compile_fields(schema["fields"], f"{path}.fields", 1, counter)
    return Schema(base, base_fields, fields)


def _compile_fields(fields: Any, path: str, depth: int, counter: _Counter) -> tuple[Field, ...]:
    if depth > MAX_DEPTH:
        raise InvalidSchema(path, f"at most {MAX_DEPTH} levels of fields")
    if not isinstance(fields, list):
        raise InvalidSchema(path, "must be a list of fields")
    compiled = []
    for index, field in enumerate(fields):
        counter.fields += 1
        if counter.fields > MAX_FIELDS:
            raise InvalidSchema(f"{path}[{index}]", f"at most {MAX_FIELDS} fields in all")
        compiled.append(_compile_field(field, f"{path}[{index}]", depth, counter))
    return tuple(compiled)


def _compile_field(field: Any, path: str, depth: int, counter: _Counter) -> Field:
    if not isinstance(field, Mapping):
        raise InvalidSchema(path, "must be an object")
    for key in field:
        if key not in _FIELD_KEYS:
            raise InvalidSchema(f"{path}.{key}", "unknown field")
    name = field.get("name")
    if not isinstance(name, str) or not name:
        raise InvalidSchema(f"{path}.name", "is required: a non-empty string")
    kind = field.get("type")
    if kind not in FIELD_TYPES:
        raise InvalidSchema(f"{path}.type", "must be one of " + ", ".join(FIELD_TYPES))
    selector = field.get("selector")
    if kind in GROUPS and selector is None:
        raise InvalidSchema(f"{path}.selector", f"is required for a {kind} field")
    xpath = None if selector is None else _compile(selector, f"{path}.selector", inside=True)
    attribute = field.get("attribute", "")
    if kind == "attribute" and (not isinstance(attribute, str) or not attribute):
        raise InvalidSchema(f"{path}.attribute", "is required for an attribute field")
    if not isinstance(attribute, str):
        raise InvalidSchema(f"{path}.attribute", "must be a string")
    pattern = None
    if kind == "regex":
        pattern = _pattern(field.get("pattern"), f"{path}.pattern")
    elif "pattern" in field:
        raise InvalidSchema(f"{path}.pattern", "is for a regex field only")
    default = field.get("default")
    if isinstance(default, (dict, list)):
        raise InvalidSchema(f"{path}.default", "must be a string, number, boolean or null")
    transforms = _transforms(field.get("transform"), f"{path}.transform")
    if kind in GROUPS:
        sub = _compile_fields(field.get("fields"), f"{path}.fields", depth + 1, counter)
    elif "fields" in field:
        raise InvalidSchema(f"{path}.fields", f"is for nested, list and nested_list, not {kind}")
    else:
        sub = ()
    return Field(name, xpath, kind, attribute, pattern, default, transforms, sub)


def _pattern(pattern: Any, path: str) -> Pattern:
    if not isinstance(pattern, str) or not pattern:
        raise InvalidSchema(path, "is required for a regex field")
    if len(pattern) > MAX_PATTERN_CHARS:
        raise InvalidSchema(path, f"at most {MAX_PATTERN_CHARS} characters")
    try:
        return compile_pattern(pattern)
    except UnusablePattern as exc:
        raise InvalidSchema(
            path, f"not a regular expression RE2 runs: {pattern!r} ({exc})"
        ) from None


def _transforms(transform: Any, path: str) -> tuple[str, ...]:
    """One transform or a list of them, applied in order."""
    if transform is None:
        return ()
    names = [transform] if isinstance(transform, str) else transform
    if not isinstance(names, list) or not names:
        raise InvalidSchema(path, "must be a transform or a list of them")
    for index, name in enumerate(names):
        if not isinstance(name, str) or name not in TRANSFORMS:
            where = path if isinstance(transform, str) else f"{path}[{index}]"
            raise InvalidSchema(where, "must be one of " + ", ".join(TRANSFORMS))
    return tuple(names)


def _number(value: str, _: Callable[[str], str | None]) -> int | float | None:
    """The first number in ``value``: ``"$1,299.50"`` is 1299.5; thousands commas dropped."""
    found = _NUMBER.search(value)
    if found is None:
        return None
    number = float(found.group().replace(",", ""))
    return int(number) if number.is_integer() and "." not in found.group() else number


TRANSFORMS: Final[dict[str, Callable[[str, Callable[[str], str | None]], Any]]] = {
    "strip": lambda value, _: value.strip(),
    "number": _number,
    "absolute_url": lambda value, resolve: resolve(value),
    "lowercase": lambda value, _: value.lower(),
    "uppercase": lambda value, _: value.upper(),
}
