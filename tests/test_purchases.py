"""The ledger side of credit purchases against a real database (SQLite, PostgreSQL in CI)."""

from __future__ import annotations

import logging
import threading
from concurrent.futures import ThreadPoolExecutor

import pytest
from sqlalchemy import func, select, update
from sqlalchemy.exc import IntegrityError

from service.billing import accounts, ledger
from service.billing.payments import purchases
from service.billing.payments.purchases import Confirmation
from service.db import Database
from service.db.tables import ledger_entries, payments, purchase_credits


@pytest.fixture(scope="module")
def db(database_url: str):
    database = Database(database_url, threads=8)
    database.upgrade()
    yield database
    database.stop()


_n = iter(range(1, 10**9))


def new_account(db: Database) -> int:
    return db.run_sync(accounts.create, f"buyer{next(_n)}-{id(db)}@example.com", trials=0)


def checkout(db: Database, account_id: int, cents: int = 750) -> str:
    session_id = f"cs_test_unit_{next(_n)}_{id(db)}"
    db.run_sync(purchases.record_checkout, session_id, account_id, "stripe", cents)
    return session_id


def paid(db: Database, session_id: str, cents: int = 750, currency: str = "eur", **kw):
    return db.run_sync(purchases.confirm, session_id, amount_total=cents, currency=currency, **kw)


def balance(db: Database, account_id: int) -> int:
    return db.run_sync(accounts.summary, account_id)["balance"]


def purchase_entries(db: Database, session_id: str) -> list[tuple[int, int]]:
    def read(conn):
        rows = conn.execute(
            select(ledger_entries.c.amount, ledger_entries.c.account_id).where(
                ledger_entries.c.kind == "purchase", ledger_entries.c.reference == session_id
            )
        )
        return [tuple(row) for row in rows]

    return db.run_sync(read)


def test_a_confirmed_checkout_credits_ten_credits_per_cent_once(db):
    account_id = new_account(db)
    session_id = checkout(db, account_id, 750)
    assert db.run_sync(purchases.payment_status, session_id, account_id) == "pending"
    assert paid(db, session_id, account_reference=str(account_id)) is Confirmation.CREDITED
    assert paid(db, session_id) is Confirmation.ALREADY_CREDITED
    assert balance(db, account_id) == 7500
    assert db.run_sync(ledger.entries_sum, account_id) == 7500
    assert purchase_entries(db, session_id) == [(7500, account_id)]
    assert db.run_sync(purchases.payment_status, session_id, account_id) == "paid"


def test_payment_status_is_only_shown_to_its_account(db):
    owner, other = new_account(db), new_account(db)
    session_id = checkout(db, owner)
    assert db.run_sync(purchases.payment_status, session_id, other) is None
    assert db.run_sync(purchases.payment_status, "cs_test_nobody", owner) is None


@pytest.mark.parametrize(
    ("cents", "currency", "reference"),
    [(751, "eur", None), (750, "usd", None), (None, "eur", None), (750, "eur", "999999")],
    ids=["amount", "currency", "no-amount", "other-account"],
)
def test_a_disagreement_with_our_row_credits_nothing_and_is_logged_as_an_error(
    db, caplog, cents, currency, reference
):
    account_id = new_account(db)
    session_id = checkout(db, account_id, 750)
    with caplog.at_level(logging.ERROR, logger="service.billing.payments.purchases"):
        outcome = paid(db, session_id, cents, currency, account_reference=reference)
    assert outcome is Confirmation.MISMATCH
    assert balance(db, account_id) == 0
    assert db.run_sync(purchases.payment_status, session_id, account_id) == "mismatch"
    errors = [r for r in caplog.records if r.levelno == logging.ERROR]
    assert len(errors) == 1 and session_id in errors[0].getMessage()
    # A later, correct confirmation does not quietly credit a payment under investigation.
    assert paid(db, session_id) is Confirmation.NOT_PENDING
    assert balance(db, account_id) == 0


def test_an_unknown_session_credits_nobody(db):
    assert paid(db, "cs_test_never_recorded") is Confirmation.UNKNOWN_SESSION


def test_a_failed_payment_is_never_credited_and_a_paid_one_never_fails(db):
    account_id = new_account(db)
    failing, paying = checkout(db, account_id), checkout(db, account_id)
    assert db.run_sync(purchases.mark_failed, failing) is True
    assert paid(db, failing) is Confirmation.NOT_PENDING
    assert paid(db, paying) is Confirmation.CREDITED
    assert db.run_sync(purchases.mark_failed, paying) is False
    assert db.run_sync(purchases.payment_status, failing, account_id) == "failed"
    assert db.run_sync(purchases.payment_status, paying, account_id) == "paid"
    assert balance(db, account_id) == 7500


def test_the_purchase_credits_key_refuses_a_second_credit_even_if_the_status_is_reset(db):
    account_id = new_account(db)
    session_id = checkout(db, account_id)
    assert paid(db, session_id) is Confirmation.CREDITED

    def reset(conn):
        conn.execute(
            update(payments).where(payments.c.session_id == session_id).values(status="pending")
        )

    db.run_sync(reset)
    with pytest.raises(IntegrityError):
        paid(db, session_id)
    # The whole transaction was rolled back: no second ledger entry, no second credit.
    assert balance(db, account_id) == 7500
    assert purchase_entries(db, session_id) == [(7500, account_id)]
    assert db.run_sync(purchases.payment_status, session_id, account_id) == "pending"


def test_concurrent_duplicate_confirmations_from_several_threads_credit_exactly_once(db):
    account_id = new_account(db)
    sessions = [checkout(db, account_id, 1000) for _ in range(3)]
    workers = 8
    start = threading.Barrier(workers)

    def deliver(session_id: str) -> Confirmation:
        start.wait(timeout=10)
        return paid(db, session_id, 1000)

    with ThreadPoolExecutor(workers) as pool:
        for session_id in sessions:
            start.reset()
            outcomes = list(pool.map(deliver, [session_id] * workers))
            assert outcomes.count(Confirmation.CREDITED) == 1, outcomes
            assert outcomes.count(Confirmation.ALREADY_CREDITED) == workers - 1, outcomes

    assert balance(db, account_id) == 3 * 10_000
    assert db.run_sync(ledger.entries_sum, account_id) == 3 * 10_000

    def credits_rows(conn):
        return conn.execute(
            select(func.count())
            .select_from(purchase_credits)
            .where(purchase_credits.c.session_id.in_(sessions))
        ).scalar_one()

    assert db.run_sync(credits_rows) == 3
