"""API keys: ``spy_`` + 32 random base62 characters + a 6-character checksum.

Only the SHA-256 of a key is stored, so a key is shown once, when it is made. The checksum lets
a mistyped or made-up key be refused without a database round trip.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
import string
import zlib
from dataclasses import dataclass

from sqlalchemy import Connection, delete, insert, select

from service.db.hot import HotConnection, cursor, hot_path
from service.db.tables import api_keys
from service.ledger import now

PREFIX = "spy_"
ALPHABET = string.digits + string.ascii_letters
BODY_LENGTH = 32
CHECKSUM_LENGTH = 6
KEY_LENGTH = len(PREFIX) + BODY_LENGTH + CHECKSUM_LENGTH
SHOWN_PREFIX_LENGTH = 12


def _base62(value: int, width: int) -> str:
    digits = []
    for _ in range(width):
        value, rest = divmod(value, 62)
        digits.append(ALPHABET[rest])
    return "".join(reversed(digits))


def _checksum(body: str) -> str:
    return _base62(zlib.crc32(body.encode("ascii")), CHECKSUM_LENGTH)


def generate_key() -> str:
    body = "".join(secrets.choice(ALPHABET) for _ in range(BODY_LENGTH))
    return f"{PREFIX}{body}{_checksum(body)}"


def well_formed(key: str) -> bool:
    if len(key) != KEY_LENGTH or not key.startswith(PREFIX):
        return False
    body, check = key[len(PREFIX) : -CHECKSUM_LENGTH], key[-CHECKSUM_LENGTH:]
    if any(ch not in ALPHABET for ch in body):
        return False
    return hmac.compare_digest(check, _checksum(body))


def hash_key(key: str) -> str:
    return hashlib.sha256(key.encode("utf-8")).hexdigest()


@dataclass(frozen=True, slots=True)
class Caller:
    account_id: int
    key_hash: str
    residential_unlocked: bool
    residential_trials_left: int


def authenticate(conn: Connection, key: str) -> Caller | None:
    if not well_formed(key):
        return None
    return caller_by_hash(conn, hash_key(key))


def caller_by_hash(conn: HotConnection, digest: str) -> Caller | None:
    """The caller whose key hashes to ``digest``; on the driver's cursor (service.db.hot)."""
    cur = cursor(conn)
    try:
        cur.execute(hot_path(conn).sql["caller"], {"digest": digest})
        row = cur.fetchone()
    finally:
        cur.close()
    if row is None or not hmac.compare_digest(row[0], digest):
        return None
    return Caller(int(row[1]), digest, bool(row[2]), int(row[3]))


def regenerate(conn: Connection, account_id: int) -> str:
    """Issue a new key for the account; the previous one stops working with this transaction."""
    key = generate_key()
    conn.execute(delete(api_keys).where(api_keys.c.account_id == account_id))
    conn.execute(
        insert(api_keys).values(
            account_id=account_id,
            key_hash=hash_key(key),
            prefix=key[:SHOWN_PREFIX_LENGTH],
            created_at=now(),
        )
    )
    return key


def shown_prefix(conn: Connection, account_id: int) -> str | None:
    return conn.execute(
        select(api_keys.c.prefix).where(api_keys.c.account_id == account_id)
    ).scalar_one_or_none()
