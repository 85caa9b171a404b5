"""Dashboard sessions and form tokens against a real database (SQLite, or PostgreSQL in CI)."""

from __future__ import annotations

import hashlib
from datetime import timedelta
from itertools import count

import pytest
from sqlalchemy import func, select, update

from service.billing import accounts
from service.billing.ledger import now
from service.dashboard import sessions
from service.db import Database
from service.db.tables import web_sessions

_n = count(1)


@pytest.fixture(scope="module")
def db(database_url: str):
    database = Database(database_url, threads=2)
    database.upgrade()
    yield database
    database.stop()


def new_account(db: Database) -> tuple[int, str]:
    email = f"session{next(_n)}-{id(db)}@example.com"
    return db.run_sync(accounts.create, email, trials=1), email


def test_a_session_is_found_by_its_token_and_only_its_hash_is_stored(db):
    account_id, email = new_account(db)
    token = db.run_sync(sessions.open_session, account_id)
    found = db.run_sync(sessions.find_session, token)
    assert found == sessions.WebSession(account_id, email, found.csrf_token)
    assert len(found.csrf_token) >= 40
    stored = db.run_sync(
        lambda conn: conn.execute(
            select(web_sessions.c.token_hash).where(web_sessions.c.account_id == account_id)
        ).scalar_one()
    )
    assert stored == hashlib.sha256(token.encode()).hexdigest()
    assert stored != token


def test_each_session_has_its_own_token_and_csrf_token(db):
    account_id, _ = new_account(db)
    first = db.run_sync(sessions.open_session, account_id)
    second = db.run_sync(sessions.open_session, account_id)
    assert first != second
    a = db.run_sync(sessions.find_session, first)
    b = db.run_sync(sessions.find_session, second)
    assert a.csrf_token != b.csrf_token


@pytest.mark.parametrize("token", [None, "", "not-a-session", "x" * 500])
def test_unknown_tokens_find_nothing(db, token):
    assert db.run_sync(sessions.find_session, token) is None


def test_an_expired_session_is_not_found_and_is_purged_at_the_next_sign_in(db):
    account_id, _ = new_account(db)
    token = db.run_sync(sessions.open_session, account_id)
    digest = sessions.token_hash(token)
    db.run_sync(
        lambda conn: conn.execute(
            update(web_sessions)
            .where(web_sessions.c.token_hash == digest)
            .values(expires_at=now() - timedelta(seconds=1))
        )
    )
    assert db.run_sync(sessions.find_session, token) is None
    db.run_sync(sessions.open_session, account_id)
    left = db.run_sync(
        lambda conn: conn.execute(
            select(func.count())
            .select_from(web_sessions)
            .where(web_sessions.c.token_hash == digest)
        ).scalar_one()
    )
    assert left == 0


def test_logging_out_ends_that_session_only(db):
    account_id, _ = new_account(db)
    phone = db.run_sync(sessions.open_session, account_id)
    laptop = db.run_sync(sessions.open_session, account_id)
    db.run_sync(sessions.close_session, phone)
    assert db.run_sync(sessions.find_session, phone) is None
    assert db.run_sync(sessions.find_session, laptop) is not None


def test_same_token_needs_an_exact_match():
    assert sessions.same_token("abc", "abc")
    assert not sessions.same_token("abc", "abd")
    assert not sessions.same_token("abc", None)
    assert not sessions.same_token("abc", "")
    assert not sessions.same_token("", "")


def test_form_tokens_are_bound_to_their_cookie_and_to_the_secret():
    signer = sessions.FormSigner("operator secret")
    cookie = signer.new_cookie()
    token = signer.token_for(cookie)
    assert signer.accepts(cookie, token)
    # another instance with the same secret accepts it too
    assert sessions.FormSigner("operator secret").accepts(cookie, token)
    assert not sessions.FormSigner("another secret").accepts(cookie, token)
    assert not signer.accepts(signer.new_cookie(), token)
    assert not signer.accepts(None, token)
    assert not signer.accepts(cookie, None)
    # the cookie itself is not a valid token (a double submit of the bare cookie is refused)
    assert not signer.accepts(cookie, cookie)


def test_without_a_secret_each_process_makes_its_own():
    one, two = sessions.FormSigner(""), sessions.FormSigner("")
    cookie = one.new_cookie()
    assert one.accepts(cookie, one.token_for(cookie))
    assert not two.accepts(cookie, one.token_for(cookie))


def test_a_new_key_waits_in_its_session_sealed_and_is_taken_once(db):
    account_id, _ = new_account(db)
    token = db.run_sync(sessions.open_session, account_id)
    other = db.run_sync(sessions.open_session, account_id)
    new = sessions.NewKey("spy_" + "k" * 38, replaced=True)
    db.run_sync(sessions.hold_key, token, new)
    stored = db.run_sync(
        lambda conn: conn.execute(
            select(web_sessions.c.pending_key).where(
                web_sessions.c.token_hash == sessions.token_hash(token)
            )
        ).scalar_one()
    )
    assert stored and new.key not in stored and "k" * 20 not in stored
    assert db.run_sync(sessions.take_key, other) is None  # another session's cookie opens nothing
    assert db.run_sync(sessions.take_key, token) == new
    assert db.run_sync(sessions.take_key, token) is None


def test_a_new_key_not_shown_in_time_is_never_shown(db):
    account_id, _ = new_account(db)
    token = db.run_sync(sessions.open_session, account_id)
    db.run_sync(sessions.hold_key, token, sessions.NewKey("spy_" + "x" * 38, replaced=False))
    db.run_sync(
        lambda conn: conn.execute(
            update(web_sessions)
            .where(web_sessions.c.token_hash == sessions.token_hash(token))
            .values(pending_key_until=now() - timedelta(seconds=1))
        )
    )
    assert db.run_sync(sessions.take_key, token) is None
    cleared = db.run_sync(
        lambda conn: conn.execute(
            select(web_sessions.c.pending_key).where(
                web_sessions.c.token_hash == sessions.token_hash(token)
            )
        ).scalar_one()
    )
    assert cleared is None
