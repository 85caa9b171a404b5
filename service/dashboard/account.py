"""The signed-in account's own records: its overview, its key, its purchases.

Each function takes the session's account id; none reads another account's rows.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from sqlalchemy import Connection

from service import accounts, keys
from service.dashboard import sessions
from service.payments import purchases


@dataclass(frozen=True, slots=True)
class Purchase:
    status: str
    credits: int
    amount_cents: int


def overview(conn: Connection, account_id: int) -> dict[str, Any]:
    """Balance, held credits, residential trials and the key's shown prefix (never the key)."""
    summary = accounts.summary(conn, account_id)
    summary["available"] = summary["balance"] - summary["held"]
    summary["key_prefix"] = keys.shown_prefix(conn, account_id)
    return summary


def issue_key(conn: Connection, account_id: int, session_token: str) -> None:
    """Make a new key (the one it replaces stops working with this transaction) and hold it in
    the session for the page that shows it (:func:`take_new_key`)."""
    replaced = keys.shown_prefix(conn, account_id) is not None
    key = keys.regenerate(conn, account_id)
    sessions.hold_key(conn, session_token, sessions.NewKey(key, replaced))


def take_new_key(
    conn: Connection, account_id: int, session_token: str | None
) -> sessions.NewKey | None:
    """The key this session made, the first time it is asked for; None ever after, and None
    when it no longer works (made again since, from another session)."""
    new = sessions.take_key(conn, session_token)
    if new is None or keys.shown_prefix(conn, account_id) != new.key[: keys.SHOWN_PREFIX_LENGTH]:
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
