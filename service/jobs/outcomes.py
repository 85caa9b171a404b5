"""A job's pages by outcome, for answers that list them apart: the scraped pages' results
after a position (Firecrawl's ``GET /crawl/{id}``), and the pages that failed or were blocked
(its ``/crawl/{id}/errors``). Each function is one transaction's work, off the reactor thread,
where the stored results are parsed too.

A page the target answered with an error status (the native ``http_error``: failed, unbilled)
is listed with the scraped pages when asked (``error_pages=True``), and then not among the
failed ones: Firecrawl's scrape takes a 4xx or 5xx page as its document.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import orjson
from sqlalchemy import ColumnElement, Connection, and_, cast, func, not_, or_, select
from sqlalchemy.dialects.postgresql import JSON

from service.db.tables import job_pages, jobs
from service.db.times import timestamp
from service.jobs.answers import JobSummary
from service.jobs.batch_store import ACTIVE
from service.jobs.job_reads import summary_of

UNSCRAPED = ("failed", "blocked")
HTTP_ERROR = "http_error"  # the error_code of a target's 4xx or 5xx page (pipelines.result)


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


def _error_page(conn: Connection) -> ColumnElement[bool]:
    """A failed page whose stored result is the target's error page (its ``error_code``), read
    by the database's own JSON functions so that a listing's limit holds."""
    if conn.dialect.name == "postgresql":
        # PostgreSQL's JSON types refuse the escape \u0000 (a page's NUL, in its raw_html) even
        # in a value not read: it becomes U+FFFD first, which keeps the text valid JSON
        readable = func.replace(job_pages.c.result, "\\u0000", "\\ufffd")
        code: ColumnElement[Any] = cast(readable, JSON)["error_code"].astext
    else:
        code = func.json_extract(job_pages.c.result, "$.error_code")
    return and_(job_pages.c.status == "failed", func.coalesce(code, "") == HTTP_ERROR)


def scraped(
    conn: Connection,
    account_id: int,
    public_id: str,
    kind: str,
    after: int,
    limit: int,
    max_bytes: int,
    error_pages: bool = False,
) -> Scraped | None:
    """The job and its scraped pages after position ``after`` (with ``error_pages``, those the
    target answered with an error status too): at most ``limit``, and no more than
    ``max_bytes`` of results unless one alone is larger."""
    job = _job(conn, account_id, public_id, kind)
    if job is None:
        return None
    # the job before its pages: a job read as finished has all its pages finished, where pages
    # read first could miss one that finished, and finished the job, between the two reads
    summary = summary_of(conn, job.seq)
    listed = job_pages.c.status == "done"
    rows = conn.execute(
        select(job_pages.c.position, job_pages.c.result)
        .where(
            job_pages.c.job_seq == job.seq,
            job_pages.c.position > after,
            or_(listed, _error_page(conn)) if error_pages else listed,
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
    return Scraped(summary, orjson.loads(job.options), results, len(rows) > len(results))


def kind_of(conn: Connection, account_id: int, public_id: str) -> str | None:
    """The job's kind, only when it is the account's."""
    found = conn.execute(
        select(jobs.c.kind).where(jobs.c.public_id == public_id, jobs.c.account_id == account_id)
    ).scalar_one_or_none()
    return None if found is None else str(found)


def unscraped(
    conn: Connection,
    account_id: int,
    public_id: str,
    kind: str,
    limit: int,
    error_pages: bool = True,
) -> list[Unscraped] | None:
    """The job's pages that failed or were blocked, in position order (the first ``limit``);
    without ``error_pages``, not those the target answered with an error status."""
    job = _job(conn, account_id, public_id, kind)
    if job is None:
        return None
    unlisted = job_pages.c.status.in_(UNSCRAPED)
    rows = conn.execute(
        select(
            job_pages.c.position,
            job_pages.c.url,
            job_pages.c.status,
            job_pages.c.result,
            job_pages.c.updated_at,
        )
        .where(
            job_pages.c.job_seq == job.seq,
            unlisted if error_pages else and_(unlisted, not_(_error_page(conn))),
        )
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


@dataclass(frozen=True, slots=True)
class Active:
    public_id: str
    url: str  # its first page's
    created_at: str
    options: dict[str, Any]  # the job's stored options


def active(conn: Connection, account_id: int, kind: str) -> list[Active]:
    """The account's jobs of ``kind`` queued or running, oldest first."""
    first_url = (
        select(job_pages.c.url)
        .where(job_pages.c.job_seq == jobs.c.seq)
        .order_by(job_pages.c.position)
        .limit(1)
        .correlate(jobs)
        .scalar_subquery()
    )
    rows = conn.execute(
        select(jobs.c.public_id, first_url.label("url"), jobs.c.created_at, jobs.c.options)
        .where(jobs.c.account_id == account_id, jobs.c.kind == kind, jobs.c.status.in_(ACTIVE))
        .order_by(jobs.c.seq)
    ).all()
    return [
        Active(row.public_id, row.url or "", timestamp(row.created_at), orjson.loads(row.options))
        for row in rows
    ]
