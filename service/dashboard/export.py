"""The usage CSV: one line per scrape, the columns of the usage page, times in UTC."""

from __future__ import annotations

import csv
import io
from collections.abc import Iterable
from typing import Any

from service.dashboard.usage import SHOWN

COLUMNS = ("time_utc", *SHOWN)
# A spreadsheet runs a cell that starts with one of these as a formula.
FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")


def cell(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    text = str(value)
    if text.startswith(FORMULA_STARTS):
        return "'" + text
    return text


def header() -> bytes:
    return _lines([COLUMNS])


def csv_lines(rows: Iterable[dict[str, Any]]) -> bytes:
    return _lines(
        [
            (
                row["created_at"].strftime("%Y-%m-%dT%H:%M:%SZ"),
                *(cell(row[name]) for name in SHOWN),
            )
            for row in rows
        ]
    )


def _lines(records: Iterable[Iterable[str]]) -> bytes:
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\r\n")
    writer.writerows(records)
    return out.getvalue().encode("utf-8")


def filename(email: str, today: str) -> str:
    local = "".join(ch for ch in email.split("@")[0] if ch.isalnum() or ch in "-_")[:40]
    return f"scrapespy-usage-{local or 'account'}-{today}.csv"
