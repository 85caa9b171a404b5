"""Signed-in sessions of the dashboard, and the tokens that guard its forms against CSRF.

The session cookie holds a random token; only its SHA-256 is stored (``web_sessions``), so a
leaked database does not sign anyone in. Each session carries its own CSRF token, put in every
form. The forms shown before signing in (log in, sign up) have no session yet: they use a
double-submit cookie whose form token is an HMAC of the cookie under the session secret, so a
page on another site can neither read nor forge it.

A new API key is shown on the page the form redirects to (Post/Redirect/Get: reloading that page
makes no other key). Between the two requests it waits in the session's row, which every
instance reads, sealed (AES-GCM) under a key derived from the session's cookie token, which the
database never holds; it is deleted as it is read, and never shown after ``PENDING_KEY_LIFETIME``.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import secrets
from dataclasses import dataclass
from datetime import timedelta

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives.ciphers.aead import AESGCM
from cryptography.hazmat.primitives.hashes import SHA256
from cryptography.hazmat.primitives.kdf.hkdf import HKDF
from sqlalchemy import Connection, delete, insert, select, update

from service.billing.ledger import now
from service.db.tables import accounts, web_sessions

SESSION_COOKIE = b"scrapespy_session"
FORM_COOKIE = b"scrapespy_form"
SESSION_LIFETIME = timedelta(days=7)
# Longer than any token we issue; a longer cookie is not worth a database round trip.
MAX_TOKEN_LENGTH = 128
# A redirect is followed at once; a key not shown by then is not shown at all.
PENDING_KEY_LIFETIME = timedelta(minutes=5)
SEAL_NONCE_BYTES = 12


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


@dataclass(frozen=True, slots=True)
class NewKey:
    key: str
    replaced: bool


def _seal_key(token: str) -> AESGCM:
    derived = HKDF(algorithm=SHA256(), length=32, salt=None, info=b"scrapespy pending key")
    return AESGCM(derived.derive(token.encode("utf-8")))


def hold_key(conn: Connection, token: str, new: NewKey) -> None:
    """Keep a new key in the session's row until :func:`take_key` shows it."""
    digest = token_hash(token)
    nonce = secrets.token_bytes(SEAL_NONCE_BYTES)
    plain = f"{int(new.replaced)}{new.key}".encode()
    sealed = nonce + _seal_key(token).encrypt(nonce, plain, digest.encode())
    conn.execute(
        update(web_sessions)
        .where(web_sessions.c.token_hash == digest)
        .values(
            pending_key=base64.urlsafe_b64encode(sealed).decode("ascii"),
            pending_key_until=now() + PENDING_KEY_LIFETIME,
        )
    )


def take_key(conn: Connection, token: str | None) -> NewKey | None:
    """The key held for this session, once: it leaves the database as it is read."""
    if not token or len(token) > MAX_TOKEN_LENGTH:
        return None
    digest = token_hash(token)
    sealed = conn.execute(
        select(web_sessions.c.pending_key).where(
            web_sessions.c.token_hash == digest,
            web_sessions.c.pending_key_until > now(),
        )
    ).scalar_one_or_none()
    # Cleared whether fresh or stale; of two requests reading at once, one clears it and shows it.
    cleared = conn.execute(
        update(web_sessions)
        .where(web_sessions.c.token_hash == digest, web_sessions.c.pending_key.is_not(None))
        .values(pending_key=None, pending_key_until=None)
    )
    if sealed is None or cleared.rowcount != 1:
        return None
    try:
        raw = base64.urlsafe_b64decode(sealed)
        nonce, body = raw[:SEAL_NONCE_BYTES], raw[SEAL_NONCE_BYTES:]
        plain = _seal_key(token).decrypt(nonce, body, digest.encode()).decode()
    except (InvalidTag, ValueError):
        return None
    return NewKey(key=plain[1:], replaced=plain[:1] == "1")


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
