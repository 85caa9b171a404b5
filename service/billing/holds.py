"""Holds: the credits (and the residential trial) reserved for a scrape before it runs.

Every function takes a SQLAlchemy ``Connection`` inside a transaction (or the hot path's raw
connection, service.db.hot) and works with conditional UPDATEs, so concurrent requests (threads
here, processes or machines in production) can never take the balance below zero or use more
trials than there are. What a request holds is service.billing.rules' ``hold_terms``.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from sqlalchemy import Connection, func, select, update

from service.billing.balance import available, month_start, now
from service.db.hot import HotConnection, cursor, hot_path, writing
from service.db.tables import accounts, api_keys, holds, usage


class NoTrialLeft(Exception):
    """A residential trial was asked for and the account has none left."""


class KeyCapReached(Exception):
    """The key's monthly cap would be passed: ``spent`` (spent this month and held now, by this
    key) plus ``cost`` is over ``cap``."""

    def __init__(self, cap: int, spent: int, cost: int):
        super().__init__(f"key cap reached: cap {cap}, spent or held {spent}, cost {cost}")
        self.cap = cap
        self.spent = spent
        self.cost = cost


class InsufficientCredits(Exception):
    def __init__(self, cost: int, available: int):
        super().__init__(f"insufficient credits: cost {cost}, available {available}")
        self.cost = cost
        self.available = available


class HoldGone(Exception):
    """The hold to extend is no longer held: settled (by whoever answered) or expired."""


class OverLimit(Exception):
    """Extending the hold would take it past the request's limit (its ``max_credits``)."""

    def __init__(self, limit: int, amount: int):
        super().__init__(f"over the limit: limit {limit}, amount {amount}")
        self.limit = limit
        self.amount = amount


def hold(
    conn: HotConnection,
    account_id: int,
    amount: int,
    *,
    trial: bool,
    ttl_seconds: int,
    key_id: int | None = None,
    key_cap: int | None = None,
) -> int:
    """Reserve ``amount`` credits for one scrape, and one residential trial when ``trial``.

    Raises KeyCapReached, InsufficientCredits, or NoTrialLeft. Reserving the trial here, in the
    same conditional UPDATE, is what keeps concurrent requests from using more trials than there
    are. The hold records ``key_id``; with a ``key_cap`` it is refused when what the key spent
    this calendar month (UTC), what it holds now and ``amount`` together pass the cap. Without
    a cap nothing is summed. SQLite runs one write transaction at a time, so two holds of one key
    cannot both fit under its cap; PostgreSQL's ``scrapespy_hold`` locks the key's row for that.
    Runs on the driver's cursor (service.db.hot): it is half of the ledger's hot path.
    """
    if amount < 0:
        raise ValueError("a hold cannot be negative")
    sql = hot_path(conn)
    cur = cursor(conn)
    writing(conn)
    created = now()
    try:
        if sql.functions:
            params = {
                "account_id": account_id,
                "amount": amount,
                "trial": trial,
                "created_at": created,
                "expires_at": created + timedelta(seconds=ttl_seconds),
                "key_id": key_id,
                "key_cap": key_cap,
            }
            cur.execute(sql.sql["pg_hold"], params)
            return _held(cur.fetchone(), amount, trial, key_cap)
        if key_cap is not None:
            cur.execute(
                sql.sql["key_spent"],
                {"key_id": key_id, "month_start": sql.date(month_start(created))},
            )
            spent = int(cur.fetchone()[0])
            if spent + amount > key_cap:
                raise KeyCapReached(key_cap, spent, amount)
        cur.execute(
            sql.sql["reserve_with_trial" if trial else "reserve"],
            {"account_id": account_id, "amount": amount},
        )
        if cur.rowcount != 1:
            cur.execute(sql.sql["account_state"], {"account_id": account_id})
            balance, held, trials_left = cur.fetchone()
            if trial and trials_left <= 0:
                raise NoTrialLeft()
            raise InsufficientCredits(amount, int(balance - held))
        cur.execute(
            sql.sql["new_hold"],
            {
                "account_id": account_id,
                "amount": amount,
                "trial": trial,
                "created_at": sql.date(created),
                "expires_at": sql.date(created + timedelta(seconds=ttl_seconds)),
                "key_id": key_id,
            },
        )
        return int(cur.fetchone()[0])
    finally:
        cur.close()


