"""The rows of jobs and their pages (migration 0009): each function is one transaction's work.

A page moves ``pending`` -> ``running`` -> ``done`` | ``failed`` | ``blocked``, or to ``skipped``
when its job stopped first. Claiming a page (service.jobs.page_claims) counts one more ``attempt``
and records the instance; the hold of the attempt is written in the transaction that makes it
(service.jobs.batches), and a result is stored only by the attempt that claimed it, so a page taken
over after a crash cannot be finished twice. Reading a job back is service.jobs.job_reads; the hot
path's statements are service.jobs.batch_hot. What a job charged is never stored: it is summed
from the usage rows of its pages' holds, which the ledger writes in the settlement's own
transaction, so it is exact at any moment.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import orjson
from sqlalchemy import Connection, delete, exists, func, insert, select, update

from service.billing import ledger
from service.db.tables import idempotency_keys, job_pages, jobs
from service.jobs import webhook_store
from service.jobs.answers import JobSummary
from service.jobs.job_reads import ACTIVE, job_seq_of, summary_of, tell, tell_page
from service.scrape.order import storable


class TooManyJobs(Exception):
    def __init__(self, limit: int):
        super().__init__(f"{limit} jobs in flight")
        self.limit = limit


def room_for_a_job(conn: Connection, account_id: int, limit: int) -> None:
    """Locks the account's row and raises TooManyJobs when it has ``limit`` jobs in flight: the
    check every job (batch or crawl) makes before it is stored, in the same transaction."""
    if conn.dialect.name == "postgresql":
        conn.exec_driver_sql(
            "SELECT 1 FROM accounts WHERE id = %(id)s FOR NO KEY UPDATE", {"id": account_id}
        )
    in_flight = conn.execute(
        select(func.count())
        .select_from(jobs)
        .where(jobs.c.account_id == account_id, jobs.c.status.in_(ACTIVE))
    ).scalar_one()
    if in_flight >= limit:
        raise TooManyJobs(limit)


def create_job(
    conn: Connection,
    *,
    public_id: str,
    account_id: int,
    key_id: int,
    key_hash: str,
    options: dict[str, Any],
    urls: list[str],
    limit: int,
    webhook: dict[str, Any] | None = None,
    kind: str = "batch",
) -> int:
    """Stores a job and its pages; raises TooManyJobs when the account has ``limit`` in flight.

    The account's row is locked first (SQLite's BEGIN IMMEDIATE does it for the whole
    database), so two jobs made at once cannot both fit under the limit."""
    room_for_a_job(conn, account_id, limit)
    created = ledger.now()
    seq = conn.execute(
        insert(jobs)
        .values(
            public_id=public_id,
            account_id=account_id,
            key_id=key_id,
            key_hash=key_hash,
            kind=kind,
            status="queued",
            options=orjson.dumps(options).decode(),
            webhook=orjson.dumps(webhook).decode() if webhook else None,
            total=len(urls),
            enqueued=False,
            created_at=created,
        )
        .returning(jobs.c.seq)
    ).scalar_one()
    conn.execute(
        insert(job_pages),
        [
            {
                "job_seq": seq,
                "position": position,
                "url": storable(url),
                "status": "pending",
                "attempt": 0,
                "updated_at": created,
            }
            for position, url in enumerate(urls)
        ],
    )
    return int(seq)


@dataclass(frozen=True, slots=True)
class Finish:
    """An attempt's result, to store (:func:`finish_pages`)."""

    page_id: int
    attempt: int
    status: str
    result: str | None
    # adds the pages a crawl's page led to (service.jobs.crawl_store), in the same transaction
    found: Callable[[Connection, int], Any] | None = None
    job_seq: int | None = None  # the page's job, when its claim read it
    tell_page: bool = True  # False when the claim saw that the job's webhook wants no pages


def finish_page(
    conn: Connection,
    page_id: int,
    attempt: int,
    status: str,
    result: str | None,
    found: Callable[[Connection, int], Any] | None = None,
) -> bool:
    """Stores one attempt's result: :func:`finish_pages` of one."""
    return finish_pages(conn, [Finish(page_id, attempt, status, result, found)])[0]


