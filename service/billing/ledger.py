"""The prepaid ledger: holds, captures, releases, grants and purchases.

Every function takes a SQLAlchemy ``Connection`` inside a transaction and does its work with
conditional UPDATEs, so concurrent requests (threads here, processes or machines in production)
can never take the balance below zero, settle a hold twice or credit a payment twice. The
database's CHECK constraints are the backstop. Every change of balance is an append-only ledger
entry whose ``balance_after`` is the new balance, so the balance always equals the sum of its
entries.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from sqlalchemy import Connection, func, select, update

from service.db.hot import HotConnection, cursor, hot_path, writing
from service.db.tables import UsageRow, accounts, api_keys, holds, ledger_entries, usage


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


def now() -> datetime:
    return datetime.now(UTC)


def month_start(moment: datetime) -> datetime:
    """The start of ``moment``'s calendar month in UTC: where a key's monthly cap starts over."""
    moment = moment.astimezone(UTC)
    return datetime(moment.year, moment.month, 1, tzinfo=UTC)


_NO_USAGE = UsageRow._make([None] * len(UsageRow._fields))


@dataclass(frozen=True, slots=True)
class Settlement:
    charged: int
    trial_consumed: bool
    settled_here: bool
    # the account's balance once settled, read in the same statement or transaction; None
    # when the account is not known (no usage row and the hold was not claimed)
    balance: int | None = None


def balance(conn: Connection, account_id: int) -> int:
    return int(
        conn.execute(select(accounts.c.balance).where(accounts.c.id == account_id)).scalar_one()
    )


def available(conn: Connection, account_id: int) -> int:
    row = conn.execute(
        select(accounts.c.balance, accounts.c.held).where(accounts.c.id == account_id)
    ).one()
    return int(row.balance - row.held)


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
            cur.execute(
                sql.sql["pg_hold"],
                {
                    "account_id": account_id,
                    "amount": amount,
                    "trial": trial,
                    "created_at": created,
                    "expires_at": created + timedelta(seconds=ttl_seconds),
                    "key_id": key_id,
                    "key_cap": key_cap,
                },
            )
            new_hold, left, trials_left, spent = cur.fetchone()
            if new_hold is None:
                if key_cap is not None and spent is not None:
                    raise KeyCapReached(key_cap, int(spent), amount)
                if trial and trials_left <= 0:
                    raise NoTrialLeft()
                raise InsufficientCredits(amount, int(left))
            return int(new_hold)
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
    expired meanwhile. The rows are changed in :func:`settle`'s order (the hold, then the
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


def settle_params(
    hold_id: int,
    cost: int,
    consume_trial: bool,
    usage_row: UsageRow | None,
    settled: Any = None,
) -> dict[str, Any]:
    """The parameters of the hot path's ``pg_settle`` (see :func:`settle`)."""
    return {
        "hold_id": hold_id,
        "cost": cost,
        "consume_trial": consume_trial,
        "settled": settled if settled is not None else now(),
        "usage": usage_row is not None,
        **(usage_row or _NO_USAGE)._asdict(),
    }


def settlement(row: Any) -> Settlement:
    """What a ``pg_settle`` row says."""
    charged, consumed, claimed, balance = row
    return Settlement(
        int(charged), bool(consumed), bool(claimed), None if balance is None else int(balance)
    )


