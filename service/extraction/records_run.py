"""Runs a records schema (service.extraction.records checked and compiles it) on a page with lxml,
in an extraction worker: each element the base selector matches is a record, its values bounded by
``budget`` characters in all (then the records stop there) and ``MAX_RECORDS`` per list.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Callable, Mapping
from functools import lru_cache
from typing import Any, Final

import orjson
from lxml import etree

from service.extraction.records import GROUPS, TRANSFORMS, Field, Schema, compile_schema

MAX_RECORDS: Final = 10_000  # per list, the records at the top included


BUDGET_CHARS: Final = 2 * 1024 * 1024  # the values' characters in all (TEXT_CHARS)


_URL_ATTRIBUTES: Final = frozenset({"href", "src"})


_SPACE: Final = re.compile(r"\s+")


def _nodes(xpath: etree.XPath, element: Any) -> list[Any]:
    """What ``xpath`` selects from ``element``: a list (an XPath may also give a string, a
    number or a boolean, which count as one node)."""
    if not isinstance(element, etree._Element):
        return []
    try:
        found = xpath(element)
    except etree.XPathEvalError:  # what check_schema could not see: count(1) on a match
        return []
    return found if isinstance(found, list) else [found]


def _parse(html: str) -> Any:
    """``html``'s tree, parsed by lxml as parsel parses it (huge pages allowed: the bounds are
    checked before, service.extraction.bounds), without lxml.html's element classes."""
    parser = etree.HTMLParser(recover=True, huge_tree=True, collect_ids=False)
    try:
        root = etree.fromstring(html.replace("\x00", ""), parser=parser)
    except (etree.ParserError, ValueError):
        root = None
    return root if root is not None else etree.fromstring("<html></html>", parser=parser)


@lru_cache(maxsize=64)
def _compiled(schema: bytes, thread: int) -> Schema:
    """A worker compiles the schema of a job's pages once (checked by the API already); per
    thread, as lxml's XPath objects are not to be shared between threads."""
    return compile_schema(orjson.loads(schema), "json.selectors")


class _Run:
    """One page's extraction: the URL resolver and what is left of the character budget."""

    def __init__(self, resolve: Callable[[str], str | None], budget: int) -> None:
        self.resolve = resolve
        self.left = budget
        self.cut = False

    def spend(self, value: Any) -> Any:
        """``value``, cut to what is left of the budget (the last value the records keep)."""
        if isinstance(value, str):
            if len(value) > self.left:
                value = value[: self.left]
                self.cut = True
            self.left -= len(value)
        return value

    def item(self, element: Any, fields: tuple[Field, ...]) -> dict[str, Any]:
        item: dict[str, Any] = {}
        for field in fields:
            if self.cut:
                break
            value = self.field(element, field)
            if value is not None:
                item[field.name] = value
        return item

    def many(self, elements: list[Any], fields: tuple[Field, ...], skip_empty: bool) -> list:
        items = []
        for element in elements[:MAX_RECORDS]:
            if self.cut:
                break
            item = self.item(element, fields)
            if item or not skip_empty:
                items.append(item)
        return items

    def field(self, element: Any, field: Field) -> Any:
        if field.type in GROUPS:
            assert field.xpath is not None
            found = _nodes(field.xpath, element)
            if field.type == "nested":
                return self.item(found[0], field.fields) if found else field.default
            return self.many(found, field.fields, skip_empty=field.type == "list")
        if field.xpath is not None:
            found = _nodes(field.xpath, element)
            if not found:
                return field.default
            element = found[0]
        value = self.value(element, field)
        for name in field.transforms:
            if value is None:
                break
            value = TRANSFORMS[name](str(value), self.resolve)
        return self.spend(value if value is not None else field.default)

    def value(self, root: Any, field: Field) -> str | None:
        if not isinstance(root, etree._Element):  # a text or attribute node of an XPath
            return str(root)
        if field.type == "attribute":
            value = root.get(field.attribute)
            if value is not None and field.attribute.lower() in _URL_ATTRIBUTES:
                return self.resolve(value.strip())
            return value
        if field.type == "html":
            return etree.tostring(root, encoding="unicode", method="html", with_tail=False)
        text = _SPACE.sub(" ", "".join(root.itertext())).strip()
        if field.type == "text":
            return text
        assert field.pattern is not None
        found = field.pattern.search(text)
        if found is None:
            return None
        return found.group(1) if field.pattern.groups else found.group()


def extract_records(
    schema: Mapping[str, Any],
    html: str,
    resolve: Callable[[str], str | None],
    budget: int = BUDGET_CHARS,
) -> tuple[list[dict[str, Any]], bool]:
    """The records of ``html`` through ``schema`` (checked), and whether the budget cut them."""
    compiled = _compiled(orjson.dumps(schema), threading.get_ident())
    root = _parse(html)
    run = _Run(resolve, budget)
    records = []
    for element in _nodes(compiled.base, root)[:MAX_RECORDS]:
        if run.cut:
            break
        record = run.item(element, compiled.base_fields)
        record.update(run.item(element, compiled.fields))
        if record:
            records.append(record)
    return records, run.cut
