"""What the dashboard reads about one account: its scrapes, its ledger and its daily totals.

Every query takes the signed-in account's id and filters on it; nothing here can return a row
of another account.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, date, datetime, time, timedelta
from typing import Any

from sqlalchemy import Connection, case, func, select

from service.db.tables import UsageRow, ledger_entries, usage
from service.db.times import as_utc

PAGE_SIZE = 50
CHART_DAYS = 30

# What the usage page and its CSV show of a scrape: what the billing recorded, and what it cost.
# ``extraction_credits`` (the language model's share of ``credits``) comes after ``credits``.
_OWN = ("account_id", "extraction_credits")
SHOWN = (
    *(name for name in UsageRow._fields if name not in _OWN),
    "credits",
    "extraction_credits",
    "trial",
)
USAGE_COLUMNS = (usage.c.id, usage.c.created_at, *(usage.c[name] for name in SHOWN))


@dataclass(frozen=True, slots=True)
class Page:
    rows: list[dict[str, Any]]
    number: int
    pages: int
    total: int

    @property
    def newer(self) -> int | None:
        return self.number - 1 if self.number > 1 else None

    @property
    def older(self) -> int | None:
        return self.number + 1 if self.number < self.pages else None


@dataclass(frozen=True, slots=True)
class DayTotal:
    day: date
    scrapes: int
    charged: int
    credits: int


def _usage_row(row: Any) -> dict[str, Any]:
    """A row of :data:`USAGE_COLUMNS`; the column types give Python's ints and bools."""
    return {**row._asdict(), "created_at": as_utc(row.created_at)}


def page_bounds(total: int, number: int, size: int) -> tuple[int, int]:
    pages = max(1, -(-total // size))
    return pages, min(max(1, number), pages)


def usage_page(conn: Connection, account_id: int, number: int, size: int = PAGE_SIZE) -> Page:
    """The account's scrapes, newest first, one page of ``size``; page numbers start at 1."""
    total = int(
        conn.execute(
            select(func.count()).select_from(usage).where(usage.c.account_id == account_id)
        ).scalar_one()
    )
    pages, number = page_bounds(total, number, size)
    rows = conn.execute(
        select(*USAGE_COLUMNS)
        .where(usage.c.account_id == account_id)
        .order_by(usage.c.created_at.desc(), usage.c.id.desc())
        .limit(size)
        .offset((number - 1) * size)
    ).all()
    return Page([_usage_row(row) for row in rows], number, pages, total)


def usage_batch(
    conn: Connection, account_id: int, before_id: int | None, size: int
) -> list[dict[str, Any]]:
    """Scrapes newest first by id, below ``before_id``: the CSV export walks them in batches."""
    query = select(*USAGE_COLUMNS).where(usage.c.account_id == account_id)
    if before_id is not None:
        query = query.where(usage.c.id < before_id)
    rows = conn.execute(query.order_by(usage.c.id.desc()).limit(size)).all()
    return [_usage_row(row) for row in rows]


def newest_usage_id(conn: Connection, account_id: int) -> int:
    return int(
        conn.execute(
            select(func.coalesce(func.max(usage.c.id), 0)).where(usage.c.account_id == account_id)
        ).scalar_one()
    )


def usage_of_scrape(
    conn: Connection, account_id: int, after_id: int, url: str, elapsed_ms: int
) -> dict[str, Any] | None:
    """The usage row written for a scrape that just ended (the newest one that matches it)."""
    row = conn.execute(
        select(*USAGE_COLUMNS)
        .where(
            usage.c.account_id == account_id,
            usage.c.id > after_id,
            usage.c.url == url[:4000],
            usage.c.elapsed_ms == elapsed_ms,
        )
        .order_by(usage.c.id.desc())
        .limit(1)
    ).one_or_none()
    return None if row is None else _usage_row(row)


def _day_of(conn: Connection) -> Any:
    if conn.dialect.name == "postgresql":
        return func.date(func.timezone("UTC", usage.c.created_at))
    # SQLite stores the UTC time as text, which date() reads as it is.
    return func.date(usage.c.created_at)


def daily_totals(
    conn: Connection, account_id: int, today: date, days: int = CHART_DAYS
) -> list[DayTotal]:
    """One total per UTC day, oldest first, ``days`` days up to ``today``; quiet days are zero."""
    first = today - timedelta(days=days - 1)
    day = _day_of(conn).label("day")
    charged = func.sum(case((usage.c.credits > 0, 1), else_=0))
    rows = conn.execute(
        select(day, func.count(), charged, func.coalesce(func.sum(usage.c.credits), 0))
        .where(
            usage.c.account_id == account_id,
            usage.c.created_at >= datetime.combine(first, time(), tzinfo=UTC),
        )
        .group_by(day)
    ).all()
    found = {str(row[0])[:10]: row for row in rows}
    totals = []
    for offset in range(days):
        current = first + timedelta(days=offset)
        row = found.get(current.isoformat())
        if row is None:
            totals.append(DayTotal(current, 0, 0, 0))
        else:
            totals.append(DayTotal(current, int(row[1]), int(row[2] or 0), int(row[3])))
    return totals


def ledger_page(conn: Connection, account_id: int, number: int, size: int = PAGE_SIZE) -> Page:
    """The account's ledger entries (purchases, grants, scrapes), newest first."""
    total = int(
        conn.execute(
            select(func.count())
            .select_from(ledger_entries)
            .where(ledger_entries.c.account_id == account_id)
        ).scalar_one()
    )
    pages, number = page_bounds(total, number, size)
    rows = conn.execute(
        select(
            ledger_entries.c.id,
            ledger_entries.c.created_at,
            ledger_entries.c.kind,
            ledger_entries.c.amount,
            ledger_entries.c.balance_after,
            ledger_entries.c.reference,
        )
        .where(ledger_entries.c.account_id == account_id)
        .order_by(ledger_entries.c.created_at.desc(), ledger_entries.c.id.desc())
        .limit(size)
        .offset((number - 1) * size)
    ).all()
    entries = [
        {
            "id": int(row.id),
            "created_at": as_utc(row.created_at),
            "kind": row.kind,
            "amount": int(row.amount),
            "balance_after": int(row.balance_after),
            "reference": row.reference,
        }
        for row in rows
    ]
    return Page(entries, number, pages, total)
