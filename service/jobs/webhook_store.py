"""The rows of webhooks (migration 0011): the accounts' signing secrets and the deliveries.

A delivery is written in the transaction of the event it tells of (service.jobs.batch_store calls
:func:`record`), so an event that happened is never lost to a restart, and one that was rolled
back is never told. The delivery loop (service.jobs.webhooks) takes due deliveries under a lease
(``locked_until``): a conditional update, so two instances, or two processes of one SQLite file,
never send one attempt twice; an instance that died mid-attempt lets its lease run out and the
delivery is tried again by whoever comes next.
"""

from __future__ import annotations

import base64
import secrets
import uuid
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

import orjson
from sqlalchemy import Connection, delete, insert, or_, select, update

from service.billing import ledger
from service.db.tables import jobs, webhook_deliveries, webhook_secrets
from service.db.times import timestamp

SECRET_PREFIX = "whsec_"
SECRET_BYTES = 32  # the scheme asks for 24 to 64 random bytes
# the job's status -> the event a webhook is told of
EVENT_OF_STATUS = {
    "running": "started",
    "completed": "completed",
    "cancelled": "failed",
    "insufficient_credits": "failed",
    "failed": "failed",
}


@dataclass(frozen=True, slots=True)
class Delivery:
    """One delivery as an attempt sends it, with what its flavour's body is made of: the
    event, and the job's public id, kind, webhook and scrape options
    (service.jobs.webhook_flavours)."""

    id: int
    message_id: str
    account_id: int
    url: str
    payload: str
    attempts: int
    event: str
    job_id: str
    kind: str
    hook: Mapping[str, Any]
    options: Mapping[str, Any]


def new_secret() -> str:
    return SECRET_PREFIX + base64.b64encode(secrets.token_bytes(SECRET_BYTES)).decode("ascii")


def secret_of(conn: Connection, account_id: int) -> str:
    """The account's signing secret, made on first need."""
    found = conn.execute(
        select(webhook_secrets.c.secret).where(webhook_secrets.c.account_id == account_id)
    ).scalar_one_or_none()
    if found is not None:
        return str(found)
    made = new_secret()
    if conn.dialect.name == "postgresql":
        from sqlalchemy.dialects.postgresql import insert as upsert

        conn.execute(
            upsert(webhook_secrets)
            .values(account_id=account_id, secret=made, created_at=ledger.now())
            .on_conflict_do_nothing()
        )
        return str(
            conn.execute(
                select(webhook_secrets.c.secret).where(webhook_secrets.c.account_id == account_id)
            ).scalar_one()
        )
    conn.execute(
        insert(webhook_secrets).values(account_id=account_id, secret=made, created_at=ledger.now())
    )
    return made


def rotate(conn: Connection, account_id: int) -> str:
    """A new secret; deliveries signed from now on (retries included) use it."""
    secret_of(conn, account_id)
    made = new_secret()
    conn.execute(
        update(webhook_secrets)
        .where(webhook_secrets.c.account_id == account_id)
        .values(secret=made, created_at=ledger.now())
    )
    return made


def wanted(conn: Connection, job_seq: int, event: str) -> tuple[int, str, str] | None:
    """(account, URL, public id of the job) when the job's webhook asks for ``event``."""
    row = conn.execute(
        select(jobs.c.account_id, jobs.c.webhook, jobs.c.public_id).where(jobs.c.seq == job_seq)
    ).one_or_none()
    if row is None or not row.webhook:
        return None
    hook = orjson.loads(row.webhook)
    if event not in hook["events"]:
        return None
    return int(row.account_id), str(hook["url"]), str(row.public_id)


def record(
    conn: Connection, job_seq: int, account_id: int, url: str, event: str, data: Mapping[str, Any]
) -> None:
    """Stores one delivery of ``event``, due now."""
    now = ledger.now()
    payload = {"type": f"job.{event}", "timestamp": timestamp(now), "data": data}
    conn.execute(
        insert(webhook_deliveries).values(
            message_id=f"msg_{uuid.uuid4().hex}",
            job_seq=job_seq,
            account_id=account_id,
            url=url,
            event=event,
            payload=orjson.dumps(payload).decode(),
            status="pending",
            attempts=0,
            next_attempt_at=now,
            created_at=now,
        )
    )