def settle(
    conn: HotConnection,
    hold_id: int,
    *,
    cost: int,
    consume_trial: bool = False,
    usage_row: UsageRow | None = None,
) -> Settlement:
    """Capture ``cost`` (0 releases) from the hold and free the rest, at most once per hold.

    The capture is a ledger entry of kind ``scrape``; the usage row's ``extraction_credits``, the
    language model's share of ``cost``, is an entry of kind ``extraction`` after it (migration
    0019), both naming the hold.

    A trial hold reserved one residential trial: ``consume_trial`` keeps it used, otherwise it is
    given back. A hold that was already settled or expired is left alone: nothing is charged
    again. The usage row is written either way, with the credits actually charged.
    Runs on the driver's cursor (service.db.hot): it is the other half of the hot path.
    """
    sql = hot_path(conn)
    settled = sql.date(now())
    # of ``cost``, what the language model's tokens cost: an entry of its own
    extraction = min(max((usage_row.extraction_credits or 0) if usage_row else 0, 0), cost)
    cur = cursor(conn)
    writing(conn)
    try:
        if sql.functions:
            cur.execute(
                sql.sql["pg_settle"],
                settle_params(hold_id, cost, consume_trial, usage_row, settled),
            )
            return settlement(cur.fetchone())
        cur.execute(
            sql.sql["claim_hold"],
            {
                "hold_id": hold_id,
                "new_status": "captured" if cost or consume_trial else "released",
                "settled": settled,
            },
        )
        claimed = cur.fetchone()
        charged = 0
        trial_consumed = False
        key_id = None
        balance_after: int | None = None
        if claimed is None and usage_row is not None and usage_row.account_id is not None:
            # settled already (the watchdog, the sweeper): the balance as it is now
            cur.execute(sql.sql["account_state"], {"account_id": usage_row.account_id})
            state = cur.fetchone()
            balance_after = int(state[0]) if state is not None else None
        if claimed is not None:
            key_id = claimed[3]
            account_id, amount, trial = int(claimed[0]), int(claimed[1]), bool(claimed[2])
            if cost > amount:
                raise ValueError(f"cost {cost} exceeds hold {amount}")
            consume_trial = consume_trial and trial
            cur.execute(
                sql.sql["settle_account"],
                {
                    "account_id": account_id,
                    "amount": amount,
                    "cost": cost,
                    "trial_back": 1 if trial and not consume_trial else 0,
                },
            )
            balance_after = int(cur.fetchone()[0])
            # the page's price, then the language model's share, each an entry of its own
            entries = (
                ("scrape", cost - extraction, balance_after + extraction),
                ("extraction", extraction, balance_after),
            )
            for kind, amount, after in entries:
                if amount:
                    cur.execute(
                        sql.sql["new_entry"],
                        {
                            "account_id": account_id,
                            "kind": kind,
                            "amount": -amount,
                            "balance_after": after,
                            "reference": f"hold:{hold_id}",
                            "created_at": settled,
                        },
                    )
                    cur.fetchone()
            charged, trial_consumed = cost, consume_trial
        if usage_row is not None:
            cur.execute(
                sql.sql["new_usage"],
                {
                    **usage_row._asdict(),
                    "hold_id": hold_id if claimed is not None else None,
                    "credits": charged,
                    "extraction_credits": extraction if claimed is not None else 0,
                    "trial": trial_consumed,
                    "created_at": settled,
                    "key_id": key_id,
                },
            )
    finally:
        cur.close()
    return Settlement(charged, trial_consumed, claimed is not None, balance_after)


def release(conn: HotConnection, hold_id: int, usage_row: UsageRow | None = None) -> Settlement:
    return settle(conn, hold_id, cost=0, usage_row=usage_row)


def refund(conn: Connection, hold_id: int, error: str) -> int:
    """Give back what settling ``hold_id`` charged, at most once; returns the credits given back.

    For a scrape whose settlement went out on a success and whose page then could not be parsed
    (pipelines.billing): its usage row becomes the failure the caller is told about, the credits
    come back with a ledger entry of their own (``refund:hold:<id>``), and a residential trial it
    used is given back.
    """
    charged = conn.execute(
        select(
            usage.c.id,
            usage.c.account_id,
            usage.c.credits,
            usage.c.extraction_credits,
            usage.c.trial,
        ).where(usage.c.hold_id == hold_id, usage.c.success.is_(True))
    ).one_or_none()
    if charged is None:
        return 0
    claimed = conn.execute(
        update(usage)
        .where(usage.c.id == charged.id, usage.c.success.is_(True))
        .values(success=False, error=error, credits=0, extraction_credits=0, trial=False)
    ).rowcount
    if not claimed:  # refunded by someone else in the meantime
        return 0
    if charged.trial:
        conn.execute(
            update(accounts)
            .where(accounts.c.id == charged.account_id)
            .values(residential_trials_left=accounts.c.residential_trials_left + 1)
        )
    # each entry of the charge given back by one of the same kind
    extraction = int(charged.extraction_credits)
    for kind, credits in (
        ("scrape", int(charged.credits) - extraction),
        ("extraction", extraction),
    ):
        if credits > 0:
            credit(conn, charged.account_id, credits, kind=kind, reference=f"refund:hold:{hold_id}")
    return int(charged.credits)


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
