"""Signing up and logging in: argon2 hashes, and answers that do not tell which emails exist."""

from __future__ import annotations

from itertools import count

import pytest
import pytest_twisted

from service.billing import accounts
from service.dashboard import identity
from service.db import Database

_n = count(1)


@pytest.fixture(scope="module")
def db(database_url: str):
    database = Database(database_url, threads=2)
    database.upgrade()
    database.start()
    yield database
    database.stop()


@pytest.fixture(scope="module")
def work():
    passwords = identity.PasswordWork()
    passwords.start()
    yield passwords
    passwords.stop()


def email() -> str:
    return f"Identity{next(_n)}@Example.com"


def test_a_signup_form_is_checked_before_any_work():
    assert identity.check_signup("  Bob@Example.COM ", "long enough", "long enough") == (
        "bob@example.com"
    )
    for address in ("bob", "bob@", "@example.com", "bob@example", "bob smith@example.com"):
        with pytest.raises(identity.SignupRefused, match="valid email"):
            identity.check_signup(address, "long enough", "long enough")
    with pytest.raises(identity.SignupRefused, match="at least 8"):
        identity.check_signup("bob@example.com", "short", "short")
    with pytest.raises(identity.SignupRefused, match="at most 256"):
        identity.check_signup("bob@example.com", "x" * 257, "x" * 257)
    with pytest.raises(identity.SignupRefused, match="not the same"):
        identity.check_signup("bob@example.com", "long enough", "long enougH")


@pytest_twisted.ensureDeferred
async def test_signing_up_stores_an_argon2_hash_and_logs_in_with_the_password(db, work):
    address = email()
    account_id = await identity.sign_up(db, work, address, "correct horse", trials=3)
    found_id, stored = db.run_sync(identity.credentials, address)
    assert found_id == account_id
    assert stored.startswith("$argon2id$") and "correct horse" not in stored
    assert db.run_sync(accounts.summary, account_id)["residential_trials_left"] == 3
    assert await identity.log_in(db, work, address.upper(), "correct horse") == account_id
    assert await identity.log_in(db, work, address, "correct horsE") is None


@pytest_twisted.ensureDeferred
async def test_a_wrong_password_and_an_unknown_email_are_the_same_answer(db, work):
    address = email()
    await identity.sign_up(db, work, address, "correct horse", trials=1)
    assert await identity.log_in(db, work, address, "wrong") is None
    assert await identity.log_in(db, work, "nobody-" + address, "correct horse") is None
    # an account made by the admin CLI without a password cannot be logged into
    bare = email()
    db.run_sync(accounts.create, bare, trials=1)
    assert await identity.log_in(db, work, bare, "") is None
    assert await identity.log_in(db, work, bare, "anything") is None


@pytest_twisted.ensureDeferred
async def test_signing_up_again_with_a_taken_email_gets_the_generic_refusal(db, work):
    address = email()
    await identity.sign_up(db, work, address, "correct horse", trials=1)
    with pytest.raises(identity.SignupRefused) as refused:
        await identity.sign_up(db, work, address.lower(), "another password", trials=1)
    assert refused.value.message == identity.SIGNUP_REFUSED
    assert "exist" not in refused.value.message and "taken" not in refused.value.message
    # the first password still works; the second did not replace it
    assert await identity.log_in(db, work, address, "another password") is None
    assert await identity.log_in(db, work, address, "correct horse") is not None
