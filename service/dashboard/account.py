"""The signed-in account's own records: its overview, its keys, its purchases.

Each function takes the session's account id; none reads another account's rows.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from sqlalchemy import Connection

from service.billing import accounts, keys
from service.billing.payments import purchases
from service.dashboard import sessions


@dataclass(frozen=True, slots=True)
class Purchase:
    status: str
    credits: int
    amount_cents: int


def overview(conn: Connection, account_id: int) -> dict[str, Any]:
    """Balance, held credits, residential trials, how many keys, and the newest key's shown
    prefix (never the key)."""
    summary = accounts.summary(conn, account_id)
    summary["available"] = summary["balance"] - summary["held"]
    summary["key_prefix"] = keys.shown_prefix(conn, account_id)
    summary["key_count"] = keys.live_count(conn, account_id)
    return summary


def issue_key(
    conn: Connection, account_id: int, session_token: str, key_id: int | None = None
) -> None:
    """Regenerate the key ``key_id`` (by default the account's only key, or its first one when
    it has none): its previous secret stops working with this transaction. The new key waits in
    the session for the page that shows it (:func:`take_new_key`)."""
    replaced = key_id is not None or keys.live_count(conn, account_id) > 0
    key = keys.regenerate(conn, account_id, key_id)
    sessions.hold_key(conn, session_token, sessions.NewKey(key, replaced))


def add_key(
    conn: Connection, account_id: int, session_token: str, label: str, cap: int | None
) -> None:
    """Make one more key, besides the account's others, held for the page that shows it."""
    key = keys.create(conn, account_id, label=label, cap=cap)
    sessions.hold_key(conn, session_token, sessions.NewKey(key, False))


def take_new_key(
    conn: Connection, account_id: int, session_token: str | None
) -> sessions.NewKey | None:
    """The key this session made, the first time it is asked for; None ever after, and None
    when it no longer works (regenerated or revoked since, from another session)."""
    new = sessions.take_key(conn, session_token)
    if new is None or not keys.is_live(conn, account_id, new.key):
        return None
    return new


def purchase_state(conn: Connection, session_id: str, account_id: int) -> Purchase | None:
    """The account's checkout ``session_id``; None when it is not this account's."""
    status = purchases.payment_status(conn, session_id, account_id)
    if status is None:
        return None
    payment = purchases.find(conn, session_id)
    if payment is None or payment.account_id != account_id:
        return None
    return Purchase(status, payment.credits, payment.amount_cents)
