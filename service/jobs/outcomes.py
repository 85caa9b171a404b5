"""A job's pages by outcome, for answers that list them apart: the scraped pages' results
after a position (Firecrawl's ``GET /crawl/{id}``), and the pages that failed or were blocked
(its ``/crawl/{id}/errors``). Each function is one transaction's work, off the reactor thread,
where the stored results are parsed too.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import orjson
from sqlalchemy import Connection, select

from service.db.tables import job_pages, jobs
from service.db.times import timestamp
from service.jobs.answers import JobSummary
from service.jobs.batch_store import ACTIVE, summary_of

UNSCRAPED = ("failed", "blocked")


@dataclass(frozen=True, slots=True)
class Scraped:
    summary: JobSummary
    options: dict[str, Any]  # the job's stored options
    results: list[tuple[int, dict[str, Any]]]  # (position, stored result), in position order
    more: bool  # scraped pages after the last one here


@dataclass(frozen=True, slots=True)
class Unscraped:
    position: int
    url: str
    status: str
    result: dict[str, Any] | None
    at: str


def _job(conn: Connection, account_id: int, public_id: str, kind: str) -> Any:
    """The job's row, only when it is the account's and of ``kind``."""
    return conn.execute(
        select(jobs.c.seq, jobs.c.options).where(
            jobs.c.public_id == public_id, jobs.c.account_id == account_id, jobs.c.kind == kind
        )
    ).one_or_none()


def scraped(
    conn: Connection,
    account_id: int,
    public_id: str,
    kind: str,
    after: int,
    limit: int,
    max_bytes: int,
) -> Scraped | None:
    """The job and its scraped pages after position ``after``: at most ``limit``, and no more
    than ``max_bytes`` of results unless one alone is larger."""
    job = _job(conn, account_id, public_id, kind)
    if job is None:
        return None
    rows = conn.execute(
        select(job_pages.c.position, job_pages.c.result)
        .where(
            job_pages.c.job_seq == job.seq,
            job_pages.c.position > after,
            job_pages.c.status == "done",
        )
        .order_by(job_pages.c.position)
        .limit(limit + 1)
    ).all()
    results: list[tuple[int, dict[str, Any]]] = []
    size = 0
    for row in rows[:limit]:
        size += len(row.result or "")
        if results and size > max_bytes:
            break
        results.append((row.position, orjson.loads(row.result) if row.result else {}))
    return Scraped(
        summary_of(conn, job.seq), orjson.loads(job.options), results, len(rows) > len(results)
    )


def kind_of(conn: Connection, account_id: int, public_id: str) -> str | None:
    """The job's kind, only when it is the account's."""
    found = conn.execute(
        select(jobs.c.kind).where(jobs.c.public_id == public_id, jobs.c.account_id == account_id)
    ).scalar_one_or_none()
    return None if found is None else str(found)


def unscraped(
    conn: Connection, account_id: int, public_id: str, kind: str, limit: int
) -> list[Unscraped] | None:
    """The job's pages that failed or were blocked, in position order (the first ``limit``)."""
    job = _job(conn, account_id, public_id, kind)
    if job is None:
        return None
    rows = conn.execute(
        select(
            job_pages.c.position,
            job_pages.c.url,
            job_pages.c.status,
            job_pages.c.result,
            job_pages.c.updated_at,
        )
        .where(job_pages.c.job_seq == job.seq, job_pages.c.status.in_(UNSCRAPED))
        .order_by(job_pages.c.position)
        .limit(limit)
    ).all()
    return [
        Unscraped(
            row.position,
            row.url,
            row.status,
            orjson.loads(row.result) if row.result else None,
            timestamp(row.updated_at),
        )
        for row in rows
    ]


def active(conn: Connection, account_id: int, kind: str) -> list[tuple[str, str]]:
    """The account's jobs of ``kind`` queued or running: (id, first URL), oldest first."""
    first_url = (
        select(job_pages.c.url)
        .where(job_pages.c.job_seq == jobs.c.seq)
        .order_by(job_pages.c.position)
        .limit(1)
        .correlate(jobs)
        .scalar_subquery()
    )
    rows = conn.execute(
        select(jobs.c.public_id, first_url.label("url"))
        .where(jobs.c.account_id == account_id, jobs.c.kind == kind, jobs.c.status.in_(ACTIVE))
        .order_by(jobs.c.seq)
    ).all()
    return [(row.public_id, row.url or "") for row in rows]
