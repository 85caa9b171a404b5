"""The ``change_tracking`` format's history: the snapshots of an account's scrapes of a page.

A snapshot is the normalised markdown of one scrape (zlib-compressed) and, for the json mode,
what was extracted from it; it is found by (account, URL, tag), so one account's history is
never compared with, nor shown to, another. :func:`previous_and_keep` reads the newest one and
writes the new one in one transaction (a page unchanged since its newest snapshot moves that
snapshot's time to this scrape instead: a history of changes), then drops the oldest past the bound
(``SCRAPESPY_CHANGE_SNAPSHOTS_PER_URL``); a snapshot older than the retention time
(``SCRAPESPY_CHANGE_RETENTION_DAYS``) is never compared with, and the sweeper deletes it
(:func:`purge_expired`). The rows go with their account (a foreign key ON DELETE CASCADE).
"""

from __future__ import annotations

import hashlib
import zlib
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

import orjson
from sqlalchemy import Connection, and_, delete, insert, select, update

from service.db.tables import change_snapshots
from service.db.times import as_utc

#: zlib's level for the markdown (its default)
COMPRESSION_LEVEL = 6


@dataclass(frozen=True, slots=True)
class Snapshot:
    """One scrape of a page, as it is compared: when, its normalised markdown, what the json
    mode extracted (None when it extracted nothing)."""

    taken_at: datetime
    markdown: str
    extracted: Any = None


def url_key(url: str) -> str:
    return hashlib.sha256(url.encode("utf-8", "surrogatepass")).hexdigest()


def previous_and_keep(
    conn: Connection,
    account_id: int,
    url: str,
    tag: str,
    current: Snapshot | None,
    *,
    bound: int,
    retention_days: int,
) -> Snapshot | None:
    """The account's newest snapshot of ``url`` under ``tag`` within the retention time, and
    ``current`` written after it (None: nothing to keep, a page that is gone), the oldest past
    ``bound`` dropped."""
    t = change_snapshots
    key = url_key(url)
    page = and_(t.c.account_id == account_id, t.c.url_key == key, t.c.tag == tag)
    oldest = datetime.now(UTC) - timedelta(days=retention_days)
    row = conn.execute(
        select(t.c.id, t.c.markdown, t.c.extracted, t.c.created_at)
        .where(page, t.c.created_at > oldest)
        .order_by(t.c.created_at.desc(), t.c.id.desc())
        .limit(1)
    ).first()
    previous = None
    if row is not None:
        previous = Snapshot(
            as_utc(row.created_at),
            zlib.decompress(row.markdown).decode("utf-8"),
            orjson.loads(row.extracted) if row.extracted is not None else None,
        )
    if current is None:
        return previous
    if row is not None and previous is not None and _same(previous, current):
        # the page as it was: its snapshot now dates from this scrape, nothing more to write
        conn.execute(update(t).where(t.c.id == row.id).values(created_at=current.taken_at))
        return previous
    conn.execute(
        insert(t).values(
            account_id=account_id,
            url_key=key,
            tag=tag,
            url=url.replace("\x00", "%00"),
            markdown=zlib.compress(current.markdown.encode("utf-8"), COMPRESSION_LEVEL),
            extracted=orjson.dumps(current.extracted).decode()
            if current.extracted is not None
            else None,
            created_at=current.taken_at,
        )
    )
    newest = select(t.c.id).where(page).order_by(t.c.created_at.desc(), t.c.id.desc()).limit(bound)
    conn.execute(delete(t).where(page, t.c.id.not_in(newest.scalar_subquery())))
    return previous


def _same(previous: Snapshot, current: Snapshot) -> bool:
    return previous.markdown == current.markdown and orjson.dumps(
        previous.extracted, option=orjson.OPT_SORT_KEYS
    ) == orjson.dumps(current.extracted, option=orjson.OPT_SORT_KEYS)


def count(conn: Connection, account_id: int, url: str, tag: str = "") -> int:
    """The account's snapshots of ``url`` under ``tag`` (what the bound keeps)."""
    t = change_snapshots
    rows = conn.execute(
        select(t.c.id).where(
            t.c.account_id == account_id, t.c.url_key == url_key(url), t.c.tag == tag
        )
    ).all()
    return len(rows)


def purge_expired(conn: Connection, retention_days: int, now: datetime | None = None) -> int:
    """The sweeper's: snapshots older than the retention time."""
    t = change_snapshots
    before = (now or datetime.now(UTC)) - timedelta(days=retention_days)
    gone = conn.execute(delete(t).where(t.c.created_at <= before))
    return int(gone.rowcount or 0)