def _held(row: Any, amount: int, trial: bool, key_cap: int | None) -> int:
    """The new hold's id from a ``pg_hold`` row, or its refusal raised as :func:`hold` does."""
    new_hold, left, trials_left, spent = row
    if new_hold is None:
        if key_cap is not None and spent is not None:
            raise KeyCapReached(key_cap, int(spent), amount)
        if trial and trials_left <= 0:
            raise NoTrialLeft()
        raise InsufficientCredits(amount, int(left))
    return int(new_hold)


def extend_hold(
    conn: Connection,
    hold_id: int,
    extra: int,
    *,
    limit: int | None = None,
    key_cap: int | None = None,
) -> int:
    """Hold ``extra`` more credits on ``hold_id``, all or nothing; returns the hold's new amount.

    For what is known to cost more than was held once the scrape is done: a document's blocks
    of pages (pipelines.billing). Refused as :func:`hold` refuses, against what is held now:
    OverLimit past ``limit`` in all, KeyCapReached past the key's ``key_cap``,
    InsufficientCredits past the available balance; HoldGone when the hold was settled or
    expired meanwhile. The rows are changed in the settlement's order (the hold, then the
    account; the key's row first, as :func:`hold` locks it), each UPDATE conditional, so no
    interleaving overdraws; a refusal raises, and the caller's transaction rolls back.
    """
    if extra <= 0:
        raise ValueError("a hold is extended by a positive amount")
    if key_cap is not None:
        _check_key_cap(conn, hold_id, extra, key_cap)
    grown = update(holds).where(holds.c.id == hold_id, holds.c.status == "held")
    if limit is not None:
        grown = grown.where(holds.c.amount + extra <= limit)
    claimed = conn.execute(
        grown.values(amount=holds.c.amount + extra).returning(holds.c.account_id, holds.c.amount)
    ).one_or_none()
    if claimed is None:
        amount = conn.execute(
            select(holds.c.amount).where(holds.c.id == hold_id, holds.c.status == "held")
        ).scalar_one_or_none()
        if amount is None or limit is None:
            raise HoldGone()
        raise OverLimit(limit, int(amount) + extra)
    reserved = conn.execute(
        update(accounts)
        .where(accounts.c.id == claimed.account_id, accounts.c.balance - accounts.c.held >= extra)
        .values(held=accounts.c.held + extra)
    ).rowcount
    if reserved != 1:
        raise InsufficientCredits(extra, available(conn, claimed.account_id))
    return int(claimed.amount)


def _check_key_cap(conn: Connection, hold_id: int, extra: int, key_cap: int) -> None:
    """Raises KeyCapReached when the hold's key, with ``extra`` more, passes ``key_cap``. The
    key's row is locked first, as PostgreSQL's ``scrapespy_hold`` locks it (FOR NO KEY UPDATE),
    so that two holds of the key cannot both fit."""
    key_id = conn.execute(select(holds.c.key_id).where(holds.c.id == hold_id)).scalar()
    if key_id is None:
        return
    conn.execute(
        select(api_keys.c.id).where(api_keys.c.id == key_id).with_for_update(key_share=True)
    )
    spent_this_month = (
        select(func.coalesce(func.sum(usage.c.credits), 0))
        .where(usage.c.key_id == key_id, usage.c.created_at >= month_start(now()))
        .scalar_subquery()
    )
    held_now = (
        select(func.coalesce(func.sum(holds.c.amount), 0))
        .where(holds.c.key_id == key_id, holds.c.status == "held")
        .scalar_subquery()
    )
    spent = int(conn.execute(select(spent_this_month + held_now)).scalar_one())
    if spent + extra > key_cap:
        raise KeyCapReached(key_cap, spent, extra)


