"""Which pages run next and the claim of one: the side of a job's rows the queue works.

A claim counts one more ``attempt`` and records the instance; a page left ``running`` by a process
that is gone is taken over, its earlier hold released or, when captured, carried so that the page is
not billed twice (claim_page).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

import orjson
from sqlalchemy import Connection, func, select, update

from service.billing import ledger
from service.db.tables import holds, job_pages, jobs, usage
from service.jobs.job_reads import ACTIVE, DONE_PAGE, tell


@dataclass(frozen=True, slots=True)
class Claim:
    """One attempt at one page: what to scrape, for whom, and a hold already captured."""

    page_id: int
    job_seq: int
    attempt: int
    url: str
    options: dict[str, Any]
    key_hash: str
    paid_hold: int | None  # a hold of an earlier attempt that was captured: billed already
    tells_pages: bool = False  # the job's webhook wants each page's result (finish_page)
    hot: bool = False  # the job's pages take the hot path (JobTerms.hot)


def page_ids(conn: Connection, job_seq: int) -> list[int]:
    """The job's pending pages, in their order."""
    return pages_of_jobs(conn, [job_seq])[job_seq]


def pages_of_jobs(conn: Connection, job_seqs: list[int]) -> dict[int, list[int]]:
    """Each job's pending pages, in their order, in one statement."""
    pages: dict[int, list[int]] = {seq: [] for seq in job_seqs}
    for seq, page_id in conn.execute(
        select(job_pages.c.job_seq, job_pages.c.id)
        .where(job_pages.c.job_seq.in_(job_seqs), job_pages.c.status == "pending")
        .order_by(job_pages.c.job_seq, job_pages.c.position)
    ):
        pages[int(seq)].append(int(page_id))
    return pages


def mark_enqueued(conn: Connection, job_seqs: list[int]) -> None:
    conn.execute(update(jobs).where(jobs.c.seq.in_(job_seqs)).values(enqueued=True))


def not_enqueued(conn: Connection, older_than: timedelta) -> list[int]:
    """Jobs whose pages were never handed to the queue: their instance died right after
    storing them."""
    return list(
        conn.execute(
            select(jobs.c.seq).where(
                jobs.c.enqueued.is_(False),
                jobs.c.status.in_(ACTIVE),
                jobs.c.created_at < ledger.now() - older_than,
            )
        ).scalars()
    )


def next_pages(
    conn: Connection,
    busy: set[int],
    limit: int,
    dead: Callable[[str | None], bool],
    per_crawl: int | None = None,
) -> list[tuple[int, int, int]]:
    """SQLite: the next pages to run, with the attempt each is at and its job: the active jobs'
    in the order they were made, each job's oldest first. A page left ``running`` by a process
    that is gone (``dead``: it stopped or died) is among them: it is taken over. Those of live
    processes (``scrapespy serve --workers``) are not. A crawl has at most ``per_crawl`` pages
    running or ``busy``, whichever process runs them (its politeness to its site,
    service.jobs.crawls). Each job's pending pages are read by the ``(job_seq, status)`` index, as
    many as are wanted: a crawl with thousands of pages left costs no more than a small one."""
    found: list[tuple[int, int, int]] = []
    active = conn.execute(
        select(jobs.c.seq, jobs.c.kind).where(jobs.c.status.in_(ACTIVE)).order_by(jobs.c.seq)
    ).all()
    for job_seq, kind in active:
        want = limit - len(found)
        if want <= 0:
            break
        running = conn.execute(
            select(job_pages.c.id, job_pages.c.attempt, job_pages.c.instance).where(
                job_pages.c.job_seq == job_seq, job_pages.c.status == "running"
            )
        ).all()
        if per_crawl is not None and kind == "crawl":
            in_flight = sum(1 for row in running if row.id in busy or not dead(row.instance))
            if busy:  # this process's pages of the crawl picked and not claimed yet
                in_flight += conn.execute(
                    select(func.count()).where(
                        job_pages.c.job_seq == job_seq,
                        job_pages.c.status == "pending",
                        job_pages.c.id.in_(busy),
                    )
                ).scalar_one()
            want = min(want, per_crawl - in_flight)
            if want <= 0:
                continue
        taken = [
            (row.id, row.attempt, job_seq)
            for row in running
            if row.id not in busy and dead(row.instance)
        ][:want]
        if len(taken) < want:
            pending = conn.execute(
                select(job_pages.c.id, job_pages.c.attempt)
                .where(job_pages.c.job_seq == job_seq, job_pages.c.status == "pending")
                .order_by(job_pages.c.id)
                .limit(want - len(taken) + len(busy))
            )
            for row in pending:
                if row.id not in busy:
                    taken.append((row.id, row.attempt, job_seq))
                    if len(taken) >= want:
                        break
        found.extend(taken)
    return found


