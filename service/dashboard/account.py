"""The signed-in account's own records: its overview, its key, its purchases.

Each function takes the session's account id; none reads another account's rows.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from sqlalchemy import Connection

from service import accounts, keys
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


def issue_key(conn: Connection, account_id: int) -> tuple[str, bool]:
    """A new key, and whether it replaced one (which stops working with this transaction)."""
    replaced = keys.shown_prefix(conn, account_id) is not None
    return keys.regenerate(conn, account_id), replaced


def purchase_state(conn: Connection, session_id: str, account_id: int) -> Purchase | None:
    """The account's checkout ``session_id``; None when it is not this account's."""
    status = purchases.payment_status(conn, session_id, account_id)
    if status is None:
        return None
    payment = purchases.find(conn, session_id)
    if payment is None or payment.account_id != account_id:
        return None
    return Purchase(status, payment.credits, payment.amount_cents)