def due(conn: Connection, limit: int, busy: set[int]) -> list[int]:
    now = ledger.now()
    query = (
        select(webhook_deliveries.c.id)
        .where(
            webhook_deliveries.c.status == "pending",
            webhook_deliveries.c.next_attempt_at <= now,
            or_(
                webhook_deliveries.c.locked_until.is_(None),
                webhook_deliveries.c.locked_until < now,
            ),
        )
        .order_by(webhook_deliveries.c.next_attempt_at, webhook_deliveries.c.id)
        .limit(limit + len(busy))
    )
    return [found for found in conn.execute(query).scalars() if found not in busy][:limit]


def claim(conn: Connection, delivery_id: int, lease: timedelta) -> tuple[Delivery, str] | None:
    """Takes a due delivery for one attempt, with the account's secret; None when another
    instance took it first."""
    now = ledger.now()
    taken = conn.execute(
        update(webhook_deliveries)
        .where(
            webhook_deliveries.c.id == delivery_id,
            webhook_deliveries.c.status == "pending",
            or_(
                webhook_deliveries.c.locked_until.is_(None),
                webhook_deliveries.c.locked_until < now,
            ),
        )
        .values(locked_until=now + lease)
    ).rowcount
    return _loaded(conn, delivery_id) if taken else None


def resume(
    conn: Connection, delivery_id: int, attempts: int, lease: timedelta
) -> tuple[Delivery, str] | None:
    """PostgreSQL: the delivery a queue task was handed after ``attempts`` attempts, leased
    again for this one; None when it is no longer there (delivered, failed, or that attempt
    was made already: a task run twice after a worker died)."""
    taken = conn.execute(
        update(webhook_deliveries)
        .where(
            webhook_deliveries.c.id == delivery_id,
            webhook_deliveries.c.status == "pending",
            webhook_deliveries.c.attempts == attempts,
        )
        .values(locked_until=ledger.now() + lease)
    ).rowcount
    return _loaded(conn, delivery_id) if taken else None


def _loaded(conn: Connection, delivery_id: int) -> tuple[Delivery, str]:
    row = conn.execute(
        select(
            webhook_deliveries,
            jobs.c.public_id,
            jobs.c.kind,
            jobs.c.webhook,
            jobs.c.options,
        )
        .select_from(webhook_deliveries.join(jobs, jobs.c.seq == webhook_deliveries.c.job_seq))
        .where(webhook_deliveries.c.id == delivery_id)
    ).one()
    delivery = Delivery(
        row.id,
        row.message_id,
        row.account_id,
        row.url,
        row.payload,
        row.attempts,
        event=row.event,
        job_id=row.public_id,
        kind=row.kind,
        hook=orjson.loads(row.webhook or "{}"),
        options=orjson.loads(row.options),
    )
    return delivery, secret_of(conn, row.account_id)


def finish(
    conn: Connection,
    delivery_id: int,
    error: str | None,
    retry_in: timedelta | None,
    queued_for: timedelta | None = None,
) -> None:
    """Records one attempt: delivered (no ``error``), due again in ``retry_in``, or failed for
    good (``retry_in`` None). With ``queued_for`` (PostgreSQL: the next attempt is a task
    already scheduled in the queue), the lease runs until that long after the next attempt is
    due, so the loop hands it over again only if that task was lost."""
    values: dict[str, Any] = {
        "attempts": webhook_deliveries.c.attempts + 1,
        "locked_until": None,
        "last_error": error,
    }
    if error is None:
        values["status"] = "delivered"
    elif retry_in is None:
        values["status"] = "failed"
    else:
        values["next_attempt_at"] = ledger.now() + retry_in
        if queued_for is not None:
            values["locked_until"] = values["next_attempt_at"] + queued_for
    conn.execute(
        update(webhook_deliveries).where(webhook_deliveries.c.id == delivery_id).values(**values)
    )


def purge(conn: Connection, job_seqs: list[int]) -> None:
    """The deliveries of jobs that are being deleted (service.jobs.batch_store.purge)."""
    conn.execute(delete(webhook_deliveries).where(webhook_deliveries.c.job_seq.in_(job_seqs)))
