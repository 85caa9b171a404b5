"""How a job reads to its account: its summary, a page of its results and the account's listing,
and the webhook deliveries built from them in the transaction that changes the job (batch_store).
"""

from __future__ import annotations

from typing import Any, cast

import orjson
from sqlalchemy import Connection, Select, and_, func, select

from service.billing.answers import Page
from service.db.tables import job_pages, jobs, usage
from service.db.times import timestamp
from service.jobs import webhook_store
from service.jobs.answers import Counts, Job, JobItem, JobResult, JobSummary

ACTIVE = ("queued", "running")
FINISHED_PAGE = ("done", "failed", "blocked")
DONE_PAGE = (*FINISHED_PAGE, "skipped")
# a page's webhook delivery carries its result up to this size (a POST body receivers accept)
WEBHOOK_RESULT_MAX_BYTES = 256 * 1024


def tell(conn: Connection, job_seq: int, status: str) -> None:
    """The job's webhook delivery for its new ``status``, in the transaction that set it."""
    event = webhook_store.EVENT_OF_STATUS[status]
    hook = webhook_store.wanted(conn, job_seq, event)
    if hook is not None:
        account_id, url, _ = hook
        webhook_store.record(conn, job_seq, account_id, url, event, summary_of(conn, job_seq))


def tell_page(conn: Connection, job_seq: int, page_id: int) -> None:
    """A finished page's delivery: its result as ``GET /jobs/{id}`` lists it, without the
    result when that is larger than WEBHOOK_RESULT_MAX_BYTES (the job's listing has it)."""
    hook = webhook_store.wanted(conn, job_seq, "page")
    if hook is None:
        return
    account_id, url, public_id = hook
    row = conn.execute(pages_charged().where(job_pages.c.id == page_id)).one()
    whole = row.result is not None and len(row.result) <= WEBHOOK_RESULT_MAX_BYTES
    page = {
        "index": row.position,
        "url": row.url,
        "status": row.status,
        "credits": int(row.credits or 0),
        "result": orjson.Fragment(row.result) if whole else None,
        "result_left_out": row.result is not None and not whole,
    }
    data = {"id": public_id, "page": page}
    webhook_store.record(conn, job_seq, account_id, url, "page", data)


def job_cancelled(conn: Connection, seq: int) -> bool:
    """Whether the job ``seq`` was cancelled (or is gone)."""
    status = conn.execute(select(jobs.c.status).where(jobs.c.seq == seq)).scalar_one_or_none()
    return status in (None, "cancelled")


def job_seq_of(conn: Connection, account_id: int, public_id: str) -> int | None:
    """The job's row, only when it is the account's: another account's job does not exist."""
    seq = conn.execute(
        select(jobs.c.seq).where(jobs.c.public_id == public_id, jobs.c.account_id == account_id)
    ).scalar_one_or_none()
    return None if seq is None else int(seq)


def _job_row(conn: Connection, seq: int) -> Any:
    return conn.execute(select(jobs).where(jobs.c.seq == seq)).one()


def charged_by_hold() -> Any:
    """A page's usage row: the one its hold was settled with (a page never held has none)."""
    return and_(usage.c.hold_id == job_pages.c.hold_id, usage.c.hold_id.is_not(None))


def pages_charged() -> Select[Any]:
    """A job's pages with what each was charged (no usage row yet: credits None), the one
    query the API, the webhooks and the dashboard read pages with; the caller filters it."""
    return select(
        job_pages.c.position,
        job_pages.c.url,
        job_pages.c.status,
        job_pages.c.result,
        usage.c.credits,
    ).select_from(job_pages.outerjoin(usage, charged_by_hold()))


def summary_of(conn: Connection, seq: int) -> JobSummary:
    job = _job_row(conn, seq)
    counts: Counts = {"done": 0, "failed": 0, "blocked": 0, "pending": 0, "skipped": 0}
    tally = cast(dict[str, int], counts)  # each status the pages' rows may have is a key
    for status, count in conn.execute(
        select(job_pages.c.status, func.count())
        .where(job_pages.c.job_seq == seq)
        .group_by(job_pages.c.status)
    ):
        tally["pending" if status == "running" else status] += count
    charged = conn.execute(
        select(func.coalesce(func.sum(usage.c.credits), 0))
        .select_from(job_pages.join(usage, charged_by_hold()))
        .where(job_pages.c.job_seq == seq)
    ).scalar_one()
    return {
        "id": job.public_id,
        "kind": job.kind,
        "status": job.status,
        "created_at": timestamp(job.created_at),
        "finished_at": timestamp(job.finished_at) if job.finished_at else None,
        "error": job.error,
        "total": job.total,
        "counts": counts,
        "credits_charged": int(charged),
    }


def view(conn: Connection, account_id: int, public_id: str, after: int, limit: int) -> Job | None:
    """The job with one page of its finished pages' results, in the order of its URLs."""
    seq = job_seq_of(conn, account_id, public_id)
    if seq is None:
        return None
    summary = summary_of(conn, seq)
    rows = conn.execute(
        pages_charged()
        .where(
            job_pages.c.job_seq == seq,
            job_pages.c.position > after,
            job_pages.c.status.in_(FINISHED_PAGE),
        )
        .order_by(job_pages.c.position)
        .limit(limit + 1)
    ).all()
    more = len(rows) > limit
    rows = rows[:limit]
    results: list[JobResult] = [
        {
            "index": row.position,
            "url": row.url,
            "status": row.status,
            "credits": int(row.credits or 0),
            "result": orjson.Fragment(row.result) if row.result else None,
        }
        for row in rows
    ]
    return {
        **summary,
        "results": results,
        "next_cursor": str(rows[-1].position) if more else None,
    }


def listing(conn: Connection, account_id: int, before: int | None, limit: int) -> Page[JobItem]:
    """The account's jobs, newest first."""
    query = select(jobs).where(jobs.c.account_id == account_id)
    if before is not None:
        query = query.where(jobs.c.seq < before)
    rows = conn.execute(query.order_by(jobs.c.seq.desc()).limit(limit + 1)).all()
    more = len(rows) > limit
    rows = rows[:limit]
    return {
        "items": [
            {
                "id": row.public_id,
                "kind": row.kind,
                "status": row.status,
                "total": row.total,
                "created_at": timestamp(row.created_at),
                "finished_at": timestamp(row.finished_at) if row.finished_at else None,
            }
            for row in rows
        ],
        "next_cursor": str(rows[-1].seq) if more else None,
    }
