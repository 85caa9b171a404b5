"""The ledger side of a credit purchase: record a checkout, credit a confirmed one exactly once.

Every function takes a SQLAlchemy ``Connection`` inside a transaction (``Database.run``). A
confirmation credits only through a conditional UPDATE of ``payments.status`` from ``pending`` to
``paid``; the ``purchase_credits`` row, whose primary key is the session id, is the database's own
guarantee that one session never credits twice, whatever the code above it does. The amount
credited is always the one recorded in our ``payments`` row when the checkout was created; the
provider's figure is only compared with it.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from enum import StrEnum

from sqlalchemy import Connection, insert, select, update

from service.billing import ledger
from service.db.tables import payments, purchase_credits

log = logging.getLogger(__name__)

CURRENCY = "eur"
CREDITS_PER_CENT = 10  # 1 EUR = 1000 credits


class Confirmation(StrEnum):
    CREDITED = "credited"
    ALREADY_CREDITED = "already credited"
    MISMATCH = "amount mismatch"
    NOT_PENDING = "not pending"
    UNKNOWN_SESSION = "unknown session"


@dataclass(frozen=True, slots=True)
class Payment:
    session_id: str
    account_id: int
    provider: str
    amount_cents: int
    credits: int
    status: str


def credits_for(amount_cents: int) -> int:
    return amount_cents * CREDITS_PER_CENT


def record_checkout(
    conn: Connection, session_id: str, account_id: int, provider: str, amount_cents: int
) -> Payment:
    """Remember a checkout the provider has just created, before its URL is handed out."""
    created = ledger.now()
    conn.execute(
        insert(payments).values(
            session_id=session_id,
            account_id=account_id,
            provider=provider,
            amount_cents=amount_cents,
            credits=credits_for(amount_cents),
            status="pending",
            created_at=created,
            updated_at=created,
        )
    )
    return Payment(
        session_id, account_id, provider, amount_cents, credits_for(amount_cents), "pending"
    )


def find(conn: Connection, session_id: str) -> Payment | None:
    row = conn.execute(select(payments).where(payments.c.session_id == session_id)).one_or_none()
    if row is None:
        return None
    return Payment(
        row.session_id,
        int(row.account_id),
        row.provider,
        int(row.amount_cents),
        int(row.credits),
        row.status,
    )


def payment_status(conn: Connection, session_id: str, account_id: int) -> str | None:
    """``pending``, ``paid``, ``failed`` or ``mismatch``; None unless the account's session."""
    status = conn.execute(
        select(payments.c.status).where(
            payments.c.session_id == session_id, payments.c.account_id == account_id
        )
    ).scalar_one_or_none()
    return None if status is None else str(status)


def _move(conn: Connection, session_id: str, to: str) -> bool:
    """Move a pending payment to ``to``; False when another delivery got there first."""
    moved = conn.execute(
        update(payments)
        .where(payments.c.session_id == session_id, payments.c.status == "pending")
        .values(status=to, updated_at=ledger.now())
    )
    return moved.rowcount == 1


def confirm(
    conn: Connection,
    session_id: str,
    *,
    amount_total: int | None,
    currency: str | None,
    account_reference: str | None = None,
) -> Confirmation:
    """Credit a payment the provider says is paid, at most once per session.

    ``amount_total``, ``currency`` and ``account_reference`` (the session's
    ``client_reference_id``) are the provider's view; any disagreement with our row credits
    nothing, marks the payment ``mismatch`` and is logged as an error for the operator.
    """
    payment = find(conn, session_id)
    if payment is None:
        log.warning("payment confirmation for an unknown session %s ignored", session_id)
        return Confirmation.UNKNOWN_SESSION
    if payment.status == "paid":
        return Confirmation.ALREADY_CREDITED
    if payment.status != "pending":
        log.warning(
            "payment confirmation for session %s ignored: the payment is %s",
            session_id,
            payment.status,
        )
        return Confirmation.NOT_PENDING
    disagreements = _disagreements(payment, amount_total, currency, account_reference)
    if disagreements:
        if _move(conn, session_id, "mismatch"):
            log.error(
                "PAYMENT MISMATCH for session %s (account %d): %s; nothing credited, "
                "check the payment with the provider",
                session_id,
                payment.account_id,
                "; ".join(disagreements),
            )
            return Confirmation.MISMATCH
        return _settled_meanwhile(conn, session_id)
    if not _move(conn, session_id, "paid"):
        return _settled_meanwhile(conn, session_id)
    entry_id = ledger.credit(
        conn, payment.account_id, payment.credits, kind="purchase", reference=session_id
    )
    # The primary key on session_id: a second credit for this session fails here and the whole
    # transaction, ledger entry included, is rolled back.
    conn.execute(insert(purchase_credits).values(session_id=session_id, ledger_entry_id=entry_id))
    log.info(
        "payment %s confirmed: %d credits to account %d",
        session_id,
        payment.credits,
        payment.account_id,
    )
    return Confirmation.CREDITED


def _disagreements(
    payment: Payment, amount_total: int | None, currency: str | None, account_reference: str | None
) -> list[str]:
    found = []
    if amount_total != payment.amount_cents:
        found.append(f"the provider says {amount_total} cents, we recorded {payment.amount_cents}")
    if (currency or "").lower() != CURRENCY:
        found.append(f"the provider says currency {currency!r}, we sell in {CURRENCY!r}")
    if account_reference is not None and account_reference != str(payment.account_id):
        found.append(
            f"the provider names account {account_reference!r}, we recorded {payment.account_id}"
        )
    return found


def _settled_meanwhile(conn: Connection, session_id: str) -> Confirmation:
    payment = find(conn, session_id)
    if payment is not None and payment.status == "paid":
        return Confirmation.ALREADY_CREDITED
    return Confirmation.NOT_PENDING


def mark_failed(conn: Connection, session_id: str) -> bool:
    """The provider says the payment failed (or the checkout expired); a paid one stays paid."""
    failed = _move(conn, session_id, "failed")
    if failed:
        log.info("payment %s failed; nothing credited", session_id)
    return failed