@dataclass(frozen=True, slots=True)
class AuthorizedHold:
    """What ``authorize_and_hold`` found and did: the key's account, and the hold or why not."""

    key_hash: str
    account_id: int
    residential_unlocked: bool
    residential_trials_left: int
    amount: int  # what the hold is (or would have been) for
    trial: bool
    hold_id: int | None  # None: nothing was held
    available: int | None  # when the credits were short
    trials_left_after: int
    key_id: int
    key_cap: int | None
    key_spent: int | None  # when the key's cap was reached: spent this month and held


def authorize_and_hold_params(
    key_hash: str, *, residential: bool, amount: int, trial_amount: int, ttl_seconds: int
) -> dict[str, Any]:
    """The parameters of the hot path's ``pg_authorize_hold`` (see :func:`authorize_and_hold`)."""
    created = now()
    return {
        "digest": key_hash,
        "residential": residential,
        "amount": amount,
        "trial_amount": trial_amount,
        "created_at": created,
        "expires_at": created + timedelta(seconds=ttl_seconds),
    }


def authorized_hold(row: Any) -> AuthorizedHold | None:
    """What a ``pg_authorize_hold`` row says; None when no key hashes to the digest."""
    if row is None:
        return None
    (digest, account_id, unlocked, trials, held, trial, hold_id, left, trials_after) = row[:9]
    key_id, cap, spent = row[9:]
    return AuthorizedHold(
        digest,
        int(account_id),
        bool(unlocked),
        int(trials),
        int(held),
        bool(trial),
        None if hold_id is None else int(hold_id),
        None if left is None else int(left),
        int(trials_after) if trials_after is not None else int(trials),
        int(key_id),
        None if cap is None else int(cap),
        None if spent is None else int(spent),
    )


def authorize_and_hold(
    conn: HotConnection,
    key_hash: str,
    *,
    residential: bool,
    amount: int,
    trial_amount: int,
    ttl_seconds: int,
) -> AuthorizedHold | None:
    """PostgreSQL only: the key lookup and :func:`hold` in one statement (migrations 0003, 0007).

    ``amount`` is the requested tier's cost and ``trial_amount`` the ``none`` cost, which a
    residential trial holds; None when no key hashes to ``key_hash``. The caller checks the
    outcome against ``service.billing.pricing.quote`` and raises as :func:`hold` would. The service
    sends the same statement through ``Database.call``.
    """
    params = authorize_and_hold_params(
        key_hash,
        residential=residential,
        amount=amount,
        trial_amount=trial_amount,
        ttl_seconds=ttl_seconds,
    )
    cur = cursor(conn)
    writing(conn)
    try:
        cur.execute(hot_path(conn).sql["pg_authorize_hold"], params)
        row = cur.fetchone()
    finally:
        cur.close()
    return authorized_hold(row)


def expire_holds(conn: Connection, *, limit: int = 500) -> int:
    """Release holds past their expiry (their process died); returns how many were freed."""
    query = (
        select(holds.c.id)
        .where(holds.c.status == "held", holds.c.expires_at < now())
        .order_by(holds.c.expires_at)
        .limit(limit)
    )
    if conn.dialect.name == "postgresql":
        query = query.with_for_update(skip_locked=True)
    freed = 0
    for hold_id in conn.execute(query).scalars().all():
        claimed = conn.execute(
            update(holds)
            .where(holds.c.id == hold_id, holds.c.status == "held")
            .values(status="expired", settled_at=now())
            .returning(holds.c.account_id, holds.c.amount, holds.c.trial)
        ).one_or_none()
        if claimed is not None:
            values: dict[str, Any] = {"held": accounts.c.held - claimed.amount}
            if claimed.trial:
                values["residential_trials_left"] = accounts.c.residential_trials_left + 1
            conn.execute(
                update(accounts).where(accounts.c.id == claimed.account_id).values(**values)
            )
            freed += 1
    return freed
