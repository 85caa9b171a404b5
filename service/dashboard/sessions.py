"""Signed-in sessions of the dashboard, and the tokens that guard its forms against CSRF.

The session cookie holds a random token; only its SHA-256 is stored (``web_sessions``), so a
leaked database does not sign anyone in. Each session carries its own CSRF token, put in every
form. The forms shown before signing in (log in, sign up) have no session yet: they use a
double-submit cookie whose form token is an HMAC of the cookie under the session secret, so a
page on another site can neither read nor forge it.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
from dataclasses import dataclass
from datetime import timedelta

from sqlalchemy import Connection, delete, insert, select

from service.db.tables import accounts, web_sessions
from service.ledger import now

SESSION_COOKIE = b"scrapespy_session"
FORM_COOKIE = b"scrapespy_form"
SESSION_LIFETIME = timedelta(days=7)
# Longer than any token we issue; a longer cookie is not worth a database round trip.
MAX_TOKEN_LENGTH = 128


@dataclass(frozen=True, slots=True)
class WebSession:
    account_id: int
    email: str
    csrf_token: str


def token_hash(token: str) -> str:
    return hashlib.sha256(token.encode("utf-8")).hexdigest()


def same_token(expected: str, given: str | None) -> bool:
    """Constant-time comparison; a missing token never matches."""
    if not given or not expected:
        return False
    return hmac.compare_digest(expected.encode("utf-8"), given.encode("utf-8"))


def open_session(conn: Connection, account_id: int) -> str:
    """Start a session for the account and return the cookie token (shown nowhere else)."""
    token = secrets.token_urlsafe(32)
    started = now()
    # Signing in is rare enough to carry the clean-up of sessions nobody will use again.
    conn.execute(delete(web_sessions).where(web_sessions.c.expires_at < started))
    conn.execute(
        insert(web_sessions).values(
            token_hash=token_hash(token),
            account_id=account_id,
            csrf_token=secrets.token_urlsafe(32),
            created_at=started,
            expires_at=started + SESSION_LIFETIME,
        )
    )
    return token


def find_session(conn: Connection, token: str | None) -> WebSession | None:
    if not token or len(token) > MAX_TOKEN_LENGTH:
        return None
    row = conn.execute(
        select(web_sessions.c.account_id, web_sessions.c.csrf_token, accounts.c.email)
        .join(accounts, accounts.c.id == web_sessions.c.account_id)
        .where(web_sessions.c.token_hash == token_hash(token), web_sessions.c.expires_at > now())
    ).one_or_none()
    if row is None:
        return None
    return WebSession(int(row.account_id), str(row.email), str(row.csrf_token))


def close_session(conn: Connection, token: str | None) -> None:
    if token and len(token) <= MAX_TOKEN_LENGTH:
        conn.execute(delete(web_sessions).where(web_sessions.c.token_hash == token_hash(token)))


class FormSigner:
    """Form tokens for the pages shown before signing in (double-submit cookie, signed)."""

    def __init__(self, secret: str):
        # Without an operator secret each process makes its own: forms shown by one instance
        # are then refused by another (SCRAPESPY_SESSION_SECRET fixes that).
        self._key = (secret or secrets.token_urlsafe(32)).encode("utf-8")

    @staticmethod
    def new_cookie() -> str:
        return secrets.token_urlsafe(32)

    def token_for(self, cookie: str) -> str:
        return hmac.new(self._key, cookie.encode("utf-8"), hashlib.sha256).hexdigest()

    def accepts(self, cookie: str | None, token: str | None) -> bool:
        if not cookie or len(cookie) > MAX_TOKEN_LENGTH:
            return False
        return same_token(self.token_for(cookie), token)