def finish_pages(conn: Connection, finishes: list[Finish]) -> list[bool]:
    """Stores attempts' results (only the attempt that holds a page may: each says whether it
    did), and completes each job whose last page this was. A crawl's page adds the pages it
    led to before its job is seen to be done.

    On PostgreSQL the rows of the pages' jobs are locked first, in the order of their ids (two
    instances' transactions never wait for each other in a circle): two instances finishing a
    job's last two pages at once would each see the other's page still running, and neither
    would complete it; and a crawl's pages are added under the lock, so that two instances never
    pass its ``max_pages`` together."""
    seqs: list[int | None] = []
    for finish in finishes:
        job_seq = finish.job_seq
        if job_seq is None:
            job_seq = conn.execute(
                select(job_pages.c.job_seq).where(job_pages.c.id == finish.page_id)
            ).scalar_one_or_none()
        seqs.append(job_seq)
    touched = sorted({seq for seq in seqs if seq is not None})
    if conn.dialect.name == "postgresql":
        for job_seq in touched:
            _lock_job(conn, job_seq)
    done: list[bool] = []
    for finish, job_seq in zip(finishes, seqs, strict=True):
        stored = job_seq is not None and bool(
            conn.execute(
                update(job_pages)
                .where(
                    job_pages.c.id == finish.page_id,
                    job_pages.c.attempt == finish.attempt,
                    job_pages.c.status == "running",
                )
                .values(status=finish.status, result=finish.result, updated_at=ledger.now())
            ).rowcount
        )
        done.append(stored)
        if not stored or job_seq is None:
            continue
        if finish.found is not None:
            finish.found(conn, job_seq)
        if finish.tell_page:
            tell_page(conn, job_seq, finish.page_id)
    for job_seq in touched:
        _complete_if_done(conn, job_seq)
    return done


def _lock_job(conn: Connection, job_seq: int) -> None:
    conn.execute(select(jobs.c.seq).where(jobs.c.seq == job_seq).with_for_update())


def _complete_if_done(conn: Connection, job_seq: int) -> None:
    left = exists().where(
        job_pages.c.job_seq == job_seq, job_pages.c.status.in_(("pending", "running"))
    )
    completed = conn.execute(
        update(jobs)
        .where(jobs.c.seq == job_seq, jobs.c.status.in_(ACTIVE), ~left)
        .values(status="completed", finished_at=ledger.now())
    ).rowcount
    if completed:
        tell(conn, job_seq, "completed")


def release_page(conn: Connection, page_id: int, attempt: int) -> None:
    """An attempt that could not run (its job stopped before its hold): the page is skipped."""
    job_seq = conn.execute(
        select(job_pages.c.job_seq).where(job_pages.c.id == page_id)
    ).scalar_one_or_none()
    if job_seq is None:
        return
    if conn.dialect.name == "postgresql":
        conn.execute(select(jobs.c.seq).where(jobs.c.seq == job_seq).with_for_update())
    skipped = conn.execute(
        update(job_pages)
        .where(job_pages.c.id == page_id, job_pages.c.attempt == attempt)
        .values(status="skipped", updated_at=ledger.now())
    ).rowcount
    if skipped:
        _complete_if_done(conn, job_seq)


def stop_job(conn: Connection, job_seq: int, status: str, error: str | None) -> bool:
    """Stops an active job (``cancelled``, ``insufficient_credits`` or ``failed``): its pending
    pages are skipped; pages already running finish and settle as any scrape does."""
    stopped = conn.execute(
        update(jobs)
        .where(jobs.c.seq == job_seq, jobs.c.status.in_(ACTIVE))
        .values(status=status, error=error, finished_at=ledger.now())
    ).rowcount
    conn.execute(
        update(job_pages)
        .where(job_pages.c.job_seq == job_seq, job_pages.c.status == "pending")
        .values(status="skipped", updated_at=ledger.now())
    )
    if stopped:
        tell(conn, job_seq, status)
    return bool(stopped)


def cancel(conn: Connection, account_id: int, public_id: str) -> JobSummary | None:
    seq = job_seq_of(conn, account_id, public_id)
    if seq is None:
        return None
    stop_job(conn, seq, "cancelled", None)
    return summary_of(conn, seq)


def purge(conn: Connection, before: datetime, keys_before: datetime) -> int:
    """Deletes finished jobs (their pages with them) made before ``before``, and the
    Idempotency-Key answers made before ``keys_before``; returns how many jobs."""
    conn.execute(delete(idempotency_keys).where(idempotency_keys.c.created_at < keys_before))
    old = select(jobs.c.seq).where(jobs.c.created_at < before, jobs.c.status.not_in(ACTIVE))
    seqs = list(conn.execute(old.limit(500)).scalars())
    if not seqs:
        return 0
    webhook_store.purge(conn, seqs)
    conn.execute(delete(job_pages).where(job_pages.c.job_seq.in_(seqs)))
    conn.execute(delete(jobs).where(jobs.c.seq.in_(seqs)))
    return len(seqs)
