"""Signing up and signing in with an email and a password (argon2id, ``service.billing.passwords``).

Nothing here tells a visitor whether an email has an account: a wrong password and an unknown
email get the same answer after the same work (``verify_password`` hashes even when there is no
account), and a sign-up with a taken email gets the same generic refusal, after the same hashing,
as any other sign-up the database refuses.
"""

from __future__ import annotations

import re
from typing import Any

from sqlalchemy import Connection, select
from twisted.internet.defer import Deferred
from twisted.internet.threads import deferToThreadPool
from twisted.python.threadpool import ThreadPool

from service.billing import accounts
from service.billing.passwords import hash_password, verify_password
from service.db import Database
from service.db.tables import accounts as accounts_table

MIN_PASSWORD = 8
# argon2 takes any length; a bound keeps one request from costing more than the others.
MAX_PASSWORD = 256
MAX_EMAIL = 320
EMAIL = re.compile(r"^[^@\s]+@[^@\s]+\.[^@\s.]+$")

LOGIN_REFUSED = "Wrong email or password."
SIGNUP_REFUSED = (
    "We could not create an account with these details. "
    "If you already have an account, log in instead."
)


class SignupRefused(Exception):
    def __init__(self, message: str):
        super().__init__(message)
        self.message = message


def check_signup(email: str, password: str, confirmation: str) -> str:
    """The normalised email, or SignupRefused saying what is wrong with the form itself."""
    normalised = accounts.normalise_email(email)
    if len(normalised) > MAX_EMAIL or not EMAIL.match(normalised):
        raise SignupRefused("Enter a valid email address.")
    if len(password) < MIN_PASSWORD:
        raise SignupRefused(f"Choose a password of at least {MIN_PASSWORD} characters.")
    if len(password) > MAX_PASSWORD:
        raise SignupRefused(f"Choose a password of at most {MAX_PASSWORD} characters.")
    if password != confirmation:
        raise SignupRefused("The two passwords are not the same.")
    return normalised


class PasswordWork:
    """Runs argon2 (about 50 ms of CPU each) on a small pool of its own.

    Not on the reactor thread, and not on the database's threads either, so a burst of log-ins
    cannot starve the scrapes' database work.
    """

    def __init__(self, threads: int = 2):
        self.pool = ThreadPool(minthreads=0, maxthreads=threads, name="scrapespy-passwords")

    def start(self) -> None:
        if not self.pool.started:
            self.pool.start()

    def stop(self) -> None:
        if self.pool.started:
            self.pool.stop()

    def _run(self, fn: Any, *args: Any) -> Deferred[Any]:
        from twisted.internet import reactor

        return deferToThreadPool(reactor, self.pool, fn, *args)  # type: ignore[arg-type]

    def hash(self, password: str) -> Deferred[str]:
        return self._run(hash_password, password)

    def verify(self, password_hash: str | None, password: str) -> Deferred[bool]:
        return self._run(verify_password, password_hash, password)


def credentials(conn: Connection, email: str) -> tuple[int | None, str | None]:
    row = conn.execute(
        select(accounts_table.c.id, accounts_table.c.password_hash).where(
            accounts_table.c.email == accounts.normalise_email(email)
        )
    ).one_or_none()
    if row is None:
        return None, None
    return int(row.id), row.password_hash


async def sign_up(
    database: Database, work: PasswordWork, email: str, password: str, *, trials: int
) -> int:
    """Create the account and return its id; SignupRefused when the database refuses it."""
    password_hash = await work.hash(password)
    try:
        return await database.run(
            accounts.create, email, trials=trials, password_hash=password_hash
        )
    except accounts.AccountExists:
        raise SignupRefused(SIGNUP_REFUSED) from None


async def log_in(database: Database, work: PasswordWork, email: str, password: str) -> int | None:
    """The account's id when the password is right; None for a wrong password or email."""
    if len(password) > MAX_PASSWORD or len(email) > MAX_EMAIL:
        return None
    account_id, password_hash = await database.run(credentials, email)
    if not await work.verify(password_hash, password):
        return None
    return account_id
