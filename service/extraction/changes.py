"""What changed on a page between two scrapes: the ``change_tracking`` format's comparisons.

Pure functions of two versions of a page, with no database (the snapshots live in
service.scrape.snapshots, the pipeline that compares them in pipelines.changes):

- :func:`normalised_lines`: the markdown as the comparison sees it, line by line: trailing
  spaces dropped, runs of blank lines as one, no blank lines at either end;
- :func:`change_status`: ``new``, ``same``, ``changed`` or ``removed``; the lines are compared
  in their order, so a page whose blocks were reordered is ``changed``;
- :func:`git_diff`: the unified diff of the two markdowns (three lines of context, no file
  header, as ``git diff`` prints a hunk) and its parsed form, in the shape Firecrawl answers
  (``files`` -> ``chunks`` -> ``changes`` with their line numbers);
- :func:`json_changes`: the fields of two extractions that differ, each ``{"previous",
  "current"}``.

The diff is the standard library's difflib (docs/decisions/0040-change-tracking-diffs.md).
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Mapping, Sequence
from typing import Any, Final, Literal

import orjson

ChangeStatus = Literal["new", "same", "changed", "removed"]
#: the statuses of a target that no longer has the page
GONE: Final = frozenset({404, 410})
#: lines of context around each change in the diff, as ``git diff`` prints
CONTEXT: Final = 3

_TRAILING = re.compile(r"[ \t\r\f\v]+$")


def normalised_lines(markdown: str | None) -> list[str]:
    """``markdown`` as its lines are compared: without trailing white space, one blank line
    where there were several, and none first or last."""
    lines: list[str] = []
    blank = False
    for line in (markdown or "").splitlines():
        line = _TRAILING.sub("", line)
        if not line:
            blank = bool(lines)
            continue
        if blank:
            lines.append("")
            blank = False
        lines.append(line)
    return lines


def normalised(markdown: str | None) -> str:
    """The normalised markdown as one text, as a snapshot keeps it."""
    return "\n".join(normalised_lines(markdown))


def change_status(
    previous: Sequence[str] | None, current: Sequence[str], status_code: int
) -> ChangeStatus:
    """``removed`` when the target now answers 404 or 410, ``new`` without a previous version,
    else ``same`` when the normalised lines are equal, in order, and ``changed`` otherwise."""
    if status_code in GONE:
        return "removed"
    if previous is None:
        return "new"
    return "same" if list(previous) == list(current) else "changed"


def _range(start: int, length: int) -> str:
    """A hunk header's range, as ``diff -u`` and ``git diff`` write it (1-based; an empty
    range names the line before it)."""
    first = start + 1
    if length == 1:
        return str(first)
    if not length:
        first -= 1
    return f"{first},{length}"


def git_diff(previous: Sequence[str], current: Sequence[str]) -> dict[str, Any] | None:
    """``{"text", "json"}``: the unified diff of the two versions' lines and its parsed form,
    one file (``from`` and ``to`` null) whose chunks list each change with its line numbers:
    ``normal`` (``ln1`` in the previous version, ``ln2`` in the current), ``del`` and ``add``
    (``ln`` in the version that has the line); None when the lines are the same."""
    matcher = difflib.SequenceMatcher(None, previous, current, autojunk=False)
    text: list[str] = []
    chunks: list[dict[str, Any]] = []
    for group in matcher.get_grouped_opcodes(CONTEXT):
        first, last = group[0], group[-1]
        header = (
            f"@@ -{_range(first[1], last[2] - first[1])} +{_range(first[3], last[4] - first[3])} @@"
        )
        text.append(header)
        changes: list[dict[str, Any]] = []
        for tag, i1, i2, j1, j2 in group:
            if tag == "equal":
                for offset, line in enumerate(previous[i1:i2]):
                    content = " " + line
                    changes.append(
                        {
                            "type": "normal",
                            "normal": True,
                            "ln1": i1 + offset + 1,
                            "ln2": j1 + offset + 1,
                            "content": content,
                        }
                    )
                    text.append(content)
                continue
            for offset, line in enumerate(previous[i1:i2]):
                content = "-" + line
                changes.append(
                    {"type": "del", "del": True, "ln": i1 + offset + 1, "content": content}
                )
                text.append(content)
            for offset, line in enumerate(current[j1:j2]):
                content = "+" + line
                changes.append(
                    {"type": "add", "add": True, "ln": j1 + offset + 1, "content": content}
                )
                text.append(content)
        chunks.append({"content": header, "changes": changes})
    if not chunks:
        return None
    return {
        "text": "\n".join(text) + "\n",
        "json": {"files": [{"from": None, "to": None, "chunks": chunks}]},
    }


def _same(a: Any, b: Any) -> bool:
    return a == b and orjson.dumps(a, option=orjson.OPT_SORT_KEYS) == orjson.dumps(
        b, option=orjson.OPT_SORT_KEYS
    )


def json_changes(previous: Any, current: Any) -> dict[str, dict[str, Any]]:
    """Each field whose value differs between two extractions, ``{"previous", "current"}``
    (a field only one of them has is null in the other). An extraction that is a list of
    records (json.selectors) is compared record by record, its fields named ``<n>.<field>``
    (0-based): the fields of a record that only one version has are null in the other."""
    before = _fields(previous)
    after = _fields(current)
    changed: dict[str, dict[str, Any]] = {}
    for name in dict.fromkeys([*before, *after]):
        old, new = before.get(name), after.get(name)
        if not _same(old, new):
            changed[name] = {"previous": old, "current": new}
    return changed


def _fields(extraction: Any) -> dict[str, Any]:
    if isinstance(extraction, Mapping):
        return dict(extraction)
    if isinstance(extraction, list):
        fields: dict[str, Any] = {}
        for index, record in enumerate(extraction):
            if isinstance(record, Mapping):
                fields.update({f"{index}.{name}": value for name, value in record.items()})
            else:
                fields[str(index)] = record
        return fields
    if extraction is None:
        return {}
    return {"value": extraction}
