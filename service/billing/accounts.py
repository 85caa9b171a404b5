"""Accounts: who pays, what they hold, and their residential trial allowance."""

from __future__ import annotations

from typing import Any

from sqlalchemy import Connection, insert, select, update
from sqlalchemy.exc import IntegrityError

from service.billing.balance import now
from service.db.tables import accounts


class AccountExists(Exception):
    pass


class NoSuchAccount(LookupError):
    pass


def normalise_email(email: str) -> str:
    return email.strip().lower()


def create(conn: Connection, email: str, *, trials: int, password_hash: str | None = None) -> int:
    try:
        with conn.begin_nested():
            return int(
                conn.execute(
                    insert(accounts)
                    .values(
                        email=normalise_email(email),
                        password_hash=password_hash,
                        balance=0,
                        held=0,
                        residential_trials_left=trials,
                        residential_unlocked=False,
                        created_at=now(),
                    )
                    .returning(accounts.c.id)
                ).scalar_one()
            )
    except IntegrityError:
        raise AccountExists(email) from None


def find_id(conn: Connection, email: str) -> int:
    account_id = conn.execute(
        select(accounts.c.id).where(accounts.c.email == normalise_email(email))
    ).scalar_one_or_none()
    if account_id is None:
        raise NoSuchAccount(email)
    return int(account_id)


def summary(conn: Connection, account_id: int) -> dict[str, Any]:
    row = conn.execute(
        select(
            accounts.c.email,
            accounts.c.balance,
            accounts.c.held,
            accounts.c.residential_trials_left,
            accounts.c.residential_unlocked,
        ).where(accounts.c.id == account_id)
    ).one()
    return {
        "email": row.email,
        "balance": int(row.balance),
        "held": int(row.held),
        "residential_trials_left": int(row.residential_trials_left),
        "residential_unlocked": bool(row.residential_unlocked),
    }


def unlock_residential(conn: Connection, account_id: int) -> None:
    conn.execute(
        update(accounts).where(accounts.c.id == account_id).values(residential_unlocked=True)
    )
