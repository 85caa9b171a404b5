"""Settling a hold: capture what the scrape cost, free the rest, and give back a refund.

service.billing.rules' ``settlement_plan`` says what a settlement does and ``refund_plan`` what
a refund does; this module carries them out, at most once per hold, on SQLite with the hot
path's statements (service.db.hot) and on PostgreSQL with ``scrapespy_settle_balance``
(service/db/sql), which applies the same rule in the statement that claims the hold.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from sqlalchemy import Connection, select, update

from service.billing import rules
from service.billing.balance import credit, now
from service.db.hot import HotConnection, HotPath, cursor, hot_path, writing
from service.db.tables import UsageRow, accounts, usage

_NO_USAGE = UsageRow._make([None] * len(UsageRow._fields))


@dataclass(frozen=True, slots=True)
class Settlement:
    charged: int
    trial_consumed: bool
    settled_here: bool
    # the account's balance once settled, read in the same statement or transaction; None
    # when the account is not known (no usage row and the hold was not claimed)
    balance: int | None = None


def settle_params(
    hold_id: int,
    cost: int,
    consume_trial: bool,
    usage_row: UsageRow | None,
    settled: Any = None,
) -> dict[str, Any]:
    """The parameters of the hot path's ``pg_settle`` (see :func:`settle`): the function
    carries out :func:`service.billing.rules.settlement_plan` on the hold it claims."""
    row = usage_row or _NO_USAGE
    return {
        "hold_id": hold_id,
        "cost": cost,
        "consume_trial": consume_trial,
        "settled": settled if settled is not None else now(),
        "usage": usage_row is not None,
        **row._asdict(),
        "extraction_credits": rules.extraction_share(cost, row.extraction_credits),
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
    extraction = rules.extraction_share(cost, usage_row.extraction_credits if usage_row else 0)
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
                "new_status": rules.settled_status(cost, consume_trial),
                "settled": settled,
            },
        )
        claimed = cur.fetchone()
        if claimed is None:  # settled already (the watchdog, the sweeper): nothing to charge
            done = Settlement(0, False, False, _balance_now(cur, sql, usage_row))
        else:
            account_id, held, held_trial, _ = claimed
            plan = rules.settlement_plan(
                held=int(held),
                held_trial=bool(held_trial),
                cost=cost,
                consume_trial=consume_trial,
                extraction_credits=extraction,
            )
            done = _carry_out(cur, sql, hold_id, int(account_id), plan, settled)
        if usage_row is not None:
            cur.execute(
                sql.sql["new_usage"],
                {
                    **usage_row._asdict(),
                    "hold_id": hold_id if done.settled_here else None,
                    "credits": done.charged,
                    "extraction_credits": extraction if done.settled_here else 0,
                    "trial": done.trial_consumed,
                    "created_at": settled,
                    "key_id": None if claimed is None else claimed[3],
                },
            )
    finally:
        cur.close()
    return done


def _balance_now(cur: Any, sql: HotPath, usage_row: UsageRow | None) -> int | None:
    """The balance as it is now of the account ``usage_row`` names, if it names one."""
    if usage_row is None or usage_row.account_id is None:
        return None
    cur.execute(sql.sql["account_state"], {"account_id": usage_row.account_id})
    state = cur.fetchone()
    return int(state[0]) if state is not None else None


def _carry_out(
    cur: Any, sql: HotPath, hold_id: int, account_id: int, plan: rules.SettlementPlan, at: Any
) -> Settlement:
    """``plan`` on the account of the claimed hold ``hold_id``: its balance, then its entries."""
    cur.execute(
        sql.sql["settle_account"],
        {
            "account_id": account_id,
            "amount": plan.release,
            "cost": plan.charged,
            "trial_back": plan.trial_back,
        },
    )
    balance_after = int(cur.fetchone()[0])
    for entry, after in zip(plan.entries, plan.balances_after(balance_after), strict=True):
        cur.execute(
            sql.sql["new_entry"],
            {
                "account_id": account_id,
                "kind": entry.kind,
                "amount": entry.amount,
                "balance_after": after,
                "reference": f"hold:{hold_id}",
                "created_at": at,
            },
        )
        cur.fetchone()
    return Settlement(plan.charged, plan.trial_consumed, True, balance_after)


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
    plan = rules.refund_plan(
        credits=int(charged.credits),
        extraction_credits=int(charged.extraction_credits),
        trial=bool(charged.trial),
    )
    if plan.trial_back:
        conn.execute(
            update(accounts)
            .where(accounts.c.id == charged.account_id)
            .values(residential_trials_left=accounts.c.residential_trials_left + plan.trial_back)
        )
    # each entry of the charge given back by one of the same kind
    for entry in plan.entries:
        credit(
            conn,
            charged.account_id,
            entry.amount,
            kind=entry.kind,
            reference=f"refund:hold:{hold_id}",
        )
    return plan.credits
