"""An account's balance and its entries: what it has, what is free of holds, and credits added.

Every change of balance is an append-only ledger entry whose ``balance_after`` is the new
balance, so the balance always equals the sum of its entries; the database's CHECK constraints
keep it from going below zero.
"""

from __future__ import annotations

from datetime import UTC, datetime

from sqlalchemy import Connection, func, select, update

from service.db.hot import HotConnection, cursor, hot_path, writing
from service.db.tables import accounts, ledger_entries


def now() -> datetime:
    return datetime.now(UTC)


def month_start(moment: datetime) -> datetime:
    """The start of ``moment``'s calendar month in UTC: where a key's monthly cap starts over."""
    moment = moment.astimezone(UTC)
    return datetime(moment.year, moment.month, 1, tzinfo=UTC)


def balance(conn: Connection, account_id: int) -> int:
    return int(
        conn.execute(select(accounts.c.balance).where(accounts.c.id == account_id)).scalar_one()
    )


def available(conn: Connection, account_id: int) -> int:
    row = conn.execute(
        select(accounts.c.balance, accounts.c.held).where(accounts.c.id == account_id)
    ).one()
    return int(row.balance - row.held)


def _append_entry(
    conn: HotConnection, account_id: int, kind: str, amount: int, balance_after: int, reference: str
) -> int:
    sql = hot_path(conn)
    cur = cursor(conn)
    writing(conn)
    try:
        cur.execute(
            sql.sql["new_entry"],
            {
                "account_id": account_id,
                "kind": kind,
                "amount": amount,
                "balance_after": balance_after,
                "reference": reference,
                "created_at": sql.date(now()),
            },
        )
        return int(cur.fetchone()[0])
    finally:
        cur.close()


def credit(conn: Connection, account_id: int, credits: int, *, kind: str, reference: str) -> int:
    """Add credits (a grant or a purchase) with its ledger entry; returns the entry's id."""
    if credits <= 0:
        raise ValueError("credits must be positive")
    balance_after = conn.execute(
        update(accounts)
        .where(accounts.c.id == account_id)
        .values(balance=accounts.c.balance + credits)
        .returning(accounts.c.balance)
    ).scalar_one()
    return _append_entry(conn, account_id, kind, credits, int(balance_after), reference)


def entries_sum(conn: Connection, account_id: int) -> int:
    return int(
        conn.execute(
            select(func.coalesce(func.sum(ledger_entries.c.amount), 0)).where(
                ledger_entries.c.account_id == account_id
            )
        ).scalar_one()
    )
