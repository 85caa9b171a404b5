"""The prepaid ledger: holds, captures, releases, grants and purchases, under one name.

Every function takes a SQLAlchemy ``Connection`` inside a transaction and does its work with
conditional UPDATEs, so concurrent requests (threads here, processes or machines in production)
can never take the balance below zero, settle a hold twice or credit a payment twice. The
database's CHECK constraints are the backstop. Every change of balance is an append-only ledger
entry whose ``balance_after`` is the new balance, so the balance always equals the sum of its
entries.

What each operation computes is service.billing.rules'; the operations live by what they are
about, and this module names them together for their callers:

- service.billing.balance: the balance, what is available, credits added, the entries' sum;
- service.billing.holds: holding (with the key lookup on PostgreSQL), extending, expiring,
  and the refusals;
- service.billing.settlement: settling (capture, release), and refunding a settlement.
"""

from __future__ import annotations

from service.billing.balance import available, balance, credit, entries_sum, month_start, now
from service.billing.holds import (
    AuthorizedHold,
    HoldGone,
    InsufficientCredits,
    KeyCapReached,
    NoTrialLeft,
    OverLimit,
    authorize_and_hold,
    authorize_and_hold_params,
    authorized_hold,
    expire_holds,
    extend_hold,
    hold,
)
from service.billing.settlement import (
    Settlement,
    refund,
    release,
    settle,
    settle_params,
    settlement,
)

__all__ = [
    "AuthorizedHold",
    "HoldGone",
    "InsufficientCredits",
    "KeyCapReached",
    "NoTrialLeft",
    "OverLimit",
    "Settlement",
    "authorize_and_hold",
    "authorize_and_hold_params",
    "authorized_hold",
    "available",
    "balance",
    "credit",
    "entries_sum",
    "expire_holds",
    "extend_hold",
    "hold",
    "month_start",
    "now",
    "refund",
    "release",
    "settle",
    "settle_params",
    "settlement",
]
