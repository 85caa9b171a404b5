"""``Idempotency-Key`` on ``POST /scrape`` and ``POST /batch``: a retry gets the first answer.

The first call with a key stores a row (account, key) with the hash of its endpoint and body,
runs, and stores its answer (status and bytes) in that row: in the database, so that the key
holds across restarts and instances. For 24 hours the same key with the same body answers those
bytes again, charging nothing; with another body it is a 422 ``idempotency_conflict``; while
the first call still runs, a 409 ``idempotency_in_progress`` with ``Retry-After`` (a retry does
not wait: a waiting request would hold a connection for as long as the scrape takes, and the
client that retries is the one that knows how long it will wait). Only a success is kept: an
error charged nothing, so its key is freed and the retry runs afresh. A first call whose
instance died keeps its key for ``RUNNING_FOR`` at most, then the key is free again.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Awaitable, Callable
from datetime import timedelta
from typing import Any

import orjson
from sqlalchemy import Connection, delete, insert, select, update
from sqlalchemy.exc import IntegrityError

from service.billing import ledger
from service.core.errors import BadRequest, Conflict, Unprocessable
from service.db import Database
from service.db.tables import idempotency_keys
from service.db.times import as_utc

KEPT_FOR = timedelta(hours=24)
RUNNING_FOR = timedelta(minutes=5)  # longer than any scrape's timeout and its settlement
_KEY = re.compile(r"[\x21-\x7e]{1,255}", re.ASCII)

Answer = tuple[int, bytes]


def checked_key(raw: bytes | None) -> str | None:
    """The header's key, or None without one; a 400 for one that is not 1 to 255 visible ASCII
    characters."""
    if raw is None:
        return None
    key = raw.decode("latin-1")
    if not _KEY.fullmatch(key):
        raise BadRequest(
            "invalid request: 'Idempotency-Key' header: must be 1 to 255 visible ASCII "
            "characters, such as a UUID"
        )
    return key


def fingerprint(endpoint: str, body: bytes) -> str:
    """The body's identity: its JSON with the keys sorted, so spacing and key order do not
    count as another body."""
    try:
        canonical = orjson.dumps(orjson.loads(body), option=orjson.OPT_SORT_KEYS)
    except orjson.JSONDecodeError:
        canonical = body
    return hashlib.sha256(endpoint.encode() + b"\n" + canonical).hexdigest()


def _begin(conn: Connection, account_id: int, key: str, endpoint: str, digest: str) -> Any:
    """("run",) for the first call, else ("replay", status, bytes), ("conflict",) or
    ("running",)."""
    now = ledger.now()
    where = (idempotency_keys.c.account_id == account_id, idempotency_keys.c.key == key)
    row = conn.execute(select(idempotency_keys).where(*where)).one_or_none()
    if row is not None and (
        as_utc(row.created_at) < now - KEPT_FOR
        or (row.status_code is None and as_utc(row.running_until) < now)
    ):
        conn.execute(delete(idempotency_keys).where(*where))
        row = None
    if row is None:
        conn.execute(
            insert(idempotency_keys).values(
                account_id=account_id,
                key=key,
                endpoint=endpoint,
                body_hash=digest,
                created_at=now,
                running_until=now + RUNNING_FOR,
            )
        )
        return ("run",)
    if row.body_hash != digest:
        return ("conflict",)
    if row.status_code is None:
        return ("running",)
    return ("replay", int(row.status_code), row.response.encode())


def _finish(conn: Connection, account_id: int, key: str, answer: Answer | None) -> None:
    where = (idempotency_keys.c.account_id == account_id, idempotency_keys.c.key == key)
    if answer is None:
        conn.execute(delete(idempotency_keys).where(*where))
    else:
        conn.execute(
            update(idempotency_keys)
            .where(*where)
            .values(status_code=answer[0], response=answer[1].decode(), running_until=None)
        )


class Idempotency:
    def __init__(self, database: Database):
        self.database = database

    async def run(
        self,
        account_id: int,
        key: str,
        endpoint: str,
        body: bytes,
        answer: Callable[[], Awaitable[Answer]],
    ) -> tuple[Answer, bool]:
        """The answer to the call, and whether it is the first call's, replayed."""
        digest = fingerprint(endpoint, body)
        try:
            found = await self.database.run(_begin, account_id, key, endpoint, digest)
        except IntegrityError:  # another call with the key began at the same moment
            found = ("running",)
        if found[0] == "conflict":
            raise Unprocessable(
                "this Idempotency-Key was used in the last 24 hours with another request body; "
                "use a new key for a new request"
            )
        if found[0] == "running":
            raise Conflict(
                "the first request with this Idempotency-Key is still running; retry in a "
                "moment to get its answer",
                headers={"Retry-After": "1"},
            )
        if found[0] == "replay":
            return (found[1], found[2]), True
        kept: Answer | None = None
        try:
            kept = await answer()
            return kept, False
        finally:
            await self.database.run(_finish, account_id, key, kept)
