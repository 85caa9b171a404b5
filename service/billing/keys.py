"""API keys: ``spy_`` + 32 random base62 characters + a 6-character checksum.

Only the SHA-256 of a key is stored, so a key is shown once, when it is made. The checksum lets
a mistyped or made-up key be refused without a database round trip.

An account has any number of keys, each with a label, the time it last started a scrape and an
optional monthly cap in credits (migration 0007; the cap is enforced by
``service.billing.ledger.hold``). Revoking a key keeps its row (its holds and usage rows name it)
and stops it at once.
Regenerating a key replaces its secret only: its label, its cap and what it spent this month
stay with it, so the cap cannot be escaped that way.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
import string
import zlib
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import Connection, func, insert, select, update

from service.billing.balance import month_start, now
from service.db.hot import HotConnection, cursor, hot_path, writing
from service.db.tables import KEY_LABEL_LENGTH, api_keys, usage

PREFIX = "spy_"
ALPHABET = string.digits + string.ascii_letters
BODY_LENGTH = 32
CHECKSUM_LENGTH = 6
KEY_LENGTH = len(PREFIX) + BODY_LENGTH + CHECKSUM_LENGTH
SHOWN_PREFIX_LENGTH = 12
# The live keys an account may hold: enough for every program and person, and a short page.
MAX_KEYS = 50
# The largest monthly cap one can set (a billion euros of credits): beyond it, remove the cap.
MAX_CAP = 10**12
# A key's last use is written when the one recorded is older than this: at most once a minute
# per key, so that the hot path does not write it on every scrape.
LAST_USE_GRANULARITY = timedelta(minutes=1)


class KeyRefused(ValueError):
    """A key management request that cannot be done; the message says why, for people."""


class NoSuchKey(KeyRefused):
    def __init__(self) -> None:
        super().__init__("there is no such API key on this account (it may have been revoked)")


class WhichKey(KeyRefused):
    def __init__(self) -> None:
        super().__init__("the account has several API keys: say which one to regenerate")


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
    key_id: int
    monthly_cap: int | None = None
    last_used_at: Any = None  # as the driver returns it (service.db.hot)


def authenticate(conn: Connection, key: str) -> Caller | None:
    if not well_formed(key):
        return None
    return caller_by_hash(conn, hash_key(key))


def caller_by_hash(conn: HotConnection, digest: str) -> Caller | None:
    """The caller whose live key hashes to ``digest``; on the driver's cursor (service.db.hot)."""
    cur = cursor(conn)
    try:
        cur.execute(hot_path(conn).sql["caller"], {"digest": digest})
        row = cur.fetchone()
    finally:
        cur.close()
    if row is None or not hmac.compare_digest(row[0], digest):
        return None
    cap = None if row[5] is None else int(row[5])
    return Caller(int(row[1]), digest, bool(row[2]), int(row[3]), int(row[4]), cap, row[6])


def note_use(conn: HotConnection, caller: Caller) -> None:
    """Record that ``caller``'s key started a scrape, when the time recorded is a minute old:
    most scrapes write nothing. (PostgreSQL does this in ``scrapespy_authorize_hold``.)"""
    sql = hot_path(conn)
    used = now()
    stale = sql.date(used - LAST_USE_GRANULARITY)
    if caller.last_used_at is not None and caller.last_used_at >= stale:
        return
    cur = cursor(conn)
    writing(conn)
    try:
        cur.execute(
            sql.sql["key_used"], {"used": sql.date(used), "stale": stale, "key_id": caller.key_id}
        )
    finally:
        cur.close()


# managing an account's keys (the dashboard and the CLI) -----------------------------------------


@dataclass(frozen=True, slots=True)
class KeyInfo:
    """One live key as its owner sees it: never the key itself."""

    id: int
    label: str
    prefix: str
    created_at: datetime
    last_used_at: datetime | None
    monthly_cap: int | None
    spent_this_month: int


def clean_label(text: str) -> str:
    """A key's label: trimmed, printable, at most KEY_LABEL_LENGTH characters."""
    label = " ".join(text.split())
    if len(label) > KEY_LABEL_LENGTH:
        raise KeyRefused(f"label: at most {KEY_LABEL_LENGTH} characters")
    if not label.isprintable():
        raise KeyRefused("label: only printable characters")
    return label


def parse_cap(text: str) -> int | None:
    """A monthly cap as typed: a whole number of credits, or nothing for no cap."""
    text = text.strip().replace("\u202f", "").replace(",", "").replace("_", "")
    if not text or text.lower() == "none":
        return None
    if not text.isdigit() or not text.isascii():
        raise KeyRefused("monthly cap: a whole number of credits, or empty for no cap")
    cap = int(text)
    if cap > MAX_CAP:
        raise KeyRefused(f"monthly cap: at most {MAX_CAP} credits; leave it empty for no cap")
    return cap


