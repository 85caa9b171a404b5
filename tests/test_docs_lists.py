"""The lists the docs keep agree with the code they describe.

- docs/architecture.md's module map names every module of the product (``service/``,
  ``middlewares/``, ``pipelines/``, ``spiders/``) and no module that does not exist; a package's
  ``__init__.py`` counts when it holds more than a docstring;
- every list of formats, engines or tiers in README.md and docs/api.md names all of them, as the
  vocabulary (``service.core.vocabulary``) declares them.

Each map entry is a bullet that opens with its package (`` `service/extraction/` ``) and names the
package's modules relative to it (`` `pool.py` ``, `` `payments/stripe_checkout.py` ``).
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from pathlib import Path

import pytest

from harness.service import ROOT
from service.core.vocabulary import ENGINES, FORMATS, TIERS

PRODUCT = ("service", "middlewares", "pipelines", "spiders")


def product_modules() -> set[str]:
    """Every module of the product as a path, migrations and docstring-only packages left out."""
    found = set()
    for root in PRODUCT:
        for path in (ROOT / root).rglob("*.py"):
            inside = path.relative_to(ROOT)
            if "migrations" in inside.parts:
                continue
            if path.name == "__init__.py":
                body = ast.parse(path.read_text(encoding="utf-8")).body
                if all(isinstance(n, ast.Expr) and isinstance(n.value, ast.Constant) for n in body):
                    continue
            found.add(inside.as_posix())
    return found


def module_map() -> str:
    text = (ROOT / "docs" / "architecture.md").read_text(encoding="utf-8")
    start = text.index("\n## Module map\n")
    end = text.find("\n## ", start + 1)
    return text[start : end if end >= 0 else len(text)]


BULLET = re.compile(r"^- `((?:" + "|".join(PRODUCT) + r")(?:/[\w]+)*/)`", re.MULTILINE)
FILE = re.compile(r"`([\w/]+\.py)`")


def mapped_modules(section: str) -> list[str]:
    """The module paths a map names: each bullet's ``x.py`` under the bullet's package."""
    named: list[str] = []
    starts = [(m.start(), m.group(1)) for m in BULLET.finditer(section)]
    for (start, package), (end, _) in zip(starts, [*starts[1:], (len(section), "")], strict=True):
        for found in FILE.finditer(section[start:end]):
            name = found.group(1)
            named.append(name if name.startswith(PRODUCT) else package + name)
    return named


def test_the_module_map_names_every_module_and_only_modules() -> None:
    named = set(mapped_modules(module_map()))
    modules = product_modules()
    assert sorted(modules - named) == [], "modules the map does not name"
    assert sorted(named - modules) == [], "modules the map names that do not exist"


# --- lists of formats, engines and tiers --------------------------------------------------------

# One enumeration: backquoted items, each perhaps followed by a remark in brackets, joined by
# commas, "or", "and" or slashes: "`markdown`, `html` (cleaned), `raw_html` and `screenshot`".
REMARK = r"(?:\s*\((?:[^()]|\([^()]*\))*\))?"
ITEM = r"`[^`\n]+`" + REMARK
JOIN = r"(?:,\s+or\s+|,\s+and\s+|,\s+|\s+or\s+|\s+and\s+|\s*/\s*)"
ENUMERATION = re.compile(ITEM + r"(?:" + JOIN + ITEM + r")+")
ITEM_NAME = re.compile(r"`([^`\n]+)`" + REMARK)
CELL = re.compile(r"`(\w+)`")
# name: (the vocabulary, how many of its words in a row make a list of it); two formats in a
# row are often a pair on purpose ("`markdown` and `html` are cut"), two engines or tiers not
VOCABULARIES: dict[str, tuple[tuple[str, ...], int]] = {
    "formats": (tuple(FORMATS), 3),
    "engines": (tuple(ENGINES), 2),
    "tiers": (tuple(TIERS), 2),
}
LIST_DOCS = ("README.md", "docs/api.md")


def bracketed(text: str) -> Iterator[str]:
    """``text`` and every text in brackets inside it, at any depth."""
    yield text
    depth, start = 0, 0
    for index, char in enumerate(text):
        if char == "(":
            if depth == 0:
                start = index + 1
            depth += 1
        elif char == ")" and depth:
            depth -= 1
            if depth == 0:
                yield from bracketed(text[start:index])


def table_runs(text: str) -> Iterator[list[str]]:
    """Each table row's cells that are one backquoted word, and each table's first column."""
    column: list[str] = []
    for line in [*text.splitlines(), ""]:
        if not line.startswith("|"):
            if column:
                yield column
            column = []
            continue
        cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
        yield [match.group(1) for cell in cells if (match := CELL.fullmatch(cell))]
        if first := CELL.fullmatch(cells[0]):
            column.append(first.group(1))


def runs(text: str) -> Iterator[list[str]]:
    for part in bracketed(text):
        for found in ENUMERATION.finditer(part):
            yield [item.group(1) for item in ITEM_NAME.finditer(found.group(0))]
    yield from table_runs(text)


def vocabulary_lists(text: str) -> Iterator[tuple[str, list[str], list[str]]]:
    """(vocabulary, a list of it in ``text``, the words the list leaves out)."""
    for items in runs(text):
        for name, (words, least) in VOCABULARIES.items():
            listed: list[str] = []
            for item in [*items, None]:
                if item in words or (item == "auto" and listed):
                    listed.append(item)
                    continue
                if sum(word in words for word in listed) >= least:
                    yield name, listed, [word for word in words if word not in listed]
                listed = []


@pytest.mark.parametrize("doc", LIST_DOCS)
def test_every_list_of_formats_engines_and_tiers_names_them_all(doc: str) -> None:
    text = (ROOT / doc).read_text(encoding="utf-8")
    found = list(vocabulary_lists(text))
    assert {name for name, _, _ in found} == set(VOCABULARIES), "a vocabulary no list shows"
    assert [(name, listed, left) for name, listed, left in found if left] == []


def test_the_checks_catch_what_they_are_for() -> None:
    short = "`formats` adds any of `markdown`, `html` (cleaned), `raw_html` and\n`screenshot` (js)"
    assert [left for _, _, left in vocabulary_lists(short)] == [
        [f for f in FORMATS if f not in ("markdown", "html", "raw_html", "screenshot")]
    ]
    assert list(vocabulary_lists("keeps `text`, `markdown` and `html` short")) == []
    engine_row = "| `engine` | `static` | `static` (a), `js` (b) or `auto` (`static`, then `js`) |"
    assert [listed for _, listed, _ in vocabulary_lists(engine_row)][0] == ["static", "js", "auto"]
    table = "| engine | `none` | `datacenter` |\n|---|---|---|\n| `static` | 1 | 2 |\n"
    assert ("tiers", ["none", "datacenter"], ["residential"]) in list(vocabulary_lists(table))
    section = "\n- `service/egress/`: `addresses.py`, `payments/x.py` and `service/db/hot.py`\n"
    assert mapped_modules(section) == [
        "service/egress/addresses.py",
        "service/egress/payments/x.py",
        "service/db/hot.py",
    ]


# --- decision records ---------------------------------------------------------------------------

RECORDS = sorted((ROOT / "docs" / "decisions").glob("*.md"))
SECTIONS = ("Context", "Decision", "Measurement", "Consequences")


@pytest.mark.parametrize("record", RECORDS, ids=lambda path: path.name)
def test_a_decision_record_has_its_sections_and_is_listed(record: Path) -> None:
    number = record.name.split("-")[0]
    text = record.read_text(encoding="utf-8")
    assert re.fullmatch(r"\d{4}", number) and text.startswith(f"# {number}: ")
    headings = set(re.findall(r"^## (\w+)$", text, re.MULTILINE))
    headings |= {"Measurement"} & {h.removesuffix("s") for h in headings}  # or "Measurements"
    assert [section for section in SECTIONS if section not in headings] == []
    architecture = (ROOT / "docs" / "architecture.md").read_text(encoding="utf-8")
    assert f"(decisions/{record.name})" in architecture


def test_decision_records_have_numbers_of_their_own() -> None:
    numbers = [record.name.split("-")[0] for record in RECORDS]
    assert len(numbers) == len(set(numbers))
