"""The documentation says what the code is: its error table, the modules it names, no run log.

Three checks on docs/*.md, README.md and bench/README.md:

- docs/api.md's "Error codes" table lists exactly ``ERROR_CODES``, each with its status;
- every module path it names (``service/scrape/engine.py``, ``middlewares/robots.py``,
  ``service.jobs.batches``, ``pipelines.result.ResultPipeline``) exists;
- no prose points outside the repository ("the specification", "the reference design") or reads
  as a lab notebook of runs by commit: the history of figures is bench/results/ and git's.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from harness.service import ROOT
from service.core.errors import ERROR_CODES, ERROR_STATUSES, FAILURE_CODES

DOCS = [
    *sorted((ROOT / "docs").glob("*.md")),
    *sorted((ROOT / "docs" / "decisions").glob("*.md")),
    ROOT / "README.md",
    ROOT / "bench" / "README.md",
]

# Paths the docs name that are made, not committed.
GENERATED = {"bench/.venv-scrapyrt"}
# Named by docs/architecture.md's "Where to add things" and added by sibling branches of the same
# change (the output vocabulary, the settings table); drop each once it exists on main.

TOP = ("service", "middlewares", "pipelines", "spiders", "harness", "bench", "tests", "clients")
# "<name>" in a path is a placeholder (tests/test_downloadermiddleware_<name>.py): not checked.
PATH = re.compile(r"(?<![\w./-])((?:" + "|".join(TOP) + r")/[\w./<>-]*[\w/>])")
DOTTED = re.compile(r"(?<![\w./-])((?:service|middlewares|pipelines|spiders)(?:\.\w+)+)")

OUTSIDE = re.compile(
    r"\bthe\s+(?:interface\s+)?specification\b|\breference\s+design\b", re.IGNORECASE
)
# A commit id: 7 to 40 hex digits with at least one digit and one letter (so neither a number nor
# a word such as "defaced").
COMMIT = re.compile(r"\b(?=[0-9a-f]*[0-9])(?=[0-9a-f]*[a-f])[0-9a-f]{7,40}\b")
# An issue or pull request by number ("issue 37", "#44"), not an HTML entity ("&#124;"): the
# docs say what is, and the history of a change is git's.
ISSUE = re.compile(r"\bissues?\s+#?\d+|(?<![&\w])#\d+\b", re.IGNORECASE)


def doc_id(path: Path) -> str:
    return path.relative_to(ROOT).as_posix()


def section(text: str, heading: str) -> str:
    start = text.index(f"\n{heading}\n")
    end = text.find("\n#", start + len(heading) + 2)
    return text[start : end if end >= 0 else len(text)]


def table_rows(text: str) -> list[list[str]]:
    """The body rows of the first markdown table in ``text``, as stripped cells."""
    rows: list[list[str]] = []
    for line in text.splitlines():
        if not line.startswith("|"):
            if rows:
                break
            continue
        cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
        if all(set(cell) <= set("-: ") for cell in cells):
            continue
        rows.append(cells)
    return rows[1:]  # the header row


def code_of(cell: str) -> str:
    match = re.fullmatch(r"`(\w+)`", cell)
    assert match, f"not a code in backquotes: {cell!r}"
    return match.group(1)


def test_api_error_table_lists_every_error_code_with_its_status() -> None:
    text = (ROOT / "docs" / "api.md").read_text(encoding="utf-8")
    rows = table_rows(section(text, "## Error codes"))
    codes = [code_of(row[0]) for row in rows]
    assert len(codes) == len(set(codes)), "a code listed twice"
    assert set(codes) == set(ERROR_CODES)
    for row in rows:
        code, status = code_of(row[0]), row[1]
        expected = {ERROR_STATUSES[code]} if code in ERROR_STATUSES else set()
        if code in FAILURE_CODES or code == "map_failed":
            expected.add(200)
        assert {int(n) for n in re.findall(r"\b[1-5]\d\d\b", status)} == expected, code
        assert ("failed scrape" in status) == (code in FAILURE_CODES), code


def test_api_failed_scrape_table_lists_every_failure_code() -> None:
    text = (ROOT / "docs" / "api.md").read_text(encoding="utf-8")
    rows = table_rows(section(text, "### Error codes of a failed scrape"))
    assert [code_of(row[0]) for row in rows] == list(FAILURE_CODES)


def module_of(parts: list[str]) -> tuple[Path, list[str]] | None:
    """The source file of the longest module prefix of a dotted name, and the rest."""
    for i in range(len(parts), 1, -1):
        base = ROOT.joinpath(*parts[:i])
        for source in (base.with_suffix(".py"), base / "__init__.py"):
            if source.is_file():
                return source, parts[i:]
    return None


def missing_modules(text: str) -> list[str]:
    missing = []
    for match in PATH.finditer(text):
        path = match.group(1).rstrip(".")
        if "<" in path or path in GENERATED:
            continue
        if not (ROOT / path).exists():
            missing.append(path)
    for match in DOTTED.finditer(text):
        found = module_of(match.group(1).split("."))
        if found is None:
            missing.append(match.group(1))
            continue
        source, rest = found
        if rest and not re.search(rf"\b{re.escape(rest[0])}\b", source.read_text("utf-8")):
            missing.append(match.group(1))
    return missing


@pytest.mark.parametrize("doc", DOCS, ids=doc_id)
def test_every_module_a_doc_names_exists(doc: Path) -> None:
    assert missing_modules(doc.read_text(encoding="utf-8")) == []


def notebook_lines(text: str) -> list[str]:
    """What points outside or names a commit, with a little context (a phrase may wrap)."""
    found = []
    for pattern in (OUTSIDE, COMMIT, ISSUE):
        for match in pattern.finditer(text):
            found.append(" ".join(text[max(0, match.start() - 30) : match.end() + 30].split()))
    return found


@pytest.mark.parametrize("doc", DOCS, ids=doc_id)
def test_no_doc_points_outside_or_logs_runs_by_commit(doc: Path) -> None:
    assert notebook_lines(doc.read_text(encoding="utf-8")) == []


def test_the_checks_catch_what_they_are_for() -> None:
    assert notebook_lines("The run before, at `a14a60e` (19:34, the machine before)")
    assert notebook_lines("as the specification's error body is")
    assert notebook_lines("kept up with the\n  specification by its authors")
    assert notebook_lines("The reference design parses on the reactor thread.")
    assert not notebook_lines("8388608 bytes, bug-1255978 0.33, a defaced page, sha256 digests")
    assert notebook_lines("A js page is read as soon as it has settled (issue 37).")
    assert notebook_lines("measured for #44")
    assert not notebook_lines("escapes `|` in cells as `&#124;`, see [Results](#results)")
    assert missing_modules("`service/engine.py` and service.scraping") == [
        "service/engine.py",
        "service.scraping",
    ]
    assert missing_modules("`service/scrape/engine.py`, `pipelines.result.ResultPipeline`") == []
    assert missing_modules("`tests/test_x_<name>.py`") == []
    assert missing_modules("`service.scrape.engine.NoSuchThing`") == [
        "service.scrape.engine.NoSuchThing"
    ]


def test_readme_stays_short() -> None:
    """The README is for users: what the service is and how to start; the rest is in docs/."""
    lines = (ROOT / "README.md").read_text(encoding="utf-8").splitlines()
    assert len(lines) < 200