def _live(account_id: int) -> Any:
    return (api_keys.c.account_id == account_id) & api_keys.c.revoked_at.is_(None)


def _new_secret() -> tuple[str, dict[str, Any]]:
    key = generate_key()
    return key, {
        "key_hash": hash_key(key),
        "prefix": key[:SHOWN_PREFIX_LENGTH],
        "created_at": now(),
    }


def create(conn: Connection, account_id: int, *, label: str = "", cap: int | None = None) -> str:
    """A new key for the account, besides the ones it has; returns it (shown once)."""
    if live_count(conn, account_id) >= MAX_KEYS:
        raise KeyRefused(f"an account has at most {MAX_KEYS} API keys: revoke one first")
    key, secret = _new_secret()
    conn.execute(
        insert(api_keys).values(
            account_id=account_id, label=clean_label(label), monthly_cap=cap, **secret
        )
    )
    return key


def regenerate(conn: Connection, account_id: int, key_id: int | None = None) -> str:
    """A new secret for the key ``key_id`` (by default the account's only key; the account's
    first key when it has none): the previous secret stops working with this transaction."""
    if key_id is None:
        ids = conn.execute(select(api_keys.c.id).where(_live(account_id))).scalars().all()
        if not ids:
            return create(conn, account_id)
        if len(ids) > 1:
            raise WhichKey()
        key_id = ids[0]
    key, secret = _new_secret()
    _change(conn, account_id, key_id, last_used_at=None, **secret)
    return key


def relabel(conn: Connection, account_id: int, key_id: int, label: str) -> None:
    _change(conn, account_id, key_id, label=clean_label(label))


def set_cap(conn: Connection, account_id: int, key_id: int, cap: int | None) -> None:
    """Set (or with None, remove) the key's monthly cap; the next hold obeys it."""
    _change(conn, account_id, key_id, monthly_cap=cap)


def revoke(conn: Connection, account_id: int, key_id: int) -> None:
    """Stop the key at once. Its row stays, so the holds and usage rows that name it do too;
    scrapes it started before are settled as usual."""
    _change(conn, account_id, key_id, revoked_at=now())


def _change(conn: Connection, account_id: int, key_id: int, **values: Any) -> None:
    changed = conn.execute(
        update(api_keys).where(api_keys.c.id == key_id, _live(account_id)).values(**values)
    ).rowcount
    if changed != 1:
        raise NoSuchKey()


def listed(conn: Connection, account_id: int) -> list[KeyInfo]:
    """The account's live keys, oldest first, with the credits each spent this month (UTC)."""
    spent = (
        select(usage.c.key_id, func.sum(usage.c.credits).label("spent"))
        .where(usage.c.account_id == account_id, usage.c.created_at >= month_start(now()))
        .group_by(usage.c.key_id)
        .subquery()
    )
    rows = conn.execute(
        select(
            api_keys.c.id,
            api_keys.c.label,
            api_keys.c.prefix,
            api_keys.c.created_at,
            api_keys.c.last_used_at,
            api_keys.c.monthly_cap,
            func.coalesce(spent.c.spent, 0),
        )
        .outerjoin(spent, spent.c.key_id == api_keys.c.id)
        .where(_live(account_id))
        .order_by(api_keys.c.id)
    ).all()
    return [KeyInfo(*row[:6], int(row[6])) for row in rows]


def find(conn: Connection, account_id: int, ref: str) -> int:
    """The id of the account's live key named by ``ref``: its id, or the start of the key
    (its shown prefix, or the whole key); NoSuchKey when none or several match."""
    ref = ref.strip().rstrip("…")
    if ref.isdigit():
        where = api_keys.c.id == int(ref)
    elif well_formed(ref):
        where = api_keys.c.key_hash == hash_key(ref)
    elif ref.startswith(PREFIX) and len(ref) >= len(PREFIX) + 4:
        where = api_keys.c.prefix.startswith(ref[:SHOWN_PREFIX_LENGTH], autoescape=True)
    else:
        raise NoSuchKey()
    ids = conn.execute(select(api_keys.c.id).where(where, _live(account_id))).scalars().all()
    if len(ids) != 1:
        raise NoSuchKey()
    return int(ids[0])


def is_live(conn: Connection, account_id: int, key: str) -> bool:
    """Whether ``key`` is one of the account's keys and still works."""
    return (
        conn.execute(
            select(api_keys.c.id).where(api_keys.c.key_hash == hash_key(key), _live(account_id))
        ).first()
        is not None
    )


def live_count(conn: Connection, account_id: int) -> int:
    return int(conn.execute(select(func.count()).where(_live(account_id))).scalar_one())


def shown_prefix(conn: Connection, account_id: int) -> str | None:
    """The shown prefix of the account's newest live key; None when it has none."""
    return conn.execute(
        select(api_keys.c.prefix).where(_live(account_id)).order_by(api_keys.c.id.desc()).limit(1)
    ).scalar_one_or_none()
