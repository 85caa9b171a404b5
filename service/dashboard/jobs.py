"""What the dashboard reads about one account's jobs (``POST /batch``): the jobs with their
progress, and one job's pages with their results.

Every query takes the signed-in account's id and filters on it: another account's job does not
exist here, as in ``GET /jobs/{id}`` (service.jobs.batch_store). What a job charged is summed from
the usage rows of its pages' holds, as the API sums it, so the two never disagree.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import orjson
from sqlalchemy import Connection, func, select

from service.dashboard.preview import shown_json
from service.dashboard.usage import PAGE_SIZE, Page, page_bounds
from service.db.tables import job_pages, jobs, usage
from service.db.times import as_utc
from service.jobs.batch_store import ACTIVE
from service.jobs.job_reads import DONE_PAGE, charged_by_hold, pages_charged

RESULTS_PAGE_SIZE = 50
# a stored result up to this many bytes is shown in the page (indented, bulky fields cut);
# a larger one only through its link
SHOWN_RESULT_BYTES = 256 * 1024
COUNTED = ("done", "failed", "blocked", "pending", "skipped")


@dataclass(frozen=True, slots=True)
class Progress:
    total: int
    counts: dict[str, int]
    credits: int

    @property
    def finished(self) -> int:
        """Pages that will not run again: scraped (however it ended) or skipped."""
        return sum(self.counts[name] for name in DONE_PAGE)

    @property
    def percent(self) -> int:
        return 100 if not self.total else self.finished * 100 // self.total


def _progress(conn: Connection, seqs: list[int]) -> dict[int, tuple[dict[str, int], int]]:
    """Each job's page counts (a running page counts as pending, as the API counts it) and the
    credits its pages were charged."""
    found: dict[int, tuple[dict[str, int], int]] = {
        seq: (dict.fromkeys(COUNTED, 0), 0) for seq in seqs
    }
    if not seqs:
        return found
    for seq, status, count in conn.execute(
        select(job_pages.c.job_seq, job_pages.c.status, func.count())
        .where(job_pages.c.job_seq.in_(seqs))
        .group_by(job_pages.c.job_seq, job_pages.c.status)
    ):
        found[seq][0]["pending" if status == "running" else status] += int(count)
    for seq, credits in conn.execute(
        select(job_pages.c.job_seq, func.coalesce(func.sum(usage.c.credits), 0))
        .select_from(job_pages.join(usage, charged_by_hold()))
        .where(job_pages.c.job_seq.in_(seqs))
        .group_by(job_pages.c.job_seq)
    ):
        found[seq] = (found[seq][0], int(credits))
    return found


def _job(row: Any, counts: dict[str, int], credits: int) -> dict[str, Any]:
    return {
        "seq": int(row.seq),
        "id": row.public_id,
        "kind": row.kind,
        "status": row.status,
        "active": row.status in ACTIVE,
        "error": row.error,
        "created_at": as_utc(row.created_at),
        "finished_at": as_utc(row.finished_at) if row.finished_at else None,
        "progress": Progress(int(row.total), counts, credits),
    }


def jobs_page(conn: Connection, account_id: int, number: int, size: int = PAGE_SIZE) -> Page:
    """The account's jobs, newest first, each with its progress; page numbers start at 1."""
    total = int(
        conn.execute(
            select(func.count()).select_from(jobs).where(jobs.c.account_id == account_id)
        ).scalar_one()
    )
    pages, number = page_bounds(total, number, size)
    rows = conn.execute(
        select(jobs)
        .where(jobs.c.account_id == account_id)
        .order_by(jobs.c.seq.desc())
        .limit(size)
        .offset((number - 1) * size)
    ).all()
    progress = _progress(conn, [int(row.seq) for row in rows])
    return Page([_job(row, *progress[int(row.seq)]) for row in rows], number, pages, total)


def job_of(conn: Connection, account_id: int, public_id: str) -> dict[str, Any] | None:
    """The account's job with its progress; None when it has no such job."""
    row = conn.execute(
        select(jobs).where(jobs.c.public_id == public_id[:64], jobs.c.account_id == account_id)
    ).one_or_none()
    if row is None:
        return None
    return _job(row, *_progress(conn, [int(row.seq)])[int(row.seq)])


def _shown_result(raw: str | None) -> dict[str, Any]:
    """What the job's page shows of a stored result: its title, answer status and error, and
    the JSON itself when it is not too large to put in the page."""
    if not raw:
        return {"title": None, "status_code": None, "error": None, "json": None, "bytes": 0}
    data: dict[str, Any] = orjson.loads(raw)
    return {
        "title": data.get("title"),
        "status_code": data.get("status_code"),
        "error": data.get("error"),
        "json": shown_json(data) if len(raw) <= SHOWN_RESULT_BYTES else None,
        "bytes": len(raw),
    }


def results_page(
    conn: Connection, job_seq: int, number: int, size: int = RESULTS_PAGE_SIZE
) -> Page:
    """A job's pages in the order of its URLs, finished or not, each with its result."""
    total = int(
        conn.execute(
            select(func.count()).select_from(job_pages).where(job_pages.c.job_seq == job_seq)
        ).scalar_one()
    )
    pages, number = page_bounds(total, number, size)
    rows = conn.execute(
        pages_charged()
        .where(job_pages.c.job_seq == job_seq)
        .order_by(job_pages.c.position)
        .limit(size)
        .offset((number - 1) * size)
    ).all()
    shown = [
        {
            "index": int(row.position),
            "url": row.url,
            "status": row.status,
            "credits": int(row.credits or 0),
            **_shown_result(row.result),
        }
        for row in rows
    ]
    return Page(shown, number, pages, total)


def stored_result(conn: Connection, job_seq: int, index: int) -> str | None:
    """One page's stored result: the JSON ``POST /scrape`` would have answered for it."""
    raw = conn.execute(
        select(job_pages.c.result).where(
            job_pages.c.job_seq == job_seq, job_pages.c.position == index
        )
    ).scalar_one_or_none()
    return None if raw is None else str(raw)