@dataclass(frozen=True, slots=True)
class JobTerms:
    """What every page of a job is scraped with, for whom: set when the job is made, and never
    changed, so that an instance may keep them (service.jobs.batches)."""

    options: dict[str, Any]
    key_hash: str
    tells_pages: bool  # the job's webhook wants each page's result (finish_page)
    quiet: bool  # the job has no webhook: its results write no event rows

    @property
    def hot(self) -> bool:
        """A job with neither webhook nor crawl: its pages' results are stored by the hot
        path's statements (service.db.hot), without a transaction of SQLAlchemy's (each finish
        locks the job's row before it counts the pages left, whichever way it takes)."""
        return _hot(self.options, self.quiet)

    @property
    def hot_crawl(self) -> bool:
        """A crawl without webhook: on PostgreSQL its pages' results and links are stored by
        one call (migration 0015)."""
        return self.quiet and "crawl" in self.options


def job_terms(conn: Connection, job_seq: int) -> JobTerms | None:
    """A job's terms (None when it is gone); the first time an instance reads them, the job
    starts (``running``) if it had not."""
    row = conn.execute(
        select(jobs.c.options, jobs.c.key_hash, jobs.c.webhook).where(jobs.c.seq == job_seq)
    ).one_or_none()
    if row is None:
        return None
    _start_job(conn, job_seq, told=bool(row.webhook))
    return JobTerms(
        orjson.loads(row.options), row.key_hash, _tells_pages(row.webhook), not row.webhook
    )


def _hot(options: dict[str, Any], quiet: bool) -> bool:
    """A job with neither webhook (``quiet``) nor crawl (JobTerms.hot)."""
    return quiet and "crawl" not in options


def _tells_pages(webhook: str | None) -> bool:
    return bool(webhook) and "page" in orjson.loads(webhook or "{}").get("events", ())


def _start_job(conn: Connection, job_seq: int, told: bool = True) -> None:
    """The job ``running``; its webhook told when it has one (``told``)."""
    started = conn.execute(
        update(jobs)
        .where(jobs.c.seq == job_seq, jobs.c.status == "queued")
        .values(status="running")
    ).rowcount
    if started and told:
        tell(conn, job_seq, "running")


def claim_page(
    conn: Connection, page_id: int, instance: str, seen_attempt: int | None = None
) -> Claim | None:
    """Starts one more attempt at a page, or None when there is nothing to do (or, with
    ``seen_attempt``, when the page is no longer at that attempt: another process claimed it).

    A page already ``running`` was left by an attempt that died (the queue runs one attempt
    of a page at a time). Its hold says what happened: still held, it is released here (a
    conditional update: should the dead attempt settle after all, it finds it settled and
    charges nothing); captured, the page was billed, and the new attempt must not be billed
    again; released or expired, nothing was charged and the page is scraped afresh.
    """
    query = (
        select(
            job_pages.c.status,
            job_pages.c.attempt,
            job_pages.c.hold_id,
            job_pages.c.url,
            jobs.c.seq,
            jobs.c.status.label("job_status"),
            jobs.c.options,
            jobs.c.key_hash,
            jobs.c.webhook,
        )
        .join(jobs, jobs.c.seq == job_pages.c.job_seq)
        .where(job_pages.c.id == page_id)
    )
    if conn.dialect.name == "postgresql":
        query = query.with_for_update(of=job_pages)
    row = conn.execute(query).one_or_none()
    if row is None or row.status in DONE_PAGE:
        return None
    if seen_attempt is not None and row.attempt != seen_attempt:
        return None
    now = ledger.now()
    if row.job_status not in ACTIVE:
        conn.execute(
            update(job_pages)
            .where(job_pages.c.id == page_id)
            .values(status="skipped", updated_at=now)
        )
        return None
    paid_hold = None
    if row.hold_id is not None:
        if ledger.release(conn, row.hold_id).settled_here:
            status = "released"
        else:  # settled before: by the dead attempt, or expired by the sweeper
            status = conn.execute(
                select(holds.c.status).where(holds.c.id == row.hold_id)
            ).scalar_one()
        if status == "captured" and _charged(conn, row.hold_id):
            paid_hold = row.hold_id
    attempt = row.attempt + 1
    conn.execute(
        update(job_pages)
        .where(job_pages.c.id == page_id)
        .values(
            status="running", attempt=attempt, instance=instance, hold_id=paid_hold, updated_at=now
        )
    )
    if row.job_status == "queued":  # its first page: the job starts
        _start_job(conn, row.seq)
    options = orjson.loads(row.options)
    return Claim(
        page_id,
        row.seq,
        attempt,
        row.url,
        options,
        row.key_hash,
        paid_hold,
        _tells_pages(row.webhook),
        _hot(options, not row.webhook),
    )


def _charged(conn: Connection, hold_id: int) -> bool:
    """Whether a captured hold is still charged: a refund (pipelines.billing) may undo it."""
    credits = conn.execute(
        select(usage.c.credits, usage.c.trial).where(usage.c.hold_id == hold_id)
    ).one_or_none()
    return credits is None or bool(credits.credits or credits.trial)


def set_hold(conn: Connection, page_id: int, attempt: int, hold_id: int) -> bool:
    """Records the hold of an attempt, in the transaction that made it."""
    return (
        conn.execute(
            update(job_pages)
            .where(
                job_pages.c.id == page_id,
                job_pages.c.attempt == attempt,
                job_pages.c.status == "running",
            )
            .values(hold_id=hold_id)
        ).rowcount
        == 1
    )
